#pragma once
// Small text helpers shared by core's readers and metrics.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace attnlab::util {

// The length in bytes of the UTF-8 sequence that `lead` starts (1 for ASCII and for a byte that
// cannot start a sequence, so that malformed text still advances).
inline size_t utf8SequenceLength(unsigned char lead) {
    return lead < 0x80 ? 1 : (lead >> 5) == 6 ? 2 : (lead >> 4) == 14 ? 3 : (lead >> 3) == 30 ? 4 : 1;
}

// The code point of the well-formed UTF-8 sequence of length n at s[i], or -1.
inline long decodeUtf8(std::string_view s, size_t i, size_t n) {
    if (n < 2 || i + n > s.size()) return -1;
    long cp = static_cast<unsigned char>(s[i]) & (0x7F >> n);
    for (size_t k = 1; k < n; ++k) {
        const auto c = static_cast<unsigned char>(s[i + k]);
        if ((c & 0xC0) != 0x80) return -1;
        cp = (cp << 6) | (c & 0x3F);
    }
    const bool overlong = (n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000);
    if (overlong || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return -1;
    return cp;
}

inline bool endsWith(std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Appends code point `c` to `out` as UTF-8.
inline void appendUtf8(std::string& out, char32_t c) {
    if (c < 0x80) {
        out += char(c);
    } else if (c < 0x800) {
        out += {char(0xC0 | (c >> 6)), char(0x80 | (c & 0x3F))};
    } else if (c < 0x10000) {
        out += {char(0xE0 | (c >> 12)), char(0x80 | ((c >> 6) & 0x3F)), char(0x80 | (c & 0x3F))};
    } else {
        out += {char(0xF0 | (c >> 18)), char(0x80 | ((c >> 12) & 0x3F)), char(0x80 | ((c >> 6) & 0x3F)),
                char(0x80 | (c & 0x3F))};
    }
}

// `s` (a piece, a name or text read from a file, user text) as a message may quote it, so that
// nothing in it acts on a terminal or hides what it is: printable text stays as it is; a
// backslash is doubled; newline, carriage return and tab become \n \r \t; other C0 controls,
// DEL and bytes that are not well-formed UTF-8 become \xNN; C1 controls, the line and paragraph
// separators and the bidirectional controls become \u{NNNN}. Cut with "..." once the result
// reaches max_bytes.
std::string forMessage(std::string_view s, size_t max_bytes = 200);

// "[2, 3]" for a tensor shape, in error messages.
inline std::string shapeString(const std::vector<int64_t>& s) {
    std::string r = "[";
    for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
    return r + "]";
}

}  // namespace attnlab::util
