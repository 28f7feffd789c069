#pragma once
// Exceptions thrown by attnlab::core. Every message names the thing that is wrong
// (a file, a field, an option) and the problem, so callers can show it as it is.

#include <stdexcept>
#include <string>

namespace attnlab {

enum class ErrorKind {
    Config,     // a model configuration or option value that is out of range
    Package,    // a model package (config.json, model.safetensors, tokenizer.model) is unusable
    Input,      // user input: an empty or overlong sentence, a bad corpus file
    Tokenizer,  // SentencePiece failed or its module could not be loaded
    Device,     // the requested device is not available
    Cancelled,  // the caller's progress callback asked to stop
    Internal,   // a bug or an unexpected LibTorch failure
};

class Error : public std::runtime_error {
public:
    Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), m_kind(kind) {}
    ErrorKind kind() const noexcept { return m_kind; }

private:
    ErrorKind m_kind;
};

struct ConfigError : Error {
    explicit ConfigError(const std::string& m) : Error(ErrorKind::Config, m) {}
};
struct PackageError : Error {
    explicit PackageError(const std::string& m) : Error(ErrorKind::Package, m) {}
};
struct InputError : Error {
    explicit InputError(const std::string& m) : Error(ErrorKind::Input, m) {}
};
struct TokenizerError : Error {
    explicit TokenizerError(const std::string& m) : Error(ErrorKind::Tokenizer, m) {}
};
struct DeviceError : Error {
    explicit DeviceError(const std::string& m) : Error(ErrorKind::Device, m) {}
};
struct CancelledError : Error {
    CancelledError() : Error(ErrorKind::Cancelled, "cancelled") {}
};

}  // namespace attnlab
