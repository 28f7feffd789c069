#pragma once
// Writing files and folders: the one place files and directories are written for a user and
// replaced, so that a crash or a kill at any moment leaves either the old or the new content,
// never a mixture, and nothing AttnLab did not create is ever deleted or replaced.
#include <attnlab/file_write.h>

#include <functional>
#include <string>

namespace attnlab::util {

// attnlab::saveToFile (attnlab/file_write.h): a regular file or new path replaced atomically, a
// link written through, a device or FIFO written directly.
using attnlab::saveToFile;

// Why the folder `target` may not be replaced by one AttnLab writes, as a sentence naming it;
// empty when it may: it does not exist, is an empty folder, or carries AttnLab's marker
// (package_files::kWrittenByAttnlab), which every folder writeDirectory makes has. Any other
// folder, a package copied by hand or a folder of a user's files that happens to hold a
// config.json, is never replaced.
std::string whyNotReplaceable(const std::string& target);

// Writes the folder `target` whole, the one way core writes a package:
// 1. `target` is resolved through symbolic links; its parent is created;
// 2. a lock file beside it (.NAME.attnlab-lock, flock) serialises writers of one target across
//    processes: the loser gets PackageError "another AttnLab process is writing …";
// 3. `target` must be replaceable (whyNotReplaceable), else PackageError;
// 4. staging folders of dead writers of this target (.NAME.attnlab-staging-PID, carrying the
//    marker) are removed; a sibling without the marker is never touched;
// 5. a staging folder is made, the marker written in it, `fill` writes the rest, and it is
//    exchanged with `target` in one step (renameat2 RENAME_EXCHANGE), the old folder removed.
// When `fill` or the replacement throws, the staging folder is removed, `target` is as it was,
// and the exception goes on. The lock file is removed when done.
void writeDirectory(const std::string& target, const std::function<void(const std::string& staged)>& fill);

// Puts the marker into `folder`: for folders AttnLab made before the marker existed (a run's
// checkpoints, which the checkpoint store adopts when it opens a run), never for a user's folder.
void markWrittenByAttnlab(const std::string& folder);

// Removes, in `folder`, the staging folders writeDirectory left when its process was killed
// (carrying the marker, named for a process that no longer runs). The checkpoint store calls it
// for names a resumed run never writes again.
void removeStaleStagingIn(const std::string& folder);

// A fresh folder in `parent` for this process's own use (an .argosmodel unpacked to be read),
// under writeDirectory's convention for staging: named .STEM-RANDOM.attnlab-staging-PID and carrying
// the marker before anything else is put into it, so that once its process is dead (killed while
// unpacking) removeStaleStagingIn(parent), which this calls first, removes it. Throws PackageError
// naming `parent`.
std::string makeStagingFolderIn(const std::string& parent, const std::string& stem);
// Removes a folder makeStagingFolderIn made, its marker last (a kill meanwhile leaves it marked).
void removeStagingFolder(const std::string& folder);

// A new file (inside a staging folder: a package's weights, its JSON) written piece by piece, so
// that every failure names the file and the system's reason ("No space left on device (the disk is
// full)"), never the source or a guess. Throws PackageError. finish() syncs and closes; a writer
// destroyed unfinished leaves its file for the staging folder's removal.
class NewFileWriter {
public:
    explicit NewFileWriter(const std::string& path);
    NewFileWriter(const NewFileWriter&) = delete;
    NewFileWriter& operator=(const NewFileWriter&) = delete;
    ~NewFileWriter();
    void write(const void* data, size_t bytes);
    void finish();

private:
    std::string m_path;
    int m_fd = -1;
};

// Copies the regular file `from` to the new path `to` (NewFileWriter): a read error names `from`,
// a write error (a full disk) names `to`. Throws PackageError.
void copyFile(const std::string& from, const std::string& to);

// Copies the folder `from` into the existing folder `to`, recursively (copyFile for each file;
// symbolic links are copied as what they point to). Throws PackageError naming the file.
void copyFolderContents(const std::string& from, const std::string& to);

// Removes `path` and, for a directory, everything in it; symbolic links are removed, never
// followed. Nothing happens when `path` does not exist; what cannot be removed stays. The one way
// core removes a tree: std::filesystem::remove_all walks with recursive_directory_iterator, and
// pip's LibTorch 2.5 and later exports a statically linked copy of that class's functions
// (pytorch/pytorch#133437), so a program linked against it can mix two libstdc++ versions'
// implementations in one walk: the crash of every second save into one folder on the GPU
// machines (docs/gpu.md), gone there with this. This uses POSIX nftw().
void removeTree(const std::string& path);

}  // namespace attnlab::util
