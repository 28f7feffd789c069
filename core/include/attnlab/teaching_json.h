#pragma once
// The teaching JSON files: the search trace (`attnlab-cli translate --trace`, schema
// docs/trace-json.md) and one attention weight explained (`attnlab-cli explain`). The JSON keys
// are defined here once; the CLI, the app's exports and the tests use these functions.

#include <attnlab/decoding_options.h>
#include <attnlab/explain.h>
#include <attnlab/translation.h>
#include <attnlab/translator.h>

#include <string>
#include <vector>

namespace attnlab {

inline constexpr int kTraceJsonVersion = 1;

std::string traceJson(const std::vector<TranslationResult>& results, const ModelInfo& model,
                      const DecodingOptions& options);
// Atomic write; throws InputError naming the path on failure.
void writeTraceJson(const std::string& path, const std::vector<TranslationResult>& results, const ModelInfo& model,
                    const DecodingOptions& options);

std::string explanationJson(const AttentionExplanation& e);

}  // namespace attnlab
