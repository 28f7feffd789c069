#include "model/transformer.h"

#include "model/masks.h"

#include <attnlab/errors.h>

#include <torch/torch.h>

#include <cmath>
#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace attnlab::model {

namespace {
// Freed memory handed back to the system: glibc keeps what a load frees inside its heap (chunk temporaries, a
// layer's float32 weights, float32 weights dropped) resident, between what stays, unless trimmed.
void trimHeap() {
#ifdef __GLIBC__
    malloc_trim(0);
#endif
}

// without_float_weights: on a weight with no float32 storage (a model built for a held compute type).
torch::nn::Embedding makeEmbedding(int64_t n, int64_t d, int64_t pad, bool without_float_weights) {
    auto options = torch::nn::EmbeddingOptions(n, d).padding_idx(pad);
    if (without_float_weights) options._weight(droppedFloatTensor({n, d}));
    return torch::nn::Embedding(options);
}

// A layer's linear weights without float32 storage, right after it is built (a model built for a held
// compute type: one layer's float32 weights at a time, never the model's).
template <typename Layer>
Layer withoutFloatWeights(Layer layer, bool drop) {
    if (!drop) return layer;
    for (const auto& m : layer->modules(/*include_self=*/false))
        if (auto* linear = dynamic_cast<PackedLinearImpl*>(m.get())) dropFloatStorage(linear->weight);
    trimHeap();
    return layer;
}

LayerOptions layerOptions(const ModelConfig& cfg, bool decoder) {
    LayerOptions o;
    o.attention.n_head = cfg.n_head;
    o.attention.d_model = cfg.d_model;
    o.attention.d_k = cfg.d_k;
    o.attention.d_v = cfg.d_v;
    o.attention.dropout = cfg.dropout;
    o.attention.bias = cfg.attn_bias;
    o.attention.layer_norm_eps = cfg.layer_norm_eps;
    o.attention.pre_norm = cfg.preNorm();
    o.attention.max_relative_positions = cfg.max_relative_positions;
    o.d_inner = decoder ? cfg.decoderInner() : cfg.d_inner;
    o.activation = cfg.ffn_activation;
    return o;
}

PositionalEncoding makePositional(const ModelConfig& cfg) {
    return PositionalEncoding(cfg.d_word_vec, cfg.n_position, positionLayout(cfg.pos_encoding), cfg.pos_offset);
}

// The layer norm after a stack's last layer (ModelConfig::final_layer_norm): null without one.
torch::nn::LayerNorm makeFinalNorm(const ModelConfig& cfg) {
    return cfg.final_layer_norm ? makeLayerNorm(cfg.d_model, cfg.layer_norm_eps) : torch::nn::LayerNorm(nullptr);
}

// The embedding's layer norm (ModelConfig::emb_layer_norm): applied when the module has one.
torch::Tensor normalized(torch::nn::LayerNorm& norm, const torch::Tensor& x) { return norm ? norm(x) : x; }
}  // namespace

// ---------------------------------------------------------------- Encoder
EncoderImpl::EncoderImpl(const ModelConfig& cfg, const torch::Tensor& shared_embedding, bool without_float_weights)
    : m_shared_embedding(shared_embedding),
      m_pad_idx(cfg.src_pad_idx),
      m_emb_scale(cfg.scaleEmb() ? std::sqrt(double(cfg.d_model)) : 1.0) {
    if (!m_shared_embedding.defined())
        src_word_emb = register_module(
            "src_word_emb", makeEmbedding(cfg.n_src_vocab, cfg.d_word_vec, cfg.src_pad_idx, without_float_weights));
    position_enc = register_module("position_enc", makePositional(cfg));
    dropout = register_module("dropout", FastDropout(cfg.dropout));
    layer_stack = register_module("layer_stack", torch::nn::ModuleList());
    for (int64_t i = 0; i < cfg.encoderLayers(); ++i)
        layer_stack->push_back(withoutFloatWeights(EncoderLayer(layerOptions(cfg, false)), without_float_weights));
    if (cfg.emb_layer_norm) layer_norm = register_module("layer_norm", makeLayerNorm(cfg.d_model, cfg.layer_norm_eps));
    if (cfg.final_layer_norm) final_layer_norm = register_module("final_layer_norm", makeFinalNorm(cfg));
}

const torch::Tensor& EncoderImpl::embeddingWeight() const {
    return src_word_emb ? src_word_emb->weight : m_shared_embedding;
}

