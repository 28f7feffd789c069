#pragma once
// Device names ("auto", "cpu", "cuda", "cuda:N") to LibTorch devices.
#include <torch/types.h>

#include <string>

namespace attnlab::util {

// Throws DeviceError when the device is not available, naming what was asked for and what exists.
torch::Device resolveDevice(const std::string& name);

}  // namespace attnlab::util
