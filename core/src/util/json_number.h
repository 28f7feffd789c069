#pragma once
// Whole numbers read from a JSON file a user hands over (a part of a sharded run, issue 55): nlohmann's get<int>()
// and get<int64_t>() cast whatever number is there, so a shard index of 2^40 wraps to 0, 2^64 - 1 reads as -1, a
// float of 1e300 is undefined behaviour, and counts near INT64_MAX overflow when summed. Every such number is read
// here: a whole number within the range the reader gives, else an InputError naming the file, the key and the value.
#include <attnlab/errors.h>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace attnlab::util {

// The largest count a part's line may carry (an n-gram count, a sentence's rows): 2^31 - 1. With at most
// kMaxJsonLines lines, their sum stays below 2^62.
inline constexpr int64_t kMaxJsonCount = (int64_t(1) << 31) - 1;
inline constexpr int64_t kMaxJsonLines = (int64_t(1) << 31) - 1;

// `value` as a whole number from `lo` to `hi`, or nothing (another number, a float, not a number).
inline std::optional<int64_t> wholeNumberWithin(const nlohmann::json& value, int64_t lo, int64_t hi) {
    int64_t n = 0;
    if (value.is_number_unsigned()) {
        const uint64_t u = value.get<uint64_t>();
        if (hi < 0 || u > uint64_t(hi)) return std::nullopt;
        n = int64_t(u);
    } else if (value.is_number_integer()) {
        n = value.get<int64_t>();
    } else {
        return std::nullopt;
    }
    if (n < lo || n > hi) return std::nullopt;
    return n;
}

inline std::string notWholeNumber(const nlohmann::json& value, int64_t lo, int64_t hi, const std::string& what) {
    return what + " is " + value.dump() + ", not a whole number from " + std::to_string(lo) + " to " +
           std::to_string(hi);
}

// `value` as a whole number from `lo` to `hi`; `what` names it in the message ("\"run\".\"shard\".\"index\"").
// Throws InputError "FILE: WHAT is VALUE, not a whole number from LO to HI".
inline int64_t wholeNumber(const nlohmann::json& value, int64_t lo, int64_t hi, const std::string& file,
                           const std::string& what) {
    if (const auto n = wholeNumberWithin(value, lo, hi)) return *n;
    throw InputError(file + ": " + notWholeNumber(value, lo, hi, what));
}

// The same for a reader that does not know its file: throws ConfigError "WHAT is VALUE, not a whole number from LO
// to HI", which its caller turns into an InputError naming the file (readHeadsJson, readHeadLabResults).
inline int64_t wholeNumberIn(const nlohmann::json& value, int64_t lo, int64_t hi, const std::string& what) {
    if (const auto n = wholeNumberWithin(value, lo, hi)) return *n;
    throw ConfigError(notWholeNumber(value, lo, hi, what));
}

// object[key] as wholeNumber(); a missing key is an InputError too. `where` prefixes the key's name ("line 5's ").
inline int64_t wholeNumberAt(const nlohmann::json& object, const char* key, int64_t lo, int64_t hi,
                             const std::string& file, const std::string& where = {}) {
    const std::string what = where + "\"" + key + "\"";
    if (!object.is_object() || !object.contains(key)) throw InputError(file + ": " + what + " is missing");
    return wholeNumber(object[key], lo, hi, file, what);
}

// a + b for counts summed over parts; throws InputError "FILE: WHAT summed over the parts exceeds 2^63" rather than
// wrapping.
inline int64_t checkedSum(int64_t a, int64_t b, const std::string& file, const std::string& what) {
    int64_t out = 0;
    if (__builtin_add_overflow(a, b, &out))
        throw InputError(file + ": " + what + " summed over the parts exceeds " + std::to_string(INT64_MAX));
    return out;
}

}  // namespace attnlab::util
