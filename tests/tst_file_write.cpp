// Writing what a user named (attnlab::saveToFile) and replacing a folder AttnLab wrote
// (util::writeDirectory): links written through, devices and FIFOs written directly, errors named
// with their real cause, and nothing AttnLab did not create ever replaced or deleted.
#include "fixtures.h"
#include "util/atomic_file.h"

#include <attnlab/errors.h>
#include <attnlab/file_write.h>
#include <attnlab/package.h>

#include <QtTest/QtTest>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <future>
#include <thread>

namespace fs = std::filesystem;
using attnlab::InputError;
using attnlab::PackageError;
using attnlab::saveToFile;
using attnlab::testing::messageOf;
using attnlab::testing::readFile;
using attnlab::testing::writeFile;

namespace {
mode_t modeOf(const std::string& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0 ? st.st_mode : 0;
}

std::vector<std::string> namesIn(const std::string& dir) {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

void fillPackage(const std::string& staged, const std::string& content) {
    writeFile(staged + "/config.json", content);
    fs::create_directories(staged + "/sub");
    writeFile(staged + "/sub/part.bin", content);
}
}  // namespace

class TestFileWrite : public QObject {
    Q_OBJECT
    QTemporaryDir m_tmp;
    std::string dir() const { return m_tmp.path().toStdString(); }

private Q_SLOTS:
    void regularFileReplacedKeepingItsMode();
    void neverTouchesAUserFileBesideIt();
    void symbolicLinksAreWrittenThrough();
    void devicesAndFifosAreWrittenDirectly();
    void errorsNameTheRealCause();
    void aWritableFileInAReadOnlyFolder();
    void folderOfUserFilesIsNeverReplaced();
    void siblingsThatLookLikeStagingAreKept();
    void folderAttnlabWroteIsReplacedWhole();
    void concurrentWritersAreSerialised();
    void deadWritersStagingIsRemovedOnlyWithTheMarker();
    void targetsAreNamedAsTheKernelReadsThem();
    void processFilesAreWrittenWhereTheyAre();
};

void TestFileWrite::regularFileReplacedKeepingItsMode() {
    const std::string p = dir() + "/out.json";
    saveToFile(p, "first");
    QCOMPARE(readFile(p), std::string("first"));
    ::chmod(p.c_str(), 0640);
    saveToFile(p, "second, longer");
    QCOMPARE(readFile(p), std::string("second, longer"));
    QCOMPARE(modeOf(p) & 07777, mode_t(0640));
    QVERIFY(S_ISREG(modeOf(p)));
    QCOMPARE(namesIn(dir()), std::vector<std::string>{"out.json"});  // no temporary file left
}

void TestFileWrite::neverTouchesAUserFileBesideIt() {
    // The names the old writer used for its temporary file (PATH.tmp-PID) and a staging folder
    // (PATH.tmp-*): a user's files of those names stay as they are.
    const std::string d = dir() + "/beside";
    fs::create_directories(d);
    const std::string p = d + "/attention.json", mine = p + ".tmp-" + std::to_string(::getpid());
    writeFile(mine, "my notes");
    saveToFile(p, "{}");
    QCOMPARE(readFile(mine), std::string("my notes"));
    QCOMPARE(readFile(p), std::string("{}"));
    QCOMPARE(namesIn(d).size(), size_t(2));
}

void TestFileWrite::symbolicLinksAreWrittenThrough() {
    const std::string d = dir() + "/links", other = dir() + "/elsewhere";
    fs::create_directories(d);
    fs::create_directories(other);
    writeFile(other + "/real.txt", "old");
    // An absolute link, a relative one, a chain of two and a dangling one.
    fs::create_symlink(other + "/real.txt", d + "/abs");
    fs::create_symlink("../elsewhere/real.txt", d + "/rel");
    fs::create_symlink("rel", d + "/chain");
    fs::create_symlink("../elsewhere/new.txt", d + "/dangling");
    saveToFile(d + "/abs", "one");
    QCOMPARE(readFile(other + "/real.txt"), std::string("one"));
    saveToFile(d + "/rel", "two");
    QCOMPARE(readFile(other + "/real.txt"), std::string("two"));
    saveToFile(d + "/chain", "three");
    QCOMPARE(readFile(other + "/real.txt"), std::string("three"));
    saveToFile(d + "/dangling", "four");
    QCOMPARE(readFile(other + "/new.txt"), std::string("four"));
    for (const char* link : {"abs", "rel", "chain", "dangling"}) QVERIFY(fs::is_symlink(d + "/" + link));
    // A loop of links is an error that says so.
    fs::create_symlink("loop-b", d + "/loop-a");
    fs::create_symlink("loop-a", d + "/loop-b");
    QVERIFY(
        messageOf<InputError>([&] { saveToFile(d + "/loop-a", "x"); }).contains("too many levels of symbolic links"));
}

void TestFileWrite::devicesAndFifosAreWrittenDirectly() {
    const std::string d = dir() + "/special";
    fs::create_directories(d);
    // /dev/full refuses every write: the error is reported, not success.
    QCOMPARE(messageOf<InputError>([] { saveToFile("/dev/full", "x"); }),
             QString("/dev/full: write failed: No space left on device (the disk is full)"));
    // A FIFO: what a reader reads is what was written, and the FIFO stays a FIFO.
    const std::string fifo = d + "/pipe";
    QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
    QCOMPARE(messageOf<InputError>([&] { saveToFile(fifo, "x"); }),
             QString::fromStdString(fifo + ": is a FIFO that no process is reading"));
    const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);  // a reader, never waiting
    QVERIFY(reader >= 0);
    saveToFile(fifo, "through the pipe");  // less than a pipe holds: written whole before it is read
    char got[64] = {};
    QCOMPARE(::read(reader, got, sizeof got), ssize_t(16));
    ::close(reader);
    QCOMPARE(std::string(got), std::string("through the pipe"));
    QVERIFY(S_ISFIFO(modeOf(fifo)));
    // A device node made here (a copy of /dev/null; making one needs root): written to, and it
    // stays a device. The old writer replaced it with a regular file.
    if (::geteuid() != 0) QSKIP("making a device node (mknod) needs root; the FIFO and /dev/full cases ran");
    const std::string null = d + "/null";
    QCOMPARE(::mknod(null.c_str(), S_IFCHR | 0666, makedev(1, 3)), 0);
    saveToFile(null, "discarded");
    QVERIFY(S_ISCHR(modeOf(null)));
    QCOMPARE(namesIn(d), (std::vector<std::string>{"null", "pipe"}));
}

