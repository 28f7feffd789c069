#include "util/small_file.h"

#include <attnlab/errors.h>

#include <fcntl.h>
#include <unistd.h>

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

std::string readSmallFile(const std::string& path, size_t max_bytes) {
    requireFile(path);
    std::error_code ec;
    const auto size = fs::file_size(path, ec);
    if (ec || size > max_bytes)
        throw PackageError(path + ": unreadable or larger than " + std::to_string(max_bytes) + " bytes");
    // Read into a string of the file's size: no stream's copy, whose growth doubled what it took.
    std::ifstream in(path, std::ios::binary);
    std::string bytes(size_t(size), '\0');
    in.read(bytes.data(), std::streamsize(size));
    if (!in || in.gcount() != std::streamsize(size)) throw PackageError(path + ": cannot be read");
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
