#pragma once
#include <torch/types.h>

namespace attnlab::training {

// Label-smoothed cross-entropy as the reference's cal_loss: the gold class gets 1 - eps and every
// other class eps / (V - 1); summed over non-pad positions. logits [N, V], gold [N].
// Returns (loss sum, number of non-pad tokens, number of correct argmax predictions).
struct LossResult {
    torch::Tensor loss_sum;
    int64_t tokens = 0;
    int64_t correct = 0;
};
LossResult labelSmoothedLoss(const torch::Tensor& logits, const torch::Tensor& gold, double eps, int64_t pad_idx);

// ref: ScheduledOptim — lr at optimiser step `step` (1-based).
double learningRate(int64_t step, double lr_mul, int64_t d_model, int64_t warmup_steps);

// The final decay's factor at `step` (1-based): 1 before the last `decay_steps` steps up to
// `max_steps`, then falling linearly, (max_steps - step + 1) / (decay_steps + 1) (never 0, so the
// last step still moves). decay_steps = 0: always 1.
double decayFactor(int64_t step, int64_t max_steps, int64_t decay_steps);

}  // namespace attnlab::training
