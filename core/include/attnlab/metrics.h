#pragma once
// Corpus BLEU and chrF as sacreBLEU computes them by default (BLEU: 13a tokenization, cased,
// exponential smoothing, 4-grams, brevity penalty, one reference; chrF: character 6-grams,
// beta 2, whitespace removed).

#include <cstdint>
#include <string>
#include <vector>

namespace attnlab {

struct BleuScore {
    double score = 0.0;  // 0..100
    double precisions[4] = {0, 0, 0, 0};
    double brevity_penalty = 0.0;
    int64_t sys_len = 0, ref_len = 0;
    std::string signature;  // sacreBLEU's, e.g. nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.0.0
};

// What corpus BLEU sums over sentences: clipped n-gram matches and n-gram counts (n = 1..4) and the
// two lengths, after 13a tokenization. Corpus BLEU is bleuFromStats of their sum.
struct BleuStats {
    int64_t correct[4] = {0, 0, 0, 0}, total[4] = {0, 0, 0, 0};
    int64_t sys_len = 0, ref_len = 0;
    BleuStats& operator+=(const BleuStats& other);
};
BleuStats sentenceBleuStats(const std::string& hypothesis, const std::string& reference);
// One per pair; throws InputError when the counts differ.
std::vector<BleuStats> sentenceBleuStats(const std::vector<std::string>& hypotheses,
                                         const std::vector<std::string>& references);
BleuScore bleuFromStats(const BleuStats& summed);

// What corpus chrF sums over sentences (sacreBLEU's CHRF with its defaults: character n-grams 1..6,
// word_order 0, so no word n-grams): per order, the hypothesis's and the reference's n-gram counts and
// their clipped matches, whitespace removed. Corpus chrF is chrfFromStats of their sum.
struct ChrfStats {
    static constexpr int kOrder = 6;
    int64_t hypothesis[kOrder] = {}, reference[kOrder] = {}, matches[kOrder] = {};
    ChrfStats& operator+=(const ChrfStats& other);
};
ChrfStats sentenceChrfStats(const std::string& hypothesis, const std::string& reference);
double chrfFromStats(const ChrfStats& summed);

// Throws InputError when the counts differ.
BleuScore corpusBleu(const std::vector<std::string>& hypotheses, const std::vector<std::string>& references);
double corpusChrf(const std::vector<std::string>& hypotheses, const std::vector<std::string>& references);
// Paired bootstrap resampling over sentences (Koehn 2004): `resamples` lists of sentence indices,
// each `sentences` long, drawn with replacement from a 64-bit Mersenne Twister seeded with `seed`
// (index = draw mod sentences), so that two systems are scored on the same resamples.
std::vector<std::vector<size_t>> bootstrapResamples(size_t sentences, int resamples, uint64_t seed = 1);

struct PairedBootstrap {
    int resamples = 0;
    double low = 0, high = 0;                        // 95 % interval of the system's corpus BLEU
    double difference_low = 0, difference_high = 0;  // ... of system minus baseline, resample by resample
    // The system scores significantly lower than the baseline: the whole interval is below 0.
    bool significantlyLower() const { return difference_high < 0; }
};
// Percentiles 2.5 and 97.5 (linear between ranks, numpy's default) of the resamples' corpus BLEU.
// Throws InputError for differing counts, no sentences, no resamples or an index out of range.
PairedBootstrap pairedBootstrap(const std::vector<BleuStats>& baseline, const std::vector<BleuStats>& system,
                                const std::vector<std::vector<size_t>>& resamples);

// sacreBLEU's 13a tokenizer (mteval-v13a).
std::string tokenize13a(const std::string& line);

}  // namespace attnlab
