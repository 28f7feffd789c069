// config.json: JSON parsing, the field table's type checks and every range check.
#include <attnlab/errors.h>
#include <attnlab/package.h>

#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        const auto c = attnlab::packageConfigFromJson(std::string(reinterpret_cast<const char*>(data), size), "config.json");
        // What is accepted writes back and reads again to the same configuration.
        const auto again = attnlab::packageConfigFromJson(attnlab::packageConfigToJson(c), "again");
        if (attnlab::packageConfigToJson(again) != attnlab::packageConfigToJson(c)) __builtin_trap();
    } catch (const attnlab::Error&) {
    }
    return 0;
}
