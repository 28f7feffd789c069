#include "util/atomic_file.h"

#include <attnlab/errors.h>
#include <attnlab/package.h>
#include <attnlab/version.h>

#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string_view>

namespace attnlab {
namespace fs = std::filesystem;

namespace {
std::string why(int err) { return std::strerror(err); }

// Closes a descriptor when it goes out of scope.
struct Fd {
    int fd = -1;
    explicit Fd(int f) : fd(f) {}
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    ~Fd() {
        if (fd >= 0) ::close(fd);
    }
    // close() reports write-back errors (NFS, a full disk): the one close whose result counts.
    int release() {
        const int r = ::close(fd);
        fd = -1;
        return r;
    }
};

fs::path parentOf(const fs::path& p) { return p.has_parent_path() ? p.parent_path() : fs::path("."); }

// Whether `p` lies in /proc (or /dev/fd), whose links (/dev/stdout, /proc/self/fd/1) are no paths
// but a process's open files: "pipe:[123]" as text. Such a file is opened where it is named.
bool isProcessFile(const fs::path& p) {
    const std::string s = p.lexically_normal().string();
    return s.rfind("/proc/", 0) == 0 || s.rfind("/dev/fd/", 0) == 0;
}

// The path a write to `path` lands on: symbolic links followed one by one (a relative target from
// the link's folder), so that the link itself stays. A dangling link gives its target's path. A
// link into /proc stops the walk (isProcessFile): the path is then its last link.
fs::path followLinks(const std::string& path) {
    fs::path p(path);
    for (int hops = 0; hops < 40; ++hops) {
        struct stat st {};
        if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode) || isProcessFile(p)) return p;
        std::error_code ec;
        const fs::path to = fs::read_symlink(p, ec);
        if (ec) throw InputError(path + ": cannot read the link " + p.string() + ": " + ec.message());
        p = to.is_absolute() ? to : parentOf(p) / to;
    }
    throw InputError(path + ": too many levels of symbolic links");
}

// "PATH" or "PATH (a link to TARGET)": what messages call the file.
std::string named(const std::string& path, const fs::path& target) {
    return target == fs::path(path) ? path : path + " (a link to " + target.string() + ")";
}

// Writes all of `bytes`; the errno of the first failure, or 0.
int writeAll(int fd, std::string_view bytes) {
    size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return n < 0 ? errno : EIO;
        done += static_cast<size_t>(n);
    }
    return 0;
}

std::string writeFailure(const std::string& name, int err) {
    std::string m = name + ": write failed: " + why(err);
    if (err == ENOSPC) m += " (the disk is full)";
    if (err == EDQUOT) m += " (the disk quota is used up)";
    return m;
}

// A device or a FIFO: written to directly, as a shell's `>` would. A FIFO is opened without
// waiting, so that one nobody reads is an error instead of a hang.
void writeDirectly(const std::string& name, const fs::path& target, bool fifo, const std::string& bytes) {
    Fd fd(::open(target.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY | (fifo ? O_NONBLOCK : 0)));
    if (fd.fd < 0) {
        if (fifo && errno == ENXIO) throw InputError(name + ": is a FIFO that no process is reading");
        throw InputError(name + ": cannot be opened for writing: " + why(errno));
    }
    if (fifo) ::fcntl(fd.fd, F_SETFL, ::fcntl(fd.fd, F_GETFL) & ~O_NONBLOCK);
    if (const int err = writeAll(fd.fd, bytes)) throw InputError(writeFailure(name, err));
    // fsync means nothing to most devices and FIFOs (EINVAL, EROFS); any other error counts.
    if (::fsync(fd.fd) != 0 && errno != EINVAL && errno != EROFS) throw InputError(writeFailure(name, errno));
    if (fd.release() != 0) throw InputError(writeFailure(name, errno));
}

// This process's descriptor N where `p` is /proc/self/fd/N or /dev/fd/N, else -1.
int ownDescriptor(const fs::path& p) {
    const std::string s = p.lexically_normal().string();
    const std::string prefixes[] = {"/proc/self/fd/", "/dev/fd/", "/proc/" + std::to_string(::getpid()) + "/fd/"};
    for (const std::string& prefix : prefixes) {
        if (s.rfind(prefix, 0) != 0) continue;
        const std::string digits = s.substr(prefix.size());
        if (!digits.empty() && digits.size() < 9 && digits.find_first_not_of("0123456789") == std::string::npos)
            return std::stoi(digits);
    }
    return -1;
}

