#pragma once
// Comparing two models' heads on one corpus (the Heads tab's "Compare with"): the
// languages the other model reads and writes, matched to those the loaded model uses across the
// ways models name a language (NLLB-200's "eng_Latn", M2M100's "en" / "__en__", mBART-50's "en_XX",
// a one-pair model's "en"; docs/multilingual.md), or why the two cannot be compared.
#include <attnlab/config.h>

#include <optional>
#include <string>
#include <vector>

namespace attnlab {

// The code among `codes` (a model's language codes, as PackageConfig::languages or a one-pair model's
// source_lang / target_lang hold them) that names the language `code` names in another model's scheme:
// the same code, the same ISO 639-1 language ("__en__", "en_XX", "en"), or an ISO 639-3 code with its
// script that names it ("eng_Latn" for "en", as attnlab/language_detect.h's modelLanguageFor matches a
// detected language). Nothing when none does.
std::optional<std::string> sameLanguage(const std::string& code, const std::vector<std::string>& codes);

struct ComparisonPlan {
    // The other model translates the other way round: it reads the references as its sources.
    bool reversed = false;
    // Its DecodingOptions::source_language / target_language (empty for a one-pair model: its own pair).
    std::string source_language, target_language;
    // Why the two cannot be compared, in words; empty when they can.
    std::string problem;
};

// How the model `other` (named `other_name` in messages) is compared with one that translates
// `source` into `target` (the codes it uses: those chosen, or its own pair): a multilingual model in
// its codes for those languages, a one-pair model in its own direction or the other way round.
ComparisonPlan planComparison(const std::string& source, const std::string& target, const PackageConfig& other,
                              const std::string& other_name);

}  // namespace attnlab
