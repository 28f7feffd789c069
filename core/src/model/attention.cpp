#include "model/attention.h"

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace attnlab::model {

namespace {
// A cached decoding step's attention (one query per row) in one pass over each head's keys and
// values, instead of a dozen LibTorch operations (scale, multiply, sum, mask, softmax, multiply,
// sum, transpose, copy), each of which costs more to dispatch and allocate for than its few
// thousand multiplications (issue 25, docs/benchmarks.md "Fused single-query attention"). The
// same arithmetic as the unfused path below, in float: the scaled query, its dot product with
// each key, -1e9 where the mask forbids, softmax with the maximum subtracted, the weighted sum
// of the values. Only for inference (no autograd, no dropout, nothing captured) on float32 CPU.
bool fusable(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const torch::Tensor& mask,
             const FastDropout& dropout, const AttentionCapture* capture) {
    if (capture || dropout->is_training() || q.size(2) != 1) return false;
    if (k.size(0) != q.size(0) || k.size(1) != q.size(1) || k.size(3) != q.size(3) || v.size(0) != q.size(0) ||
        v.size(1) != q.size(1) || v.size(2) != k.size(2))
        return false;  // shapes that only broadcasting would make fit
    if (torch::GradMode::is_enabled() && (q.requires_grad() || k.requires_grad() || v.requires_grad())) return false;
    for (const auto* t : {&q, &k, &v})
        if (t->scalar_type() != torch::kFloat || !t->device().is_cpu() || t->is_sparse() || t->stride(3) != 1)
            return false;
    return !mask.defined() || (mask.scalar_type() == torch::kBool && mask.device().is_cpu());
}

// q [b,h,1,dk], k [b,h,lk,dk], v [b,h,lk,dv] (the last dimension contiguous), mask broadcastable
// to [b,h,1,lk]. Returns (output [b,h,1,dv], a view of a contiguous [b,1,h,dv] so that joining the
// heads copies nothing; probabilities [b,h,1,lk]).
std::pair<torch::Tensor, torch::Tensor> singleQueryAttention(const torch::Tensor& q, const torch::Tensor& k,
                                                             const torch::Tensor& v, const torch::Tensor& mask,
                                                             double temperature) {
    const int64_t b = q.size(0), h = q.size(1), lk = k.size(2), dk = q.size(3), dv = v.size(3);
    auto probs = torch::empty({b, h, 1, lk}, q.options());
    auto out = torch::empty({b, 1, h, dv}, q.options());
    const torch::Tensor m = mask.defined() ? mask.expand({b, h, 1, lk}) : mask;  // strides 0 where broadcast
    const bool* mp = m.defined() ? m.data_ptr<bool>() : nullptr;
    const float *qp = q.data_ptr<float>(), *kp = k.data_ptr<float>(), *vp = v.data_ptr<float>();
    float *pp = probs.data_ptr<float>(), *op = out.data_ptr<float>();
    const float t = static_cast<float>(temperature);
    const int64_t q0 = q.stride(0), q1 = q.stride(1), k0 = k.stride(0), k1 = k.stride(1), k2 = k.stride(2);
    const int64_t v0 = v.stride(0), v1 = v.stride(1), v2 = v.stride(2);
    const int64_t m0 = mp ? m.stride(0) : 0, m1 = mp ? m.stride(1) : 0, m3 = mp ? m.stride(3) : 0;
    const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(1, lk * (dk + dv)));
    at::parallel_for(0, b * h, grain, [&](int64_t begin, int64_t end) {
        std::vector<float> qs(static_cast<size_t>(dk), 0.0f);
        for (int64_t row = begin; row < end; ++row) {
            const int64_t i = row / h, j = row % h;
            const float* qr = qp + i * q0 + j * q1;
            for (int64_t d = 0; d < dk; ++d) qs[size_t(d)] = qr[d] / t;
            float* p = pp + row * lk;
            float top = -std::numeric_limits<float>::infinity();
            for (int64_t c = 0; c < lk; ++c) {
                float score = -1e9f;  // ref: masked_fill(mask == 0, -1e9)
                if (!mp || mp[i * m0 + j * m1 + c * m3]) {
                    const float* kr = kp + i * k0 + j * k1 + c * k2;
                    score = 0.0f;
                    for (int64_t d = 0; d < dk; ++d) score += qs[size_t(d)] * kr[d];
                }
                p[c] = score;
                top = std::max(top, score);
            }
            float total = 0.0f;
            for (int64_t c = 0; c < lk; ++c) total += (p[c] = std::exp(p[c] - top));
            float* o = op + (i * h + j) * dv;
            std::fill(o, o + dv, 0.0f);
            for (int64_t c = 0; c < lk; ++c) {
                p[c] /= total;
                const float* vr = vp + i * v0 + j * v1 + c * v2;
                for (int64_t d = 0; d < dv; ++d) o[d] += p[c] * vr[d];
            }
        }
    });
    return {out.transpose(1, 2), probs};
}
}  // namespace

