// Loads libattnlab_spm at run time and wraps its C interface in attnlab::Tokenizer.
#include <attnlab/errors.h>
#include <attnlab/tokenizer.h>

#include "tokenizer/spm_api.h"
#include "util/checks.h"
#include "util/text.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>

#include <filesystem>
#include <mutex>
#include <set>
#include <sstream>

namespace attnlab {
namespace fs = std::filesystem;

void TokenizerTrainingOptions::validate() const {
    const char* o = "tokenizer training";
    if (input_files.empty()) throw ConfigError("tokenizer training: no input files");
    if (model_prefix.empty()) throw ConfigError("tokenizer training: empty model prefix");
    util::requireRange("vocab_size", vocab_size, 8, 1 << 20, o);
    util::requireRange("character_coverage", character_coverage, 0.5, 1.0, o);
    if (model_type != "unigram" && model_type != "bpe" && model_type != "char" && model_type != "word")
        throw ConfigError("tokenizer training: model_type '" + model_type + "' is not unigram, bpe, char or word");
}

namespace {

struct Api {
    std::string path;
    decltype(&attnlab_spm_abi_version) abi_version = nullptr;
    decltype(&attnlab_spm_load) load = nullptr;
    decltype(&attnlab_spm_destroy) destroy = nullptr;
    decltype(&attnlab_spm_free) free = nullptr;
    decltype(&attnlab_spm_encode) encode = nullptr;
    decltype(&attnlab_spm_decode) decode = nullptr;
    decltype(&attnlab_spm_vocab_size) vocab_size = nullptr;
    decltype(&attnlab_spm_special_id) special_id = nullptr;
    decltype(&attnlab_spm_is_byte) is_byte = nullptr;
    decltype(&attnlab_spm_is_unknown) is_unknown = nullptr;
    decltype(&attnlab_spm_id_to_piece) id_to_piece = nullptr;
    decltype(&attnlab_spm_piece_to_id) piece_to_id = nullptr;
    decltype(&attnlab_spm_train) train = nullptr;
};

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

const Api& api() {
    static std::once_flag once;
    static Api a;
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
                a = Api{};
                dlclose(h);
            }
        }
        error = "cannot load the SentencePiece module " + std::string(kModuleName) +
                " (set ATTNLAB_SPM_MODULE to its path); tried:" + tried;
    });
    if (!a.load) throw TokenizerError(error);
    return a;
}

std::string takeError(const Api& a, char* e, const std::string& fallback) {
    std::string m = e ? e : fallback;
    if (e) a.free(e);
    return m;
}

std::vector<std::string> unpack(const char* p, size_t len) {
    std::vector<std::string> out;
    size_t at = 0;
    while (at < len) {
        std::string s(p + at);
        at += s.size() + 1;
        out.push_back(std::move(s));
    }
    return out;
}

std::string quoteArg(const std::string& s) {
    // SentencePiece's flag parser splits on spaces; paths with spaces are rejected up front.
    if (s.find_first_of(" \t\n") != std::string::npos)
        throw ConfigError("tokenizer training: paths must not contain spaces: '" + s + "'");
    return s;
}

