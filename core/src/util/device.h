#pragma once
// Device names ("auto", "cpu", "cuda", "cuda:N") to LibTorch devices.
#include <torch/types.h>

#include <string>

namespace attnlab::util {

// Throws DeviceError when the device is not available, naming what was asked for and what exists.
torch::Device resolveDevice(const std::string& name);

// LibTorch's intra-op thread count for one piece of work, restored when it ends.
class ThreadScope {
public:
    explicit ThreadScope(int threads);
    ~ThreadScope();
    ThreadScope(const ThreadScope&) = delete;
    ThreadScope& operator=(const ThreadScope&) = delete;

private:
    int m_previous;
};

}  // namespace attnlab::util