torch::Tensor relativePositionIndex(int64_t lq, int64_t lk, int64_t k, const torch::Device& device) {
    const auto i64 = torch::TensorOptions().dtype(torch::kInt64).device(device);
    const auto queries = torch::arange(lq, i64).unsqueeze(1) + (lk - lq);  // each query's own position
    return torch::clamp(torch::arange(lk, i64).unsqueeze(0) - queries, -k, k) + k;
}

namespace {
// CTranslate2's matmul_with_relative_representations (OpenNMT-py's relative_matmul): x [b,h,lq,n] times, for
// each query i, the matrix a[i] ([lk,d]; transposed: x . a[i]^T, [b,h,lq,lk]; else x . a[i], [b,h,lq,d]).
torch::Tensor relativeMatmul(const torch::Tensor& x, const torch::Tensor& a, bool transpose) {
    const int64_t b = x.size(0), h = x.size(1), lq = x.size(2);
    auto xt = x.permute({2, 0, 1, 3}).reshape({lq, b * h, x.size(3)});
    auto out = torch::matmul(xt, transpose ? a.transpose(1, 2) : a);  // [lq, b*h, lk | d]
    return out.view({lq, b, h, -1}).permute({1, 2, 0, 3});
}

// scaledDotProductAttention with the relative terms, in CTranslate2's order (dot_product_attention):
// scores = (q / t) k^T + (q / t) . a^K_ij, the mask, softmax, then p v + sum_j p_ij a^V_ij.
std::pair<torch::Tensor, torch::Tensor> relativeAttention(const torch::Tensor& q, const torch::Tensor& k,
                                                          const torch::Tensor& v, const torch::Tensor& mask,
                                                          double temperature, FastDropout& dropout,
                                                          AttentionCapture* capture, const RelativeTerms& rel) {
    const auto qs = q / temperature;
    const auto relative_scores = relativeMatmul(qs, rel.keys, /*transpose=*/true);
    auto scores = torch::matmul(qs, k.transpose(2, 3)) + relative_scores;
    if (capture) {
        capture->scores = scores, capture->mask = mask;
        capture->relative_scores = relative_scores;
        capture->relative_keys = rel.keys, capture->relative_values = rel.values;
    }
    if (mask.defined()) scores = scores.masked_fill(mask.logical_not(), -1e9);  // ref: mask == 0
    auto probs = torch::softmax(scores, -1);
    auto p = dropout->is_training() ? dropout(probs) : probs;
    auto out = torch::matmul(p, v) + relativeMatmul(p, rel.values, /*transpose=*/false);
    if (capture) capture->q = q, capture->k = k, capture->v = v, capture->weights = probs, capture->heads_out = out;
    return {out, probs};
}
}  // namespace

