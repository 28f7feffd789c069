// The head lab's JSON and CSV (attnlab/head_lab_json.h): every key is written here.
#include <attnlab/errors.h>
#include <attnlab/head_lab_json.h>

#include "util/atomic_file.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <iomanip>
#include <sstream>

namespace attnlab {
using nlohmann::json;

namespace {
json skippedJson(const std::vector<SkippedPair>& skipped) {
    json out = json::array();
    for (const auto& k : skipped) out.push_back({{"pair", k.pair}, {"reason", k.reason}});
    return out;
}

// The keys every head-lab file begins with.
json fileHeader(const char* format, const ModelInfo& model) {
    return {{"format", format},
            {"version", kHeadLabJsonVersion},
            {"model",
             {{"package", model.package_dir},
              {"source_lang", model.config.source_lang},
              {"target_lang", model.config.target_lang},
              {"layers", model.config.model.encoderLayers()},
              {"decoder_layers", model.config.model.decoderLayers()},
              {"heads", model.config.model.n_head}}}};
}

json headJson(const HeadRef& h) {
    return {{"name", headName(h)}, {"kind", attentionKindName(h.kind)}, {"layer", h.layer}, {"head", h.head}};
}

json namesJson(const std::vector<HeadRef>& heads) {
    json names = json::array();
    for (const auto& h : heads) names.push_back(headName(h));
    return names;
}

json importanceJson(const ImportanceReport& imp) {
    json heads = json::array();
    for (const auto& h : imp.heads) {
        json j = headJson(h.head);
        j["bleu"] = h.bleu;
        j["chrf"] = h.chrf;
        j["bleu_drop"] = h.bleu_drop;
        heads.push_back(std::move(j));
    }
    json curve = json::array();
    for (const auto& p : imp.curve) {
        json point = {
            {"heads_removed", p.heads_removed}, {"bleu", p.bleu}, {"chrf", p.chrf}, {"removed", namesJson(p.removed)}};
        if (p.interval.resamples > 0)
            point["interval"] = {{"bleu_low", p.interval.low},
                                 {"bleu_high", p.interval.high},
                                 {"difference_low", p.interval.difference_low},
                                 {"difference_high", p.interval.difference_high},
                                 {"significant_loss", p.significantLoss()}};
        curve.push_back(std::move(point));
    }
    return {{"sentences", imp.sentences},
            {"skipped", skippedJson(imp.skipped)},
            {"baseline_bleu", imp.baseline_bleu},
            {"baseline_chrf", imp.baseline_chrf},
            {"bleu_signature", imp.bleu_signature},
            {"heads", std::move(heads)},
            {"curve", std::move(curve)},
            {"bootstrap_resamples", imp.bootstrap_resamples},
            {"removable_heads", imp.removable_heads < 0 ? json(nullptr) : json(imp.removable_heads)},
            {"rank_correlation",
             std::isfinite(imp.rank_correlation) && imp.gradient ? json(imp.rank_correlation) : json(nullptr)}};
}

json gradientJson(const GradientImportanceReport& g) {
    json heads = json::array();
    for (const auto& h : g.heads) {
        json j = headJson(h.head);
        j["raw"] = h.raw;
        j["normalized"] = h.normalized;
        heads.push_back(std::move(j));
    }
    return {{"sentences", g.sentences},
            {"skipped", skippedJson(g.skipped)},
            {"seconds", g.seconds},
            {"heads", std::move(heads)}};
}

json methodJson(const AlignmentMethodReport& m) {
    const auto& c = m.counts;
    return {{"method", alignmentMethodName(m.method)},
            {"aer", c.aer()},
            {"precision", c.precision()},
            {"recall", c.recall()},
            {"predicted", c.predicted},
            {"sure", c.sure},
            {"predicted_sure", c.predicted_sure},
            {"predicted_possible", c.predicted_possible}};
}

}  // namespace

namespace {
json comparisonJson(const HeadStatsReport& stats, const HeadStatsOther& other) {
    json c = fileHeader("attnlab-heads", *other.model).at("model");
    json heads = json::array();
    for (const auto& d : compareHeadStatistics(stats, *other.stats)) {
        json j = headJson(d.head);
        for (const auto& info : headStatisticInfos()) {
            const auto k = static_cast<size_t>(info.id);
            j[info.key] = {
                {"this", d.this_model[k]}, {"other", d.other_model[k]}, {"difference", d.difference(info.id)}};
        }
        heads.push_back(std::move(j));
    }
    return {{"model", std::move(c)},
            {"reversed", other.reversed},
            {"sentences", other.stats->sentences},
            {"skipped", skippedJson(other.stats->skipped)},
            {"heads", std::move(heads)}};
}
}  // namespace

std::string headsJson(const HeadStatsReport& stats, const ImportanceReport* importance, const ModelInfo& model,
                      const HeadStatsOther& other, const GradientImportanceReport* gradient) {
    json root = fileHeader("attnlab-heads", model);
    root["sentences"] = stats.sentences;
    root["skipped"] = skippedJson(stats.skipped);
    root["teacher_forced"] = stats.teacher_forced;
    root["histogram_radius"] = stats.histogram_radius;
    root["measure"] = mapMeasureName(stats.measure);
    json heads = json::array();
    for (const auto& h : stats.heads) {
        json j = headJson(h.head);
        j["rows"] = h.rows;
        json typical = json::object();
        for (const auto& info : headStatisticInfos()) {
            j[info.key] = h.value(info.id);
            typical[info.key] = h.typical_sentence[static_cast<size_t>(info.id)];
        }
        j["offset_histogram"] = h.offset_histogram;
        j["typical_sentence"] = std::move(typical);
        heads.push_back(std::move(j));
    }
    root["heads"] = std::move(heads);
    if (importance) root["importance"] = importanceJson(*importance);
    if (!gradient && importance && importance->gradient) gradient = &*importance->gradient;
    if (gradient) root["gradient_importance"] = gradientJson(*gradient);
    if (other.stats && other.model) root["comparison"] = comparisonJson(stats, other);
    return root.dump(1) + "\n";
}

std::string headStatsCsv(const HeadStatsReport& stats) {
    std::ostringstream out;
    out << "kind,layer,head,rows";
    for (const auto& info : headStatisticInfos()) out << "," << info.key;
    out << "\n" << std::setprecision(9);
    for (const auto& h : stats.heads) {
        out << attentionKindName(h.head.kind) << "," << h.head.layer << "," << h.head.head << "," << h.rows;
        for (const auto& info : headStatisticInfos()) out << "," << h.value(info.id);
        out << "\n";
    }
    return out.str();
}

std::string alignmentJson(const AlignmentReport& rep, const ModelInfo& model, const AlignmentReport* dev) {
    json root = fileHeader("attnlab-alignment", model);
    root["pairs"] = rep.pairs;
    root["skipped"] = skippedJson(rep.skipped);
    root["has_gold"] = rep.has_gold;
    root["threshold"] = rep.threshold;
    json methods = json::array();
    for (const auto& m : rep.methods) methods.push_back(methodJson(m));
    root["methods"] = std::move(methods);
    root["symmetrised"] = rep.symmetrised;
    root["best"] = rep.best >= 0 ? methodJson(rep.methods[static_cast<size_t>(rep.best)]) : json(nullptr);
    root["best_head"] =
        rep.best_head >= 0 ? methodJson(rep.methods[static_cast<size_t>(rep.best_head)]) : json(nullptr);
    root["best_layer"] =
        rep.best_layer >= 0 ? methodJson(rep.methods[static_cast<size_t>(rep.best_layer)]) : json(nullptr);
    if (dev && dev->best >= 0) {
        const auto& chosen = dev->methods[static_cast<size_t>(dev->best)];
        const auto* here = rep.find(chosen.method);
        root["dev"] = {{"pairs", dev->pairs},
                       {"skipped", skippedJson(dev->skipped)},
                       {"chosen", methodJson(chosen)},
                       {"on_these_pairs", here ? methodJson(*here) : json(nullptr)}};
    }
    return root.dump(1) + "\n";
}

std::string alignmentLinksText(const AlignmentReport& rep, const AlignmentMethod& method) {
    const auto* m = rep.find(method);
    if (!m) throw InputError("alignment method " + alignmentMethodName(method) + " is not one of this model's");
    std::string out;
    for (const auto& links : m->links) out += pharaohLine(links) + "\n";
    return out;
}

void writeHeadLabFile(const std::string& path, const std::string& text) { util::saveToFile(path, text); }

}  // namespace attnlab
