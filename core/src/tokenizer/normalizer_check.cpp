// A ModelProto holds a normalization table at normalizer_spec (field 3) / denormalizer_spec
// (field 5) -> precompiled_charsmap (field 2), as [uint32 trie size][darts-clone double-array
// trie][NUL-terminated replacement strings]. SentencePiece's trie walk reads unit[pos ^ byte] for
// every input byte without a bounds check, and a leaf's value is an offset into the strings: both
// are checked here for every node reachable from the root.
#include "tokenizer/normalizer_check.h"

#include <cstdint>
#include <cstring>
#include <functional>
#include <vector>

namespace attnlab::spm {
namespace {

// Calls `visit` with every length-delimited field `field` of a protobuf message; false when the
// message cannot be walked to its end (a truncated value, a group or an unknown wire type).
bool forEachField(std::string_view msg, uint32_t field, const std::function<bool(std::string_view)>& visit) {
    size_t at = 0;
    auto varint = [&](uint64_t* v) {
        *v = 0;
        for (int shift = 0; shift < 64 && at < msg.size(); shift += 7) {
            const uint8_t b = uint8_t(msg[at++]);
            *v |= uint64_t(b & 0x7F) << shift;
            if (!(b & 0x80)) return true;
        }
        return false;
    };
    while (at < msg.size()) {
        uint64_t key = 0, n = 0;
        if (!varint(&key)) return false;
        switch (key & 7) {
        case 0:
            if (!varint(&n)) return false;
            break;
        case 1:
        case 5: {
            const size_t width = (key & 7) == 1 ? 8 : 4;
            if (width > msg.size() - at) return false;
            at += width;
            break;
        }
        case 2:
            if (!varint(&n) || n > msg.size() - at) return false;
            if ((key >> 3) == field && !visit(msg.substr(at, n))) return false;
            at += n;
            break;
        default: return false;
        }
    }
    return true;
}

bool charsMapIsSound(std::string_view blob) {
    if (blob.empty()) return true;
    if (blob.size() < 4) return false;
    uint32_t trie_size = 0;
    std::memcpy(&trie_size, blob.data(), 4);
    if (trie_size > blob.size() - 4 || trie_size % 4 != 0 || trie_size == 0) return false;
    const size_t units = trie_size / 4;
    const std::string_view strings = blob.substr(4 + trie_size);
    auto unit = [&](size_t i) {
        uint32_t u = 0;
        std::memcpy(&u, blob.data() + 4 + 4 * i, 4);
        return u;
    };
    auto offset = [](uint32_t u) { return size_t(u >> 10) << ((u & (1U << 9)) >> 6); };
    std::vector<char> seen(units, 0);
    std::vector<size_t> stack = {offset(unit(0))};  // positions after the root's offset
    while (!stack.empty()) {
        const size_t pos = stack.back();
        stack.pop_back();
        if ((pos | 0xFF) >= units) return false;  // a walk reads unit[pos ^ c] for any byte c
        if (seen[pos]) continue;
        seen[pos] = 1;
        for (uint32_t c = 0; c < 256; ++c) {
            const uint32_t u = unit(pos ^ c);
            if ((u & ((1U << 31) | 0xFF)) != c) continue;  // not a child labelled c
            const size_t next = (pos ^ c) ^ offset(u);
            if (next >= units) return false;
            if ((u >> 8) & 1) {  // has a leaf: its value is an offset into the strings
                const size_t value = unit(next) & ((1U << 31) - 1);
                if (value >= strings.size() || strings.find('\0', value) == std::string_view::npos) return false;
            }
            stack.push_back(next);
        }
    }
    return true;
}

}  // namespace

std::string normalizationTableProblem(std::string_view model_proto) {
    bool tables_sound = true;
    auto checkSpec = [&](std::string_view spec) {
        return forEachField(spec, 2, [&](std::string_view charsmap) {
            tables_sound = tables_sound && charsMapIsSound(charsmap);
            return true;
        });
    };
    for (uint32_t spec : {3u, 5u})
        if (!forEachField(model_proto, spec, checkSpec))
            return "not a usable SentencePiece model: not a protobuf message that can be read to its end";
    if (!tables_sound) return "its normalization table is corrupt (an index points outside it)";
    return "";
}

}  // namespace attnlab::spm
