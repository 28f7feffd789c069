// The head lab's JSON and CSV (attnlab/head_lab_json.h): every key is written here.
#include <attnlab/errors.h>
#include <attnlab/head_lab_json.h>

#include "headlab/corpus_lines.h"
#include "io/head_lab_merge.h"
#include "util/atomic_file.h"
#include "util/json_number.h"
#include "util/json_parse.h"
#include "util/small_file.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <iomanip>
#include <limits>
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
        if (!stats.sentence_lines.empty())
            j["sentence_statistics"] = {{"rows", h.sentence_rows}, {"sums", h.sentence_sums}};
        heads.push_back(std::move(j));
    }
    root["heads"] = std::move(heads);
    if (!stats.sentence_lines.empty()) root["sentence_lines"] = stats.sentence_lines;
    if (importance) root["importance"] = importanceJson(*importance);
    if (!gradient && importance && importance->gradient) gradient = &*importance->gradient;
    if (gradient) root["gradient_importance"] = gradientJson(*gradient);
    if (other.stats && other.model) root["comparison"] = comparisonJson(stats, other);
    return root.dump(1) + "\n";
}

namespace {
HeadRef headOf(const json& j) {
    return {parseAttentionKind(j.at("kind").get<std::string>(), "\"kind\""), j.at("layer").get<int>(),
            j.at("head").get<int>()};
}

std::vector<SkippedPair> skippedOf(const json& j) {
    std::vector<SkippedPair> out;
    for (const auto& k : j) out.push_back({k.at("pair").get<int>(), k.at("reason").get<std::string>()});
    return out;
}

HeadStatsReport statsOf(const json& root) {
    HeadStatsReport rep;
    rep.sentences = root.at("sentences").get<int>();
    rep.skipped = skippedOf(root.at("skipped"));
    rep.teacher_forced = root.at("teacher_forced").get<bool>();
    rep.histogram_radius = root.at("histogram_radius").get<int>();
    const auto measure = parseMapMeasure(root.at("measure").get<std::string>());
    if (!measure) throw InputError("\"measure\" " + root["measure"].dump() + " is not one AttnLab knows");
    rep.measure = *measure;
    for (const auto& j : root.at("heads")) {
        HeadStats h;
        h.head = headOf(j);
        h.rows = j.at("rows").get<int64_t>();
        for (const auto& info : headStatisticInfos()) {
            h.values[size_t(info.id)] = j.at(info.key).get<double>();
            h.typical_sentence[size_t(info.id)] = j.at("typical_sentence").at(info.key).get<int>();
        }
        h.offset_histogram = j.at("offset_histogram").get<std::vector<double>>();
        rep.heads.push_back(std::move(h));
    }
    return rep;
}

ImportanceReport importanceOf(const json& j) {
    ImportanceReport imp;
    imp.sentences = j.at("sentences").get<int>();
    imp.skipped = skippedOf(j.at("skipped"));
    imp.baseline_bleu = j.at("baseline_bleu").get<double>();
    imp.baseline_chrf = j.at("baseline_chrf").get<double>();
    imp.bleu_signature = j.at("bleu_signature").get<std::string>();
    for (const auto& h : j.at("heads"))
        imp.heads.push_back(
            {headOf(h), h.at("bleu").get<double>(), h.at("chrf").get<double>(), h.at("bleu_drop").get<double>()});
    imp.bootstrap_resamples = j.at("bootstrap_resamples").get<int>();
    for (const auto& p : j.at("curve")) {
        PruningPoint point;
        point.heads_removed = p.at("heads_removed").get<int>();
        point.bleu = p.at("bleu").get<double>();
        point.chrf = p.at("chrf").get<double>();
        for (const auto& name : p.at("removed")) point.removed.push_back(parseHeadList(name.get<std::string>()).at(0));
        if (p.contains("interval")) {
            const json& i = p["interval"];
            point.interval = {imp.bootstrap_resamples, i.at("bleu_low").get<double>(), i.at("bleu_high").get<double>(),
                              i.at("difference_low").get<double>(), i.at("difference_high").get<double>()};
        }
        imp.curve.push_back(std::move(point));
    }
    imp.removable_heads = j.at("removable_heads").is_null() ? -1 : j["removable_heads"].get<int>();
    imp.rank_correlation = j.at("rank_correlation").is_null() ? std::nan("") : j["rank_correlation"].get<double>();
    return imp;
}

ModelInfo modelOf(const json& j) {
    ModelInfo m;
    m.package_dir = j.at("package").get<std::string>();
    m.config.source_lang = j.at("source_lang").get<std::string>();
    m.config.target_lang = j.at("target_lang").get<std::string>();
    m.config.model.n_layers = j.at("layers").get<int64_t>();
    m.config.model.n_dec_layers = j.at("decoder_layers").get<int64_t>();
    m.config.model.n_head = j.at("heads").get<int64_t>();
    return m;
}
// The document's heads within its model's layers and heads: a view sizes its grids from them, and a layer of -1 or
// of 10^6 in a corrupt or hand-made file would be written outside the grid or ask for gigabytes.
void checkHeadsFit(const HeadsFile& f, const std::string& path) {
    const auto& m = f.model.config.model;
    constexpr int64_t kMost = 4096;  // layers or heads a model may have here; NLLB-200-3.3B has 24 and 16
    if (m.n_layers < 1 || m.n_layers > kMost || m.n_dec_layers < 0 || m.n_dec_layers > kMost || m.n_head < 1 ||
        m.n_head > kMost)
        throw InputError(path + ": \"model\" gives " + std::to_string(m.n_layers) + " encoder layers, " +
                         std::to_string(m.n_dec_layers) + " decoder layers and " + std::to_string(m.n_head) +
                         " heads: not a model's shape");
    auto check = [&](const HeadRef& h) {
        if (h.layer < 0 || h.layer >= m.layers(h.kind) || h.head < 0 || h.head >= m.n_head)
            throw InputError(path + ": " + attentionKindName(h.kind) + " layer " + std::to_string(h.layer) + " head " +
                             std::to_string(h.head) + " is not a head of its model (" +
                             std::to_string(m.layers(h.kind)) + " layers of " + std::to_string(m.n_head) + " heads)");
    };
    for (const auto& h : f.stats.heads) check(h.head);
    if (f.importance)
        for (const auto& h : f.importance->heads) check(h.head);
}
}  // namespace

