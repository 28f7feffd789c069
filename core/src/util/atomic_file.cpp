#include "util/atomic_file.h"

#include <attnlab/errors.h>

#include <fcntl.h>
#include <ftw.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace attnlab::util {
namespace fs = std::filesystem;

namespace {
void syncPath(const fs::path& p) {
    const int fd = ::open(p.c_str(), O_RDONLY);
    if (fd >= 0) {
        ::fsync(fd);
        ::close(fd);
    }
}

// nftw's callback with FTW_DEPTH: a directory comes after its contents, so remove() (unlink for a
// file or link, rmdir for a directory) finds it empty. Failures are skipped: the walk goes on.
int removeEntry(const char* path, const struct stat*, int, struct FTW*) {
    std::remove(path);
    return 0;
}
}  // namespace

void removeTree(const std::string& path) {
    if (path.empty()) return;
    ::nftw(path.c_str(), removeEntry, 16, FTW_DEPTH | FTW_PHYS);
}

void saveToFile(const std::string& path, const std::string& bytes) {
    const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out) throw InputError(path + ": cannot be written (does its directory exist?)");
        out << bytes;
        out.flush();
        if (!out) {
            std::remove(tmp.c_str());
            throw InputError(path + ": write failed (disk full?)");
        }
    }
    syncPath(tmp);
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        std::remove(tmp.c_str());
        throw InputError(path + ": cannot be replaced");
    }
}

std::string stagingPath(const std::string& target) {
    const fs::path t = fs::absolute(target);
    return (t.parent_path() / (t.filename().string() + ".tmp-" + std::to_string(::getpid()))).string();
}

void removeStaleStaging(const std::string& target) {
    const fs::path t = fs::absolute(target);
    const std::string prefix = t.filename().string() + ".tmp-";
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(t.parent_path(), ec)) {
        const std::string name = e.path().filename().string();
        if (name.rfind(prefix, 0) == 0 && e.path() != fs::path(stagingPath(target))) removeTree(e.path().string());
    }
}

void writeDirectory(const std::string& target, const std::function<void(const std::string& staged)>& fill) {
    const fs::path t = fs::absolute(target);
    std::error_code ec;
    fs::create_directories(t.parent_path(), ec);
    removeStaleStaging(t.string());
    const std::string staged = stagingPath(t.string());
    removeTree(staged);
    if (!fs::create_directory(staged, ec)) throw PackageError(staged + ": cannot create: " + ec.message());
    try {
        fill(staged);
        replaceDirectory(staged, t.string());
    } catch (...) {
        removeTree(staged);
        throw;
    }
}

void replaceDirectory(const std::string& staged, const std::string& target) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(staged, ec)) syncPath(e.path());
    if (fs::exists(target)) {
        if (::renameat2(AT_FDCWD, staged.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) != 0)
            throw PackageError(target + ": cannot be replaced: " + std::strerror(errno));
        removeTree(staged);  // now the old directory
    } else {
        fs::rename(staged, target, ec);
        if (ec) throw PackageError(target + ": cannot move the new package into place: " + ec.message());
    }
    syncPath(fs::absolute(target).parent_path());
}

}  // namespace attnlab::util
