#pragma once
// Head statistics: what each attention head does across many sentences (issue 12, docs/head-lab.md).
// Pure arithmetic over TranslationResult's maps and pieces: no model, no tensors, so that tests can
// feed hand-built maps.
//
// A row is one query position of one sentence (encoder self-attention: every source position;
// decoder self- and cross-attention: every generated position, </s> included). Every statistic
// is a mean over all rows of all sentences, each row counting once (long sentences weigh more).
// With i the query position and j the key position:
//   entropy            -sum_j w_ij ln w_ij (nats)
//   mean_offset        sum_j w_ij (j - i)            (cross: source position minus target position)
//   mean_abs_offset    sum_j w_ij |j - i|
//   boundary_share     weight on the boundary token: </s> (encoder self-, cross-attention), the
//                      decoder's start token (decoder self-attention, whose keys hold no </s>:
//                      its first key, <s> or Marian's <pad>)
//   punctuation_share  weight on pieces made of punctuation only (with or without "▁")
//   previous_share     weight on j = i - 1
//   same_share         weight on j = i
//   diagonal_max       1 when the row's largest weight is at j = i, else 0
// The offset histogram holds, per offset -R..R, the mean weight at that offset; its first and
// last bins also collect every offset beyond -R and R.

#include <attnlab/attention_flow.h>
#include <attnlab/attention_kind.h>
#include <attnlab/translation.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace attnlab {

enum class HeadStatistic {
    Entropy,
    MeanOffset,
    MeanAbsOffset,
    BoundaryShare,
    PunctuationShare,
    PreviousShare,
    SameShare,
    DiagonalMax,
};
constexpr int kHeadStatisticCount = 8;

// The one owner of each statistic's name: the JSON key, the CSV column and the app's label.
struct HeadStatisticInfo {
    HeadStatistic id;
    const char* key;      // "entropy", "mean_offset", ...
    const char* label;    // "Entropy (nats)", ...
    const char* meaning;  // one sentence, for tooltips and the docs
};
const std::array<HeadStatisticInfo, kHeadStatisticCount>& headStatisticInfos();
const HeadStatisticInfo& headStatisticInfo(HeadStatistic s);

struct HeadStats {
    HeadRef head;
    int64_t rows = 0;
    std::array<double, kHeadStatisticCount> values{};  // indexed by HeadStatistic
    std::vector<double> offset_histogram;              // 2R + 1 bins: offsets -R..R
    // Per statistic: the sentence (0-based, in input order) whose own mean is closest to the
    // corpus mean, among sentences with at least 3 rows (any sentence when none has); -1 when empty.
    std::array<int, kHeadStatisticCount> typical_sentence{};
    // With report(…, keep_sentences): each sentence's own rows and sums, in the order the statistics took them
    // (HeadStatsReport::sentence_lines): what merging a sharded run's parts needs for the typical sentences
    // (attnlab/partial_result.h). Empty otherwise.
    std::vector<int> sentence_rows;
    std::vector<std::array<double, kHeadStatisticCount>> sentence_sums;
    double value(HeadStatistic s) const { return values[static_cast<size_t>(s)]; }
};

// A line (or sentence pair) a corpus run left out, and why ("source: the sentence is empty").
struct SkippedPair {
    int pair = 0;  // 1-based, as the line numbers of the input files
    std::string reason;
};

struct HeadStatsReport {
    int sentences = 0;                 // the statistics' sentences (skipped ones not included)
    std::vector<SkippedPair> skipped;  // corpus runs: lines left out (attnlab/head_lab.h)
    int histogram_radius = 0;
    bool teacher_forced = false;  // decoder statistics over given references, not the model's output
    // What the statistics were taken of (attnlab/attention_flow.h): the weights, the value-norm maps
    // (rows normalised), or the rollout (one map per layer, reported as its head 0).
    MapMeasure measure = MapMeasure::Weights;
    std::vector<HeadStats> heads;  // encoder layers x heads, then decoder, then cross
    // With keep_sentences: the input line (0-based) of each sentence the statistics took, in their order.
    std::vector<int> sentence_lines;
    // nullptr when absent. The pointer is into `heads`: not callable on a temporary report
    // (sanitize.sh found a test reading through one after the report was gone).
    const HeadStats* find(const HeadRef& head) const&;
    const HeadStats* find(const HeadRef& head) const&& = delete;
};

// Punctuation only: every character (after a leading "▁") is ASCII punctuation or one of the
// typographic marks „“”‘’«»…–—·; "▁" alone, </s> and <s> are not.
bool isPunctuationPiece(const std::string& piece);

class HeadStatsAccumulator {
public:
    explicit HeadStatsAccumulator(int histogram_radius = 8);
    // Adds one sentence's maps (encoder_self, decoder_self, cross; any of them may be empty). Keys
    // are source_pieces (encoder, cross) and decoder_input_pieces (decoder self). Throws
    // InputError when the shapes differ from the pieces or from sentences added before.
    void add(const TranslationResult& result);
    int sentences() const { return m_sentences; }
    // keep_sentences: each head's per-sentence rows and sums copied into the report (HeadStats::sentence_rows).
    HeadStatsReport report(bool teacher_forced = false, bool keep_sentences = false) const;

private:
    struct Head {
        HeadRef ref;
        int64_t rows = 0;
        std::vector<double> histogram;
        // per sentence: rows and sums (for the typical sentence)
        std::vector<int> sentence_rows;
        std::vector<std::array<double, kHeadStatisticCount>> sentence_sums;
    };
    void addMaps(AttentionKind kind, const LayerHeadMaps& maps, const std::vector<std::string>& key_pieces,
                 const std::string& boundary);
    int m_radius;
    int m_sentences = 0;
    std::vector<Head> m_heads;
};

}  // namespace attnlab
