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

void checkTranslatable(const Translator& t, const std::vector<std::string>& lines, const char* what) {
    for (size_t i = 0; i < lines.size(); ++i)
        if (auto why = t.inputProblem(lines[i]))
            throw InputError(std::string(what) + " line " + std::to_string(i + 1) + ": " + *why);
}

bool report(const CorpusCallback& cb, const std::string& stage, int done, int total) {
    return !cb || cb({stage, done, total});
}

std::vector<std::string> slice(const std::vector<std::string>& v, size_t begin, size_t end) {
    return {v.begin() + static_cast<std::ptrdiff_t>(begin), v.begin() + static_cast<std::ptrdiff_t>(end)};
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

}  // namespace

HeadStatsReport corpusHeadStatistics(const Translator& translator, const std::vector<std::string>& sources,
                                     const std::vector<std::string>* references, const DecodingOptions& decoding,
                                     int histogram_radius, const CorpusCallback& progress) {
    if (references) checkCounts(sources.size(), references->size(), "references");
    checkTranslatable(translator, sources, "source");
    if (references) checkTranslatable(translator, *references, "reference");
    DecodingOptions d = decoding;
    d.return_attention = true;
    d.top_k_candidates = 0;
    d.record_trace = false;
    d.validate();
    HeadStatsAccumulator acc(histogram_radius);
    const int total = static_cast<int>(sources.size());
    const std::string stage = references ? "teacher-forcing the references" : "translating";
    for (size_t begin = 0; begin < sources.size(); begin += kChunk) {
        const size_t end = std::min(sources.size(), begin + kChunk);
        if (!report(progress, stage, static_cast<int>(begin), total)) throw CancelledError();
        const auto src = slice(sources, begin, end);
        const auto cancel = [&](const StepProgress& p) {
            return report(progress, stage, static_cast<int>(begin) + p.sentence_begin, total);
        };
        // The model's own translations: searched without maps, then teacher-forced through their
        // ids in batches (one padded pass per batch instead of one pass per sentence).
        DecodingOptions search = d;
        search.return_attention = false;
        const auto results = references ? translator.teacherForce(src, slice(*references, begin, end), d, cancel)
                                        : translator.teacherForce(translator.translateBatch(src, search, cancel), d);
        for (const auto& r : results) acc.add(r);
    }
    report(progress, stage, total, total);
    return acc.report(references != nullptr);
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
    checkTranslatable(first, sources, "source");
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

AlignmentReport alignCorpus(const Translator& translator, const std::vector<std::string>& sources,
                            const std::vector<std::string>& targets, const std::vector<GoldAlignment>* gold,
                            const std::string& gold_name, double threshold, const CorpusCallback& progress) {
    checkCounts(sources.size(), targets.size(), "target sentences");
    if (gold) checkCounts(sources.size(), gold->size(), ("gold alignment lines in " + gold_name).c_str());
    checkTranslatable(translator, sources, "source");
    checkTranslatable(translator, targets, "target");
    const auto& model = translator.info().config.model;
    AlignmentReport rep;
    rep.pairs = static_cast<int>(sources.size());
    rep.has_gold = gold != nullptr;
    rep.threshold = threshold;
    for (const auto& m : allAlignmentMethods(static_cast<int>(model.decoderLayers()), static_cast<int>(model.n_head)))
        rep.methods.push_back({m, {}, {}});
    DecodingOptions d;
    d.return_attention = true;
    d.top_k_candidates = 0;
    const int total = rep.pairs;
    for (size_t begin = 0; begin < sources.size(); begin += kChunk) {
        const size_t end = std::min(sources.size(), begin + kChunk);
        if (!report(progress, "aligning", static_cast<int>(begin), total)) throw CancelledError();
        const auto results = translator.teacherForce(slice(sources, begin, end), slice(targets, begin, end), d);
        for (size_t i = 0; i < results.size(); ++i) {
            const size_t pair = begin + i;
            PieceWords sw, tw;
            std::vector<Matrix> maps;
            try {
                maps = wordMapsOfAllMethods(results[i], &sw, &tw);
            } catch (const InputError& e) {
                throw InputError("pair " + std::to_string(pair + 1) + ": " + e.what());
            }
            if (gold)
                checkGoldIndices((*gold)[pair], sw.words, tw.words, gold_name + " line " + std::to_string(pair + 1));
            for (size_t m = 0; m < maps.size(); ++m) {
                auto links = extractLinks(maps[m], threshold);
                if (gold) rep.methods[m].counts.add(links, (*gold)[pair]);
                rep.methods[m].links.push_back(std::move(links));
            }
        }
    }
    report(progress, "aligning", total, total);
    if (gold) {
        for (size_t m = 0; m < rep.methods.size(); ++m) {
            const auto kind = rep.methods[m].method.kind;
            int& best = kind == AlignmentMethod::Kind::Head    ? rep.best_head
                        : kind == AlignmentMethod::Kind::Layer ? rep.best_layer
                                                               : rep.best_head;
            if (kind == AlignmentMethod::Kind::All) continue;
            if (best < 0 || rep.methods[m].counts.aer() < rep.methods[static_cast<size_t>(best)].counts.aer())
                best = static_cast<int>(m);
        }
    }
    return rep;
}

}  // namespace attnlab
