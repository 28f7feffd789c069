#pragma once
#include <torch/nn/module.h>
#include <torch/nn/modules/normalization.h>
#include <torch/types.h>
#include "model/dropout.h"
#include "model/packed_linear.h"

#include <utility>

namespace attnlab::model {

// Every layer norm of the model: nn.LayerNorm(d, eps) — eps 1e-6 in the reference
// (ModelConfig::layer_norm_eps).
torch::nn::LayerNorm makeLayerNorm(int64_t d, double eps);

// What one attention module computed in its last forward pass, kept while
// MultiHeadAttentionImpl::capture points here (to explain one weight from the model's own numbers).
struct AttentionCapture {
    torch::Tensor q, k, v;  // the heads' queries and keys (before the temperature), values [b,h,l,d]
    torch::Tensor scores;   // (q / temperature) k^T before the mask [b,h,lq,lk], the relative term included
    // With relative positions (RelativeTerms): (q / temperature) . a^K_ij [b,h,lq,lk] (a part of scores), the key
    // and value vectors of each (query, key) offset [lq,lk,d]; undefined otherwise.
    torch::Tensor relative_scores, relative_keys, relative_values;
    torch::Tensor mask;       // as given, broadcastable to scores; undefined = no mask
    torch::Tensor weights;    // softmax of the masked scores [b,h,lq,lk]
    torch::Tensor heads_out;  // each head's weighted sum of values, before fc [b,h,lq,dv]
};

// Relative position representations (Shaw et al. 2018) as CTranslate2 computes them
// (src/layers/attention.cc make_relative_positions, add_relative_representations,
// matmul_with_relative_representations; OpenNMT-py onmt/utils/misc.py generate_relative_positions_matrix,
// relative_matmul): the row of each (query i, key j) in a table of 2k+1 rows, clip(j - (i + lk - lq), -k, k) + k,
// [lq, lk] int64. The queries are the last lq of lk positions: a cached decoding step (lq = 1) sees offsets
// -(lk-1)..0, as OpenNMT-py's cache=True matrix. Built on `device` (the table's), nothing copied per layer and step.
torch::Tensor relativePositionIndex(int64_t lq, int64_t lk, int64_t k, const torch::Device& device = torch::kCPU);

// The table rows each (query, key) pair uses, [lq, lk, d_k] and [lq, lk, d_v].
struct RelativeTerms {
    torch::Tensor keys, values;
};

// ref: ScaledDotProductAttention. q [b,h,lq,dk], k [b,h,lk,dk], v [b,h,lk,dv];
// mask broadcastable to [b,h,lq,lk], true = may attend. Returns (output [b,h,lq,dv],
// attention probabilities [b,h,lq,lk]) — probabilities after softmax, before dropout is applied
// to the copy used for the output, so that what is returned always sums to 1 per row. With `relative`
// (self-attention with relative positions): scores += (q / temperature) . a^K_ij and
// output_i += sum_j p_ij a^V_ij.
std::pair<torch::Tensor, torch::Tensor> scaledDotProductAttention(const torch::Tensor& q, const torch::Tensor& k,
                                                                  const torch::Tensor& v, const torch::Tensor& mask,
                                                                  double temperature, FastDropout& dropout,
                                                                  AttentionCapture* capture = nullptr,
                                                                  const RelativeTerms* relative = nullptr);

// The shape of one attention module.
struct AttentionOptions {
    int64_t n_head = 8, d_model = 512, d_k = 64, d_v = 64;
    double dropout = 0.1;
    // The reference's ScaledDotProductAttention default (0.1), which the reference does not tie
    // to `dropout`.
    double attn_dropout = 0.1;
    bool bias = false;                   // biases on w_qs, w_ks, w_vs and fc (Marian)
    double layer_norm_eps = 1e-6;        // the reference's
    bool pre_norm = false;               // ModelConfig::norm_position "pre": x + attention(norm(x))
    int64_t max_relative_positions = 0;  // k of the relative position tables (self-attention only); 0 = none
};

// ref: MultiHeadAttention — projections w_qs, w_ks, w_vs, fc (bias-free in the reference);
// residual; post layer norm: norm(q + fc(attention)). With pre_norm (M2M100, NLLB, mBART) the
// layer norm moves to the input instead: q + fc(attention(norm(q))), and a self-attention's keys
// and values are projected from norm(x) too (keysInput); a cross-attention's encoder output is
// taken as it is.
class MultiHeadAttentionImpl : public torch::nn::Module {
public:
    explicit MultiHeadAttentionImpl(const AttentionOptions& options);

    // q [b,lq,d_model], k/v [b,lk,d_model], mask [b,1|lq,lk] or undefined.
    // Returns (output [b,lq,d_model], attention [b,n_head,lq,lk]).
    std::pair<torch::Tensor, torch::Tensor> forward(const torch::Tensor& q, const torch::Tensor& k,
                                                    const torch::Tensor& v, const torch::Tensor& mask = {});

    // Self-attention over x (queries, keys and values from it).
    std::pair<torch::Tensor, torch::Tensor> forwardSelf(const torch::Tensor& x, const torch::Tensor& mask = {});
    // What a self-attention's keys and values are projected from: norm(x) with pre_norm, else x.
    torch::Tensor keysInput(const torch::Tensor& x);

    // For cached decoding: keys/values projected and split into heads, [b,n_head,l,d_k|d_v].
    torch::Tensor projectKeys(const torch::Tensor& k);
    torch::Tensor projectValues(const torch::Tensor& v);
    // The rest of forward() given projected keys and values.
    std::pair<torch::Tensor, torch::Tensor> attend(const torch::Tensor& q, const torch::Tensor& k_heads,
                                                   const torch::Tensor& v_heads, const torch::Tensor& mask);

    int64_t n_head, d_k, d_v;
    bool pre_norm = false;
    PackedLinear w_qs{nullptr}, w_ks{nullptr}, w_vs{nullptr}, fc{nullptr};
    FastDropout attn_dropout{nullptr}, dropout{nullptr};
    torch::nn::LayerNorm layer_norm{nullptr};
    // Set by the engine around one forward pass (decoding::CaptureGuard); not owned.
    AttentionCapture* capture = nullptr;
    // Head ablation: [n_head] of 1 (kept) and 0 (switched off), multiplied into each head's
    // output before fc; undefined = every head kept. Set by the engine around a translation.
    // [batch, n_head]: a gate per sentence and head (gradient importance, decoding/gradients.cpp).
    torch::Tensor head_keep;
    // Relative position representations (AttentionOptions::max_relative_positions = k > 0): learned rows for
    // the offsets -k..k (row r: offset r - k), shared by the heads, [2k+1, d_k] and [2k+1, d_v]; the
    // parameters "relative_position_keys" / "relative_position_values". Undefined without.
    int64_t max_relative_positions = 0;
    torch::Tensor relative_position_keys, relative_position_values;
};
TORCH_MODULE(MultiHeadAttention);

}  // namespace attnlab::model
