#pragma once
// MODEL_CARD.md of a trained package: data (by file name, never a local path), hyperparameters,
// how long it trained and where its per-epoch figures are.
#include "training/examples.h"
#include "training/run_state.h"

#include <attnlab/confidence.h>
#include <attnlab/config.h>
#include <attnlab/trainer.h>

#include <optional>
#include <string>

namespace attnlab::training {

struct ModelCardFacts {
    const TrainingOptions& options;
    const PackageConfig& config;
    const RunState& state;
    size_t train_pairs = 0;                           // lines in the training files
    const Encoded& train;                             // what was used and skipped
    double seconds = 0;                               // wall time of all sessions
    std::string which;                                // "best validation BLEU" | "latest"
    std::optional<ConfidenceCalibration> confidence;  // the package's threshold, when calibrated
};

std::string modelCard(const ModelCardFacts& facts);

}  // namespace attnlab::training