torch::Tensor EncoderImpl::wordEmbedding(const torch::Tensor& ids) const {
    return m_rows ? m_rows->lookup(ids) : torch::embedding(embeddingWeight(), ids, m_pad_idx);
}

torch::Tensor EncoderImpl::embed(const torch::Tensor& src_seq) {
    auto x = wordEmbedding(src_seq);
    if (m_emb_scale != 1.0) x = x * m_emb_scale;
    if (embedded) *embedded = x = x.detach().requires_grad_(true);
    return normalized(layer_norm, dropout(position_enc(x)));
}

torch::Tensor EncoderImpl::forward(const torch::Tensor& src_seq, const torch::Tensor& src_mask,
                                   std::vector<torch::Tensor>* attns) {
    auto x = embed(src_seq);
    for (const auto& layer : *layer_stack) {
        auto [out, attn] = layer->as<EncoderLayer>()->forward(x, src_mask);
        x = out;
        if (attns) attns->push_back(attn);
    }
    return normalized(final_layer_norm, x);
}

// ---------------------------------------------------------------- Decoder
void DecoderState::select(const torch::Tensor& index) {
    for (auto& l : layers) {
        if (l.self_k.defined()) {
            l.self_k = l.self_k.index_select(0, index);
            l.self_v = l.self_v.index_select(0, index);
        }
        l.cross_k = l.cross_k.index_select(0, index);
        l.cross_v = l.cross_v.index_select(0, index);
    }
    src_mask = src_mask.index_select(0, index);
}

DecoderImpl::DecoderImpl(const ModelConfig& cfg, bool without_float_weights)
    : m_emb_scale(cfg.scaleEmb() ? std::sqrt(double(cfg.d_model)) : 1.0), m_zero_start(cfg.start_from_zero_embedding) {
    trg_word_emb = register_module(
        "trg_word_emb", makeEmbedding(cfg.n_trg_vocab, cfg.d_word_vec, cfg.trg_pad_idx, without_float_weights));
    position_enc = register_module("position_enc", makePositional(cfg));
    dropout = register_module("dropout", FastDropout(cfg.dropout));
    layer_stack = register_module("layer_stack", torch::nn::ModuleList());
    for (int64_t i = 0; i < cfg.decoderLayers(); ++i)
        layer_stack->push_back(withoutFloatWeights(DecoderLayer(layerOptions(cfg, true)), without_float_weights));
    if (cfg.emb_layer_norm) layer_norm = register_module("layer_norm", makeLayerNorm(cfg.d_model, cfg.layer_norm_eps));
    if (cfg.final_layer_norm) final_layer_norm = register_module("final_layer_norm", makeFinalNorm(cfg));
}

torch::Tensor DecoderImpl::wordEmbedding(const torch::Tensor& ids) const {
    return m_rows ? m_rows->lookup(ids) : torch::embedding(trg_word_emb->weight, ids);
}

torch::Tensor DecoderImpl::embed(const torch::Tensor& seq, int64_t offset) {
    auto x = wordEmbedding(seq);
    if (m_emb_scale != 1.0) x = x * m_emb_scale;
    // src/layers/decoder.cc zero_first_timestep: the first step's vector zeroed (its scale then changes
    // nothing); the position is added next as at every step.
    if (m_zero_start && offset == 0 && x.size(1) > 0)
        x = torch::cat({torch::zeros_like(x.narrow(1, 0, 1)), x.narrow(1, 1, x.size(1) - 1)}, 1);
    if (embedded) *embedded = x = x.detach().requires_grad_(true);
    return normalized(layer_norm, dropout(position_enc->forwardAt(x, offset)));
}

torch::Tensor DecoderImpl::forward(const torch::Tensor& trg_seq, const torch::Tensor& trg_mask,
                                   const torch::Tensor& enc_output, const torch::Tensor& src_mask, Attentions* attns) {
    auto x = embed(trg_seq, 0);
    for (const auto& layer : *layer_stack) {
        auto [out, slf, cross] = layer->as<DecoderLayer>()->forward(x, enc_output, trg_mask, src_mask);
        x = out;
        if (attns) {
            attns->decoder_self.push_back(slf);
            attns->cross.push_back(cross);
        }
    }
    return normalized(final_layer_norm, x);
}

