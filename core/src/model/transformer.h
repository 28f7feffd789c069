#pragma once
// The encoder-decoder of "Attention Is All You Need", structured as the reference PyTorch
// implementation (jadore801120/attention-is-all-you-need-pytorch, transformer/Models.py), with
// the same state-dict keys. Tied weights are one parameter stored under
// decoder.trg_word_emb.weight: the tied modules (encoder.src_word_emb, trg_word_prj) are then not
// registered and use that tensor, so named_parameters() holds each tensor once (what the
// optimizer and the package writer need).

#include "model/layers.h"
#include "model/positional_encoding.h"

#include <attnlab/attention_kind.h>
#include <attnlab/config.h>

#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>

#include <set>
#include <string>
#include <vector>

namespace attnlab::model {

struct Attentions {
    std::vector<torch::Tensor> encoder_self;  // per layer [b,h,ls,ls]
    std::vector<torch::Tensor> decoder_self;  // per layer [b,h,lt,lt]
    std::vector<torch::Tensor> cross;         // per layer [b,h,lt,ls]
};

class EncoderImpl : public torch::nn::Module {
public:
    // shared_embedding: the decoder's embedding weight when source and target embeddings are tied.
    // without_float_weights: every linear layer's and the embedding's weight built without float32 storage
    // (TransformerImpl's `held`).
    EncoderImpl(const ModelConfig& cfg, const torch::Tensor& shared_embedding, bool without_float_weights = false);
    // Returns the encoder output; appends each layer's attention to `attns` when given.
    torch::Tensor forward(const torch::Tensor& src_seq, const torch::Tensor& src_mask,
                          std::vector<torch::Tensor>* attns = nullptr);
    const torch::Tensor& embeddingWeight() const;
    // The first stage of forward(): scaled word embeddings, positions, the embedding's layer norm.
    torch::Tensor embed(const torch::Tensor& src_seq);
    // Word embeddings looked up from these rows instead of embeddingWeight() (dropped float32 weights).
    void setLowPrecisionRows(std::shared_ptr<const LowPrecisionRows> rows) { m_rows = std::move(rows); }
    // The word embeddings of ids [...] -> [..., d_word_vec], unscaled: every reader goes through this (an
    // int8 / bfloat16 model holds no float32 table).
    torch::Tensor wordEmbedding(const torch::Tensor& ids) const;

    torch::nn::Embedding src_word_emb{nullptr};  // null when tied
    PositionalEncoding position_enc{nullptr};
    FastDropout dropout{nullptr};
    torch::nn::ModuleList layer_stack{nullptr};
    torch::nn::LayerNorm layer_norm{nullptr};        // after embedding + position; null without emb_layer_norm
    torch::nn::LayerNorm final_layer_norm{nullptr};  // after the last layer; null without final_layer_norm
    // Set around one pass by the engine (saliency, decoding/gradients.cpp); not owned: the scaled word
    // embeddings (before the positional encoding) are detached into a leaf that needs a gradient and
    // stored here, so that the gradient of an output with respect to them can be taken.
    torch::Tensor* embedded = nullptr;

private:
    torch::Tensor m_shared_embedding;
    std::shared_ptr<const LowPrecisionRows> m_rows;
    int64_t m_pad_idx;
    double m_emb_scale;
};
TORCH_MODULE(Encoder);

// Keys and values of every decoder layer, plus the source mask, kept between decoding steps.
struct DecoderState {
    std::vector<LayerCache> layers;
    torch::Tensor src_mask;  // [n,1,ls]
    int64_t length = 0;      // positions decoded so far
    // Keeps rows `index` (beam reordering or dropping finished sentences).
    void select(const torch::Tensor& index);
};

class DecoderImpl : public torch::nn::Module {
public:
    // without_float_weights: as EncoderImpl's.
    explicit DecoderImpl(const ModelConfig& cfg, bool without_float_weights = false);
    torch::Tensor forward(const torch::Tensor& trg_seq, const torch::Tensor& trg_mask, const torch::Tensor& enc_output,
                          const torch::Tensor& src_mask, Attentions* attns = nullptr);
    DecoderState initState(const torch::Tensor& enc_output, const torch::Tensor& src_mask);
    // tokens [n] at position state.length; returns the decoder output [n,1,d_model]. Appends
    // per-layer self [n,h,1,t] and cross [n,h,1,ls] attention to `attns` when given.
    torch::Tensor step(const torch::Tensor& tokens, DecoderState& state, Attentions* attns = nullptr);

