#pragma once
// What the head lab's corpus runners share (head_lab.cpp, head_importance.cpp): which lines of a
// corpus a model can read, the skipped ones, progress.
#include <attnlab/head_lab.h>

#include <string>
#include <vector>

namespace attnlab::headlab {

inline constexpr size_t kChunk = 256;  // sentences whose maps are held at once (~30 MB for the bundled model)

// InputError "mismatched inputs: N source sentences but M <what>" when the counts differ.
void checkCounts(size_t sources, size_t others, const char* what);
// The lines of a corpus run that the model can read (both sides, when there is a second), in
// order; the others go to `skipped` with the side and the reason.
std::vector<size_t> readableLines(const Translator& t, const std::vector<std::string>& sources,
                                  const std::vector<std::string>* second, const char* second_name,
                                  std::vector<SkippedPair>& skipped);
// When every line was skipped: an error naming the first and why.
void checkSomethingLeft(size_t lines, const std::vector<SkippedPair>& skipped, const std::string& what);
std::vector<std::string> pick(const std::vector<std::string>& lines, const std::vector<size_t>& which);
// Calls the callback (when there is one); false = cancel.
bool report(const CorpusCallback& cb, const std::string& stage, int done, int total);
// Every head of the model of those kinds (empty = all), kind by kind, layer by layer.
std::vector<HeadRef> headsOf(const Translator& t, const std::vector<AttentionKind>& kinds);
// Teacher-forces `pairs` (indices into sources and targets) with `t`; a pair it cannot read is
// skipped (`side` before the reason) and dropped from `pairs`. Results in the order of `pairs`.
std::vector<TranslationResult> forcePairs(const Translator& t, const std::vector<std::string>& sources,
                                          const std::vector<std::string>& targets, std::vector<size_t>& pairs,
                                          std::vector<SkippedPair>& skipped, const std::string& side,
                                          const DecodingOptions& d, const StepCallback& cancel = {});
void sortSkipped(std::vector<SkippedPair>& skipped);
// The lowest AER among all methods (best), and among the unsymmetrised heads and layers (best_head, best_layer):
// alignCorpus's, and the merge of a sharded run's parts (io/head_lab_json.cpp).
void markBest(AlignmentReport& rep);
// A result whose maps are those of `measure` (attnlab/attention_flow.h; the value norms from the
// translator's captured pass).
TranslationResult measured(const Translator& t, TranslationResult r, MapMeasure measure);

}  // namespace attnlab::headlab
