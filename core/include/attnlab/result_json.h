#pragma once
// The attention JSON file written by `attnlab-cli translate --attention` and the app's
// "Export attention" (schema: docs/attention-json.md).

#include <attnlab/decoding_options.h>
#include <attnlab/translation.h>
#include <attnlab/translator.h>

#include <string>
#include <vector>

namespace attnlab {

inline constexpr int kAttentionJsonVersion = 1;

std::string attentionJson(const std::vector<TranslationResult>& results, const ModelInfo& model,
                          const DecodingOptions& options);
// Writes to path + ".tmp" and renames; throws InputError naming the path on failure.
void writeAttentionJson(const std::string& path, const std::vector<TranslationResult>& results, const ModelInfo& model,
                        const DecodingOptions& options);

}  // namespace attnlab