DecoderState DecoderImpl::initState(const torch::Tensor& enc_output, const torch::Tensor& src_mask) {
    DecoderState state;
    state.src_mask = src_mask;
    state.layers.resize(layer_stack->size());
    for (size_t i = 0; i < layer_stack->size(); ++i)
        layer_stack[i]->as<DecoderLayer>()->initCache(state.layers[i], enc_output);
    return state;
}

torch::Tensor DecoderImpl::step(const torch::Tensor& tokens, DecoderState& state, Attentions* attns) {
    auto x = embed(tokens.view({-1, 1}), state.length);
    for (size_t i = 0; i < layer_stack->size(); ++i) {
        auto [out, slf, cross] = layer_stack[i]->as<DecoderLayer>()->step(x, state.layers[i], state.src_mask);
        x = out;
        if (attns) {
            attns->decoder_self.push_back(slf);
            attns->cross.push_back(cross);
        }
    }
    ++state.length;
    return normalized(final_layer_norm, x);
}

// ---------------------------------------------------------------- Transformer
TransformerImpl::TransformerImpl(const ModelConfig& cfg, bool initialize, ComputeType held) : m_cfg(cfg), m_held(held) {
    cfg.validate();
    const bool lean = held != ComputeType::Float32;
    if (lean && initialize) throw InternalError("a model built for " + computeTypeName(held) + " is not initialised");
    decoder = register_module("decoder", Decoder(cfg, lean));
    // Registration order decides named_parameters() order; the reference registers the encoder
    // first, but keys, not order, are what a state dict matches on.
    encoder = register_module(
        "encoder",
        Encoder(cfg, cfg.emb_src_trg_weight_sharing ? decoder->trg_word_emb->weight : torch::Tensor(), lean));
    if (!cfg.trg_emb_prj_weight_sharing) {
        // (built with float32 storage, dropped at once: an untied projection's float32 size, once, at the start)
        trg_word_prj = register_module(
            "trg_word_prj", torch::nn::Linear(torch::nn::LinearOptions(cfg.d_model, cfg.n_trg_vocab).bias(false)));
        if (lean) dropFloatStorage(trg_word_prj->weight);
    }
    if (cfg.logits_bias) final_logits_bias = register_parameter("final_logits_bias", torch::zeros({cfg.n_trg_vocab}));
    if (lean) {
        m_unread = {"decoder.trg_word_emb.weight"};
        if (trg_word_prj) m_unread.insert("trg_word_prj.weight");
        if (encoder->src_word_emb) m_unread.insert("encoder.src_word_emb.weight");
        for (const auto& item : named_modules("", /*include_self=*/false))
            if (dynamic_cast<PackedLinearImpl*>(item.value().get())) m_unread.insert(item.key() + ".weight");
        trimHeap();
    }
    // ref: xavier_uniform_ for every parameter with more than one dimension.
    if (!initialize) return;
    torch::NoGradGuard no_grad;
    for (auto& p : parameters())
        if (p.dim() > 1) torch::nn::init::xavier_uniform_(p);
}

const torch::Tensor& TransformerImpl::projectionWeight() const {
    return trg_word_prj ? trg_word_prj->weight : decoder->trg_word_emb->weight;
}

MultiHeadAttention TransformerImpl::attention(AttentionKind kind, int64_t layer) {
    if (kind == AttentionKind::EncoderSelf) return encoder->layer_stack[layer]->as<EncoderLayer>()->slf_attn;
    auto dec = decoder->layer_stack[layer]->as<DecoderLayer>();
    return kind == AttentionKind::DecoderSelf ? dec->slf_attn : dec->enc_attn;
}

void TransformerImpl::setPackedInference(bool on) {
    m_packed = on;
    if (!on) m_projection_pack->clear();
    for (const auto& module : modules(/*include_self=*/false))
        if (auto* linear = dynamic_cast<PackedLinearImpl*>(module.get())) linear->setPacked(on);
}

namespace {
// make(), an int8 / bfloat16 copy of the weight `name`: a ConfigError it throws (a weight out of that
// type's range, low_precision.cpp) names the weight and the compute type.
template <typename F>
auto namingWeight(const std::string& name, ComputeType type, F&& make) {
    try {
        return make();
    } catch (const ConfigError& e) {
        throw ConfigError("compute type " + computeTypeName(type) + ": " + name + ": " + e.what());
    }
}
}  // namespace

