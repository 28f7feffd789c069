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

#include <string>
#include <vector>

namespace {
std::string probeText() {
    std::string t;
    auto put = [&](char32_t c) { attnlab::util::appendUtf8(t, c); };
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
    if (!attnlab::spm::normalizationTableProblem(sp.serialized_model_proto()).empty()) return 3;
    std::vector<int> ids;
    if (!sp.Encode(probeText(), &ids).ok()) return 1;
    std::string text;
    (void)sp.Decode(ids, &text);
    for (int id = 0; id < sp.GetPieceSize(); ++id) (void)sp.IdToPiece(id);
    return 0;
}
