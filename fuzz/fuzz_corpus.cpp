// Corpus files, plain or gzip (detected by content): the reader the trainer and `eval` use.
#include "data/corpus.h"
#include "fuzz_support.h"

#include <attnlab/errors.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const std::string path = attnlab::fuzz::scratch("corpus.gz");
    attnlab::fuzz::writeBytes(path, data, size);
    try {
        size_t bytes = 0;
        for (const auto& line : attnlab::data::readLines(path)) bytes += line.size();
        if (bytes > size * 1100 + 64) __builtin_trap();  // gzip expands at most ~1032x
    } catch (const attnlab::Error&) {
    }
    return 0;
}
