#pragma once
// The language of a text, detected by Google's Compact Language Detector 2 (CLD2; Debian's libcld2,
// docs/text-translation.md), and matched to a multilingual model's own language codes (NLLB's
// "deu_Latn", M2M100's "de" / "__de__", mBART's "de_DE", Argos's "de"). Where it cannot tell (too
// little text, no reliable answer, a language the model lacks) it says why in words, never guessing.
#include <string>
#include <vector>

namespace attnlab {

// Fewer letters than this are too few to tell a language by (CLD2 answers such text unreliably).
inline constexpr int kMinDetectLetters = 12;

struct DetectedLanguage {
    std::string code;  // ISO 639-1 where the language has one ("de"), else ISO 639-3 ("haw", "ceb");
                       // "zh-Hant" for Chinese in traditional characters; empty when none was found
    std::string name;  // in English: "German"
    int percent = 0;   // of the text's letters in this language
    bool reliable = false;
    int letters = 0;      // the bytes of letters CLD2 looked at
    std::string problem;  // why `code` is empty (or not to be trusted): in words, empty when it is
};

// Thread-safe; never throws for any bytes (text that is not UTF-8 is "not UTF-8 text"; control characters
// such as a form feed are read as spaces). At most the first 16 MiB are looked at.
DetectedLanguage detectLanguage(const std::string& text);

struct LanguageChoice {
    std::string code;     // one of the model's codes, or empty
    std::string problem;  // why empty: the detection's problem, a language the model lacks, or two scripts
};

// The model's code (one of `model_codes`, as PackageConfig::languages holds them) for `detected`: the
// ISO 639-1 code ("de", "__de__", "de_DE"), its ISO 639-3 code ("deu_Latn") or the individual language
// NLLB names for a macrolanguage ("arb_Arab" for Arabic, "zsm_Latn" for Malay); Chinese by its script
// (zh: Hans, zh-Hant: Hant, or Argos's "zt").
LanguageChoice modelLanguageFor(const DetectedLanguage& detected, const std::vector<std::string>& model_codes);

}  // namespace attnlab
