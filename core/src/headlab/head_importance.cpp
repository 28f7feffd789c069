// The head lab's importance runners (attnlab/head_lab.h): ablation BLEU and the pruning curve with
// bootstrap intervals (Michel et al. 2019's experiment, judged against the noise of one test set), and
// gradient importance.
#include <attnlab/errors.h>
#include <attnlab/head_lab.h>
#include <attnlab/metrics.h>

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

struct RunScore {
    double bleu = 0, chrf = 0;
    std::string signature;
    std::vector<BleuStats> sentences;  // for the bootstrap
};

// Translates the corpus once per job (a set of heads to ablate), the jobs spread over the
// translators, one thread each (a single translator runs on the calling thread). Progress and
// cancellation go through one lock; the first exception of any job is rethrown after all stop.
class ImportanceRunner {
public:
    ImportanceRunner(const std::vector<const Translator*>& translators, const std::vector<std::string>& sources,
                     const std::vector<std::string>& references, const ImportanceOptions& options,
                     const CorpusCallback& progress, int runs)
        : m_translators(translators),
          m_sources(sources),
          m_refs(references),
          m_options(options),
          m_progress(progress),
          m_runs(runs) {}

    std::vector<RunScore> run(const std::vector<std::vector<HeadRef>>& jobs, const std::string& stage) {
        std::vector<RunScore> scores(jobs.size());
        std::atomic<size_t> next{0};
        std::exception_ptr error;
        auto work = [&](const Translator& t) {
            try {
                for (size_t j = next++; j < jobs.size() && !m_cancelled; j = next++) scores[j] = one(t, jobs[j], stage);
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

    RunScore one(const Translator& t, const std::vector<HeadRef>& ablate, const std::string& stage) {
        if (!tick(stage)) throw CancelledError();
        DecodingOptions d = m_options.decoding;
        d.return_attention = false;
        d.top_k_candidates = 0;
        d.record_trace = false;
        d.ablate = ablate;
        const auto results = t.translateBatch(m_sources, d, [&](const StepProgress&) { return tick(stage); });
        std::vector<std::string> hyps;
        for (const auto& r : results) hyps.push_back(r.best.text);
        RunScore score;
        score.sentences = sentenceBleuStats(hyps, m_refs);
        BleuStats sum;
        for (const auto& s : score.sentences) sum += s;
        const auto bleu = bleuFromStats(sum);
        score.bleu = bleu.score;
        score.chrf = corpusChrf(hyps, m_refs);
        score.signature = bleu.signature;
        std::lock_guard<std::mutex> lock(m_mutex);
        ++m_done;
        return score;
    }

    const std::vector<const Translator*>& m_translators;
    const std::vector<std::string>& m_sources;
    const std::vector<std::string>& m_refs;
    const ImportanceOptions& m_options;
    const CorpusCallback& m_progress;
    const int m_runs;
    std::mutex m_mutex;
    int m_done = 0;
    std::atomic<bool> m_cancelled{false};
};

// The pruning curve's bootstrap intervals (the same resamples for every point, paired with the
// baseline's sentences) and the most heads removed before the first significant loss.
void addIntervals(ImportanceReport& rep, const std::vector<const RunScore*>& points, const ImportanceOptions& o) {
    rep.bootstrap_resamples = o.bootstrap_resamples;
    if (o.bootstrap_resamples == 0) return;
    const auto resamples =
        bootstrapResamples(points.front()->sentences.size(), o.bootstrap_resamples, o.bootstrap_seed);
    for (size_t i = 0; i < rep.curve.size(); ++i)
        rep.curve[i].interval = pairedBootstrap(points.front()->sentences, points[i]->sentences, resamples);
    rep.removable_heads = removableHeads(rep.curve);
}

// Spearman's rho between the heads' BLEU drop when ablated and their normalised gradient importance.
double rankCorrelation(const ImportanceReport& rep) {
    std::vector<double> drop, grad;
    for (const auto& h : rep.heads)
        if (const auto* g = rep.gradient->find(h.head)) drop.push_back(h.bleu_drop), grad.push_back(g->normalized);
    return spearmanCorrelation(drop, grad);
}

}  // namespace

ImportanceReport headImportance(const Translator& translator, const std::vector<std::string>& sources,
                                const std::vector<std::string>& references, const ImportanceOptions& options,
                                const CorpusCallback& progress) {
    return headImportance(std::vector<const Translator*>{&translator}, sources, references, options, progress);
}

ImportanceReport headImportance(const std::vector<const Translator*>& translators,
                                const std::vector<std::string>& sources, const std::vector<std::string>& references,
                                const ImportanceOptions& options, const CorpusCallback& progress) {
    options.validate();
    if (translators.empty()) throw ConfigError("importance: no translator given");
    const Translator& first = *translators.front();
    checkCounts(sources.size(), references.size(), "references");
    std::vector<SkippedPair> skipped;
    const auto usable = readableLines(first, sources, nullptr, "", skipped);
    checkSomethingLeft(sources.size(), skipped, "line could be read");
    if (usable.size() < sources.size()) {  // the readable lines alone
        auto rep = headImportance(translators, pick(sources, usable), pick(references, usable), options, progress);
        if (rep.gradient) {  // its pairs counted among the readable lines: back to input lines, with those left out
            for (auto& k : rep.gradient->skipped) k.pair = static_cast<int>(usable.at(size_t(k.pair - 1)) + 1);
            rep.gradient->skipped.insert(rep.gradient->skipped.end(), skipped.begin(), skipped.end());
            sortSkipped(rep.gradient->skipped);
        }
        rep.skipped = std::move(skipped);
        return rep;
    }
    const auto heads = headsOf(first, options.kinds);
    const int curve_points = static_cast<int>((heads.size() + options.curve_step - 1) / options.curve_step);
    // The gradients count as one more run (a few seconds, against minutes for the translations).
    ImportanceRunner runner(translators, sources, references, options, progress,
                            1 + static_cast<int>(heads.size()) + curve_points + (options.gradient ? 1 : 0));
    // The baseline and every head alone, then the curve (its order needs the single results).
    std::vector<std::vector<HeadRef>> singles{{}};
    for (const auto& h : heads) singles.push_back({h});
    const auto single = runner.run(singles, "ablating one head at a time");
    ImportanceReport rep;
    rep.sentences = static_cast<int>(sources.size());
    rep.baseline_bleu = single[0].bleu;
    rep.baseline_chrf = single[0].chrf;
    rep.bleu_signature = single[0].signature;
    for (size_t i = 0; i < heads.size(); ++i)
        rep.heads.push_back({heads[i], single[i + 1].bleu, single[i + 1].chrf, rep.baseline_bleu - single[i + 1].bleu});
    std::stable_sort(rep.heads.begin(), rep.heads.end(), [](const HeadImportance& a, const HeadImportance& b) {
        return a.bleu != b.bleu ? a.bleu > b.bleu : a.chrf > b.chrf;  // chrF breaks BLEU's ties
    });
    rep.curve.push_back({0, rep.baseline_bleu, rep.baseline_chrf, {}, {}});
    std::vector<std::vector<HeadRef>> cumulative;
    std::vector<HeadRef> removed;
    for (size_t k = 0; k < rep.heads.size(); ++k) {
        removed.push_back(rep.heads[k].head);
        if (removed.size() % static_cast<size_t>(options.curve_step) == 0 || k + 1 == rep.heads.size())
            cumulative.push_back(removed);
    }
    const auto curve = runner.run(cumulative, "removing the least important heads");
    for (size_t i = 0; i < cumulative.size(); ++i)
        rep.curve.push_back({static_cast<int>(cumulative[i].size()), curve[i].bleu, curve[i].chrf, cumulative[i], {}});
    std::vector<const RunScore*> points{&single[0]};
    for (const auto& c : curve) points.push_back(&c);
    addIntervals(rep, points, options);
    if (options.gradient) {
        const int total = runner.total();
        rep.gradient =
            gradientImportance(first, sources, references, options.kinds, options.gradient_batch_size,
                               [&](const CorpusProgress& p) { return report(progress, p.stage, total - 1, total); });
        rep.rank_correlation = rankCorrelation(rep);
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

GradientImportanceReport gradientImportance(const Translator& translator, const std::vector<std::string>& sources,
                                            const std::vector<std::string>& references,
                                            const std::vector<AttentionKind>& kinds, int batch_size,
                                            const CorpusCallback& progress) {
    const auto t0 = std::chrono::steady_clock::now();
    checkCounts(sources.size(), references.size(), "references");
    DecodingOptions d;
    d.max_batch_size = batch_size;
    d.validate();
    GradientImportanceReport rep;
    auto usable = readableLines(translator, sources, &references, "reference", rep.skipped);
    checkSomethingLeft(sources.size(), rep.skipped, "line could be read");
    const auto tick = [&](const StepProgress& p) {
        return report(progress, "gradients of the head gates", p.sentence_begin, p.sentences_total);
    };
    HeadGateGradients g;
    try {
        g = translator.headGateGradients(pick(sources, usable), pick(references, usable), d, tick);
    } catch (const InputError&) {  // a pair only the engine cannot read (the target's tokenizer): leave it out
        DecodingOptions plain = d;
        plain.return_attention = false;
        forcePairs(translator, sources, references, usable, rep.skipped, "", plain);
        sortSkipped(rep.skipped);
        checkSomethingLeft(sources.size(), rep.skipped, "line could be read");
        g = translator.headGateGradients(pick(sources, usable), pick(references, usable), d, tick);
    }
    report(progress, "gradients of the head gates", int(usable.size()), int(usable.size()));
    rep.sentences = static_cast<int>(usable.size());
    for (size_t k = 0; k < g.heads.size(); ++k) {
        if (!kinds.empty() && std::find(kinds.begin(), kinds.end(), g.heads[k].kind) == kinds.end()) continue;
        double sum = 0;
        for (const auto& pair : g.per_pair) sum += pair[k];
        rep.heads.push_back({g.heads[k], sum / double(g.per_pair.size()), 0.0});
    }
    normalizePerLayer(rep.heads);
    std::stable_sort(rep.heads.begin(), rep.heads.end(), [](const GradientImportance& a, const GradientImportance& b) {
        return a.normalized < b.normalized;
    });
    rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return rep;
}

}  // namespace attnlab