// SentencePiece trusts the normalization table stored in a model file: a corrupt one makes it read
// out of bounds and crash while normalizing text (found by fuzzing, fuzz/targets.cpp). Before a
// model is used, attnlab-spm-check (next to the module; spm_check.cpp) loads it in a process of
// its own, encodes every character of the Basic Multilingual Plane and the emoji blocks, decodes
// the result and names every piece; if that process dies (or takes over a minute), the file is
// refused. A fresh process (posix_spawn), not a fork: a forked copy of this multi-threaded process
// can deadlock on a lock another thread held.
void probeInOwnProcess(const Api& a, const std::string& path) {
    const std::string helper = (fs::path(a.path).parent_path() / "attnlab-spm-check").string();
    std::error_code ec;
    if (!fs::is_regular_file(helper, ec))
        throw TokenizerError(helper + ": missing (it checks tokenizer models before they are used; reinstall AttnLab)");
    std::vector<char*> argv = {const_cast<char*>(helper.c_str()), const_cast<char*>(path.c_str()), nullptr};
    posix_spawn_file_actions_t quiet;
    posix_spawn_file_actions_init(&quiet);
    posix_spawn_file_actions_addopen(&quiet, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&quiet, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    pid_t pid = 0;
    const int rc = posix_spawn(&pid, helper.c_str(), &quiet, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&quiet);
    if (rc != 0) throw TokenizerError(helper + ": cannot be started: " + std::strerror(rc));
    int status = 0;
    for (int waited_ms = 0;; waited_ms += 10) {
        const pid_t done = ::waitpid(pid, &status, WNOHANG);
        if (done == pid) break;
        if (done < 0 && errno != EINTR) return;
        if (waited_ms > 60000) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, &status, 0);
            throw TokenizerError(path + ": SentencePiece did not finish with this model in a minute: it is corrupt");
        }
        ::usleep(10000);
    }
    if (WIFSIGNALED(status))
        throw TokenizerError(path + ": SentencePiece crashed using this model (signal " +
                             std::to_string(WTERMSIG(status)) + "): its normalization table or vocabulary is corrupt");
    if (WIFEXITED(status) && WEXITSTATUS(status) == 3)
        throw TokenizerError(path + ": its normalization table is corrupt (an index points outside it)");
    // Exit status 1: SentencePiece refused the file; the load below reports its own message.
}

// The check once per file version in a process: the trainer opens the same tokenizer for every
// validation and the app reopens a package on a device change. A file is the same version while
// its path, size and modification time are.
void checkOnce(const Api& a, const std::string& path) {
    static std::mutex mutex;
    static std::set<std::string> checked;
    std::error_code ec;
    const auto size = fs::file_size(path, ec);
    const auto time = fs::last_write_time(path, ec).time_since_epoch().count();
    const std::string key = fs::absolute(path).string() + "|" + std::to_string(size) + "|" + std::to_string(time);
    {
        std::lock_guard<std::mutex> lock(mutex);
        if (checked.count(key)) return;
    }
    probeInOwnProcess(a, path);
    std::lock_guard<std::mutex> lock(mutex);
    checked.insert(key);
}

}  // namespace

struct Tokenizer::Impl {
    const Api* a = nullptr;
    attnlab_spm* sp = nullptr;
    std::string path;
    ~Impl() {
        if (sp) a->destroy(sp);
    }
};

Tokenizer::Tokenizer(const std::string& model_path) : m_impl(std::make_unique<Impl>()) {
    std::error_code ec;
    if (!fs::is_regular_file(model_path, ec)) throw TokenizerError(model_path + ": missing file");
    m_impl->a = &api();
    m_impl->path = model_path;
    checkOnce(*m_impl->a, model_path);
    char* err = nullptr;
    m_impl->sp = m_impl->a->load(model_path.c_str(), &err);
    if (!m_impl->sp)
        throw TokenizerError(model_path +
                             ": not a usable SentencePiece model: " + takeError(*m_impl->a, err, "unknown error"));
    if (vocabSize() <= 0) throw TokenizerError(model_path + ": empty vocabulary");
}

Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;

Encoding Tokenizer::encode(const std::string& text) const {
    const Api& a = *m_impl->a;
    int* ids = nullptr;
    size_t n = 0, plen = 0, slen = 0;
    char *pieces = nullptr, *surfaces = nullptr, *err = nullptr;
    if (a.encode(m_impl->sp, text.data(), text.size(), &ids, &n, &pieces, &plen, &surfaces, &slen, &err) != 0)
        throw TokenizerError("cannot tokenize: " + takeError(a, err, "unknown error"));
    Encoding e;
    e.ids.assign(ids, ids + n);
    e.pieces = unpack(pieces, plen);
    e.surfaces = unpack(surfaces, slen);
    a.free(ids);
    a.free(pieces);
    a.free(surfaces);
    return e;
}

