// attnlab-spm-check MODEL: loads a SentencePiece model and uses it on every character of the
// Basic Multilingual Plane and the emoji blocks (encode, decode, every piece's name). Run by
// attnlab::Tokenizer in a process of its own before a model is used: SentencePiece trusts the
// normalization table inside a model file, and a corrupt one crashes it (found by fuzzing).
// Exit status 0: usable; 1: SentencePiece refused the file; 3: the normalization table is
// corrupt (checked first, below); killed by a signal: corrupt in a way the check missed.
#include <sentencepiece_processor.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace {
// ---- The normalization table, checked before SentencePiece walks it. A ModelProto holds it at
// normalizer_spec (field 3) / denormalizer_spec (field 5) -> precompiled_charsmap (field 2), as
// [uint32 trie size][darts-clone double-array trie][NUL-terminated replacement strings]. The
// trie walk reads unit[pos ^ byte] for every input byte without a bounds check, and a leaf's value
// is an offset into the strings: both are checked here for every node reachable from the root.

// The length-delimited field `field` of a protobuf message, or nothing.
bool protoField(std::string_view msg, uint32_t field, std::string_view* out) {
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
        case 1: at += 8; break;
        case 5: at += 4; break;
        case 2:
            if (!varint(&n) || n > msg.size() - at) return false;
            if ((key >> 3) == field) {
                *out = msg.substr(at, n);
                return true;
            }
            at += n;
            break;
        default: return false;
        }
    }
    return false;
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

bool normalizersAreSound(const std::string& model) {
    for (uint32_t spec : {3u, 5u}) {
        std::string_view msg, charsmap;
        if (!protoField(model, spec, &msg)) continue;
        if (protoField(msg, 2, &charsmap) && !charsMapIsSound(charsmap)) return false;
    }
    return true;
}

std::string probeText() {
    std::string t;
    auto put = [&](char32_t c) {
        if (c < 0x80) {
            t += char(c);
        } else if (c < 0x800) {
            t += {char(0xC0 | (c >> 6)), char(0x80 | (c & 0x3F))};
        } else if (c < 0x10000) {
            t += {char(0xE0 | (c >> 12)), char(0x80 | ((c >> 6) & 0x3F)), char(0x80 | (c & 0x3F))};
        } else {
            t += {char(0xF0 | (c >> 18)), char(0x80 | ((c >> 12) & 0x3F)), char(0x80 | ((c >> 6) & 0x3F)),
                  char(0x80 | (c & 0x3F))};
        }
    };
    for (char32_t c = 0x20; c < 0x10000; ++c)
        if (c < 0xD800 || c > 0xDFFF) put(c);
    for (char32_t c = 0x1F300; c < 0x1FB00; ++c) put(c);
    return t;
}
}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) return 2;
    sentencepiece::SentencePieceProcessor sp;
    if (!sp.Load(argv[1]).ok()) return 1;
    if (!normalizersAreSound(sp.serialized_model_proto())) return 3;
    std::vector<int> ids;
    if (!sp.Encode(probeText(), &ids).ok()) return 1;
    std::string text;
    (void)sp.Decode(ids, &text);
    for (int id = 0; id < sp.GetPieceSize(); ++id) (void)sp.IdToPiece(id);
    return 0;
}
