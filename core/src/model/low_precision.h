#pragma once
// Products in fewer bytes than float32 (issue 43): int8 and bfloat16 weights multiplied by oneDNN
// (Debian's libdnnl, the library LibTorch's own quantized engine uses), for the few rows a decoding
// step has, where reading the weights is the whole cost.
//
//   int8     — the weight quantized once per output row, symmetric (w ≈ q · amax_row / 127, as
//              CTranslate2's int8); the input quantized per row on every product over its own range
//              [min(x, 0), max(x, 0)] in 256 steps (x ≈ s · (q - z), q unsigned: a row after a ReLU
//              keeps all 8 bits; 128 steps without VNNI, whose u8 × s8 pairs add in 16 bits and would
//              saturate); oneDNN multiplies u8 × s8 into s32, and
//              y = s_x · s_w · (s32 - z · Σ_k q_w) + bias, in one pass over the output.
//              Per row on purpose: finer scales (groups of 32-128 input columns, one batched product),
//              scales chosen for the least squared error, and layers kept in bfloat16 were measured for
//              issue 53 and not kept (at most 1.2 points more translations identical to float32's, for
//              45 % more time: docs/benchmarks.md, "int8 with finer scales"). A row's quantization depends
//              on that row only (quantizeRows), so a weight may be quantized a chunk of rows at a time.
//   bfloat16 — weight and input rounded to bfloat16, accumulated in float32 by oneDNN; only where the
//              processor has bfloat16 instructions (AVX512_BF16), refused elsewhere with the reason.
//
// float32 is the default and the exact path: these apply only where a caller asks for them.
#include <torch/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace attnlab::model {

enum class ComputeType { Float32, Int8, BFloat16 };

// "float32" | "int8" | "bfloat16" (CTranslate2's names) <-> ComputeType; throws ConfigError naming the value.
ComputeType parseComputeType(const std::string& name);
std::string computeTypeName(ComputeType t);
// Why this build or this processor cannot compute in `t` (nothing when it can).
std::optional<std::string> computeTypeUnavailable(ComputeType t);

// While one lives on a thread, every product on that thread is float32 whatever a model's compute
// type: the exact maps of a translation that int8 or bfloat16 found (Engine's teacher-forced pass).
class ExactProducts {
public:
    ExactProducts();
    ~ExactProducts();
    ExactProducts(const ExactProducts&) = delete;
    ExactProducts& operator=(const ExactProducts&) = delete;
    static bool active();

private:
    bool m_before;
};

// A weight's rows [first, first + n) as float32 [n, cols]: what a loader reads from its file a chunk at a
// time (quantized while reading, issue 53), or a narrow of a tensor held whole.
using RowReader = std::function<torch::Tensor(int64_t first, int64_t n)>;

// One weight matrix [out, in] (+ bias [out]) in int8 or bfloat16, ready for oneDNN.
class LowPrecisionMatmul {
public:
    LowPrecisionMatmul(const torch::Tensor& weight, const torch::Tensor& bias, ComputeType type);
    // The same from the weight's rows read a chunk at a time (no float32 copy of the whole weight); bit for
    // bit what the constructor above makes of those rows.
    LowPrecisionMatmul(int64_t out, int64_t in, const RowReader& read, const torch::Tensor& bias, ComputeType type);
    ~LowPrecisionMatmul();
    LowPrecisionMatmul(const LowPrecisionMatmul&) = delete;
    LowPrecisionMatmul& operator=(const LowPrecisionMatmul&) = delete;

    // x [..., in] float32 (CPU) -> [..., out] float32. exact: x · W_heldᵀ (+ bias) up to float32 rounding,
    // W_held being the weight as held (dequantizedWeight()), x not rounded: 3 passes (4 without VNNI), each
    // multiplying what the rounding of the ones before left over — what the float32 pass of a model whose
    // float32 weights were dropped multiplies by, at 3-4 times a product's cost, without a float32 copy.
    torch::Tensor forward(const torch::Tensor& x, bool exact = false);
    ComputeType type() const;
    int64_t storedBytes() const;  // the weight as oneDNN holds it
    int64_t rowsHeld() const;     // out
    // The weight [out, in] in float32 as this copy holds it (int8: q · s per row; bfloat16 widened): what
    // a float32 product over a model whose float32 weights were dropped multiplies by (a fresh tensor).
    torch::Tensor dequantizedWeight() const;
    // Rows [first, first + n) of that weight in float32, read in place from oneDNN's layout (the rows of a
    // tied output projection are the embedding's: one copy serves both).
    torch::Tensor heldRows(int64_t first, int64_t n) const;
    // The rows `ids` (int64 [...]) -> [..., in] float32, as heldRows.
    torch::Tensor heldRows(const torch::Tensor& ids) const;

    // The int8 quantization of a weight [rows, cols], per row: q (int8) and the scale s = amax / 127 (1 for
    // a zero row), so that m ≈ q · s.
    static std::pair<torch::Tensor, torch::Tensor> quantizeRows(const torch::Tensor& m);
    // An input's quantization, per row: q (uint8), scale s (float32 [rows]) and zero point z (int32
    // [rows]) with m ≈ s · (q - z), the row's range [min(m, 0), max(m, 0)] in 255 steps (127 on a
    // processor without VNNI, whose int8 products would saturate). What forward() does to x.
    struct Activations {
        torch::Tensor q, scale, zero;
    };
    static Activations quantizeActivations(const torch::Tensor& m);
    static int inputSteps();  // 255, or 127 without VNNI

private:
    // One product of x2 [rows, in] rounded as the compute type rounds inputs; `rest` (when given) receives
    // what that rounding left out of x2.
    torch::Tensor multiplyOnce(const torch::Tensor& x2, bool with_bias, torch::Tensor* rest);
    void dequantize(const int32_t* acc, const Activations& a, torch::Tensor& y, bool with_bias) const;
    struct Impl;
    std::unique_ptr<Impl> m;
};

// A table's rows [n, cols] held in int8 (per row, as quantizeRows) or bfloat16 instead of float32: the
// embeddings and the output projection's rows of a model whose float32 weights were dropped
// (TransformerImpl::dropFloatWeights). Rows come back in float32 exactly as held.
class LowPrecisionRows {
public:
    LowPrecisionRows(const torch::Tensor& m, ComputeType type);
    // The same from rows [n, cols] read a chunk at a time (as LowPrecisionMatmul's).
    LowPrecisionRows(int64_t n, int64_t cols, const RowReader& read, ComputeType type);
    // The rows of a product's held weight, read in place (a tied embedding and output projection).
    explicit LowPrecisionRows(std::shared_ptr<const LowPrecisionMatmul> held);
    // ids [...] -> [..., cols] float32.
    torch::Tensor lookup(const torch::Tensor& ids) const;
    // x [..., cols] · rowsᵀ -> [..., n] in float32, a chunk of rows dequantized at a time (no float32 copy
    // of the whole table at once: NLLB's 256,206 rows would be 1 GiB). Differentiable in x, for gradients
    // (saliency): then autograd keeps every chunk for the backward pass, a float32-sized table while
    // the gradient is taken.
    torch::Tensor linear(const torch::Tensor& x) const;
    int64_t storedBytes() const;

private:
    torch::Tensor rows(int64_t first, int64_t n) const;
    int64_t count() const;
    std::shared_ptr<const LowPrecisionMatmul> m_held;  // or:
    torch::Tensor m_values;                            // int8 or bfloat16 [n, cols]
    torch::Tensor m_scale;                             // int8: float32 [n]; bfloat16: undefined
};

}  // namespace attnlab::model