// A file a process has open (/dev/stdout, /proc/self/fd/N: a terminal, a pipe, or a file the shell
// redirected to): written where it is, never replaced. This process's own descriptor is written
// through itself, so that the output lands where the process's other writes go; another
// process's open file is appended to.
void writeToOpenFile(const std::string& name, const fs::path& target, const std::string& bytes) {
    if (const int own = ownDescriptor(target); own >= 0) {
        if (const int err = writeAll(own, bytes)) throw InputError(writeFailure(name, err));
        return;
    }
    Fd fd(::open(target.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC | O_NOCTTY));
    if (fd.fd < 0) throw InputError(name + ": cannot be opened for writing: " + why(errno));
    if (const int err = writeAll(fd.fd, bytes)) throw InputError(writeFailure(name, err));
    if (fd.release() != 0) throw InputError(writeFailure(name, errno));
}

// A new file beside `target`, created exclusively under a hidden name of AttnLab's own, so that
// it can never be a user's file. Throws naming the folder's real problem.
std::pair<int, fs::path> createSibling(const std::string& name, const fs::path& target, mode_t mode) {
    const fs::path dir = parentOf(target);
    std::random_device rd;
    for (int attempt = 0; attempt < 100; ++attempt) {
        const fs::path tmp = dir / ("." + target.filename().string() + ".attnlab-" + std::to_string(::getpid()) + "-" +
                                    std::to_string(rd() % 1000000) + ".tmp");
        const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
        if (fd >= 0) return {fd, tmp};
        if (errno == EEXIST) continue;
        const int err = errno;
        struct stat st {};
        if (::stat(dir.c_str(), &st) != 0)
            throw InputError(
                name + ": cannot be written: the folder " + dir.string() +
                (errno == ENOENT || errno == ENOTDIR ? std::string(" does not exist") : ": " + why(errno)));
        if (!S_ISDIR(st.st_mode)) throw InputError(name + ": cannot be written: " + dir.string() + " is not a folder");
        if (err == EACCES || err == EROFS || err == EPERM) {
            const bool file_writable = ::access(target.c_str(), W_OK) == 0;
            throw InputError(name + ": cannot be written: the folder " + dir.string() + " is not writable (" +
                             why(err) + ")" +
                             (file_writable ? "; the file itself is, but AttnLab replaces a file by writing the new "
                                              "one beside it, so that a crash never leaves half a file"
                                            : ""));
        }
        throw InputError(name + ": cannot be written in " + dir.string() + ": " + why(err));
    }
    throw InputError(name + ": cannot be written: no free temporary name in " + dir.string());
}

void replaceAtomically(const std::string& name, const fs::path& target, const struct stat* existing,
                       const std::string& bytes) {
    // A new file gets 0666 less the umask, as any program's; an existing one keeps its mode.
    const mode_t mode = existing ? (existing->st_mode & 07777) : 0666;
    // Not a structured binding: C++17 lambdas cannot capture one (clang refuses, gcc allows it).
    const std::pair<int, fs::path> created = createSibling(name, target, mode);
    const fs::path& tmp = created.second;
    Fd fd(created.first);
    auto fail = [&](const std::string& message) {
        ::unlink(tmp.c_str());
        throw InputError(message);
    };
    if (existing) ::fchmod(fd.fd, mode);  // the umask applied at creation
    if (const int err = writeAll(fd.fd, bytes)) fail(writeFailure(name, err));
    if (::fsync(fd.fd) != 0) fail(writeFailure(name, errno));
    if (fd.release() != 0) fail(writeFailure(name, errno));
    if (::rename(tmp.c_str(), target.c_str()) != 0) fail(name + ": cannot be replaced: " + why(errno));
    Fd dir(::open(parentOf(target).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dir.fd >= 0) ::fsync(dir.fd);
}
}  // namespace

void saveToFile(const std::string& path, const std::string& bytes) {
    if (path.empty()) throw InputError("an empty file name cannot be written");
    const fs::path target = followLinks(path);
    const std::string name = named(path, target);
    if (isProcessFile(target)) return writeToOpenFile(name, target, bytes);
    struct stat st {};
    if (::stat(target.c_str(), &st) != 0) {
        if (errno != ENOENT && errno != ENOTDIR) throw InputError(name + ": cannot be examined: " + why(errno));
        replaceAtomically(name, target, nullptr, bytes);
    } else if (S_ISREG(st.st_mode)) {
        replaceAtomically(name, target, &st, bytes);
    } else if (S_ISDIR(st.st_mode)) {
        throw InputError(name + ": is a folder, not a file");
    } else if (S_ISSOCK(st.st_mode)) {
        throw InputError(name + ": is a socket, which cannot be written as a file");
    } else {
        writeDirectly(name, target, S_ISFIFO(st.st_mode), bytes);
    }
}

}  // namespace attnlab

