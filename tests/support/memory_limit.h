#pragma once
// A test's piece run under an address-space limit (setrlimit RLIMIT_AS): what the process maps
// now plus `headroom`; the soft limit is put back when it goes out of scope. A reader that
// allocates far beyond its input then fails with bad_alloc instead of taking the machine's memory,
// so a test that expects its message fails on such a reader.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <fstream>

class AddressSpaceLimit {
public:
    explicit AddressSpaceLimit(uint64_t headroom) {
        getrlimit(RLIMIT_AS, &m_old);
        rlimit lower = m_old;
        const uint64_t wanted = mappedNow() + headroom;
        lower.rlim_cur = m_old.rlim_max == RLIM_INFINITY ? rlim_t(wanted) : std::min(rlim_t(wanted), m_old.rlim_max);
        m_active = setrlimit(RLIMIT_AS, &lower) == 0;
    }
    ~AddressSpaceLimit() { setrlimit(RLIMIT_AS, &m_old); }
    AddressSpaceLimit(const AddressSpaceLimit&) = delete;
    AddressSpaceLimit& operator=(const AddressSpaceLimit&) = delete;
    bool active() const { return m_active; }

    // The process's address space now (/proc/self/statm's first field, in pages).
    static uint64_t mappedNow() {
        std::ifstream in("/proc/self/statm");
        uint64_t pages = 0;
        in >> pages;
        return pages * uint64_t(sysconf(_SC_PAGESIZE));
    }

private:
    rlimit m_old{};
    bool m_active = false;
};
