#pragma once
#include "model/attention.h"

#include <torch/nn/module.h>
#include <torch/types.h>

#include <string>
#include <tuple>

namespace attnlab::model {

// The shape of one encoder or decoder layer (from ModelConfig: the encoder's or the decoder's).
struct LayerOptions {
    AttentionOptions attention;
    int64_t d_inner = 2048;
    std::string activation = "relu";  // relu | swish | gelu (ModelConfig::ffn_activation)
};

// ref: PositionwiseFeedForward — w_2(act(w_1(x))), dropout, residual, post layer norm; act is
// relu in the reference. Pre-norm (ModelConfig::norm_position): x + w_2(act(w_1(norm(x)))).
class PositionwiseFeedForwardImpl : public torch::nn::Module {
public:
    PositionwiseFeedForwardImpl(const LayerOptions& options);
    torch::Tensor forward(const torch::Tensor& x);

    enum class Activation { Relu, Swish, Gelu, GeluTanh } activation = Activation::Relu;
    bool pre_norm = false;
    PackedLinear w_1{nullptr}, w_2{nullptr};
    torch::nn::LayerNorm layer_norm{nullptr};
    FastDropout dropout{nullptr};
};
TORCH_MODULE(PositionwiseFeedForward);

class EncoderLayerImpl : public torch::nn::Module {
public:
    explicit EncoderLayerImpl(const LayerOptions& options);
    // Returns (output, self-attention [b,h,l,l]).
    std::pair<torch::Tensor, torch::Tensor> forward(const torch::Tensor& x, const torch::Tensor& mask);

    MultiHeadAttention slf_attn{nullptr};
    PositionwiseFeedForward pos_ffn{nullptr};
};
TORCH_MODULE(EncoderLayer);

// Keys and values one decoder layer keeps between decoding steps.
struct LayerCache {
    torch::Tensor self_k, self_v;    // [n, h, t, d]: projections of the layer's inputs so far
    torch::Tensor cross_k, cross_v;  // [n, h, src_len, d]: projections of the encoder output
};

class DecoderLayerImpl : public torch::nn::Module {
public:
    explicit DecoderLayerImpl(const LayerOptions& options);
    // Whole sequence. Returns (output, self-attention [b,h,lt,lt], cross-attention [b,h,lt,ls]).
    std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> forward(const torch::Tensor& x,
                                                                    const torch::Tensor& enc_output,
                                                                    const torch::Tensor& slf_mask,
                                                                    const torch::Tensor& enc_mask);
    // One new position x [n,1,d_model]; appends its keys/values to `cache`. The new query may see
    // every cached position, so no self mask is needed (hypotheses never contain padding).
    std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> step(const torch::Tensor& x, LayerCache& cache,
                                                                 const torch::Tensor& enc_mask);
    void initCache(LayerCache& cache, const torch::Tensor& enc_output);

    MultiHeadAttention slf_attn{nullptr}, enc_attn{nullptr};
    PositionwiseFeedForward pos_ffn{nullptr};
};
TORCH_MODULE(DecoderLayer);

}  // namespace attnlab::model