    torch::nn::Embedding trg_word_emb{nullptr};
    PositionalEncoding position_enc{nullptr};
    FastDropout dropout{nullptr};
    torch::nn::ModuleList layer_stack{nullptr};
    torch::nn::LayerNorm layer_norm{nullptr};
    torch::nn::LayerNorm final_layer_norm{nullptr};  // after the last layer; null without final_layer_norm
    // As EncoderImpl::embedded, for the target's scaled word embeddings.
    torch::Tensor* embedded = nullptr;
    // The first stage of forward() and step(): tokens at positions offset, offset + 1, ... (with
    // start_from_zero_embedding, the token at position 0 contributes a zero vector, not its embedding).
    torch::Tensor embed(const torch::Tensor& seq, int64_t offset);
    // As EncoderImpl::setLowPrecisionRows and EncoderImpl::wordEmbedding.
    void setLowPrecisionRows(std::shared_ptr<const LowPrecisionRows> rows) { m_rows = std::move(rows); }
    torch::Tensor wordEmbedding(const torch::Tensor& ids) const;

private:
    std::shared_ptr<const LowPrecisionRows> m_rows;
    double m_emb_scale;
    bool m_zero_start;  // ModelConfig::start_from_zero_embedding
};
TORCH_MODULE(Decoder);

class TransformerImpl : public torch::nn::Module {
public:
    // Validates cfg; Xavier-uniform init as the reference, unless `initialize` is false (a loader
    // that fills every tensor next: 615M random numbers are seconds of a load's time).
    // `held` int8 / bfloat16 (quantized while reading, issue 53; with initialize false): a model for a loader
    // that reads its weights straight into that type. Every weight dropFloatWeights() would drop (the linear
    // layers', the embeddings', the output projection's) is built without float32 storage, a layer at a time
    // (each element NaN, as dropped); the loader fills the other tensors (biases, norms, position tables) as
    // for float32, then each of those weights with holdWeight(), then calls finishHolding(): the model is then
    // bit for bit what setComputeType(held) and dropFloatWeights() make of the float32 model.
    explicit TransformerImpl(const ModelConfig& cfg, bool initialize = true, ComputeType held = ComputeType::Float32);

    // ref: Transformer.forward — logits [b*lt, n_trg_vocab].
    torch::Tensor forward(const torch::Tensor& src_seq, const torch::Tensor& trg_seq);
    // The rows `positions` (indices into the flattened [b*lt]) of forward(): training projects
    // only the non-pad target positions onto the vocabulary.
    torch::Tensor forwardAt(const torch::Tensor& src_seq, const torch::Tensor& trg_seq, const torch::Tensor& positions);
    // Logits [b, lt, n_trg_vocab], and every attention map when `attns` is given (return_attns).
    torch::Tensor forwardFull(const torch::Tensor& src_seq, const torch::Tensor& trg_seq, Attentions* attns = nullptr);

    torch::Tensor encode(const torch::Tensor& src_seq, std::vector<torch::Tensor>* attns = nullptr);
    // Decoder output -> logits (with the reference's d_model^-0.5 when scale_emb_or_prj == "prj").
    // as_trained = false leaves that factor out, as the reference's Translator does.
    torch::Tensor project(const torch::Tensor& dec_output, bool as_trained = true);
    const torch::Tensor& projectionWeight() const;
    // Where a forward pass over src [n, s] and prefix [n, t] first produces a non-finite value, in
    // words ("the encoder's layer 2 self-attention", "the output projection", "the softmax over the
    // vocabulary"), or "" when none does. Slow (a host sync per sub-layer): only for the message of
    // a search whose once-per-step check failed (decoding/search.cpp).
    std::string firstNonFiniteStage(const torch::Tensor& src_seq, const torch::Tensor& trg_seq, bool as_trained);

