#pragma once
// JSON from outside files, parsed with a bound on nesting: nlohmann's parser and its copies recurse
// once per level, so a file of a million '[' (1 MB) would overflow the stack (a crash, not an
// error). Every reader of a file AttnLab did not write itself parses through this.
#include <attnlab/errors.h>

#include <nlohmann/json.hpp>

#include <string>

namespace attnlab::util {

inline constexpr int kMaxJsonDepth = 64;

// Throws PackageError "<origin>: malformed JSON: ..." (nesting deeper than kMaxJsonDepth included).
inline nlohmann::json parseJson(const std::string& text, const std::string& origin) {
    try {
        return nlohmann::json::parse(text, [origin](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
            if (depth > kMaxJsonDepth)
                throw PackageError(origin + ": malformed JSON: nested deeper than " + std::to_string(kMaxJsonDepth) +
                                   " levels");
            return true;
        });
    } catch (const nlohmann::json::exception& e) {
        throw PackageError(origin + ": malformed JSON: " + e.what());
    }
}

}  // namespace attnlab::util
