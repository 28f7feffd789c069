#include "util/device.h"

#include <attnlab/config.h>
#include <attnlab/device.h>
#include <attnlab/errors.h>

#include <ATen/Parallel.h>
#include <torch/cuda.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

namespace attnlab {

bool cudaAvailable() { return torch::cuda::is_available(); }

bool isDeviceName(const std::string& name) {
    if (name == "auto" || name == "cpu" || name == "cuda") return true;
    return name.rfind("cuda:", 0) == 0 && name.size() > 5 &&
           name.find_first_not_of("0123456789", 5) == std::string::npos;
}

namespace {
int positiveEnv(const char* name) {
    const char* env = std::getenv(name);
    const int v = env ? std::atoi(env) : 0;
    return v > 0 ? v : 0;
}
}  // namespace

int requestedThreads(int option) {
    if (option > 0) return option;
    if (const int v = positiveEnv("ATTNLAB_THREADS")) return v;
    return positiveEnv("OMP_NUM_THREADS");
}

namespace {
// The thread table (docs/benchmarks.md, "Threads by measured work (issue 53)", scripts/bench_threads.sh part 1,
// idle, 3 rounds): per compute type, the multiply-adds of a decoding step from which a second thread made a
// step faster on an idle 2-core machine with waiting threads asleep, and the multiply-adds each thread needs
// beyond that. float32 (XNNPACK's packed products, OpenBLAS): 2 threads 1.11-1.81x slower up to 1 G a step,
// even at 8 G (OPUS-base batch 32 at beam 5: 1.02); int8 (oneDNN): 1.17x slower at 1 G, 0.86 at 8 G, so from
// 3 G (between, on a log scale). The slope beyond the second thread is not measured here (two cores): it
// keeps the earlier figures (issue 43's crossovers at load 1-2), so that a machine of more cores gives a
// batch of OPUS-base shape every core up to 16 (tst_threads).
struct ThreadTableRow {
    const char* compute_type;
    double second_thread_from;
    double multiply_adds_per_thread;
};
constexpr ThreadTableRow kThreadTable[] = {{"float32", 8e9, 400e6}, {"int8", 3e9, 100e6}, {"bfloat16", 3e9, 100e6}};

const ThreadTableRow& tableRow(const std::string& compute_type) {
    for (const auto& row : kThreadTable)
        if (compute_type == row.compute_type) return row;
    return kThreadTable[0];  // validated elsewhere; float32's figures
}
}  // namespace

double stepMultiplyAdds(const ModelConfig& m, int64_t rows) {
    const double d = double(m.d_model), qk = double(m.n_head * m.d_k), v = double(m.n_head * m.d_v);
    const double self_attention = d * (2 * qk + v) + v * d;  // q, k, v, out
    const double cross_attention = d * qk + v * d;           // q, out
    const double feed_forward = 2 * d * double(m.decoderInner());
    const double per_row =
        double(m.decoderLayers()) * (self_attention + cross_attention + feed_forward) + d * double(m.n_trg_vocab);
    return per_row * double(std::max<int64_t>(rows, 1));
}

double secondThreadFrom(const std::string& compute_type) { return tableRow(compute_type).second_thread_from; }

double multiplyAddsPerThread(const std::string& compute_type) {
    return tableRow(compute_type).multiply_adds_per_thread;
}

int threadsFor(int requested, const ModelConfig& model, int64_t rows, const std::string& compute_type) {
    if (requested > 0) return requested;
    const double work = stepMultiplyAdds(model, rows);
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    if (work < secondThreadFrom(compute_type) || cores < 2) return 1;
    const double threads = work / multiplyAddsPerThread(compute_type);
    return std::clamp(static_cast<int>(std::min(threads, double(cores))), 2, cores);
}

int setComputeThreads(int threads) {
    // 0: what OMP_NUM_THREADS asks for (the usual way to pin a thread count for a whole run),
    // else every core.
    if (threads <= 0) {
        const char* env = std::getenv("OMP_NUM_THREADS");
        const int requested = env ? std::atoi(env) : 0;
        threads = requested > 0 ? requested : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    }
    if (at::get_num_threads() != threads) at::set_num_threads(threads);
    return threads;
}

namespace util {
ThreadScope::ThreadScope(int threads) : m_previous(at::get_num_threads()) {
    if (threads > 0 && threads != m_previous) at::set_num_threads(threads);
}
ThreadScope::~ThreadScope() {
    if (at::get_num_threads() != m_previous) at::set_num_threads(m_previous);
}

torch::Device resolveDevice(const std::string& name) {
    if (name == "cpu") return torch::kCPU;
    if (name == "auto") return cudaAvailable() ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
    if (!cudaAvailable())
        throw DeviceError(
            "device '" + name + "' was requested but LibTorch sees no CUDA device" +
            std::string(torch::cuda::device_count() == 0 ? " (this LibTorch is CPU-only or no GPU is present)" : ""));
    torch::Device d(name);
    if (d.has_index() && d.index() >= static_cast<int>(torch::cuda::device_count()))
        throw DeviceError("device '" + name + "' does not exist: " + std::to_string(torch::cuda::device_count()) +
                          " CUDA device(s) visible");
    return d;
}
}  // namespace util

}  // namespace attnlab
