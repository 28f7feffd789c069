#pragma once
// heads --importance and --gradient-importance in pieces (issue 55, docs/scale-out.md): what headImportance and
// gradientImportance (attnlab/head_lab.h) do, step by step, so that a run split over processes computes the same
// numbers from the same sums and a merge of its parts (io/head_lab_json.cpp) finishes them the way one process does.
//
// Importance has two stages. The singles: the baseline and every head ablated alone, each a translation of the
// corpus whose corpus BLEU and chrF are sums of integer sentence statistics (parts of the lines sum them; parts of
// the jobs hold whole runs). The pruning curve: heads removed cumulatively in the singles' order over the whole
// corpus, each point a translation of the corpus; its paired bootstrap resamples the sentences of the whole corpus
// (bootstrapResamples, seeded by the options, never by part) against the baseline's sentence statistics.
//
// Every translation runs block by block of the corpus (attnlab::chunkEnd, CorpusPlace): a line is batched with the
// same lines in a part as in the whole run, so its translation is the same to the last bit.

#include <attnlab/head_lab.h>
#include <attnlab/metrics.h>
#include <attnlab/partial_result.h>

#include <string>
#include <vector>

namespace attnlab {

// One translation of the corpus's readable lines with `ablated` heads switched off.
struct AblationRun {
    std::vector<HeadRef> ablated;
    BleuStats bleu;  // summed over the sentences
    ChrfStats chrf;
    std::vector<BleuStats> sentences;  // each sentence's in line order (when kept: the paired bootstrap's)
};

// The lines of a corpus (or of a part of it) an importance run translates.
struct AblationCorpus {
    const std::vector<std::string>& sources;
    const std::vector<std::string>& references;
    std::vector<size_t> usable;        // the lines the model can read, in order
    std::vector<SkippedPair> skipped;  // the others (1-based among `sources`), with why
    CorpusPlace place;                 // where `sources` lie in the corpus (its blocks)
};
// The readable lines of `sources`; InputError when the counts differ or no line can be read.
AblationCorpus ablationCorpus(const Translator& translator, const std::vector<std::string>& sources,
                              const std::vector<std::string>& references, const CorpusPlace& place = {});

// The heads importance ablates (ImportanceOptions::kinds; empty: every head), kind by kind, layer by layer.
std::vector<HeadRef> importanceHeads(const Translator& translator, const std::vector<AttentionKind>& kinds);
// The first stage's jobs: the baseline (nothing ablated), then each of `heads` alone.
std::vector<std::vector<HeadRef>> singleJobs(const std::vector<HeadRef>& heads);

// Translates the corpus once per job, the jobs spread over the translators (one thread each); the sentences of a
// job kept when `keep_sentences` or when it ablates nothing (the baseline). Progress: jobs done of jobs.size().
std::vector<AblationRun> runAblations(const std::vector<const Translator*>& translators, const AblationCorpus& corpus,
                                      const ImportanceOptions& options, const std::vector<std::vector<HeadRef>>& jobs,
                                      bool keep_sentences, const CorpusCallback& progress = {});

// The report of the singles (runs[0]: the baseline; runs[i + 1]: heads[i] alone): baseline BLEU and chrF, the heads
// least important first (highest BLEU when ablated, ties by chrF, then `heads`' order), the curve's point 0.
ImportanceReport rankedSingles(const std::vector<HeadRef>& heads, const std::vector<AblationRun>& runs);
// The pruning curve's head sets: the first `curve_step` heads of `ranked`, then every curve_step more, then all.
std::vector<std::vector<HeadRef>> curveSets(const std::vector<HeadImportance>& ranked, int curve_step);
// The curve's points after point 0 from their runs (curveSets' order), their bootstrap intervals against
// `baseline` (the baseline's sentence statistics, the whole corpus's) and removable_heads.
void addCurve(ImportanceReport& rep, const std::vector<AblationRun>& points, const std::vector<BleuStats>& baseline,
              const ImportanceOptions& options);
// Spearman's rho between the heads' BLEU drop and their normalised gradient importance (rep.gradient).
double importanceRankCorrelation(const ImportanceReport& rep);

// The same as headImportance, each translation run block by block of the corpus at `place`.
ImportanceReport corpusImportance(const std::vector<const Translator*>& translators,
                                  const std::vector<std::string>& sources, const std::vector<std::string>& references,
                                  const ImportanceOptions& options, const CorpusPlace& place,
                                  const CorpusCallback& progress = {});

// Gradient importance before its means: each head's |dL/d gate| summed over the pairs of each block of the corpus
// (in line order), the blocks in order. raw = (the blocks' sums, added in block order) / sentences.
struct GradientSums {
    std::vector<HeadRef> heads;               // the model's heads of the kinds, in the model's order
    std::vector<std::vector<double>> blocks;  // [block][head]; only blocks with a pair
    GradientImportanceReport report;          // sentences, skipped, seconds; heads filled by finishGradient
};
GradientSums gradientSums(const Translator& translator, const std::vector<std::string>& sources,
                          const std::vector<std::string>& references, const std::vector<AttentionKind>& kinds,
                          int batch_size, const CorpusPlace& place, const CorpusCallback& progress = {});
// report.heads from the sums: raw, normalised per layer, least important first.
void finishGradient(GradientSums& sums);

// ---- a sharded heads run's files (io/head_lab_json.cpp owns their keys; docs/scale-out.md) ----

// `--shard-by`: how --importance's runs are split. Lines: every run over part K of the lines. Heads: the runs of job
// group K (jobGroup), each over every line.
enum class ShardBy { Lines, Heads };
ShardBy parseShardBy(const std::string& text);  // "lines", "heads"; ConfigError otherwise
std::string shardByName(ShardBy by);
// The jobs (or curve points) of group K of N among `jobs`: [floor((K-1)J/N), floor(KJ/N)), shardLines' split of J
// "lines" in blocks of one; the baseline is job 0, in group 1.
LineRange jobGroup(size_t jobs, const Shard& shard);

// What a part of a sharded heads run carries beside its statistics (headsJson with each sentence's; withRun):
// the first stage's singles, the gradient sums of its lines, the other model's statistics of its lines.
struct SinglesPart {
    ShardBy by = ShardBy::Lines;
    std::vector<HeadRef> heads;        // every head of the run, in its order (singleJobs(heads))
    size_t first_job = 0;              // runs[i] is job first_job + i
    std::vector<AblationRun> runs;     // job 0's with its sentences
    int sentences = 0;                 // the lines the runs translated (readable), and the others
    std::vector<SkippedPair> skipped;  // counted from the corpus's first line
    int curve_step = 8, bootstrap_resamples = 0;
};
struct HeadsPartExtras {
    const SinglesPart* singles = nullptr;
    const GradientSums* gradient = nullptr;
    const HeadStatsReport* other = nullptr;  // --compare-model's, with each sentence's statistics and lines
};
std::string withPartExtras(const std::string& document, const HeadsPartExtras& extras);

// The first stage's merged result (attnlab-cli merge singles.json singles-*.json), read for the second: the heads
// ranked (its curve step, resamples and the baseline's sentence statistics are checked, not kept: the second stage
// runs with its own options, which the run's identity compares). Throws InputError naming the file when it is not one,
// is a part (not merged), or is of another run than `run` (command, model, options, corpus; the part aside), or its
// ranking is not `heads` (importanceHeads of the model and kinds) each once.
struct ImportanceSingles {
    ImportanceReport ranked;  // sentences, skipped, baseline, heads ranked, curve point 0
};
ImportanceSingles readImportanceSingles(const std::string& path, const CorpusRun& run,
                                        const std::vector<HeadRef>& heads);

// A part of the second stage: curve points [first_point, ...) (0-based among curveSets) over its lines.
struct CurvePart {
    ShardBy by = ShardBy::Lines;
    std::vector<HeadRef> order;  // the singles' order it ran from
    size_t first_point = 0;
    std::vector<AblationRun> points;
    int sentences = 0;
    std::vector<SkippedPair> skipped;
};
std::string curvePartJson(const CurvePart& part, const CorpusRun& run);

}  // namespace attnlab
