// The head lab's corpus runners (attnlab/head_lab.h).
#include <attnlab/errors.h>
#include <attnlab/head_lab.h>
#include <attnlab/metrics.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

namespace attnlab {

namespace {

constexpr size_t kChunk = 256;  // sentences whose maps are held at once (~30 MB for the bundled model)

void checkCounts(size_t sources, size_t others, const char* what) {
    if (sources != others)
        throw InputError("mismatched inputs: " + std::to_string(sources) + " source sentences but " +
                         std::to_string(others) + " " + what);
}

// The lines of a corpus run that the model can read (both sides, when there is a second), in
// order; the others go to `skipped` with the side and the reason.
std::vector<size_t> readableLines(const Translator& t, const std::vector<std::string>& sources,
                                  const std::vector<std::string>* second, const char* second_name,
                                  std::vector<SkippedPair>& skipped) {
    std::vector<size_t> usable;
    for (size_t i = 0; i < sources.size(); ++i) {
        if (auto why = t.inputProblem(sources[i]))
            skipped.push_back({static_cast<int>(i + 1), "source: " + *why});
        else if (auto why_second = second ? t.inputProblem((*second)[i]) : std::nullopt)
            skipped.push_back({static_cast<int>(i + 1), std::string(second_name) + ": " + *why_second});
        else
            usable.push_back(i);
    }
    return usable;
}

// When every line was skipped: an error naming the first and why.
void checkSomethingLeft(size_t lines, const std::vector<SkippedPair>& skipped, const std::string& what) {
    if (lines > 0 && skipped.size() == lines)
        throw InputError("no " + what + " (line " + std::to_string(skipped.front().pair) + ": " +
                         skipped.front().reason + ")");
}

std::vector<std::string> pick(const std::vector<std::string>& lines, const std::vector<size_t>& which) {
    std::vector<std::string> out;
    out.reserve(which.size());
    for (size_t i : which) out.push_back(lines[i]);
    return out;
}

bool report(const CorpusCallback& cb, const std::string& stage, int done, int total) {
    return !cb || cb({stage, done, total});
}

std::vector<HeadRef> headsOf(const Translator& t, const std::vector<AttentionKind>& kinds) {
    const auto& m = t.info().config.model;
    std::vector<HeadRef> heads;
    for (auto kind : {AttentionKind::EncoderSelf, AttentionKind::DecoderSelf, AttentionKind::Cross}) {
        if (!kinds.empty() && std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) continue;
        for (int l = 0; l < m.layers(kind); ++l)
            for (int h = 0; h < m.n_head; ++h) heads.push_back({kind, l, h});
    }
    return heads;
}

// Teacher-forces `pairs` (indices into sources and targets) with `t`; a pair it cannot read is
// skipped (`side` before the reason) and dropped from `pairs`. Results in the order of `pairs`.
std::vector<TranslationResult> forcePairs(const Translator& t, const std::vector<std::string>& sources,
                                          const std::vector<std::string>& targets, std::vector<size_t>& pairs,
                                          std::vector<SkippedPair>& skipped, const std::string& side,
                                          const DecodingOptions& d, const StepCallback& cancel = {}) {
    std::vector<std::string> src, trg;
    for (size_t pair : pairs) src.push_back(sources[pair]), trg.push_back(targets[pair]);
    try {
        return t.teacherForce(src, trg, d, cancel);
    } catch (const InputError&) {  // one the model cannot read: find it, keep the rest
    }
    std::vector<TranslationResult> results;
    std::vector<size_t> kept;
    for (size_t k = 0; k < pairs.size(); ++k) try {
            results.push_back(t.teacherForce({src[k]}, {trg[k]}, d, cancel).front());
            kept.push_back(pairs[k]);
        } catch (const InputError& e) {
            std::string why = e.what();
            const std::string one = "pair 1: ";  // the engine numbers the one pair it was given
            if (why.rfind(one, 0) == 0) why = why.substr(one.size());
            skipped.push_back({static_cast<int>(pairs[k] + 1), side + why});
        }
    pairs = std::move(kept);
    return results;
}

void sortSkipped(std::vector<SkippedPair>& skipped) {
    std::sort(skipped.begin(), skipped.end(),
              [](const SkippedPair& a, const SkippedPair& b) { return a.pair < b.pair; });
}
}  // namespace

HeadStatsReport corpusHeadStatistics(const Translator& translator, const std::vector<std::string>& sources,
                                     const std::vector<std::string>* references, const DecodingOptions& decoding,
                                     int histogram_radius, const CorpusCallback& progress) {
    if (references) checkCounts(sources.size(), references->size(), "references");
    std::vector<SkippedPair> skipped;
    const auto usable = readableLines(translator, sources, references, "reference", skipped);
    checkSomethingLeft(sources.size(), skipped, "line could be read");
    DecodingOptions d = decoding;
    d.return_attention = true;
    d.top_k_candidates = 0;
    d.record_trace = false;
    d.validate();
    HeadStatsAccumulator acc(histogram_radius);
    std::vector<size_t> added;  // the input line of each sentence the statistics hold, in order
    const int total = static_cast<int>(sources.size());
    const std::string stage = references ? "teacher-forcing the references" : "translating";
    for (size_t begin = 0; begin < usable.size(); begin += kChunk) {
        std::vector<size_t> lines(usable.begin() + std::ptrdiff_t(begin),
                                  usable.begin() + std::ptrdiff_t(std::min(usable.size(), begin + kChunk)));
        const int first = static_cast<int>(lines.front());
        if (!report(progress, stage, first, total)) throw CancelledError();
        const auto cancel = [&](const StepProgress& p) {
            return report(progress, stage, first + p.sentence_begin, total);
        };
        std::vector<TranslationResult> results;
        if (references) {
            results = forcePairs(translator, sources, *references, lines, skipped, "", d, cancel);
        } else {
            // The model's own translations: searched without maps, then teacher-forced through their
            // ids in batches (one padded pass per batch instead of one pass per sentence).
            DecodingOptions search = d;
            search.return_attention = false;
            results = translator.teacherForce(translator.translateBatch(pick(sources, lines), search, cancel), d);
        }
        for (size_t i = 0; i < results.size(); ++i) {
            acc.add(results[i]);
            added.push_back(lines[i]);
        }
    }
    report(progress, stage, total, total);
    checkSomethingLeft(sources.size(), skipped, "line could be read");
    HeadStatsReport rep = acc.report(references != nullptr);
    for (auto& h : rep.heads)  // the accumulator counts the sentences it was given: back to input lines
        for (int& k : h.typical_sentence)
            if (k >= 0) k = static_cast<int>(added.at(static_cast<size_t>(k)));
    sortSkipped(skipped);
    rep.skipped = std::move(skipped);
    return rep;
}

std::vector<HeadStatsDifference> compareHeadStatistics(const HeadStatsReport& a, const HeadStatsReport& b) {
    std::vector<HeadStatsDifference> out;
    for (const auto& h : a.heads)
        if (const HeadStats* other = b.find(h.head)) out.push_back({h.head, h.values, other->values});
    return out;
}

void ImportanceOptions::validate() const {
    decoding.validate();
    if (curve_step < 1)
        throw ConfigError("importance options: curve_step " + std::to_string(curve_step) + " is below 1");
}

namespace {

struct RunScore {
    double bleu = 0, chrf = 0;
    std::string signature;
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
        const auto bleu = corpusBleu(hyps, m_refs);
        RunScore score{bleu.score, corpusChrf(hyps, m_refs), bleu.signature};
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
        rep.skipped = std::move(skipped);
        return rep;
    }
    const auto heads = headsOf(first, options.kinds);
    const int curve_points = static_cast<int>((heads.size() + options.curve_step - 1) / options.curve_step);
    ImportanceRunner runner(translators, sources, references, options, progress,
                            1 + static_cast<int>(heads.size()) + curve_points);
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
    rep.curve.push_back({0, rep.baseline_bleu, rep.baseline_chrf, {}});
    std::vector<std::vector<HeadRef>> cumulative;
    std::vector<HeadRef> removed;
    for (size_t k = 0; k < rep.heads.size(); ++k) {
        removed.push_back(rep.heads[k].head);
        if (removed.size() % static_cast<size_t>(options.curve_step) == 0 || k + 1 == rep.heads.size())
            cumulative.push_back(removed);
    }
    const auto curve = runner.run(cumulative, "removing the least important heads");
    for (size_t i = 0; i < cumulative.size(); ++i)
        rep.curve.push_back({static_cast<int>(cumulative[i].size()), curve[i].bleu, curve[i].chrf, cumulative[i]});
    report(progress, "done", runner.total(), runner.total());
    return rep;
}

const AlignmentMethodReport* AlignmentReport::find(const AlignmentMethod& m) const {
    for (const auto& r : methods)
        if (r.method == m) return &r;
    return nullptr;
}

namespace {
// The links of every unsymmetrised method (allAlignmentMethods' order) of one result.
std::vector<AlignmentLinks> linksOfAllMethods(const TranslationResult& r, double threshold, PieceWords& source,
                                              PieceWords& target) {
    std::vector<AlignmentLinks> links;
    for (const auto& map : wordMapsOfAllMethods(r, &source, &target)) links.push_back(extractLinks(map, threshold));
    return links;
}

// The symmetrised methods a pair of models has: every heuristic over every method both models have,
// as (index among this model's methods, index among the reverse model's).
std::vector<std::pair<size_t, size_t>> symmetrisedPairs(const std::vector<AlignmentMethod>& forward,
                                                        const std::vector<AlignmentMethod>& reverse) {
    std::vector<std::pair<size_t, size_t>> out;
    for (size_t m = 0; m < forward.size(); ++m) {
        const auto at = std::find(reverse.begin(), reverse.end(), forward[m]);
        if (at != reverse.end()) out.push_back({m, static_cast<size_t>(at - reverse.begin())});
    }
    return out;
}

std::vector<AlignmentMethod> methodsOf(const Translator& t) {
    const auto& model = t.info().config.model;
    return allAlignmentMethods(static_cast<int>(model.decoderLayers()), static_cast<int>(model.n_head));
}

// The lowest AER among all methods, and among the unsymmetrised heads and layers.
void markBest(AlignmentReport& rep) {
    auto better = [&](int best, size_t m) {
        return best < 0 || rep.methods[m].counts.aer() < rep.methods[static_cast<size_t>(best)].counts.aer();
    };
    for (size_t m = 0; m < rep.methods.size(); ++m) {
        const auto& method = rep.methods[m].method;
        if (better(rep.best, m)) rep.best = static_cast<int>(m);
        if (method.sym != Symmetrization::None) continue;
        if (method.kind == AlignmentMethod::Kind::Head && better(rep.best_head, m)) rep.best_head = static_cast<int>(m);
        if (method.kind == AlignmentMethod::Kind::Layer && better(rep.best_layer, m))
            rep.best_layer = static_cast<int>(m);
    }
}
}  // namespace

AlignmentReport alignCorpus(const Translator& translator, const std::vector<std::string>& sources,
                            const std::vector<std::string>& targets, const std::vector<GoldAlignment>* gold,
                            const std::string& gold_name, double threshold, const CorpusCallback& progress,
                            const Translator* reverse) {
    checkCounts(sources.size(), targets.size(), "target sentences");
    if (gold) checkCounts(sources.size(), gold->size(), ("gold alignment lines in " + gold_name).c_str());
    AlignmentReport rep;
    rep.pairs = static_cast<int>(sources.size());
    rep.has_gold = gold != nullptr;
    rep.threshold = threshold;
    rep.symmetrised = reverse != nullptr;
    const auto base = methodsOf(translator);
    const auto sym = reverse ? symmetrisedPairs(base, methodsOf(*reverse)) : std::vector<std::pair<size_t, size_t>>{};
    for (const auto& m : base) rep.methods.push_back({m, {}, std::vector<AlignmentLinks>(sources.size())});
    for (auto how : kSymmetrizations)
        for (const auto& [m, unused] : sym) {
            AlignmentMethod method = base[m];
            method.sym = how;
            rep.methods.push_back({method, {}, std::vector<AlignmentLinks>(sources.size())});
        }
    const std::vector<size_t> usable = readableLines(translator, sources, &targets, "target", rep.skipped);
    DecodingOptions forcing;
    forcing.return_attention = true;
    forcing.top_k_candidates = 0;
    const int total = rep.pairs;
    for (size_t begin = 0; begin < usable.size(); begin += kChunk) {
        const size_t end = std::min(usable.size(), begin + kChunk);
        if (!report(progress, "aligning", static_cast<int>(usable[begin]), total)) throw CancelledError();
        std::vector<size_t> pairs(usable.begin() + std::ptrdiff_t(begin), usable.begin() + std::ptrdiff_t(end));
        const auto results = forcePairs(translator, sources, targets, pairs, rep.skipped, "", forcing);
        std::vector<size_t> back_pairs = pairs;
        const auto backs = reverse ? forcePairs(*reverse, targets, sources, back_pairs, rep.skipped,
                                                "reverse model (the target as its source): ", forcing)
                                   : std::vector<TranslationResult>{};
        for (size_t i = 0, r = 0; i < results.size(); ++i) {
            const size_t pair = pairs[i];
            if (reverse && (r >= back_pairs.size() || back_pairs[r] != pair)) continue;  // skipped by the reverse
            const TranslationResult* back = reverse ? &backs[r++] : nullptr;
            try {
                PieceWords sw, tw;
                auto links = linksOfAllMethods(results[i], threshold, sw, tw);
                if (gold)
                    checkGoldIndices((*gold)[pair], sw.words, tw.words,
                                     gold_name + " line " + std::to_string(pair + 1));
                if (reverse) {
                    PieceWords rsw, rtw;
                    const auto back_links = linksOfAllMethods(*back, threshold, rsw, rtw);
                    for (auto how : kSymmetrizations)
                        for (const auto& [m, rm] : sym)
                            links.push_back(
                                symmetrizeLinks(links[m], turnedAround(back_links[rm]), how, sw.words, tw.words));
                }
                for (size_t m = 0; m < links.size(); ++m) {
                    if (gold) rep.methods[m].counts.add(links[m], (*gold)[pair]);
                    rep.methods[m].links[pair] = std::move(links[m]);
                }
            } catch (const InputError& e) {
                rep.skipped.push_back({static_cast<int>(pair + 1), e.what()});
            }
        }
    }
    sortSkipped(rep.skipped);
    checkSomethingLeft(sources.size(), rep.skipped, "sentence pair could be aligned");
    report(progress, "aligning", total, total);
    if (gold) markBest(rep);
    return rep;
}

}  // namespace attnlab
