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

#include <attnlab/contribution_layers.h>
#include <attnlab/errors.h>

#include <torch/torch.h>

#include <algorithm>
#include <string>
#include <vector>

namespace attnlab::contributions {

AltiTiles altiTiles(int64_t queries, int64_t keys, int64_t heads, int64_t d_model) {
    const int64_t width = std::max<int64_t>(d_model, 1), h = std::max<int64_t>(heads, 1);
    AltiTiles t;
    t.key_columns = std::clamp<int64_t>(kAltiTileElements / (h * width), 1, std::max<int64_t>(keys, 1));
    t.query_rows = std::clamp<int64_t>(kAltiTileElements / (t.key_columns * width), 1, std::max<int64_t>(queries, 1));
    return t;
}

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

// A run of rows or columns [begin, begin + size).
struct Span {
    int64_t begin = 0, size = 0;
    Tensor of(const Tensor& t, int64_t dim) const { return t.narrow(dim, begin, size); }
};

// What one block's decomposition reads. T_ik = sum_h keep_h A_h[i,k] W_O^h (v_h(x_k) + a^V_h[i,k]) (+ x_i where
// k = i in a self-attention): what attending to key k adds to query i, before the output bias. The value vectors
// v_h(x_k) = W_V^h x_k + b_V^h are the pass's own (float32 products from the weights the model holds); W_O is the
// module's output weight in float32 (an int8 / bfloat16 model's dequantized); the rest is float64. With relative
// positions (CTranslate2, OpenNMT-py) the value vector a^V of the offset (k - i) comes with the weight A_ik as the
// value does (attention.cpp relativeAttention), so it is counted with key k as b_V is (the authors' code counts
// v_proj's bias with its token).
struct Decomposition {
    Tensor weights;   // A, [h, lq, lk] float32 as captured (a tile at a time to float64), switched-off heads zeroed
    Tensor values;    // v_h(x_k), [h, lk, d_v]
    Tensor per_head;  // W_O^h, [h, d_v, d_model]
    Tensor table;     // W_O^h a^V_r, [h, 2k + 1, d_model] with relative positions, else undefined
    Tensor offsets;   // the table row of each (query, key), [lq, lk] int64, with relative positions
    Tensor x;         // the residual, [lq, d_model]
    Tensor bias;      // b_O, [d_model]
    bool cross = false;
    // Post-norm only: the layer norm's gain and, per query, 1 / sigma(z_i) with sigma(z_i) = sqrt(Var(z_i) + eps),
    // the layer norm's own (the authors use (z + eps).std(), an approximation).
    Tensor gamma, inv_sigma;  // [d], [lq, 1]
    Tensor output;            // y_i, what the block passes on: LN(z_i) post-norm, z_i pre-norm, [lq, d]
    int64_t heads() const { return weights.size(0); }
    int64_t queries() const { return weights.size(1); }
    int64_t keys() const { return weights.size(2); }
};

Tensor weightsTile(const Decomposition& d, const Span& q, const Span& k) {
    return k.of(q.of(d.weights, 1), 2).to(torch::kFloat64);  // [h, Q, K]
}

// z_i = sum_k T_ik + b_O (the residual x_i included), the block's output before its layer norm, [lq, d]: the
// attention output sum_h (A_h v_h) W_O^h a few query rows at a time, without the [lq, lk, d] vectors: `query_rows`
// (AltiTiles'), or as many as keep heads x rows x max(lk, d) within kAltiTileElements when it is 0.
Tensor blockSum(const Decomposition& d, int64_t query_rows) {
    const int64_t lq = d.queries(), lk = d.keys();
    const int64_t most = query_rows > 0 ? query_rows : kAltiTileElements / (d.heads() * std::max(lk, d.x.size(1)));
    const int64_t rows = std::clamp<int64_t>(most, 1, std::max<int64_t>(lq, 1));
    Tensor z = d.x + d.bias;
    for (int64_t q0 = 0; q0 < lq; q0 += rows) {
        const Span q{q0, std::min(rows, lq - q0)};
        const Tensor w = weightsTile(d, q, {0, lk});                             // [h, Q, lk]
        Tensor out = torch::matmul(torch::bmm(w, d.values), d.per_head).sum(0);  // [Q, d]
        if (d.table.defined()) {  // sum_k A_ik a^V_(k-i): each query's weights gathered by table row first
            Tensor by_row = torch::zeros({d.heads(), q.size, d.table.size(1)}, w.options());
            by_row.scatter_add_(2, q.of(d.offsets, 0).unsqueeze(0).expand_as(w), w);
            out += torch::matmul(by_row, d.table).sum(0);
        }
        q.of(z, 0).add_(out);
    }
    return z;
}

Decomposition decompose(const Block& b, bool cross, int64_t query_rows) {
    const auto f64 = torch::kFloat64;
    const auto& m = b.module;
    Decomposition d;
    d.cross = cross;
    d.weights = b.capture.weights[0];
    const int64_t heads = d.heads(), lq = d.queries(), lk = d.keys();
    if (m->head_keep.defined())  // DecodingOptions::ablate (a [n_head] mask of 1 and 0) as the pass applied it
        d.weights = d.weights * m->head_keep.to(d.weights.scalar_type()).reshape({heads, 1, 1});
    d.values = b.capture.v[0].to(f64);
    d.per_head = m->fc->floatWeight().to(f64).view({-1, heads, m->d_v}).permute({1, 2, 0});
    if (m->max_relative_positions > 0) {
        d.table = torch::matmul(m->relative_position_values.to(f64), d.per_head);
        d.offsets = model::relativePositionIndex(lq, lk, m->max_relative_positions, d.table.device());
    }
    d.x = b.input.to(f64);
    d.bias = m->fc->bias.defined() ? m->fc->bias.to(f64) : torch::zeros({d.x.size(1)}, d.x.options());
    const Tensor z = blockSum(d, query_rows);
    if (m->pre_norm) {  // the residual sum itself is the output
        d.output = z;
        return d;
    }
    // Post-norm: LN(z) = sum_k (T_k - mean(T_k)) gamma / sigma(z) + (b_O - mean(b_O)) gamma / sigma(z) + beta.
    const auto& ln = m->layer_norm;
    d.gamma = ln->weight.to(f64);
    const Tensor centred = z - z.mean(-1, true);
    d.inv_sigma = (centred.pow(2).mean(-1, true) + ln->options.eps()).rsqrt();
    d.output = centred * d.gamma * d.inv_sigma + ln->bias.to(f64);
    return d;
}

// The vectors T~_ik scored, of the queries q and keys k of one tile, [Q, K, d]: T_ik, then (post-norm) the layer
// norm's linear part L_i(t) = (t - mean(t)) gamma / sigma(z_i). `values`: W_O^h v_h(x_k) of the tile's keys.
Tensor tileVectors(const Decomposition& d, const Span& q, const Span& k, const Tensor& values) {
    const Tensor w = weightsTile(d, q, k);                  // [h, Q, K]
    Tensor t = torch::einsum("hqk,hkd->qkd", {w, values});  // [Q, K, d]
    if (d.table.defined()) {
        const Tensor rows = k.of(q.of(d.offsets, 0), 1).reshape({-1});
        for (int64_t h = 0; h < d.heads(); ++h)
            t.add_(d.table[h].index_select(0, rows).view_as(t).mul_(w[h].unsqueeze(-1)));
    }
    if (!d.cross)  // key i of query i carries the residual x_i
        for (int64_t i = std::max(q.begin, k.begin); i < std::min(q.begin + q.size, k.begin + k.size); ++i)
            t[i - q.begin][i - k.begin].add_(d.x[i]);
    if (d.gamma.defined()) t.sub_(t.mean(-1, true)).mul_(d.gamma).mul_(q.of(d.inv_sigma, 0).unsqueeze(-1));
    return t;
}

// normalize_contrib('min_sum', resultant_norm): max(0, ||y_i||_1 - ||y_i - T~_ik||_1), [Q, K].
Tensor closeness(const Tensor& y, const Tensor& vectors) {
    return (y.abs().sum(-1, true) - (y.unsqueeze(1) - vectors).abs_().sum(-1)).clamp_min_(0);
}

// Rows summing to 1. A row whose every score is clipped to 0 (the biases, or a layer norm of gain 0, leave nothing
// of any token in the output) becomes the identity: the token keeps itself, through its own key in a
// self-attention, through the residual (the last column) in a cross-attention, as when every head is switched off.
// (The authors' normalize_contrib divides 0 by 0 there, and the NaN runs through the rollout into later rows.)
Tensor normalisedRows(const Tensor& c, bool cross) {
    const Tensor total = c.sum(-1, true);
    const Tensor kept = total > 0;
    Tensor out = c / torch::where(kept, total, torch::ones_like(total));
    const Tensor empty = kept.squeeze(-1).logical_not().nonzero().squeeze(1);
    if (empty.numel() > 0)
        out.index_put_({empty, cross ? torch::full_like(empty, c.size(1) - 1) : empty}, torch::ones({}, c.options()));
    return out;
}

// The layer-wise ALTI+ matrix of one block: [lq, lk] for a self-attention (the residual x_q counted with key q),
// [lq, lk + 1] for a cross-attention (the residual, the decoder's own x_q, as a last column: the authors'
// "concatenate residual in cross-attention as another value vector"). Rows sum to 1. Computed in tiles of
// `tiles` queries x keys, so that the [lq, lk, d] vectors of every query and key are never held at once (the bound:
// alti.h, kAltiTileElements).
Tensor blockContributions(const Block& b, bool cross, const AltiTiles& tiles) {
    const Decomposition d = decompose(b, cross, tiles.key_columns > 0 ? tiles.query_rows : 0);
    const int64_t lq = d.queries(), lk = d.keys();
    const AltiTiles size =
        tiles.query_rows > 0 && tiles.key_columns > 0 ? tiles : altiTiles(lq, lk, d.heads(), d.x.size(1));
    Tensor c = torch::zeros({lq, lk + (cross ? 1 : 0)}, d.x.options());
    for (int64_t k0 = 0; k0 < lk; k0 += size.key_columns) {
        const Span k{k0, std::min(size.key_columns, lk - k0)};
        const Tensor values = torch::matmul(k.of(d.values, 1), d.per_head);  // [h, K, d]
        for (int64_t q0 = 0; q0 < lq; q0 += size.query_rows) {
            const Span q{q0, std::min(size.query_rows, lq - q0)};
            k.of(q.of(c, 0), 1).copy_(closeness(q.of(d.output, 0), tileVectors(d, q, k, values)));
        }
    }
    if (cross) {  // the residual's column: T = x_i, the decoder's own stream
        Tensor t = d.x.unsqueeze(1);
        if (d.gamma.defined()) t = (t - t.mean(-1, true)) * d.gamma * d.inv_sigma.unsqueeze(-1);
        c.select(1, lk).copy_(closeness(d.output, t).squeeze(1));
    }
    return normalisedRows(c, cross);
}

// The layer-wise matrices of a pass, walked sub-layer by sub-layer as TransformerImpl's decoderOutput runs
// them (EncoderLayerImpl::forward: self-attention, feed-forward; DecoderLayerImpl::forward: self-attention,
// cross-attention, feed-forward), so that each block's input is at hand.
struct LayerWise {
    std::vector<Tensor> encoder, decoder, cross;  // [s, s], [t, t], [t, s + 1]
};

LayerWise layerWise(const ForcedPass& pass, const AltiTiles& tiles) {
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
        out.encoder.push_back(blockContributions(self, false, tiles));
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
        out.decoder.push_back(blockContributions(self, false, tiles));
        out.cross.push_back(blockContributions(cross, true, tiles));
        x = layer->pos_ffn(x);
    }
    return out;
}