void TransformerImpl::setComputeType(ComputeType type) {
    m_compute = type;
    for (const auto& item : named_modules("", /*include_self=*/false))
        if (auto* linear = dynamic_cast<PackedLinearImpl*>(item.value().get()))
            namingWeight(item.key() + ".weight", type, [&] { linear->setComputeType(type); });
    namingWeight(trg_word_prj ? "trg_word_prj.weight" : "decoder.trg_word_emb.weight", type,
                 [&] { m_projection_pack->prepare(projectionWeight(), {}, type); });
}

void TransformerImpl::dropFloatWeights() {
    if (m_compute == ComputeType::Float32) throw InternalError("dropFloatWeights: the model computes in float32");
    if (droppedFloatWeights()) return;
    if (!m_projection_pack->held()) throw InternalError("dropFloatWeights: the output projection has no held copy");
    torch::NoGradGuard no_grad;
    for (const auto& module : modules(/*include_self=*/false))
        if (auto* linear = dynamic_cast<PackedLinearImpl*>(module.get())) linear->dropFloatWeight();
    // The projection's copy (in oneDNN's layout) is the tied target embedding's rows too.
    m_projection_rows = std::make_shared<const LowPrecisionRows>(m_projection_pack->held());
    auto rowsOf = [&](const char* name, const torch::Tensor& weight) {
        return namingWeight(name, m_compute,
                            [&] { return std::make_shared<const LowPrecisionRows>(weight, m_compute); });
    };
    auto trg_rows =
        trg_word_prj ? rowsOf("decoder.trg_word_emb.weight", decoder->trg_word_emb->weight) : m_projection_rows;
    decoder->setLowPrecisionRows(trg_rows);
    encoder->setLowPrecisionRows(
        encoder->src_word_emb ? rowsOf("encoder.src_word_emb.weight", encoder->src_word_emb->weight) : trg_rows);
    m_projection_pack->dropFloatWeight(trg_word_prj ? trg_word_prj->weight : decoder->trg_word_emb->weight);
    dropFloatStorage(decoder->trg_word_emb->weight);  // the shared source embedding is this tensor
    if (encoder->src_word_emb) dropFloatStorage(encoder->src_word_emb->weight);
    trimHeap();
}

void TransformerImpl::holdWeight(const std::string& name, const RowReader& read) {
    if (!holdsWeight(name))
        throw InternalError("holdWeight: '" + name + "' is not a weight this model reads in " +
                            computeTypeName(m_held));
    torch::NoGradGuard no_grad;
    const torch::Tensor weight = named_parameters()[name];
    const int64_t rows = weight.size(0), cols = weight.size(1);
    const std::string projection = trg_word_prj ? "trg_word_prj.weight" : "decoder.trg_word_emb.weight";
    namingWeight(name, m_held, [&] {
        if (name == projection)
            m_projection_pack->hold(std::make_shared<LowPrecisionMatmul>(rows, cols, read, torch::Tensor(), m_held));
        else if (name == "decoder.trg_word_emb.weight")
            m_trg_rows = std::make_shared<const LowPrecisionRows>(rows, cols, read, m_held);
        else if (name == "encoder.src_word_emb.weight")
            m_src_rows = std::make_shared<const LowPrecisionRows>(rows, cols, read, m_held);
        else
            named_modules()[name.substr(0, name.size() - std::string(".weight").size())]
                ->as<PackedLinearImpl>()
                ->holdWeight(m_held, read);
    });
    m_unread.erase(name);
    trimHeap();  // (a few ms a weight)
}

void TransformerImpl::finishHolding() {
    if (m_held == ComputeType::Float32) throw InternalError("finishHolding: the model was built for float32");
    if (!m_unread.empty()) throw InternalError("finishHolding: '" + *m_unread.begin() + "' was not read");
    if (droppedFloatWeights()) return;
    m_compute = m_held;
    // As dropFloatWeights(): the projection's copy is the tied target embedding's rows too.
    m_projection_rows = std::make_shared<const LowPrecisionRows>(m_projection_pack->held());
    const auto trg_rows = trg_word_prj ? m_trg_rows : m_projection_rows;
    decoder->setLowPrecisionRows(trg_rows);
    encoder->setLowPrecisionRows(encoder->src_word_emb ? m_src_rows : trg_rows);
    m_trg_rows.reset();
    m_src_rows.reset();
}

