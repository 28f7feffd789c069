// Installing and removing Argos packages (attnlab/argos_index.h) in argos-translate's packages folder:
// a package's archive downloaded through the hub's client into argos-translate's downloads folder (resumed,
// checked), unzipped by the bounded .argosmodel reader into a staging folder inside the packages folder and
// renamed into place under its own top folder's name, as argostranslate/package.py install_from_path names it.
#include <attnlab/argos_index.h>

#include "formats/argos/argos_package.h"
#include "hub/cache_folder.h"
#include "hub/hub_cache.h"
#include "hub/hub_client.h"
#include "hub/progress_tracker.h"
#include "util/atomic_file.h"
#include "util/text.h"

#include <attnlab/errors.h>

#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

namespace attnlab {

namespace fs = std::filesystem;

namespace {

std::string lower(std::string s) {
    for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

// The first link argos-translate's networking.get would fetch: http or https (ipfs:// and the index's
// "ifps://" typos are passed over, as networking.get_protocol does).
std::string downloadLink(const ArgosPackageEntry& entry) {
    for (const std::string& l : entry.links) {
        const std::string s = lower(l.substr(0, 8));
        if (s.rfind("http://", 0) == 0 || s.rfind("https://", 0) == 0) return l;
    }
    std::string all;
    for (const std::string& l : entry.links) all += (all.empty() ? "" : ", ") + util::forMessage(l, 120);
    throw PackageError("the Argos index has no http or https link for " + entry.code +
                       (all.empty() ? " (no \"links\")" : " (its links: " + all + ")"));
}

// The index's "checksum": "ALGORITHM:HEX", or bare hex whose length says the digest (md5, sha1, sha256, sha512).
std::optional<hub::ExpectedDigest> expectedDigest(const ArgosPackageEntry& entry) {
    if (entry.checksum.empty()) return std::nullopt;
    const size_t colon = entry.checksum.find(':');
    std::string algorithm = colon == std::string::npos ? "" : lower(entry.checksum.substr(0, colon));
    const std::string hex = lower(colon == std::string::npos ? entry.checksum : entry.checksum.substr(colon + 1));
    if (algorithm.empty())
        algorithm = hex.size() == 32 ? "md5" : hex.size() == 40 ? "sha1" : hex.size() == 64 ? "sha256" : "sha512";
    const bool is_hex = !hex.empty() && std::all_of(hex.begin(), hex.end(), ::isxdigit);
    const bool known = algorithm == "md5" || algorithm == "sha1" || algorithm == "sha256" || algorithm == "sha512";
    if (!is_hex || !known || (colon == std::string::npos && hex.size() != 128 && algorithm == "sha512"))
        throw PackageError("the Argos index's checksum for " + entry.code + " (\"" +
                           util::forMessage(entry.checksum, 160) +
                           "\") is neither ALGORITHM:HEX nor the hex of an md5, sha1, sha256 or sha512 digest");
    return hub::ExpectedDigest{algorithm, hex};
}

// A name made of [A-Za-z0-9._-] from what the index says (it becomes a file name in the downloads folder).
std::string safeName(const std::string& s) {
    std::string out;
    for (const char c : s.substr(0, 100))
        out += std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' ? c : '_';
    if (out.empty() || out.front() == '.') out.insert(0, "_");
    return out;
}

// An exclusive flock on NAME.lock in the downloads folder while a package is got: two processes never append to
// one partial file. PackageError when another holds it.
class DownloadLock {
public:
    DownloadLock(const hub::CacheFolder& folder, const std::string& name) {
        const std::string lock = name + ".lock";
        m_fd = ::openat(folder.fd(), lock.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0644);
        if (m_fd < 0) throw PackageError(hub::systemError("open the lock file", folder.pathOf(lock), errno));
        if (::flock(m_fd, LOCK_EX | LOCK_NB) != 0) {
            ::close(m_fd);
            throw PackageError("another process is downloading " + name + " (" + folder.pathOf(lock) +
                               " is locked): wait for it, or end it");
        }
    }
    DownloadLock(const DownloadLock&) = delete;
    DownloadLock& operator=(const DownloadLock&) = delete;
    ~DownloadLock() { ::close(m_fd); }

private:
    int m_fd = -1;
};

// The package's archive in the downloads folder, complete and checked; its path.
std::string downloadArchive(const ArgosPackageEntry& entry, const ArgosOptions& options,
                            const HubProgressCallback& progress) {
    const std::string url = downloadLink(entry);
    const std::optional<hub::ExpectedDigest> digest = expectedDigest(entry);
    if (options.downloads_dir.empty()) throw PackageError("no downloads folder for Argos packages (no HOME)");
    const std::string name = safeName(entry.code) + "-" + safeName(entry.package_version) + ".argosmodel";
    hub::CacheFolder folder = hub::CacheFolder::openRoot(options.downloads_dir, /*create=*/true);
    const DownloadLock lock(folder, name);
    hub::HubClient client(options.transfer);
    hub::ProgressTracker tracker(progress);
    tracker.addFile(entry.size);
    const std::string path = folder.pathOf(name);
    hub::IncompleteBlob part(std::move(folder), name, digest, [&] { return tracker.poll(); });
    if (!tracker.notify(part.notice()) || !tracker.startFile(name, entry.size, part.size())) throw CancelledError();
    const int64_t cap = entry.size >= 0 ? entry.size : options.max_package_bytes;
    try {
        client.downloadUrl({url, name, entry.size, "ATTNLAB_ARGOS_MAX_BYTES"}, part, cap,
                           [&] { return tracker.update(part.size(), false); });
    } catch (...) {
        if (part.size() == 0) part.discard();  // nothing came (an HTTP error): no empty partial file stays
        throw;
    }
    part.finish(name + " (" + util::forMessage(url, 200) + ")", entry.size);
    if (!tracker.endFile()) throw CancelledError();
    return path;
}

// rename(2) that never replaces (renameat2 RENAME_NOREPLACE), or exchanges the two (RENAME_EXCHANGE).
bool renameInto(const fs::path& from, const fs::path& to, unsigned flags) {
    return ::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), flags) == 0;
}

// Removes an installed package's folder: a folder (not a link) directly inside `packages_dir` with
// metadata.json and model/, renamed into a staging folder first (out of every reader's sight at once).
void removeInstalledFolder(const fs::path& dir, const std::string& packages_dir) {
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0) throw PackageError(hub::systemError("examine", dir.string(), errno));
    if (S_ISLNK(st.st_mode))
        throw PackageError(dir.string() +
                           " is a symbolic link: AttnLab removes only folders inside the packages "
                           "folder, never what a link leads to");
    std::error_code ec;
    const bool inside = fs::equivalent(fs::absolute(dir, ec).parent_path(), fs::path(packages_dir), ec);
    struct stat meta {
    }, model{};
    const bool shaped = S_ISDIR(st.st_mode) && ::lstat((dir / package::argos_files::kMetadata).c_str(), &meta) == 0 &&
                        S_ISREG(meta.st_mode) &&
                        ::lstat((dir / package::argos_files::kModelFolder).c_str(), &model) == 0 &&
                        S_ISDIR(model.st_mode);
    if (!inside || !shaped)
        throw PackageError(dir.string() + " is not a package folder of " + packages_dir +
                           " (metadata.json and model/): not removed");
    const std::string staging = util::makeStagingFolderIn(packages_dir, "attnlab-argos-remove");
    if (!renameInto(dir, fs::path(staging) / dir.filename(), RENAME_NOREPLACE)) {
        const int error = errno;
        util::removeStagingFolder(staging);
        throw PackageError(hub::systemError("remove", dir.string(), error));
    }
    util::removeStagingFolder(staging);
}