    const ModelConfig& config() const { return m_cfg; }
    // Where the parameters are (the target embedding's device; Module::to moves them all).
    torch::Device device() const { return decoder->trg_word_emb->weight.device(); }
    // The attention module of one kind and layer (0-based; the caller checks the range).
    MultiHeadAttention attention(AttentionKind kind, int64_t layer);

    // Inference from weights packed once (model/packed_linear.h) in every linear layer and the output
    // projection: on for the decoding engine (TranslatorOptions::packed_weights), off for training.
    // Switching off frees the packed copies.
    void setPackedInference(bool on);
    // Every linear layer and the output projection in float32 (the default, exact), int8 or
    // bfloat16 (model/low_precision.h) outside training; the float32 weights stay until
    // dropFloatWeights().
    void setComputeType(ComputeType type);
    // After setComputeType(int8 | bfloat16), for inference only: the int8 / bfloat16 copies become the
    // model's only weights (a quarter / half of float32's memory). Every linear layer and embedding
    // table drops its float32 storage (PackedLinearImpl::dropFloatWeight, dropFloatStorage); embeddings
    // are looked up from LowPrecisionRows; a float32 pass (ExactProducts, gradients) computes exactly
    // with the weights the model holds (LowPrecisionMatmul::forward(x, exact), or their dequantized copies
    // where gradients flow), its inputs not rounded. Layer norms and
    // biases stay float32. Irreversible: training needs a model loaded anew.
    void dropFloatWeights();
    bool droppedFloatWeights() const { return m_projection_rows != nullptr; }
    // Whether `name` (a parameter's) is one of the weights a model built for `held` reads with holdWeight().
    bool holdsWeight(const std::string& name) const { return m_unread.count(name) > 0; }
    ComputeType heldType() const { return m_held; }  // what the model was built for
    // The weight `name` read from `read` a chunk of rows at a time into its held copy (a linear layer's bias
    // must hold its values by then). ConfigError (a weight the type cannot carry) names the weight.
    void holdWeight(const std::string& name, const RowReader& read);
    // After every holdsWeight() name was read: the model computes in `held` (InternalError naming one not read).
    void finishHolding();
    ComputeType computeType() const { return m_compute; }
    const WeightPack& projectionPack() const { return *m_projection_pack; }

    Encoder encoder{nullptr};
    Decoder decoder{nullptr};
    torch::nn::Linear trg_word_prj{nullptr};  // null when tied to the target embedding
    torch::Tensor final_logits_bias;          // [n_trg_vocab], added to the logits; undefined unless logits_bias

private:
    // Encoder then decoder over the whole target: the decoder output [b, lt, d_model].
    torch::Tensor decoderOutput(const torch::Tensor& src_seq, const torch::Tensor& trg_seq, Attentions* attns);

    ModelConfig m_cfg;
    bool m_packed = false;
    ComputeType m_compute = ComputeType::Float32;
    std::shared_ptr<WeightPack> m_projection_pack = std::make_shared<WeightPack>();
    std::shared_ptr<const LowPrecisionRows> m_projection_rows;  // after dropFloatWeights()
    // Built for a held compute type: that type, the weights holdWeight() has yet to read, and the untied
    // embeddings' rows read so far.
    ComputeType m_held = ComputeType::Float32;
    std::set<std::string> m_unread;
    std::shared_ptr<const LowPrecisionRows> m_trg_rows, m_src_rows;
};
TORCH_MODULE(Transformer);

}  // namespace attnlab::model
