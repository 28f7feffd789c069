#include "training/history_recorder.h"

#include "decoding/engine.h"

#include <attnlab/errors.h>
#include <attnlab/text_io.h>
#include <attnlab/tokenizer.h>

#include <torch/torch.h>

#include <cmath>

namespace attnlab::training {

HistoryRecorder::HistoryRecorder(const PackageConfig& config, model::Transformer model,
                                 const std::string& tokenizer_model,
                                 const std::vector<std::pair<std::string, std::string>>& probes, int every,
                                 std::optional<AttentionHistory> earlier, bool new_stage)
    : m_engine(std::make_unique<decoding::Engine>(config, model, std::make_unique<Tokenizer>(tokenizer_model))),
      m_model(model) {
    if (earlier && !earlier->points.empty()) {
        m_history = std::move(*earlier);
        if (m_history.n_layers != int(config.model.n_layers) || m_history.n_head != int(config.model.n_head))
            throw InputError("the attention history to continue was recorded with " +
                             std::to_string(m_history.n_layers) + " layers x " + std::to_string(m_history.n_head) +
                             " heads; this model has " + std::to_string(config.model.n_layers) + " x " +
                             std::to_string(config.model.n_head));
        if (new_stage) {  // it begins where the history ends; the file says so from now on
            const HistoryPoint& last = m_history.points.back();
            m_history.stage = last.stage + 1;
            m_history.stage_step = last.step;
            m_history.stage_epoch = last.epoch;
        }
        // Resumed: the stage as the file records it (even before the stage's first point).
        m_stage = m_history.stage;
        m_step_offset = m_history.stage_step;
        m_epoch_offset = m_history.stage_epoch;
        m_history.record_every = every;
        return;
    }
    if (probes.empty()) throw InputError("--record-attention: no probe sentences");
    if (config.model.decoderLayers() != config.model.encoderLayers())
        throw ConfigError("--record-attention: the history format needs as many decoder layers as encoder layers (" +
                          std::to_string(config.model.decoderLayers()) + " vs " +
                          std::to_string(config.model.encoderLayers()) + ")");
    m_history.n_layers = int(config.model.n_layers);
    m_history.n_head = int(config.model.n_head);
    m_history.record_every = every;
    std::vector<std::string> sources, targets;
    for (const auto& [s, t] : probes) sources.push_back(s), targets.push_back(t);
    model->eval();
    const auto forced = m_engine->teacherForce(sources, targets, {});
    model->train();
    for (size_t i = 0; i < probes.size(); ++i)
        m_history.probes.push_back(
            {sources[i], targets[i], forced[i].source_pieces, forced[i].best.pieces, forced[i].decoder_input_pieces});
}

HistoryRecorder::~HistoryRecorder() = default;

bool HistoryRecorder::due(int64_t step) const {
    const int every = std::max(1, m_history.record_every);
    if (step == 0 || step % every == 0) return true;
    for (int64_t s = 25; s < every; s *= 2)
        if (step == s) return true;
    return false;
}

void HistoryRecorder::record(int64_t step, int epochs, double train_loss, double valid_loss, double valid_bleu) {
    std::vector<std::string> sources, targets;
    for (const auto& p : m_history.probes) sources.push_back(p.source), targets.push_back(p.target);
    std::vector<TranslationResult> forced;
    {
        torch::NoGradGuard no_grad;
        m_model->eval();
        forced = m_engine->teacherForce(sources, targets, {});
        m_model->train();
    }
    HistoryPoint p;
    p.stage = m_stage;
    p.step = m_step_offset + step;
    p.epoch = m_epoch_offset + epochs;
    auto finite = [](double v) { return std::isfinite(v) ? v : -1.0; };  // a diverged run: not measured
    p.train_loss = finite(train_loss);
    p.valid_loss = finite(valid_loss);
    p.valid_bleu = finite(valid_bleu);
    for (size_t i = 0; i < forced.size(); ++i) {
        if (forced[i].source_pieces != m_history.probes[i].source_pieces ||
            forced[i].best.pieces != m_history.probes[i].target_pieces)
            throw InputError("probe " + std::to_string(i + 1) + " is tokenized differently from the history's");
        p.maps.push_back(
            {std::move(forced[i].encoder_self), std::move(forced[i].decoder_self), std::move(forced[i].cross)});
    }
    auto& points = m_history.points;
    // A new stage's start is the point the stage before it ended with: the same weights.
    if (!points.empty() && points.back().step == p.step && points.back().stage != m_stage) return;
    if (!points.empty() && points.back().step == p.step) {
        if (train_loss < 0) p.train_loss = points.back().train_loss;
        points.back() = std::move(p);
    } else {
        points.push_back(std::move(p));
    }
}

std::vector<std::pair<std::string, std::string>> readProbes(const std::string& path) {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& line : readTextLines(path)) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        const auto tab = line.find('\t');
        if (tab == std::string::npos || tab == 0 || tab + 1 >= line.size() ||
            line.find('\t', tab + 1) != std::string::npos)
            throw InputError(path + ": probe " + std::to_string(out.size() + 1) +
                             " is not source<TAB>reference (one tab between two sentences)");
        out.emplace_back(line.substr(0, tab), line.substr(tab + 1));
    }
    if (out.empty()) throw InputError(path + ": no probe sentences (source<TAB>reference per line)");
    return out;
}

}  // namespace attnlab::training
