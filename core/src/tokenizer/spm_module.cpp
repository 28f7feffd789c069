// libattnlab_spm: the SentencePiece calls behind a C interface (see spm_api.h for why).
#include "tokenizer/spm_api.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

struct attnlab_spm {
    sentencepiece::SentencePieceProcessor processor;
};

namespace sentencepiece::logging {
// Exported by libsentencepiece (0 INFO, 1 WARNING, 2 ERROR); its header, common.h, is not installed.
void SetMinLogLevel(int v);
}  // namespace sentencepiece::logging

namespace {
char* dupString(const std::string& s) {
    char* p = static_cast<char*>(std::malloc(s.size() + 1));
    if (p) std::memcpy(p, s.c_str(), s.size() + 1);
    return p;
}
void setError(char** error, const std::string& m) {
    if (error) *error = dupString(m);
}
char* packStrings(const std::vector<std::string>& v, size_t* len) {
    size_t total = 0;
    for (const auto& s : v) total += s.size() + 1;
    char* out = static_cast<char*>(std::malloc(total ? total : 1));
    if (!out) return nullptr;
    size_t at = 0;
    for (const auto& s : v) {
        std::memcpy(out + at, s.c_str(), s.size() + 1);
        at += s.size() + 1;
    }
    *len = total;
    return out;
}

// SentencePiece's Decode of ids or pieces into a malloc'd text; 0 = success.
template <typename Items>
int decodeInto(const attnlab_spm* sp, const Items& items, char** text, size_t* text_len, char** error) {
    std::string out;
    const auto status = sp->processor.Decode(items, &out);
    if (!status.ok()) {
        setError(error, status.ToString());
        return 1;
    }
    *text = dupString(out);
    *text_len = out.size();
    return 0;
}

// The lines of files, one after another, as SentencePiece's trainer reads them (std::getline, as
// its own file reader does; a "\r" stays, as there). Checked once with Debian's
// python3-sentencepiece 0.1.97, the same library: 4,000 Multi30k lines, 1,500 pieces, sampling on,
// gave the same pieces and scores from an iterator as from --input. A file that cannot be opened
// or read ends the iteration with a status naming it and the system's reason.
class FileLines : public sentencepiece::SentenceIterator {
public:
    explicit FileLines(std::vector<std::string> paths) : m_paths(std::move(paths)) { advance(); }
    bool done() const override { return m_done; }
    void Next() override { advance(); }
    const std::string& value() const override { return m_line; }
    sentencepiece::util::Status status() const override { return m_status; }

private:
    void advance() {
        while (!m_done) {
            if (m_in.is_open() && std::getline(m_in, m_line)) return;
            if (m_in.is_open() && m_in.bad())
                return fail(sentencepiece::util::StatusCode::kInternal,
                            m_paths[m_next - 1] + ": cannot be read: " + std::strerror(errno));
            m_in.close();
            m_in.clear();
            if (m_next == m_paths.size()) {
                m_done = true;
                return;
            }
            m_in.open(m_paths[m_next++], std::ios::binary);
            if (!m_in)
                return fail(sentencepiece::util::StatusCode::kPermissionDenied,
                            m_paths[m_next - 1] + ": cannot be opened: " + std::strerror(errno));
        }
    }
    void fail(sentencepiece::util::StatusCode code, const std::string& message) {
        m_status = sentencepiece::util::Status(code, message);
        m_done = true;
    }
    std::vector<std::string> m_paths;
    size_t m_next = 0;
    std::ifstream m_in;
    std::string m_line;
    bool m_done = false;
    sentencepiece::util::Status m_status;
};

// Runs f; an exception becomes *error and `failed`: nothing may cross the C boundary.
template <typename R, typename F>
R guarded(char** error, R failed, F&& f) {
    try {
        return f();
    } catch (const std::exception& e) {
        setError(error, e.what());
    } catch (...) {
        setError(error, "unknown error");
    }
    return failed;
}
}  // namespace