// get_contribution_rollout: the encoder's layers multiplied (compute_joint_attention, from the identity), then the
// decoder's, each layer's [cross x encoder rollout ; self x the cross-attention's residual share] (rollout()), rows
// renormalised to 1 after each layer as the authors do. Returns, after each decoder layer, [t, s + t]: source part,
// then target part. `s` and `t`: the source and decoder input lengths (the maps' sizes; a stack without layers
// passes each piece on as it is).
std::vector<Tensor> rolloutByLayer(const LayerWise& w, int64_t s, int64_t t, const torch::TensorOptions& options) {
    Tensor encoder = torch::eye(s, options);
    for (const Tensor& layer : w.encoder) encoder = torch::matmul(layer, encoder);
    std::vector<Tensor> totals;
    Tensor total = torch::cat({torch::zeros({t, s}, options), torch::eye(t, options)}, 1);
    for (size_t l = 0; l < w.decoder.size(); ++l) {
        const Tensor& cross = w.cross[l];
        const Tensor self = w.decoder[l] * cross.narrow(1, s, 1);  // the residual's share spread by the self part
        const Tensor from_source = torch::matmul(cross.narrow(1, 0, s), encoder);
        if (l == 0) {
            total = torch::cat({from_source, self}, 1);
        } else {
            const Tensor target = torch::matmul(self, total.narrow(1, s, t));
            const Tensor source = torch::matmul(self, total.narrow(1, 0, s)) + from_source;
            total = torch::cat({source, target}, 1);
            total = total / total.sum(-1, true);
        }
        totals.push_back(total);
    }
    if (totals.empty()) totals.push_back(total);
    return totals;
}

