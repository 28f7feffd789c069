#include "hub/cache_folder.h"

#include <attnlab/errors.h>

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <utility>

namespace attnlab::hub {

std::string systemError(const std::string& what, const std::string& path, int error) {
    std::string reason = std::strerror(error);
    if (error == ENOSPC) reason += " (the disk is full)";
    return "cannot " + what + " " + path + ": " + reason;
}

std::string unguessableSuffix() {
    unsigned char bytes[16];
    size_t got = 0;
    while (got < sizeof bytes) {
        const ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw InternalError(std::string("getrandom: ") + std::strerror(errno));
        got += size_t(n);
    }
    static const char* digits = "0123456789abcdef";
    std::string hex;
    for (unsigned char b : bytes) hex += {digits[b >> 4], digits[b & 15]};
    return hex;
}

std::string notOwnRegularFile(const struct stat& st) {
    if (S_ISLNK(st.st_mode)) return "a symbolic link";
    if (S_ISFIFO(st.st_mode)) return "a FIFO (named pipe)";
    if (S_ISDIR(st.st_mode)) return "a folder";
    if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) return "a device";
    if (S_ISSOCK(st.st_mode)) return "a socket";
    if (!S_ISREG(st.st_mode)) return "not a regular file";
    if (st.st_uid != ::geteuid()) return "owned by another user (uid " + std::to_string(st.st_uid) + ")";
    if (st.st_nlink != 1) return "a file with " + std::to_string(st.st_nlink) + " hard links";
    return "";
}

CacheFolder CacheFolder::openRoot(const std::string& cache_dir, bool create) {
    std::error_code ec;
    if (create) std::filesystem::create_directories(cache_dir, ec);  // the user's path: followed as given
    if (ec) throw PackageError("cannot create the folder " + cache_dir + ": " + ec.message());
    const int fd = ::open(cache_dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) throw PackageError(systemError("open the Hugging Face cache", cache_dir, errno));
    return CacheFolder(fd, cache_dir);
}

CacheFolder::CacheFolder(CacheFolder&& other) noexcept
    : m_fd(std::exchange(other.m_fd, -1)), m_path(std::move(other.m_path)) {}

CacheFolder& CacheFolder::operator=(CacheFolder&& other) noexcept {
    if (this != &other) {
        if (m_fd >= 0) ::close(m_fd);
        m_fd = std::exchange(other.m_fd, -1);
        m_path = std::move(other.m_path);
    }
    return *this;
}

CacheFolder::~CacheFolder() {
    if (m_fd >= 0) ::close(m_fd);
}

CacheFolder CacheFolder::sub(const std::string& relative) const {
    int fd = ::fcntl(m_fd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0) throw PackageError(systemError("open", m_path, errno));
    std::string path = m_path;
    std::istringstream parts(relative);
    std::string part;
    while (std::getline(parts, part, '/')) {
        if (part.empty()) continue;
        if (part == "." || part == "..") {
            ::close(fd);
            throw InternalError("a cache path with " + part + ": " + relative);
        }
        path += "/" + part;
        if (::mkdirat(fd, part.c_str(), 0777) != 0 && errno != EEXIST) {
            const int error = errno;
            ::close(fd);
            throw PackageError(systemError("create the folder", path, error));
        }
        const int next = ::openat(fd, part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        const int error = errno;
        struct stat st {};  // (O_DIRECTORY | O_NOFOLLOW on a link: ENOTDIR, not ELOOP)
        const bool link = next < 0 && ::fstatat(fd, part.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
        ::close(fd);
        if (next < 0 && (link || error == ELOOP || error == ENOTDIR))
            throw PackageError(path + " is " + (link || error == ELOOP ? "a symbolic link" : "not a folder") +
                               ": AttnLab writes in the cache's own folders only, never through a link (someone "
                               "who can write to the cache put it there; remove it, or use a cache of your own: "
                               "HF_HUB_CACHE)");
        if (next < 0) throw PackageError(systemError("open the folder", path, error));
        fd = next;
    }
    return CacheFolder(fd, path);
}

int CacheFolder::createExclusive(const std::string& name, int extra_flags) const {
    return ::openat(m_fd, name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | extra_flags, 0666);
}

int writeAll(int fd, const char* data, size_t bytes) {
    while (bytes > 0) {
        const ssize_t n = ::write(fd, data, bytes);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return n == 0 ? EIO : errno;
        data += n;
        bytes -= size_t(n);
    }
    return 0;
}

void CacheFolder::replaceWith(const std::string& name, const std::string& bytes) const {
    const std::string temporary = "." + name + ".attnlab-" + unguessableSuffix();
    const int fd = createExclusive(temporary);
    if (fd < 0) throw PackageError(systemError("write", pathOf(name), errno));
    int error = writeAll(fd, bytes.data(), bytes.size());
    if (!error && ::fsync(fd) != 0) error = errno;
    if (::close(fd) != 0 && !error) error = errno;
    if (!error && !rename(temporary, name, true)) error = errno;
    if (error) {
        ::unlinkat(m_fd, temporary.c_str(), 0);
        throw PackageError(systemError("write", pathOf(name), error));
    }
}

bool CacheFolder::rename(const std::string& from, const std::string& to, bool replace) const {
    if (replace) return ::renameat(m_fd, from.c_str(), m_fd, to.c_str()) == 0;
    if (::renameat2(m_fd, from.c_str(), m_fd, to.c_str(), RENAME_NOREPLACE) == 0) return true;
    if (errno != EINVAL && errno != ENOSYS) return false;
    // a file system without RENAME_NOREPLACE: a hard link fails where something is, as the flag would
    if (::linkat(m_fd, from.c_str(), m_fd, to.c_str(), 0) == 0) {
        ::unlinkat(m_fd, from.c_str(), 0);
        return true;
    }
    if (errno != EPERM && errno != EOPNOTSUPP && errno != ENOSYS) return false;
    // nor hard links (some FUSE and SMB mounts): a look, then a rename; it only ever replaces a name in the cache
    struct stat st {};
    if (lstat(to, st)) {
        errno = EEXIST;
        return false;
    }
    return ::renameat(m_fd, from.c_str(), m_fd, to.c_str()) == 0;
}

std::string CacheFolder::setAside(const std::string& name, const std::string& why) const {
    const std::string aside = name + ".set-aside-" + unguessableSuffix();
    if (!rename(name, aside, false))
        throw PackageError(pathOf(name) + " is " + why + ", and AttnLab writes only regular files of its own: " +
                           systemError("move it aside in", m_path, errno) + "; remove it, or use a cache of your own");
    return aside;
}

bool CacheFolder::lstat(const std::string& name, struct stat& st) const {
    return ::fstatat(m_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
}

}  // namespace attnlab::hub
