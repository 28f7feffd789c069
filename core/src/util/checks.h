#pragma once
// Range checks shared by the option structs' validate() functions.
#include <attnlab/errors.h>

#include <sstream>

namespace attnlab::util {

// Throws ConfigError "<owner>: <what> = <value> is out of range [lo, hi]".
template <typename T>
void requireRange(const char* what, T value, T lo, T hi, const char* owner) {
    if (value < lo || value > hi) {
        std::ostringstream m;
        m << owner << ": " << what << " = " << value << " is out of range [" << lo << ", " << hi << "]";
        throw ConfigError(m.str());
    }
}

}  // namespace attnlab::util
