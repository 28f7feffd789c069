#include "model/attention.h"

#include <torch/torch.h>

#include <cmath>

namespace attnlab::model {

std::pair<torch::Tensor, torch::Tensor> scaledDotProductAttention(const torch::Tensor& q, const torch::Tensor& k,
                                                                  const torch::Tensor& v, const torch::Tensor& mask,
                                                                  double temperature, FastDropout& dropout,
                                                                  AttentionCapture* capture) {
    // One query per row (a cached decoding step): LibTorch 1.13's CPU bmm loops over the
    // batch x heads matrices one small GEMM at a time, which made these products most of a
    // decoding step; a broadcast multiply and a sum is one kernel each. Same arithmetic.
    const bool single_query = q.size(2) == 1;
    auto scores = single_query ? ((q / temperature) * k).sum(-1).unsqueeze(2)  // [b,h,1,lk]
                               : torch::matmul(q / temperature, k.transpose(2, 3));
    if (capture) capture->scores = scores, capture->mask = mask;
    if (mask.defined()) scores = scores.masked_fill(mask.logical_not(), -1e9);  // ref: mask == 0
    auto probs = torch::softmax(scores, -1);
    auto p = dropout->is_training() ? dropout(probs) : probs;
    auto out = single_query ? (p.transpose(2, 3) * v).sum(2, /*keepdim=*/true)  // [b,h,1,dv]
                            : torch::matmul(p, v);
    if (capture) capture->q = q, capture->k = k, capture->v = v, capture->weights = probs, capture->heads_out = out;
    return {out, probs};
}

MultiHeadAttentionImpl::MultiHeadAttentionImpl(const AttentionOptions& o) : n_head(o.n_head), d_k(o.d_k), d_v(o.d_v) {
    using torch::nn::LinearOptions;
    const int64_t d_model = o.d_model;
    w_qs = register_module("w_qs", PackedLinear(LinearOptions(d_model, n_head * d_k).bias(o.bias)));
    w_ks = register_module("w_ks", PackedLinear(LinearOptions(d_model, n_head * d_k).bias(o.bias)));
    w_vs = register_module("w_vs", PackedLinear(LinearOptions(d_model, n_head * d_v).bias(o.bias)));
    fc = register_module("fc", PackedLinear(LinearOptions(n_head * d_v, d_model).bias(o.bias)));
    attn_dropout = register_module("attention_dropout", FastDropout(o.attn_dropout));
    dropout = register_module("dropout", FastDropout(o.dropout));
    layer_norm = register_module("layer_norm", makeLayerNorm(d_model, o.layer_norm_eps));
}

torch::nn::LayerNorm makeLayerNorm(int64_t d, double eps) {
    return torch::nn::LayerNorm(torch::nn::LayerNormOptions({d}).eps(eps));
}

static torch::Tensor splitHeads(const torch::Tensor& x, int64_t n_head, int64_t d) {
    // [b,l,h*d] -> [b,h,l,d]
    return x.view({x.size(0), x.size(1), n_head, d}).transpose(1, 2);
}

torch::Tensor MultiHeadAttentionImpl::projectKeys(const torch::Tensor& k) { return splitHeads(w_ks(k), n_head, d_k); }
torch::Tensor MultiHeadAttentionImpl::projectValues(const torch::Tensor& v) { return splitHeads(w_vs(v), n_head, d_v); }

std::pair<torch::Tensor, torch::Tensor> MultiHeadAttentionImpl::attend(const torch::Tensor& q,
                                                                       const torch::Tensor& k_heads,
                                                                       const torch::Tensor& v_heads,
                                                                       const torch::Tensor& mask) {
    const auto sz_b = q.size(0), len_q = q.size(1);
    auto qh = splitHeads(w_qs(q), n_head, d_k);
    auto head_mask = mask.defined() ? mask.unsqueeze(1) : mask;  // broadcast over heads
    auto [out, attn] =
        scaledDotProductAttention(qh, k_heads, v_heads, head_mask, std::sqrt(double(d_k)), attn_dropout, capture);
    if (head_keep.defined()) out = out * head_keep.view({1, -1, 1, 1});  // ablated heads contribute zeros
    out = out.transpose(1, 2).contiguous().view({sz_b, len_q, -1});
    out = dropout(fc(out));
    out = layer_norm(out + q);
    return {out, attn};
}

std::pair<torch::Tensor, torch::Tensor> MultiHeadAttentionImpl::forward(const torch::Tensor& q, const torch::Tensor& k,
                                                                        const torch::Tensor& v,
                                                                        const torch::Tensor& mask) {
    return attend(q, projectKeys(k), projectValues(v), mask);
}

}  // namespace attnlab::model
