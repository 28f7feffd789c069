#include "training/objective.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>

namespace attnlab::training {

namespace {
using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

// sum over rows r with gold[r] != pad of -sum_v q_rv log softmax(logits_r)_v, where q_r puts
// 1 - eps on gold[r] and eps / (V - 1) on every other class. Its gradient is
// (softmax(logits_r) - q_r) per kept row, which backward writes straight into one buffer:
// autograd through log_softmax + gather + sum built and added three [N, V] tensors instead.
struct SmoothedCrossEntropy : public torch::autograd::Function<SmoothedCrossEntropy> {
    static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& logits, const torch::Tensor& gold,
                                 const torch::Tensor& keep, double eps) {
        const int64_t V = logits.size(1);
        auto logp = torch::log_softmax(logits, -1);
        auto gold_logp = logp.gather(1, gold.unsqueeze(1)).squeeze(1);
        torch::Tensor per_token =
            eps > 0 ? -(1.0 - eps) * gold_logp - (eps / double(V - 1)) * (logp.sum(1) - gold_logp) : -gold_logp;
        ctx->save_for_backward({logp, gold, keep});
        ctx->saved_data["eps"] = eps;
        return (per_token * keep).sum();
    }

    static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
        auto saved = ctx->get_saved_variables();
        const double eps = ctx->saved_data["eps"].toDouble();
        const int64_t V = saved[0].size(1);
        const double off = eps / double(V - 1);
        // The saved log-probabilities are not needed after this, so they become the gradient in
        // place (the graph is never run backward twice: the trainer does not retain it).
        auto grad = saved[0].exp_();
        if (off != 0.0) grad.sub_(off);
        grad.scatter_add_(1, saved[1].unsqueeze(1), torch::full({grad.size(0), 1}, -(1.0 - eps) + off, grad.options()));
        grad.mul_((saved[2] * grad_outputs[0]).unsqueeze(1));
        return {grad, torch::Tensor(), torch::Tensor(), torch::Tensor()};
    }
};
}  // namespace

LossResult labelSmoothedLoss(const torch::Tensor& logits, const torch::Tensor& gold, double eps, int64_t pad_idx) {
    auto x = logits.scalar_type() == torch::kFloat32 ? logits : logits.to(torch::kFloat32);
    auto non_pad = gold.ne(pad_idx);
    LossResult r;
    r.loss_sum = SmoothedCrossEntropy::apply(x, gold, non_pad.to(torch::kFloat32), eps);
    r.tokens = non_pad.sum().item<int64_t>();
    {
        torch::NoGradGuard no_grad;  // argmax of the logits is the argmax of log-probabilities
        r.correct = x.argmax(1).eq(gold).logical_and(non_pad).sum().item<int64_t>();
    }
    return r;
}

double learningRate(int64_t step, double lr_mul, int64_t d_model, int64_t warmup_steps) {
    const double s = static_cast<double>(std::max<int64_t>(step, 1));
    return lr_mul * std::pow(double(d_model), -0.5) *
           std::min(std::pow(s, -0.5), s * std::pow(double(warmup_steps), -1.5));
}

double decayFactor(int64_t step, int64_t max_steps, int64_t decay_steps) {
    if (decay_steps <= 0) return 1.0;
    const int64_t left = std::max<int64_t>(max_steps - step + 1, 1);
    return std::min(1.0, double(left) / double(decay_steps + 1));
}

}  // namespace attnlab::training
