#include "util/device.h"

#include <attnlab/device.h>
#include <attnlab/errors.h>

#include <ATen/Parallel.h>
#include <torch/cuda.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include <unistd.h>

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

int threadsFor(int requested, size_t sentences) {
    if (requested > 0) return requested;
    if (sentences <= kInteractiveSentences) return 1;
    return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

void relaunchWithPassiveThreads(char** argv) {
    if (std::getenv("OMP_WAIT_POLICY") || !argv || !argv[0]) return;  // the user's choice, or done
    // Only when /proc/self/exe is the program argv[0] names: started through the dynamic loader
    // (ld-linux ... attnlab) or a tool such as valgrind, it is not, and re-running it would run that.
    std::error_code ec;
    const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec || exe.filename() != std::filesystem::path(argv[0]).filename()) return;
    if (setenv("OMP_WAIT_POLICY", "passive", 1) != 0) return;
    execv("/proc/self/exe", argv);  // returns only on failure: go on with spinning threads
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