void TestFileWrite::errorsNameTheRealCause() {
    QCOMPARE(messageOf<InputError>([&] { saveToFile(dir() + "/no/such/x.csv", "x"); }),
             QString::fromStdString(dir() + "/no/such/x.csv: cannot be written: the folder " + dir() +
                                    "/no/such does not exist"));
    fs::create_directories(dir() + "/a-folder");
    QCOMPARE(messageOf<InputError>([&] { saveToFile(dir() + "/a-folder", "x"); }),
             QString::fromStdString(dir() + "/a-folder: is a folder, not a file"));
    writeFile(dir() + "/plain", "x");
    QCOMPARE(messageOf<InputError>([&] { saveToFile(dir() + "/plain/x.csv", "x"); }),
             QString::fromStdString(dir() + "/plain/x.csv: cannot be written: " + dir() + "/plain is not a folder"));
    fs::create_symlink("/dev/full", dir() + "/full-link");
    QCOMPARE(
        messageOf<InputError>([&] { saveToFile(dir() + "/full-link", "x"); }),
        QString::fromStdString(dir() + "/full-link (a link to /dev/full): write failed: No space left on device (the "
                                       "disk is full)"));
}

void TestFileWrite::aWritableFileInAReadOnlyFolder() {
    // Root writes anywhere, so a child process that is not root tries (nobody's uid as root).
    const std::string d = dir() + "/read-only";
    fs::create_directories(d);
    writeFile(d + "/out.txt", "old");
    ::chmod((d + "/out.txt").c_str(), 0666);
    ::chmod(d.c_str(), 0555);
    ::chmod(dir().c_str(), 0755);
    int pipe_fd[2];
    QCOMPARE(::pipe(pipe_fd), 0);
    const pid_t child = ::fork();
    if (child == 0) {
        ::close(pipe_fd[0]);
        if (::geteuid() == 0 && ::setresuid(65534, 65534, 65534) != 0) ::_exit(3);
        if (::access(d.c_str(), X_OK) != 0) ::_exit(4);  // a temporary folder under a private one
        std::string message = "(no exception)";
        try {
            saveToFile(d + "/out.txt", "new");
        } catch (const InputError& e) {
            message = e.what();
        }
        (void)!::write(pipe_fd[1], message.data(), message.size());
        ::_exit(0);
    }
    ::close(pipe_fd[1]);
    std::string message;
    char buffer[512];
    for (ssize_t n; (n = ::read(pipe_fd[0], buffer, sizeof buffer)) > 0;) message.append(buffer, size_t(n));
    ::close(pipe_fd[0]);
    int status = 0;
    ::waitpid(child, &status, 0);
    ::chmod(d.c_str(), 0755);
    if (WEXITSTATUS(status) == 4) QSKIP("the temporary folder's parents are closed to other users (TMPDIR)");
    QCOMPARE(WEXITSTATUS(status), 0);
    QCOMPARE(QString::fromStdString(message),
             QString::fromStdString(d + "/out.txt: cannot be written: the folder " + d +
                                    " is not writable (Permission denied); the file itself is, but AttnLab "
                                    "replaces a file by writing the new one beside it, so that a crash never "
                                    "leaves half a file"));
    QCOMPARE(readFile(d + "/out.txt"), std::string("old"));
}

