#pragma once
// A model directory's files: what stands where a regular file is expected, and reading a small
// file whole (a package's JSON files) with its size bounded before reading.
#include <cstdint>
#include <fstream>
#include <optional>
#include <string>

namespace attnlab::util {

// What is wrong with `path` where a regular, readable file is expected, as "<path>: <what>":
// "missing file", "is a folder, not a file", "is a FIFO, not a regular file" (a device, a
// socket likewise), "is a symbolic link to <target>, which does not exist", "cannot be read:
// Permission denied"; nothing when it is a regular file that opens for reading.
[[nodiscard]] std::optional<std::string> fileProblem(const std::string& path);

// Throws PackageError(fileProblem(path)) when there is one.
void requireFile(const std::string& path);

// For a file a directory may leave out (generation_config.json): false when nothing is at
// `path`; true for a readable regular file; throws PackageError(fileProblem(path)) for anything
// else there (a folder, a FIFO, a dangling link, an unreadable file) rather than ignoring it.
bool optionalFilePresent(const std::string& path);

// The bytes of `path`; throws PackageError with fileProblem(path), or "unreadable or larger than
// N bytes" / "cannot be read". The file is opened without blocking and must still be a regular file
// of at most `max_bytes` once open (a FIFO swapped in after the check never hangs the read).
std::string readSmallFile(const std::string& path, size_t max_bytes);

// At most the first `max_bytes` of `path` when it is a regular file (opened O_NONBLOCK; a link not
// followed unless `follow_links`); nothing when it is missing, not a regular file or unreadable. For
// the small files that may be absent or planted (a cache's refs, a token file): never an error.
std::optional<std::string> readRegularFileHead(const std::string& path, size_t max_bytes, bool follow_links = true);

// A regular file opened for reading, with its size (the weight readers read it in parts); throws
// PackageError with fileProblem(path), or "cannot read its size: ..." / "cannot be opened".
struct OpenedFile {
    std::ifstream in;
    uint64_t size = 0;
};
OpenedFile openRegularFile(const std::string& path);

}  // namespace attnlab::util
