#pragma once
// Reading a small file whole (a package's JSON files), with the size bounded before reading.
#include <cstdint>
#include <fstream>
#include <string>

namespace attnlab::util {

// The bytes of `path`; throws PackageError "<path>: missing file" / "unreadable or larger than N"
// / "cannot be read".
std::string readSmallFile(const std::string& path, size_t max_bytes);

// A regular file opened for reading, with its size (the weight readers read it in parts); throws
// PackageError "<path>: missing file" / "cannot read its size: ..." / "cannot be opened".
struct OpenedFile {
    std::ifstream in;
    uint64_t size = 0;
};
OpenedFile openRegularFile(const std::string& path);

}  // namespace attnlab::util
