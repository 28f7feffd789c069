#pragma once
// Stored tensors into a model's parameters with bounded memory: a safetensors tensor is read,
// converted and checked in chunks of at most kChunkBytes, so that loading a model peaks at its own
// size plus a chunk (a 1 GB embedding read whole, converted and checked whole had cost 2.7 GB more).

#include "formats/safetensors/safetensors.h"

#include <torch/types.h>

#include <cstdint>
#include <string>

namespace attnlab::package {

inline constexpr uint64_t kChunkBytes = 64u << 20;

// LibTorch's dtype of a stored "F32" / "F16" / "BF16" (the only ones the loaders accept).
torch::ScalarType storedDtype(const std::string& dtype);

// Copies `tensor` of `header`'s file into `dst` (of as many elements, any float dtype), converting
// F32 / F16 / BF16 on the way; false when a value is NaN or infinite (dst is then partly written).
bool copyStoredTensor(const safetensors::Header& header, const safetensors::TensorInfo& tensor, torch::Tensor& dst);

// Rows [first, first + n) of a stored tensor [rows, ...] as float32 [n, row elements], converted from F32 / F16 /
// BF16; undefined when a value is NaN or infinite.
torch::Tensor readStoredRows(const safetensors::Header& header, const safetensors::TensorInfo& tensor, int64_t first,
                             int64_t n);

// Whether every value of `t` is finite, checked a chunk at a time (no temporary of t's size).
bool allFinite(const torch::Tensor& t);

}  // namespace attnlab::package
