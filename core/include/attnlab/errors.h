#pragma once
// Exceptions thrown by attnlab::core: the one error convention of the library.
//
// Every failure is a typed exception derived from attnlab::Error whose message names the thing
// that is wrong (a file, a field, an option) and the problem, so callers can show it as it is.
// The type says who can act on it: ConfigError (an option or config value), PackageError (a model
// package), InputError (user input or a corpus), TokenizerError, DeviceError, NumericError (a
// model's numbers went bad at run time: a non-finite logit), CancelledError (the caller asked to stop) and
// InternalError (a bug, or a LibTorch failure: LibTorch's c10::Error is translated into InternalError at the engine's
// and the trainer's boundaries, never let through). Functions that only check something return
// std::optional<std::string>: the problem, or nothing.

#include <stdexcept>
#include <string>

namespace attnlab {

class Error : public std::runtime_error {
public:
    explicit Error(const std::string& message) : std::runtime_error(message) {}
};

struct ConfigError : Error {
    using Error::Error;
};
struct PackageError : Error {
    using Error::Error;
};
struct InputError : Error {
    using Error::Error;
};
struct TokenizerError : Error {
    using Error::Error;
};
struct DeviceError : Error {
    using Error::Error;
};
// A model whose weights are finite produced a non-finite value while translating (weights so large
// that a layer overflows); the message names the decoding step and the first stage affected.
struct NumericError : Error {
    using Error::Error;
};
struct InternalError : Error {
    using Error::Error;
};
struct CancelledError : Error {
    CancelledError() : Error("cancelled") {}
};

}  // namespace attnlab