extern "C" {

int attnlab_spm_abi_version(void) { return ATTNLAB_SPM_ABI_VERSION; }

attnlab_spm* attnlab_spm_load(const char* path, char** error) {
    return guarded(error, static_cast<attnlab_spm*>(nullptr), [&]() -> attnlab_spm* {
        auto sp = std::make_unique<attnlab_spm>();
        const auto status = sp->processor.Load(path);
        if (!status.ok()) {
            setError(error, status.ToString());
            return nullptr;
        }
        return sp.release();
    });
}

void attnlab_spm_destroy(attnlab_spm* sp) { delete sp; }
void attnlab_spm_free(void* p) { std::free(p); }

int attnlab_spm_encode(const attnlab_spm* sp, const char* text, size_t text_len, int** ids, size_t* n, char** pieces,
                       size_t* pieces_len, char** surfaces, size_t* surfaces_len, char** error) {
    return guarded(error, 1, [&]() -> int {
        const auto spt = sp->processor.EncodeAsImmutableProto(std::string(text, text_len));
        const auto all = spt.pieces();
        std::vector<std::string> p, s;
        *n = all.size();
        *ids = static_cast<int*>(std::malloc(sizeof(int) * (all.size() ? all.size() : 1)));
        for (size_t i = 0; i < all.size(); ++i) {
            (*ids)[i] = static_cast<int>(all[i].id());
            p.push_back(all[i].piece());
            s.push_back(all[i].surface());
        }
        *pieces = packStrings(p, pieces_len);
        *surfaces = packStrings(s, surfaces_len);
        return 0;
    });
}

int attnlab_spm_decode(const attnlab_spm* sp, const int* ids, size_t n, char** text, size_t* text_len, char** error) {
    return guarded(error, 1, [&]() -> int {
        std::vector<int> v(ids, ids + n);
        const int size = sp->processor.GetPieceSize();
        for (int id : v)
            if (id < 0 || id >= size) {
                setError(error,
                         "id " + std::to_string(id) + " is outside the vocabulary (size " + std::to_string(size) + ")");
                return 1;
            }
        return decodeInto(sp, v, text, text_len, error);
    });
}

int attnlab_spm_decode_pieces(const attnlab_spm* sp, const char* pieces, size_t pieces_len, size_t n, char** text,
                              size_t* text_len, char** error) {
    return guarded(error, 1, [&]() -> int {
        std::vector<std::string> v;
        v.reserve(n);
        size_t at = 0;
        for (size_t i = 0; i < n; ++i) {
            const void* end = at < pieces_len ? std::memchr(pieces + at, '\0', pieces_len - at) : nullptr;
            if (!end) {
                setError(error, "pieces: " + std::to_string(n) + " expected, the buffer holds fewer");
                return 1;
            }
            const size_t stop = size_t(static_cast<const char*>(end) - pieces);
            v.emplace_back(pieces + at, stop - at);
            at = stop + 1;
        }
        return decodeInto(sp, v, text, text_len, error);
    });
}

int attnlab_spm_vocab_size(const attnlab_spm* sp) { return sp->processor.GetPieceSize(); }

int attnlab_spm_special_id(const attnlab_spm* sp, int which) {
    switch (which) {
    case 0: return sp->processor.pad_id();
    case 1: return sp->processor.unk_id();
    case 2: return sp->processor.bos_id();
    case 3: return sp->processor.eos_id();
    default: return -1;
    }
}

int attnlab_spm_is_byte(const attnlab_spm* sp, int id) {
    return id >= 0 && id < sp->processor.GetPieceSize() && sp->processor.IsByte(id);
}
int attnlab_spm_is_unknown(const attnlab_spm* sp, int id) {
    return id >= 0 && id < sp->processor.GetPieceSize() && sp->processor.IsUnknown(id);
}

char* attnlab_spm_id_to_piece(const attnlab_spm* sp, int id) {
    if (id < 0 || id >= sp->processor.GetPieceSize()) return dupString("");
    return dupString(sp->processor.IdToPiece(id));
}

int attnlab_spm_piece_to_id(const attnlab_spm* sp, const char* piece) { return sp->processor.PieceToId(piece); }

int attnlab_spm_train(const char* args, const char* const* inputs, size_t n_inputs, char** model, size_t* model_len,
                      char** error) {
    return guarded(error, 1, [&]() -> int {
        // Errors only. SentencePiece writes its INFO and WARNING lines (dozens a run, beside
        // AttnLab's own progress) straight to std::cerr, and in a process built by GCC 13 against
        // pip's LibTorch (scripts/gpu_check.sh, docs/gpu.md) the std::cerr this module sees
        // through RTLD_DEEPBIND was never constructed: its first line, "Running command", crashed
        // every tokenizer training there. Failures still come back in the status.
        sentencepiece::logging::SetMinLogLevel(2);
        FileLines lines(std::vector<std::string>(inputs, inputs + n_inputs));
        std::string bytes;
        auto status = sentencepiece::SentencePieceTrainer::Train(args, &lines, &bytes);
        if (status.ok()) status = lines.status();
        if (!status.ok()) {
            setError(error, status.ToString());
            return 1;
        }
        *model = static_cast<char*>(std::malloc(bytes.size() ? bytes.size() : 1));
        if (!*model) {
            setError(error, "out of memory for the trained model");
            return 1;
        }
        std::memcpy(*model, bytes.data(), bytes.size());
        *model_len = bytes.size();
        return 0;
    });
}

}  // extern "C"