namespace attnlab::util {
namespace fs = std::filesystem;

namespace {
const std::string kStagingInfix = ".attnlab-staging-";

void syncPath(const fs::path& p) {
    const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ::fsync(fd);
        ::close(fd);
    }
}

// nftw's callback with FTW_DEPTH: a directory comes after its contents, so remove() (unlink for a
// file or link, rmdir for a directory) finds it empty. Failures are skipped: the walk goes on.
int removeEntry(const char* path, const struct stat*, int, struct FTW*) {
    std::remove(path);
    return 0;
}

bool carriesMarker(const fs::path& dir) {
    struct stat st {};
    return ::lstat((dir / package_files::kWrittenByAttnlab).c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// The staging folder of writer `pid` for `target`: hidden, and named so no user's file matches.
fs::path stagingFolder(const fs::path& target, pid_t pid) {
    return target.parent_path() / ("." + target.filename().string() + kStagingInfix + std::to_string(pid));
}

// The process a staging folder's name says wrote it, or 0 when the name is not a staging name.
pid_t stagingWriter(const std::string& name) {
    const auto at = name.rfind(kStagingInfix);
    if (name.empty() || name[0] != '.' || at == std::string::npos) return 0;
    const std::string digits = name.substr(at + kStagingInfix.size());
    if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) return 0;
    return static_cast<pid_t>(std::stol(digits));
}

bool processRuns(pid_t pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

const std::string kLockSuffix = ".attnlab-lock";

fs::path lockPath(const fs::path& target) {
    return target.parent_path() / ("." + target.filename().string() + kLockSuffix);
}

bool isLockName(const std::string& name) {
    return name.size() > kLockSuffix.size() + 1 && name[0] == '.' &&
           name.compare(name.size() - kLockSuffix.size(), kLockSuffix.size(), kLockSuffix) == 0;
}

// The lock file of a writer that was killed (nobody holds it; empty, as every lock file is) is
// removed, under the lock, so that a target a resumed run never writes again keeps none.
void removeAbandonedLock(const fs::path& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size != 0) return;
    const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return;
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) ::unlink(path.c_str());
    ::close(fd);
}

// Holds the lock file beside a target while it is written (flock: released by the system when the
// process dies, so a killed writer never blocks the next one). Removed when done; a writer that
// locked a lock file another one removed meanwhile tries again, so two never both hold it.
class TargetLock {
public:
    explicit TargetLock(const fs::path& target) : m_path(lockPath(target)) {
        for (int attempt = 0; attempt < 10; ++attempt) {
            m_fd = ::open(m_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
            if (m_fd < 0)
                throw PackageError(target.string() + ": cannot create its lock file " + m_path.string() + ": " +
                                   why(errno));
            if (::flock(m_fd, LOCK_EX | LOCK_NB) != 0) {
                const int err = errno;
                ::close(m_fd);
                if (err == EWOULDBLOCK)
                    throw PackageError(
                        target.string() + ": another AttnLab process is writing this folder now (it holds " +
                        m_path.filename().string() + "); wait until it has finished, or choose another folder");
                throw PackageError(target.string() + ": cannot lock " + m_path.string() + ": " + why(err));
            }
            struct stat held {
            }, now{};
            if (::fstat(m_fd, &held) == 0 && ::stat(m_path.c_str(), &now) == 0 && held.st_ino == now.st_ino &&
                held.st_dev == now.st_dev)
                return;
            ::close(m_fd);  // removed by the writer before us: lock the new one
        }
        throw PackageError(target.string() + ": cannot lock " + m_path.string() + ": it keeps being replaced");
    }
    TargetLock(const TargetLock&) = delete;
    TargetLock& operator=(const TargetLock&) = delete;
    ~TargetLock() {
        ::unlink(m_path.c_str());
        ::close(m_fd);
    }

private:
    fs::path m_path;
    int m_fd = -1;
};

// Removes a staging folder with its marker last, so that a writer killed while removing it leaves
// one that still carries the marker (and so is removed by the next writer) or is gone.
void removeStaging(const fs::path& staged) {
    const fs::path marker = staged / package_files::kWrittenByAttnlab;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(staged, ec))
        if (e.path() != marker) removeTree(e.path().string());
    removeTree(staged.string());
}

// Puts the complete folder `staged` in place of `target`: exchanged in one step when `target`
// exists, so it is always a whole folder, old or new; the old one is then removed.
void replaceDirectory(const fs::path& staged, const fs::path& target) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(staged, ec)) syncPath(e.path());
    struct stat st {};
    if (::lstat(target.c_str(), &st) == 0) {
        if (::renameat2(AT_FDCWD, staged.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) != 0)
            throw PackageError(target.string() + ": cannot be replaced: " + why(errno));
        // `staged` is now the old folder. It carried the marker or was empty when the lock was
        // taken; a file put into the empty folder meanwhile is somebody's: the exchange is undone.
        std::error_code empty_ec;
        if (!carriesMarker(staged) && !fs::is_empty(staged, empty_ec)) {
            ::renameat2(AT_FDCWD, staged.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE);
            throw PackageError(target.string() +
                               ": files were put into it while the package was written; it was left as it is");
        }
        removeStaging(staged);
    } else if (::rename(staged.c_str(), target.c_str()) != 0) {
        throw PackageError(target.string() + ": cannot move the new package into place: " + why(errno));
    }
    syncPath(target.parent_path());
}

