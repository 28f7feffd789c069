#include "util/tensor_convert.h"

#include <torch/torch.h>

namespace attnlab::util {

Matrix toMatrix(const torch::Tensor& t) {
    auto c = t.detach().to(torch::kCPU, torch::kFloat32).contiguous();
    TORCH_CHECK(c.dim() == 2, "toMatrix needs a 2-d tensor");
    const int64_t rows = c.size(0), cols = c.size(1);
    const float* p = c.data_ptr<float>();
    Matrix m(rows);
    for (int64_t i = 0; i < rows; ++i) m[i].assign(p + i * cols, p + (i + 1) * cols);
    return m;
}

std::vector<Matrix> toLayerHeads(const torch::Tensor& t) {
    auto c = t.detach().to(torch::kCPU, torch::kFloat32).contiguous();
    std::vector<Matrix> out;
    for (int64_t h = 0; h < c.size(0); ++h) out.push_back(toMatrix(c[h]));
    return out;
}

}  // namespace attnlab::util
