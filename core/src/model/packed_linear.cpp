#include "model/packed_linear.h"

#include <ATen/Parallel.h>
#include <torch/nn/functional/linear.h>

#ifdef ATTNLAB_HAVE_XNNPACK
#include <xnnpack.h>
#endif

#include <attnlab/errors.h>

#include <cmath>
#include <mutex>

namespace attnlab::model {

namespace {

bool xnnAvailable() {
#ifdef ATTNLAB_HAVE_XNNPACK
    static const bool ok = xnn_initialize(/*allocator=*/nullptr) == xnn_status_success;
    return ok;
#else
    return false;
#endif
}

bool floatOnCpu(const torch::Tensor& t) { return t.device().is_cpu() && t.scalar_type() == torch::kFloat; }

// A weight or bias to pack: inference tensors (made under InferenceMode) have no version counter to
// follow. The input may be one: it is read once.
bool packableParameter(const torch::Tensor& t) { return floatOnCpu(t) && !t.is_inference(); }

// What a packed copy was made from: the tensor's storage (held, so that its memory cannot be reused by
// another tensor that would then look the same), where its data starts, and its version (bumped by
// every in-place change).
struct Source {
    c10::Storage storage;
    const void* data = nullptr;
    int64_t version = -1;

    static Source of(const torch::Tensor& t) {
        return t.defined() ? Source{t.storage(), t.data_ptr(), int64_t(t._version())} : Source{};
    }
    bool sameAs(const torch::Tensor& t) const {
        if (!t.defined()) return !storage;
        return storage.unsafeGetStorageImpl() == t.storage().unsafeGetStorageImpl() && data == t.data_ptr() &&
               version == int64_t(t._version());
    }
};

}  // namespace

struct WeightPack::State {
    std::mutex mutex;  // an XNNPACK operator is set up anew for every call: one call at a time
    Source weight, bias;
    // The int8 / bfloat16 copy and what it was made from (used outside the lock: oneDNN's primitives
    // run concurrently).
    std::shared_ptr<LowPrecisionMatmul> low;
    Source low_weight, low_bias;
    int64_t in = 0, out = 0;
    bool failed = false;   // XNNPACK refused this weight: at::linear until clear()
    bool dropped = false;  // dropFloatWeight(): `low` is the only copy
#ifdef ATTNLAB_HAVE_XNNPACK
    xnn_operator_t op = nullptr;
    bool holds() const { return op != nullptr; }
    void release() {
        if (op) xnn_delete_operator(op);
        op = nullptr;
        weight = bias = Source{};
    }
    bool pack(const torch::Tensor& w_in, const torch::Tensor& b_in) {
        release();
        const auto w = w_in.detach().contiguous();
        const auto b = b_in.defined() ? b_in.detach().contiguous() : torch::Tensor();
        in = w.size(1);
        out = w.size(0);
        // XNNPACK copies the weight (and bias) into its own packed layout here.
        if (xnn_create_fully_connected_nc_f32(size_t(in), size_t(out), size_t(in), size_t(out), w.data_ptr<float>(),
                                              b.defined() ? b.data_ptr<float>() : nullptr, -INFINITY, INFINITY,
                                              /*flags=*/0, &op) != xnn_status_success) {
            op = nullptr;
            return false;
        }
        weight = Source::of(w_in);
        bias = Source::of(b_in);
        return true;
    }
    // x [rows, in] -> [rows, out], or undefined when XNNPACK fails.
    torch::Tensor multiply(const torch::Tensor& x, int64_t rows) {
        // XNNPACK may read up to XNN_EXTRA_BYTES past the input's end: a padded copy (a few kB a step).
        constexpr int64_t pad = (XNN_EXTRA_BYTES + sizeof(float) - 1) / sizeof(float);
        auto input = torch::empty({rows * in + pad}, x.options());
        input.narrow(0, 0, rows * in).view({rows, in}).copy_(x.reshape({rows, in}));
        auto output = torch::empty({rows, out}, x.options());
        if (xnn_setup_fully_connected_nc_f32(op, size_t(rows), input.data_ptr<float>(), output.data_ptr<float>(),
                                             /*threadpool=*/nullptr) != xnn_status_success ||
            xnn_run_operator(op, /*threadpool=*/nullptr) != xnn_status_success)
            return {};
        return output;
    }
#else
    bool holds() const { return false; }
    void release() {}
    bool pack(const torch::Tensor&, const torch::Tensor&) { return false; }
    torch::Tensor multiply(const torch::Tensor&, int64_t) { return {}; }
#endif
    ~State() { release(); }
};

WeightPack::WeightPack() : m(std::make_unique<State>()) {}
WeightPack::~WeightPack() = default;

void WeightPack::clear() {
    std::lock_guard<std::mutex> lock(m->mutex);
    if (m->dropped) {  // the held copy is all there is: only the XNNPACK copy goes
        m->release();
        return;
    }
    m->release();
    m->failed = false;
    m->low.reset();
}

std::shared_ptr<LowPrecisionMatmul> WeightPack::lowPrecision(const torch::Tensor& weight, const torch::Tensor& bias,
                                                             ComputeType compute) {
    std::lock_guard<std::mutex> lock(m->mutex);
    if (m->dropped) return m->low;
    if (!m->low || m->low->type() != compute || !m->low_weight.sameAs(weight) || !m->low_bias.sameAs(bias)) {
        m->low = std::make_shared<LowPrecisionMatmul>(weight, bias, compute);
        m->low_weight = Source::of(weight);
        m->low_bias = Source::of(bias);
    }
    return m->low;
}

void WeightPack::prepare(const torch::Tensor& weight, const torch::Tensor& bias, ComputeType compute) {
    if (compute == ComputeType::Float32 || !floatOnCpu(weight)) return;
    torch::NoGradGuard no_grad;
    (void)lowPrecision(weight, bias, compute);
}

void dropFloatStorage(torch::Tensor& t) {
    torch::NoGradGuard no_grad;
    const torch::Tensor nan = torch::full({1}, std::nanf(""), t.options());
    t.set_(nan.storage(), 0, t.sizes(), std::vector<int64_t>(size_t(t.dim()), 0));
}

torch::Tensor droppedFloatTensor(at::IntArrayRef sizes) {
    torch::Tensor t = torch::empty({0});
    torch::NoGradGuard no_grad;
    const torch::Tensor nan = torch::full({1}, std::nanf(""), t.options());
    t.set_(nan.storage(), 0, sizes, std::vector<int64_t>(sizes.size(), 0));
    return t;
}

void WeightPack::hold(std::shared_ptr<LowPrecisionMatmul> low) {
    std::lock_guard<std::mutex> lock(m->mutex);
    m->release();
    m->low = std::move(low);
    m->dropped = true;
    m->low_weight = m->low_bias = Source{};
}

void WeightPack::dropFloatWeight(torch::Tensor& weight) {
    std::lock_guard<std::mutex> lock(m->mutex);
    if (!m->low) throw InternalError("dropFloatWeight: no int8 / bfloat16 copy was prepared");
    m->release();
    m->dropped = true;
    m->low_weight = m->low_bias = Source{};  // which held the float32 storage
    dropFloatStorage(weight);
}

std::shared_ptr<const LowPrecisionMatmul> WeightPack::held() const {
    std::lock_guard<std::mutex> lock(m->mutex);
    return m->low;
}

bool WeightPack::droppedFloatWeight() const {
    std::lock_guard<std::mutex> lock(m->mutex);
    return m->dropped;
}

torch::Tensor WeightPack::floatWeight(const torch::Tensor& weight) const {
    std::shared_ptr<LowPrecisionMatmul> low;
    {
        std::lock_guard<std::mutex> lock(m->mutex);
        if (!m->dropped) return weight;
        low = m->low;
    }
    return low->dequantizedWeight();
}

int64_t WeightPack::lowPrecisionBytes() const {
    std::lock_guard<std::mutex> lock(m->mutex);
    return m->low ? m->low->storedBytes() : 0;
}

bool WeightPack::holdsPack() const {
    std::lock_guard<std::mutex> lock(m->mutex);
    return m->holds();
}

bool WeightPack::available() { return xnnAvailable(); }

bool WeightPack::applies(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
    if (!floatOnCpu(x) || !packableParameter(weight) || weight.dim() != 2 || x.dim() < 1 ||
        x.size(-1) != weight.size(1) || torch::GradMode::is_enabled())
        return false;
    if (bias.defined() && (!packableParameter(bias) || bias.dim() != 1 || bias.size(0) != weight.size(0))) return false;
    // XNNPACK runs on the calling thread here: work spread over several threads (large batches) keeps
    // at::linear, whose OpenBLAS uses them all.
    const int64_t rows = x.numel() / std::max<int64_t>(1, x.size(-1));
    return rows > 0 && (at::get_num_threads() == 1 || rows <= kMaxRowsOnOneThread) && available();
}

torch::Tensor WeightPack::run(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
    if (!applies(x, weight, bias)) return {};
    std::lock_guard<std::mutex> lock(m->mutex);
    if (m->failed) return {};
    if (!m->holds() || !m->weight.sameAs(weight) || !m->bias.sameAs(bias)) {
        if (!m->pack(weight, bias)) {
            m->failed = true;
            return {};
        }
    }
    auto output = m->multiply(x, x.numel() / m->in);
    if (!output.defined()) return {};
    auto sizes = x.sizes().vec();
    sizes.back() = m->out;
    return output.view(sizes);
}

torch::Tensor WeightPack::linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                                 bool use_pack, ComputeType compute) {
    const bool low = compute != ComputeType::Float32 && !ExactProducts::active() && floatOnCpu(x) &&
                     packableParameter(weight) && weight.dim() == 2 && x.dim() >= 1 && x.size(-1) == weight.size(1) &&
                     !torch::GradMode::is_enabled();
    if (low) return lowPrecision(weight, bias, compute)->forward(x);
    if (droppedFloatWeight()) {  // the held copy is the weight: exact products from it (gradients: a float copy)
        if (torch::GradMode::is_enabled() || !floatOnCpu(x))
            return torch::nn::functional::linear(x, floatWeight(weight), bias);
        std::shared_ptr<LowPrecisionMatmul> held;
        {
            std::lock_guard<std::mutex> lock(m->mutex);
            held = m->low;
        }
        return held->forward(x, /*exact=*/true);
    }
    if (use_pack)
        if (auto y = run(x, weight, bias); y.defined()) return y;
    return torch::nn::functional::linear(x, weight, bias);
}

torch::Tensor PackedLinearImpl::forward(const torch::Tensor& x) {
    return m_pack->linear(x, weight, bias, m_packed && !is_training(),
                          is_training() ? ComputeType::Float32 : m_compute);
}

void PackedLinearImpl::setComputeType(ComputeType type) {
    m_compute = type;
    m_pack->prepare(weight, bias, type);
}

void PackedLinearImpl::dropFloatWeight() { m_pack->dropFloatWeight(weight); }

void PackedLinearImpl::holdWeight(ComputeType type, const RowReader& read) {
    m_compute = type;
    m_pack->hold(std::make_shared<LowPrecisionMatmul>(weight.size(0), weight.size(1), read, bias, type));
    dropFloatStorage(weight);
}

void PackedLinearImpl::setPacked(bool on) {
    m_packed = on;
    if (!on) m_pack->clear();
}

}  // namespace attnlab::model
