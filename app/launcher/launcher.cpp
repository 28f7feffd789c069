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
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <unistd.h>

int main(int, char** argv) {
    setenv("OMP_WAIT_POLICY", "passive", 0);  // 0: a policy the user set wins
    char real[PATH_MAX];
    const char suffix[] = ".real";
    const ssize_t n = readlink("/proc/self/exe", real, sizeof real - sizeof suffix);
    if (n <= 0 || size_t(n) >= sizeof real - sizeof suffix) {
        std::fprintf(stderr, "%s: cannot tell where this program is (/proc/self/exe): %s\n", argv[0],
                     n < 0 ? std::strerror(errno) : "path too long");
        return 127;
    }
    std::memcpy(real + n, suffix, sizeof suffix);
    execv(real, argv);  // returns only when it failed
    std::fprintf(stderr, "%s: cannot run %s: %s\n", argv[0], real, std::strerror(errno));
    return 127;
}
