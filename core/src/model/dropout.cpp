#include "model/dropout.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <attnlab/errors.h>

#include <mutex>
#include <stdexcept>
#include <string>

namespace attnlab::model {

namespace {
// splitmix64's finaliser: a bijective mix with good avalanche, enough for dropout masks.
inline uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

uint64_t drawSeed() {
    auto gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    return gen.get<at::CPUGeneratorImpl>()->random64();
}
}  // namespace

FastDropoutImpl::FastDropoutImpl(double p) : m_p(p) {
    if (!(p >= 0.0 && p <= 1.0)) throw ConfigError("dropout must be in [0, 1], got " + std::to_string(p));
}

torch::Tensor dropoutMask(const torch::Tensor& like, double p, uint64_t seed) {
    auto mask = torch::empty(like.sizes(), like.options().dtype(torch::kFloat32).device(torch::kCPU));
    float* out = mask.data_ptr<float>();
    const int64_t n = mask.numel();
    // p < 1 here. Keep element i when its 32-bit draw u satisfies u >= p * 2^32: probability 1 - p.
    const uint64_t threshold = static_cast<uint64_t>(p * 4294967296.0);
    const float scale = static_cast<float>(1.0 / (1.0 - p));
    const uint64_t key = mix(seed);
    at::parallel_for(0, (n + 1) / 2, 4096, [&](int64_t begin, int64_t end) {
        for (int64_t j = begin; j < end; ++j) {
            const uint64_t r = mix(key + static_cast<uint64_t>(j) * 0x9E3779B97F4A7C15ULL);
            const int64_t i = 2 * j;
            out[i] = (r & 0xFFFFFFFFULL) >= threshold ? scale : 0.0f;
            if (i + 1 < n) out[i + 1] = (r >> 32) >= threshold ? scale : 0.0f;
        }
    });
    return like.scalar_type() == torch::kFloat32 ? mask : mask.to(like.scalar_type());
}

torch::Tensor FastDropoutImpl::forward(const torch::Tensor& x) {
    if (!is_training() || m_p == 0.0) return x;
    if (m_p == 1.0) return x * 0.0;  // as torch::dropout: everything dropped, gradient zero
    if (!x.device().is_cpu()) return torch::dropout(x, m_p, /*train=*/true);
    return x * dropoutMask(x, m_p, drawSeed());
}

}  // namespace attnlab::model