std::pair<torch::Tensor, torch::Tensor> scaledDotProductAttention(const torch::Tensor& q, const torch::Tensor& k,
                                                                  const torch::Tensor& v, const torch::Tensor& mask,
                                                                  double temperature, FastDropout& dropout,
                                                                  AttentionCapture* capture,
                                                                  const RelativeTerms* relative) {
    if (relative) return relativeAttention(q, k, v, mask, temperature, dropout, capture, *relative);
    if (fusable(q, k, v, mask, dropout, capture)) return singleQueryAttention(q, k, v, mask, temperature);
    // One query per row (a cached decoding step) while training or capturing: LibTorch 1.13's CPU bmm loops over the
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

MultiHeadAttentionImpl::MultiHeadAttentionImpl(const AttentionOptions& o)
    : n_head(o.n_head), d_k(o.d_k), d_v(o.d_v), pre_norm(o.pre_norm) {
    using torch::nn::LinearOptions;
    const int64_t d_model = o.d_model;
    w_qs = register_module("w_qs", PackedLinear(LinearOptions(d_model, n_head * d_k).bias(o.bias)));
    w_ks = register_module("w_ks", PackedLinear(LinearOptions(d_model, n_head * d_k).bias(o.bias)));
    w_vs = register_module("w_vs", PackedLinear(LinearOptions(d_model, n_head * d_v).bias(o.bias)));
    fc = register_module("fc", PackedLinear(LinearOptions(n_head * d_v, d_model).bias(o.bias)));
    attn_dropout = register_module("attention_dropout", FastDropout(o.attn_dropout));
    dropout = register_module("dropout", FastDropout(o.dropout));
    layer_norm = register_module("layer_norm", makeLayerNorm(d_model, o.layer_norm_eps));
    max_relative_positions = o.max_relative_positions;
    if (max_relative_positions > 0) {
        const int64_t rows = 2 * max_relative_positions + 1;
        relative_position_keys = register_parameter("relative_position_keys", torch::zeros({rows, d_k}));
        relative_position_values = register_parameter("relative_position_values", torch::zeros({rows, d_v}));
    }
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
    auto qh = splitHeads(w_qs(pre_norm ? layer_norm(q) : q), n_head, d_k);
    auto head_mask = mask.defined() ? mask.unsqueeze(1) : mask;  // broadcast over heads
    RelativeTerms relative;
    if (max_relative_positions > 0) {
        const auto rows =
            relativePositionIndex(len_q, k_heads.size(2), max_relative_positions, relative_position_keys.device())
                .view({-1});
        relative.keys = relative_position_keys.index_select(0, rows).view({len_q, k_heads.size(2), d_k});
        relative.values = relative_position_values.index_select(0, rows).view({len_q, k_heads.size(2), d_v});
    }
    auto [out, attn] = scaledDotProductAttention(qh, k_heads, v_heads, head_mask, std::sqrt(double(d_k)), attn_dropout,
                                                 capture, relative.keys.defined() ? &relative : nullptr);
    if (head_keep.defined())  // ablated heads contribute zeros; a gate per row scales each row's heads
        out = out * (head_keep.dim() == 2 ? head_keep.view({sz_b, -1, 1, 1}) : head_keep.view({1, -1, 1, 1}));
    out = out.transpose(1, 2).contiguous().view({sz_b, len_q, -1});
    out = dropout(fc(out));
    out = pre_norm ? out + q : layer_norm(out + q);
    return {out, attn};
}

torch::Tensor MultiHeadAttentionImpl::keysInput(const torch::Tensor& x) { return pre_norm ? layer_norm(x) : x; }

std::pair<torch::Tensor, torch::Tensor> MultiHeadAttentionImpl::forwardSelf(const torch::Tensor& x,
                                                                            const torch::Tensor& mask) {
    const torch::Tensor kv = keysInput(x);
    return attend(x, projectKeys(kv), projectValues(kv), mask);
}

std::pair<torch::Tensor, torch::Tensor> MultiHeadAttentionImpl::forward(const torch::Tensor& q, const torch::Tensor& k,
                                                                        const torch::Tensor& v,
                                                                        const torch::Tensor& mask) {
    return attend(q, projectKeys(k), projectValues(v), mask);
}

}  // namespace attnlab::model
