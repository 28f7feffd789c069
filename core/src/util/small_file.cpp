#include "util/small_file.h"

#include <attnlab/errors.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace attnlab::util {
namespace fs = std::filesystem;

std::string readSmallFile(const std::string& path, size_t max_bytes) {
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) throw PackageError(path + ": missing file");
    const auto size = fs::file_size(path, ec);
    if (ec || size > max_bytes)
        throw PackageError(path + ": unreadable or larger than " + std::to_string(max_bytes) + " bytes");
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    if (!in) throw PackageError(path + ": cannot be read");
    return ss.str();
}

OpenedFile openRegularFile(const std::string& path) {
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) throw PackageError(path + ": missing file");
    OpenedFile f;
    f.size = fs::file_size(path, ec);
    if (ec) throw PackageError(path + ": cannot read its size: " + ec.message());
    f.in.open(path, std::ios::binary);
    if (!f.in) throw PackageError(path + ": cannot be opened");
    return f;
}

}  // namespace attnlab::util
