// The head lab's corpus runners (attnlab/head_lab.h).
#include <attnlab/errors.h>
#include <attnlab/head_lab.h>
#include <attnlab/metrics.h>

#include <algorithm>

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
        for (int l = 0; l < m.n_layers; ++l)
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
    if (curve_step < 1) throw ConfigError("importance options: curve_step " + std::to_string(curve_step) + " is below 1");
}

ImportanceReport headImportance(const Translator& translator, const std::vector<std::string>& sources,
                                const std::vector<std::string>& references, const ImportanceOptions& options,
                                const CorpusCallback& progress) {
    options.validate();
    checkCounts(sources.size(), references.size(), "references");
    checkTranslatable(translator, sources, "source");
    const auto heads = headsOf(translator, options.kinds);
    const int curve_points = static_cast<int>((heads.size() + options.curve_step - 1) / options.curve_step);
    const int runs = 1 + static_cast<int>(heads.size()) + curve_points;
    int done = 0;
    struct Score {
        double bleu, chrf;
        std::string signature;
    };
    auto run = [&](const std::vector<HeadRef>& ablate, const std::string& stage) {
        if (!report(progress, stage, done, runs)) throw CancelledError();
        DecodingOptions d = options.decoding;
        d.return_attention = false;
        d.top_k_candidates = 0;
        d.record_trace = false;
        d.ablate = ablate;
        const auto results =
            translator.translateBatch(sources, d, [&](const StepProgress&) { return report(progress, stage, done, runs); });
        std::vector<std::string> hyps;
        for (const auto& r : results) hyps.push_back(r.best.text);
        const auto bleu = corpusBleu(hyps, references);
        ++done;
        return Score{bleu.score, corpusChrf(hyps, references), bleu.signature};
    };
    ImportanceReport rep;
    rep.sentences = static_cast<int>(sources.size());
    const Score base = run({}, "translating without ablation");
    rep.baseline_bleu = base.bleu;
    rep.baseline_chrf = base.chrf;
    rep.bleu_signature = base.signature;
    for (const auto& h : heads) {
        const Score s = run({h}, "ablating " + headName(h));
        rep.heads.push_back({h, s.bleu, s.chrf, base.bleu - s.bleu});
    }
    std::stable_sort(rep.heads.begin(), rep.heads.end(),
                     [](const HeadImportance& a, const HeadImportance& b) {
                         return a.bleu != b.bleu ? a.bleu > b.bleu : a.chrf > b.chrf;  // chrF breaks BLEU's ties
                     });
    rep.curve.push_back({0, base.bleu, base.chrf, {}});
    std::vector<HeadRef> removed;
    for (size_t k = 0; k < rep.heads.size(); ++k) {
        removed.push_back(rep.heads[k].head);
        const bool point = removed.size() % static_cast<size_t>(options.curve_step) == 0 || k + 1 == rep.heads.size();
        if (!point) continue;
        const Score s = run(removed, "pruning " + std::to_string(removed.size()) + " heads");
        rep.curve.push_back({static_cast<int>(removed.size()), s.bleu, s.chrf, removed});
    }
    report(progress, "done", runs, runs);
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
    for (const auto& m : allAlignmentMethods(static_cast<int>(model.n_layers), static_cast<int>(model.n_head)))
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
            if (gold) checkGoldIndices((*gold)[pair], sw.words, tw.words, gold_name + " line " + std::to_string(pair + 1));
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
            int& best = kind == AlignmentMethod::Kind::Head ? rep.best_head
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
