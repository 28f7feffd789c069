#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace attnlab {
// All lines of a text file, plain or gzip-compressed; throws InputError naming the file.
std::vector<std::string> readTextLines(const std::string& path);

// The longest line a LineStream hands over: 1 MiB (16 times the longest sentence the translator
// accepts, so that a long sentence is still refused by the translator with its own message).
inline constexpr size_t kMaxStreamLineBytes = size_t(1) << 20;

// Lines of a stream (attnlab-cli translate's stdin) as they arrive: a line is handed over as soon as
// its newline (or the stream's end) has been read, without waiting for more input, and without a
// trailing '\r'. Memory is bounded: no line longer than max_line_bytes is held (InputError naming
// the line), and at most 64 KiB more is read ahead. Every read error is an InputError naming the
// stream and the system's reason: never taken for the end. Not thread-safe.
class LineStream {
public:
    enum class Status { Line, Timeout, End };
    // Checks the descriptor at once (a closed one: EBADF; a directory: EISDIR), before anything
    // else is done.
    LineStream(int fd, std::string name, size_t max_line_bytes = kMaxStreamLineBytes);
    // The next line into `line`, waiting at most `timeout` for it (negative: as long as it takes).
    Status next(std::string& line, std::chrono::milliseconds timeout);
    // 1-based number of the last line handed over.
    int64_t lineNumber() const { return m_line; }

private:
    [[noreturn]] void fail(int error) const;
    bool takeLine(std::string& line);
    bool wait(std::chrono::steady_clock::time_point deadline, bool without_limit);
    void readMore();

    int m_fd;
    std::string m_name;
    size_t m_max;
    std::string m_buffer;  // read, not yet handed over from m_begin on
    size_t m_begin = 0;
    size_t m_scanned = 0;  // bytes from m_begin known to hold no newline
    bool m_end = false;
    int64_t m_line = 0;
};
}  // namespace attnlab