// A map of `rows` x `columns` as a float64 tensor; InputError naming it (`what`) when it is of another size.
Tensor toTensor(const Matrix& m, int64_t rows, int64_t columns, const std::string& what, int64_t s, int64_t t) {
    const auto fits = [&] {
        for (const auto& row : m)
            if (int64_t(row.size()) != columns) return false;
        return int64_t(m.size()) == rows;
    };
    if (!fits())
        throw InputError("ALTI+ by layer: a map of the wrong size (" + what + ": " + std::to_string(m.size()) + " x " +
                         std::to_string(m.empty() ? 0 : m.front().size()) + " for " + std::to_string(s) +
                         " source and " + std::to_string(t) + " target pieces)");
    Tensor out = torch::zeros({rows, columns}, torch::kFloat64);
    auto a = out.accessor<double, 2>();
    for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < columns; ++j) a[i][j] = m[size_t(i)][size_t(j)];
    return out;
}
}  // namespace

Contributions altiPlus(const ForcedPass& pass, const AltiTiles& tiles) {
    const LayerWise w = layerWise(pass, tiles);
    Contributions out;
    out.method = ContributionMethod::AltiPlus;
    const int64_t s = pass.src.size(1), t = pass.trg_in.size(1);
    for (const Tensor& m : w.encoder) out.encoder_self.push_back(util::toMatrix(m));
    for (const Tensor& m : w.decoder) out.decoder_self.push_back(util::toMatrix(m));
    for (const Tensor& m : w.cross) out.cross.push_back(util::toMatrix(m.narrow(1, 0, s)));
    const Tensor total =
        rolloutByLayer(w, s, t, torch::TensorOptions(torch::kFloat64).device(pass.src.device())).back();
    out.source = util::toMatrix(total.narrow(1, 0, s));
    out.target = util::toMatrix(total.narrow(1, s, t));
    return out;
}

}  // namespace attnlab::contributions