void TestFileWrite::folderOfUserFilesIsNeverReplaced() {
    // A folder with a config.json of somebody else's (an editor's settings), notes and photos: no
    // writer takes it for a package.
    const std::string mine = dir() + "/project";
    fs::create_directories(mine + "/photos");
    writeFile(mine + "/config.json", "{\"editor.fontSize\": 14}");
    writeFile(mine + "/notes.txt", "notes");
    writeFile(mine + "/photos/a.jpg", "jpeg");
    const QString message = messageOf<PackageError>(
        [&] { attnlab::util::writeDirectory(mine, [](const std::string& s) { fillPackage(s, "pkg"); }); });
    QVERIFY2(message.contains("project: is a folder of other files, not a model package AttnLab wrote (it has no "
                              ".attnlab-package file)"),
             qPrintable(message));
    QCOMPARE(readFile(mine + "/notes.txt"), std::string("notes"));
    QCOMPARE(readFile(mine + "/photos/a.jpg"), std::string("jpeg"));
    QCOMPARE(readFile(mine + "/config.json"), std::string("{\"editor.fontSize\": 14}"));
    for (const auto& name : namesIn(dir())) QVERIFY2(name.find("attnlab") == std::string::npos, name.c_str());
    QCOMPARE(QString::fromStdString(attnlab::whyNotReplaceable(mine)), message);
}

void TestFileWrite::siblingsThatLookLikeStagingAreKept() {
    const std::string d = dir() + "/siblings";
    fs::create_directories(d + "/pkg4.tmp-backup");
    fs::create_directories(d + "/pkg4.tmp-12345");
    writeFile(d + "/pkg4.tmp-backup/thesis.tex", "thesis");
    writeFile(d + "/pkg4.tmp-12345/data.csv", "data");
    attnlab::util::writeDirectory(d + "/pkg4", [](const std::string& s) { fillPackage(s, "pkg"); });
    QCOMPARE(readFile(d + "/pkg4.tmp-backup/thesis.tex"), std::string("thesis"));
    QCOMPARE(readFile(d + "/pkg4.tmp-12345/data.csv"), std::string("data"));
    QCOMPARE(namesIn(d), (std::vector<std::string>{"pkg4", "pkg4.tmp-12345", "pkg4.tmp-backup"}));
}

void TestFileWrite::folderAttnlabWroteIsReplacedWhole() {
    const std::string d = dir() + "/replace", target = d + "/pkg";
    attnlab::util::writeDirectory(target, [](const std::string& s) {
        fillPackage(s, "one");
        writeFile(s + "/only-in-one.txt", "1");
    });
    QVERIFY(fs::is_regular_file(target + "/" + attnlab::package_files::kWrittenByAttnlab));
    attnlab::util::writeDirectory(target, [](const std::string& s) { fillPackage(s, "two"); });
    QCOMPARE(readFile(target + "/sub/part.bin"), std::string("two"));
    QVERIFY(!fs::exists(target + "/only-in-one.txt"));
    QCOMPARE(namesIn(d), std::vector<std::string>{"pkg"});  // no staging folder, no lock file left
    // A fill that fails leaves the package as it was and nothing beside it.
    QCOMPARE(messageOf<PackageError>([&] {
                 attnlab::util::writeDirectory(target, [](const std::string& s) {
                     fillPackage(s, "three");
                     throw PackageError("disk gone");
                 });
             }),
             QString("disk gone"));
    QCOMPARE(readFile(target + "/config.json"), std::string("two"));
    QCOMPARE(namesIn(d), std::vector<std::string>{"pkg"});
    // Through a link to the package: the package is replaced, the link stays a link.
    fs::create_symlink("pkg", d + "/current");
    attnlab::util::writeDirectory(d + "/current", [](const std::string& s) { fillPackage(s, "four"); });
    QVERIFY(fs::is_symlink(d + "/current"));
    QCOMPARE(readFile(target + "/config.json"), std::string("four"));
}

