// The program users call as attnlab-cli or attnlab (and bench_ui): it sets OMP_WAIT_POLICY=passive
// unless the user set a policy, then runs the real program beside it (<its own name>.real) in its
// place, same process, same arguments. docs/benchmarks.md, "Threads by measured work (issue 53)".
//
// Why a separate program: libgomp (LibTorch's, OpenBLAS-openmp's and oneDNN's OpenMP runtime here) reads
// OMP_WAIT_POLICY once, in its constructor, before main() (libgomp/env.c initialize_env), and a
// program's own code cannot run before it: an executable's .preinit_array runs first but before the C
// library has set `environ`, which it then overwrites (measured, glibc 2.36). Without a policy, waiting
// threads spin (GOMP_SPINCOUNT 300000) against whatever else holds the cores; passive makes them sleep
// (spin count 0). The real program re-running itself would load LibTorch twice (attnlab-cli --help:
// twice its ~0.7 s); this one loads nothing but the C library. Nothing here may need LibTorch or Qt.
//
// Where the real program is: beside this file as the kernel names it (/proc/self/exe, through any
// symbolic link it was called by: a link in ~/bin to an installed attnlab-cli works). Where no such file
// lies there (started through the dynamic loader, `ld-linux-x86-64.so.2 build/bin/attnlab-cli`, whose
// /proc/self/exe is the loader) or /proc/self/exe cannot be read, beside argv[0] when that is a path.
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <unistd.h>

namespace {
constexpr char kSuffix[] = ".real";

// Runs `<self>.real` (written to `tried`) in this process's place: returns only when that failed, errno
// saying why.
void runBeside(const char* self, char* const* argv, char* tried, size_t size) {
    const int n = std::snprintf(tried, size, "%s%s", self, kSuffix);
    if (n < 0 || size_t(n) >= size) {
        errno = ENAMETOOLONG;
        return;
    }
    execv(tried, argv);
}
}  // namespace

int main(int argc, char** argv) {
    setenv("OMP_WAIT_POLICY", "passive", 0);  // 0: a policy the user set wins
    // argv[0] is what the caller chose: a path, a bare name found on PATH, empty, or absent (argc 0, where
    // the real program gets its own path as argv[0]).
    const char* called = argc > 0 && argv[0] ? argv[0] : "";
    char tried[PATH_MAX] = "";
    char* const bare[] = {tried, nullptr};
    char* const* args = argc > 0 && argv[0] ? argv : bare;

    char self[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);  // not NUL-terminated
    const bool known = n > 0 && size_t(n) < sizeof self - 1;
    int why = n < 0 ? errno : ENAMETOOLONG;
    if (known) {
        self[n] = '\0';
        runBeside(self, args, tried, sizeof tried);
        why = errno;
    }
    if ((!known || why == ENOENT || why == ENOTDIR) && std::strchr(called, '/')) {
        runBeside(called, args, tried, sizeof tried);
        why = errno;
    }
    std::fprintf(stderr,
                 "%s: cannot run %s: %s (this program starts the program of its own name + %s, which must lie "
                 "beside it: copy or install the two together)\n",
                 *called ? called : "attnlab launcher", *tried ? tried : "/proc/self/exe + .real", std::strerror(why),
                 kSuffix);
    return 127;
}
