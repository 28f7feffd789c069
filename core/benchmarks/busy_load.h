#pragma once
// Busy processes for the benchmarks' "under load" figures (issue 25): a desktop that is doing other
// things too, as two shell loops (`while :; do :; done`) did in the measurement. Each is a
// child spinning on one core; it dies with the benchmark (PR_SET_PDEATHSIG) and on its own after
// `max_seconds` (alarm), so a crashed or interrupted benchmark never leaves one behind. Header-only,
// std and POSIX: bench_decoding (core) and bench_ui (app) both include it.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <vector>

namespace attnlab::bench {

class BusyLoad {
public:
    explicit BusyLoad(int processes, unsigned max_seconds = 600) {
        const pid_t parent = getpid();
        for (int i = 0; i < processes; ++i) {
            // The child makes only async-signal-safe calls (fork in a multi-threaded benchmark).
            const pid_t pid = fork();
            if (pid == 0) {
                prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (getppid() != parent) _exit(0);  // the benchmark died before prctl took effect
                alarm(max_seconds);
                volatile unsigned long spin = 0;
                for (;;) spin = spin + 1;
            }
            if (pid > 0) m_children.push_back(pid);
        }
    }
    ~BusyLoad() {
        for (pid_t pid : m_children) kill(pid, SIGKILL);
        for (pid_t pid : m_children) waitpid(pid, nullptr, 0);
    }
    BusyLoad(const BusyLoad&) = delete;
    BusyLoad& operator=(const BusyLoad&) = delete;
    int started() const { return int(m_children.size()); }

private:
    std::vector<pid_t> m_children;
};

}  // namespace attnlab::bench
