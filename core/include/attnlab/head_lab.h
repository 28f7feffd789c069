#pragma once
// The head lab over a corpus (issue 12, docs/head-lab.md): statistics of every head, the
// importance of every head by ablation, and alignment against gold. Each runner reports progress
// and can be cancelled (the callback returns false: CancelledError).

#include <attnlab/alignment.h>
#include <attnlab/attention_kind.h>
#include <attnlab/decoding_options.h>
#include <attnlab/head_stats.h>
#include <attnlab/metrics.h>
#include <attnlab/translator.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace attnlab {

struct CorpusProgress {
    std::string stage;  // what is being done, e.g. "ablating cross:2:5"
    int done = 0;       // units of work done (sentences, or runs for importance)
    int total = 0;
};
// Return false to cancel.
using CorpusCallback = std::function<bool(const CorpusProgress&)>;

// Statistics of every head over `sources`: with `references` (same count) the decoder is
// teacher-forced through them, otherwise it reads the model's own translations (decoding: its
// beam and caps; attention is always recorded). Sentences run in chunks, so memory stays small.
// A line the model cannot read (empty, overlong, no character it knows) is skipped and listed in
// the report's `skipped`; throws InputError when the counts differ or no line can be read.
// `measure`: the statistics of the value-norm maps (one more captured pass per sentence) or of the
// rollout instead of the weights. `keep_sentences`: every sentence's own rows and sums in the report
// (HeadStats::sentence_rows; a sharded run's part, attnlab/partial_result.h). `place`: where `sources` lie in a
// corpus of blocks (a sharded run's part): the chunks are cut at the corpus's blocks and at multiples of the
// chunk in corpus lines, so that a sentence is batched with the same others in a part as in the whole run.
struct CorpusPlace {
    size_t first_line = 0;  // of sources[0] in the corpus, 0-based
    size_t block = 0;       // the corpus's block (attnlab::shardBlock), 0: none
    // One part of a sharded run: a part whose every line is skipped is a part without sentences, not an error (the
    // merge refuses a corpus without any, as the whole run does).
    bool part = false;
    int batch_size = 0;  // alignCorpus: the pairs teacher-forced together (0: DecodingOptions' default)
};
HeadStatsReport corpusHeadStatistics(const Translator& translator, const std::vector<std::string>& sources,
                                     const std::vector<std::string>* references, const DecodingOptions& decoding,
                                     int histogram_radius = 8, const CorpusCallback& progress = {},
                                     MapMeasure measure = MapMeasure::Weights, bool keep_sentences = false,
                                     const CorpusPlace& place = {});

// Two reports' statistics head by head, for the heads both have: comparing two models, the two
// directions of one corpus (each teacher-forced through its own side of the same pairs), or a model
// and its earlier checkpoint. `difference` is other minus this.
struct HeadStatsDifference {
    HeadRef head;
    std::array<double, kHeadStatisticCount> this_model{}, other_model{};
    double difference(HeadStatistic s) const { return other_model[size_t(s)] - this_model[size_t(s)]; }
};
std::vector<HeadStatsDifference> compareHeadStatistics(const HeadStatsReport& this_model,
                                                       const HeadStatsReport& other_model);

struct HeadImportance {
    HeadRef head;
    double bleu = 0.0;  // corpus BLEU with this head alone ablated
    double chrf = 0.0;
    double bleu_drop = 0.0;  // baseline BLEU - bleu (negative: the corpus scores higher without it)
};

struct PruningPoint {
    int heads_removed = 0;
    double bleu = 0.0;
    double chrf = 0.0;
    std::vector<HeadRef> removed;  // every head removed at this point, least important first
    // 95 % intervals of this point's BLEU and of its BLEU minus the baseline's, from a paired bootstrap
    // over sentences (the same resamples for every point; none when ImportanceOptions::bootstrap_resamples
    // is 0).
    PairedBootstrap interval;
    bool significantLoss() const { return interval.resamples > 0 && interval.significantlyLower(); }
};

// Michel et al.'s gradient importance of one head over a corpus.
struct GradientImportance {
    HeadRef head;
    double raw = 0.0;         // I_h = mean over pairs of |dL(x)/d xi_h| (attnlab/gradients.h)
    double normalized = 0.0;  // I_h / the L2 norm of its layer's I (Michel et al.): comparable across layers
};

struct GradientImportanceReport {
    int sentences = 0;                      // used (skipped ones not included)
    std::vector<SkippedPair> skipped;       // pairs the model cannot read
    std::vector<GradientImportance> heads;  // least important first (lowest normalized)
    double seconds = 0.0;
    const GradientImportance* find(const HeadRef& h) const;
};

// Gradient importance of every head of `kinds` (empty = all) teacher-forced through the references, one
// backward pass per batch of `batch_size` pairs. A pair the model cannot read is skipped and listed;
// throws InputError for differing counts or when no pair can be read, CancelledError.
GradientImportanceReport gradientImportance(const Translator& translator, const std::vector<std::string>& sources,
                                            const std::vector<std::string>& references,
                                            const std::vector<AttentionKind>& kinds = {}, int batch_size = 32,
                                            const CorpusCallback& progress = {});

// The most heads removed before the first curve point whose loss is significant (every head of the
// last point when none is); -1 when the curve has no intervals.
int removableHeads(const std::vector<PruningPoint>& curve);

// Spearman's rank correlation of two equally long lists (ties share their mean rank); NaN when either
// list is constant or shorter than 2.
double spearmanCorrelation(const std::vector<double>& a, const std::vector<double>& b);

