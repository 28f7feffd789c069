#pragma once
// Reading a small file whole (a package's JSON files), with the size bounded before reading.
#include <string>

namespace attnlab::util {

// The bytes of `path`; throws PackageError "<path>: missing file" / "unreadable or larger than N"
// / "cannot be read".
std::string readSmallFile(const std::string& path, size_t max_bytes);

}  // namespace attnlab::util
