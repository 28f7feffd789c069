#pragma once
// ProgressTracker: one download's HubProgress (attnlab/hub.h) summed over its files and handed to the user's
// callback, as hubSnapshot and an Argos package's download (argos_install.cpp) report it.
#include <attnlab/hub.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>

namespace attnlab::hub {

// Sums the files of one hubSnapshot call and calls the user's callback: at most every 100 ms
// while bytes arrive, and always at a file's start and end. False from it cancels.
class ProgressTracker {
public:
    explicit ProgressTracker(const HubProgressCallback& callback) : m_callback(callback) {}
    void addFile(int64_t size) {
        ++m_state.files_total;
        m_state.total += std::max<int64_t>(size, 0);
    }
    // False: cancel.
    bool startFile(const std::string& file, int64_t size, int64_t on_disk) {
        m_state.file = file;
        m_state.file_total = std::max<int64_t>(size, 0);
        m_file_base = m_state.done;
        m_resumed += on_disk;
        return update(on_disk, true);
    }
    bool poll() { return update(m_state.file_done, false); }
    // `file_done`: the file's bytes on disk now. False: cancel.
    bool update(int64_t file_done, bool force) {
        m_state.file_done = file_done;
        m_state.done = m_file_base + file_done;
        const std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now();
        if (!m_callback || (!force && now - m_last < std::chrono::milliseconds(100))) return true;
        m_last = now;
        const double seconds = std::chrono::duration<double>(now - m_start).count();
        const double transferred = double(m_state.done - m_resumed);
        m_state.bytes_per_second = seconds > 0 ? std::max(transferred, 0.0) / seconds : 0;
        m_state.seconds_left =
            m_state.bytes_per_second > 0 ? double(m_state.total - m_state.done) / m_state.bytes_per_second : -1;
        return m_callback(m_state);
    }
    bool endFile() {
        ++m_state.files_done;
        return update(m_state.file_done, true);
    }
    // Something the user should know (a file set aside), handed on once. False: cancel.
    bool notify(const std::string& notice) {
        if (notice.empty()) return true;
        m_state.notice = notice;
        const bool go_on = update(m_state.file_done, true);
        m_state.notice.clear();
        return go_on;
    }

private:
    const HubProgressCallback& m_callback;
    HubProgress m_state;
    int64_t m_file_base = 0;
    int64_t m_resumed = 0;  // bytes that were on disk before this call: not part of the rate
    std::chrono::steady_clock::time_point m_start = std::chrono::steady_clock::now();
    std::chrono::steady_clock::time_point m_last{};
};

}  // namespace attnlab::hub
