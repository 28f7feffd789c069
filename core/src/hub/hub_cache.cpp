#include "hub/hub_cache.h"

#include <attnlab/errors.h>
#include <attnlab/package.h>

#include "formats/ctranslate2/ct2_model.h"
#include "formats/huggingface/hf_config.h"
#include "tokenizer/text_codec.h"
#include "util/small_file.h"
#include "util/text.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

namespace fs = std::filesystem;

namespace attnlab {
namespace {

bool isAsciiAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }

bool startsWith(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

bool endsWith(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool allOf(const std::string& s, const char* extra) {
    // (strchr finds the terminator too: a NUL would pass as one of `extra`; found by fuzz_hub_answers)
    return std::all_of(s.begin(), s.end(),
                       [&](char c) { return isAsciiAlnum(c) || (c != '\0' && std::strchr(extra, c)); });
}

// ORG or NAME: the characters and shapes the hub accepts (huggingface_hub's validate_repo_id).
bool validRepoPart(const std::string& p) {
    if (p.empty() || p.size() > 96 || !allOf(p, "._-")) return false;
    if (p.front() == '-' || p.front() == '.' || p.back() == '-' || p.back() == '.') return false;
    return p.find("..") == std::string::npos && p.find("--") == std::string::npos;
}

// A revision names a file under refs/: no way out of it, no hidden or lock file.
bool validRevision(const std::string& r) {
    if (r.empty() || r.size() > 255 || !allOf(r, "._/+-") || r.find("..") != std::string::npos) return false;
    if (endsWith(r, ".lock")) return false;
    std::istringstream parts(r + "/");  // the trailing '/' makes a trailing empty part visible
    std::string part;
    size_t count = 0;
    while (std::getline(parts, part, '/')) {
        if (part.empty() || part.front() == '.') return false;
        count += part.size() + 1;
    }
    return count == r.size() + 1;
}

std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v ? v : "";
}

std::string homeDir() {
    std::string home = env("HOME");
    if (!home.empty()) return home;
    const passwd* pw = ::getpwuid(::getuid());
    return pw && pw->pw_dir ? pw->pw_dir : ".";
}

// huggingface_hub expands "~" in the paths it reads from the environment.
std::string expandUser(const std::string& path) {
    if (path == "~" || startsWith(path, "~/")) return homeDir() + path.substr(1);
    return path;
}

std::string trimmed(const std::string& s) {
    const char* space = " \t\r\n\f\v";
    const size_t first = s.find_first_not_of(space);
    return first == std::string::npos ? "" : s.substr(first, s.find_last_not_of(space) - first + 1);
}

// HF_HOME, else $XDG_CACHE_HOME/huggingface, else ~/.cache/huggingface (huggingface_hub's constants.py).
std::string hfHome() {
    if (!env("HF_HOME").empty()) return expandUser(env("HF_HOME"));
    const std::string xdg = env("XDG_CACHE_HOME");
    return (xdg.empty() ? homeDir() + "/.cache" : expandUser(xdg)) + "/huggingface";
}

// A token file: read only when it is a regular file (a FIFO planted in a shared HF_HOME must not hang the
// program at start), at most 4 kB.
std::string readTokenFile(const std::string& path) {
    return trimmed(util::readRegularFileHead(path, 4096).value_or(""));
}

// A setting of AttnLab's from the environment: a whole number (at most 18 digits), else `fallback` when unset.
int64_t wholeNumberFrom(const char* variable, int64_t fallback) {
    const std::string text = trimmed(env(variable));
    if (text.empty()) return fallback;
    if (text.size() > 18 || !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
        throw ConfigError(std::string(variable) + "=" + util::forMessage(text) + " is not a whole number");
    return std::stoll(text);
}

std::string upper(std::string s) {
    for (char& c : s) c = char(std::toupper(static_cast<unsigned char>(c)));
    return s;
}

}  // namespace

std::optional<HubModelName> parseHubModelName(const std::string& text) {
    HubModelName name;
    const size_t at = text.find('@');
    name.repo = text.substr(0, at);
    if (at != std::string::npos) name.revision = text.substr(at + 1);
    const size_t slash = name.repo.find('/');
    if (slash == std::string::npos || name.repo.find('/', slash + 1) != std::string::npos) return std::nullopt;
    const std::string org = name.repo.substr(0, slash), model = name.repo.substr(slash + 1);
    if (!validRepoPart(org) || !validRepoPart(model) || endsWith(model, ".git")) return std::nullopt;
    if (!validRevision(name.revision)) return std::nullopt;
    return name;
}

std::string hubModelNameString(const HubModelName& name) {
    return name.revision == "main" ? name.repo : name.repo + "@" + name.revision;
}

HubOptions hubOptionsFromEnvironment() {
    HubOptions o;
    std::string endpoint = env("HF_ENDPOINT");
    while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();
    if (!endpoint.empty()) o.endpoint = endpoint;
    if (!env("HF_HUB_CACHE").empty()) {
        o.cache_dir = expandUser(env("HF_HUB_CACHE"));
    } else if (!env("HUGGINGFACE_HUB_CACHE").empty()) {
        o.cache_dir = expandUser(env("HUGGINGFACE_HUB_CACHE"));
    } else {
        o.cache_dir = hfHome() + "/hub";
    }
    o.token = trimmed(env("HF_TOKEN"));
    if (o.token.empty()) {
        const std::string path = env("HF_TOKEN_PATH");
        o.token = readTokenFile(path.empty() ? hfHome() + "/token" : expandUser(path));
    }
    const std::string offline = upper(trimmed(env("HF_HUB_OFFLINE")));
    o.offline = offline == "1" || offline == "ON" || offline == "YES" || offline == "TRUE";
    o.min_bytes_per_second = long(wholeNumberFrom("ATTNLAB_HUB_MIN_RATE", o.min_bytes_per_second));
    o.slow_window_s = long(wholeNumberFrom("ATTNLAB_HUB_SLOW_WINDOW", o.slow_window_s));
    o.max_files = int(std::min<int64_t>(wholeNumberFrom("ATTNLAB_HUB_MAX_FILES", o.max_files), 1 << 20));
    o.max_total_bytes = wholeNumberFrom("ATTNLAB_HUB_MAX_BYTES", o.max_total_bytes);
    return o;
}

std::optional<std::string> cachedHubSnapshot(const HubModelName& name, const HubOptions& options) {
    // never outside the cache, never a cache at the root of the file system
    if (!parseHubModelName(name.repo + "@" + name.revision) || options.cache_dir.empty()) return std::nullopt;
    const hub::RepoCache cache(options.cache_dir, name.repo);
    const std::optional<std::string> commit = cache.commitFor(name.revision);
    if (!commit) return std::nullopt;
    const std::string dir = cache.snapshotDir(*commit);
    if (!hub::missingFromSnapshot(dir).empty()) return std::nullopt;
    return dir;
}

namespace hub {
namespace {

bool isLowerHex(const std::string& s, size_t length) {
    return s.size() == length &&
           std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// A name that is safe as one path component in the snapshot: no folder, no hidden file.
bool isPlainFileName(const std::string& f) { return !f.empty() && f.front() != '.' && allOf(f, "._-"); }

// The files a tokenizer reads (not only its settings), by the exact names the loaders open: a model
// without one cannot turn text into ids. No pattern: a repository cannot make AttnLab fetch a file
// of a name it does not read (a listing of 100,000 "fNNNNNN.model" gets none of them).
const std::set<std::string>& tokenizerFiles() {
    static const std::set<std::string> names = {
        marian_files::kSourceSpm,           marian_files::kTargetSpm, marian_files::kVocab,  // MarianMT
        package::kHfSentencePiece,           // M2M100, NLLB-200, mBART-50
        package::ct2_files::kSentencePiece,  // CTranslate2 / Argos
        package_files::kTokenizer,           // an AttnLab package
        "shared_vocabulary.json",           "shared_vocabulary.txt",  "source_vocabulary.json", "source_vocabulary.txt",
        "target_vocabulary.json",           "target_vocabulary.txt"};  // CTranslate2's
    return names;
}

bool isCt2Vocabulary(const std::string& f) { return f.find("_vocabulary.") != std::string::npos; }

// Every other file a loader reads beside the weights: settings, and an AttnLab package's own.
bool isSettingsFile(const std::string& f) {
    static const std::set<std::string> names = {"config.json", "generation_config.json", "tokenizer_config.json",
                                                "special_tokens_map.json", "added_tokens.json", "metadata.json",
                                                // an AttnLab package's own (attnlab/package.h)
                                                package_files::kExamples, package_files::kConfidence,
                                                package_files::kAlignments};
    return names.count(f) > 0;
}

}  // namespace

const std::vector<std::string>& weightFiles() {
    static const std::vector<std::string> order = [] {
        std::vector<std::string> o(package::kHfWeightFiles.begin(), package::kHfWeightFiles.end());
        o.push_back(package::ct2_files::kModel);
        return o;
    }();
    return order;
}

namespace {
const char* kWeightsPhrase = "the weights (model.safetensors, pytorch_model.bin, their sharded forms or model.bin)";

}  // namespace

bool isCommitHash(const std::string& s) { return isLowerHex(s, 40); }
bool isSha256Hex(const std::string& s) { return isLowerHex(s, 64); }

std::optional<std::string> normalizeEtag(const std::string& header_value) {
    std::string etag = trimmed(header_value);
    if (startsWith(etag, "W/")) etag = etag.substr(2);
    if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') etag = etag.substr(1, etag.size() - 2);
    if (etag.empty() || etag.size() > 128 || !allOf(etag, "_-")) return std::nullopt;
    return etag;
}

std::string repoFolderName(const std::string& repo) {
    std::string name = "models--" + repo;
    const size_t slash = name.find('/');
    if (slash != std::string::npos) name.replace(slash, 1, "--");
    return name;
}

std::vector<std::string> selectModelFiles(const std::vector<std::string>& siblings) {
    const std::set<std::string> present(siblings.begin(), siblings.end());
    std::set<std::string> chosen;
    for (const std::string& f : present) {
        if (tokenizerFiles().count(f) || isSettingsFile(f)) chosen.insert(f);
    }
    for (const std::string& weights : weightFiles()) {
        if (present.count(weights)) {
            chosen.insert(weights);
            break;
        }
    }
    return {chosen.begin(), chosen.end()};
}

bool isWeightsIndex(const std::string& file) { return endsWith(file, ".index.json"); }

std::vector<std::string> shardsOfIndex(const std::string& index_json, const std::string& index_name) {
    const nlohmann::json index = nlohmann::json::parse(index_json, nullptr, false);
    if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object()) {
        throw PackageError(index_name + ": not a weights index (no \"weight_map\" object)");
    }
    std::set<std::string> shards;
    for (const auto& [tensor, file] : index["weight_map"].items()) {
        if (!file.is_string() || !isPlainFileName(file.get<std::string>())) {
            throw PackageError(index_name + ": the shard of " + tensor + " is not a plain file name");
        }
        shards.insert(file.get<std::string>());
    }
    return {shards.begin(), shards.end()};
}

namespace {
// The files each family's tokenizer opens (what its loader reads), by config.json: a MarianMT folder
// (marian_files), an M2M100 / NLLB-200 / mBART one (the SentencePiece model), a CTranslate2 model (its
// vocabularies), an AttnLab package (by its "tokenizer"); else any tokenizer file.
std::vector<std::string> missingTokenizerFiles(const std::string& dir, const std::vector<std::string>& present) {
    const auto has = [&](const std::string& f) { return std::count(present.begin(), present.end(), f) > 0; };
    nlohmann::json cfg;
    try {  // (read as the loaders read it, at most 4 MB; an unreadable one: any tokenizer file will do)
        cfg = package::readJson(dir + "/config.json");
    } catch (const Error&) {
    }
    const std::string type = cfg.is_object() && cfg.contains("model_type") && cfg["model_type"].is_string()
                                 ? cfg["model_type"].get<std::string>()
                                 : "";
    const std::string tokenizer = cfg.is_object() && cfg.contains("tokenizer") && cfg["tokenizer"].is_string()
                                      ? cfg["tokenizer"].get<std::string>()
                                      : "";
    const std::vector<std::string> marian = {marian_files::kSourceSpm, marian_files::kTargetSpm, marian_files::kVocab};
    std::vector<std::string> need;
    if (type == "marian" || tokenizer == "marian")
        need = marian;
    else if (type == "m2m_100" || type == "mbart")
        need = {package::kHfSentencePiece};
    else if (tokenizer == "sentencepiece")
        need = {package_files::kTokenizer};
    else if (has(package::ct2_files::kModel) || tokenizer == "ctranslate2")
        return std::any_of(present.begin(), present.end(), isCt2Vocabulary)
                   ? std::vector<std::string>{}
                   : std::vector<std::string>{"the vocabulary (shared_vocabulary.* or source_/target_vocabulary.*)"};
    else if (std::none_of(present.begin(), present.end(),
                          [](const std::string& f) { return tokenizerFiles().count(f); }))
        return {"the tokenizer's files (source.spm, sentencepiece.bpe.model, vocab.json, shared_vocabulary.json, ...)"};
    std::vector<std::string> missing;
    for (const std::string& f : need)
        if (!has(f)) missing.push_back(f);
    return missing;
}
}  // namespace

namespace {
// The shards a weights index names that the snapshot lacks (nothing for a single file).
std::vector<std::string> missingShards(const std::string& dir, const std::string& weights,
                                       const std::vector<std::string>& present) {
    if (!isWeightsIndex(weights)) return {};
    std::vector<std::string> lacks;
    try {
        const std::string text = util::readSmallFile(dir + "/" + weights, package::kMaxWeightsIndexBytes);
        for (const std::string& shard : shardsOfIndex(text, weights))
            if (!std::count(present.begin(), present.end(), shard)) lacks.push_back(shard);
    } catch (const PackageError& e) {
        lacks.push_back(std::string("a readable ") + weights + " (" + e.what() + ")");
    }
    return lacks;
}
}  // namespace

std::vector<std::string> missingFromSnapshot(const std::string& snapshot_dir) {
    std::vector<std::string> present;
    std::error_code ec;
    for (fs::directory_iterator it(snapshot_dir, ec), end; !ec && it != end; it.increment(ec)) {
        if (fs::is_regular_file(it->path(), ec)) present.push_back(it->path().filename().string());
    }
    const std::vector<std::string> chosen = selectModelFiles(present);
    std::vector<std::string> missing;
    if (!std::count(chosen.begin(), chosen.end(), "config.json")) missing.push_back("config.json");
    // (a cache filled by a program that fetched only the config and the weights, or some of the tokenizer)
    for (std::string& f : missingTokenizerFiles(snapshot_dir, chosen)) missing.push_back(std::move(f));
    // As the loader (hfWeightFiles): the first format present whose shards are all there.
    std::vector<std::string> first_lacks;
    bool weights = false, any = false;
    for (const std::string& w : weightFiles()) {
        if (weights || !std::count(present.begin(), present.end(), w)) continue;
        any = true;
        const std::vector<std::string> lacks = missingShards(snapshot_dir, w, present);
        if (lacks.empty())
            weights = true;
        else if (first_lacks.empty())
            first_lacks = lacks;
    }
    if (!any) missing.push_back(kWeightsPhrase);
    if (any && !weights) missing.insert(missing.end(), first_lacks.begin(), first_lacks.end());
    return missing;
}

RepoCache::RepoCache(const std::string& cache_dir, const std::string& repo)
    : m_cache(cache_dir), m_name(repoFolderName(repo)), m_folder(cache_dir + "/" + m_name) {}

CacheFolder RepoCache::open(const std::string& relative) const {
    return CacheFolder::openRoot(m_cache, true).sub(relative == "." ? m_name : m_name + "/" + relative);
}

CacheFolder RepoCache::openLocks() const { return CacheFolder::openRoot(m_cache, true).sub(".locks/" + m_name); }

std::optional<std::string> RepoCache::commitFor(const std::string& revision) const {
    if (isCommitHash(revision)) return revision;
    // a regular file only, not through a link, never blocking (a FIFO planted as a ref must not hang the program)
    const std::string text = trimmed(util::readRegularFileHead(refPath(revision), 64, false).value_or(""));
    if (!isCommitHash(text)) return std::nullopt;  // (huggingface_hub writes no newline; a hand-edited file may)
    return text;
}

namespace {
// "a/b/c" -> {"a/b", "c"}; {"", "c"} for "c".
std::pair<std::string, std::string> splitLast(const std::string& path) {
    const size_t slash = path.rfind('/');
    if (slash == std::string::npos) return {"", path};
    return {path.substr(0, slash), path.substr(slash + 1)};
}

std::string under(const std::string& folder, const std::string& relative) {
    return relative.empty() ? folder : folder + "/" + relative;
}

// Copies the blob into a new file `name` of `dir` (for a file system without links), moved in only where
// nothing is.
void copyBlobInto(const CacheFolder& blobs, const std::string& etag, const CacheFolder& dir, const std::string& name,
                  int link_error) {
    const int in = ::openat(blobs.fd(), etag.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (in < 0) throw PackageError(systemError("read", blobs.pathOf(etag), errno));
    struct stat st {};
    if (::fstat(in, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(in);
        throw PackageError(blobs.pathOf(etag) + " is not a regular file: it cannot be copied into the snapshot");
    }
    const std::string temporary = "." + name + ".attnlab-" + unguessableSuffix();
    const int out = dir.createExclusive(temporary);
    int error = out < 0 ? errno : 0;
    std::vector<char> buffer(1 << 20);
    while (!error) {
        const ssize_t n = ::read(in, buffer.data(), buffer.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            error = n < 0 ? errno : 0;
            break;
        }
        error = writeAll(out, buffer.data(), size_t(n));
    }
    ::close(in);
    if (out >= 0 && !error && ::fsync(out) != 0) error = errno;
    if (out >= 0 && ::close(out) != 0 && !error) error = errno;
    if (!error && !dir.rename(temporary, name, /*replace=*/false)) error = errno;
    if (!error) return;
    if (out >= 0) ::unlinkat(dir.fd(), temporary.c_str(), 0);
    if (error == EEXIST) throw PackageError(dir.pathOf(name) + " appeared while AttnLab wrote it: run again");
    throw PackageError(systemError("write", dir.pathOf(name), error) + " (a link: " + std::strerror(link_error) + ")");
}
}  // namespace

void RepoCache::writeRef(const std::string& revision, const std::string& commit) const {
    const auto [folder, name] = splitLast(revision);
    open(under("refs", folder)).replaceWith(name, commit);
}

void RepoCache::linkSnapshotFile(const std::string& commit, const std::string& file, const std::string& etag) const {
    const auto [folder, name] = splitLast(file);
    const CacheFolder dir = open(under("snapshots/" + commit, folder));
    // relative, as huggingface_hub's _create_symlink makes it: the cache folder can be moved
    std::string target;
    for (size_t i = 0; i < 2 + size_t(std::count(file.begin(), file.end(), '/')); ++i) target += "../";
    target += "blobs/" + etag;
    // Made where nothing is (symlinkat never replaces): what huggingface_hub or a person put there stays.
    if (::symlinkat(target.c_str(), dir.fd(), name.c_str()) == 0) return;
    const int error = errno;
    if (error == EEXIST) {
        // already this file (huggingface_hub's link, or a copy made where links cannot be): compared by
        // identity, reading through it (reading is all that is done through a link)
        struct stat here {
        }, blob{};
        if (::fstatat(dir.fd(), name.c_str(), &here, 0) == 0 && ::stat(blobPath(etag).c_str(), &blob) == 0 &&
            here.st_dev == blob.st_dev && here.st_ino == blob.st_ino)
            return;
        throw PackageError(dir.pathOf(name) + " exists and is not the file the hub has for it (blobs/" + etag +
                           "): AttnLab does not replace what it did not write; remove it to get the model again");
    }
    // a file system without links (FAT, exFAT, some network mounts): a copy, as huggingface_hub on Windows
    copyBlobInto(open("blobs"), etag, dir, name, error);
}

namespace {
// Opens `name` of `dir` for the lock, never through a link and never truncating it: for reading and writing
// (flock over NFS needs a file open for writing), else read-only (another user's lock file, 0644, is only
// locked), setting aside first whatever there is not a regular file; -1 with errno on failure.
int openLockFile(const CacheFolder& dir, const std::string& name, std::string& notice) {
    for (int attempt = 0; attempt < 2; ++attempt) {
        const int flags = O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
        int fd = ::openat(dir.fd(), name.c_str(), O_RDWR | flags, 0666);
        if (fd < 0 && errno == EACCES) fd = ::openat(dir.fd(), name.c_str(), O_RDONLY | flags, 0666);
        struct stat st {};
        if (fd >= 0 && ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) return fd;
        if (fd < 0 && errno != ELOOP) return -1;
        if (fd >= 0) ::close(fd);
        if (!dir.lstat(name, st)) return -1;
        const std::string why = notOwnRegularFile(st);
        notice = dir.pathOf(name) + " was " + why + ", not a lock file: set aside as " + dir.setAside(name, why);
    }
    errno = EEXIST;
    return -1;
}
}  // namespace

BlobLock::BlobLock(const RepoCache& cache, const std::string& etag, const std::function<bool()>& keep_waiting) {
    const CacheFolder locks = cache.openLocks();
    const std::string name = etag + ".lock";
    m_fd = openLockFile(locks, name, m_notice);
    if (m_fd < 0) throw PackageError(systemError("open the lock file", locks.pathOf(name), errno));
    while (::flock(m_fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK && errno != EINTR) {
            const int error = errno;
            ::close(m_fd);
            throw PackageError(systemError("lock", locks.pathOf(name), error));
        }
        if (keep_waiting && !keep_waiting()) {
            ::close(m_fd);
            throw CancelledError();
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
}

BlobLock::~BlobLock() {
    if (m_fd >= 0) ::close(m_fd);  // closing releases the flock; the file stays, as filelock leaves it
}

namespace {
std::string hexOf(const unsigned char* bytes, unsigned size) {
    static const char* digits = "0123456789abcdef";
    std::string hex;
    for (unsigned i = 0; i < size; ++i) hex += {digits[bytes[i] >> 4], digits[bytes[i] & 15]};
    return hex;
}
}  // namespace

IncompleteBlob::IncompleteBlob(const RepoCache& cache, const std::string& etag, bool check_sha256,
                               const std::function<bool()>& keep_going)
    : IncompleteBlob(cache.open("blobs"), etag,
                     check_sha256 ? std::optional<ExpectedDigest>(ExpectedDigest{"sha256", etag}) : std::nullopt,
                     keep_going) {}

IncompleteBlob::IncompleteBlob(CacheFolder folder, const std::string& name, const std::optional<ExpectedDigest>& digest,
                               const std::function<bool()>& keep_going)
    : m_blobs(std::move(folder)), m_name(name + ".incomplete"), m_final(name), m_digest(digest) {
    m_path = m_blobs.pathOf(m_name);
    try {  // (a constructor that throws runs no destructor: the file and the hash are let go here)
        open();
        if (m_digest) {
            const EVP_MD* md = EVP_get_digestbyname(m_digest->algorithm.c_str());
            if (!md) throw PackageError("OpenSSL has no digest " + m_digest->algorithm);
            m_sha = EVP_MD_CTX_new();
            if (!m_sha || EVP_DigestInit_ex(m_sha, md, nullptr) != 1)
                throw InternalError("OpenSSL: no " + m_digest->algorithm);
            hashExisting(keep_going);
        }
    } catch (...) {
        if (m_fd >= 0) ::close(m_fd);
        if (m_sha) EVP_MD_CTX_free(m_sha);
        throw;
    }
}

// Why the partial file already at m_name cannot be resumed (a link planted in a shared cache, a FIFO, another
// user's file); empty when it can, with m_fd open on it.
std::string IncompleteBlob::openExisting() {
    struct stat st {};
    if (!m_blobs.lstat(m_name, st)) throw PackageError(systemError("examine", m_path, errno));
    if (std::string why = notOwnRegularFile(st); !why.empty()) return why;
    m_fd = ::openat(m_blobs.fd(), m_name.c_str(), O_RDWR | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (m_fd < 0 && errno != ELOOP) throw PackageError(systemError("write", m_path, errno));
    struct stat opened {};
    if (m_fd >= 0 && ::fstat(m_fd, &opened) == 0 && opened.st_ino == st.st_ino && opened.st_dev == st.st_dev) return "";
    if (m_fd >= 0) ::close(m_fd);
    m_fd = -1;
    return "a file that changed while it was opened";
}

void IncompleteBlob::open() {
    // Whether this call creates it: a partial file huggingface_hub left is resumed, never deleted.
    m_fd = m_blobs.createExclusive(m_name, O_APPEND);
    m_created = m_fd >= 0;
    if (!m_created && errno != EEXIST) throw PackageError(systemError("write", m_path, errno));
    if (!m_created) {
        // never written through: the file it leads to (a victim's, outside the cache) stays untouched
        if (const std::string why = openExisting(); !why.empty()) {
            m_notice = m_path + " was " + why + ", not a partial download of this user's: set aside as " +
                       m_blobs.setAside(m_name, why) + "; the download starts over";
            m_fd = m_blobs.createExclusive(m_name, O_APPEND);
            if (m_fd < 0) throw PackageError(systemError("write", m_path, errno));
            m_created = true;
        }
    }
    struct stat st {};
    if (::fstat(m_fd, &st) != 0) throw PackageError(systemError("read the size of", m_path, errno));
    m_size = m_found = st.st_size;
}

IncompleteBlob::~IncompleteBlob() {
    if (m_fd >= 0) ::close(m_fd);
    EVP_MD_CTX_free(m_sha);
}

// A resumed download: the bytes of the earlier attempt enter the sha256 before the new ones.
void IncompleteBlob::hashExisting(const std::function<bool()>& keep_going) {
    std::vector<char> buffer(1 << 20);
    int64_t offset = 0;
    while (offset < m_size) {
        if (keep_going && !keep_going()) throw CancelledError();
        const ssize_t n = ::pread(m_fd, buffer.data(), buffer.size(), offset);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw PackageError(systemError("read", m_path, n == 0 ? EIO : errno));
        EVP_DigestUpdate(m_sha, buffer.data(), size_t(n));
        offset += n;
    }
}

void IncompleteBlob::restart() {
    if (::ftruncate(m_fd, 0) != 0) throw PackageError(systemError("write", m_path, errno));
    m_size = 0;
    if (m_sha) EVP_DigestInit_ex(m_sha, EVP_get_digestbyname(m_digest->algorithm.c_str()), nullptr);
}

void IncompleteBlob::write(const char* data, size_t bytes) {
    if (const int error = writeAll(m_fd, data, bytes)) {
        discard();  // a full disk: nothing half-written stays in blobs/
        throw PackageError(systemError("write", m_path, error));
    }
    if (m_sha) EVP_DigestUpdate(m_sha, data, bytes);
    m_size += int64_t(bytes);
}

void IncompleteBlob::removeFile() {
    if (m_fd >= 0) ::close(m_fd);
    m_fd = -1;
    ::unlinkat(m_blobs.fd(), m_name.c_str(), 0);  // the name in blobs/: a link put there meanwhile goes, not its target
}

void IncompleteBlob::finish(const std::string& file, int64_t expected_size) {
    if (expected_size >= 0 && m_size < expected_size) {
        throw PackageError("the download of " + file + " ended early (" + std::to_string(m_size) + " of " +
                           std::to_string(expected_size) + " bytes, kept in " + m_path + "): run again to resume");
    }
    if (expected_size >= 0 && m_size > expected_size) {
        discard();
        throw PackageError(file + ": the server sent " + std::to_string(m_size) + " bytes, " +
                           std::to_string(expected_size) + " expected; the bytes were not kept");
    }
    if (m_sha) {
        unsigned char digest[EVP_MAX_MD_SIZE];
        unsigned size = 0;
        EVP_DigestFinal_ex(m_sha, digest, &size);
        const std::string got = hexOf(digest, size);
        if (got != m_digest->hex) {
            // Proven wrong, whoever began the file (a resumed part may hold the bad bytes): it goes, so
            // that the next try starts over instead of failing the same way (the blob's lock is held).
            removeFile();
            throw PackageError(file + " failed its checksum: expected " + m_digest->algorithm + " " + m_digest->hex +
                               ", got " + got + "; the bytes were not kept");
        }
    }
    if (::fsync(m_fd) != 0) {
        const int error = errno;
        discard();
        throw PackageError(systemError("write", m_path, error));
    }
    ::close(m_fd);
    m_fd = -1;
    if (!m_blobs.rename(m_name, m_final, /*replace=*/true)) {
        const int error = errno;
        removeFile();
        throw PackageError(systemError("write", m_blobs.pathOf(m_final), error));
    }
}

void IncompleteBlob::discard() {
    // What this call wrote goes; a partial file another program left keeps the bytes it had.
    if (!m_created && m_fd >= 0 && m_size >= m_found && ::ftruncate(m_fd, m_found) == 0) {
        ::close(m_fd);
        m_fd = -1;
        m_size = m_found;
        return;
    }
    if (m_created)
        removeFile();
    else if (m_fd >= 0)
        ::close(m_fd);
    m_fd = -1;
}

}  // namespace hub
}  // namespace attnlab
