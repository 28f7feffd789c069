#pragma once
// The layout of a training run's output directory: the one owner of its names, used by the
// trainer that writes it and by `attnlab-cli average --run` and scripts that read it.
//
//   <run>/log.tsv, <run>/steps.tsv            logs (columns: attnlab/training_log.h)
//   <run>/checkpoints/latest/                 package + trainer_state.json + optimizer.pt + rng.pt
//   <run>/checkpoints/best/                   package + trainer_state.json (best validation BLEU)
//   <run>/checkpoints/epoch-NNN/              package + trainer_state.json after epoch NNN
//   <run>/model/                              the final package (best, else latest) + card + log
//   <run>/attention_history.bin               --record-attention: the history so far (package_files::
//                                             kAttentionHistory); each checkpoint carries it up to its step
#include <string>
#include <vector>

namespace attnlab::run_layout {

inline constexpr const char* kEpochLog = "log.tsv";
inline constexpr const char* kStepLog = "steps.tsv";
inline constexpr const char* kCheckpoints = "checkpoints";
inline constexpr const char* kLatest = "latest";
inline constexpr const char* kBest = "best";
inline constexpr const char* kFinalPackage = "model";
inline constexpr const char* kTrainerState = "trainer_state.json";
inline constexpr const char* kOptimizerState = "optimizer.pt";
inline constexpr const char* kRngState = "rng.pt";

// "epoch-007" for epoch 7.
std::string epochCheckpointName(int epoch);
// The epoch number of such a name, or -1 when the name is not one.
int epochOfCheckpointName(const std::string& name);
// <run>/checkpoints/epoch-NNN directories, oldest epoch first; throws InputError when <run>
// has no checkpoints directory.
std::vector<std::string> epochCheckpoints(const std::string& run_dir);

}  // namespace attnlab::run_layout
