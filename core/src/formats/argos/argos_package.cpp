#include "formats/argos/argos_package.h"

#include "formats/ctranslate2/ct2_model.h"
#include "formats/huggingface/hf_config.h"
#include "util/atomic_file.h"
#include "util/small_file.h"
#include "util/text.h"

#include <attnlab/errors.h>

#include <nlohmann/json.hpp>

#include <archive.h>
#include <archive_entry.h>

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <tuple>

namespace attnlab::package {
namespace fs = std::filesystem;

namespace {
using argos_files::kMetadata;
using argos_files::kModelFolder;
constexpr const char* kBpeModel = "bpe.model";  // argos-translate's BPETokenizer (Moses + subword-nmt)

bool isFile(const fs::path& p) {
    std::error_code ec;
    return fs::is_regular_file(p, ec);
}
bool isDir(const fs::path& p) {
    std::error_code ec;
    return fs::is_directory(p, ec);
}

bool hasArgosSuffix(const std::string& path) {
    std::string ext = fs::path(path).extension().string();
    std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
    return ext == ".argosmodel" || ext == ".zip";
}

struct ArchiveFree {
    void operator()(archive* a) const { archive_read_free(a); }
};
using Archive = std::unique_ptr<archive, ArchiveFree>;

std::string archiveError(archive* a) {
    const char* e = archive_error_string(a);
    return e ? e : "unknown error";
}

// The components of a member name, refused when it could land outside the folder it is unpacked into.
std::vector<std::string> memberComponents(const char* raw, const std::string& origin) {
    if (!raw || !*raw) throw PackageError(origin + ": a member has no name");
    const std::string name = raw;
    if (name.front() == '/' || name.find('\\') != std::string::npos || name.find(':') != std::string::npos)
        throw PackageError(origin + ": member '" + util::forMessage(name) + "' is an absolute or foreign path");
    std::vector<std::string> parts;
    size_t start = 0;
    while (start <= name.size()) {
        const size_t slash = std::min(name.find('/', start), name.size());
        const std::string part = name.substr(start, slash - start);
        if (part == "..")
            throw PackageError(origin + ": member '" + util::forMessage(name) + "' lies outside the package (\"..\")");
        if (!part.empty() && part != ".") parts.push_back(part);
        start = slash + 1;
    }
    if (parts.empty()) throw PackageError(origin + ": member '" + util::forMessage(name) + "' names no file");
    return parts;
}

// What a model needs of a package: metadata.json, the SentencePiece (or BPE) model, model/.
bool needed(const std::vector<std::string>& parts) {
    if (parts.size() == 2)
        return parts[1] == kMetadata || parts[1] == ct2_files::kSentencePiece || parts[1] == kBpeModel;
    return parts.size() > 2 && parts[1] == kModelFolder;
}

std::string mib(uint64_t bytes) { return std::to_string((bytes + (1u << 20) - 1) >> 20) + " MiB"; }

// What an archive may write into `into`, and the bound that decides it, as the end of a sentence.
struct UnpackBudget {
    uint64_t bytes = 0;
    std::string bound;
};

UnpackBudget unpackBudget(uint64_t archive_bytes, const std::string& into) {
    UnpackBudget b{argosUnpackLimit(archive_bytes), ""};
    b.bound = "the archive unpacks to more than " + mib(b.bytes) + ", the most AttnLab writes for an archive of " +
              mib(archive_bytes) + " (" + std::to_string(kArgosExpansionLimit) + " times its size, at least " +
              mib(kArgosMinUnpackBytes) + "): a package's weights barely compress, so this is no package";
    struct statvfs fs_info {};
    if (::statvfs(into.c_str(), &fs_info) != 0) return b;
    const uint64_t free_bytes = uint64_t(fs_info.f_bavail) * uint64_t(fs_info.f_frsize);
    const uint64_t usable = free_bytes > kArgosFreeSpaceMargin ? free_bytes - kArgosFreeSpaceMargin : 0;
    if (usable < b.bytes)
        b = {usable, "unpacking it needs more than the " + mib(free_bytes) + " free in " + into + " less the " +
                         mib(kArgosFreeSpaceMargin) +
                         " AttnLab leaves free (TMPDIR chooses where a package that is opened is unpacked; one "
                         "that is installed goes to the packages folder)"};
    return b;
}

// Writes the current member's data to `path` (created, never replaced), counting the bytes into
// *total as they are written, refused at the first one past the budget.
void writeMember(archive* a, const fs::path& path, const std::string& member, const std::string& origin,
                 const UnpackBudget& budget, uint64_t* total) {
    std::error_code ec;
    fs::create_directories(path.parent_path(), ec);
    const int fd = ec ? -1 : ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0)
        throw PackageError(origin + ": cannot unpack member '" + util::forMessage(member) + "' to " + path.string() +
                           ": " + (ec ? ec.message() : std::strerror(errno)) +
                           (errno == EEXIST ? " (the archive names it twice)" : ""));
    auto fail = [&](const std::string& why) {
        ::close(fd);
        throw PackageError(origin + ": member '" + util::forMessage(member) + "': " + why);
    };
    const void* block = nullptr;
    size_t size = 0;
    la_int64_t offset = 0;
    int r;
    while ((r = archive_read_data_block(a, &block, &size, &offset)) == ARCHIVE_OK) {
        *total += size;
        if (*total > budget.bytes) fail(budget.bound);
        for (size_t done = 0; done < size;) {
            const ssize_t w = ::pwrite(fd, static_cast<const char*>(block) + done, size - done, offset + off_t(done));
            if (w <= 0)
                fail(std::string("cannot write ") + path.string() + ": " + std::strerror(w < 0 ? errno : ENOSPC));
            done += size_t(w);
        }
    }
    if (r != ARCHIVE_EOF) fail("cannot be read: " + archiveError(a));
    if (::close(fd) != 0) throw PackageError(origin + ": cannot write " + path.string() + ": " + std::strerror(errno));
}

// Reads every member; each must be a file or folder inside one top folder. Writes what a model
// needs under `into` when it is not empty.
std::vector<std::string> extractAll(archive* a, const std::string& origin, const std::string& into,
                                    uint64_t archive_bytes, bool whole_package) {
    std::vector<std::string> names;
    std::string top;
    uint64_t total = 0;
    const UnpackBudget budget = into.empty() ? UnpackBudget{} : unpackBudget(archive_bytes, into);
    archive_entry* e = nullptr;
    for (;;) {
        const int r = archive_read_next_header(a, &e);
        if (r == ARCHIVE_EOF) break;
        if (r < ARCHIVE_WARN) throw PackageError(origin + ": not a readable zip archive: " + archiveError(a));
        const auto parts = memberComponents(archive_entry_pathname(e), origin);
        const std::string name = archive_entry_pathname(e);
        if (parts.front() == "__MACOSX") continue;  // a Mac's resource forks beside the package
        const auto type = archive_entry_filetype(e);
        if (type != AE_IFREG && type != AE_IFDIR)
            throw PackageError(origin + ": member '" + util::forMessage(name) +
                               "' is a link or a special file, which a package does not hold");
        if (type == AE_IFREG && parts.size() < 2)
            throw PackageError(origin + ": member '" + util::forMessage(name) +
                               "' lies outside a package folder (an .argosmodel holds one folder)");
        if (top.empty()) top = parts.front();
        if (parts.front() != top)
            throw PackageError(origin + ": member '" + util::forMessage(name) +
                               "' lies outside the package's folder '" + util::forMessage(top) + "'");
        names.push_back(name);
        if (names.size() > 100000) throw PackageError(origin + ": holds more than 100000 members");
        if (into.empty() || type == AE_IFDIR || !(whole_package || needed(parts))) {
            archive_read_data_skip(a);
            continue;
        }
        fs::path target = into;
        for (const auto& p : parts) target /= p;
        if (archive_entry_size_is_set(e) &&
            uint64_t(std::max<la_int64_t>(archive_entry_size(e), 0)) > budget.bytes - total)
            throw PackageError(origin + ": member '" + util::forMessage(name) + "' says it holds " +
                               mib(uint64_t(archive_entry_size(e))) + ": " + budget.bound);
        writeMember(a, target, name, origin, budget, &total);
    }
    if (names.empty()) throw PackageError(origin + ": the archive is empty");
    return names;
}

Archive newReader(const std::string& origin) {
    Archive a(archive_read_new());
    if (!a) throw PackageError(origin + ": cannot create an archive reader");
    archive_read_support_format_zip(a.get());
    return a;
}

// The one top folder of an unpacked package (beside the staging folder's marker).
fs::path topFolder(const fs::path& into, const std::string& origin) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(into, ec))
        if (entry.is_directory(ec) && !entry.is_symlink(ec)) return entry.path();
    throw PackageError(origin + ": holds no package folder with a model");
}

