// The head lab's JSON and CSV (attnlab/head_lab_json.h): every key is written here.
#include <attnlab/errors.h>
#include <attnlab/head_lab_json.h>
#include <attnlab/importance_parts.h>
#include <attnlab/partial_result.h>

#include "headlab/corpus_lines.h"
#include "io/head_lab_merge.h"
#include "io/run_options.h"
#include "util/atomic_file.h"
#include "util/json_number.h"
#include "util/json_parse.h"
#include "util/small_file.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <iomanip>
#include <limits>
#include <map>
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
// The comparison of this model's statistics with the other model's (`model`: its "model" object).
json comparisonJson(const HeadStatsReport& stats, const HeadStatsReport& other, json model, bool reversed) {
    json heads = json::array();
    for (const auto& d : compareHeadStatistics(stats, other)) {
        json j = headJson(d.head);
        for (const auto& info : headStatisticInfos()) {
            const auto k = static_cast<size_t>(info.id);
            j[info.key] = {
                {"this", d.this_model[k]}, {"other", d.other_model[k]}, {"difference", d.difference(info.id)}};
        }
        heads.push_back(std::move(j));
    }
    return {{"model", std::move(model)},
            {"reversed", reversed},
            {"sentences", other.sentences},
            {"skipped", skippedJson(other.skipped)},
            {"heads", std::move(heads)}};
}

// The statistics' keys of a heads document; with each sentence's ("sentence_statistics", "sentence_lines") when the
// report kept them (a part of a sharded run).
json statisticsJson(const HeadStatsReport& stats) {
    json root;
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
    return root;
}
}  // namespace

std::string headsJson(const HeadStatsReport& stats, const ImportanceReport* importance, const ModelInfo& model,
                      const HeadStatsOther& other, const GradientImportanceReport* gradient) {
    json root = fileHeader("attnlab-heads", model);
    root.update(statisticsJson(stats));
    if (importance) root["importance"] = importanceJson(*importance);
    if (!gradient && importance && importance->gradient) gradient = &*importance->gradient;
    if (gradient) root["gradient_importance"] = gradientJson(*gradient);
    if (other.stats && other.model)
        root["comparison"] =
            comparisonJson(stats, *other.stats, fileHeader("attnlab-heads", *other.model).at("model"), other.reversed);
    return root.dump(1) + "\n";
}

