#pragma once
// The attention JSON file written by `attnlab-cli translate --attention` and the app's
// "Export attention" (schema: docs/attention-json.md).

#include <attnlab/attention_flow.h>
#include <attnlab/contributions.h>
#include <attnlab/decoding_options.h>
#include <attnlab/gradients.h>
#include <attnlab/translation.h>
#include <attnlab/translator.h>

#include <optional>
#include <string>
#include <vector>

namespace attnlab {

inline constexpr int kAttentionJsonVersion = 1;

// Maps beyond the weights, beside each sentence's "attention" (attnlab/attention_flow.h).
struct AttentionJsonExtras {
    // One per result, or none: "value_norms" (||f_h(x_j)||, [kind][layer][head][key]) and
    // "attention_value_norm" (each weight times its key's norm, not normalised).
    std::vector<ValueNorms> value_norms;
    bool rollout = false;  // "rollout": one map per layer of each kind
    // One per result, or none: "saliency": {"source": [target][source], "target": [target][decoder input]}
    // (attnlab/gradients.h).
    std::vector<Saliency> saliency;
    // One list per result, or none: "contributions": {method name: {"source", "target", "encoder_self",
    // "decoder_self", "cross"}} (attnlab/contributions.h; `attnlab-cli translate --contributions`), in the order given.
    std::vector<std::vector<Contributions>> contributions;
    // One per result, or none: "logit_lens": {"layers": [decoder layer][position] {"top": [{"piece", "id",
    // "probability"}], "chosen_probability", "chosen_rank"}} (attnlab/contributions.h; `--logit-lens`).
    std::vector<LogitLens> logit_lens;
    // One per result, or none: "contrastive": {"step", "asked", "chosen", "alternative", "chosen_log_probability",
    // "alternative_log_probability", "saliency": {"source", "target"}, "value_zeroing": {"encoder_self",
    // "decoder_self", "cross"}} (attnlab/contributions.h `Contrastive`; `attnlab-cli translate --contrast STEP:PIECE`);
    // a question that does not fit the sentence (its step past the end, its piece the one chosen) is
    // "contrastive": null with "contrastive_skipped": why.
    struct ContrastiveEntry {
        std::optional<Contrastive> answer;
        std::string skipped;  // why there is no answer
    };
    std::vector<ContrastiveEntry> contrastive;
};

std::string attentionJson(const std::vector<TranslationResult>& results, const ModelInfo& model,
                          const DecodingOptions& options, const AttentionJsonExtras& extras = {});
// Writes to path + ".tmp" and renames; throws InputError naming the path on failure.
void writeAttentionJson(const std::string& path, const std::vector<TranslationResult>& results, const ModelInfo& model,
                        const DecodingOptions& options, const AttentionJsonExtras& extras = {});

}  // namespace attnlab
