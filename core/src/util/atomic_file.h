#pragma once
// Atomic writes: the one place files and directories are replaced, so that a crash or a kill at
// any moment leaves either the old or the new content, never a mixture.
#include <functional>
#include <string>

namespace attnlab::util {

// Writes `bytes` to `path`: a sibling temporary file, flushed and synced, renamed over `path`.
// Throws InputError naming the path (missing directory, disk full).
void saveToFile(const std::string& path, const std::string& bytes);

// Puts the complete directory `staged` in place of `target`. When `target` exists the two are
// exchanged in one step (renameat2 RENAME_EXCHANGE), so `target` is always a whole directory, old
// or new; the old one is then removed. Throws PackageError.
void replaceDirectory(const std::string& staged, const std::string& target);

// Writes the directory `target` whole: creates its parent, an empty staging directory beside it
// (stagingPath, after removing stale ones), lets `fill` write into that, then puts it in place of
// `target` (replaceDirectory). When `fill` or the replacement throws, the staging directory is
// removed, `target` is as it was, and the exception goes on. The one way core writes a package.
void writeDirectory(const std::string& target, const std::function<void(const std::string& staged)>& fill);

// The staging name for `target` of this process, and removal of the ones that writers killed
// mid-write left behind (`<target>.tmp-<pid>`).
std::string stagingPath(const std::string& target);
void removeStaleStaging(const std::string& target);

// Removes `path` and, for a directory, everything in it; symbolic links are removed, never
// followed. Nothing happens when `path` does not exist; what cannot be removed stays. The one way
// core removes a tree: std::filesystem::remove_all walks with recursive_directory_iterator, and
// pip's LibTorch 2.5 and later exports a statically linked copy of that class's functions
// (pytorch/pytorch#133437), so a program linked against it can mix two libstdc++ versions'
// implementations in one walk: the crash of every second save into one folder on the GPU
// machines (docs/gpu.md), gone there with this. This uses POSIX nftw().
void removeTree(const std::string& path);

}  // namespace attnlab::util
