#pragma once
// Range checks shared by the option structs' validate() functions.
#include <attnlab/errors.h>

#include <cmath>
#include <sstream>
#include <type_traits>

namespace attnlab::util {

// Throws ConfigError "<owner>: <what> = <value> is out of range [lo, hi]"; NaN is never in range
// ("<what> is not a number").
template <typename T>
void requireRange(const char* what, T value, T lo, T hi, const char* owner) {
    bool nan = false;
    if constexpr (std::is_floating_point_v<T>) nan = std::isnan(value);
    if (nan || value < lo || value > hi) {
        std::ostringstream m;
        m << owner << ": " << what << " = " << value
          << (nan ? " is not a number; expected one in [" : " is out of range [") << lo << ", " << hi << "]";
        throw ConfigError(m.str());
    }
}

}  // namespace attnlab::util
