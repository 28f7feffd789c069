#pragma once
// HistoryRecorder (--record-attention): records the attention maps of the probe sentences,
// teacher-forced through their references by the model being trained (eval mode, no gradient, no
// random numbers drawn: a resumed run stays bit-identical), at the points of its schedule — the
// start, steps 25, 50, 100, ... doubling up to `every`, then every `every` steps — and at the end of
// every epoch with the validation figures. Steps count over all stages of a history: a run started
// from a package that carries one (--init-from) continues it as the next stage.
#include "model/transformer.h"

#include <attnlab/attention_history.h>
#include <attnlab/config.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace attnlab::decoding {
class Engine;
}

namespace attnlab::training {

class HistoryRecorder {
public:
    // `earlier`: the history this run continues (resume: this run's own up to its checkpoint; init:
    // the package's, whose last point becomes this stage's step 0), or none (`probes` start it).
    HistoryRecorder(const PackageConfig& config, model::Transformer model, const std::string& tokenizer_model,
                    const std::vector<std::pair<std::string, std::string>>& probes, int every,
                    std::optional<AttentionHistory> earlier, bool new_stage);
    ~HistoryRecorder();

    // Whether the schedule records after this run's step `step` (0 = before the first).
    bool due(int64_t step) const;
    // Records the point of this run's step `step` (replacing one recorded at the same step: an
    // epoch's end after a scheduled point keeps the epoch's figures).
    void record(int64_t step, int epochs, double train_loss, double valid_loss = -1, double valid_bleu = -1);
    const AttentionHistory& history() const { return m_history; }
    std::string bytes() const { return attentionHistoryBytes(m_history); }

private:
    std::unique_ptr<decoding::Engine> m_engine;
    model::Transformer m_model;
    AttentionHistory m_history;
    int m_stage = 0;
    int64_t m_step_offset = 0;
    int m_epoch_offset = 0;
};

// Probe sentences from a file of "source<TAB>reference" lines; InputError naming the file and line.
std::vector<std::pair<std::string, std::string>> readProbes(const std::string& path);

}  // namespace attnlab::training
