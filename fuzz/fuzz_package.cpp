// A whole package directory through the load path the app uses (attnlab::Translator): the input
// is split into config.json, tokenizer.model and model.safetensors (FuzzedDataProvider), written
// to a directory, loaded, and, when it loads, used to translate a sentence.
#include "fuzz_support.h"

#include <attnlab/errors.h>
#include <attnlab/translator.h>

#include <fuzzer/FuzzedDataProvider.h>

#include <filesystem>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const std::string dir = attnlab::fuzz::scratch("package");
    std::filesystem::create_directories(dir);
    FuzzedDataProvider in(data, size);
    const std::string config = in.ConsumeRandomLengthString(1 << 16);
    const std::string tokenizer = in.ConsumeRandomLengthString(1 << 20);
    const std::string weights = in.ConsumeRemainingBytesAsString();
    attnlab::fuzz::writeBytes(dir + "/config.json", reinterpret_cast<const uint8_t*>(config.data()), config.size());
    attnlab::fuzz::writeBytes(dir + "/tokenizer.model", reinterpret_cast<const uint8_t*>(tokenizer.data()), tokenizer.size());
    attnlab::fuzz::writeBytes(dir + "/model.safetensors", reinterpret_cast<const uint8_t*>(weights.data()), weights.size());
    try {
        attnlab::Translator t(dir, {"cpu", 1});
        attnlab::DecodingOptions o;
        o.beam_size = 2;
        o.max_length = 4;
        (void)t.translate("Ein Hund läuft.", o);
    } catch (const attnlab::Error&) {
    }
    return 0;
}
