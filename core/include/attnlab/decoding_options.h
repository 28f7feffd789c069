#pragma once
// DecodingOptions: how Translator searches for a translation. Checked up front by validate().

#include <attnlab/attention_kind.h>

#include <cstdint>
#include <string>
#include <vector>

namespace attnlab {

struct DecodingOptions {
    int beam_size = 5;              // 1 = greedy search
    double length_penalty = 0.7;    // alpha: hypotheses are ranked by score / length^alpha, where
                                    // length counts the generated tokens including </s>
    int max_length = 200;           // absolute cap on generated tokens (also capped by n_position)
    double max_length_ratio = 2.0;  // and by ratio * source length + offset ...
    int max_length_offset = 10;     // ... (relative cap); ratio <= 0 disables the relative cap
    int min_length = -1;            // </s> is not chosen before this many generated tokens; -1: the
                                    // model's (PackageConfig::min_length: 1 for CTranslate2 models)
    int nbest = 1;                  // hypotheses returned per sentence (<= beam_size)
    int top_k_candidates = 5;       // next-token candidates recorded per decoding step (0 = none)
    bool return_attention = true;   // fill TranslationResult's attention maps
    int max_batch_size = 32;        // sentences decoded together by translateBatch
    // Reproduce the reference implementation's own search (Translator.translate_sentence) for a
    // converted reference checkpoint: rows keep extending and scoring after </s>, length counts
    // <s>, "prj" logits unscaled, pad and <s> not blocked, one sentence at a time, nbest 1.
    // README "Differences from the reference implementation" says what differs otherwise.
    bool reference_beam = false;
    // Target text every translation must begin with (a what-if for teaching): encoded with the
    // target tokenizer and forced token by token, each keeping the model's own log-probability;
    // the search decodes on from there. Empty = none. Not with reference_beam.
    std::string force_prefix;
    // The same as target ids (e.g. a hypothesis's first tokens and one candidate: the app's what-if
    // click); used when force_prefix is empty. Padding, <s> and </s> are refused.
    std::vector<int> force_prefix_ids;
    // Heads switched off in every forward pass of this translation (search and maps): each one's
    // output is replaced by zeros before the output projection (docs/head-lab.md says why).
    // Checked against the model's layers and heads by the translator (InputError naming the head).
    std::vector<HeadRef> ablate;
    // Fill TranslationResult::trace: every continuation the search scored at each step.
    bool record_trace = false;
    // A multilingual model's languages (PackageConfig::languages), as the model names them ("en" or
    // "__en__", "eng_Latn", "en_XX"); empty = the model's defaults. A model of one language pair
    // refuses any other than its own. Checked by the translator (InputError listing the nearest codes).
    std::string source_language;
    std::string target_language;

    // Throws ConfigError naming the option that is out of range.
    void validate() const;
};

}  // namespace attnlab
