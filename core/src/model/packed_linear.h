#pragma once
// Weights packed once for inference (issue 25, docs/benchmarks.md "Packed weights").
//
// A decoding step multiplies a few rows (the beams) by every weight matrix of the decoder and by
// the output projection. LibTorch's at::linear hands that to OpenBLAS, which re-packs the whole
// weight matrix on every call: most of a typed sentence's time went there. XNNPACK (Debian's
// libxnnpack, which LibTorch itself links) packs a weight once and multiplies straight from the
// packed copy, 2-4x faster for 1-20 rows here. The packed copy costs as much memory as the weight.
//
// It is called directly, on the calling thread, not through LibTorch's prepacked:: operators: those
// run on LibTorch's global thread pool, which at::set_num_threads replaces while another thread
// may be using it (a hang with several translators on several threads, as the head lab runs).
// Without libxnnpack at build time (ATTNLAB_HAVE_XNNPACK unset) everything runs through at::linear.
//
// Results differ from at::linear by float rounding only (another summation order); the effect on
// translations is measured in docs/benchmarks.md. Packing is off unless the model is switched to
// it (TransformerImpl::setPackedInference; the Engine does for TranslatorOptions::packed_weights),
// and it applies only to float32 CPU tensors without autograd, outside training mode.
#include "model/low_precision.h"

#include <torch/nn/modules/linear.h>

#include <memory>

namespace attnlab::model {

// Releases a float32 tensor's storage, keeping its shape (and so parameter counts): every element reads
// NaN from then on, so that a stray read shows at once. For weights an int8 / bfloat16 copy replaced.
void dropFloatStorage(torch::Tensor& t);
// A float32 tensor of `sizes` as dropFloatStorage leaves one, never given storage of its own: a weight a
// loader reads straight into its int8 / bfloat16 copy (TransformerImpl built for a held compute type).
torch::Tensor droppedFloatTensor(at::IntArrayRef sizes);

class WeightPack {
public:
    WeightPack();
    ~WeightPack();
    WeightPack(const WeightPack&) = delete;
    WeightPack& operator=(const WeightPack&) = delete;

    // x · weightᵀ + bias from the packed copy of `weight` and `bias` (packed on first use, and again
    // whenever either tensor's storage, data or version changes); an undefined tensor when packing does
    // not apply (applies()) or XNNPACK refused the weight: the caller then runs at::linear.
    torch::Tensor run(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias);
    // run() where it applies and `use_pack`, else at::linear: what every packed layer computes. With
    // another compute type than float32, an int8 or bfloat16 copy of the weight (made on first use,
    // and again when the weight changes) multiplies instead, wherever x is float32 on the CPU without
    // autograd (model/low_precision.h).
    torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias, bool use_pack,
                         ComputeType compute = ComputeType::Float32);
    int64_t lowPrecisionBytes() const;  // the int8 / bfloat16 copy's size (0 when there is none)
    // Makes that copy now (at load) rather than on the first product (the first typed sentence).
    void prepare(const torch::Tensor& weight, const torch::Tensor& bias, ComputeType compute);
    void clear();
    // After prepare(): the int8 / bfloat16 copy becomes the only one. `weight`'s float32 storage is
    // released (the tensor keeps its shape, every element NaN, so that a stray read shows at once); a
    // float32 product (the exact pass) comes from LowPrecisionMatmul::forward(x, exact), one with gradients
    // from dequantizedWeight().
    void dropFloatWeight(torch::Tensor& weight);
    // A copy made from a file's rows (quantized while reading, issue 53) becomes the only one, as
    // prepare() then dropFloatWeight() leave it.
    void hold(std::shared_ptr<LowPrecisionMatmul> low);
    bool droppedFloatWeight() const;
    // The int8 / bfloat16 copy (null before prepare()).
    std::shared_ptr<const LowPrecisionMatmul> held() const;
    // The weight a float32 product multiplies by: `weight`, or the held copy's after dropFloatWeight().
    torch::Tensor floatWeight(const torch::Tensor& weight) const;
    bool holdsPack() const;  // whether a packed copy is held (after a run() that used it)

    // Whether run() would multiply x by weight from a packed copy: float32 CPU tensors (no inference
    // tensors), a bias (if any) of the weight's rows, autograd off, available(), and one LibTorch
    // thread or at most kMaxRowsOnOneThread rows (larger work on several threads goes to at::linear,
    // which spreads it over them).
    static bool applies(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias = {});
    // Whether this build has XNNPACK and it started (else everything runs through at::linear).
    static bool available();
    static constexpr int64_t kMaxRowsOnOneThread = 32;

private:
    std::shared_ptr<LowPrecisionMatmul> lowPrecision(const torch::Tensor& weight, const torch::Tensor& bias,
                                                     ComputeType compute);
    struct State;
    std::unique_ptr<State> m;
};

// torch::nn::Linear (same parameters and state-dict keys) that multiplies from a WeightPack when
// `packed` is set and the module is not training.
class PackedLinearImpl : public torch::nn::LinearImpl {
public:
    using torch::nn::LinearImpl::LinearImpl;
    torch::Tensor forward(const torch::Tensor& x);
    void setPacked(bool on);
    void setComputeType(ComputeType type);
    // Keeps the int8 / bfloat16 copy only (WeightPack::dropFloatWeight); after setComputeType.
    void dropFloatWeight();
    // What setComputeType(type) then dropFloatWeight() make, the weight read from `read` a chunk of rows at a
    // time instead of from `weight` (which holds no float32 storage then); the bias, when the layer has one,
    // must already hold its values (the copy takes them).
    void holdWeight(ComputeType type, const RowReader& read);
    // The weight in float32: `weight`, or the held copy's dequantized after dropFloatWeight().
    torch::Tensor floatWeight() const { return m_pack->floatWeight(weight); }
    const WeightPack& pack() const { return *m_pack; }

private:
    bool m_packed = false;
    ComputeType m_compute = ComputeType::Float32;
    std::shared_ptr<WeightPack> m_pack = std::make_shared<WeightPack>();
};
TORCH_MODULE(PackedLinear);

}  // namespace attnlab::model
