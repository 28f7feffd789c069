#include <attnlab/teaching_json.h>

#include "util/atomic_file.h"

#include <nlohmann/json.hpp>

namespace attnlab {
using nlohmann::json;

namespace {
json traceStepsJson(const std::vector<TraceStep>& trace) {
    json steps = json::array();
    for (size_t t = 0; t < trace.size(); ++t) {
        json hyps = json::array();
        for (const auto& h : trace[t].hypotheses)
            hyps.push_back({{"parent", h.parent},
                            {"token_id", h.token_id},
                            {"piece", h.piece},
                            {"log_prob", h.log_prob},
                            {"score", h.score},
                            {"normalized_score", h.normalized_score},
                            {"finished", h.finished},
                            {"pruned", h.pruned}});
        steps.push_back({{"step", t}, {"hypotheses", std::move(hyps)}});
    }
    return steps;
}
}  // namespace

std::string traceJson(const std::vector<TranslationResult>& results, const ModelInfo& model, const DecodingOptions& o) {
    json root;
    root["format"] = "attnlab-trace";
    root["version"] = kTraceJsonVersion;
    root["model"] = {{"package", model.package_dir},
                     {"source_lang", model.config.source_lang},
                     {"target_lang", model.config.target_lang}};
    root["decoding"] = {
        {"beam_size", o.beam_size}, {"length_penalty", o.length_penalty}, {"force_prefix", o.force_prefix}};
    json sentences = json::array();
    for (size_t i = 0; i < results.size(); ++i) {
        const auto& r = results[i];
        sentences.push_back({{"index", i},
                             {"source", r.source_text},
                             {"translation", r.best.text},
                             {"score", r.best.score},
                             {"normalized_score", r.best.normalized_score},
                             {"forced_tokens", r.forced_tokens},
                             {"forced_by_model", r.forced_by_model},
                             {"decoder_starts_from_zero", r.decoder_starts_from_zero},
                             {"steps", traceStepsJson(r.trace)}});
    }
    root["sentences"] = std::move(sentences);
    return root.dump(1) + "\n";
}

void writeTraceJson(const std::string& path, const std::vector<TranslationResult>& results, const ModelInfo& model,
                    const DecodingOptions& options) {
    util::saveToFile(path, traceJson(results, model, options));
}

std::string explanationJson(const AttentionExplanation& e) {
    json j;
    j["kind"] = attentionKindName(e.cell.kind);
    j["layer"] = e.cell.layer;
    j["head"] = e.cell.head;
    j["query"] = e.cell.query;
    j["key"] = e.cell.key;
    j["query_piece"] = e.query_piece;
    j["key_piece"] = e.key_piece;
    j["query_vector"] = e.query_vector;
    j["key_vector"] = e.key_vector;
    j["products"] = e.products;
    j["dot"] = e.dot;
    j["temperature"] = e.temperature;
    j["scaled"] = e.scaled;
    j["masked"] = e.masked;
    j["mask_reason"] = e.mask_reason;
    j["row_pieces"] = e.row_pieces;
    j["row_scaled"] = e.row_scaled;  // every key's whole score: content, plus the relative part below
    j["row_masked"] = e.row_masked;
    j["row_weights"] = e.row_weights;
    j["weight"] = e.weight;
    j["value_vectors"] = e.value_vectors;
    j["head_output"] = e.head_output;
    j["score"] = e.score;  // scaled, plus relative_scaled with relative positions
    if (e.relative) {      // a self-attention with relative positions (docs/ctranslate2.md)
        j["relative"] = {{"max_relative_positions", e.max_relative_positions},
                         {"offset", e.relative_offset},
                         {"clipped_offset", e.relative_clipped},
                         {"key_vector", e.relative_key},
                         {"products", e.relative_products},
                         {"dot", e.relative_dot},
                         {"scaled", e.relative_scaled},
                         {"row", e.row_relative_scaled},  // the relative part of every key's score
                         {"value_vector", e.relative_value}};
    }
    return j.dump(1) + "\n";
}

}  // namespace attnlab