namespace {
// One method of an alignment document: its name and counts, each a whole number, and counts a link set can have
// (|A&S| <= |A&P| <= |A|, |A&S| <= |S|: gold's sure links are possible too).
AlignmentMethodReport methodOf(const json& j, const std::string& path, const ModelInfo& model) {
    AlignmentMethodReport m{parseAlignmentMethod(j.at("method").get<std::string>()), {}, {}};
    const auto& shape = model.config.model;
    if (auto why = alignmentMethodProblem(m.method, int(shape.decoderLayers()), int(shape.n_head)))
        throw InputError(path + ": method " + j["method"].dump() + " is not one of its model's: " + *why);
    const std::string where = "method " + j["method"].dump() + "'s ";
    auto& c = m.counts;
    c.predicted = util::wholeNumberAt(j, "predicted", 0, INT64_MAX, path, where);
    c.sure = util::wholeNumberAt(j, "sure", 0, INT64_MAX, path, where);
    c.predicted_sure = util::wholeNumberAt(j, "predicted_sure", 0, std::min(c.predicted, c.sure), path, where);
    c.predicted_possible = util::wholeNumberAt(j, "predicted_possible", c.predicted_sure, c.predicted, path, where);
    return m;
}

AlignmentFile alignmentFileOf(const json& root, const std::string& path) {
    if (root.contains("run") && root["run"].is_object() && root["run"].contains("shard"))
        throw InputError(path + ": one part of a sharded run: put the parts together first (attnlab-cli merge)");
    if (!root.at("has_gold").get<bool>())
        throw InputError(path +
                         ": alignments without gold: no AER to show (attnlab-cli align --gold writes the scores)");
    AlignmentFile f{{}, modelOf(root.at("model"))};
    const auto& shape = f.model.config.model;
    if (shape.decoderLayers() < 1 || shape.decoderLayers() > 4096 || shape.n_head < 1 || shape.n_head > 4096)
        throw InputError(path + ": \"model\" gives " + std::to_string(shape.decoderLayers()) + " decoder layers of " +
                         std::to_string(shape.n_head) + " heads: not a model's shape");
    AlignmentReport& rep = f.report;
    rep.pairs = int(util::wholeNumberAt(root, "pairs", 0, util::kMaxJsonLines, path));
    for (const auto& k : root.at("skipped"))
        rep.skipped.push_back({int(util::wholeNumberAt(k, "pair", 1, rep.pairs, path, "a skipped pair's ")),
                               k.at("reason").get<std::string>()});
    rep.has_gold = true;
    rep.threshold = root.at("threshold").get<double>();
    rep.symmetrised = root.at("symmetrised").get<bool>();
    for (const auto& j : root.at("methods")) rep.methods.push_back(methodOf(j, path, f.model));
    if (rep.methods.empty()) throw InputError(path + ": no alignment method scored");
    headlab::markBest(rep);
    return f;
}

HeadsFile headsFileOf(const json& root, const std::string& path) {
    if (root.contains("sentence_lines"))
        throw InputError(path + ": one part of a sharded run: put the parts together first (attnlab-cli merge)");
    HeadsFile f{statsOf(root), std::nullopt, modelOf(root.at("model"))};
    if (root.contains("importance")) f.importance = importanceOf(root["importance"]);
    checkHeadsFit(f, path);
    return f;
}

// `read` over the document in `path`, every failure an InputError naming the file (`what`: the kind expected).
template <typename Read>
auto readingDocument(const std::string& path, const char* what, Read read) {
    try {
        return read(util::parseJson(util::readSmallFile(path, size_t(1) << 30), path));
    } catch (const PackageError& e) {
        throw InputError(e.what());
    } catch (const ConfigError& e) {
        throw InputError(path + ": " + e.what());
    } catch (const json::exception& e) {
        throw InputError(path + ": not a complete " + what + " document: " + e.what());
    }
}

std::string formatOf(const json& root) { return root.is_object() ? root.value("format", "") : ""; }
}  // namespace

