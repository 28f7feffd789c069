#pragma once
// The head lab's files: statistics and importance (`attnlab-cli heads --json/--csv`, the app's
// Heads tab export) and alignment (`attnlab-cli align --json/--output`). Keys and columns are
// defined here once (statistic names: headStatisticInfos()); docs/head-lab.md shows them.

#include <attnlab/head_lab.h>
#include <attnlab/translator.h>

#include <optional>
#include <string>

namespace attnlab {

inline constexpr int kHeadLabJsonVersion = 1;

// {"format": "attnlab-heads", "version", "model", "sentences", "teacher_forced",
//  "histogram_radius", "measure" ("weights" | "value-norm" | "rollout": what the statistics were taken of;
//  a rollout's one map per layer is its head 0), "heads": [{"kind", "layer", "head", "name", "rows", <statistic keys>,
//  "offset_histogram", "typical_sentence": {<statistic key>: index}}],
//  "importance" (when given): {"sentences", "baseline_bleu", "baseline_chrf", "bleu_signature",
//  "heads": [{"name", "kind", "layer", "head", "bleu", "chrf", "bleu_drop"}],
//  "curve": [{"heads_removed", "bleu", "chrf", "removed": [name], "interval" (with resamples):
//  {"bleu_low", "bleu_high", "difference_low", "difference_high", "significant_loss"}}],
//  "bootstrap_resamples", "removable_heads" (null without intervals), "rank_correlation" (Spearman's
//  rho of BLEU drop against gradient importance; null without it)},
//  "gradient_importance" (given, or the importance's): {"sentences", "skipped", "seconds",
//  "heads": [{"name", "kind", "layer", "head", "raw", "normalized"}] least important first}}
// With `other` (the same corpus through another model, attnlab-cli heads --compare-model): a
// "comparison" with that model and, per head both have, each statistic as {"this", "other",
// "difference"} (other minus this).
struct HeadStatsOther {
    const HeadStatsReport* stats = nullptr;
    const ModelInfo* model = nullptr;
    bool reversed = false;  // it read the references as sources
};
std::string headsJson(const HeadStatsReport& stats, const ImportanceReport* importance, const ModelInfo& model,
                      const HeadStatsOther& other = {}, const GradientImportanceReport* gradient = nullptr);
// A heads document read back (attnlab-cli heads --json whole or merged, the app's export): the statistics, the
// importance when it has one (without its gradient importance), and the model it names (its folder, languages and
// shape: what the document holds). Throws InputError naming the file and the problem.
struct HeadsFile {
    HeadStatsReport stats;
    std::optional<ImportanceReport> importance;
    ModelInfo model;
};
HeadsFile readHeadsJson(const std::string& path);

// One row per head: kind,layer,head,rows,<statistic keys>.
std::string headStatsCsv(const HeadStatsReport& stats);

// {"format": "attnlab-alignment", "version", "model", "pairs", "skipped": [{"pair", "reason"}],
//  "has_gold", "threshold", "methods": [{"method", "aer", "precision", "recall", "predicted", "sure",
//  "predicted_sure", "predicted_possible"}], "symmetrised", "best": {"method", "aer", ...} | null,
//  "best_head": ... | null, "best_layer": ... | null}
// With `dev` (a report on a development set, with gold), "dev": its pairs and skipped ones, the
// method chosen there (its lowest AER, with its scores there) and that method's scores on `report`.
std::string alignmentJson(const AlignmentReport& report, const ModelInfo& model, const AlignmentReport* dev = nullptr);
// An alignment document read back (attnlab-cli align --json whole or merged; Head lab › Open results…): every
// method's counts against gold (no links), the pairs and the skipped ones, the best methods marked again from the
// counts, and the model it names. Throws InputError naming the file and the problem: not alignment scores, one part
// of a sharded run, scores without gold, a method its model has not, counts that cannot be, a damaged file.
struct AlignmentFile {
    AlignmentReport report;
    ModelInfo model;
};
AlignmentFile readAlignmentJson(const std::string& path);
// Open results…: the heads or the alignment document `path` holds (read as readHeadsJson / readAlignmentJson do);
// another file is an InputError naming it and the two kinds that open.
struct HeadLabResults {
    std::optional<HeadsFile> heads;
    std::optional<AlignmentFile> alignment;  // one of the two
};
HeadLabResults readHeadLabResults(const std::string& path);

// One Pharaoh line per pair for the method ("i-j", 0-based, source-target).
std::string alignmentLinksText(const AlignmentReport& report, const AlignmentMethod& method);

// Atomic write of any of the above (util::saveToFile); throws InputError naming the path.
void writeHeadLabFile(const std::string& path, const std::string& text);

}  // namespace attnlab
