// attnlab-cli heads / align: wiring only; every number comes from attnlab/head_lab.h.
#include "head_lab_commands.h"

#include <attnlab/errors.h>
#include <attnlab/head_lab.h>
#include <attnlab/head_lab_json.h>
#include <attnlab/importance_parts.h>
#include <attnlab/package.h>
#include <attnlab/terminal_text.h>
#include <attnlab/text_io.h>

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>
#include <thread>

namespace attnlab_cli {

namespace {

// --limit N: the first N lines (0 = all).
void keepFirst(std::vector<std::string>& lines, int limit) {
    if (limit > 0 && lines.size() > static_cast<size_t>(limit)) lines.resize(static_cast<size_t>(limit));
}

void checkSameCount(const std::string& a, size_t na, const std::string& b, size_t nb) {
    if (na != nb)
        throw attnlab::InputError("mismatched files: " + a + " has " + std::to_string(na) + " lines but " + b +
                                  " has " + std::to_string(nb));
}

std::vector<attnlab::AttentionKind> parseKinds(const std::string& text) {
    std::vector<attnlab::AttentionKind> kinds;
    std::istringstream in(text);
    std::string name;
    while (std::getline(in, name, ',')) {
        kinds.push_back(attnlab::parseAttentionKind(name, "--importance-kinds"));
    }
    return kinds;
}

void printStatistics(const attnlab::HeadStatsReport& rep) {
    if (rep.measure != attnlab::MapMeasure::Weights)
        std::cout << "statistics of the " << attnlab::mapMeasureName(rep.measure) << " maps\n";
    std::cout << rep.heads.size() << " heads over " << rep.sentences << " sentences"
              << (rep.teacher_forced ? " (decoder teacher-forced through the references)"
                                     : " (the model's own translations)")
              << "; layers and heads counted from 1\n"
              << std::left << std::setw(28) << "statistic" << std::setw(22) << "highest"
              << "lowest\n";
    for (const auto& info : attnlab::headStatisticInfos()) {
        const auto by = [&](const attnlab::HeadStats& a, const attnlab::HeadStats& b) {
            return a.value(info.id) < b.value(info.id);
        };
        const auto lo = std::min_element(rep.heads.begin(), rep.heads.end(), by);
        const auto hi = std::max_element(rep.heads.begin(), rep.heads.end(), by);
        if (lo == rep.heads.end()) break;
        std::ostringstream h, l;
        h << shownHead(hi->head) << " " << std::fixed << std::setprecision(3) << hi->value(info.id);
        l << shownHead(lo->head) << " " << std::fixed << std::setprecision(3) << lo->value(info.id);
        std::cout << std::setw(28) << info.label << std::setw(22) << h.str() << l.str() << "\n";
    }
    std::cout << std::right;
}

// The heads whose statistics differ most between the two models, for each statistic.
void printComparison(const std::vector<attnlab::HeadStatsDifference>& diffs, const std::string& other) {
    std::cout << "compared with " << other << " (other minus this), largest differences:\n";
    for (const auto& info : attnlab::headStatisticInfos()) {
        const auto most = std::max_element(diffs.begin(), diffs.end(), [&](const auto& a, const auto& b) {
            return std::abs(a.difference(info.id)) < std::abs(b.difference(info.id));
        });
        if (most == diffs.end()) return;
        std::cout << "  " << std::left << std::setw(28) << info.label << std::right << shownHead(most->head) << " "
                  << std::showpos << std::fixed << std::setprecision(3) << most->difference(info.id) << std::noshowpos
                  << "\n";
    }
}

void printGradient(const attnlab::GradientImportanceReport& g) {
    std::cout << std::fixed << std::setprecision(3) << "most important by gradient (" << g.sentences
              << " pairs, normalised per layer, " << std::setprecision(1) << g.seconds
              << " s):" << std::setprecision(3);
    for (size_t i = g.heads.size(), shown = 0; i-- > 0 && shown < 5; ++shown)
        std::cout << " " << shownHead(g.heads[i].head) << " " << g.heads[i].normalized;
    std::cout << "\n";
}

void printImportance(const attnlab::ImportanceReport& imp) {
    std::cout << std::fixed << std::setprecision(2) << "baseline: BLEU " << imp.baseline_bleu << ", chrF "
              << imp.baseline_chrf << " (" << imp.sentences
              << " sentences)\nmost important (BLEU with the head ablated alone):";
    for (size_t i = imp.heads.size(), shown = 0; i-- > 0 && shown < 5; ++shown)
        std::cout << " " << shownHead(imp.heads[i].head) << " " << imp.heads[i].bleu;
    std::cout << "\npruning curve (heads removed: BLEU";
    if (imp.bootstrap_resamples > 0) std::cout << " [95 % interval, " << imp.bootstrap_resamples << " resamples]";
    std::cout << "):";
    for (const auto& p : imp.curve) {
        std::cout << " " << p.heads_removed << ": " << p.bleu;
        if (p.interval.resamples > 0)
            std::cout << " [" << p.interval.low << ", " << p.interval.high << "]" << (p.significantLoss() ? "*" : "");
    }
    std::cout << "\n";
    if (imp.removable_heads >= 0)
        std::cout << "removable with no significant loss (* = significantly below the baseline): "
                  << imp.removable_heads << " of " << imp.heads.size() << " heads\n";
    if (imp.gradient) {
        printGradient(*imp.gradient);
        std::cout << "rank correlation of the two orders (Spearman): "
                  << (std::isfinite(imp.rank_correlation) ? std::to_string(imp.rank_correlation) : "undefined") << "\n";
    }
}

}  // namespace

void addHeads(CLI::App& app, CommonOptions& common, HeadsCommand& h) {
    h.cmd = app.add_subcommand("heads",
                               "Statistics of every attention head over a corpus, and with --importance the BLEU of "
                               "the corpus with each head ablated (docs/head-lab.md)");
    addCommon(h.cmd, common);
    h.cmd->add_option("--src", h.src, "Source sentences, one per line (plain or .gz)")->required();
    h.cmd->add_option("--ref", h.ref,
                      "Reference translations: the decoder is teacher-forced through them (needed for --importance)");
    h.cmd->add_option("--json", h.json_path, "Write statistics (and importance) to this JSON file")->required();
    h.cmd->add_option("--csv", h.csv_path, "Also write the statistics as CSV, one row per head");
    h.cmd->add_option("--compare-model", h.compare_model,
                      "The same statistics through another model (a package, a bundled name or direction) and each "
                      "head's difference, in the JSON's \"comparison\"");
    h.cmd
        ->add_flag("--compare-reversed", h.compare_reversed,
                   "The other model reads the references as its sources and the sources as its references (the "
                   "other direction of the same pairs, e.g. de-en against en-de)")
        ->needs(h.cmd->get_option("--compare-model"));
    h.cmd
        ->add_option("--measure", h.measure,
                     "The statistics of the weights, of the value-norm maps (each weight times its key's value norm, "
                     "rows normalised) or of the rollout (one map per layer, listed as its first head)")
        ->check(CLI::IsMember(attnlab::mapMeasureNames()))
        ->capture_default_str();
    h.cmd->add_flag("--importance", h.importance,
                    "Translate the corpus once per head with that head ablated, then with the least important "
                    "removed cumulatively; BLEU and chrF of each run go into the JSON");
    h.cmd->add_flag("--gradient-importance", h.gradient,
                    "Only the gradient importance of every head (Michel et al.: |dL/d gate|, one backward pass per "
                    "batch, seconds), without the ablation runs; --importance includes it");
    h.cmd
        ->add_option("--bootstrap", h.bootstrap,
                     "Paired bootstrap resamples for the pruning curve's 95 % intervals (0: none)")
        ->capture_default_str();
    h.cmd->add_option("--importance-kinds", h.kinds,
                      "Only heads of these kinds take part, e.g. cross or encoder,cross");
    h.cmd->add_option("--curve-step", h.curve_step, "Heads removed between two points of the pruning curve")
        ->capture_default_str();
    h.cmd
        ->add_option("--shard-by", h.shard_by,
                     "With --shard and --importance: lines (each part runs every head over its lines) or heads (each "
                     "part runs its group of the heads over every line); the statistics are split by lines")
        ->capture_default_str();
    h.cmd->add_option("--importance-singles", h.importance_singles,
                      "--importance's second stage: the pruning curve from this first stage's merged result "
                      "(attnlab-cli merge singles.json singles-*.json; docs/scale-out.md)");
    h.cmd
        ->add_option("--workers", h.workers,
                     "Importance runs translated at once, each by its own copy of the model with a share of "
                     "--threads (the results do not depend on it)")
        ->capture_default_str();
    h.cmd->add_option("--radius", h.radius, "Offsets -R..R in the histogram (the ends collect the rest)")
        ->capture_default_str();
    h.cmd->add_option("--limit", h.limit, "Use only the first N lines (0 = all)")->capture_default_str();
    h.cmd->add_option("--beam", h.decoding.beam_size, "Beam size of the model's own translations (default 1: greedy)");
    addLanguages(h.cmd, h.decoding);
    h.cmd->add_option("--batch-size", h.decoding.max_batch_size, "Sentences decoded together (default 128)");
    h.decoding.beam_size = 1;
    h.decoding.max_batch_size = 128;  // greedy over a corpus: larger batches are ~25 % faster (docs/benchmarks.md)
    addCorpusOutput(h.cmd, h.corpus, nullptr);
}

namespace {
// Lines (pairs) a corpus run left out, on stderr: the first ten with their reasons, then how many more.
void reportSkipped(const std::vector<attnlab::SkippedPair>& skipped, const char* what) {
    constexpr size_t kShown = 10;
    for (size_t i = 0; i < skipped.size() && i < kShown; ++i)
        std::cerr << "attnlab-cli: warning: line " << skipped[i].pair << " not " << what << ": "
                  << attnlab::escapedForTerminal(skipped[i].reason) << "\n";
    if (skipped.size() > kShown)
        std::cerr << "attnlab-cli: warning: " << skipped.size() - kShown << " more lines not " << what
                  << " (every one is listed in --json's \"skipped\")\n";
}
}  // namespace

namespace {
// A part's statistics counted from the corpus's first line: its skipped lines, sentences and typical sentences.
void countFromCorpus(attnlab::HeadStatsReport& stats, size_t first) {
    for (auto& k : stats.skipped) k.pair += int(first);
    for (int& l : stats.sentence_lines) l += int(first);
    for (auto& head : stats.heads)
        for (int& k : head.typical_sentence)
            if (k >= 0) k += int(first);
}

void countFromCorpus(std::vector<attnlab::SkippedPair>& skipped, size_t first) {
    for (auto& k : skipped) k.pair += int(first);
}

// --compare-model: the same statistics through the other model (with --compare-reversed it reads the
// references as its sources and the sources as its references), of the same lines as this model's.
struct Compared {
    std::optional<attnlab::Translator> model;
    std::optional<attnlab::HeadStatsReport> stats;
};

Compared compareWithOther(const CommonOptions& common, const HeadsCommand& h, const std::vector<std::string>& sources,
                          const std::vector<std::string>& refs, const attnlab::CorpusRun& run, ProgressLine& progress) {
    Compared out;
    if (h.compare_model.empty()) return out;
    if (h.compare_reversed && refs.empty())
        throw attnlab::ConfigError("--compare-reversed needs --ref (the other model reads the references)");
    CommonOptions o = common;
    o.model = h.compare_model;
    out.model.emplace(load(o));
    const auto range = attnlab::partLines(run);
    const auto other_src = attnlab::linesOf(h.compare_reversed ? refs : sources, range);
    const auto other_refs = refs.empty() ? other_src : attnlab::linesOf(h.compare_reversed ? sources : refs, range);
    out.stats = attnlab::corpusHeadStatistics(*out.model, other_src, refs.empty() ? nullptr : &other_refs, h.decoding,
                                              h.radius, progress.callback(), *attnlab::parseMapMeasure(h.measure),
                                              !h.corpus.shard.empty(),
                                              {range.begin, size_t(run.block), !h.corpus.shard.empty()});
    progress.clear();
    countFromCorpus(*out.stats, range.begin);
    reportSkipped(out.stats->skipped, "used by the other model");
    return out;
}

void checkShardable(const HeadsCommand& h) {
    attnlab::parseShardBy(h.shard_by);
    if (h.shard_by != "lines" && !h.importance)
        throw attnlab::ConfigError("--shard-by " + h.shard_by +
                                   " splits --importance's runs; the statistics, --gradient-importance and "
                                   "--compare-model are split by lines");
    if (!h.importance_singles.empty() && !h.importance)
        throw attnlab::ConfigError("--importance-singles is the second stage of --importance: give both");
    if (!h.importance_singles.empty() && !h.csv_path.empty())
        throw attnlab::ConfigError(
            "--importance-singles computes the pruning curve only: its statistics (--csv) "
            "came with the first stage");
    h.corpus.parsed();
}

// The options that name a stage of --importance and how it is split are not the run's identity: the first stage's
// merged result and the second stage's parts are of one run (attnlab/importance_parts.h).
void leaveOutStage(attnlab::CorpusRun& run) {
    auto& o = run.options;
    o.erase(
        std::remove_if(o.begin(), o.end(),
                       [](const auto& kv) { return kv.first == "--shard-by" || kv.first == "--importance-singles"; }),
        o.end());
}

// One translator per --importance worker, the cores split between them (single-sentence products are too small for
// two threads to share well; two workers with one thread each are ~1.9x). `copies` holds the others.
std::vector<const attnlab::Translator*> importanceWorkers(const CommonOptions& common, const HeadsCommand& h,
                                                          const attnlab::Translator& translator,
                                                          std::vector<attnlab::Translator>& copies) {
    if (h.workers < 1 || h.workers > 64)
        throw attnlab::ConfigError("--workers " + std::to_string(h.workers) + " is out of range (1..64)");
    const int cores = common.threads > 0 ? common.threads : int(std::max(1u, std::thread::hardware_concurrency()));
    std::vector<const attnlab::Translator*> workers{&translator};
    if (h.workers > 1) {
        CommonOptions each = common;
        each.threads = std::max(1, cores / h.workers);
        for (int w = 1; w < h.workers; ++w) copies.push_back(load(each));
        for (const auto& c : copies) workers.push_back(&c);
    }
    return workers;
}

// The lines and jobs of a part of --importance's stage: by lines, its part of the lines and every job; by heads,
// every line and its group of the `jobs`.
struct StagePart {
    attnlab::ShardBy by = attnlab::ShardBy::Lines;
    attnlab::LineRange lines, jobs;
};
StagePart stagePart(const HeadsCommand& h, const attnlab::CorpusRun& run, size_t jobs) {
    StagePart p;
    p.by = attnlab::parseShardBy(h.shard_by);
    const bool heads = p.by == attnlab::ShardBy::Heads;
    p.lines = heads ? attnlab::LineRange{0, size_t(run.lines)} : attnlab::partLines(run);
    p.jobs = heads ? attnlab::jobGroup(jobs, run.shard) : attnlab::LineRange{0, jobs};
    return p;
}

// Where a stage part's lines lie: a part of the corpus's lines (its lines may all be skipped), or all of them.
attnlab::CorpusPlace placeOf(const StagePart& part, const attnlab::CorpusRun& run) {
    return {part.lines.begin, size_t(run.block), part.lines.size() < size_t(run.lines)};
}

template <typename T>
std::vector<T> rangeOf(const std::vector<T>& v, const attnlab::LineRange& r) {
    return {v.begin() + std::ptrdiff_t(r.begin), v.begin() + std::ptrdiff_t(r.end)};
}

// The first stage's part: the baseline and the heads alone (this part's jobs over this part's lines).
attnlab::SinglesPart singlesOfPart(const std::vector<const attnlab::Translator*>& workers, const HeadsCommand& h,
                                   const attnlab::ImportanceOptions& io, const attnlab::CorpusRun& run,
                                   const std::vector<std::string>& sources, const std::vector<std::string>& refs,
                                   ProgressLine& progress) {
    attnlab::SinglesPart out;
    out.heads = attnlab::importanceHeads(*workers.front(), io.kinds);
    const auto jobs = attnlab::singleJobs(out.heads);
    const StagePart part = stagePart(h, run, jobs.size());
    const auto src = attnlab::linesOf(sources, part.lines), ref = attnlab::linesOf(refs, part.lines);
    const auto corpus = attnlab::ablationCorpus(*workers.front(), src, ref, placeOf(part, run));
    out.by = part.by;
    out.first_job = part.jobs.begin;
    out.runs = attnlab::runAblations(workers, corpus, io, rangeOf(jobs, part.jobs), false, progress.callback());
    progress.clear();
    out.sentences = int(corpus.usable.size());
    out.skipped = corpus.skipped;
    countFromCorpus(out.skipped, part.lines.begin);
    out.curve_step = io.curve_step;
    out.bootstrap_resamples = io.bootstrap_resamples;
    if (part.jobs.size() == 0)
        std::cout << "singles: none in part " << run.shard.index << " of " << run.shard.count << " (" << jobs.size()
                  << " runs)\n";
    else
        std::cout << "singles " << part.jobs.begin << ".." << part.jobs.end - 1 << " of " << jobs.size()
                  << " (0: the baseline) over " << out.sentences << " sentences\n";
    return out;
}

// --importance-singles: the second stage's part, the pruning curve's points from the first stage's order.
int runCurveStage(const CommonOptions& common, const HeadsCommand& h, const attnlab::ImportanceOptions& io,
                  const attnlab::Translator& translator, const attnlab::CorpusRun& run,
                  const std::vector<std::string>& sources, const std::vector<std::string>& refs) {
    const auto singles =
        attnlab::readImportanceSingles(h.importance_singles, run, attnlab::importanceHeads(translator, io.kinds));
    const auto sets = attnlab::curveSets(singles.ranked.heads, io.curve_step);
    const StagePart part = stagePart(h, run, sets.size());
    std::vector<attnlab::Translator> copies;
    const auto workers = importanceWorkers(common, h, translator, copies);
    const auto src = attnlab::linesOf(sources, part.lines), ref = attnlab::linesOf(refs, part.lines);
    const auto corpus = attnlab::ablationCorpus(translator, src, ref, placeOf(part, run));
    ProgressLine progress;
    attnlab::CurvePart out;
    out.by = part.by;
    for (const auto& hi : singles.ranked.heads) out.order.push_back(hi.head);
    out.first_point = part.jobs.begin;
    out.points = attnlab::runAblations(workers, corpus, io, rangeOf(sets, part.jobs), io.bootstrap_resamples > 0,
                                       progress.callback());
    progress.clear();
    out.sentences = int(corpus.usable.size());
    out.skipped = corpus.skipped;
    countFromCorpus(out.skipped, part.lines.begin);
    attnlab::writeHeadLabFile(h.json_path, attnlab::curvePartJson(out, run));
    if (part.jobs.size() == 0)
        std::cout << "pruning curve: no points in part " << run.shard.index << " of " << run.shard.count << " ("
                  << sets.size() << " points)";
    else
        std::cout << "pruning curve points " << part.jobs.begin + 1 << ".." << part.jobs.end << " of " << sets.size()
                  << " over " << out.sentences << " sentences";
    std::cout << "; wrote " << h.json_path << "\n";
    return 0;
}

// A part by heads translates every line for its group of single runs (or curve points); the first stage's also
// takes the statistics of its part of the lines.
void announceHeadsPart(const HeadsCommand& h, const attnlab::CorpusRun& run) {
    if (run.shard.whole() || !h.importance || attnlab::parseShardBy(h.shard_by) != attnlab::ShardBy::Heads)
        return announcePart(run);
    const bool curve = !h.importance_singles.empty();
    std::cerr << "part " << run.shard.index << " of " << run.shard.count << " by heads: its group of "
              << (curve ? "the pruning curve's points" : "single runs") << " over all " << run.lines << " lines";
    if (!curve) {
        const auto r = attnlab::partLines(run);
        std::cerr << "; the statistics of ";
        if (r.size() == 0)
            std::cerr << "no lines";
        else
            std::cerr << "lines " << r.begin + 1 << ".." << r.end;
    }
    std::cerr << " (blocks of " << run.block << " lines)\n";
}

// The statistics of the run's lines (a part's with each sentence's).
attnlab::HeadStatsReport statisticsOf(const attnlab::Translator& translator, const HeadsCommand& h,
                                      const attnlab::CorpusRun& run, const std::vector<std::string>& sources,
                                      const std::vector<std::string>& refs, ProgressLine& progress) {
    const auto range = attnlab::partLines(run);
    const auto part_refs = attnlab::linesOf(refs, refs.empty() ? attnlab::LineRange{} : range);
    auto stats =
        attnlab::corpusHeadStatistics(translator, attnlab::linesOf(sources, range), refs.empty() ? nullptr : &part_refs,
                                      h.decoding, h.radius, progress.callback(), *attnlab::parseMapMeasure(h.measure),
                                      !h.corpus.shard.empty(),  // --measure: checked
                                      {range.begin, size_t(run.block), !h.corpus.shard.empty()});
    progress.clear();
    countFromCorpus(stats, range.begin);
    reportSkipped(stats.skipped, "used");
    return stats;
}

// The gradient importance of the run's lines, its sums kept for a part's merge.
attnlab::GradientSums gradientOf(const attnlab::Translator& translator, const attnlab::ImportanceOptions& io,
                                 const attnlab::CorpusRun& run, bool part, const std::vector<std::string>& sources,
                                 const std::vector<std::string>& refs, ProgressLine& progress) {
    const auto range = attnlab::partLines(run);
    auto sums =
        attnlab::gradientSums(translator, attnlab::linesOf(sources, range), attnlab::linesOf(refs, range), io.kinds,
                              io.gradient_batch_size, {range.begin, size_t(run.block), part}, progress.callback());
    progress.clear();
    countFromCorpus(sums.report.skipped, range.begin);
    attnlab::finishGradient(sums);
    return sums;
}
}  // namespace

int runHeads(const CommonOptions& common, const HeadsCommand& h) {
    checkShardable(h);
    if (h.importance && h.ref.empty()) throw attnlab::ConfigError("--importance needs --ref (BLEU needs references)");
    if (h.gradient && h.ref.empty())
        throw attnlab::ConfigError("--gradient-importance needs --ref (the loss is the references')");
    auto sources = attnlab::readTextLines(h.src);
    std::vector<std::string> refs;
    if (!h.ref.empty()) {
        refs = attnlab::readTextLines(h.ref);
        checkSameCount(h.src, sources.size(), h.ref, refs.size());  // before --limit cuts both
    }
    if (h.limit < 0) throw attnlab::ConfigError("--limit " + std::to_string(h.limit) + " is below 0");
    keepFirst(sources, h.limit);
    keepFirst(refs, h.limit);
    attnlab::ImportanceOptions io;
    io.decoding = h.decoding;
    io.curve_step = h.curve_step;
    io.bootstrap_resamples = h.bootstrap;
    io.kinds = parseKinds(h.kinds);
    io.validate();
    auto translator = load(common);
    std::vector<std::pair<std::string, const std::vector<std::string>*>> inputs{{"src", &sources}};
    if (!refs.empty()) inputs.emplace_back("ref", &refs);
    auto run = corpusRun(h.cmd, translator, h.corpus, inputs, h.decoding.max_batch_size);
    leaveOutStage(run);
    announceHeadsPart(h, run);
    if (!h.importance_singles.empty()) return runCurveStage(common, h, io, translator, run, sources, refs);
    const bool part = !h.corpus.shard.empty();  // --shard 1/1 too: a part of one (a Slurm array of one task)
    ProgressLine progress;
    const auto stats = statisticsOf(translator, h, run, sources, refs, progress);
    const Compared other = compareWithOther(common, h, sources, refs, run, progress);
    std::optional<attnlab::ImportanceReport> importance;
    std::optional<attnlab::SinglesPart> singles;
    if (h.importance) {
        std::vector<attnlab::Translator> copies;
        const auto workers = importanceWorkers(common, h, translator, copies);
        if (part)
            singles = singlesOfPart(workers, h, io, run, sources, refs, progress);
        else
            importance =
                attnlab::corpusImportance(workers, sources, refs, io, {0, size_t(run.block)}, progress.callback());
        progress.clear();
    }
    std::optional<attnlab::GradientSums> gradient;  // a whole --importance has its own; a part's is of its lines
    if (part ? h.gradient || (h.importance && io.gradient) : h.gradient && !h.importance)
        gradient = gradientOf(translator, io, run, part, sources, refs, progress);
    attnlab::HeadStatsOther compared;
    if (other.stats) compared = {&*other.stats, &other.model->info(), h.compare_reversed};
    std::string document = attnlab::headsJson(stats, importance ? &*importance : nullptr, translator.info(), compared,
                                              gradient && !importance ? &gradient->report : nullptr);
    if (part)
        document = attnlab::withPartExtras(document, {singles ? &*singles : nullptr, gradient ? &*gradient : nullptr,
                                                      other.stats ? &*other.stats : nullptr});
    attnlab::writeHeadLabFile(h.json_path, attnlab::withRun(document, run));
    if (!h.csv_path.empty()) attnlab::writeHeadLabFile(h.csv_path, attnlab::headStatsCsv(stats));
    printStatistics(stats);
    if (importance) printImportance(*importance);
    if (gradient) printGradient(gradient->report);
    if (other.stats)
        printComparison(attnlab::compareHeadStatistics(stats, *other.stats), other.model->info().package_dir);
    std::cout << "wrote " << h.json_path << (h.csv_path.empty() ? "" : " and " + h.csv_path) << "\n";
    return 0;
}

void addAlign(CLI::App& app, CommonOptions& common, AlignCommand& a) {
    a.cmd = app.add_subcommand("align",
                               "Word alignment from cross-attention, teacher-forced through given translations; with "
                               "--gold, AER / precision / recall of every head and layer (docs/head-lab.md)");
    addCommon(a.cmd, common);
    a.cmd->add_option("--src", a.src, "Source sentences, one per line, words separated by spaces")->required();
    a.cmd->add_option("--tgt", a.tgt, "Their translations, one per line")->required();
    a.cmd->add_option("--gold", a.gold, "Gold alignments: Pharaoh lines, i-j sure, ipj or i?j possible");
    addLanguages(a.cmd, a.languages);
    a.cmd->add_flag("--gold-one-indexed", a.one_indexed, "The gold file counts words from 1");
    a.cmd->add_flag("--gold-reversed", a.reversed, "The gold file writes target-source (j-i)");
    a.cmd
        ->add_option("--method", a.method,
                     "[sym:HEURISTIC:][shift:](head:L:H | layer:L | all | alti+[:layer:L] | value-zeroing[:layer:L]) "
                     "(0-based; alti+: ALTI+'s source contributions through the model, alti+:layer:L through decoder "
                     "layer L; value-zeroing: value zeroing's through the model, value-zeroing:layer:L layer L's "
                     "cross-attention map; docs/contributions.md; shift: each target word from the "
                     "step whose input it is; sym: combined with the reverse model's links by intersect, union, "
                     "grow-diag, grow-diag-final or grow-diag-final-and): the links written to --output")
        ->capture_default_str();
    a.cmd
        ->add_option("--threshold", a.threshold,
                     "Besides the argmax, link every source word whose weight reaches this (0 = argmax only)")
        ->capture_default_str();
    a.cmd->add_option("--output", a.output,
                      "Write one Pharaoh line per pair (i-j, 0-indexed, source-target); --output, --json or both");
    a.cmd->add_option("--json", a.json_path, "Write AER, precision and recall of every head and layer");
    a.cmd->add_option("--reverse-model", a.reverse_model,
                      "A model of the other direction (targets to sources) whose links symmetrise this one's "
                      "(default: the bundled model of that direction, when there is one)");
    a.cmd->add_flag("--no-reverse", a.no_reverse, "No reverse model: no symmetrised methods")
        ->excludes(a.cmd->get_option("--reverse-model"));
    a.cmd
        ->add_option("--dev", a.dev,
                     "SRC TGT GOLD of a development set: the method with the lowest AER there is the one --output "
                     "writes and the report scores on --src/--tgt (read with the same --gold-* options)")
        ->expected(3)
        ->excludes(a.cmd->get_option("--method"));
    a.cmd->add_option("--batch-size", a.batch_size, "Pairs teacher-forced together")->capture_default_str();
    addCorpusOutput(a.cmd, a.corpus, nullptr);
}

namespace {
// --reverse-model as given; else the bundled model of the reverse direction, when there is one and
// --no-reverse is not given; else none ("").
std::string reverseModelDir(const AlignCommand& a, const attnlab::PackageConfig& forward) {
    if (!a.reverse_model.empty()) return resolveModel(a.reverse_model);
    return a.no_reverse ? "" : attnlab::reverseBundledModel(forward);
}
}  // namespace

namespace {
// Sentence pairs and (when named) their gold, the counts checked.
struct Pairs {
    std::vector<std::string> sources, targets;
    std::vector<attnlab::GoldAlignment> gold;
    std::string gold_name;
    const std::vector<attnlab::GoldAlignment>* goldOrNull() const { return gold_name.empty() ? nullptr : &gold; }
};

Pairs readPairs(const std::string& src, const std::string& tgt, const std::string& gold, const AlignCommand& a) {
    Pairs p;
    p.sources = attnlab::readTextLines(src);
    p.targets = attnlab::readTextLines(tgt);
    checkSameCount(src, p.sources.size(), tgt, p.targets.size());
    if (!gold.empty()) {
        p.gold = attnlab::readGoldAlignments(gold, {a.one_indexed, a.reversed});
        checkSameCount(src, p.sources.size(), gold, p.gold.size());
        p.gold_name = gold;
    }
    return p;
}

// The Kth of N parts of the pairs (--shard), and the lines of its report counted as the corpus's again: the skipped
// pairs and the gold line a reason names.
Pairs partOf(const Pairs& all, const attnlab::LineRange& r) {
    Pairs p;
    p.sources = attnlab::linesOf(all.sources, r);
    p.targets = attnlab::linesOf(all.targets, r);
    if (!all.gold_name.empty())
        p.gold.assign(all.gold.begin() + std::ptrdiff_t(r.begin), all.gold.begin() + std::ptrdiff_t(r.end));
    p.gold_name = all.gold_name;
    return p;
}

void countFromCorpus(std::vector<attnlab::SkippedPair>& skipped, size_t first, const std::string& gold_name) {
    if (first == 0) return;
    for (auto& k : skipped) {
        const std::string here = gold_name + " line " + std::to_string(k.pair) + ":";
        k.pair += int(first);
        if (const size_t at = gold_name.empty() ? std::string::npos : k.reason.find(here); at != std::string::npos)
            k.reason.replace(at, here.size(), gold_name + " line " + std::to_string(k.pair) + ":");
    }
}

void printScores(const attnlab::AlignmentReport& rep, const attnlab::AlignmentMethod& method) {
    auto line = [](const char* what, const attnlab::AlignmentMethodReport& m) {
        std::cout << std::left << std::setw(14) << what << std::setw(30) << shownMethod(m.method) + " " << std::right
                  << std::fixed << std::setprecision(3) << "AER " << m.counts.aer() << "  precision "
                  << m.counts.precision() << "  recall " << m.counts.recall() << "\n";
    };
    line("chosen", *rep.find(method));
    line("best head", rep.methods[static_cast<size_t>(rep.best_head)]);
    line("best layer", rep.methods[static_cast<size_t>(rep.best_layer)]);
    line("all layers", *rep.find({attnlab::AlignmentMethod::Kind::All, 0, 0, false}));
    line("shift, all", *rep.find({attnlab::AlignmentMethod::Kind::All, 0, 0, true}));
    line("ALTI+", *rep.find({attnlab::AlignmentMethod::Kind::AltiPlus, 0, 0, false}));
    line("value zeroing", *rep.find({attnlab::AlignmentMethod::Kind::ValueZeroing, 0, 0, false}));
    line("best", rep.methods[static_cast<size_t>(rep.best)]);
}
}  // namespace

namespace {
// align's blocks are shardBlock() of its --batch-size.
int alignBatch(const AlignCommand& a) {
    if (a.batch_size < 1 || a.batch_size > 4096)
        throw attnlab::ConfigError("--batch-size " + std::to_string(a.batch_size) + " is out of range (1..4096)");
    return a.batch_size;
}

// The run an alignment result records: the method chosen is an option; the dev set, when given, an input.
attnlab::CorpusRun alignRun(const AlignCommand& a, const attnlab::Translator& translator,
                            const attnlab::Translator* reverse, const Pairs& all) {
    std::vector<std::string> gold_lines;
    if (!a.gold.empty()) gold_lines = attnlab::readTextLines(a.gold);
    std::vector<std::pair<std::string, const std::vector<std::string>*>> inputs{{"src", &all.sources},
                                                                                {"tgt", &all.targets}};
    if (!a.gold.empty()) inputs.emplace_back("gold", &gold_lines);
    std::vector<std::vector<std::string>> dev;
    for (const auto& f : a.dev) dev.push_back(attnlab::readTextLines(f));
    for (size_t i = 0; i < dev.size(); ++i)
        inputs.emplace_back(i == 0 ? "dev src" : i == 1 ? "dev tgt" : "dev gold", &dev[i]);
    auto run = corpusRun(a.cmd, translator, a.corpus, inputs, alignBatch(a));
    run.options.emplace_back("reverse model",
                             reverse ? attnlab::modelFingerprint(reverse->info().package_dir) : "none");
    return run;
}
}  // namespace

int runAlign(const CommonOptions& common, const AlignCommand& a) {
    auto method = attnlab::parseAlignmentMethod(a.method);
    if (!(a.threshold >= 0 && a.threshold <= 1))
        throw attnlab::ConfigError("--threshold " + std::to_string(a.threshold) + " is out of range (0..1)");
    // --json alone: the scores without the links (what a --slurm task writes; the links would be one file for all)
    if (a.output.empty() && a.json_path.empty())
        throw attnlab::ConfigError(
            "align writes its links to --output FILE, its scores to --json FILE: give one or both");
    const attnlab::Shard shard = a.corpus.parsed();
    const Pairs all = readPairs(a.src, a.tgt, a.gold, a);
    const auto range = attnlab::shardLines(all.sources.size(), shard, attnlab::shardBlock(alignBatch(a)));
    const Pairs test = partOf(all, range);
    const std::optional<Pairs> dev =
        a.dev.empty() ? std::nullopt : std::optional<Pairs>(readPairs(a.dev[0], a.dev[1], a.dev[2], a));
    auto translator = load(common);
    const auto& shape = translator.info().config.model;
    if (auto why = attnlab::alignmentMethodProblem(method, int(shape.decoderLayers()), int(shape.n_head)))
        throw attnlab::ConfigError("--method " + a.method + ": " + *why);
    std::optional<attnlab::Translator> reverse;
    if (const std::string dir = reverseModelDir(a, translator.info().config); !dir.empty()) {
        CommonOptions other = common;
        other.model = dir;
        reverse.emplace(load(other));
    }
    if (method.sym != attnlab::Symmetrization::None && !reverse)
        throw attnlab::ConfigError("--method " + a.method +
                                   ": a symmetrised method needs a model of the other direction (--reverse-model)");
    if (method.sym != attnlab::Symmetrization::None) {
        const auto& back = reverse->info().config.model;
        if (auto why = attnlab::alignmentMethodProblem(method, int(back.decoderLayers()), int(back.n_head)))
            throw attnlab::ConfigError("--method " + a.method + ": the reverse model (" + reverse->info().package_dir +
                                       ") has no such method: " + *why);
    }
    ProgressLine progress;
    const attnlab::Translator* back = reverse ? &*reverse : nullptr;
    std::optional<attnlab::AlignmentReport> dev_rep;
    if (dev) {  // the method is chosen there, never on the pairs it is reported on
        dev_rep = attnlab::alignCorpus(
            translator, dev->sources, dev->targets, dev->goldOrNull(), dev->gold_name, a.threshold, progress.callback(),
            back, {a.languages.source_language, a.languages.target_language}, {0, 0, false, a.batch_size});
        progress.clear();
        reportSkipped(dev_rep->skipped, "aligned in the development set");
        method = dev_rep->methods[static_cast<size_t>(dev_rep->best)].method;
        std::cout << "chosen on the development set (" << dev_rep->pairs - int(dev_rep->skipped.size())
                  << " pairs): " << shownMethod(method) << ", AER " << std::fixed << std::setprecision(3)
                  << dev_rep->methods[static_cast<size_t>(dev_rep->best)].counts.aer() << "\n";
    }
    const auto run = alignRun(a, translator, back, all);
    announcePart(run);
    auto rep =
        attnlab::alignCorpus(translator, test.sources, test.targets, test.goldOrNull(), test.gold_name, a.threshold,
                             progress.callback(), back, {a.languages.source_language, a.languages.target_language},
                             {range.begin, size_t(run.block), !run.shard.whole(), a.batch_size}, &method);
    progress.clear();
    countFromCorpus(rep.skipped, range.begin, a.gold);
    if (!a.output.empty()) attnlab::writeHeadLabFile(a.output, attnlab::alignmentLinksText(rep, method));
    if (!a.json_path.empty())
        attnlab::writeHeadLabFile(
            a.json_path,
            attnlab::withRun(attnlab::alignmentJson(rep, translator.info(), dev_rep ? &*dev_rep : nullptr), run));
    reportSkipped(rep.skipped, "aligned");
    std::cout << rep.pairs - int(rep.skipped.size()) << " of " << rep.pairs << " sentence pairs aligned";
    if (!a.output.empty())
        std::cout << "; " << a.output << ": links of " << shownMethod(method) << " (--method "
                  << attnlab::alignmentMethodName(method) << "; layers and heads counted from 1)";
    std::cout << "\n";
    if (rep.has_gold) printScores(rep, method);
    if (!a.json_path.empty()) std::cout << "wrote " << a.json_path << "\n";
    return 0;
}

}  // namespace attnlab_cli
