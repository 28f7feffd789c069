#include "model/packed_linear.h"

#include <ATen/Parallel.h>
#include <torch/nn/functional/linear.h>

#ifdef ATTNLAB_HAVE_XNNPACK
#include <xnnpack.h>
#endif

#include <cmath>
#include <mutex>

namespace attnlab::model {

#ifdef ATTNLAB_HAVE_XNNPACK
namespace {

bool xnnInitialized() {
    static const bool ok = xnn_initialize(/*allocator=*/nullptr) == xnn_status_success;
    return ok;
}

}  // namespace

struct WeightPack::State {
    std::mutex mutex;  // an XNNPACK operator is set up anew for every call: one call at a time
    xnn_operator_t op = nullptr;
    const void* data = nullptr;
    int64_t version = -1;
    int64_t in = 0, out = 0;
    bool failed = false;  // XNNPACK refused this weight once: at::linear from then on

    void release() {
        if (op) xnn_delete_operator(op);
        op = nullptr;
        data = nullptr;
        version = -1;
    }
    ~State() { release(); }

    bool pack(const torch::Tensor& weight, const torch::Tensor& bias) {
        release();
        const auto w = weight.detach().contiguous();
        const auto b = bias.defined() ? bias.detach().contiguous() : torch::Tensor();
        in = w.size(1);
        out = w.size(0);
        // XNNPACK copies the weight (and bias) into its own packed layout here.
        if (xnn_create_fully_connected_nc_f32(size_t(in), size_t(out), size_t(in), size_t(out), w.data_ptr<float>(),
                                              b.defined() ? b.data_ptr<float>() : nullptr, -INFINITY, INFINITY,
                                              /*flags=*/0, &op) != xnn_status_success) {
            op = nullptr;
            return false;
        }
        data = weight.data_ptr();
        version = weight._version();
        return true;
    }
};
#else
struct WeightPack::State {
    std::mutex mutex;
    void release() {}
};
#endif

WeightPack::WeightPack() : m(std::make_unique<State>()) {}
WeightPack::~WeightPack() = default;

void WeightPack::clear() {
    std::lock_guard<std::mutex> lock(m->mutex);
    m->release();
}

bool WeightPack::holdsPack() const {
    std::lock_guard<std::mutex> lock(m->mutex);
#ifdef ATTNLAB_HAVE_XNNPACK
    return m->op != nullptr;
#else
    return false;
#endif
}

bool WeightPack::applies(const torch::Tensor& x, const torch::Tensor& weight) {
#ifdef ATTNLAB_HAVE_XNNPACK
    if (!(x.device().is_cpu() && weight.device().is_cpu() && x.scalar_type() == torch::kFloat &&
          weight.scalar_type() == torch::kFloat && weight.dim() == 2 && x.dim() >= 1 && x.size(-1) == weight.size(1) &&
          !torch::GradMode::is_enabled()))
        return false;
    // XNNPACK runs on the calling thread here: work spread over several threads (large batches) keeps
    // at::linear, whose OpenBLAS uses them all.
    const int64_t rows = x.numel() / std::max<int64_t>(1, x.size(-1));
    return rows > 0 && (at::get_num_threads() == 1 || rows <= kMaxRowsOnOneThread) && xnnInitialized();
#else
    (void)x, (void)weight;
    return false;
#endif
}

torch::Tensor WeightPack::run(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
    if (!applies(x, weight)) return {};
#ifdef ATTNLAB_HAVE_XNNPACK
    std::lock_guard<std::mutex> lock(m->mutex);
    if (m->failed) return {};
    if (!m->op || m->data != weight.data_ptr() || m->version != weight._version()) {
        if (!m->pack(weight, bias)) {
            m->failed = true;
            return {};
        }
    }
    const int64_t rows = x.numel() / m->in;
    // XNNPACK may read up to XNN_EXTRA_BYTES past the input's end: a padded copy (a few kB per step).
    constexpr int64_t pad = (XNN_EXTRA_BYTES + sizeof(float) - 1) / sizeof(float);
    auto input = torch::empty({rows * m->in + pad}, x.options());
    input.narrow(0, 0, rows * m->in).view({rows, m->in}).copy_(x.reshape({rows, m->in}));
    auto output = torch::empty({rows, m->out}, x.options());
    if (xnn_setup_fully_connected_nc_f32(m->op, size_t(rows), input.data_ptr<float>(), output.data_ptr<float>(),
                                         /*threadpool=*/nullptr) != xnn_status_success ||
        xnn_run_operator(m->op, /*threadpool=*/nullptr) != xnn_status_success)
        return {};
    auto sizes = x.sizes().vec();
    sizes.back() = m->out;
    return output.view(sizes);
#else
    (void)bias;
    return {};
#endif
}

torch::Tensor PackedLinearImpl::forward(const torch::Tensor& x) {
    if (m_packed && !is_training())
        if (auto y = m_pack->run(x, weight, bias); y.defined()) return y;
    return torch::nn::LinearImpl::forward(x);
}

void PackedLinearImpl::setPacked(bool on) {
    m_packed = on;
    if (!on) m_pack->clear();
}

}  // namespace attnlab::model
