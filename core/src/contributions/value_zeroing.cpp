// Value zeroing (value_zeroing.h; docs/contributions.md "Value zeroing" and "Contrastive"). Every layer is recomputed
// by the model's own modules (MultiHeadAttentionImpl::attend with the keys and values it projected, the feed-forward,
// the final layer norm) from the clean input of that layer, so every family's layer structure (post-norm, pre-norm,
// relative positions, biases, switched-off heads) is the model's; only the values handed to attend() differ. The keys
// of one map are zeroed a batch at a time: row b of a recomputation is the layer with key first + b zeroed.
#include "contributions/value_zeroing.h"

#include "model/masks.h"
#include "util/tensor_convert.h"

#include <torch/torch.h>

#include <algorithm>
#include <functional>

namespace attnlab::contributions {

int64_t zeroingRowElements(const ModelConfig& cfg, int64_t longest, int64_t queries, bool logits) {
    const int64_t heads_width = std::max({cfg.d_model, cfg.n_head * cfg.d_k, cfg.n_head * cfg.d_v});
    const int64_t per_query =
        std::max({2 * cfg.d_model, cfg.d_inner, cfg.decoderInner(), cfg.n_head * longest, heads_width});
    return std::max({queries * per_query, longest * heads_width, logits ? 2 * cfg.n_trg_vocab : int64_t(0)});
}

namespace {

// A recomputation with the values [n, heads, keys, d_v] (row b: one key's values zeroed in every head): what is
// measured of each of its rows, [n, ...].
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

struct Pass {
    model::Transformer model;
    torch::Tensor src, trg_in, src_mask, trg_mask;
    int64_t batch_elements = kZeroingBatchElements;
    int64_t longest = 0;  // the longer side's pieces
    // The keys zeroed in one batch: as many rows as the bound holds (zeroingRowElements), at least one.
    int64_t keysPerBatch(int64_t queries, bool logits) const {
        return std::max<int64_t>(1, batch_elements / zeroingRowElements(model->config(), longest, queries, logits));
    }
};

Pass makePass(const ForcedPass& f, int64_t batch_elements) {
    const ModelConfig& cfg = f.model->config();
    return {f.model,
            f.src,
            f.trg_in,
            model::padMask(f.src, cfg.src_pad_idx),
            model::decoderMask(f.trg_in, cfg.trg_pad_idx),
            batch_elements,
            std::max(f.src.size(1), f.trg_in.size(1))};
}

// `measure` of the recomputations with each key of `values` zeroed, `per_batch` keys at a time: [keys, ...].
torch::Tensor perKey(const Recompute& measure, const torch::Tensor& values, int64_t per_batch) {
    const int64_t keys = values.size(2);
    std::vector<torch::Tensor> parts;
    for (int64_t first = 0; first < keys; first += per_batch)
        parts.push_back(measure(zeroed(values, first, std::min(per_batch, keys - first))));
    return torch::cat(parts, 0);
}

// An encoder layer's clean input [1, S, d] and its self-attention's keys and values projected from it.
struct EncoderLayerInput {
    model::EncoderLayerImpl* layer;
    torch::Tensor x, keys, values;
};
EncoderLayerInput encoderLayerInput(model::EncoderLayerImpl* layer, const torch::Tensor& x) {
    const auto kv = layer->slf_attn->keysInput(x);
    return {layer, x, layer->slf_attn->projectKeys(kv), layer->slf_attn->projectValues(kv)};
}
// The layer with `v` [n, ...] in place of its self-attention's values: [n, S, d], before any final layer norm.
torch::Tensor withValues(const EncoderLayerInput& in, const torch::Tensor& v, const Pass& p) {
    const int64_t n = v.size(0);
    return in.layer->pos_ffn(in.layer->slf_attn->attend(rows(in.x, n), heads(in.keys, n), v, p.src_mask).first);
}

// A decoder layer's clean input [1, t, d], the keys and values its two attentions project, and the cross-attention's
// clean input.
struct DecoderLayerInput {
    model::DecoderLayerImpl* layer;
    torch::Tensor y, self_keys, self_values, memory_keys, memory_values, attended;
};
DecoderLayerInput decoderLayerInput(model::DecoderLayerImpl* layer, const torch::Tensor& y, const torch::Tensor& memory,
                                    const Pass& p) {
    auto slf = layer->slf_attn, cross = layer->enc_attn;
    const auto kv = slf->keysInput(y);
    return {layer,
            y,
            slf->projectKeys(kv),
            slf->projectValues(kv),
            cross->projectKeys(memory),
            cross->projectValues(memory),
            slf->forwardSelf(y, p.trg_mask).first};
}
// The layer with `v` in place of its self-attention's values (the cross-attention then reads the changed stream, as
// in the authors' decoder layer): [n, t, d], before any final layer norm.
torch::Tensor withSelfValues(const DecoderLayerInput& in, const torch::Tensor& v, const Pass& p) {
    const int64_t n = v.size(0);
    auto h = in.layer->slf_attn->attend(rows(in.y, n), heads(in.self_keys, n), v, p.trg_mask).first;
    return in.layer->pos_ffn(
        in.layer->enc_attn->attend(h, heads(in.memory_keys, n), heads(in.memory_values, n), p.src_mask).first);
}
// The layer with `v` in place of its cross-attention's values, its self-attention clean.
torch::Tensor withCrossValues(const DecoderLayerInput& in, const torch::Tensor& v, const Pass& p) {
    const int64_t n = v.size(0);
    return in.layer->pos_ffn(
        in.layer->enc_attn->attend(rows(in.attended, n), heads(in.memory_keys, n), v, p.src_mask).first);
}

model::EncoderLayerImpl* encoderLayer(Pass& p, size_t l) {
    return p.model->encoder->layer_stack[l]->as<model::EncoderLayer>();
}
model::DecoderLayerImpl* decoderLayer(Pass& p, size_t l) {
    return p.model->decoder->layer_stack[l]->as<model::DecoderLayer>();
}

// Each encoder layer's raw scores [src][src]; `memory` receives the encoder's output.
std::vector<torch::Tensor> encoderScores(Pass& p, torch::Tensor& memory) {
    auto& enc = p.model->encoder;
    auto x = enc->embed(p.src);
    const size_t layers = enc->layer_stack->size();
    const int64_t per_batch = p.keysPerBatch(p.src.size(1), false);
    std::vector<torch::Tensor> out;
    for (size_t l = 0; l < layers; ++l) {
        const bool last = l + 1 == layers;
        const auto in = encoderLayerInput(encoderLayer(p, l), x);
        auto next = in.layer->forward(x, p.src_mask).first;
        const auto clean = afterLayer(enc->final_layer_norm, last, next);
        const Recompute measure = [&](const torch::Tensor& v) {
            return cosineDistances(afterLayer(enc->final_layer_norm, last, withValues(in, v, p)), clean);
        };
        out.push_back(perKey(measure, in.values, per_batch).t().contiguous());
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
    const int64_t per_batch = p.keysPerBatch(p.trg_in.size(1), false);
    DecoderScores out;
    for (size_t l = 0; l < layers; ++l) {
        const bool last = l + 1 == layers;
        const auto in = decoderLayerInput(decoderLayer(p, l), y, memory, p);
        auto next = std::get<0>(in.layer->forward(y, memory, p.trg_mask, p.src_mask));
        const auto clean = afterLayer(dec->final_layer_norm, last, next);
        const Recompute through_self = [&](const torch::Tensor& v) {
            return cosineDistances(afterLayer(dec->final_layer_norm, last, withSelfValues(in, v, p)), clean);
        };
        const Recompute through_cross = [&](const torch::Tensor& v) {
            return cosineDistances(afterLayer(dec->final_layer_norm, last, withCrossValues(in, v, p)), clean);
        };
        // A query never sees a later position (the authors' code fills only rows i >= j): exact zeros there.
        out.self.push_back(perKey(through_self, in.self_values, per_batch).t().tril());
        out.cross.push_back(perKey(through_cross, in.memory_values, per_batch).t().contiguous());
        y = next;
    }
    return out;
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
// The layers from `first` on: the encoder's output through its final layer norm; the decoder's last layer's output.
torch::Tensor encodeFrom(Pass& p, size_t first, torch::Tensor x) {
    auto& enc = p.model->encoder;
    for (size_t l = first; l < enc->layer_stack->size(); ++l) x = encoderLayer(p, l)->forward(x, p.src_mask).first;
    return afterLayer(enc->final_layer_norm, true, x);
}
torch::Tensor decodeFrom(Pass& p, size_t first, torch::Tensor y, const torch::Tensor& memory) {
    for (size_t l = first; l < p.model->decoder->layer_stack->size(); ++l)
        y = std::get<0>(decoderLayer(p, l)->forward(y, memory, p.trg_mask, p.src_mask));
    return y;
}

// log p(chosen) - log p(alternative) at the last position of the decoder's last layer's output [n, t, d], through
// its final layer norm and the output projection as the search's (TransformerImpl::project), the softmax in float64:
// [n].
torch::Tensor differences(Pass& p, const torch::Tensor& out, int64_t chosen, int64_t alternative) {
    auto& dec = p.model->decoder;
    const auto last = afterLayer(dec->final_layer_norm, true, out.select(1, out.size(1) - 1));  // [n, d]
    const auto logp = torch::log_softmax(p.model->project(last).to(torch::kFloat64), -1);
    return logp.select(1, chosen) - logp.select(1, alternative);
}

// [keys] -> `length` floats, zeros after the keys.
std::vector<float> padded(const torch::Tensor& v, int64_t length) {
    const auto c = v.to(torch::kCPU, torch::kFloat32).contiguous();
    std::vector<float> out(size_t(length), 0.0f);
    std::copy(c.data_ptr<float>(), c.data_ptr<float>() + c.size(0), out.begin());
    return out;
}
}  // namespace

Contributions valueZeroing(const ForcedPass& pass, int64_t batch_elements) {
    Pass p = makePass(pass, batch_elements);
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

// The decoder runs up to the step only (its row reads no later input); each zeroed layer runs from its clean input
// and the layers after it on, the encoder's zeroing through the whole decoder.
void contrastiveZeroing(const ForcedPass& pass, int64_t step, int64_t chosen, int64_t alternative, Contrastive& out,
                        int64_t batch_elements) {
    const int64_t targets = pass.trg_in.size(1);
    Pass p = makePass({pass.model, pass.src, pass.trg_in.narrow(1, 0, step + 1)}, batch_elements);
    const size_t encoder_layers = p.model->encoder->layer_stack->size();
    const size_t decoder_layers = p.model->decoder->layer_stack->size();
    std::vector<torch::Tensor> encoder_in, decoder_in;  // each layer's clean input
    auto x = p.model->encoder->embed(p.src);
    for (size_t l = 0; l < encoder_layers; ++l)
        encoder_in.push_back(x), x = encoderLayer(p, l)->forward(x, p.src_mask).first;
    const auto memory = afterLayer(p.model->encoder->final_layer_norm, true, x);
    auto y = p.model->decoder->embed(p.trg_in, 0);
    for (size_t l = 0; l < decoder_layers; ++l)
        decoder_in.push_back(y), y = std::get<0>(decoderLayer(p, l)->forward(y, memory, p.trg_mask, p.src_mask));
    const double full = differences(p, y, chosen, alternative).item<double>();
    const int64_t per_batch = p.keysPerBatch(p.longest, true);
    auto drop = [&](const torch::Tensor& last_output) {
        return full - differences(p, last_output, chosen, alternative);
    };
    for (size_t l = 0; l < encoder_layers; ++l) {
        const auto in = encoderLayerInput(encoderLayer(p, l), encoder_in[l]);
        const Recompute measure = [&](const torch::Tensor& v) {
            const int64_t n = v.size(0);
            return drop(decodeFrom(p, 0, rows(decoder_in.front(), n), encodeFrom(p, l + 1, withValues(in, v, p))));
        };
        out.zeroing_encoder_self.push_back(padded(perKey(measure, in.values, per_batch), p.src.size(1)));
    }
    for (size_t l = 0; l < decoder_layers; ++l) {
        const auto in = decoderLayerInput(decoderLayer(p, l), decoder_in[l], memory, p);
        const Recompute through_self = [&](const torch::Tensor& v) {
            return drop(decodeFrom(p, l + 1, withSelfValues(in, v, p), memory.expand({v.size(0), -1, -1})));
        };
        const Recompute through_cross = [&](const torch::Tensor& v) {
            return drop(decodeFrom(p, l + 1, withCrossValues(in, v, p), memory.expand({v.size(0), -1, -1})));
        };
        out.zeroing_decoder_self.push_back(padded(perKey(through_self, in.self_values, per_batch), targets));
        out.zeroing_cross.push_back(padded(perKey(through_cross, in.memory_values, per_batch), p.src.size(1)));
    }
}

}  // namespace attnlab::contributions