// A fresh staging folder in TMPDIR, removed with everything in it when the model is loaded; one a
// killed process left is removed by the next that makes one.
std::shared_ptr<const void> temporaryFolder(const std::string& origin, std::string* path) {
    std::error_code ec;
    const fs::path tmp = fs::temp_directory_path(ec);
    if (ec) throw PackageError(origin + ": no temporary folder to unpack it into: " + ec.message() + " (TMPDIR)");
    const std::string folder = util::makeStagingFolderIn(tmp.string(), "attnlab-argos");
    *path = folder;
    return std::shared_ptr<const void>(nullptr, [folder](const void*) { util::removeStagingFolder(folder); });
}

Ct2Location argosFolder(const fs::path& dir, const std::string& origin) {
    Ct2Location l;
    l.origin = origin;
    l.argos = true;
    l.model_dir = (dir / kModelFolder).string();
    if (isFile(dir / ct2_files::kSentencePiece))
        l.spm_path = (dir / ct2_files::kSentencePiece).string();
    else if (isFile(dir / kBpeModel))
        throw PackageError(origin +
                           ": tokenizes with bpe.model (Moses and subword-nmt), which AttnLab does not "
                           "implement; packages with a sentencepiece.model open");
    if (isFile(dir / kMetadata)) {
        const ArgosMetadata m = readArgosMetadata((dir / kMetadata).string());
        l.source_lang = m.from_code;
        l.target_lang = m.to_code;
    }
    return l;
}

