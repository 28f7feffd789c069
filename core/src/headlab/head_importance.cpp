// The head lab's importance runners (attnlab/head_lab.h): ablation BLEU and the pruning curve with
// bootstrap intervals (Michel et al. 2019's experiment, judged against the noise of one test set), and
// gradient importance; in the steps a run split over processes takes (attnlab/importance_parts.h).
#include <attnlab/errors.h>
#include <attnlab/head_lab.h>
#include <attnlab/importance_parts.h>
#include <attnlab/metrics.h>
#include <attnlab/partial_result.h>

#include "headlab/corpus_lines.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <thread>

namespace attnlab {

using namespace headlab;

void ImportanceOptions::validate() const {
    decoding.validate();
    if (curve_step < 1)
        throw ConfigError("importance options: curve_step " + std::to_string(curve_step) + " is below 1");
    if (bootstrap_resamples < 0 || bootstrap_resamples > kMaxBootstrapResamples)
        throw ConfigError("importance options: bootstrap_resamples " + std::to_string(bootstrap_resamples) +
                          " is out of range (0.." + std::to_string(kMaxBootstrapResamples) + ")");
    if (gradient_batch_size < 1)
        throw ConfigError("importance options: gradient_batch_size " + std::to_string(gradient_batch_size) +
                          " is below 1");
}

namespace {

// The readable lines of a corpus cut at its blocks (attnlab::chunkEnd without a chunk of its own): a translation
// batches within one of these only, so that a line is batched with the same lines in a part as in the whole run.
std::vector<std::vector<size_t>> blocksOf(const std::vector<size_t>& usable, const CorpusPlace& place) {
    std::vector<std::vector<size_t>> out;
    size_t end = 0;
    for (size_t line : usable) {
        if (out.empty() || place.first_line + line >= end) {
            out.emplace_back();
            end = chunkEnd(place.first_line + line, place.block, 0);
        }
        out.back().push_back(line);
    }
    return out;
}

// Translates the corpus once per job (a set of heads to ablate), the jobs spread over the
// translators, one thread each (a single translator runs on the calling thread). Progress and
// cancellation go through one lock; the first exception of any job is rethrown after all stop.
class ImportanceRunner {
public:
    ImportanceRunner(const std::vector<const Translator*>& translators, const AblationCorpus& corpus,
                     const ImportanceOptions& options, const CorpusCallback& progress, int runs)
        : m_translators(translators),
          m_corpus(corpus),
          m_blocks(blocksOf(corpus.usable, corpus.place)),
          m_options(options),
          m_progress(progress),
          m_runs(runs) {}

    std::vector<AblationRun> run(const std::vector<std::vector<HeadRef>>& jobs, const std::string& stage,
                                 bool keep_sentences) {
        std::vector<AblationRun> scores(jobs.size());
        std::atomic<size_t> next{0};
        std::exception_ptr error;
        auto work = [&](const Translator& t) {
            try {
                for (size_t j = next++; j < jobs.size() && !m_cancelled; j = next++)
                    scores[j] = one(t, jobs[j], stage, keep_sentences || jobs[j].empty());
            } catch (...) {
                std::lock_guard<std::mutex> lock(m_mutex);
                if (!error) error = std::current_exception();
                m_cancelled = true;
            }
        };
        if (m_translators.size() == 1) {
            work(*m_translators.front());
        } else {
            std::vector<std::thread> threads;
            for (const Translator* t : m_translators) threads.emplace_back(work, std::cref(*t));
            for (auto& th : threads) th.join();
        }
        if (error) std::rethrow_exception(error);
        if (m_cancelled) throw CancelledError();
        return scores;
    }

    int total() const { return m_runs; }

private:
    bool tick(const std::string& stage) {
        std::lock_guard<std::mutex> lock(m_mutex);
        if (!m_cancelled && !report(m_progress, stage, m_done, m_runs)) m_cancelled = true;
        return !m_cancelled;
    }

    AblationRun one(const Translator& t, const std::vector<HeadRef>& ablate, const std::string& stage, bool keep) {
        if (!tick(stage)) throw CancelledError();
        DecodingOptions d = m_options.decoding;
        d.return_attention = false;
        d.top_k_candidates = 0;
        d.record_trace = false;
        d.ablate = ablate;
        AblationRun score;
        score.ablated = ablate;
        for (const auto& block : m_blocks) {
            const auto results =
                t.translateBatch(pick(m_corpus.sources, block), d, [&](const StepProgress&) { return tick(stage); });
            for (size_t i = 0; i < results.size(); ++i) {
                const std::string& ref = m_corpus.references[block[i]];
                const BleuStats b = sentenceBleuStats(results[i].best.text, ref);
                score.bleu += b;
                score.chrf += sentenceChrfStats(results[i].best.text, ref);
                if (keep) score.sentences.push_back(b);
            }
        }
        std::lock_guard<std::mutex> lock(m_mutex);
        ++m_done;
        return score;
    }