void TestFileWrite::concurrentWritersAreSerialised() {
    // The first writer holds the target while it fills; a second one is refused at once with the
    // reason, and the first one's package is whole.
    const std::string d = dir() + "/concurrent", target = d + "/pkg";
    std::promise<void> filling, release;
    auto first = std::async(std::launch::async, [&] {
        attnlab::util::writeDirectory(target, [&](const std::string& s) {
            filling.set_value();
            release.get_future().wait();
            fillPackage(s, "first");
        });
    });
    filling.get_future().wait();
    const QString message = messageOf<PackageError>(
        [&] { attnlab::util::writeDirectory(target, [](const std::string& s) { fillPackage(s, "second"); }); });
    release.set_value();
    first.get();
    QVERIFY2(message.contains("pkg: another AttnLab process is writing this folder now (it holds .pkg.attnlab-lock); "
                              "wait until it has finished, or choose another folder"),
             qPrintable(message));
    QCOMPARE(readFile(target + "/config.json"), std::string("first"));
    QCOMPARE(namesIn(d), std::vector<std::string>{"pkg"});
}

void TestFileWrite::deadWritersStagingIsRemovedOnlyWithTheMarker() {
    // Processes that no longer run: children that exited.
    auto deadProcess = [] {
        const pid_t child = ::fork();
        if (child == 0) ::_exit(0);
        ::waitpid(child, nullptr, 0);
        return child;
    };
    const pid_t dead = deadProcess(), other = deadProcess();
    const std::string d = dir() + "/stale", stale = d + "/.pkg.attnlab-staging-" + std::to_string(dead),
                      foreign = d + "/.other.attnlab-staging-" + std::to_string(other);
    fs::create_directories(stale);
    fs::create_directories(foreign);
    writeFile(stale + "/" + attnlab::package_files::kWrittenByAttnlab, "");
    writeFile(stale + "/model.safetensors", "half");
    writeFile(foreign + "/mine.txt", "a user's folder that only looks like staging");
    attnlab::util::writeDirectory(d + "/pkg", [](const std::string& s) { fillPackage(s, "new"); });
    QVERIFY(!fs::exists(stale));
    QCOMPARE(readFile(foreign + "/mine.txt"), std::string("a user's folder that only looks like staging"));
}

void TestFileWrite::targetsAreNamedAsTheKernelReadsThem() {
    // A trailing '/' (tab completion adds one) names the folder itself.
    const std::string d = dir() + "/names";
    attnlab::util::writeDirectory(d + "/new/", [](const std::string& s) { fillPackage(s, "slash"); });
    QCOMPARE(readFile(d + "/new/config.json"), std::string("slash"));
    QCOMPARE(namesIn(d), std::vector<std::string>{"new"});
    // 'link/../pkg' through a linked folder is where the kernel reads it (beside the link's
    // target), and a user's folder there is refused, not replaced.
    fs::create_directories(d + "/deep/inner");
    fs::create_symlink(d + "/deep/inner", d + "/link");
    fs::create_directories(d + "/deep/pkg");
    writeFile(d + "/deep/pkg/notes.txt", "mine");
    QVERIFY(messageOf<PackageError>([&] {
                attnlab::util::writeDirectory(d + "/link/../pkg", [](const std::string& s) { fillPackage(s, "x"); });
            }).contains("is a folder of other files"));
    QCOMPARE(readFile(d + "/deep/pkg/notes.txt"), std::string("mine"));
    for (const char* bad : {"/.", "/.."})
        QVERIFY(messageOf<PackageError>([&] {
                    attnlab::util::writeDirectory(d + bad, [](const std::string& s) { fillPackage(s, "x"); });
                }).contains("name the folder to write by its own name"));
}

void TestFileWrite::processFilesAreWrittenWhereTheyAre() {
    // /dev/stdout when stdout is a file the shell opened: appended where the process writes, the
    // file not replaced (a rename would leave the shell's descriptor on a removed file).
    const std::string out = dir() + "/stdout.txt";
    const pid_t child = ::fork();
    if (child == 0) {
        const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        ::dup2(fd, STDOUT_FILENO);
        (void)!::write(STDOUT_FILENO, "before\n", 7);
        try {
            saveToFile("/dev/stdout", "json\n");
        } catch (...) {
            ::_exit(1);
        }
        (void)!::write(STDOUT_FILENO, "after\n", 6);
        ::_exit(0);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    QCOMPARE(WEXITSTATUS(status), 0);
    QCOMPARE(readFile(out), std::string("before\njson\nafter\n"));
}

QTEST_GUILESS_MAIN(TestFileWrite)
#include "tst_file_write.moc"
