// Value zeroing (value_zeroing.h; docs/contributions.md "Value zeroing"). Every layer is recomputed by the model's
// own modules (MultiHeadAttentionImpl::attend with the keys and values it projected, the feed-forward, the final
// layer norm) from the clean input of that layer, so every family's layer structure (post-norm, pre-norm, relative
// positions, biases, switched-off heads) is the model's; only the values handed to attend() differ. The keys of
// one map are zeroed a batch at a time: row b of a recomputation is the layer with key first + b zeroed.
#include "contributions/value_zeroing.h"

#include "model/masks.h"
#include "util/tensor_convert.h"

#include <torch/torch.h>

#include <algorithm>
#include <functional>

namespace attnlab::contributions {
namespace {

// The most elements one recomputation's widest tensor may hold (8 M floats, 32 MB): the keys of a map are zeroed
// that many at a time, whatever the sentence's length.
constexpr int64_t kChunkElements = int64_t(1) << 23;

// A layer recomputed with the values [n, heads, keys, d_v] (row b: one key's values zeroed in every head): its
// outputs [n, queries, d_model], through the final layer norm after the last layer (what the next layer, or the
// projection, reads).
using Recompute = std::function<torch::Tensor(const torch::Tensor& values)>;

torch::Tensor afterLayer(torch::nn::LayerNorm& final_norm, bool last, const torch::Tensor& x) {
    return last && final_norm ? final_norm(x) : x;
}

torch::Tensor rows(const torch::Tensor& x, int64_t n) { return x.expand({n, -1, -1}).contiguous(); }
torch::Tensor heads(const torch::Tensor& x, int64_t n) { return x.expand({n, -1, -1, -1}); }

// `values` [1, heads, keys, d_v] with key first + b zeroed in every head in row b: [n, heads, keys, d_v].
torch::Tensor zeroed(const torch::Tensor& values, int64_t first, int64_t n) {
    const int64_t keys = values.size(2);
    const auto keep = 1 - torch::eye(keys, values.options()).narrow(0, first, n);  // [n, keys]
    return values * keep.view({n, 1, keys, 1});
}

// A distance below this is rounding, not a change: 1 - cos(angle) = 1e-12 is an angle of 1.4e-6, a hundred times
// what float32's rounding of a recomputed layer moves an output by (~1e-7 relative: a distance of ~5e-15); a key
// that cannot change a query (every head of the layer switched off) then scores 0, not noise.
constexpr double kUnchanged = 1e-12;

// The cosine distance of each changed output [n, q, d] from the clean one [1, q, d], in double: 1 - cosine
// similarity, clipped to [0, 2] as scikit-learn's cosine_distances (the authors' measure). [n, q].
torch::Tensor cosineDistances(const torch::Tensor& changed, const torch::Tensor& clean) {
    const auto a = changed.to(torch::kFloat64), b = clean.to(torch::kFloat64);
    const auto cosine = (a * b).sum(-1) / (a.norm(2, -1) * b.norm(2, -1)).clamp_min(1e-300);
    const auto d = (1 - cosine).clamp(0, 2);
    return torch::where(d < kUnchanged, torch::zeros_like(d), d);
}

// The raw scores [queries, keys] of one map: column j, how far every query's output moved with key j's values
// zeroed. `width`: the widest row of the recomputation (feed-forward, heads x keys), to size the batches.
torch::Tensor distances(const Recompute& recompute, const torch::Tensor& values, const torch::Tensor& clean,
                        int64_t width) {
    const int64_t keys = values.size(2), queries = clean.size(1);
    const int64_t chunk = std::max<int64_t>(1, kChunkElements / std::max<int64_t>(1, queries * width));
    std::vector<torch::Tensor> columns;
    for (int64_t first = 0; first < keys; first += chunk) {
        const int64_t n = std::min(chunk, keys - first);
        columns.push_back(cosineDistances(recompute(zeroed(values, first, n)), clean));  // [n, queries]
    }
    return torch::cat(columns, 0).t().contiguous();
}

// d divided by `total` row by row; rows whose total is 0 (nothing changed them) stay 0.
torch::Tensor shares(const torch::Tensor& d, const torch::Tensor& total) {
    return torch::where(total > 0, d / total.clamp_min(1e-300), torch::zeros_like(d));
}
torch::Tensor rowNormalized(const torch::Tensor& d) { return shares(d, d.sum(-1, true)); }

// The identity on the rows whose total is 0: a piece that no key of a layer changed keeps its own representation.
torch::Tensor unchanged(const torch::Tensor& total) {
    return torch::diag((total.squeeze(-1) == 0).to(torch::kFloat64));
}

struct Pass {
    model::Transformer model;
    torch::Tensor src, trg_in, src_mask, trg_mask;
    int64_t width = 0;
};

// Each encoder layer's raw scores [src][src]; `memory` receives the encoder's output.
std::vector<torch::Tensor> encoderScores(Pass& p, torch::Tensor& memory) {
    auto& enc = p.model->encoder;
    auto x = enc->embed(p.src);
    const size_t layers = enc->layer_stack->size();
    std::vector<torch::Tensor> out;
    for (size_t l = 0; l < layers; ++l) {
        auto* layer = enc->layer_stack[l]->as<model::EncoderLayer>();
        const bool last = l + 1 == layers;
        auto next = layer->forward(x, p.src_mask).first;
        auto attn = layer->slf_attn;
        const auto kv = attn->keysInput(x);
        const auto keys = attn->projectKeys(kv);
        const Recompute recompute = [&](const torch::Tensor& v) {
            const int64_t n = v.size(0);
            auto y = attn->attend(rows(x, n), heads(keys, n), v, p.src_mask).first;
            return afterLayer(enc->final_layer_norm, last, layer->pos_ffn(y));
        };
        out.push_back(
            distances(recompute, attn->projectValues(kv), afterLayer(enc->final_layer_norm, last, next), p.width));
        x = next;
    }
    memory = afterLayer(enc->final_layer_norm, true, x);
    return out;
}

struct DecoderScores {
    std::vector<torch::Tensor> self, cross;  // raw, per layer: [tgt][decoder input], [tgt][src]
};

// Each decoder layer's raw scores: its self-attention's values zeroed, then (the self-attention clean) its
// cross-attention's.
DecoderScores decoderScores(Pass& p, const torch::Tensor& memory) {
    auto& dec = p.model->decoder;
    auto y = dec->embed(p.trg_in, 0);
    const size_t layers = dec->layer_stack->size();
    DecoderScores out;
    for (size_t l = 0; l < layers; ++l) {
        auto* layer = dec->layer_stack[l]->as<model::DecoderLayer>();
        const bool last = l + 1 == layers;
        auto next = std::get<0>(layer->forward(y, memory, p.trg_mask, p.src_mask));
        const auto clean = afterLayer(dec->final_layer_norm, last, next);
        auto slf = layer->slf_attn, cross = layer->enc_attn;
        const auto kv = slf->keysInput(y);
        const auto self_keys = slf->projectKeys(kv);
        const auto memory_keys = cross->projectKeys(memory), memory_values = cross->projectValues(memory);
        const auto attended = slf->forwardSelf(y, p.trg_mask).first;  // the cross-attention's clean input
        auto finish = [&](const torch::Tensor& c) {
            return afterLayer(dec->final_layer_norm, last, layer->pos_ffn(c));
        };
        const Recompute through_self = [&](const torch::Tensor& v) {
            const int64_t n = v.size(0);
            auto h = slf->attend(rows(y, n), heads(self_keys, n), v, p.trg_mask).first;
            return finish(cross->attend(h, heads(memory_keys, n), heads(memory_values, n), p.src_mask).first);
        };
        const Recompute through_cross = [&](const torch::Tensor& v) {
            const int64_t n = v.size(0);
            return finish(cross->attend(rows(attended, n), heads(memory_keys, n), v, p.src_mask).first);
        };
        // A query never sees a later position (the authors' code fills only rows i >= j): exact zeros there.
        out.self.push_back(distances(through_self, slf->projectValues(kv), clean, p.width).tril());
        out.cross.push_back(distances(through_cross, memory_values, clean, p.width));
        y = next;
    }
    return out;
}

// The rollout through the model (the authors' compute_joint_attention without the residual term, joint = A_l
// joint_{l-1}), carried through the encoder-decoder as docs/contributions.md says: the encoder's layers multiplied;
// in each decoder layer a row's scores normalised over its self-attention's and its cross-attention's keys
// together, the target part passed on through the self-attention shares and the source part gathered from the
// cross-attention shares times the encoder's rollout. Rows that no key changed are the identity.
void rollout(Contributions& c, const std::vector<torch::Tensor>& encoder, const DecoderScores& decoder) {
    const auto f64 = torch::TensorOptions().dtype(torch::kFloat64).device(decoder.self.front().device());
    const int64_t src = decoder.cross.front().size(1), tgt = decoder.self.front().size(0);
    auto source_mix = torch::eye(src, f64);
    for (const auto& a : encoder) {
        const auto total = a.sum(-1, true);
        source_mix = (shares(a, total) + unchanged(total)).mm(source_mix);
    }
    auto target = torch::eye(tgt, f64), source = torch::zeros({tgt, src}, f64);
    for (size_t l = 0; l < decoder.self.size(); ++l) {
        const auto total = decoder.self[l].sum(-1, true) + decoder.cross[l].sum(-1, true);
        const auto self_share = shares(decoder.self[l], total) + unchanged(total);
        source = self_share.mm(source) + shares(decoder.cross[l], total).mm(source_mix);
        target = self_share.mm(target);
    }
    c.source = util::toMatrix(source);
    c.target = util::toMatrix(target);
}

std::vector<Matrix> normalizedMaps(const std::vector<torch::Tensor>& raw) {
    std::vector<Matrix> out;
    for (const auto& d : raw) out.push_back(util::toMatrix(rowNormalized(d)));
    return out;
}
}  // namespace

Contributions valueZeroing(const ForcedPass& pass) {
    Pass p{pass.model, pass.src, pass.trg_in, {}, {}, 0};
    const ModelConfig& cfg = p.model->config();
    p.src_mask = model::padMask(p.src, cfg.src_pad_idx);
    p.trg_mask = model::decoderMask(p.trg_in, cfg.trg_pad_idx);
    const int64_t longest = std::max(p.src.size(1), p.trg_in.size(1));
    p.width = std::max({cfg.d_model, cfg.d_inner, cfg.decoderInner(), cfg.n_head * longest});
    torch::Tensor memory;
    const auto encoder = encoderScores(p, memory);
    const auto decoder = decoderScores(p, memory);
    Contributions c;
    c.method = ContributionMethod::ValueZeroing;
    c.encoder_self = normalizedMaps(encoder);
    c.decoder_self = normalizedMaps(decoder.self);
    c.cross = normalizedMaps(decoder.cross);
    rollout(c, encoder, decoder);
    return c;
}

}  // namespace attnlab::contributions
