#include <attnlab/sentences.h>

#include <attnlab/errors.h>

#include "util/small_file.h"
#include "util/text.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <string_view>

namespace attnlab {

namespace {

// Words a period follows without ending the sentence (lower case, without the period). Kept short:
// single letters and words with a period inside ("e.g.", "z.B.", "J.P.") are caught by rule, not listed.
constexpr std::array<std::string_view, 56> kAbbreviations = {
    // English
    "mr", "mrs", "ms", "dr", "prof", "st", "sr", "jr", "vs", "etc", "no", "fig", "approx", "dept", "inc", "ltd", "co",
    "corp", "gen", "gov", "lt", "col", "capt", "sgt", "rev", "mt", "ave", "blvd", "vol", "pp", "ed",
    // German
    "nr", "ca", "bzw", "usw", "vgl", "evtl", "ggf", "inkl", "hr", "fr", "dipl", "ing", "bspw", "sog", "geb", "str",
    "abs", "ff",
    // French, Spanish, Italian
    "mme", "mlle", "env", "sra", "srta", "ud", "uds"};

struct CodePoint {
    long cp;  // -1: not well-formed
    size_t length;
};

CodePoint codePointAt(std::string_view s, size_t i) {
    const size_t n = util::utf8SequenceLength(static_cast<unsigned char>(s[i]));
    if (n == 1) return {static_cast<unsigned char>(s[i]) < 0x80 ? static_cast<unsigned char>(s[i]) : -1, 1};
    const long cp = util::decodeUtf8(s, i, n);
    return {cp, cp < 0 ? 1 : n};
}

// The code point ending just before byte i (i > 0); a byte that ends no well-formed sequence is one
// code point of its own (-1), so that stepping back never passes what stepping forward would read.
CodePoint codePointBefore(std::string_view s, size_t i) {
    size_t start = i - 1;
    while (start > 0 && i - start < 4 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
    const CodePoint c = codePointAt(s, start);
    if (c.cp >= 0 && start + c.length == i) return c;
    return {-1, 1};
}

bool isSpace(long cp) {
    return cp == ' ' || cp == '\t' || cp == 0xA0 || cp == 0x3000 || (cp >= 0x2000 && cp <= 0x200A);
}
bool isEnder(long cp) { return cp == '.' || cp == '!' || cp == '?' || cp == 0x2026; }
bool isCjkEnder(long cp) { return cp == 0x3002 || cp == 0xFF01 || cp == 0xFF1F; }
bool isClosing(long cp) {
    return cp == '"' || cp == '\'' || cp == ')' || cp == ']' || cp == 0x201D || cp == 0x2019 || cp == 0xBB ||
           cp == 0x201C || cp == 0x300D || cp == 0x300F;
}
bool isOpening(long cp) {
    return cp == '"' || cp == '\'' || cp == '(' || cp == '[' || cp == 0x201E || cp == 0x201C || cp == 0x2018 ||
           cp == 0xAB || cp == 0xBF || cp == 0xA1 || cp == 0x300C || cp == 0x300E;
}
// Letters of the scripts that have case: Latin, Greek, Cyrillic, Armenian.
bool inCasedScript(long cp) { return cp < 0x250 || (cp >= 0x370 && cp < 0x590) || (cp >= 0x1E00 && cp < 0x2000); }
bool isCapital(long cp) {
    if (cp >= 'A' && cp <= 'Z') return true;
    if (cp >= 0xC0 && cp <= 0xDE) return cp != 0xD7;
    if ((cp >= 0x100 && cp < 0x180) || (cp >= 0x1E00 && cp < 0x1F00)) return cp % 2 == 0;  // pairs, capital first
    return (cp >= 0x391 && cp <= 0x3A9) || (cp >= 0x400 && cp <= 0x42F) || (cp >= 0x531 && cp <= 0x556);
}
bool isDigit(long cp) { return cp >= '0' && cp <= '9'; }
// What may begin a sentence: a capital, a digit, or a letter of a script without case (Arabic, Hebrew,
// Devanagari, Han, ...: anything past the cased scripts that is not a space or punctuation asked about above).
bool beginsSentence(long cp) {
    return isCapital(cp) || isDigit(cp) || (cp >= 0x590 && !inCasedScript(cp) && !isSpace(cp) && !isCjkEnder(cp));
}

// Whether the single period at byte `dot` of `line` follows an abbreviation, an initial, a word holding a
// period or a number.
bool periodAfterShortForm(std::string_view line, size_t dot) {
    size_t start = dot;
    while (start > 0) {
        const CodePoint before = codePointBefore(line, start);
        if (isSpace(before.cp) || isOpening(before.cp)) break;
        start -= before.length;
    }
    const std::string_view word = line.substr(start, dot - start);
    if (word.empty()) return false;
    if (word.find('.') != std::string_view::npos) return true;  // "J.P", "e.g", "z.B"
    if (std::all_of(word.begin(), word.end(), [](char c) { return c >= '0' && c <= '9'; })) return true;
    if (codePointAt(word, 0).length == word.size()) return true;  // one letter: an initial
    std::string lower(word);
    for (char& c : lower)
        if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
    return std::find(kAbbreviations.begin(), kAbbreviations.end(), lower) != kAbbreviations.end();
}

// Where the sentence ending with the ender at `i` stops (after its enders and closing marks), or npos when
// the text goes on in the same sentence. `next` gets where the following sentence begins.
size_t sentenceEnd(std::string_view line, size_t i, size_t& next) {
    const CodePoint first = codePointAt(line, i);
    size_t end = i + first.length;
    size_t enders = 1;
    while (end < line.size() && isEnder(codePointAt(line, end).cp)) {
        end += codePointAt(line, end).length;
        ++enders;
    }
    while (end < line.size() && isClosing(codePointAt(line, end).cp)) end += codePointAt(line, end).length;
    if (isCjkEnder(first.cp)) {
        next = end;
        return end;
    }
    size_t k = end;
    while (k < line.size() && isSpace(codePointAt(line, k).cp)) k += codePointAt(line, k).length;
    if (k == end || k >= line.size()) return std::string_view::npos;  // no space, or the line's end (a newline splits)
    size_t word = k;
    while (word < line.size() && isOpening(codePointAt(line, word).cp)) word += codePointAt(line, word).length;
    if (word >= line.size() || !beginsSentence(codePointAt(line, word).cp)) return std::string_view::npos;
    if (first.cp == '.' && enders == 1 && periodAfterShortForm(line, i)) return std::string_view::npos;
    next = k;
    return end;
}

std::string_view trimmed(std::string_view s) {
    size_t b = 0, e = s.size();
    while (b < e && isSpace(codePointAt(s, b).cp)) b += codePointAt(s, b).length;
    while (e > b && isSpace(codePointBefore(s, e).cp)) e -= codePointBefore(s, e).length;
    return s.substr(b, e - b);
}

void addSentence(std::vector<TextSentence>& out, std::string_view text, std::string_view piece, size_t paragraph) {
    const std::string_view t = trimmed(piece);
    if (!t.empty()) out.push_back({std::string(t), size_t(t.data() - text.data()), paragraph});
}

void splitLine(std::vector<TextSentence>& out, std::string_view text, std::string_view line, size_t paragraph) {
    size_t begin = 0;
    for (size_t i = 0; i < line.size();) {
        const CodePoint c = codePointAt(line, i);
        size_t next = 0;
        const size_t end = isEnder(c.cp) || isCjkEnder(c.cp) ? sentenceEnd(line, i, next) : std::string_view::npos;
        if (end == std::string_view::npos) {
            i += c.length;
            while (isEnder(c.cp) && i < line.size() && isEnder(codePointAt(line, i).cp))  // a run once: "..."
                i += codePointAt(line, i).length;
            continue;
        }
        addSentence(out, text, line.substr(begin, end - begin), paragraph);
        begin = i = next;
    }
    addSentence(out, text, line.substr(begin), paragraph);
}

}  // namespace

std::vector<TextSentence> splitSentences(const std::string& text) {
    std::vector<TextSentence> out;
    const std::string_view all(text);
    size_t paragraph = 0;
    bool blank_since = false;
    for (size_t start = 0; start <= all.size();) {
        size_t stop = all.find('\n', start);
        if (stop == std::string_view::npos) stop = all.size();
        std::string_view line = all.substr(start, stop - start);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (trimmed(line).empty()) {
            blank_since = true;
        } else {
            if (blank_since && !out.empty()) ++paragraph;
            blank_since = false;
            splitLine(out, all, line, paragraph);
        }
        start = stop + 1;
    }
    return out;
}

std::optional<std::string> textProblem(const std::string& text, const std::string& what) {
    if (text.find('\0') != std::string::npos)
        return what + ": it holds a NUL byte at byte " + std::to_string(text.find('\0') + 1) +
               ": a binary file, not text";
    size_t line = 1;
    for (size_t i = 0; i < text.size();) {
        const CodePoint c = codePointAt(text, i);
        if (c.cp < 0)
            return what + ": it is not UTF-8 text: byte " + std::to_string(i + 1) + " (line " + std::to_string(line) +
                   ") is " + util::forMessage(text.substr(i, 1)) + " (save it as UTF-8, e.g. iconv -f latin1 -t utf-8)";
        line += c.cp == '\n';
        i += c.length;
    }
    if (splitSentences(text).empty()) return what + ": the text is empty";
    return std::nullopt;
}

std::string readTextToTranslate(const std::string& path) {
    if (auto problem = util::fileProblem(path)) throw InputError(*problem);
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    if (!ec && size > kMaxTextFileBytes)
        throw InputError(path + ": " + std::to_string(size) + " bytes, more than the " +
                         std::to_string(kMaxTextFileBytes) +
                         " (1 MiB) AttnLab translates as one text (split it into parts)");
    std::string bytes;
    try {
        bytes = util::readSmallFile(path, kMaxTextFileBytes);  // bounded again: the file may have grown
    } catch (const PackageError& e) {
        throw InputError(e.what());
    }
    if (bytes.rfind("\xEF\xBB\xBF", 0) == 0) bytes.erase(0, 3);  // a byte-order mark
    if (auto problem = textProblem(bytes, path)) throw InputError(*problem);
    return bytes;
}

}  // namespace attnlab
