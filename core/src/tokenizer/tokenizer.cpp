// Loads libattnlab_spm at run time and wraps its C interface in attnlab::Tokenizer.
#include <attnlab/errors.h>
#include <attnlab/tokenizer.h>

#include "tokenizer/normalizer_check.h"
#include "tokenizer/spm_loader.h"
#include "util/atomic_file.h"
#include "util/checks.h"
#include "util/small_file.h"
#include "util/text.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>

#include <algorithm>
#include <deque>
#include <filesystem>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>

namespace attnlab {
namespace fs = std::filesystem;

void TokenizerTrainingOptions::validate() const {
    const char* o = "tokenizer training";
    if (input_files.empty()) throw ConfigError("tokenizer training: no input files");
    if (model_path.empty()) throw ConfigError("tokenizer training: no model path");
    util::requireRange("vocab_size", vocab_size, 8, 1 << 20, o);
    util::requireRange("character_coverage", character_coverage, 0.5, 1.0, o);
    if (model_type != "unigram" && model_type != "bpe" && model_type != "char" && model_type != "word")
        throw ConfigError("tokenizer training: model_type '" + model_type + "' is not unigram, bpe, char or word");
}

namespace {

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

// SentencePiece trusts the normalization table stored in a model file: a corrupt one makes it read
// out of bounds and crash while normalizing text (found by fuzzing, fuzz/targets.cpp). The tables
// are checked in this process first (readCheckedModel, below); as a second line, before a model is
// used, attnlab-spm-check (next to the module; spm_check.cpp) loads it in a process of
// its own, encodes every character of the Basic Multilingual Plane and the emoji blocks, decodes
// the result and names every piece; if that process dies (or takes over a minute), the file is
// refused. A fresh process (posix_spawn), not a fork: a forked copy of this multi-threaded process
// can deadlock on a lock another thread held.
void probeInOwnProcess(const spm::Module& a, const std::string& path) {
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

// The model file's bytes, its normalization tables checked in this process before SentencePiece
// sees them (normalizer_check.h); the probe in a process of its own (above) is the second line.
std::string readCheckedModel(const std::string& path) {
    std::string bytes;
    try {
        bytes = util::readSmallFile(path, size_t(1) << 30);
    } catch (const Error& e) {
        throw TokenizerError(e.what());
    }
    if (const std::string problem = spm::normalizationTableProblem(bytes); !problem.empty())
        throw TokenizerError(path + ": " + problem);
    return bytes;
}

// The probe once per model in a process: the trainer opens the same tokenizer for every
// validation and the app reopens a package on a device change. The last kRemembered models that
// passed are remembered by their bytes (compared whole: a file rewritten within the file
// system's time resolution is not taken for the one before).
void probeOnce(const spm::Module& a, const std::string& path, const std::string& bytes) {
    constexpr size_t kRemembered = 8;
    static std::mutex mutex;
    static std::deque<std::string> passed;
    {
        std::lock_guard<std::mutex> lock(mutex);
        if (std::find(passed.begin(), passed.end(), bytes) != passed.end()) return;
    }
    probeInOwnProcess(a, path);
    std::lock_guard<std::mutex> lock(mutex);
    passed.push_back(bytes);
    if (passed.size() > kRemembered) passed.pop_front();
}

}  // namespace

struct Tokenizer::Impl {
    const spm::Module* a = nullptr;
    attnlab_spm* sp = nullptr;
    std::string path;
    ~Impl() {
        if (sp) a->destroy(sp);
    }
};

Tokenizer::Tokenizer(const std::string& model_path) : m_impl(std::make_unique<Impl>()) {
    if (auto problem = util::fileProblem(model_path)) throw TokenizerError(*problem);
    m_impl->a = &spm::module();
    m_impl->path = model_path;
    probeOnce(*m_impl->a, model_path, readCheckedModel(model_path));
    char* err = nullptr;
    m_impl->sp = m_impl->a->load(model_path.c_str(), &err);
    if (!m_impl->sp)
        throw TokenizerError(model_path +
                             ": not a usable SentencePiece model: " + spm::takeError(*m_impl->a, err, "unknown error"));
    if (vocabSize() <= 0) throw TokenizerError(model_path + ": empty vocabulary");
}

Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;

Encoding Tokenizer::encode(const std::string& text) const {
    const spm::Module& a = *m_impl->a;
    int* ids = nullptr;
    size_t n = 0, plen = 0, slen = 0;
    char *pieces = nullptr, *surfaces = nullptr, *err = nullptr;
    if (a.encode(m_impl->sp, text.data(), text.size(), &ids, &n, &pieces, &plen, &surfaces, &slen, &err) != 0)
        throw TokenizerError("cannot tokenize: " + spm::takeError(a, err, "unknown error"));
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
    const spm::Module& a = *m_impl->a;
    char *text = nullptr, *err = nullptr;
    size_t len = 0;
    if (a.decode(m_impl->sp, ids.data(), ids.size(), &text, &len, &err) != 0)
        throw TokenizerError("cannot detokenize: " + spm::takeError(a, err, "unknown error"));
    std::string s(text, len);
    a.free(text);
    return s;
}

std::string Tokenizer::decodePieces(const std::vector<std::string>& pieces) const {
    const spm::Module& a = *m_impl->a;
    std::string packed;
    for (const auto& p : pieces) packed.append(p.c_str(), std::strlen(p.c_str())).push_back('\0');
    char *text = nullptr, *err = nullptr;
    size_t len = 0;
    if (a.decode_pieces(m_impl->sp, packed.data(), packed.size(), pieces.size(), &text, &len, &err) != 0)
        throw TokenizerError("cannot detokenize: " + spm::takeError(a, err, "unknown error"));
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
    std::vector<const char*> inputs;
    for (const auto& f : o.input_files) {
        if (auto problem = util::fileProblem(f)) throw TokenizerError("tokenizer training: input file " + *problem);
        inputs.push_back(f.c_str());
    }
    // Checked before the minutes of training, not after: the model's folder must exist.
    const fs::path folder = fs::absolute(o.model_path).parent_path();
    std::error_code ec;
    if (!fs::is_directory(folder, ec))
        throw TokenizerError("tokenizer training: the model's folder " + folder.string() + " does not exist");
    std::ostringstream args;
    args << "--vocab_size=" << o.vocab_size << " --model_type=" << o.model_type
         << " --character_coverage=" << o.character_coverage
         << " --byte_fallback=" << (o.byte_fallback ? "true" : "false") << " --num_threads=" << o.num_threads
         << " --pad_id=" << o.pad_id << " --unk_id=" << o.unk_id << " --bos_id=" << o.bos_id << " --eos_id=" << o.eos_id
         << " --minloglevel=2 --hard_vocab_limit=false";
    if (o.input_sentence_size > 0)
        args << " --input_sentence_size=" << o.input_sentence_size << " --shuffle_input_sentence=true";
    const spm::Module& a = spm::module();
    char* err = nullptr;
    char* model = nullptr;
    size_t model_len = 0;
    if (a.train(args.str().c_str(), inputs.data(), inputs.size(), &model, &model_len, &err) != 0)
        throw TokenizerError("tokenizer training failed: " + spm::takeError(a, err, "unknown error"));
    const std::unique_ptr<char, decltype(a.free)> owned(model, a.free);
    util::saveToFile(o.model_path, std::string(owned.get(), model_len));
}

std::string Tokenizer::modulePath() { return spm::module().path; }

}  // namespace attnlab
