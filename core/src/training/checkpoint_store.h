#pragma once
// The checkpoints of a training run (names: attnlab/run_layout.h). `latest` holds everything a
// resume needs (package, state, optimizer, random generator); `best` and `epoch-NNN` are model
// packages plus their state (no optimizer: they are only ever read as models, a third the size).
// Every write is atomic (package::savePackage).
#include "model/transformer.h"
#include "training/run_state.h"

#include <attnlab/config.h>

#include <torch/optim/adam.h>

#include <string>

namespace attnlab::training {

class CheckpointStore {
public:
    explicit CheckpointStore(const std::string& run_dir);  // creates <run>/checkpoints

    std::string latestDir() const;
    std::string bestDir() const;
    bool hasLatest() const;
    bool hasBest() const;

    // The state of `latest`; its hyperparameters replace those of *options. Throws InputError
    // when there is nothing to resume, PackageError when it is corrupt.
    RunState readLatestState(TrainingOptions* options) const;
    // Loads the optimizer's and the CPU generator's state saved with `latest`.
    // The optimizer's state is loaded onto `device` (the model's, which may differ from the run's before).
    void restoreLatest(torch::optim::Adam& optimizer, torch::Device device) const;

    // What every checkpoint is made of.
    struct Contents {
        const PackageConfig& config;
        model::Transformer& model;
        const std::string& tokenizer_model;
        const TrainingOptions& options;
        const std::string& history;  // attention_history.bin's bytes; empty = none
    };
    void saveLatest(const Contents& c, const RunState& state, torch::optim::Adam& optimizer) const;
    void saveBest(const Contents& c, const RunState& state) const;
    // Writes epoch-NNN for state.epoch (epochs completed) and removes the one `keep` epochs older.
    void saveEpoch(const Contents& c, const RunState& state, int keep) const;

private:
    std::string m_run_dir, m_dir;
};

}  // namespace attnlab::training
