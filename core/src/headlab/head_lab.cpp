// The head lab's corpus runners (attnlab/head_lab.h).
#include <attnlab/errors.h>
#include <attnlab/head_lab.h>
#include <attnlab/metrics.h>
#include <attnlab/partial_result.h>

#include "headlab/corpus_lines.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

namespace attnlab {

using namespace headlab;

namespace headlab {

void checkCounts(size_t sources, size_t others, const char* what) {
    if (sources != others)
        throw InputError("mismatched inputs: " + std::to_string(sources) + " source sentences but " +
                         std::to_string(others) + " " + what);
}

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

std::vector<TranslationResult> forcePairs(const Translator& t, const std::vector<std::string>& sources,
                                          const std::vector<std::string>& targets, std::vector<size_t>& pairs,
                                          std::vector<SkippedPair>& skipped, const std::string& side,
                                          const DecodingOptions& d, const StepCallback& cancel) {
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

TranslationResult measured(const Translator& t, TranslationResult r, MapMeasure measure) {
    std::optional<ValueNorms> norms;
    if (measure == MapMeasure::ValueNorm) norms = t.valueNorms(r);
    const ValueNorms* n = norms ? &*norms : nullptr;
    auto encoder = measuredMaps(r, AttentionKind::EncoderSelf, measure, n);
    auto decoder = measuredMaps(r, AttentionKind::DecoderSelf, measure, n);
    auto cross = measuredMaps(r, AttentionKind::Cross, measure, n);
    r.encoder_self = std::move(encoder);
    r.decoder_self = std::move(decoder);
    r.cross = std::move(cross);
    return r;
}

// The end of the chunk of `usable` lines that begins at usable[from] (attnlab::chunkEnd, in corpus lines).
size_t chunkStop(const std::vector<size_t>& usable, size_t from, const CorpusPlace& place) {
    const size_t end = chunkEnd(place.first_line + usable[from], place.block, kChunk);
    size_t to = from;
    while (to < usable.size() && place.first_line + usable[to] < end) ++to;
    return to;
}

void sortSkipped(std::vector<SkippedPair>& skipped) {
    std::sort(skipped.begin(), skipped.end(),
              [](const SkippedPair& a, const SkippedPair& b) { return a.pair < b.pair; });
}
}  // namespace headlab

HeadStatsReport corpusHeadStatistics(const Translator& translator, const std::vector<std::string>& sources,
                                     const std::vector<std::string>* references, const DecodingOptions& decoding,
                                     int histogram_radius, const CorpusCallback& progress, MapMeasure measure,
                                     bool keep_sentences, const CorpusPlace& place) {
    if (references) checkCounts(sources.size(), references->size(), "references");
    std::vector<SkippedPair> skipped;
    const auto usable = readableLines(translator, sources, references, "reference", skipped);
    if (!place.part) checkSomethingLeft(sources.size(), skipped, "line could be read");
    DecodingOptions d = decoding;
    d.return_attention = true;
    d.top_k_candidates = 0;
    d.record_trace = false;
    d.validate();
    HeadStatsAccumulator acc(histogram_radius);
    std::vector<size_t> added;  // the input line of each sentence the statistics hold, in order
    const int total = static_cast<int>(sources.size());
    const std::string stage = references ? "teacher-forcing the references" : "translating";
    for (size_t begin = 0, end; begin < usable.size(); begin = end) {
        end = headlab::chunkStop(usable, begin, place);
        std::vector<size_t> lines(usable.begin() + std::ptrdiff_t(begin), usable.begin() + std::ptrdiff_t(end));
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
            acc.add(measure == MapMeasure::Weights ? results[i] : measured(translator, results[i], measure));
            added.push_back(lines[i]);
        }
    }
    report(progress, stage, total, total);
    if (!place.part) checkSomethingLeft(sources.size(), skipped, "line could be read");
    HeadStatsReport rep = acc.report(references != nullptr, keep_sentences);
    rep.measure = measure;
    if (keep_sentences)
        for (size_t line : added) rep.sentence_lines.push_back(static_cast<int>(line));
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

const AlignmentMethodReport* AlignmentReport::find(const AlignmentMethod& m) const {
    for (const auto& r : methods)
        if (r.method == m) return &r;
    return nullptr;
}

namespace {
// The contribution methods a run computes (each costs passes of its own: value zeroing one per attention block and
// key, about 1.5 translations; ALTI+ about 0.4, scripts/bench_align.sh): with gold every one, since every method is
// scored; without, only the one whose links are written (`chosen`'s), none for an attention method.
std::vector<ContributionMethod> contributionsComputed(bool gold, const AlignmentMethod* chosen) {
    if (gold) return {std::begin(kContributionMethods), std::end(kContributionMethods)};
    const auto wanted = chosen ? contributionMethodOf(*chosen) : std::nullopt;
    return wanted ? std::vector<ContributionMethod>{*wanted} : std::vector<ContributionMethod>{};
}

// The links of every unsymmetrised method (methodsOf's order: allAlignmentMethods', then those of the contribution
// methods `computed`, contributionAlignmentMethods' order) of one result of `translator`'s.
std::vector<AlignmentLinks> linksOfAllMethods(const Translator& translator, const TranslationResult& r,
                                              double threshold, PieceWords& source, PieceWords& target,
                                              const std::vector<ContributionMethod>& computed) {
    std::vector<AlignmentLinks> links;
    for (const auto& map : wordMapsOfAllMethods(r, &source, &target)) links.push_back(extractLinks(map, threshold));
    if (computed.empty()) return links;
    std::vector<Contributions> contributions;
    for (ContributionMethod method : computed) contributions.push_back(translator.contributions(r, method));
    for (const auto& map : wordMapsOfContributions(r, contributions)) links.push_back(extractLinks(map, threshold));
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

std::vector<AlignmentMethod> methodsOf(const Translator& t, const std::vector<ContributionMethod>& computed) {
    const auto& model = t.info().config.model;
    auto methods = allAlignmentMethods(static_cast<int>(model.decoderLayers()), static_cast<int>(model.n_head));
    for (const auto& m : contributionAlignmentMethods(static_cast<int>(model.decoderLayers())))
        if (std::find(computed.begin(), computed.end(), *contributionMethodOf(m)) != computed.end())
            methods.push_back(m);
    return methods;
}
}  // namespace

namespace headlab {
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
}  // namespace headlab

AlignmentReport alignCorpus(const Translator& translator, const std::vector<std::string>& sources,
                            const std::vector<std::string>& targets, const std::vector<GoldAlignment>* gold,
                            const std::string& gold_name, double threshold, const CorpusCallback& progress,
                            const Translator* reverse, const AlignmentLanguages& languages, const CorpusPlace& place,
                            const AlignmentMethod* chosen) {
    checkCounts(sources.size(), targets.size(), "target sentences");
    if (gold) checkCounts(sources.size(), gold->size(), ("gold alignment lines in " + gold_name).c_str());
    AlignmentReport rep;
    rep.pairs = static_cast<int>(sources.size());
    rep.has_gold = gold != nullptr;
    rep.threshold = threshold;
    rep.symmetrised = reverse != nullptr;
    const auto computed = contributionsComputed(gold != nullptr, chosen);
    const auto base = methodsOf(translator, computed);
    const auto sym =
        reverse ? symmetrisedPairs(base, methodsOf(*reverse, computed)) : std::vector<std::pair<size_t, size_t>>{};
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
    forcing.source_language = languages.source;
    forcing.target_language = languages.target;
    if (place.batch_size > 0) forcing.max_batch_size = place.batch_size;
    DecodingOptions backwards = forcing;  // the reverse model reads the target as its source
    std::swap(backwards.source_language, backwards.target_language);
    const int total = rep.pairs;
    for (size_t begin = 0, end; begin < usable.size(); begin = end) {
        end = headlab::chunkStop(usable, begin, place);
        if (!report(progress, "aligning", static_cast<int>(usable[begin]), total)) throw CancelledError();
        std::vector<size_t> pairs(usable.begin() + std::ptrdiff_t(begin), usable.begin() + std::ptrdiff_t(end));
        const auto results = forcePairs(translator, sources, targets, pairs, rep.skipped, "", forcing);
        std::vector<size_t> back_pairs = pairs;
        const auto backs = reverse ? forcePairs(*reverse, targets, sources, back_pairs, rep.skipped,
                                                "reverse model (the target as its source): ", backwards)
                                   : std::vector<TranslationResult>{};
        for (size_t i = 0, r = 0; i < results.size(); ++i) {
            const size_t pair = pairs[i];
            if (reverse && (r >= back_pairs.size() || back_pairs[r] != pair)) continue;  // skipped by the reverse
            const TranslationResult* back = reverse ? &backs[r++] : nullptr;
            try {
                PieceWords sw, tw;
                auto links = linksOfAllMethods(translator, results[i], threshold, sw, tw, computed);
                if (gold)
                    checkGoldIndices((*gold)[pair], sw.words, tw.words,
                                     gold_name + " line " + std::to_string(pair + 1));
                if (reverse) {
                    PieceWords rsw, rtw;
                    const auto back_links = linksOfAllMethods(*reverse, *back, threshold, rsw, rtw, computed);
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
    if (!place.part) checkSomethingLeft(sources.size(), rep.skipped, "sentence pair could be aligned");
    report(progress, "aligning", total, total);
    if (gold) markBest(rep);
    return rep;
}

}  // namespace attnlab