bool isArgosFolder(const fs::path& dir) {
    return isFile(dir / kMetadata) && isFile(dir / kModelFolder / ct2_files::kModel);
}
}  // namespace

ArgosMetadata readArgosMetadata(const std::string& path) {
    const HfConfig j{readJson(path), path};
    if (!j.j.is_object()) j.fail("expected a JSON object");
    ArgosMetadata m;
    m.from_code = j.string(argos_keys::kFromCode, "");
    m.to_code = j.string(argos_keys::kToCode, "");
    m.from_name = j.string(argos_keys::kFromName, m.from_code);
    m.to_name = j.string(argos_keys::kToName, m.to_code);
    m.package_version = j.string(argos_keys::kPackageVersion, "");
    if (m.from_code.empty() || m.to_code.empty()) j.fail("has no from_code / to_code (the package's languages)");
    if (!j.string(argos_keys::kTargetPrefix, "").empty())
        j.fail("has a target_prefix (a token every translation must begin with), which AttnLab does not yet force");
    return m;
}

bool isCtranslate2Model(const std::string& path) {
    const fs::path p(path);
    if (isFile(p)) return hasArgosSuffix(path);
    return isFile(p / ct2_files::kModel) || isArgosFolder(p);
}

uint64_t argosUnpackLimit(uint64_t archive_bytes) {
    const uint64_t multiple =
        archive_bytes > kMaxArgosBytes / kArgosExpansionLimit ? kMaxArgosBytes : archive_bytes * kArgosExpansionLimit;
    return std::min(std::max(multiple, kArgosMinUnpackBytes), kMaxArgosBytes);
}

std::vector<std::string> extractArgosArchive(const void* data, size_t size, const std::string& origin,
                                             const std::string& into) {
    Archive a = newReader(origin);
    if (archive_read_open_memory(a.get(), data, size) != ARCHIVE_OK)
        throw PackageError(origin + ": not a readable zip archive: " + archiveError(a.get()));
    return extractAll(a.get(), origin, into, size, false);
}

void extractArgosModel(const std::string& zip_path, const std::string& into, bool whole_package) {
    util::requireFile(zip_path);
    std::error_code ec;
    const uint64_t size = fs::file_size(zip_path, ec);
    if (ec) throw PackageError(zip_path + ": cannot read its size: " + ec.message());
    Archive a = newReader(zip_path);
    if (archive_read_open_filename(a.get(), zip_path.c_str(), 1 << 16) != ARCHIVE_OK)
        throw PackageError(zip_path + ": not a readable zip archive: " + archiveError(a.get()));
    extractAll(a.get(), zip_path, into, size, whole_package);
}