torch::Tensor TransformerImpl::project(const torch::Tensor& dec_output, bool as_trained) {
    // Gradients through a model that dropped its float32 weights: a chunk of its rows at a time.
    const bool gradients = is_training() || torch::GradMode::is_enabled();
    torch::Tensor logits =
        m_projection_rows && gradients
            ? m_projection_rows->linear(dec_output)
            : m_projection_pack->linear(dec_output, projectionWeight(), {}, m_packed && !is_training(),
                                        is_training() ? ComputeType::Float32 : m_compute);
    if (as_trained && m_cfg.scalePrj()) logits = logits * std::pow(double(m_cfg.d_model), -0.5);
    if (final_logits_bias.defined()) logits = logits + final_logits_bias;
    return logits;
}

std::string TransformerImpl::firstNonFiniteStage(const torch::Tensor& src_seq, const torch::Tensor& trg_seq,
                                                 bool as_trained) {
    auto bad = [](const torch::Tensor& t) { return !torch::isfinite(t).all().item<bool>(); };
    auto layer = [](const char* stack, size_t i, const char* part) {
        return std::string("the ") + stack + "'s layer " + std::to_string(i + 1) + " " + part;
    };
    // The sub-layers in the order EncoderLayerImpl::forward and DecoderLayerImpl::forward run them.
    auto src_mask = padMask(src_seq, m_cfg.src_pad_idx);
    auto x = encoder->embed(src_seq);
    if (bad(x)) return "the encoder's embedding";
    for (size_t i = 0; i < encoder->layer_stack->size(); ++i) {
        auto* l = encoder->layer_stack[i]->as<EncoderLayer>();
        x = l->slf_attn->forwardSelf(x, src_mask).first;
        if (bad(x)) return layer("encoder", i, "self-attention");
        x = l->pos_ffn(x);
        if (bad(x)) return layer("encoder", i, "feed-forward");
    }
    x = normalized(encoder->final_layer_norm, x);
    if (bad(x)) return "the encoder's final layer norm";
    const auto enc = x;
    auto trg_mask = decoderMask(trg_seq, m_cfg.trg_pad_idx);
    x = decoder->embed(trg_seq, 0);
    if (bad(x)) return "the decoder's embedding";
    for (size_t i = 0; i < decoder->layer_stack->size(); ++i) {
        auto* l = decoder->layer_stack[i]->as<DecoderLayer>();
        x = l->slf_attn->forwardSelf(x, trg_mask).first;
        if (bad(x)) return layer("decoder", i, "self-attention");
        x = l->enc_attn(x, enc, enc, src_mask).first;
        if (bad(x)) return layer("decoder", i, "cross-attention");
        x = l->pos_ffn(x);
        if (bad(x)) return layer("decoder", i, "feed-forward");
    }
    x = normalized(decoder->final_layer_norm, x);
    if (bad(x)) return "the decoder's final layer norm";
    auto logits = project(x, as_trained);
    if (bad(logits)) return "the output projection";
    // Finite logits further apart than a float can hold.
    if (bad(torch::log_softmax(logits, -1))) return "the softmax over the vocabulary";
    return {};
}

torch::Tensor TransformerImpl::encode(const torch::Tensor& src_seq, std::vector<torch::Tensor>* attns) {
    return encoder(src_seq, padMask(src_seq, m_cfg.src_pad_idx), attns);
}

torch::Tensor TransformerImpl::decoderOutput(const torch::Tensor& src_seq, const torch::Tensor& trg_seq,
                                             Attentions* attns) {
    auto src_mask = padMask(src_seq, m_cfg.src_pad_idx);
    auto trg_mask = decoderMask(trg_seq, m_cfg.trg_pad_idx);
    auto enc = encoder(src_seq, src_mask, attns ? &attns->encoder_self : nullptr);
    return decoder(trg_seq, trg_mask, enc, src_mask, attns);
}

torch::Tensor TransformerImpl::forwardFull(const torch::Tensor& src_seq, const torch::Tensor& trg_seq,
                                           Attentions* attns) {
    return project(decoderOutput(src_seq, trg_seq, attns));
}

torch::Tensor TransformerImpl::forward(const torch::Tensor& src_seq, const torch::Tensor& trg_seq) {
    auto logits = forwardFull(src_seq, trg_seq);
    return logits.view({-1, logits.size(2)});
}

torch::Tensor TransformerImpl::forwardAt(const torch::Tensor& src_seq, const torch::Tensor& trg_seq,
                                         const torch::Tensor& positions) {
    auto dec = decoderOutput(src_seq, trg_seq, nullptr);
    return project(dec.reshape({-1, dec.size(2)}).index_select(0, positions));
}

}  // namespace attnlab::model
