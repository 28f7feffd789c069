#include "util/text.h"

#include <attnlab/terminal_text.h>

#include <cstdio>

namespace attnlab::util {

namespace {
// C1 controls, U+2028/U+2029, and the bidirectional marks, embeddings, overrides and isolates.
bool invisibleControl(long cp) {
    return (cp >= 0x80 && cp <= 0x9F) || cp == 0x200E || cp == 0x200F || (cp >= 0x2028 && cp <= 0x202E) ||
           (cp >= 0x2066 && cp <= 0x2069);
}

std::string byteEscape(unsigned char c) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02X", unsigned(c));
    return buf;
}

// An ASCII character as a message shows it (a backslash doubled where `double_backslash`).
std::string asciiShown(unsigned char c, bool double_backslash) {
    switch (c) {
    case '\\': return double_backslash ? "\\\\" : "\\";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    default: return c < 0x20 || c == 0x7F ? byteEscape(c) : std::string(1, char(c));
    }
}

std::string codePointEscape(long cp) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "\\u{%04lX}", static_cast<unsigned long>(cp));
    return buf;
}

// forMessage and escapedForTerminal: the same escapes, backslashes doubled or not.
std::string escaped(std::string_view s, size_t max_bytes, bool double_backslash) {
    std::string out;
    for (size_t i = 0; i < s.size();) {
        if (out.size() >= max_bytes) return out + "...";
        const auto c = static_cast<unsigned char>(s[i]);
        const size_t n = utf8SequenceLength(c);
        const long cp = c < 0x80 ? long(c) : decodeUtf8(s, i, n);
        if (c < 0x80) {
            out += asciiShown(c, double_backslash);
        } else if (cp < 0) {
            out += byteEscape(c);  // one byte of text that is not UTF-8
            ++i;
            continue;
        } else if (invisibleControl(cp)) {
            out += codePointEscape(cp);
        } else {
            out += s.substr(i, n);
        }
        i += n;
    }
    return out;
}
}  // namespace

std::string forMessage(std::string_view s, size_t max_bytes) { return escaped(s, max_bytes, true); }

}  // namespace attnlab::util

namespace attnlab {
std::string escapedForTerminal(std::string_view text) {
    return util::escaped(text, std::string::npos, /*double_backslash=*/false);
}
}  // namespace attnlab