// The installed packages of `entry`'s pair: refused unless `replace` (then returned, to be removed).
std::vector<ArgosInstalledPackage> samePair(const ArgosPackageEntry& entry, const ArgosOptions& options, bool replace) {
    std::vector<ArgosInstalledPackage> same;
    for (const ArgosInstalledPackage& p : installedArgosPackagesList(options))
        if (p.from_code == entry.from_code && p.to_code == entry.to_code) same.push_back(p);
    if (!same.empty() && !replace)
        throw PackageError(entry.pair() + " is already installed: " + same.front().dir + " (version " +
                           (same.front().package_version.empty() ? "unknown" : same.front().package_version) +
                           "); install it again with --replace, or remove it first (attnlab-cli argos remove " +
                           entry.pair() + ")");
    return same;
}

// Unzips `archive` into a staging folder inside the packages folder and renames its top folder into place.
std::string unpackIntoPlace(const std::string& archive, const ArgosPackageEntry& entry, const ArgosOptions& options,
                            bool replace) {
    const std::string staging = util::makeStagingFolderIn(options.packages_dir, "attnlab-argos-install");
    struct Cleanup {
        std::string folder;
        ~Cleanup() { util::removeStagingFolder(folder); }
    } cleanup{staging};
    package::extractArgosModel(archive, staging, /*whole_package=*/true);
    const fs::path top = package::argosTopFolder(staging, archive);
    if (!package::isArgosPackageFolder(top.string()))
        throw PackageError(archive + ": holds no metadata.json and model/model.bin: not a translation package");
    const package::ArgosMetadata m = package::readArgosMetadata((top / package::argos_files::kMetadata).string());
    if (m.from_code != entry.from_code || m.to_code != entry.to_code)
        throw PackageError(archive + ": holds a " + m.from_code + "-" + m.to_code + " package, but the index says " +
                           entry.pair());
    const std::string folder = top.filename().string();
    if (folder.empty() || folder.front() == '.')
        throw PackageError(archive + ": its folder '" + util::forMessage(folder) + "' is a hidden name");
    const fs::path target = fs::path(options.packages_dir) / folder;
    if (renameInto(top, target, RENAME_NOREPLACE)) return target.string();
    if (errno != EEXIST || !replace)
        throw PackageError(errno == EEXIST ? target.string() + " already exists and is not " + entry.pair() +
                                                 " as installed; not replaced (remove it first)"
                                           : hub::systemError("install into", target.string(), errno));
    if (!renameInto(top, target, RENAME_EXCHANGE))  // the old folder goes with the staging folder
        throw PackageError(hub::systemError("replace", target.string(), errno));
    return target.string();
}

}  // namespace

