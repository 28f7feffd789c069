#include "model/layers.h"

#include <torch/torch.h>

namespace attnlab::model {

PositionwiseFeedForwardImpl::PositionwiseFeedForwardImpl(const LayerOptions& o) {
    const int64_t d_in = o.attention.d_model;
    w_1 = register_module("w_1", PackedLinear(d_in, o.d_inner));
    w_2 = register_module("w_2", PackedLinear(o.d_inner, d_in));
    layer_norm = register_module("layer_norm", makeLayerNorm(d_in, o.attention.layer_norm_eps));
    dropout = register_module("dropout", FastDropout(o.attention.dropout));
    activation = o.activation == "swish"       ? Activation::Swish
                 : o.activation == "gelu"      ? Activation::Gelu
                 : o.activation == "gelu_tanh" ? Activation::GeluTanh
                                               : Activation::Relu;
    pre_norm = o.attention.pre_norm;
}

torch::Tensor PositionwiseFeedForwardImpl::forward(const torch::Tensor& x) {
    auto h = w_1(pre_norm ? layer_norm(x) : x);
    switch (activation) {
    case Activation::Relu: h = torch::relu(h); break;
    case Activation::Swish: h = torch::silu(h); break;
    case Activation::Gelu: h = torch::gelu(h); break;  // the exact (erf) form, as Hugging Face's "gelu"
    case Activation::GeluTanh: h = torch::gelu(h, "tanh"); break;
    }
    auto y = dropout(w_2(h));
    return pre_norm ? y + x : layer_norm(y + x);
}

EncoderLayerImpl::EncoderLayerImpl(const LayerOptions& o) {
    slf_attn = register_module("slf_attn", MultiHeadAttention(o.attention));
    pos_ffn = register_module("pos_ffn", PositionwiseFeedForward(o));
}

std::pair<torch::Tensor, torch::Tensor> EncoderLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& mask) {
    auto [out, attn] = slf_attn->forwardSelf(x, mask);
    return {pos_ffn(out), attn};
}

DecoderLayerImpl::DecoderLayerImpl(const LayerOptions& o) {
    slf_attn = register_module("slf_attn", MultiHeadAttention(o.attention));
    AttentionOptions cross = o.attention;
    cross.max_relative_positions = 0;  // relative positions are the self-attentions' (CTranslate2's spec)
    enc_attn = register_module("enc_attn", MultiHeadAttention(cross));
    pos_ffn = register_module("pos_ffn", PositionwiseFeedForward(o));
}

std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> DecoderLayerImpl::forward(const torch::Tensor& x,
                                                                                  const torch::Tensor& enc_output,
                                                                                  const torch::Tensor& slf_mask,
                                                                                  const torch::Tensor& enc_mask) {
    auto [h, slf] = slf_attn->forwardSelf(x, slf_mask);
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
    const auto kv = slf_attn->keysInput(x);
    auto k = slf_attn->projectKeys(kv);
    auto v = slf_attn->projectValues(kv);
    cache.self_k = cache.self_k.defined() ? torch::cat({cache.self_k, k}, 2) : k;
    cache.self_v = cache.self_v.defined() ? torch::cat({cache.self_v, v}, 2) : v;
    auto [h, slf] = slf_attn->attend(x, cache.self_k, cache.self_v, torch::Tensor());
    auto [c, cross] = enc_attn->attend(h, cache.cross_k, cache.cross_v, enc_mask);
    return {pos_ffn(c), slf, cross};
}

}  // namespace attnlab::model