// Written in place (it is there from the first byte on), so that a writer killed right after
// making its staging folder leaves one that carries the marker or is empty.
void writeMarker(const fs::path& staged) {
    const std::string text = std::string("Written by AttnLab ") + version() +
                             ". AttnLab replaces this folder whole when it writes here again; a folder without this "
                             "file it never replaces.\n";
    NewFileWriter out((staged / package_files::kWrittenByAttnlab).string());
    out.write(text.data(), text.size());
    out.finish();
}
}  // namespace

void removeTree(const std::string& path) {
    if (path.empty()) return;
    ::nftw(path.c_str(), removeEntry, 16, FTW_DEPTH | FTW_PHYS);
}

namespace {
// whyNotReplaceable for the folder at `p`, called `target` in the message.
std::string problemReplacing(const fs::path& p, const std::string& target) {
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0)
        return errno == ENOENT || errno == ENOTDIR ? "" : target + ": cannot be examined: " + why(errno);
    if (!S_ISDIR(st.st_mode)) return target + ": exists and is not a folder";
    std::error_code ec;
    if (fs::is_empty(p, ec) || carriesMarker(p)) return "";
    return target + ": is a folder of other files, not a model package AttnLab wrote (it has no " +
           package_files::kWrittenByAttnlab + " file), so AttnLab will not replace it; choose a new or empty folder";
}
}  // namespace

std::string whyNotReplaceable(const std::string& target) { return problemReplacing(followLinks(target), target); }

void markWrittenByAttnlab(const std::string& folder) {
    if (!carriesMarker(folder)) writeMarker(folder);
}

void removeStaleStagingIn(const std::string& folder) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(folder, ec)) {
        const std::string name = e.path().filename().string();
        const pid_t writer = stagingWriter(name);
        if (writer > 0 && writer != ::getpid() && !processRuns(writer) && !fs::is_symlink(e.symlink_status())) {
            if (carriesMarker(e.path()))
                removeStaging(e.path());
            else
                ::rmdir(e.path().c_str());  // killed before its marker: removed only when empty
        } else if (isLockName(name)) {
            removeAbandonedLock(e.path());
        }
    }
}

std::string makeStagingFolderIn(const std::string& parent, const std::string& stem) {
    removeStaleStagingIn(parent);
    static const char kLetters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    std::random_device rd;
    for (int attempt = 0; attempt < 100; ++attempt) {
        std::string random(6, 'x');
        for (char& c : random) c = kLetters[rd() % (sizeof(kLetters) - 1)];
        const fs::path folder =
            fs::path(parent) / ("." + stem + "-" + random + kStagingInfix + std::to_string(::getpid()));
        if (::mkdir(folder.c_str(), 0700) != 0) {
            if (errno == EEXIST) continue;
            throw PackageError(parent + ": cannot make a folder in it: " + why(errno));
        }
        try {
            writeMarker(folder);
        } catch (...) {
            ::rmdir(folder.c_str());
            throw;
        }
        return folder.string();
    }
    throw PackageError(parent + ": cannot make a folder in it: every name tried exists");
}

void removeStagingFolder(const std::string& folder) { removeStaging(folder); }