std::string installArgosPackage(const ArgosPackageEntry& entry, const ArgosOptions& options,
                                const HubProgressCallback& progress, bool replace) {
    if (entry.type != "translate")
        throw PackageError(entry.code + " is a package of type '" + util::forMessage(entry.type) +
                           "': AttnLab installs translation packages only");
    if (entry.from_code.empty() || entry.to_code.empty())
        throw PackageError(entry.code + ": the index gives no from_code / to_code");
    if (options.packages_dir.empty()) throw PackageError("no folder for Argos packages (ARGOS_PACKAGES_DIR, HOME)");
    const std::vector<ArgosInstalledPackage> old = samePair(entry, options, replace);
    std::error_code ec;
    fs::create_directories(options.packages_dir, ec);  // settings.py makes it too
    if (ec) throw PackageError("cannot create the Argos packages folder " + options.packages_dir + ": " + ec.message());
    const std::string archive = downloadArchive(entry, options, progress);
    struct RemoveArchive {  // as AvailablePackage.install unlinks it, installed or not (a bad one is fetched anew)
        std::string path;
        ~RemoveArchive() { ::unlink(path.c_str()); }
    } remove_archive{archive};
    const std::string installed = unpackIntoPlace(archive, entry, options, replace);
    for (const ArgosInstalledPackage& p : old)
        if (fs::path(p.dir).filename() != fs::path(installed).filename())
            removeInstalledFolder(p.dir, options.packages_dir);
    return installed;
}

std::string removeArgosPackage(const std::string& name, const ArgosOptions& options) {
    const std::vector<ArgosInstalledPackage> installed = installedArgosPackagesList(options);
    std::vector<const ArgosInstalledPackage*> named;
    std::string all;
    const std::string pair = lower(name);
    for (const ArgosInstalledPackage& p : installed) {
        all += (all.empty() ? "" : ", ") + p.pair() + " (" + p.folder + ")";
        const std::string underscored = p.from_code + "_" + p.to_code;
        if (p.folder == name || lower(p.pair()) == pair || lower(underscored) == pair) named.push_back(&p);
    }
    if (named.empty())
        throw InputError("no installed Argos package " + util::forMessage(name) + " in " + options.packages_dir +
                         (all.empty() ? " (none is installed)" : "; installed: " + all));
    if (named.size() > 1) {
        std::string list;
        for (const auto* p : named) list += (list.empty() ? "" : ", ") + p->folder;
        throw PackageError("several installed packages are " + util::forMessage(name) + ": " + list +
                           "; name the folder to remove");
    }
    removeInstalledFolder(named.front()->dir, options.packages_dir);
    return named.front()->dir;
}

}  // namespace attnlab