std::string argosTopFolder(const std::string& into, const std::string& origin) { return topFolder(into, origin); }

bool isArgosPackageFolder(const std::string& dir) { return isArgosFolder(dir); }

Ct2Location locateCtranslate2(const std::string& path) {
    const fs::path p(path);
    if (isFile(p)) {
        Ct2Location l;
        std::string tmp;
        auto keep = temporaryFolder(path, &tmp);
        extractArgosModel(path, tmp);
        const fs::path top = topFolder(tmp, path);
        if (!isFile(top / kModelFolder / ct2_files::kModel))
            throw PackageError(path + ": holds no model/model.bin (an Argos Translate package's CTranslate2 model)");
        l = argosFolder(top, path);
        l.keep_alive = std::move(keep);
        return l;
    }
    if (isArgosFolder(p)) return argosFolder(p, path);
    Ct2Location l;
    l.origin = path;
    l.model_dir = path;
    if (isFile(p / ct2_files::kSentencePiece)) {
        l.spm_path = (p / ct2_files::kSentencePiece).string();  // a converter's --copy_files sentencepiece.model
    } else {
        std::error_code ec;
        const fs::path parent = fs::absolute(p, ec).lexically_normal().parent_path();
        if (!ec && isArgosFolder(parent.filename().empty() ? parent.parent_path() : parent)) {
            l = argosFolder(parent.filename().empty() ? parent.parent_path() : parent, path);  // model/ of a package
            l.model_dir = path;
        }
    }
    return l;
}

std::optional<std::string> argosSetting(const std::string& key) {
    if (const char* v = std::getenv(key.c_str()); v && *v) return std::string(v);
    fs::path config;
    if (const char* x = std::getenv("XDG_CONFIG_HOME"); x && *x)
        config = x;
    else if (const std::string home = argosHomeDir(); !home.empty())
        config = fs::path(home) / ".config";
    else
        return std::nullopt;
    const auto text = util::readRegularFileHead((config / "argos-translate" / "settings.json").string(), 1 << 20);
    if (!text) return std::nullopt;
    const nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
    if (j.is_object() && j.contains(key) && j[key].is_string() && !j[key].get<std::string>().empty())
        return j[key].get<std::string>();
    return std::nullopt;
}

std::string argosHomeDir() {
    if (std::getenv("SNAP"))
        if (const char* d = std::getenv("SNAP_USER_DATA"); d && *d) return d;
    const char* h = std::getenv("HOME");
    return h && *h ? h : "";
}

namespace {
// $VARIABLE/argos-translate, else HOME/FALLBACK/argos-translate (settings.py's data_dir and cache_dir).
std::string argosFolder(const char* variable, const char* fallback) {
    fs::path base;
    if (const char* x = std::getenv(variable); x && *x)
        base = x;
    else if (const std::string home = argosHomeDir(); !home.empty())
        base = fs::path(home) / fallback;
    else
        return {};
    return (base / "argos-translate").string();
}
}  // namespace

std::string argosPackagesDir() {
    if (auto dir = argosSetting("ARGOS_PACKAGES_DIR")) return *dir;
    const std::string data = argosFolder("XDG_DATA_HOME", ".local/share");
    return data.empty() ? data : data + "/packages";
}

std::string argosCacheDir() { return argosFolder("XDG_CACHE_HOME", ".local/cache"); }

std::vector<InstalledArgosPackage> installedArgosPackages() { return installedArgosPackagesIn(argosPackagesDir()); }

std::vector<InstalledArgosPackage> installedArgosPackagesIn(const std::string& root) {
    std::vector<InstalledArgosPackage> out;
    std::error_code ec;
    if (root.empty() || !isDir(root)) return out;
    for (const auto& entry : fs::directory_iterator(root, ec)) {
        if (!isArgosFolder(entry.path())) continue;
        try {
            out.push_back({entry.path().string(), readArgosMetadata((entry.path() / kMetadata).string())});
        } catch (const PackageError&) {
        }
    }
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
        return std::tie(a.metadata.from_name, a.metadata.to_name, a.dir) <
               std::tie(b.metadata.from_name, b.metadata.to_name, b.dir);
    });
    return out;
}

}  // namespace attnlab::package
