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
//   bfloat16 — weight and input rounded to bfloat16, accumulated in float32 by oneDNN; only where the
//              processor has bfloat16 instructions (AVX512_BF16), refused elsewhere with the reason.
//
// float32 is the default and the exact path: these apply only where a caller asks for them.
#include <torch/types.h>

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

// One weight matrix [out, in] (+ bias [out]) in int8 or bfloat16, ready for oneDNN.
class LowPrecisionMatmul {
public:
    LowPrecisionMatmul(const torch::Tensor& weight, const torch::Tensor& bias, ComputeType type);
    ~LowPrecisionMatmul();
    LowPrecisionMatmul(const LowPrecisionMatmul&) = delete;
    LowPrecisionMatmul& operator=(const LowPrecisionMatmul&) = delete;

    // x [..., in] float32 (CPU) -> [..., out] float32.
    torch::Tensor forward(const torch::Tensor& x);
    ComputeType type() const;
    int64_t storedBytes() const;  // the weight as oneDNN holds it

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
    void dequantize(const int32_t* acc, const Activations& a, torch::Tensor& y) const;
    struct Impl;
    std::unique_ptr<Impl> m;
};

}  // namespace attnlab::model
