#include "util/small_file.h"

#include <attnlab/errors.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace attnlab::util {
namespace fs = std::filesystem;

namespace {
// What a file type other than a regular file is, in words.
std::string notRegular(fs::file_type type) {
    switch (type) {
    case fs::file_type::directory: return "is a folder, not a file";
    case fs::file_type::fifo: return "is a FIFO (named pipe), not a regular file";
    case fs::file_type::character: return "is a character device, not a regular file";
    case fs::file_type::block: return "is a block device, not a regular file";
    case fs::file_type::socket: return "is a socket, not a regular file";
    default: return "is not a regular file";
    }
}
}  // namespace

std::optional<std::string> fileProblem(const std::string& path) {
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);
    if (st.type() == fs::file_type::not_found) {
        const fs::file_status link = fs::symlink_status(path, ec);
        if (link.type() == fs::file_type::symlink) {
            const fs::path target = fs::read_symlink(path, ec);
            return path + ": is a symbolic link to " + target.string() + ", which does not exist";
        }
        return path + ": missing file";
    }
    if (ec || st.type() == fs::file_type::none) return path + ": cannot be examined: " + ec.message();
    if (st.type() != fs::file_type::regular) return path + ": " + notRegular(st.type());
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return path + ": cannot be read: " + std::strerror(errno);
    ::close(fd);
    return std::nullopt;
}

void requireFile(const std::string& path) {
    if (auto problem = fileProblem(path)) throw PackageError(*problem);
}

bool optionalFilePresent(const std::string& path) {
    std::error_code ec;
    if (fs::symlink_status(path, ec).type() == fs::file_type::not_found) return false;
    requireFile(path);
    return true;
}

namespace {
enum class Read { Ok, Unreadable, NotRegular, TooLarge };

// `path` opened without blocking; when a regular file of at most `max_bytes` (or, with `head`, any regular
// file: its first `max_bytes`), its bytes into `out`, read into a string of that size (no stream's copy).
Read readRegular(const std::string& path, size_t max_bytes, bool head, bool follow_links, std::string& out) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | (follow_links ? 0 : O_NOFOLLOW));
    if (fd < 0) return Read::Unreadable;
    struct stat st {};
    Read r = ::fstat(fd, &st) != 0 ? Read::Unreadable : !S_ISREG(st.st_mode) ? Read::NotRegular : Read::Ok;
    if (r == Read::Ok && !head && uint64_t(st.st_size) > max_bytes) r = Read::TooLarge;
    out.assign(r == Read::Ok ? std::min<uint64_t>(uint64_t(st.st_size), max_bytes) : 0, '\0');
    for (size_t done = 0; r == Read::Ok && done < out.size();) {
        const ssize_t n = ::read(fd, out.data() + done, out.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) r = Read::Unreadable;
        if (n == 0) out.resize(done);  // (the file shrank meanwhile)
        done = n > 0 ? done + size_t(n) : out.size();
    }
    ::close(fd);
    return r;
}
}  // namespace

std::string readSmallFile(const std::string& path, size_t max_bytes) {
    requireFile(path);
    std::string bytes;
    switch (readRegular(path, max_bytes, /*head=*/false, /*follow_links=*/true, bytes)) {
    case Read::Ok: return bytes;
    case Read::TooLarge:
        throw PackageError(path + ": unreadable or larger than " + std::to_string(max_bytes) + " bytes");
    case Read::NotRegular: throw PackageError(fileProblem(path).value_or(path + ": is not a regular file"));
    case Read::Unreadable: break;
    }
    throw PackageError(path + ": cannot be read");
}

std::optional<std::string> readRegularFileHead(const std::string& path, size_t max_bytes, bool follow_links) {
    std::string bytes;
    if (readRegular(path, max_bytes, /*head=*/true, follow_links, bytes) != Read::Ok) return std::nullopt;
    return bytes;
}

OpenedFile openRegularFile(const std::string& path) {
    requireFile(path);
    std::error_code ec;
    OpenedFile f;
    f.size = fs::file_size(path, ec);
    if (ec) throw PackageError(path + ": cannot read its size: " + ec.message());
    f.in.open(path, std::ios::binary);
    if (!f.in) throw PackageError(path + ": cannot be opened");
    return f;
}

}  // namespace attnlab::util
