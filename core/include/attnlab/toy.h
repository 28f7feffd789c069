#pragma once
// Toy tasks (issue 28): a small Transformer trained in the time a class waits, on sequences
// generated on the fly — tokens 0-9 separated by spaces, 3 to 10 of them — so that a class sees its
// attention form (the anti-diagonal of reversal). The model is an ordinary package afterwards:
// `attnlab-cli translate --model PKG --text "3 1 4 1 5"` prints "5 1 4 1 3".

#include <attnlab/trainer.h>

#include <atomic>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace attnlab {

enum class ToyTask {
    Copy,     // 3 1 4 -> 3 1 4
    Reverse,  // 3 1 4 -> 4 1 3
    Sort,     // 3 1 4 -> 1 3 4
    Shift,    // each token + 1 (mod 10): 3 1 9 -> 4 2 0
    Swap,     // a made-up grammar of adjective (0-4) noun (5-9) pairs, nouns first in the target:
              // 1 7 3 5 -> 7 1 5 3 (a real word-order change, as German to English and back)
};

// "copy" | "reverse" | "sort" | "shift" | "swap"
const std::vector<ToyTask>& toyTasks();
std::string toyTaskName(ToyTask task);
ToyTask parseToyTask(const std::string& name);  // InputError listing the names

inline constexpr int kToyMinLength = 3, kToyMaxLength = 10;

// One example of `task`: source and target, tokens separated by single spaces.
std::pair<std::string, std::string> toyExample(ToyTask task, std::mt19937_64& rng);
// The target of a source for `task` (the generator's rule; InputError for a source that is not
// tokens 0-9, or for swap not adjective-noun pairs).
std::string toyTarget(ToyTask task, const std::string& source);

struct ToyOptions {
    ToyTask task = ToyTask::Reverse;
    std::string output_dir;   // the run (data, tokenizer, checkpoints, output_dir/model)
    std::string package_dir;  // where the package goes as well (replaced whole); empty = only output_dir/model
    int64_t steps = 1500;
    uint64_t seed = 1;
    int train_examples = 20000;
    int threads = 0;
    bool record_attention = true;  // the history of the first validation pairs, every 50 steps and the last
    bool resume = false;           // continue a run stopped in output_dir (its data and tokenizer kept)
    void validate() const;         // throws ConfigError
    // The trainer's options for this run: 2+2 layers, d_model 64, 4 heads, no dropout.
    TrainingOptions trainingOptions() const;
};

struct ToyResult {
    TrainingSummary training;
    double accuracy = 0.0;  // exact match on `evaluated` fresh sequences, greedy
    int evaluated = 0;
};

// Writes the task's data and a word tokenizer of the ten tokens, trains, and measures the package
// on 200 fresh sequences (another seed). Progress and stop as for train(): stopped, it returns
// unmeasured (training.stopped_early) and options.resume continues it.
ToyResult trainToy(const ToyOptions& options, const TrainingCallback& progress = {},
                   const std::atomic<bool>* stop = nullptr);

}  // namespace attnlab
