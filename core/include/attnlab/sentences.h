#pragma once
// A whole text translated sentence by sentence (the app's File › Translate a text…): the text read
// from a file or pasted, checked, and split into sentences by a small, documented rule set
// (docs/text-translation.md). Conservative: where a rule is unsure (an abbreviation, an initial, a
// number), the text is not split, since two sentences translated together still read well and half
// a sentence does not.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace attnlab {

// The largest text file read (1 MiB): a larger one is refused with this limit named.
inline constexpr size_t kMaxTextFileBytes = size_t(1) << 20;
// The most sentences translated of one text: beyond, the first this many (the rest named in a note).
inline constexpr size_t kMaxTextSentences = 500;

struct TextSentence {
    std::string text;      // without the surrounding spaces
    size_t offset = 0;     // byte offset of its first character in the text
    size_t paragraph = 0;  // 0-based; a blank line starts a new paragraph
};

// The sentences of `text` (UTF-8), in order. Rules (each boundary needs all of its conditions):
// - a newline always ends a sentence; a blank line (only spaces between two newlines) also ends a paragraph;
// - inside a line, a sentence ends after one or more of . ! ? … (closing quotes or brackets may follow)
//   when a space follows and then a capital letter, a digit, or an opening quote or bracket before one;
// - "。", "！", "？" (Chinese and Japanese) end a sentence without a space;
// - a period is not an end after a known abbreviation (Dr., e.g., z. B., usw., ca., ...: kAbbreviations in
//   sentences.cpp), after a single letter (an initial: "J. Smith", "z. B."), after a word holding a period
//   itself ("J.P.", "U.S."), or after a number ("am 3. Mai").
std::vector<TextSentence> splitSentences(const std::string& text);

// Why `text` cannot be translated as a text, or nothing: "the text is empty" (nothing but spaces), "it
// holds a NUL byte at byte N: a binary file, not text", "it is not UTF-8 text: byte N (line L) ...".
// `what` names it in the message ("notes.txt", "the pasted text").
[[nodiscard]] std::optional<std::string> textProblem(const std::string& text, const std::string& what);

// The text of the file `path` (a UTF-8 byte-order mark dropped); throws InputError naming the file for
// a missing or unreadable file, one larger than kMaxTextFileBytes, and any textProblem.
std::string readTextToTranslate(const std::string& path);

}  // namespace attnlab
