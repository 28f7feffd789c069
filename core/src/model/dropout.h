#pragma once
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

namespace attnlab::model {

// Inverted dropout (keep with probability 1 - p, scale kept values by 1 / (1 - p)), the same
// distribution as torch::nn::Dropout. On the CPU, LibTorch 1.13 draws its Bernoulli mask one
// element at a time from the locked global generator (16 ns an element here, 6 % of a training
// step); this draws one 64-bit seed from that generator per call and fills the mask with a
// counter-based hash in parallel, so runs stay reproducible from torch::manual_seed and a saved
// generator state. Other devices use torch::dropout.
class FastDropoutImpl : public torch::nn::Module {
public:
    explicit FastDropoutImpl(double p);
    torch::Tensor forward(const torch::Tensor& x);
    double p() const { return m_p; }

private:
    double m_p;
};
TORCH_MODULE(FastDropout);

// The mask FastDropout multiplies by: 0 or 1 / (1 - p), shaped and typed like `like`.
// Element i depends only on (seed, i), not on how the work is split across threads.
torch::Tensor dropoutMask(const torch::Tensor& like, double p, uint64_t seed);

}  // namespace attnlab::model
