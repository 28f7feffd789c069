#include <attnlab/errors.h>
#include <attnlab/result_json.h>

#include "util/atomic_file.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>

namespace attnlab {
using nlohmann::json;

namespace {
// Six decimals keep a file readable and small; rows still sum to 1 within 1e-5.
double round6(float v) { return std::round(double(v) * 1e6) / 1e6; }

json matrixJson(const Matrix& m) {
    json rows = json::array();
    for (const auto& r : m) {
        json row = json::array();
        for (float v : r) row.push_back(round6(v));
        rows.push_back(std::move(row));
    }
    return rows;
}

json mapsJson(const LayerHeadMaps& maps) {
    json layers = json::array();
    for (const auto& layer : maps) {
        json heads = json::array();
        for (const auto& head : layer) heads.push_back(matrixJson(head));
        layers.push_back(std::move(heads));
    }
    return layers;
}

json rolloutJson(const std::vector<Matrix>& maps) {
    json layers = json::array();
    for (const auto& m : maps) layers.push_back(matrixJson(m));
    return layers;
}

// The logit lens's cells, [decoder layer][position], each with its most probable pieces.
json lensJson(const LogitLens& lens) {
    json layers = json::array();
    for (const auto& layer : lens.layers) {
        json cells = json::array();
        for (const LogitLensCell& c : layer) {
            json top = json::array();
            for (const LensPrediction& p : c.top)
                top.push_back({{"piece", p.piece}, {"id", p.id}, {"probability", round6(float(p.probability))}});
            cells.push_back({{"top", std::move(top)},
                             {"chosen_probability", round6(float(c.chosen_probability))},
                             {"chosen_rank", c.chosen_rank}});
        }
        layers.push_back(std::move(cells));
    }
    return {{"layers", std::move(layers)}};
}

// "Why `chosen` and not `alternative` at `step`": the question as asked, the piece it was read as, both
// log-probabilities, the saliency of their difference and its value zeroing per layer of each kind.
json contrastiveJson(const Contrastive& c) {
    return {
        {"step", c.query.step},
        {"asked", c.query.alternative},
        {"chosen", c.chosen},
        {"alternative", c.alternative},
        {"chosen_log_probability", c.chosen_log_probability},
        {"alternative_log_probability", c.alternative_log_probability},
        {"saliency", {{"source", matrixJson({c.saliency_source})[0]}, {"target", matrixJson({c.saliency_target})[0]}}},
        {"value_zeroing",
         {{"encoder_self", matrixJson(c.zeroing_encoder_self)},
          {"decoder_self", matrixJson(c.zeroing_decoder_self)},
          {"cross", matrixJson(c.zeroing_cross)}}}};
}

// The optional sections of one sentence.
void addExtras(json& s, const TranslationResult& r, const AttentionJsonExtras& extras, size_t index) {
    if (!extras.value_norms.empty()) {
        const ValueNorms& n = extras.value_norms.at(index);
        s["value_norms"] = {{"encoder_self", n.encoder_self}, {"decoder_self", n.decoder_self}, {"cross", n.cross}};
        s["attention_value_norm"] = {{"encoder_self", mapsJson(weightedByValueNorms(r.encoder_self, n.encoder_self))},
                                     {"decoder_self", mapsJson(weightedByValueNorms(r.decoder_self, n.decoder_self))},
                                     {"cross", mapsJson(weightedByValueNorms(r.cross, n.cross))}};
    }
    if (!extras.saliency.empty()) {
        const Saliency& g = extras.saliency.at(index);
        s[kSaliencyName] = {{"source", matrixJson(g.source)}, {"target", matrixJson(g.target)}};
    }
    if (!extras.contributions.empty()) {
        json methods = json::object();
        for (const Contributions& c : extras.contributions.at(index))
            methods[contributionMethodName(c.method)] = {{"source", matrixJson(c.source)},
                                                         {"target", matrixJson(c.target)},
                                                         {"encoder_self", rolloutJson(c.encoder_self)},
                                                         {"decoder_self", rolloutJson(c.decoder_self)},
                                                         {"cross", rolloutJson(c.cross)}};
        s["contributions"] = std::move(methods);
    }
    if (!extras.logit_lens.empty()) s["logit_lens"] = lensJson(extras.logit_lens.at(index));
    if (!extras.contrastive.empty()) {
        const auto& entry = extras.contrastive.at(index);
        s["contrastive"] = entry.answer ? contrastiveJson(*entry.answer) : json(nullptr);
        if (!entry.answer) s["contrastive_skipped"] = entry.skipped;
    }
    if (extras.rollout) {
        const auto encoder = attentionRollout(r.encoder_self);
        s["rollout"] = {
            {"encoder_self", rolloutJson(encoder)},
            {"decoder_self", rolloutJson(attentionRollout(r.decoder_self))},
            {"cross", rolloutJson(encoder.empty() ? std::vector<Matrix>{} : crossRollout(r.cross, encoder.back()))}};
    }
}

json hypothesisJson(const Hypothesis& h) {
    return {{"text", h.text},        {"ids", h.ids},
            {"pieces", h.pieces},    {"token_log_probs", h.token_log_probs},
            {"score", h.score},      {"normalized_score", h.normalized_score},
            {"finished", h.finished}};
}
}  // namespace

std::string attentionJson(const std::vector<TranslationResult>& results, const ModelInfo& model,
                          const DecodingOptions& o, const AttentionJsonExtras& extras) {
    if (!extras.value_norms.empty() && extras.value_norms.size() != results.size())
        throw InternalError("attention JSON: value norms for " + std::to_string(extras.value_norms.size()) + " of " +
                            std::to_string(results.size()) + " results");
    if (!extras.saliency.empty() && extras.saliency.size() != results.size())
        throw InternalError("attention JSON: saliency for " + std::to_string(extras.saliency.size()) + " of " +
                            std::to_string(results.size()) + " results");
    if (!extras.contributions.empty() && extras.contributions.size() != results.size())
        throw InternalError("attention JSON: contributions for " + std::to_string(extras.contributions.size()) +
                            " of " + std::to_string(results.size()) + " results");
    if (!extras.logit_lens.empty() && extras.logit_lens.size() != results.size())
        throw InternalError("attention JSON: the logit lens for " + std::to_string(extras.logit_lens.size()) + " of " +
                            std::to_string(results.size()) + " results");
    if (!extras.contrastive.empty() && extras.contrastive.size() != results.size())
        throw InternalError("attention JSON: contrastive for " + std::to_string(extras.contrastive.size()) + " of " +
                            std::to_string(results.size()) + " results");
    json root;
    root["format"] = "attnlab-attention";
    root["version"] = kAttentionJsonVersion;
    root["model"] = {{"package", model.package_dir},
                     {"source_lang", model.config.source_lang},
                     {"target_lang", model.config.target_lang},
                     {"n_layers", model.config.model.encoderLayers()},
                     {"n_dec_layers", model.config.model.decoderLayers()},
                     {"n_head", model.config.model.n_head},
                     {"d_model", model.config.model.d_model},
                     {"device", model.device}};
    root["decoding"] = {{"beam_size", o.beam_size},
                        {"length_penalty", o.length_penalty},
                        {"max_length", o.max_length},
                        {"max_length_ratio", o.max_length_ratio},
                        {"max_length_offset", o.max_length_offset},
                        {"min_length", o.min_length},
                        {"nbest", o.nbest}};
    json sentences = json::array();
    for (size_t i = 0; i < results.size(); ++i) {
        const TranslationResult& r = results[i];
        json s;
        s["index"] = i;
        s["source"] = r.source_text;
        s["source_ids"] = r.source_ids;
        s["source_pieces"] = r.source_pieces;
        s["decoder_input_pieces"] = r.decoder_input_pieces;
        s["decoder_starts_from_zero"] = r.decoder_starts_from_zero;
        s["translation"] = r.best.text;
        s["target_ids"] = r.best.ids;
        s["target_pieces"] = r.best.pieces;
        s["score"] = r.best.score;
        s["normalized_score"] = r.best.normalized_score;
        s["finished"] = r.best.finished;
        s["token_log_probs"] = r.best.token_log_probs;
        s["confidence"] = {{"mean_log_prob", r.confidence.mean_log_prob},
                           {"probability", r.confidence.probability},
                           {"calibrated", r.confidence.calibrated},
                           {"threshold", r.confidence.threshold},
                           {"low", r.confidence.low}};
        s["seconds"] = r.seconds;
        json nb = json::array();
        for (const auto& h : r.nbest) nb.push_back(hypothesisJson(h));
        s["nbest"] = std::move(nb);
        s["attention"] = {{"encoder_self", mapsJson(r.encoder_self)},
                          {"decoder_self", mapsJson(r.decoder_self)},
                          {"cross", mapsJson(r.cross)}};
        addExtras(s, r, extras, i);
        json steps = json::array();
        for (const auto& st : r.steps) {
            json c = json::array();
            for (const auto& cand : st.candidates)
                c.push_back({{"id", cand.id}, {"piece", cand.piece}, {"p", round6(cand.probability)}});
            steps.push_back({{"id", st.chosen_id},
                             {"piece", st.chosen_piece},
                             {"p", round6(st.chosen_probability)},
                             {"candidates", std::move(c)}});
        }
        s["steps"] = std::move(steps);
        s["warnings"] = r.warnings;
        sentences.push_back(std::move(s));
    }
    root["sentences"] = std::move(sentences);
    return root.dump() + "\n";
}

void writeAttentionJson(const std::string& path, const std::vector<TranslationResult>& results, const ModelInfo& model,
                        const DecodingOptions& options, const AttentionJsonExtras& extras) {
    const std::string text = attentionJson(results, model, options, extras);
    util::saveToFile(path, text);
}

}  // namespace attnlab