namespace attnlab {

std::vector<Matrix> altiPlusSourceByLayer(const Contributions& c) {
    if (c.method != ContributionMethod::AltiPlus)
        throw InputError("ALTI+ by layer: the contributions are " + contributionMethodName(c.method) + ", not alti+");
    const int64_t s = c.source.empty() ? 0 : int64_t(c.source.front().size()), t = int64_t(c.target.size());
    if (c.cross.size() != c.decoder_self.size())
        throw InputError("ALTI+ by layer: " + std::to_string(c.cross.size()) + " cross-attention maps for " +
                         std::to_string(c.decoder_self.size()) + " decoder layers");
    contributions::LayerWise w;
    const auto layer = [](const char* kind, size_t l) { return std::string(kind) + " layer " + std::to_string(l); };
    for (size_t l = 0; l < c.encoder_self.size(); ++l)
        w.encoder.push_back(contributions::toTensor(c.encoder_self[l], s, s, layer("encoder", l), s, t));
    for (size_t l = 0; l < c.decoder_self.size(); ++l) {
        w.decoder.push_back(contributions::toTensor(c.decoder_self[l], t, t, layer("decoder", l), s, t));
        const torch::Tensor source = contributions::toTensor(c.cross[l], t, s, layer("cross-attention", l), s, t);
        // The residual's share: what the row leaves of 1 (a row that took nothing keeps itself: 1).
        w.cross.push_back(torch::cat({source, (1 - source.sum(-1, true)).clamp_min(0)}, 1));
    }
    std::vector<Matrix> out;
    if (c.decoder_self.empty()) return out;
    for (const torch::Tensor& total : contributions::rolloutByLayer(w, s, t, torch::kFloat64))
        out.push_back(util::toMatrix(total.narrow(1, 0, s)));
    return out;
}

}  // namespace attnlab