namespace {
// A count a part or a results file carries (a corpus part's n-gram totals, an alignment method's links): a whole
// number from 0 to 2^40 (a corpus's are millions), so that its sum over kMaxShards parts stays below 2^57, and AER's
// predicted + sure (AlignmentCounts::aer) far below 2^63: exact, never overflowing.
constexpr int64_t kMostSum = int64_t(1) << 40;

// object[key] as an int (util/json_number.h: 2^32 no longer wraps to 0), from `lo`; ConfigError naming the key
// otherwise, which the reader's caller prefixes with the file.
int intAt(const json& object, const char* key, int lo = INT_MIN, const std::string& where = {}) {
    return int(util::wholeNumberIn(object.at(key), lo, INT_MAX, where + "\"" + key + "\""));
}

HeadRef headOf(const json& j) {
    return {parseAttentionKind(j.at("kind").get<std::string>(), "\"kind\""), intAt(j, "layer"), intAt(j, "head")};
}

std::vector<SkippedPair> skippedOf(const json& j) {
    std::vector<SkippedPair> out;
    for (const auto& k : j) out.push_back({intAt(k, "pair", 1), k.at("reason").get<std::string>()});
    return out;
}

HeadStatsReport statsOf(const json& root) {
    HeadStatsReport rep;
    rep.sentences = intAt(root, "sentences", 0);
    rep.skipped = skippedOf(root.at("skipped"));
    rep.teacher_forced = root.at("teacher_forced").get<bool>();
    rep.histogram_radius = intAt(root, "histogram_radius", 0);
    const auto measure = parseMapMeasure(root.at("measure").get<std::string>());
    if (!measure) throw InputError("\"measure\" " + root["measure"].dump() + " is not one AttnLab knows");
    rep.measure = *measure;
    for (const auto& j : root.at("heads")) {
        HeadStats h;
        h.head = headOf(j);
        h.rows = util::wholeNumberIn(j.at("rows"), 0, INT64_MAX, "\"rows\"");
        for (const auto& info : headStatisticInfos()) {
            h.values[size_t(info.id)] = j.at(info.key).get<double>();
            h.typical_sentence[size_t(info.id)] =
                intAt(j.at("typical_sentence"), info.key, -1, "\"typical_sentence\".");
        }
        h.offset_histogram = j.at("offset_histogram").get<std::vector<double>>();
        rep.heads.push_back(std::move(h));
    }
    return rep;
}

ImportanceReport importanceOf(const json& j) {
    ImportanceReport imp;
    imp.sentences = intAt(j, "sentences", 0);
    imp.skipped = skippedOf(j.at("skipped"));
    imp.baseline_bleu = j.at("baseline_bleu").get<double>();
    imp.baseline_chrf = j.at("baseline_chrf").get<double>();
    imp.bleu_signature = j.at("bleu_signature").get<std::string>();
    for (const auto& h : j.at("heads"))
        imp.heads.push_back(
            {headOf(h), h.at("bleu").get<double>(), h.at("chrf").get<double>(), h.at("bleu_drop").get<double>()});
    imp.bootstrap_resamples = intAt(j, "bootstrap_resamples", 0);
    for (const auto& p : j.at("curve")) {
        PruningPoint point;
        point.heads_removed = intAt(p, "heads_removed", 0);
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
    imp.removable_heads = j.at("removable_heads").is_null() ? -1 : intAt(j, "removable_heads", -1);
    imp.rank_correlation = j.at("rank_correlation").is_null() ? std::nan("") : j["rank_correlation"].get<double>();
    return imp;
}

ModelInfo modelOf(const json& j) {
    ModelInfo m;
    m.package_dir = j.at("package").get<std::string>();
    m.config.source_lang = j.at("source_lang").get<std::string>();
    m.config.target_lang = j.at("target_lang").get<std::string>();
    // Any whole number: the shape is checked against the document where it is used (checkHeadsFit).
    for (const auto& [key, to] :
         {std::pair{"layers", &m.config.model.n_layers}, std::pair{"decoder_layers", &m.config.model.n_dec_layers},
          std::pair{"heads", &m.config.model.n_head}})
        *to = util::wholeNumberIn(j.at(key), INT64_MIN, INT64_MAX, std::string("\"model\".\"") + key + "\"");
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
// The counts of one method of an alignment document (a whole run's or a part's): each a whole number up to
// kMostSum, and counts a link set can have (|A&S| <= |A&P| <= |A|, |A&S| <= |S|: gold's sure links are possible
// too); an InputError naming `path`, the method and the key otherwise. Open results… and the merge both read them here.
AlignmentCounts alignmentCountsOf(const json& j, const std::string& path) {
    const std::string where = "method " + j.at("method").dump() + "'s ";
    AlignmentCounts c;
    c.predicted = util::wholeNumberAt(j, "predicted", 0, kMostSum, path, where);
    c.sure = util::wholeNumberAt(j, "sure", 0, kMostSum, path, where);
    c.predicted_sure = util::wholeNumberAt(j, "predicted_sure", 0, std::min(c.predicted, c.sure), path, where);
    c.predicted_possible = util::wholeNumberAt(j, "predicted_possible", c.predicted_sure, c.predicted, path, where);
    return c;
}

// One method of an alignment document: its name, one of its model's, and its counts.
AlignmentMethodReport methodOf(const json& j, const std::string& path, const ModelInfo& model) {
    AlignmentMethodReport m{parseAlignmentMethod(j.at("method").get<std::string>()), {}, {}};
    const auto& shape = model.config.model;
    if (auto why = alignmentMethodProblem(m.method, int(shape.decoderLayers()), int(shape.n_head)))
        throw InputError(path + ": method " + j["method"].dump() + " is not one of its model's: " + *why);
    m.counts = alignmentCountsOf(j, path);
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

// ---- a sharded heads run's parts (attnlab/importance_parts.h, docs/scale-out.md) ----
namespace {

json bleuStatsJson(const BleuStats& b) {
    std::vector<int64_t> v(b.correct, b.correct + 4);
    v.insert(v.end(), b.total, b.total + 4);
    v.push_back(b.sys_len);
    v.push_back(b.ref_len);
    return v;
}

json chrfStatsJson(const ChrfStats& c) {
    std::vector<int64_t> v(c.hypothesis, c.hypothesis + ChrfStats::kOrder);
    v.insert(v.end(), c.reference, c.reference + ChrfStats::kOrder);
    v.insert(v.end(), c.matches, c.matches + ChrfStats::kOrder);
    return v;
}

std::vector<int64_t> countsOf(const json& j, size_t n, const std::string& path, const std::string& what,
                              int64_t most = kMostSum) {
    if (!j.is_array() || j.size() != n)
        throw InputError(path + ": " + what + ": " + std::to_string(n) + " counts expected, found " + j.dump(-1));
    std::vector<int64_t> out;
    for (const auto& v : j) out.push_back(util::wholeNumber(v, 0, most, path, what));
    return out;
}

BleuStats bleuStatsOf(const json& j, const std::string& path, const std::string& what, int64_t most = kMostSum) {
    const auto v = countsOf(j, 10, path, what, most);
    BleuStats b;
    std::copy(v.begin(), v.begin() + 4, b.correct);
    std::copy(v.begin() + 4, v.begin() + 8, b.total);
    b.sys_len = v[8];
    b.ref_len = v[9];
    return b;
}

ChrfStats chrfStatsOf(const json& j, const std::string& path, const std::string& what) {
    constexpr size_t n = ChrfStats::kOrder;
    const auto v = countsOf(j, 3 * n, path, what);
    ChrfStats c;
    std::copy(v.begin(), v.begin() + n, c.hypothesis);
    std::copy(v.begin() + n, v.begin() + 2 * n, c.reference);
    std::copy(v.begin() + 2 * n, v.end(), c.matches);
    return c;
}

// One sentence's BLEU statistics: each count at most util::kMaxJsonCount (2^31 - 1, as eval's parts read a line's),
// so that the paired bootstrap's sums over at most util::kMaxJsonLines sentences (metrics.cpp, pairedBootstrap) stay
// below 2^62. A run's sums are read up to kMostSum.
BleuStats sentenceStatsOf(const json& j, const std::string& path, const std::string& what) {
    return bleuStatsOf(j, path, what, util::kMaxJsonCount);
}

// The first stage's baseline sentence statistics (the paired bootstrap's): one per sentence of the singles, which
// are at most the run's lines.
std::vector<BleuStats> baselineSentences(const json& singles, int sentences, int64_t lines, const std::string& path) {
    const json& list = singles.at("baseline_sentences");
    if (sentences > lines || list.size() != size_t(sentences))
        throw InputError(path + ": \"baseline_sentences\" holds " + std::to_string(list.size()) +
                         " sentences' statistics for " + std::to_string(sentences) + " sentences of " +
                         std::to_string(lines) + " lines");
    std::vector<BleuStats> out;
    for (const auto& b : list) out.push_back(sentenceStatsOf(b, path, "\"baseline_sentences\""));
    return out;
}

// One run's sums, and its sentences' statistics when it kept them.
json ablationJson(const AblationRun& r) {
    json j = {{"bleu_stats", bleuStatsJson(r.bleu)}, {"chrf_stats", chrfStatsJson(r.chrf)}};
    if (!r.sentences.empty()) {
        json sentences = json::array();
        for (const auto& b : r.sentences) sentences.push_back(bleuStatsJson(b));
        j["sentences"] = std::move(sentences);
    }
    return j;
}

AblationRun ablationOf(const json& j, const std::string& path, const std::string& what) {
    AblationRun r;
    r.bleu = bleuStatsOf(j.at("bleu_stats"), path, what + "'s \"bleu_stats\"");
    r.chrf = chrfStatsOf(j.at("chrf_stats"), path, what + "'s \"chrf_stats\"");
    if (j.contains("sentences"))
        for (const auto& b : j["sentences"]) r.sentences.push_back(sentenceStatsOf(b, path, what + "'s sentences"));
    return r;
}

// The part's runs: "first" (0-based among the run's jobs or curve points) and "runs".
json runsJson(size_t first, const std::vector<AblationRun>& runs) {
    json out = json::array();
    for (const auto& r : runs) out.push_back(ablationJson(r));
    return {{"first", first}, {"runs", std::move(out)}};
}

std::vector<HeadRef> headsOfNames(const json& names) {
    std::vector<HeadRef> out;
    for (const auto& n : names) out.push_back(parseHeadList(n.get<std::string>()).at(0));
    return out;
}

GradientImportanceReport gradientOf(const json& j) {
    GradientImportanceReport g;
    g.sentences = intAt(j, "sentences", 0, "gradient's ");
    g.skipped = skippedOf(j.at("skipped"));
    g.seconds = j.at("seconds").get<double>();
    for (const auto& h : j.at("heads"))
        g.heads.push_back({headOf(h), h.at("raw").get<double>(), h.at("normalized").get<double>()});
    return g;
}
}  // namespace

namespace headlab_merge {
namespace {
// `read()` over the document of the part (or first stage's result) in `path`: the readers above throw a ConfigError
// without the file for a number out of range (intAt); here it names the file.
template <typename Read>
auto inPart(const std::string& path, Read read) {
    try {
        return read();
    } catch (const ConfigError& e) {
        throw InputError(path + ": " + e.what());
    }
}

// A part's skipped pairs, their "pair" as the corpus counts them (the CLI writes them so): each a line of the part.
void appendSkipped(std::vector<SkippedPair>& to, const PartDocument& part, const json& from) {
    for (const auto& k : from)
        to.push_back({int(util::wholeNumberAt(k, "pair", part.first_line + 1, part.first_line + part.lines, part.path,
                                              "a skipped line's ")),
                      k.at("reason").get<std::string>()});
}
void appendSkipped(std::vector<SkippedPair>& to, const PartDocument& part) {
    appendSkipped(to, part, part.doc->at("skipped"));
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
            // Each count at most 2^40 and at most kMaxShards parts: the sums stay below 2^57, and possible counts.
            const AlignmentCounts n = alignmentCountsOf(j, part.path);
            auto& c = rep.methods[m].counts;
            c.predicted += n.predicted;
            c.sure += n.sure;
            c.predicted_sure += n.predicted_sure;
            c.predicted_possible += n.predicted_possible;
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
// Each head's statistics of the parts together: means of the sentences' sums added in line order, the offset
// histogram weighted by rows (summed in part order), the typical sentences (as HeadStatsAccumulator::report chooses
// them) from every sentence's own rows and sums, which the parts carry ("sentence_statistics", "sentence_lines") and
// the merged result does not.
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
    // The sentences' sums added in line order, as HeadStatsAccumulator::report adds them: the whole run's bits.
    for (const auto& sentence : sentence_sums)
        for (size_t k = 0; k < sums.size(); ++k) sums[k] += sentence[k];
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

namespace {
json mergedStatistics(const std::vector<PartDocument>& parts);

// A part's statistics (a heads document's, or its --compare-model's) read as readHeadsJson reads a document: whole
// numbers in range (statsOf) and heads of `model` (checkHeadsFit), before anything of them is merged; an InputError
// naming the part otherwise (a heads[0].layer of 2^40 or a histogram_radius of -7 merged into a file the app refused).
void checkPartStatistics(const json& doc, const json& model, const std::string& path) {
    inPart(path, [&] { checkHeadsFit(HeadsFile{statsOf(doc), std::nullopt, modelOf(model)}, path); });
}

// The runs of every part put together, one per job (or curve point): by lines, each part holds every job over its
// lines, and a job's sums are summed over the parts and its sentences put one after the other (line order); by
// heads, each job is in one part, over every line. `what` names a job in messages ("job", "curve point").
std::vector<AblationRun> mergedRuns(const std::vector<PartDocument>& parts, size_t jobs, ShardBy by,
                                    const std::string& what) {
    std::vector<AblationRun> runs(jobs);
    std::vector<const std::string*> from(jobs, nullptr);
    for (const auto& part : parts) {
        const json& r = part.doc->at("importance_part").at(what == "job" ? "jobs" : "points");
        const size_t first = size_t(util::wholeNumberAt(r, "first", 0, int64_t(jobs), part.path));
        const json& list = r.at("runs");
        if (by == ShardBy::Lines && (first != 0 || list.size() != jobs))
            throw InputError(part.path + ": a part by lines holds every " + what + " (" + std::to_string(jobs) +
                             "), this one " + std::to_string(list.size()) + " from " + std::to_string(first));
        if (first + list.size() > jobs)
            throw InputError(part.path + ": " + what + "s " + std::to_string(first) + ".." +
                             std::to_string(first + list.size() - 1) + " of " + std::to_string(jobs));
        for (size_t i = 0; i < list.size(); ++i) {
            const size_t job = first + i;
            const AblationRun run = ablationOf(list[i], part.path, what + " " + std::to_string(job));
            if (by == ShardBy::Heads && from[job])
                throw InputError(what + " " + std::to_string(job) + " is given twice: " + *from[job] + " and " +
                                 part.path);
            from[job] = &part.path;
            runs[job].bleu += run.bleu;
            runs[job].chrf += run.chrf;
            runs[job].sentences.insert(runs[job].sentences.end(), run.sentences.begin(), run.sentences.end());
        }
    }
    for (size_t job = 0; job < jobs; ++job)
        if (!from[job])
            throw InputError(what + " " + std::to_string(job) + " of " + std::to_string(jobs) + " is missing");
    return runs;
}

// The lines a stage's runs translated: by lines, the parts' together; by heads, every part's (all the same).
void mergedLines(const std::vector<PartDocument>& parts, ShardBy by, int& sentences,
                 std::vector<SkippedPair>& skipped) {
    const json& first = parts.front().doc->at("importance_part");
    for (const auto& part : parts) {
        const json& p = part.doc->at("importance_part");
        if (by == ShardBy::Heads) {
            if (p.at("sentences") != first.at("sentences") || p.at("skipped") != first.at("skipped"))
                throw InputError(part.path + ": its lines differ from " + parts.front().path + "'s");
            continue;
        }
        sentences += int(util::wholeNumberAt(p, "sentences", 0, part.lines, part.path, "\"importance_part\"."));
        appendSkipped(skipped, part, p.at("skipped"));
    }
    if (by == ShardBy::Heads) {
        sentences = int(util::wholeNumberAt(first, "sentences", 0, util::kMaxJsonLines, parts.front().path,
                                            "\"importance_part\"."));
        skipped = inPart(parts.front().path, [&] { return skippedOf(first.at("skipped")); });
    }
}

// Every part of one stage, split alike: the same stage and "--shard-by", and `key` the same in each.
ShardBy checkStage(const std::vector<PartDocument>& parts, const char* stage, const char* key) {
    const json& first = parts.front().doc->at("importance_part");
    for (const auto& part : parts) {
        const json& p = part.doc->at("importance_part");
        if (p.at("stage") != stage)
            throw InputError(part.path + ": a part of heads --importance's " + p.at("stage").dump() + " stage among " +
                             stage + " parts");
        if (p.at("shard_by") != first.at("shard_by") || p.at(key) != first.at(key))
            throw InputError(part.path + ": split otherwise than " + parts.front().path + " (--shard-by, " + key + ")");
    }
    return parseShardBy(first.at("shard_by").get<std::string>());
}

// The first stage's parts together: the singles ranked, the baseline's sentences, the options the second needs.
json mergedSingles(const std::vector<PartDocument>& parts) {
    const ShardBy by = checkStage(parts, "singles", "heads");
    const json& first = parts.front().doc->at("importance_part");
    const auto heads = headsOfNames(first.at("heads"));
    auto runs = mergedRuns(parts, heads.size() + 1, by, "job");
    ImportanceReport rep = rankedSingles(heads, runs);
    mergedLines(parts, by, rep.sentences, rep.skipped);
    if (runs[0].sentences.size() != size_t(rep.sentences))
        throw InputError(parts.front().path + "...: the baseline has " + std::to_string(runs[0].sentences.size()) +
                         " sentences' statistics for " + std::to_string(rep.sentences) + " sentences");
    rep.bootstrap_resamples = int(util::wholeNumberAt(first, "bootstrap_resamples", 0,
                                                      ImportanceOptions::kMaxBootstrapResamples, parts.front().path));
    json out = importanceJson(rep);
    out["curve_step"] = first.at("curve_step");
    out["baseline_sentences"] = ablationJson(runs[0]).at("sentences");
    return out;
}

// The gradient sums of the parts' blocks one after the other, finished as one process finishes them.
json mergedGradient(const std::vector<PartDocument>& parts) {
    const json& names = parts.front().doc->at("gradient_importance").at("block_sums").at("heads");
    GradientSums sums;
    sums.heads = headsOfNames(names);
    double seconds = 0;
    for (const auto& part : parts) {
        const json& g = part.doc->at("gradient_importance");
        if (g.at("block_sums").at("heads") != names)
            throw InputError(part.path + ": its gradient's heads differ from " + parts.front().path + "'s");
        sums.report.sentences += int(util::wholeNumberAt(g, "sentences", 0, part.lines, part.path, "gradient's "));
        appendSkipped(sums.report.skipped, part, g.at("skipped"));
        seconds += g.at("seconds").get<double>();
        for (const auto& b : g["block_sums"].at("blocks")) {
            sums.blocks.push_back(b.get<std::vector<double>>());
            if (sums.blocks.back().size() != sums.heads.size())
                throw InputError(part.path + ": a gradient block of " + std::to_string(sums.blocks.back().size()) +
                                 " heads for " + std::to_string(sums.heads.size()));
        }
    }
    finishGradient(sums);
    sums.report.seconds = seconds;  // the parts' together
    return gradientJson(sums.report);
}

// The other model's statistics of the parts together (each part's as a heads document), compared with these.
json mergedComparison(const json& root, const std::vector<PartDocument>& parts) {
    const json& c = parts.front().doc->at("comparison");
    std::vector<PartDocument> others;
    for (const auto& part : parts) {
        const json& mine = part.doc->at("comparison");
        if (mine.at("model") != c.at("model") || mine.at("reversed") != c.at("reversed"))
            throw InputError(part.path + ": compared with another model than " + parts.front().path);
        checkPartStatistics(mine.at("statistics"), mine["model"], part.path);
        others.push_back({part.path, &mine.at("statistics"), part.first_line, part.lines});
    }
    const json other = mergedStatistics(others);
    // A number out of range here came from the parts (the same in each, or summed): named with the first.
    return inPart(parts.front().path, [&] {
        return comparisonJson(statsOf(root), statsOf(other), c.at("model"), c.at("reversed").get<bool>());
    });
}

// What a part carries beside its statistics, merged: the singles, the gradient, the comparison.
void mergeExtras(json& root, const std::vector<PartDocument>& parts) {
    const json& first = *parts.front().doc;
    root.erase("importance_part");
    if (first.contains("gradient_importance")) root["gradient_importance"] = mergedGradient(parts);
    if (first.contains("comparison")) root["comparison"] = mergedComparison(root, parts);
    if (first.contains("importance_part")) root["importance_singles"] = mergedSingles(parts);
}

// A whole run's importance, gradient or comparison is not split: refused; so is the second stage without the first.
void refuseWhole(const PartDocument& part) {
    const json& doc = *part.doc;
    const bool curve = doc.contains("importance_part") && doc["importance_part"].value("stage", "") == "curve";
    if (curve)
        throw InputError(part.path +
                         ": a part of heads --importance's pruning curve: merge it with the first stage's result "
                         "(attnlab-cli merge OUT.json singles.json curve-*.json)");
    for (const auto& [key, part_key] : {std::pair{"gradient_importance", "block_sums"}, {"comparison", "statistics"}})
        if (doc.contains(key) && !doc[key].contains(part_key))
            throw InputError(part.path + ": its \"" + key + "\" is a whole run's (write parts with --shard)");
    if (doc.contains("importance"))
        throw InputError(part.path + ": its \"importance\" is a whole run's (write parts with --shard)");
}

// The parts' statistics together (each part checked by the caller), and what they carry beside them (mergeExtras).
json mergedStatistics(const std::vector<PartDocument>& parts) {
    const json& first = *parts.front().doc;
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
    mergeExtras(root, parts);
    return root;
}
}  // namespace

json mergeHeads(const std::vector<PartDocument>& parts) {
    const json& first = *parts.front().doc;
    // The first stage's merged result alone (attnlab-cli merge OUT.json singles.json): a merged result, given back.
    if (parts.size() == 1 && isImportanceSingles(first)) return first;
    for (const auto& part : parts) refuseWhole(part);
    for (const auto& part : parts) checkPartStatistics(*part.doc, part.doc->at("model"), part.path);
    return mergedStatistics(parts);
}

bool isImportanceSingles(const json& doc) { return doc.is_object() && doc.contains("importance_singles"); }

json mergeImportanceCurve(const PartDocument& singles, const std::vector<PartDocument>& parts) {
    for (const auto& part : parts)
        if (!part.doc->contains("importance_part"))
            throw InputError(part.path + ": not a part of heads --importance's pruning curve (merged beside " +
                             singles.path + ")");
    const json& s = singles.doc->at("importance_singles");
    ImportanceReport rep = inPart(singles.path, [&] { return importanceOf(s); });
    rep.curve.resize(1);
    ImportanceOptions o;
    o.curve_step = int(util::wholeNumberAt(s, "curve_step", 1, 1 << 20, singles.path, "\"importance_singles\"."));
    o.bootstrap_resamples =
        int(util::wholeNumberAt(s, "bootstrap_resamples", 0, ImportanceOptions::kMaxBootstrapResamples, singles.path));
    const std::vector<BleuStats> baseline = baselineSentences(s, rep.sentences, singles.lines, singles.path);
    const auto sets = curveSets(rep.heads, o.curve_step);
    json order = json::array();
    for (const auto& h : rep.heads) order.push_back(headName(h.head));
    const ShardBy by = checkStage(parts, "curve", "order");
    if (parts.front().doc->at("importance_part").at("order") != order)
        throw InputError(parts.front().path + ": run from other singles than " + singles.path +
                         " (the heads in another order)");
    auto runs = mergedRuns(parts, sets.size(), by, "curve point");
    int sentences = 0;
    std::vector<SkippedPair> skipped;
    mergedLines(parts, by, sentences, skipped);
    if (sentences != rep.sentences)
        throw InputError(parts.front().path + "...: the curve's points over " + std::to_string(sentences) +
                         " sentences, the singles over " + std::to_string(rep.sentences));
    for (size_t p = 0; p < runs.size(); ++p) {
        if (o.bootstrap_resamples > 0 && runs[p].sentences.size() != baseline.size())
            throw InputError(parts.front().path + "...: curve point " + std::to_string(p) + " carries " +
                             std::to_string(runs[p].sentences.size()) + " sentences' statistics for " +
                             std::to_string(baseline.size()) + " sentences (the paired bootstrap needs each one's)");
        runs[p].ablated = sets[p];
    }
    addCurve(rep, runs, baseline, o);
    json root = *singles.doc;
    if (root.contains("gradient_importance")) {
        rep.gradient = inPart(singles.path, [&] { return gradientOf(root["gradient_importance"]); });
        rep.rank_correlation = importanceRankCorrelation(rep);
    }
    root.erase("importance_singles");
    root["importance"] = importanceJson(rep);
    return root;
}

}  // namespace headlab_merge

namespace {
json singlesPartJson(const SinglesPart& p) {
    return {{"stage", "singles"},          {"shard_by", shardByName(p.by)},
            {"heads", namesJson(p.heads)}, {"jobs", runsJson(p.first_job, p.runs)},
            {"sentences", p.sentences},    {"skipped", skippedJson(p.skipped)},
            {"curve_step", p.curve_step},  {"bootstrap_resamples", p.bootstrap_resamples}};
}

// The first difference between two runs' identities ("" when none): command, model, options, corpus.
std::string runDifference(const json& a, const json& b) {
    if (a.at("command") != b.at("command")) return "command " + a["command"].dump() + " against " + b["command"].dump();
    if (a.at("model").at("fingerprint") != b.at("model").at("fingerprint"))
        return "model " + a["model"]["fingerprint"].dump() + " against " + b["model"]["fingerprint"].dump();
    if (a.at("options") != b.at("options")) return "options " + optionDifference(a["options"], b["options"]);
    if (a.at("corpus") != b.at("corpus")) return "corpus " + a["corpus"].dump(-1) + " against " + b["corpus"].dump(-1);
    return "";
}
}  // namespace

namespace {
// The first stage's ranking holds each of `heads` (the model's, of the run's kinds) once: a head ranked twice, one
// not ranked or one the model has not (a hand-edited singles.json) is refused naming the file.
void checkRankedHeads(const std::vector<HeadImportance>& ranked, const std::vector<HeadRef>& heads,
                      const std::string& path) {
    std::map<std::string, int> times;
    for (const auto& h : heads) times[headName(h)] = 0;
    for (const auto& r : ranked) {
        const auto it = times.find(headName(r.head));
        if (it == times.end())
            throw InputError(path + ": head " + headName(r.head) + " is ranked, not one of the model's " +
                             std::to_string(heads.size()) + " heads of the run's kinds");
        if (++it->second > 1) throw InputError(path + ": head " + headName(r.head) + " is ranked twice");
    }
    for (const auto& [name, n] : times)
        if (n == 0) throw InputError(path + ": head " + name + " of the model is not ranked");
}
}  // namespace

std::string withPartExtras(const std::string& document, const HeadsPartExtras& extras) {
    json root = util::parseJson(document, "withPartExtras");
    if (extras.singles) root["importance_part"] = singlesPartJson(*extras.singles);
    if (extras.gradient) {
        root["gradient_importance"] = gradientJson(extras.gradient->report);
        root["gradient_importance"]["block_sums"] = {{"heads", namesJson(extras.gradient->heads)},
                                                     {"blocks", extras.gradient->blocks}};
    }
    if (extras.other) root["comparison"]["statistics"] = statisticsJson(*extras.other);
    return root.dump(1) + "\n";
}

ImportanceSingles readImportanceSingles(const std::string& path, const CorpusRun& run,
                                        const std::vector<HeadRef>& heads) {
    const std::string how =
        " (attnlab-cli merge singles.json singles-*.json writes it from the parts of heads "
        "--importance --shard K/N)";
    try {
        const json root = util::parseJson(util::readSmallFile(path, size_t(2) << 30), path);
        if (!root.is_object() || root.value("format", "") != "attnlab-heads" || !root.contains("run"))
            throw InputError(path + ": not the first stage's result of heads --importance" + how);
        if (root.contains("importance_part") || root["run"].contains("shard"))
            throw InputError(path + ": one part of the first stage, not the merge of them all: incomplete" + how);
        if (!headlab_merge::isImportanceSingles(root))
            throw InputError(path + ": no \"importance_singles\": not the first stage of heads --importance" + how);
        CorpusRun whole = run;
        whole.shard = {};
        const json mine = util::parseJson(withRun("{}", whole), "run").at("run");
        if (const std::string d = runDifference(root["run"], mine); !d.empty())
            throw InputError(path + ": the first stage of another run than this one: " + d);
        const json& s = root["importance_singles"];
        ImportanceSingles out;
        out.ranked = importanceOf(s);
        out.ranked.curve.resize(1);
        util::wholeNumberAt(s, "curve_step", 1, 1 << 20, path);  // checked as the merge reads them
        util::wholeNumberAt(s, "bootstrap_resamples", 0, ImportanceOptions::kMaxBootstrapResamples, path);
        baselineSentences(s, out.ranked.sentences, run.lines, path);
        checkRankedHeads(out.ranked.heads, heads, path);
        return out;
    } catch (const PackageError& e) {
        throw InputError(e.what());
    } catch (const ConfigError& e) {
        throw InputError(path + ": " + e.what());
    } catch (const json::exception& e) {
        throw InputError(path + ": not a complete first stage of heads --importance: " + e.what());
    }
}

std::string curvePartJson(const CurvePart& part, const CorpusRun& run) {
    const json root = {{"format", "attnlab-heads"},
                       {"version", kHeadLabJsonVersion},
                       {"importance_part",
                        {{"stage", "curve"},
                         {"shard_by", shardByName(part.by)},
                         {"order", namesJson(part.order)},
                         {"points", runsJson(part.first_point, part.points)},
                         {"sentences", part.sentences},
                         {"skipped", skippedJson(part.skipped)}}}};
    return withRun(root.dump(), run);
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