struct ImportanceReport {
    int sentences = 0;                 // scored (skipped ones not included)
    std::vector<SkippedPair> skipped;  // lines the model cannot read, left out of every run
    double baseline_bleu = 0.0;
    double baseline_chrf = 0.0;
    std::string bleu_signature;
    std::vector<HeadImportance> heads;  // least important first: highest BLEU when ablated (ties: chrF)
    std::vector<PruningPoint> curve;    // 0 removed, then every `curve_step` more, then all
    int bootstrap_resamples = 0;        // per curve point (0: no intervals)
    // The most heads removed before the first curve point whose BLEU is significantly below the
    // baseline's (95 %, paired bootstrap); every head when no point is. -1 without intervals.
    int removable_heads = -1;
    // With ImportanceOptions::gradient: the same heads by gradient importance, and Spearman's rank
    // correlation between the two orders (BLEU drop against normalised gradient importance).
    std::optional<GradientImportanceReport> gradient;
    double rank_correlation = 0.0;
};

struct ImportanceOptions {
    DecodingOptions decoding;        // the search every run uses (the CLI: greedy)
    int curve_step = 8;              // heads removed between two points of the pruning curve
    int bootstrap_resamples = 1000;  // paired bootstrap resamples per curve point (0: no intervals)
    static constexpr int kMaxBootstrapResamples = 100000;  // the resamples are held at once (8 bytes a sentence)
    uint64_t bootstrap_seed = 1;
    bool gradient = true;  // also gradient importance and its rank correlation with ablation's order
    // Pairs per backward pass of the gradient importance (smaller than decoding's batches: a backward
    // pass holds every activation; 32 keeps the bundled model's run under 1 GB).
    int gradient_batch_size = 32;
    // Heads of which kinds take part ("encoder", "decoder", "cross"); empty = all three.
    std::vector<AttentionKind> kinds;
    void validate() const;  // throws ConfigError
};

// Michel et al. 2019's experiment: BLEU and chrF of the corpus with each head ablated alone, then
// heads removed cumulatively in order of increasing importance. One translation run of the corpus
// per head and per curve point. A source line the model cannot read is left out of every run and
// listed in `skipped`; throws InputError for differing counts or when no line can be read.
ImportanceReport headImportance(const Translator& translator, const std::vector<std::string>& sources,
                                const std::vector<std::string>& references, const ImportanceOptions& options,
                                const CorpusCallback& progress = {});
// The same with the runs spread over several translators of one package, one thread each (give
// each a share of the cores: TranslatorOptions::num_threads); the results equal one translator's.
// The callback is called from those threads, one call at a time.
ImportanceReport headImportance(const std::vector<const Translator*>& translators,
                                const std::vector<std::string>& sources, const std::vector<std::string>& references,
                                const ImportanceOptions& options, const CorpusCallback& progress = {});

struct AlignmentMethodReport {
    AlignmentMethod method;
    AlignmentCounts counts;             // against gold (all zero without it)
    std::vector<AlignmentLinks> links;  // per sentence pair
};

struct AlignmentReport {
    int pairs = 0;                     // in the input, skipped ones included
    std::vector<SkippedPair> skipped;  // by pair; their links are empty in every method
    bool has_gold = false;
    bool symmetrised = false;  // with a reverse model
    double threshold = 0.0;
    // allAlignmentMethods() order, then contributionAlignmentMethods(layers) (ALTI+ and value zeroing, through the
    // model and by decoder layer), then (with a reverse model) for each
    // heuristic of kSymmetrizations every one of those methods the reverse model has too, symmetrised.
    std::vector<AlignmentMethodReport> methods;
    int best = -1;        // index into methods of the lowest AER of all (-1 without gold)
    int best_head = -1;   // ... of an unsymmetrised head (shifted or not)
    int best_layer = -1;  // ... of an unsymmetrised layer mean
    const AlignmentMethodReport* find(const AlignmentMethod& m) const;
};

// Teacher-forces every pair and extracts links by every method. `gold` (optional) must have one
// entry per pair; `gold_name` names its file in messages (index beyond a sentence's words). A pair
// that cannot be aligned (a side the model cannot read, words its pieces cannot be matched to, a gold
// link beyond its words) is skipped and listed, its links left empty and its gold not counted; the
// counts must still match (InputError), and InputError when no pair at all could be aligned.
// With `reverse`, a model of the other direction (targets to sources), every method both models have
// is also symmetrised by each heuristic (symmetrizeLinks); a pair the reverse model cannot read is
// skipped too.
// `languages`: a multilingual model's source and target language (DecodingOptions'; empty = the
// model's defaults); the reverse model reads them the other way round.
// The contribution methods (ALTI+, value zeroing: passes of their own, value zeroing ~1.5 translations' time) are
// computed with gold (every method is scored), and without gold only `chosen`'s when it reads one (its links are
// the ones written); the report then lists the attention methods and that one's.
struct AlignmentLanguages {
    std::string source, target;
};
AlignmentReport alignCorpus(const Translator& translator, const std::vector<std::string>& sources,
                            const std::vector<std::string>& targets, const std::vector<GoldAlignment>* gold,
                            const std::string& gold_name, double threshold = 0.0, const CorpusCallback& progress = {},
                            const Translator* reverse = nullptr, const AlignmentLanguages& languages = {},
                            const CorpusPlace& place = {},  // as corpusHeadStatistics'
                            const AlignmentMethod* chosen = nullptr);

}  // namespace attnlab
