#include "model/layers.h"

#include <torch/torch.h>

namespace attnlab::model {

PositionwiseFeedForwardImpl::PositionwiseFeedForwardImpl(int64_t d_in, int64_t d_hid, double p) {
    w_1 = register_module("w_1", torch::nn::Linear(d_in, d_hid));
    w_2 = register_module("w_2", torch::nn::Linear(d_hid, d_in));
    layer_norm = register_module("layer_norm", makeLayerNorm(d_in));
    dropout = register_module("dropout", FastDropout(p));
}

torch::Tensor PositionwiseFeedForwardImpl::forward(const torch::Tensor& x) {
    auto y = dropout(w_2(torch::relu(w_1(x))));
    return layer_norm(y + x);
}

EncoderLayerImpl::EncoderLayerImpl(int64_t d_model, int64_t d_inner, int64_t n_head, int64_t d_k, int64_t d_v,
                                   double dropout) {
    slf_attn = register_module("slf_attn", MultiHeadAttention(n_head, d_model, d_k, d_v, dropout));
    pos_ffn = register_module("pos_ffn", PositionwiseFeedForward(d_model, d_inner, dropout));
}

std::pair<torch::Tensor, torch::Tensor> EncoderLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& mask) {
    auto [out, attn] = slf_attn(x, x, x, mask);
    return {pos_ffn(out), attn};
}

DecoderLayerImpl::DecoderLayerImpl(int64_t d_model, int64_t d_inner, int64_t n_head, int64_t d_k, int64_t d_v,
                                   double dropout) {
    slf_attn = register_module("slf_attn", MultiHeadAttention(n_head, d_model, d_k, d_v, dropout));
    enc_attn = register_module("enc_attn", MultiHeadAttention(n_head, d_model, d_k, d_v, dropout));
    pos_ffn = register_module("pos_ffn", PositionwiseFeedForward(d_model, d_inner, dropout));
}

std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> DecoderLayerImpl::forward(const torch::Tensor& x,
                                                                                  const torch::Tensor& enc_output,
                                                                                  const torch::Tensor& slf_mask,
                                                                                  const torch::Tensor& enc_mask) {
    auto [h, slf] = slf_attn(x, x, x, slf_mask);
    auto [c, cross] = enc_attn(h, enc_output, enc_output, enc_mask);
    return {pos_ffn(c), slf, cross};
}

void DecoderLayerImpl::initCache(LayerCache& cache, const torch::Tensor& enc_output) {
    cache.cross_k = enc_attn->projectKeys(enc_output);
    cache.cross_v = enc_attn->projectValues(enc_output);
    cache.self_k = torch::Tensor();
    cache.self_v = torch::Tensor();
}

std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> DecoderLayerImpl::step(const torch::Tensor& x,
                                                                               LayerCache& cache,
                                                                               const torch::Tensor& enc_mask) {
    auto k = slf_attn->projectKeys(x);
    auto v = slf_attn->projectValues(x);
    cache.self_k = cache.self_k.defined() ? torch::cat({cache.self_k, k}, 2) : k;
    cache.self_v = cache.self_v.defined() ? torch::cat({cache.self_v, v}, 2) : v;
    auto [h, slf] = slf_attn->attend(x, cache.self_k, cache.self_v, torch::Tensor());
    auto [c, cross] = enc_attn->attend(h, cache.cross_k, cache.cross_v, enc_mask);
    return {pos_ffn(c), slf, cross};
}

}  // namespace attnlab::model
