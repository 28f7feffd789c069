#pragma once
// LibTorch reports failures as c10::Error; the engine's callers see InternalError instead.
#include <attnlab/errors.h>

#include <c10/util/Exception.h>

#include <string>

namespace attnlab::util {

template <typename F>
auto translatingTorchErrors(const char* what, F&& f) -> decltype(f()) {
    try {
        return f();
    } catch (const c10::Error& e) {
        throw InternalError(std::string(what) + ": LibTorch failed: " + e.what_without_backtrace());
    }
}

}  // namespace attnlab::util
