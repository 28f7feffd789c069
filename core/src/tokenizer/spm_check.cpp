// attnlab-spm-check MODEL: loads a SentencePiece model and uses it on every character of the
// Basic Multilingual Plane and the emoji blocks (encode, decode, every piece's name). Run by
// attnlab::Tokenizer in a process of its own before a model is used: SentencePiece trusts the
// normalization table inside a model file, and a corrupt one crashes it (found by fuzzing).
// Exit status 0: usable; 1: SentencePiece refused the file; 3: the normalization table is
// corrupt (checked first: normalizer_check.h); killed by a signal: corrupt in a way the check
// missed.
#include "tokenizer/normalizer_check.h"
#include "util/text.h"

#include <sentencepiece_processor.h>

#include <algorithm>
#include <string>
#include <vector>

namespace {
// Every character of the Basic Multilingual Plane (no surrogates) and of the emoji blocks, in
// pieces of 64 characters that overlap by 8: one 70,000-character text took SentencePiece 0.1 s
// of copying (its lattice grows with the text), the pieces 0.01 s; the overlap keeps every short
// sequence across a cut in one piece.
std::vector<std::string> probeTexts() {
    std::vector<char32_t> chars;
    for (char32_t c = 0x20; c < 0x10000; ++c)
        if (c < 0xD800 || c > 0xDFFF) chars.push_back(c);
    for (char32_t c = 0x1F300; c < 0x1FB00; ++c) chars.push_back(c);
    constexpr size_t kPiece = 64, kOverlap = 8;
    std::vector<std::string> texts;
    for (size_t at = 0; at < chars.size(); at += kPiece - kOverlap) {
        std::string t;
        for (size_t i = at; i < std::min(chars.size(), at + kPiece); ++i) attnlab::util::appendUtf8(t, chars[i]);
        texts.push_back(std::move(t));
    }
    return texts;
}
}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) return 2;
    sentencepiece::SentencePieceProcessor sp;
    if (!sp.Load(argv[1]).ok()) return 1;
    if (!attnlab::spm::normalizationTableProblem(sp.serialized_model_proto()).empty()) return 3;
    for (const std::string& probe : probeTexts()) {
        std::vector<int> ids;
        if (!sp.Encode(probe, &ids).ok()) return 1;
        std::string text;
        (void)sp.Decode(ids, &text);
    }
    for (int id = 0; id < sp.GetPieceSize(); ++id) (void)sp.IdToPiece(id);
    return 0;
}