std::string Tokenizer::decode(const std::vector<int>& ids) const {
    const Api& a = *m_impl->a;
    char *text = nullptr, *err = nullptr;
    size_t len = 0;
    if (a.decode(m_impl->sp, ids.data(), ids.size(), &text, &len, &err) != 0)
        throw TokenizerError("cannot detokenize: " + takeError(a, err, "unknown error"));
    std::string s(text, len);
    a.free(text);
    return s;
}

std::string Tokenizer::idToPiece(int id) const {
    char* p = m_impl->a->id_to_piece(m_impl->sp, id);
    std::string s = p ? p : "";
    m_impl->a->free(p);
    return s;
}
int Tokenizer::pieceToId(const std::string& piece) const { return m_impl->a->piece_to_id(m_impl->sp, piece.c_str()); }
int Tokenizer::vocabSize() const { return m_impl->a->vocab_size(m_impl->sp); }
int Tokenizer::padId() const { return m_impl->a->special_id(m_impl->sp, 0); }
int Tokenizer::unkId() const { return m_impl->a->special_id(m_impl->sp, 1); }
int Tokenizer::bosId() const { return m_impl->a->special_id(m_impl->sp, 2); }
int Tokenizer::eosId() const { return m_impl->a->special_id(m_impl->sp, 3); }
bool Tokenizer::isByte(int id) const { return m_impl->a->is_byte(m_impl->sp, id) != 0; }
const std::string& Tokenizer::path() const { return m_impl->path; }

std::vector<std::string> Tokenizer::unknownCharacters(const std::string& text) const {
    return unknownCharacters(encode(text));
}

bool Tokenizer::hasByteFallback() const { return isByte(pieceToId("<0x41>")); }

std::vector<std::string> Tokenizer::unknownCharacters(const Encoding& e) const {
    std::vector<std::string> out;
    std::set<std::string> seen;
    for (size_t i = 0; i < e.ids.size(); ++i) {
        const bool unknown = m_impl->a->is_unknown(m_impl->sp, e.ids[i]) || isByte(e.ids[i]);
        if (!unknown || i >= e.surfaces.size()) continue;
        // A surface may hold several characters (one <unk> can cover a run); split into UTF-8 characters.
        const std::string& s = e.surfaces[i];
        for (size_t at = 0; at < s.size();) {
            const unsigned char c = static_cast<unsigned char>(s[at]);
            const size_t len = util::utf8SequenceLength(c);
            std::string ch = s.substr(at, len);
            at += len;
            if (ch == " ") continue;
            if (seen.insert(ch).second) out.push_back(ch);
        }
    }
    return out;
}

void Tokenizer::train(const TokenizerTrainingOptions& o) {
    o.validate();
    std::ostringstream args;
    args << "--input=";
    for (size_t i = 0; i < o.input_files.size(); ++i) {
        std::error_code ec;
        if (!fs::is_regular_file(o.input_files[i], ec))
            throw TokenizerError("tokenizer training: input file " + o.input_files[i] + " is missing");
        args << (i ? "," : "") << quoteArg(o.input_files[i]);
    }
    args << " --model_prefix=" << quoteArg(o.model_prefix) << " --vocab_size=" << o.vocab_size
         << " --model_type=" << o.model_type << " --character_coverage=" << o.character_coverage
         << " --byte_fallback=" << (o.byte_fallback ? "true" : "false") << " --num_threads=" << o.num_threads
         << " --pad_id=" << o.pad_id << " --unk_id=" << o.unk_id << " --bos_id=" << o.bos_id << " --eos_id=" << o.eos_id
         << " --minloglevel=2 --hard_vocab_limit=false";
    if (o.input_sentence_size > 0)
        args << " --input_sentence_size=" << o.input_sentence_size << " --shuffle_input_sentence=true";
    const Api& a = api();
    char* err = nullptr;
    if (a.train(args.str().c_str(), &err) != 0)
        throw TokenizerError("tokenizer training failed: " + takeError(a, err, "unknown error"));
}

std::string Tokenizer::modulePath() { return api().path; }

}  // namespace attnlab
