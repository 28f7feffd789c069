#pragma once
// What a checkpoint holds besides the model and the optimizer: where training stands, the
// hyperparameters the run was started with, and the data it trains on. Written and read here
// only (trainer_state.json).
#include "training/examples.h"

#include <attnlab/trainer.h>

#include <string>

namespace attnlab::training {

// The corpus files a run trains on, as resolved when it started.
struct DataFiles {
    std::string src_lang, tgt_lang;
    std::string train_src, train_tgt, valid_src, valid_tgt;
};

struct RunState {
    int64_t step = 0;
    int epoch = 0;               // 0-based epoch in progress
    int64_t batch_in_epoch = 0;  // next batch of that epoch
    double best_bleu = -1.0;
    double elapsed_seconds = 0.0;  // training time of this and earlier sessions
    // The running totals of the epoch in progress (its train_loss in the log).
    double epoch_loss_sum = 0.0;
    int64_t epoch_tokens = 0;
    DataFiles data;
    CorpusFingerprint train_fingerprint;  // pairs == 0: not recorded (checkpoints before it was)
};

// trainer_state.json: the state and the hyperparameters of `options` that a resume must reuse.
std::string runStateToJson(const RunState& state, const TrainingOptions& options);

// Reads trainer_state.json; the stored hyperparameters replace those of *options. Throws
// PackageError "<origin>: corrupt checkpoint state: ..." for anything malformed.
RunState runStateFromJson(const std::string& text, const std::string& origin, TrainingOptions* options);

}  // namespace attnlab::training
