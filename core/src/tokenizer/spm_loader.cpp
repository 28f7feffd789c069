// Loads libattnlab_spm at run time (spm_loader.h).
#include "tokenizer/spm_loader.h"

#include <attnlab/errors.h>

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <vector>

namespace attnlab::spm {
namespace fs = std::filesystem;

namespace {

constexpr const char* kModuleName = "libattnlab_spm.so";

std::vector<fs::path> candidatePaths() {
    std::vector<fs::path> c;
    if (const char* env = std::getenv("ATTNLAB_SPM_MODULE"); env && *env) c.emplace_back(env);
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        c.push_back(exe.parent_path() / kModuleName);
        c.push_back(exe.parent_path().parent_path() / "lib/attnlab" / kModuleName);
        c.push_back(exe.parent_path().parent_path() / "lib/x86_64-linux-gnu/attnlab" / kModuleName);
    }
#ifdef ATTNLAB_SPM_MODULE_BUILD_PATH
    c.emplace_back(ATTNLAB_SPM_MODULE_BUILD_PATH);
#endif
#ifdef ATTNLAB_SPM_MODULE_INSTALL_PATH
    c.emplace_back(ATTNLAB_SPM_MODULE_INSTALL_PATH);
#endif
    return c;
}

// The C library's own dlopen. Sanitizer runtimes intercept dlopen and refuse RTLD_DEEPBIND
// (google/sanitizers issue 611), and that flag is what keeps SentencePiece's protobuf away from
// LibTorch's; the module frees everything it allocates (attnlab_spm_free), so no memory crosses
// between the allocators. In a build without sanitizers this is the same function as dlopen.
void* openModule(const char* path, int flags) {
    using DlOpen = void* (*)(const char*, int);
    static const DlOpen real = reinterpret_cast<DlOpen>(dlvsym(RTLD_NEXT, "dlopen", "GLIBC_2.34"));
    return real ? real(path, flags) : dlopen(path, flags);
}

template <typename F>
void bindSymbol(void* handle, const char* name, F& f, const std::string& path) {
    f = reinterpret_cast<F>(dlsym(handle, name));
    if (!f) throw TokenizerError(path + ": symbol " + name + " is missing (module from another AttnLab version?)");
}

}  // namespace

const Module& module() {
    static std::once_flag once;
    static Module a;
    static std::string error;
    std::call_once(once, [] {
        std::string tried;
        for (const auto& p : candidatePaths()) {
            std::error_code ec;
            if (!fs::is_regular_file(p, ec)) {
                tried += "\n  " + p.string() + " (absent)";
                continue;
            }
            // RTLD_DEEPBIND: the module and libsentencepiece resolve their own protobuf symbols
            // first; plain RTLD_LOCAL still aborts at start-up (measured).
            void* h = openModule(p.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
            if (!h) {
                tried += "\n  " + p.string() + " (" + dlerror() + ")";
                continue;
            }
            try {
                a.path = p.string();
                bindSymbol(h, "attnlab_spm_abi_version", a.abi_version, a.path);
                bindSymbol(h, "attnlab_spm_load", a.load, a.path);
                bindSymbol(h, "attnlab_spm_destroy", a.destroy, a.path);
                bindSymbol(h, "attnlab_spm_free", a.free, a.path);
                bindSymbol(h, "attnlab_spm_encode", a.encode, a.path);
                bindSymbol(h, "attnlab_spm_decode", a.decode, a.path);
                bindSymbol(h, "attnlab_spm_decode_pieces", a.decode_pieces, a.path);
                bindSymbol(h, "attnlab_spm_vocab_size", a.vocab_size, a.path);
                bindSymbol(h, "attnlab_spm_special_id", a.special_id, a.path);
                bindSymbol(h, "attnlab_spm_is_byte", a.is_byte, a.path);
                bindSymbol(h, "attnlab_spm_is_unknown", a.is_unknown, a.path);
                bindSymbol(h, "attnlab_spm_id_to_piece", a.id_to_piece, a.path);
                bindSymbol(h, "attnlab_spm_piece_to_id", a.piece_to_id, a.path);
                bindSymbol(h, "attnlab_spm_train", a.train, a.path);
                if (a.abi_version() != ATTNLAB_SPM_ABI_VERSION)
                    throw TokenizerError(a.path + ": ABI version " + std::to_string(a.abi_version()) + ", expected " +
                                         std::to_string(ATTNLAB_SPM_ABI_VERSION));
                return;  // the handle stays open for the life of the process
            } catch (const TokenizerError& e) {
                tried += "\n  " + std::string(e.what());
                a = Module{};
                dlclose(h);
            }
        }
        error = "cannot load the SentencePiece module " + std::string(kModuleName) +
                " (set ATTNLAB_SPM_MODULE to its path); tried:" + tried;
    });
    if (!a.load) throw TokenizerError(error);
    return a;
}

std::string takeError(const Module& m, char* e, const std::string& fallback) {
    std::string s = e ? e : fallback;
    if (e) m.free(e);
    return s;
}

}  // namespace attnlab::spm
