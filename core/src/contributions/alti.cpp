// ALTI+ (Ferrando et al. 2022), as the authors compute it in mt-upc/transformer-contributions-nmt,
// wrappers/transformer_wrapper.py (FairseqTransformerHub): __get_contributions_module decomposes each attention
// block's output into one vector per input token and measures each by its L1 distance to the output,
// normalize_contrib('min_sum') turns the distances into a row summing to 1, and get_contribution_rollout
// (compute_joint_attention for the encoder, rollout() for the decoder) aggregates the layers. The block's
// decomposition for post-norm and pre-norm layers, and what this file does where the authors' code approximates,
// is in docs/contributions.md.
#include "contributions/alti.h"

#include "model/attention.h"
#include "model/masks.h"
#include "util/tensor_convert.h"

#include <attnlab/errors.h>

#include <torch/torch.h>

#include <vector>

namespace attnlab::contributions {

namespace {
using torch::Tensor;

// One attention block as the pass ran it: the module, what it captured, and its input x [lq, d_model] (the
// queries' residual stream; for a cross-attention the decoder's, its keys and values are the encoder output's).
struct Block {
    model::MultiHeadAttention module;
    model::AttentionCapture capture;
    Tensor input;
};

// Runs `forward` with `block`'s module capturing into it; the capture is switched off again however it ends.
template <typename F>
Tensor capturing(Block& block, F&& forward) {
    struct Off {
        model::MultiHeadAttention& m;
        ~Off() { m->capture = nullptr; }
    } off{block.module};
    block.module->capture = &block.capture;
    return forward();
}

// sum_h keep_h A_h[q,k] W_O^h (v_h(x_k) + a^V_h[q,k]): what attending to key k adds to query q, before the
// residual and the output bias, [lq, lk, d_model] in float64. The value vectors v_h(x_k) = W_V^h x_k + b_V^h are
// the pass's own (float32 products from the weights the model holds); W_O is the module's output weight in
// float32 (an int8 / bfloat16 model's dequantized). With relative positions (CTranslate2, OpenNMT-py) the value
// vector a^V of the offset (j - i) comes with the weight p_ij as the value does (attention.cpp relativeAttention),
// so it is counted with key j as b_V is (the authors' code counts v_proj's bias with its token).
Tensor attendedVectors(const Block& b) {
    const auto f64 = torch::kFloat64;
    const auto& m = b.module;
    Tensor weights = b.capture.weights[0].to(f64);  // [h, lq, lk]
    const int64_t heads = weights.size(0), lq = weights.size(1), lk = weights.size(2), dv = m->d_v;
    if (m->head_keep.defined())  // DecodingOptions::ablate (a [n_head] mask of 1 and 0) as the pass applied it
        weights = weights * m->head_keep.to(f64).reshape({heads, 1, 1});
    const Tensor w_o = m->fc->floatWeight().to(f64);                        // [d_model, h * dv]
    const Tensor per_head = w_o.view({-1, heads, dv}).permute({1, 2, 0});   // [h, dv, d_model]
    const Tensor values = torch::matmul(b.capture.v[0].to(f64), per_head);  // [h, lk, d_model]
    Tensor out = torch::einsum("hqk,hkd->qkd", {weights, values});          // [lq, lk, d_model]
    if (m->max_relative_positions > 0) {
        const Tensor table = torch::matmul(m->relative_position_values.to(f64), per_head);  // [h, 2k+1, d_model]
        const Tensor rows = model::relativePositionIndex(lq, lk, m->max_relative_positions, table.device());
        const Tensor relative = table.index_select(1, rows.reshape({-1})).view({heads, lq, lk, -1});
        out = out + torch::einsum("hqk,hqkd->qkd", {weights, relative});
    }
    return out;
}

// The layer-wise ALTI+ matrix of one block: [lq, lk] for a self-attention (the residual x_q counted with key q),
// [lq, lk + 1] for a cross-attention (the residual, the decoder's own x_q, as a last column: the authors'
// "concatenate residual in cross-attention as another value vector"). Rows sum to 1 (a row whose every
// contribution is clipped to 0 stays 0).
Tensor blockContributions(const Block& b, bool cross) {
    const auto f64 = torch::kFloat64;
    const auto& m = b.module;
    Tensor vectors = attendedVectors(b);  // [lq, lk, d]
    const Tensor x = b.input.to(f64);     // [lq, d]
    if (cross)
        vectors = torch::cat({vectors, x.unsqueeze(1)}, 1);
    else
        vectors.diagonal(0, 0, 1).add_(x.t());  // key q of query q carries the residual x_q
    const Tensor bias = m->fc->bias.defined() ? m->fc->bias.to(f64) : torch::zeros({x.size(1)}, x.options());
    Tensor resultant = vectors.sum(1) + bias;  // the block's output before its layer norm
    if (!m->pre_norm) {
        // Post-norm: LN(z) = sum_k (T_k - mean(T_k)) gamma / sigma(z) + (b_O - mean(b_O)) gamma / sigma(z) + beta,
        // sigma(z) = sqrt(Var(z) + eps), the layer norm's own (the authors use (z + eps).std(), an approximation).
        const auto& ln = m->layer_norm;
        const Tensor gamma = ln->weight.to(f64), beta = ln->bias.to(f64);
        const Tensor centred = resultant - resultant.mean(-1, true);
        const Tensor sigma = (centred.pow(2).mean(-1, true) + ln->options.eps()).sqrt();  // [lq, 1]
        vectors = (vectors - vectors.mean(-1, true)) * gamma / sigma.unsqueeze(-1);
        resultant = vectors.sum(1) + (bias - bias.mean()) * gamma / sigma + beta;
    }
    // normalize_contrib('min_sum', resultant_norm): max(0, ||y||_1 - ||y - T_k||_1), then rows summing to 1.
    const Tensor norm = resultant.abs().sum(-1, true);                                  // [lq, 1]
    Tensor c = (norm - (resultant.unsqueeze(1) - vectors).abs().sum(-1)).clamp_min(0);  // [lq, lk(+1)]
    const Tensor total = c.sum(-1, true);
    return torch::where(total > 0, c / total.clamp_min(1e-300), c);
}

// The layer-wise matrices of a pass, walked sub-layer by sub-layer as TransformerImpl's decoderOutput runs
// them (EncoderLayerImpl::forward: self-attention, feed-forward; DecoderLayerImpl::forward: self-attention,
// cross-attention, feed-forward), so that each block's input is at hand.
struct LayerWise {
    std::vector<Tensor> encoder, decoder, cross;  // [s, s], [t, t], [t, s + 1]
};

LayerWise layerWise(const ForcedPass& pass) {
    model::Transformer model = pass.model;  // a handle: the forward pass is not const
    const ModelConfig& cfg = model->config();
    auto& enc = *model->encoder;
    auto& dec = *model->decoder;
    LayerWise out;
    const Tensor src_mask = model::padMask(pass.src, cfg.src_pad_idx);
    Tensor x = enc.embed(pass.src);
    for (const auto& item : *enc.layer_stack) {
        auto* layer = item->as<model::EncoderLayer>();
        Block self{layer->slf_attn, {}, x[0]};
        x = capturing(self, [&] { return layer->slf_attn->forwardSelf(x, src_mask).first; });
        out.encoder.push_back(blockContributions(self, false));
        x = layer->pos_ffn(x);
    }
    const Tensor memory = enc.final_layer_norm ? enc.final_layer_norm(x) : x;
    const Tensor trg_mask = model::decoderMask(pass.trg_in, cfg.trg_pad_idx);
    x = dec.embed(pass.trg_in, 0);
    for (const auto& item : *dec.layer_stack) {
        auto* layer = item->as<model::DecoderLayer>();
        Block self{layer->slf_attn, {}, x[0]};
        x = capturing(self, [&] { return layer->slf_attn->forwardSelf(x, trg_mask).first; });
        Block cross{layer->enc_attn, {}, x[0]};
        x = capturing(cross, [&] { return layer->enc_attn(x, memory, memory, src_mask).first; });
        out.decoder.push_back(blockContributions(self, false));
        out.cross.push_back(blockContributions(cross, true));
        x = layer->pos_ffn(x);
    }
    return out;
}

// get_contribution_rollout: the encoder's layers multiplied (compute_joint_attention), then the decoder's, each
// layer's [cross x encoder rollout ; self x the cross-attention's residual share] (rollout()), rows renormalised
// to 1 after each layer as the authors do. Returns [t, s + t]: source part, then target part.
Tensor rollout(const LayerWise& w) {
    Tensor encoder = w.encoder.front();
    for (size_t l = 1; l < w.encoder.size(); ++l) encoder = torch::matmul(w.encoder[l], encoder);
    const int64_t s = encoder.size(0);
    Tensor total;
    for (size_t l = 0; l < w.decoder.size(); ++l) {
        const Tensor& cross = w.cross[l];
        const Tensor self = w.decoder[l] * cross.narrow(1, s, 1);  // the residual's share spread by the self part
        const Tensor from_source = torch::matmul(cross.narrow(1, 0, s), encoder);
        if (l == 0) {
            total = torch::cat({from_source, self}, 1);
            continue;
        }
        const Tensor target = torch::matmul(self, total.narrow(1, s, total.size(1) - s));
        const Tensor source = torch::matmul(self, total.narrow(1, 0, s)) + from_source;
        total = torch::cat({source, target}, 1);
        total = total / total.sum(-1, true);
    }
    return total;
}
}  // namespace

Contributions altiPlus(const ForcedPass& pass) {
    const LayerWise w = layerWise(pass);
    Contributions out;
    out.method = ContributionMethod::AltiPlus;
    const int64_t s = pass.src.size(1);
    for (const Tensor& m : w.encoder) out.encoder_self.push_back(util::toMatrix(m));
    for (const Tensor& m : w.decoder) out.decoder_self.push_back(util::toMatrix(m));
    for (const Tensor& m : w.cross) out.cross.push_back(util::toMatrix(m.narrow(1, 0, s)));
    const Tensor total = rollout(w);
    out.source = util::toMatrix(total.narrow(1, 0, s));
    out.target = util::toMatrix(total.narrow(1, s, total.size(1) - s));
    return out;
}

}  // namespace attnlab::contributions
