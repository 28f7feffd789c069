#pragma once
// The codes a model's config carries where nothing names its languages (a Marian directory whose
// tokenizer_config.json, card and name say none; a CTranslate2 model without them; a multilingual
// model before one is chosen): written by the readers that cannot tell, and recognised by what shows
// a model's direction (the app's model label), so that "src → tgt" is never shown as if it were one.
#include <string>

namespace attnlab::unknown_language {

inline constexpr char kSource[] = "src";
inline constexpr char kTarget[] = "tgt";

// A code that names a language: not empty and not one of the two above.
inline bool known(const std::string& code) { return !code.empty() && code != kSource && code != kTarget; }

}  // namespace attnlab::unknown_language
