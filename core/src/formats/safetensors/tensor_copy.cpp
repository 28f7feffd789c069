#include "formats/safetensors/tensor_copy.h"

#include <torch/torch.h>

#include <algorithm>
#include <vector>

namespace attnlab::package {

torch::ScalarType storedDtype(const std::string& dtype) {
    return dtype == "F32" ? torch::kFloat32 : dtype == "F16" ? torch::kFloat16 : torch::kBFloat16;
}

bool copyStoredTensor(const safetensors::Header& header, const safetensors::TensorInfo& tensor, torch::Tensor& dst) {
    const uint64_t item = safetensors::dtypeSize(tensor.dtype), numel = tensor.numel();
    const uint64_t per_chunk = std::max<uint64_t>(1, kChunkBytes / std::max<uint64_t>(item, 1));
    torch::Tensor flat = dst.view({-1});
    std::vector<char> buffer(size_t(std::min(numel, per_chunk) * item));
    for (uint64_t at = 0; at < numel; at += per_chunk) {
        const uint64_t n = std::min(per_chunk, numel - at);
        safetensors::readTensorRange(header, tensor, at * item, n * item, buffer.data());
        const torch::Tensor chunk = torch::from_blob(buffer.data(), {int64_t(n)}, storedDtype(tensor.dtype));
        if (!torch::isfinite(chunk).all().item<bool>()) return false;
        flat.narrow(0, int64_t(at), int64_t(n)).copy_(chunk);
    }
    return true;
}

torch::Tensor readStoredRows(const safetensors::Header& header, const safetensors::TensorInfo& tensor, int64_t first,
                             int64_t n) {
    const int64_t row = tensor.shape.empty() || tensor.shape[0] == 0 ? 1 : int64_t(tensor.numel()) / tensor.shape[0];
    const uint64_t item = safetensors::dtypeSize(tensor.dtype);
    torch::Tensor raw = torch::empty({n, row}, storedDtype(tensor.dtype));
    safetensors::readTensorRange(header, tensor, uint64_t(first * row) * item, uint64_t(n * row) * item,
                                 static_cast<char*>(raw.data_ptr()));
    if (!allFinite(raw)) return {};
    return raw.to(torch::kFloat32);
}

bool allFinite(const torch::Tensor& t) {
    const torch::Tensor flat = t.reshape({-1});
    const int64_t per_chunk = int64_t(kChunkBytes / std::max<size_t>(t.element_size(), 1));
    for (int64_t at = 0; at < flat.numel(); at += per_chunk)
        if (!torch::isfinite(flat.narrow(0, at, std::min(per_chunk, flat.numel() - at))).all().item<bool>())
            return false;
    return true;
}

}  // namespace attnlab::package
