#pragma once
#include "model/attention.h"

#include <torch/nn/module.h>
#include <torch/types.h>

#include <tuple>

namespace attnlab::model {

// ref: PositionwiseFeedForward — w_2(relu(w_1(x))), dropout, residual, post layer norm.
class PositionwiseFeedForwardImpl : public torch::nn::Module {
public:
    PositionwiseFeedForwardImpl(int64_t d_in, int64_t d_hid, double dropout);
    torch::Tensor forward(const torch::Tensor& x);

    torch::nn::Linear w_1{nullptr}, w_2{nullptr};
    torch::nn::LayerNorm layer_norm{nullptr};
    FastDropout dropout{nullptr};
};
TORCH_MODULE(PositionwiseFeedForward);

class EncoderLayerImpl : public torch::nn::Module {
public:
    EncoderLayerImpl(int64_t d_model, int64_t d_inner, int64_t n_head, int64_t d_k, int64_t d_v, double dropout);
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
    DecoderLayerImpl(int64_t d_model, int64_t d_inner, int64_t n_head, int64_t d_k, int64_t d_v, double dropout);
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
