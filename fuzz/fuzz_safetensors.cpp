// model.safetensors: the header parser and the checks of every tensor's dtype, shape and offsets.
// Any exception other than attnlab::Error, a crash or a sanitizer report is a finding.
#include "package/safetensors.h"

#include <attnlab/errors.h>

#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string bytes(reinterpret_cast<const char*>(data), size);
    try {
        const auto h = attnlab::safetensors::parseHeader(bytes, "fuzz.safetensors", size);
        for (const auto& t : h.tensors) (void)t.numel();
    } catch (const attnlab::Error&) {
    }
    return 0;
}