HeadsFile readHeadsJson(const std::string& path) {
    return readingDocument(path, "heads", [&](const json& root) {
        if (formatOf(root) != "attnlab-heads")
            throw InputError(path +
                             ": not head statistics (\"format\": \"attnlab-heads\"; attnlab-cli heads --json, "
                             "attnlab-cli merge or Export JSON… write them)");
        return headsFileOf(root, path);
    });
}

AlignmentFile readAlignmentJson(const std::string& path) {
    return readingDocument(path, "alignment", [&](const json& root) {
        if (formatOf(root) != "attnlab-alignment")
            throw InputError(path +
                             ": not alignment scores (\"format\": \"attnlab-alignment\"; attnlab-cli align --json "
                             "and attnlab-cli merge write them)");
        return alignmentFileOf(root, path);
    });
}

HeadLabResults readHeadLabResults(const std::string& path) {
    return readingDocument(path, "head lab", [&](const json& root) {
        HeadLabResults r;
        if (formatOf(root) == "attnlab-heads")
            r.heads = headsFileOf(root, path);
        else if (formatOf(root) == "attnlab-alignment")
            r.alignment = alignmentFileOf(root, path);
        else
            throw InputError(path +
                             ": neither head statistics nor alignment scores (\"format\" \"attnlab-heads\" or "
                             "\"attnlab-alignment\": attnlab-cli heads --json, align --json and merge write them)");
        return r;
    });
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

namespace {
// Everything of an alignment document but its header and "dev".
json alignmentBody(const AlignmentReport& rep) {
    json root;
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
    return root;
}

json onThesePairs(const AlignmentReport& rep, const AlignmentMethod& chosen) {
    const auto* here = rep.find(chosen);
    return here ? methodJson(*here) : json(nullptr);
}
}  // namespace

std::string alignmentJson(const AlignmentReport& rep, const ModelInfo& model, const AlignmentReport* dev) {
    json root = fileHeader("attnlab-alignment", model);
    root.update(alignmentBody(rep));
    if (dev && dev->best >= 0) {
        const auto& chosen = dev->methods[static_cast<size_t>(dev->best)];
        root["dev"] = {{"pairs", dev->pairs},
                       {"skipped", skippedJson(dev->skipped)},
                       {"chosen", methodJson(chosen)},
                       {"on_these_pairs", onThesePairs(rep, chosen.method)}};
    }
    return root.dump(1) + "\n";
}

namespace headlab_merge {
namespace {
// A part's skipped pairs, their "pair" as the corpus counts them (the CLI writes them so): each a line of the part.
void appendSkipped(std::vector<SkippedPair>& to, const PartDocument& part) {
    for (const auto& k : part.doc->at("skipped"))
        to.push_back({int(util::wholeNumberAt(k, "pair", part.first_line + 1, part.first_line + part.lines, part.path,
                                              "a skipped line's ")),
                      k.at("reason").get<std::string>()});
}

// The dev set is read whole by every part: its object must be the same in each (but for its scores here).
json devPart(const json& doc) {
    if (!doc.contains("dev")) return nullptr;
    json dev = doc["dev"];
    dev.erase("on_these_pairs");
    return dev;
}
}  // namespace

json mergeAlignment(const std::vector<PartDocument>& parts) {
    const json& first = *parts.front().doc;
    AlignmentReport rep;
    rep.has_gold = first.at("has_gold").get<bool>();
    rep.threshold = first.at("threshold").get<double>();
    rep.symmetrised = first.at("symmetrised").get<bool>();
    for (const auto& m : first.at("methods"))
        rep.methods.push_back({parseAlignmentMethod(m.at("method").get<std::string>()), {}, {}});
    for (const auto& part : parts) {
        const json& doc = *part.doc;
        const json& methods = doc.at("methods");
        if (methods.size() != rep.methods.size() || doc.at("threshold") != first.at("threshold") ||
            devPart(doc) != devPart(first))
            throw InputError(part.path + ": its alignment methods, threshold or development set differ from " +
                             parts.front().path + "'s");
        // Every pair of the part is counted: aligned or skipped.
        rep.pairs += int(util::wholeNumberAt(doc, "pairs", part.lines, part.lines, part.path));
        appendSkipped(rep.skipped, part);
        for (size_t m = 0; m < methods.size(); ++m) {
            const json& j = methods[m];
            if (j.at("method") != first["methods"][m].at("method"))
                throw InputError(part.path + ": method " + j.at("method").dump() + " where " + parts.front().path +
                                 " has " + first["methods"][m].at("method").dump());
            auto& c = rep.methods[m].counts;
            const auto add = [&](int64_t& to, const char* key) {
                const std::string where = "method " + j["method"].dump() + "'s ";
                to = util::checkedSum(to, util::wholeNumberAt(j, key, 0, INT64_MAX, part.path, where), part.path,
                                      where + "\"" + key + "\"");
            };
            add(c.predicted, "predicted");
            add(c.sure, "sure");
            add(c.predicted_sure, "predicted_sure");
            add(c.predicted_possible, "predicted_possible");
        }
    }
    if (rep.has_gold) headlab::markBest(rep);
    json root = first;
    root.update(alignmentBody(rep));
    if (first.contains("dev") && first["dev"].at("chosen").is_object())
        root["dev"]["on_these_pairs"] =
            onThesePairs(rep, parseAlignmentMethod(first["dev"]["chosen"].at("method").get<std::string>()));
    return root;
}

namespace {
// Each head's statistics of the parts together: means weighted by rows (summed in part order), the offset
// histogram likewise, the typical sentences (as HeadStatsAccumulator::report chooses them) from every sentence's
// own rows and sums, which the parts carry ("sentence_statistics", "sentence_lines") and the merged result does not.
json mergedHead(const std::vector<PartDocument>& parts, size_t h, const std::vector<int>& lines) {
    json head = (*parts.front().doc)["heads"][h];
    int64_t rows = 0;
    std::array<double, kHeadStatisticCount> sums{};
    std::vector<double> histogram(head.at("offset_histogram").size(), 0.0);
    std::vector<int> sentence_rows;
    std::vector<std::array<double, kHeadStatisticCount>> sentence_sums;
    for (const auto& part : parts) {
        const json& j = (*part.doc)["heads"][h];
        if (j.at("name") != head.at("name") || j.at("offset_histogram").size() != histogram.size())
            throw InputError(part.path + ": head " + j.at("name").dump() + " where " + parts.front().path + " has " +
                             head.at("name").dump());
        const int64_t n = util::wholeNumberAt(j, "rows", 0, INT64_MAX, part.path, "head " + j["name"].dump() + "'s ");
        rows = util::checkedSum(rows, n, part.path, "head " + j["name"].dump() + "'s \"rows\"");
        for (const auto& info : headStatisticInfos()) sums[size_t(info.id)] += j.at(info.key).get<double>() * double(n);
        for (size_t b = 0; b < histogram.size(); ++b)
            histogram[b] += j["offset_histogram"][b].get<double>() * double(n);
        const json& detail = j.at("sentence_statistics");
        for (const auto& r : detail.at("rows"))
            sentence_rows.push_back(int(util::wholeNumber(r, 0, util::kMaxJsonCount, part.path,
                                                          "head " + j["name"].dump() + "'s sentence rows")));
        for (const auto& s : detail.at("sums"))
            sentence_sums.push_back(s.get<std::array<double, kHeadStatisticCount>>());
    }
    if (sentence_rows.size() != lines.size() || sentence_sums.size() != lines.size())
        throw InputError(parts.front().path + "...: head " + head.at("name").dump() + " has statistics of " +
                         std::to_string(sentence_rows.size()) + " sentences for " + std::to_string(lines.size()));
    const double n = rows > 0 ? double(rows) : 1.0;
    int most_rows = 0;
    for (int r : sentence_rows) most_rows = std::max(most_rows, r);
    const int min_rows = std::min(3, most_rows);
    head["rows"] = rows;
    for (const auto& info : headStatisticInfos()) {
        const size_t k = size_t(info.id);
        const double mean = sums[k] / n;
        head[info.key] = mean;
        int best = -1;
        double best_gap = std::numeric_limits<double>::infinity();
        for (size_t s = 0; s < sentence_rows.size(); ++s) {
            if (sentence_rows[s] == 0 || sentence_rows[s] < min_rows) continue;
            const double gap = std::abs(sentence_sums[s][k] / sentence_rows[s] - mean);
            if (gap < best_gap) best_gap = gap, best = lines[s];
        }
        head["typical_sentence"][info.key] = best;
    }
    for (auto& b : histogram) b /= n;
    head["offset_histogram"] = histogram;
    head.erase("sentence_statistics");
    return head;
}
}  // namespace

json mergeHeads(const std::vector<PartDocument>& parts) {
    const json& first = *parts.front().doc;
    for (const char* key : {"importance", "gradient_importance", "comparison"})
        if (first.contains(key))
            throw InputError(parts.front().path + ": its \"" + key +
                             "\" is not merged (--importance, --gradient-importance and --compare-model run whole)");
    std::vector<int> lines;
    std::vector<SkippedPair> skipped;
    int sentences = 0;
    std::vector<PartDocument> kept;  // the parts with sentences of their own
    for (const auto& part : parts) {
        const json& doc = *part.doc;
        if (doc.at("measure") != first.at("measure") || doc.at("histogram_radius") != first.at("histogram_radius"))
            throw InputError(part.path + ": its measure or histogram differ from " + parts.front().path + "'s");
        // An empty part (more parts than the corpus has blocks, attnlab/partial_result.h): no head, nothing to merge.
        const int64_t part_sentences = util::wholeNumberAt(doc, "sentences", 0, part.lines, part.path);
        if (part_sentences == 0 && !doc.contains("sentence_lines")) {
            appendSkipped(skipped, part);
            continue;
        }
        if (!kept.empty() && doc.at("heads").size() != kept.front().doc->at("heads").size())
            throw InputError(part.path + ": its heads differ from " + kept.front().path + "'s");
        if (!doc.contains("sentence_lines"))
            throw InputError(part.path +
                             ": a whole run's statistics, without each sentence's (write parts with --shard)");
        for (const auto& l : doc["sentence_lines"])  // 0-based lines of the corpus, within the part's
            lines.push_back(int(util::wholeNumber(l, part.first_line, part.first_line + part.lines - 1, part.path,
                                                  "\"sentence_lines\"")));
        appendSkipped(skipped, part);
        sentences += int(part_sentences);
        kept.push_back(part);
    }
    json root = kept.empty() ? first : *kept.front().doc;
    root.erase("sentence_lines");
    root["sentences"] = sentences;
    root["skipped"] = skippedJson(skipped);
    if (kept.empty()) return root;  // an empty corpus
    json heads = json::array();
    for (size_t h = 0; h < root.at("heads").size(); ++h) heads.push_back(mergedHead(kept, h, lines));
    root["heads"] = std::move(heads);
    return root;
}

}  // namespace headlab_merge

std::string alignmentLinksText(const AlignmentReport& rep, const AlignmentMethod& method) {
    const auto* m = rep.find(method);
    if (!m) throw InputError("alignment method " + alignmentMethodName(method) + " is not one of this model's");
    std::string out;
    for (const auto& links : m->links) out += pharaohLine(links) + "\n";
    return out;
}

void writeHeadLabFile(const std::string& path, const std::string& text) { util::saveToFile(path, text); }

}  // namespace attnlab