    const std::vector<const Translator*>& m_translators;
    const AblationCorpus& m_corpus;
    const std::vector<std::vector<size_t>> m_blocks;
    const ImportanceOptions& m_options;
    const CorpusCallback& m_progress;
    const int m_runs;
    std::mutex m_mutex;
    int m_done = 0;
    std::atomic<bool> m_cancelled{false};
};

}  // namespace

AblationCorpus ablationCorpus(const Translator& translator, const std::vector<std::string>& sources,
                              const std::vector<std::string>& references, const CorpusPlace& place) {
    checkCounts(sources.size(), references.size(), "references");
    AblationCorpus corpus{sources, references, {}, {}, place};
    corpus.usable = readableLines(translator, sources, nullptr, "", corpus.skipped);
    if (!place.part) checkSomethingLeft(sources.size(), corpus.skipped, "line could be read");
    return corpus;
}

std::vector<HeadRef> importanceHeads(const Translator& translator, const std::vector<AttentionKind>& kinds) {
    return headsOf(translator, kinds);
}

ShardBy parseShardBy(const std::string& text) {
    if (text == "lines") return ShardBy::Lines;
    if (text == "heads") return ShardBy::Heads;
    throw ConfigError("--shard-by " + text + ": lines or heads");
}

std::string shardByName(ShardBy by) { return by == ShardBy::Heads ? "heads" : "lines"; }

LineRange jobGroup(size_t jobs, const Shard& shard) { return shardLines(jobs, shard, 1); }

std::vector<std::vector<HeadRef>> singleJobs(const std::vector<HeadRef>& heads) {
    std::vector<std::vector<HeadRef>> jobs{{}};
    for (const auto& h : heads) jobs.push_back({h});
    return jobs;
}

std::vector<AblationRun> runAblations(const std::vector<const Translator*>& translators, const AblationCorpus& corpus,
                                      const ImportanceOptions& options, const std::vector<std::vector<HeadRef>>& jobs,
                                      bool keep_sentences, const CorpusCallback& progress) {
    options.validate();
    if (translators.empty()) throw ConfigError("importance: no translator given");
    ImportanceRunner runner(translators, corpus, options, progress, int(jobs.size()));
    auto runs = runner.run(jobs, "ablating heads", keep_sentences);
    report(progress, "done", runner.total(), runner.total());
    return runs;
}

ImportanceReport rankedSingles(const std::vector<HeadRef>& heads, const std::vector<AblationRun>& runs) {
    if (runs.size() != heads.size() + 1)
        throw InternalError("importance: " + std::to_string(runs.size()) + " runs for " + std::to_string(heads.size()) +
                            " heads and the baseline");
    ImportanceReport rep;
    const BleuScore base = bleuFromStats(runs[0].bleu);
    rep.baseline_bleu = base.score;
    rep.baseline_chrf = chrfFromStats(runs[0].chrf);
    rep.bleu_signature = base.signature;
    for (size_t i = 0; i < heads.size(); ++i) {
        const double bleu = bleuFromStats(runs[i + 1].bleu).score;
        rep.heads.push_back({heads[i], bleu, chrfFromStats(runs[i + 1].chrf), rep.baseline_bleu - bleu});
    }
    std::stable_sort(rep.heads.begin(), rep.heads.end(), [](const HeadImportance& a, const HeadImportance& b) {
        return a.bleu != b.bleu ? a.bleu > b.bleu : a.chrf > b.chrf;  // chrF breaks BLEU's ties
    });
    rep.curve.push_back({0, rep.baseline_bleu, rep.baseline_chrf, {}, {}});
    return rep;
}

std::vector<std::vector<HeadRef>> curveSets(const std::vector<HeadImportance>& ranked, int curve_step) {
    std::vector<std::vector<HeadRef>> cumulative;
    std::vector<HeadRef> removed;
    for (size_t k = 0; k < ranked.size(); ++k) {
        removed.push_back(ranked[k].head);
        if (removed.size() % static_cast<size_t>(curve_step) == 0 || k + 1 == ranked.size())
            cumulative.push_back(removed);
    }
    return cumulative;
}

// The pruning curve's bootstrap intervals (the same resamples for every point, paired with the
// baseline's sentences) and the most heads removed before the first significant loss.
void addCurve(ImportanceReport& rep, const std::vector<AblationRun>& points, const std::vector<BleuStats>& baseline,
              const ImportanceOptions& o) {
    for (const auto& p : points)
        rep.curve.push_back(
            {static_cast<int>(p.ablated.size()), bleuFromStats(p.bleu).score, chrfFromStats(p.chrf), p.ablated, {}});
    rep.bootstrap_resamples = o.bootstrap_resamples;
    if (o.bootstrap_resamples == 0) return;
    const auto resamples = bootstrapResamples(baseline.size(), o.bootstrap_resamples, o.bootstrap_seed);
    rep.curve[0].interval = pairedBootstrap(baseline, baseline, resamples);
    for (size_t i = 1; i < rep.curve.size(); ++i)
        rep.curve[i].interval = pairedBootstrap(baseline, points.at(i - 1).sentences, resamples);
    rep.removable_heads = removableHeads(rep.curve);
}

// Spearman's rho between the heads' BLEU drop when ablated and their normalised gradient importance.
double importanceRankCorrelation(const ImportanceReport& rep) {
    std::vector<double> drop, grad;
    if (rep.gradient)
        for (const auto& h : rep.heads)
            if (const auto* g = rep.gradient->find(h.head)) drop.push_back(h.bleu_drop), grad.push_back(g->normalized);
    return spearmanCorrelation(drop, grad);
}

ImportanceReport headImportance(const Translator& translator, const std::vector<std::string>& sources,
                                const std::vector<std::string>& references, const ImportanceOptions& options,
                                const CorpusCallback& progress) {
    return corpusImportance({&translator}, sources, references, options, {}, progress);
}

ImportanceReport headImportance(const std::vector<const Translator*>& translators,
                                const std::vector<std::string>& sources, const std::vector<std::string>& references,
                                const ImportanceOptions& options, const CorpusCallback& progress) {
    return corpusImportance(translators, sources, references, options, {}, progress);
}

ImportanceReport corpusImportance(const std::vector<const Translator*>& translators,
                                  const std::vector<std::string>& sources, const std::vector<std::string>& references,
                                  const ImportanceOptions& options, const CorpusPlace& place,
                                  const CorpusCallback& progress) {
    options.validate();
    if (translators.empty()) throw ConfigError("importance: no translator given");
    const Translator& first = *translators.front();
    const AblationCorpus corpus = ablationCorpus(first, sources, references, place);
    const auto heads = headsOf(first, options.kinds);
    const int curve_points = static_cast<int>((heads.size() + options.curve_step - 1) / options.curve_step);
    // The gradients count as one more run (a few seconds, against minutes for the translations).
    ImportanceRunner runner(translators, corpus, options, progress,
                            1 + static_cast<int>(heads.size()) + curve_points + (options.gradient ? 1 : 0));
    // The baseline and every head alone, then the curve (its order needs the single results).
    const auto single = runner.run(singleJobs(heads), "ablating one head at a time", false);
    ImportanceReport rep = rankedSingles(heads, single);
    rep.sentences = static_cast<int>(corpus.usable.size());
    rep.skipped = corpus.skipped;
    const auto curve = runner.run(curveSets(rep.heads, options.curve_step), "removing the least important heads",
                                  options.bootstrap_resamples > 0);
    addCurve(rep, curve, single[0].sentences, options);
    if (options.gradient) {
        const int total = runner.total();
        auto sums = gradientSums(first, sources, references, options.kinds, options.gradient_batch_size, place,
                                 [&](const CorpusProgress& p) { return report(progress, p.stage, total - 1, total); });
        finishGradient(sums);
        rep.gradient = std::move(sums.report);
        rep.rank_correlation = importanceRankCorrelation(rep);
    }
    report(progress, "done", runner.total(), runner.total());
    return rep;
}

namespace {
std::vector<double> ranks(const std::vector<double>& v) {
    std::vector<size_t> order(v.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
    std::vector<double> r(v.size());
    for (size_t i = 0; i < order.size();) {
        size_t j = i;
        while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
        for (size_t k = i; k <= j; ++k) r[order[k]] = (double(i) + double(j)) / 2.0 + 1.0;  // ties: mean rank
        i = j + 1;
    }
    return r;
}

// Michel et al.'s normalisation: each head's importance over the L2 norm of its layer's.
void normalizePerLayer(std::vector<GradientImportance>& heads) {
    std::map<std::pair<int, int>, double> squares;
    for (const auto& h : heads) squares[{int(h.head.kind), h.head.layer}] += h.raw * h.raw;
    for (auto& h : heads) {
        const double norm = std::sqrt(squares[{int(h.head.kind), h.head.layer}]);
        h.normalized = norm > 0 ? h.raw / norm : 0.0;
    }
}
}  // namespace

double spearmanCorrelation(const std::vector<double>& a, const std::vector<double>& b) {
    if (a.size() != b.size())
        throw InputError("rank correlation: " + std::to_string(a.size()) + " against " + std::to_string(b.size()) +
                         " values");
    const double nan = std::numeric_limits<double>::quiet_NaN();
    if (a.size() < 2) return nan;
    const auto ra = ranks(a), rb = ranks(b);  // Pearson's correlation of the ranks
    const double n = double(a.size()), mean = (n + 1) / 2;
    double sab = 0, saa = 0, sbb = 0;
    for (size_t i = 0; i < ra.size(); ++i) {
        sab += (ra[i] - mean) * (rb[i] - mean);
        saa += (ra[i] - mean) * (ra[i] - mean);
        sbb += (rb[i] - mean) * (rb[i] - mean);
    }
    return saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : nan;
}

int removableHeads(const std::vector<PruningPoint>& curve) {
    if (curve.empty() || curve.front().interval.resamples == 0) return -1;
    for (size_t i = 0; i < curve.size(); ++i)
        if (curve[i].significantLoss()) return i > 0 ? curve[i - 1].heads_removed : 0;
    return curve.back().heads_removed;
}

const GradientImportance* GradientImportanceReport::find(const HeadRef& h) const {
    for (const auto& g : heads)
        if (g.head == h) return &g;
    return nullptr;
}

namespace {
// The head-gate gradients of one block's pairs (`lines`, readable on both sides); a pair only the engine cannot read
// (the target's tokenizer) is left out and listed.
HeadGateGradients blockGradients(const Translator& translator, const std::vector<std::string>& sources,
                                 const std::vector<std::string>& references, std::vector<size_t>& lines,
                                 std::vector<SkippedPair>& skipped, const DecodingOptions& d,
                                 const StepCallback& tick) {
    try {
        return translator.headGateGradients(pick(sources, lines), pick(references, lines), d, tick);
    } catch (const InputError&) {
        DecodingOptions plain = d;
        plain.return_attention = false;
        forcePairs(translator, sources, references, lines, skipped, "", plain);
        if (lines.empty()) return {};
        return translator.headGateGradients(pick(sources, lines), pick(references, lines), d, tick);
    }
}
}  // namespace

GradientSums gradientSums(const Translator& translator, const std::vector<std::string>& sources,
                          const std::vector<std::string>& references, const std::vector<AttentionKind>& kinds,
                          int batch_size, const CorpusPlace& place, const CorpusCallback& progress) {
    const auto t0 = std::chrono::steady_clock::now();
    checkCounts(sources.size(), references.size(), "references");
    DecodingOptions d;
    d.max_batch_size = batch_size;
    d.validate();
    GradientSums out;
    out.heads = headsOf(translator, kinds);  // an empty part has them too
    auto& rep = out.report;
    const auto usable = readableLines(translator, sources, &references, "reference", rep.skipped);
    if (!place.part) checkSomethingLeft(sources.size(), rep.skipped, "line could be read");
    int done = 0;
    const int total = int(usable.size());
    for (auto lines : blocksOf(usable, place)) {
        const auto tick = [&](const StepProgress& p) {
            return report(progress, "gradients of the head gates", done + p.sentence_begin, total);
        };
        const HeadGateGradients g = blockGradients(translator, sources, references, lines, rep.skipped, d, tick);
        done += int(lines.size());
        if (lines.empty()) continue;
        std::vector<double> sums;
        for (size_t k = 0; k < g.heads.size(); ++k) {
            if (!kinds.empty() && std::find(kinds.begin(), kinds.end(), g.heads[k].kind) == kinds.end()) continue;
            if (sums.size() >= out.heads.size() || !(out.heads[sums.size()] == g.heads[k]))
                throw InternalError("gradient importance: the gates' heads are not the model's in its order");
            double sum = 0;
            for (const auto& pair : g.per_pair) sum += pair[k];
            sums.push_back(sum);
        }
        out.blocks.push_back(std::move(sums));
        rep.sentences += int(lines.size());
    }
    sortSkipped(rep.skipped);
    if (!place.part) checkSomethingLeft(sources.size(), rep.skipped, "line could be read");
    report(progress, "gradients of the head gates", total, total);
    rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return out;
}

void finishGradient(GradientSums& sums) {
    auto& rep = sums.report;
    rep.heads.clear();
    for (size_t k = 0; k < sums.heads.size(); ++k) {
        double sum = 0;
        for (const auto& block : sums.blocks) sum += block.at(k);
        rep.heads.push_back({sums.heads[k], rep.sentences > 0 ? sum / double(rep.sentences) : 0.0, 0.0});
    }
    normalizePerLayer(rep.heads);
    std::stable_sort(rep.heads.begin(), rep.heads.end(), [](const GradientImportance& a, const GradientImportance& b) {
        return a.normalized < b.normalized;
    });
}

GradientImportanceReport gradientImportance(const Translator& translator, const std::vector<std::string>& sources,
                                            const std::vector<std::string>& references,
                                            const std::vector<AttentionKind>& kinds, int batch_size,
                                            const CorpusCallback& progress) {
    auto sums = gradientSums(translator, sources, references, kinds, batch_size, {}, progress);
    finishGradient(sums);
    return std::move(sums.report);
}

}  // namespace attnlab
