// libFuzzer entry point; the target itself is attnlab::fuzz::corpusResults (fuzz/targets.cpp).
#include "targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    attnlab::fuzz::corpusResults(data, size);
    return 0;
}
