// tokenizer.model bytes through the dlopen'ed SentencePiece module: load, encode, decode.
#include "fuzz_support.h"

#include <attnlab/errors.h>
#include <attnlab/tokenizer.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const std::string path = attnlab::fuzz::scratch("tokenizer.model");
    attnlab::fuzz::writeBytes(path, data, size);
    try {
        attnlab::Tokenizer tok(path);
        const auto e = tok.encode("Ein Hund läuft 😀 über die Wiese.");
        (void)tok.decode(e.ids);
        (void)tok.unknownCharacters(e);
        for (int id = 0; id < std::min(tok.vocabSize(), 16); ++id) (void)tok.idToPiece(id);
    } catch (const attnlab::Error&) {
    }
    return 0;
}
