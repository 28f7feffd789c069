#pragma once
// Small text helpers shared by core's readers and metrics.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace attnlab::util {

// The length in bytes of the UTF-8 sequence that `lead` starts (1 for ASCII and for a byte that
// cannot start a sequence, so that malformed text still advances).
inline size_t utf8SequenceLength(unsigned char lead) {
    return lead < 0x80 ? 1 : (lead >> 5) == 6 ? 2 : (lead >> 4) == 14 ? 3 : (lead >> 3) == 30 ? 4 : 1;
}

// "[2, 3]" for a tensor shape, in error messages.
inline std::string shapeString(const std::vector<int64_t>& s) {
    std::string r = "[";
    for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
    return r + "]";
}

}  // namespace attnlab::util
