#pragma once
// Tensor -> std containers, for the public result types.
#include <attnlab/translation.h>

#include <torch/types.h>

namespace attnlab::util {

// [rows, cols] -> Matrix (float32 on the CPU).
Matrix toMatrix(const torch::Tensor& t);
// [heads, rows, cols] -> one Matrix per head.
std::vector<Matrix> toLayerHeads(const torch::Tensor& t);

}  // namespace attnlab::util