namespace {
// The folder writeDirectory writes: `arg` without trailing separators, through its links, in its
// parent's real path (no "..", no linked parent left for the kernel to read otherwise than the
// check did). The parent is created.
fs::path resolveTarget(const std::string& arg) {
    std::string trimmed = arg;
    while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.pop_back();
    const fs::path p = followLinks(trimmed);
    const std::string name = p.filename().string();
    if (name.empty() || name == "." || name == ".." || name == "/")
        throw PackageError(arg + ": name the folder to write by its own name, not '.', '..' or '/'");
    const fs::path parent = parentOf(p);
    std::error_code ec;
    fs::create_directories(parent, ec);
    const fs::path real = ec ? fs::path() : fs::canonical(parent, ec);
    if (ec) throw PackageError(arg + ": cannot create its folder " + parent.string() + ": " + ec.message());
    return real / name;
}
}  // namespace

void writeDirectory(const std::string& target_arg, const std::function<void(const std::string& staged)>& fill) {
    const fs::path target = resolveTarget(target_arg);
    const TargetLock lock(target);
    if (const std::string problem = problemReplacing(target, target_arg); !problem.empty()) throw PackageError(problem);
    removeStaleStagingIn(target.parent_path().string());
    const fs::path staged = stagingFolder(target, ::getpid());
    if (::mkdir(staged.c_str(), 0755) != 0) {
        const int err = errno;
        struct stat st {};
        if (err != EEXIST || ::lstat(staged.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || !carriesMarker(staged))
            throw PackageError(staged.string() + ": cannot create the staging folder: " + why(err));
        removeStaging(staged);  // this process's own, left by a write that failed to clean up
        if (::mkdir(staged.c_str(), 0755) != 0)
            throw PackageError(staged.string() + ": cannot create the staging folder: " + why(errno));
    }
    try {
        writeMarker(staged);
        fill(staged.string());
        if (!carriesMarker(staged)) writeMarker(staged);  // a fill that copied over it
        replaceDirectory(staged, target);
    } catch (...) {
        removeStaging(staged);
        throw;
    }
}

}  // namespace attnlab::util

namespace attnlab::util {

NewFileWriter::NewFileWriter(const std::string& path) : m_path(path) {
    m_fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (m_fd < 0) throw PackageError(path + ": cannot be created: " + why(errno));
}

NewFileWriter::~NewFileWriter() {
    if (m_fd >= 0) ::close(m_fd);
}

void NewFileWriter::write(const void* data, size_t bytes) {
    if (const int err = writeAll(m_fd, std::string_view(static_cast<const char*>(data), bytes)))
        throw PackageError(writeFailure(m_path, err));
}

void NewFileWriter::finish() {
    if (::fsync(m_fd) != 0) throw PackageError(writeFailure(m_path, errno));
    const int r = ::close(m_fd);
    m_fd = -1;
    if (r != 0) throw PackageError(writeFailure(m_path, errno));
}

void copyFile(const std::string& from, const std::string& to) {
    Fd in(::open(from.c_str(), O_RDONLY | O_CLOEXEC));
    if (in.fd < 0) throw PackageError(from + ": cannot be read: " + why(errno));
    struct stat st {};
    if (::fstat(in.fd, &st) != 0 || !S_ISREG(st.st_mode)) throw PackageError(from + ": is not a regular file");
    NewFileWriter out(to);
    std::string buffer(1 << 20, '\0');
    for (;;) {
        const ssize_t n = ::read(in.fd, buffer.data(), buffer.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw PackageError(from + ": cannot be read: " + why(errno));
        if (n == 0) break;
        out.write(buffer.data(), static_cast<size_t>(n));
    }
    out.finish();
}

void copyFolderContents(const std::string& from, const std::string& to) {
    std::error_code ec;
    fs::directory_iterator it(from, ec), end;
    if (ec) throw PackageError(from + ": cannot be read: " + ec.message());
    for (; it != end; it.increment(ec)) {
        const fs::path dest = fs::path(to) / it->path().filename();
        if (it->is_directory(ec)) {
            if (!fs::exists(dest) && ::mkdir(dest.c_str(), 0755) != 0)
                throw PackageError(dest.string() + ": cannot be created: " + why(errno));
            copyFolderContents(it->path().string(), dest.string());
        } else {
            copyFile(it->path().string(), dest.string());
        }
    }
    if (ec) throw PackageError(from + ": cannot be read: " + ec.message());
}

}  // namespace attnlab::util
