#include "training/objective.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>

namespace attnlab::training {

LossResult labelSmoothedLoss(const torch::Tensor& logits, const torch::Tensor& gold, double eps, int64_t pad_idx) {
    const int64_t V = logits.size(1);
    auto logp = torch::log_softmax(logits.to(torch::kFloat32), -1);
    auto non_pad = gold.ne(pad_idx);
    auto gold_logp = logp.gather(1, gold.unsqueeze(1)).squeeze(1);
    torch::Tensor per_token;
    if (eps > 0) {
        // -(1-eps) log p_gold - eps/(V-1) * sum_{v != gold} log p_v, without a dense one-hot.
        auto others = logp.sum(1) - gold_logp;
        per_token = -(1.0 - eps) * gold_logp - (eps / double(V - 1)) * others;
    } else {
        per_token = -gold_logp;
    }
    LossResult r;
    r.loss_sum = per_token.masked_select(non_pad).sum();
    r.tokens = non_pad.sum().item<int64_t>();
    r.correct = logp.argmax(1).eq(gold).masked_select(non_pad).sum().item<int64_t>();
    return r;
}

double learningRate(int64_t step, double lr_mul, int64_t d_model, int64_t warmup_steps) {
    const double s = static_cast<double>(std::max<int64_t>(step, 1));
    return lr_mul * std::pow(double(d_model), -0.5) * std::min(std::pow(s, -0.5), s * std::pow(double(warmup_steps), -1.5));
}

}  // namespace attnlab::training
