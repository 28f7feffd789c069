#pragma once
// A folder of the Hugging Face cache opened once and written only through its descriptor, so that
// nobody else who can write to the cache (a lab's shared HF_HOME on a group-writable disk) can
// redirect a write of AttnLab's outside it:
// - every folder below the cache's own is opened component by component with O_NOFOLLOW (a link
//   planted for blobs/, refs/ or models--ORG--NAME is refused by name, never followed);
// - every file is made with openat(O_CREAT | O_EXCL | O_NOFOLLOW), temporaries under names nobody
//   can guess (128 random bits), and moved in with renameat, which replaces a name, never writes
//   through it;
// - a file that is resumed (a partial download) is opened with O_NOFOLLOW and must be a regular
//   file owned by this user; anything else is set aside (renamed beside it), never written.
// The cache's own folder (HF_HUB_CACHE, ~/.cache/huggingface/hub) is the user's to choose and is
// followed as given.
#include <cstddef>
#include <string>

struct stat;

namespace attnlab::hub {

// 32 random hex digits (getrandom): a temporary's name nobody can plant in advance.
std::string unguessableSuffix();

class CacheFolder {
public:
    // The cache's own folder, created when `create` (and missing). PackageError naming it otherwise.
    static CacheFolder openRoot(const std::string& cache_dir, bool create);
    CacheFolder(CacheFolder&& other) noexcept;
    CacheFolder& operator=(CacheFolder&& other) noexcept;
    CacheFolder(const CacheFolder&) = delete;
    CacheFolder& operator=(const CacheFolder&) = delete;
    ~CacheFolder();

    // The folder `relative` ("blobs", "refs/refs/pr", ".locks/models--a--b") below this one, each
    // component created when missing (mode 0777 less the umask, as huggingface_hub's os.makedirs)
    // and opened without following a link. PackageError naming the component that is a link or
    // not a folder.
    CacheFolder sub(const std::string& relative) const;

    int fd() const { return m_fd; }
    const std::string& path() const { return m_path; }
    std::string pathOf(const std::string& name) const { return m_path + "/" + name; }

    // A new regular file `name` here (O_EXCL: never an existing one, never through a link), open for
    // reading and writing; -1 with errno when it exists or cannot be made.
    int createExclusive(const std::string& name, int extra_flags = 0) const;
    // `bytes` as the file `name`, atomically: written to an unguessable temporary, synced, renamed
    // over `name` (a link or anything else there is replaced, nothing behind it written). PackageError.
    void replaceWith(const std::string& name, const std::string& bytes) const;
    // Renames `from` to `to` here, replacing `to` only when `replace`; false with errno set
    // (EEXIST when something is at `to` and !replace).
    bool rename(const std::string& from, const std::string& to, bool replace) const;
    // Moves `name` aside as "<name>.set-aside-<random>" and returns that name; PackageError when it
    // cannot be (then nothing may be written at `name` either).
    std::string setAside(const std::string& name, const std::string& why) const;
    // lstat of `name` here (links not followed); false when there is nothing.
    bool lstat(const std::string& name, struct stat& st) const;

private:
    CacheFolder(int fd, std::string path) : m_fd(fd), m_path(std::move(path)) {}
    int m_fd = -1;
    std::string m_path;
};

// What `st` is, when it is not a regular file owned by this user ("a symbolic link", "a FIFO",
// "owned by user 1001"); empty when it is one. For messages about a file that is set aside.
std::string notOwnRegularFile(const struct stat& st);

// Writes all of `bytes` to `fd`; 0, or the errno of the failure.
int writeAll(int fd, const char* data, size_t bytes);

// "cannot WHAT PATH: the system's reason" (with "the disk is full" for ENOSPC).
std::string systemError(const std::string& what, const std::string& path, int error);

}  // namespace attnlab::hub
