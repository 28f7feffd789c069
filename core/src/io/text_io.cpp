// The public face of the corpus reader (attnlab-cli eval reads its files through it), and lines
// of a stream as they arrive (attnlab-cli translate's stdin).
#include <attnlab/errors.h>
#include <attnlab/text_io.h>

#include "data/corpus.h"

#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace attnlab {

std::vector<std::string> readTextLines(const std::string& path) { return data::readLines(path); }

LineStream::LineStream(int fd, std::string name, size_t max_line_bytes)
    : m_fd(fd), m_name(std::move(name)), m_max(max_line_bytes) {
    struct stat st {};
    if (fstat(m_fd, &st) != 0) fail(errno);
    if (S_ISDIR(st.st_mode)) fail(EISDIR);  // what read() would say, said before a model is loaded
}

void LineStream::fail(int error) const { throw InputError(m_name + ": cannot read: " + std::strerror(error)); }

bool LineStream::takeLine(std::string& line) {
    const size_t newline = m_buffer.find('\n', m_begin + m_scanned);
    const bool whole = newline != std::string::npos;
    const size_t end = whole ? newline : m_buffer.size();
    if (end - m_begin > m_max)
        throw InputError(m_name + " line " + std::to_string(m_line + 1) + ": longer than " + std::to_string(m_max) +
                         " bytes" + (whole ? "" : " without a line break") + "; at most " + std::to_string(m_max) +
                         " are read as one line");
    if (!whole && !(m_end && end > m_begin)) {
        m_scanned = end - m_begin;
        return false;
    }
    line.assign(m_buffer, m_begin, end - m_begin);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    m_begin = whole ? end + 1 : end;
    m_scanned = 0;
    ++m_line;
    return true;
}

bool LineStream::wait(std::chrono::steady_clock::time_point deadline, bool without_limit) {
    for (;;) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        pollfd p{m_fd, POLLIN, 0};
        const int ready = poll(&p, 1, without_limit ? -1 : int(std::max<int64_t>(left.count(), 0)));
        if (ready > 0) return true;  // readable, at its end, or in error: read() says which
        if (ready == 0) return false;
        if (errno != EINTR) fail(errno);
    }
}

void LineStream::readMore() {
    m_buffer.erase(0, m_begin);  // once per read, not per line
    m_begin = 0;
    char chunk[1 << 16];
    for (;;) {
        const ssize_t n = ::read(m_fd, chunk, sizeof chunk);
        if (n > 0) {
            m_buffer.append(chunk, size_t(n));
            return;
        }
        if (n == 0) {
            m_end = true;
            return;
        }
        if (errno == EAGAIN) {  // a non-blocking descriptor: wait until it has something
            wait({}, true);
            continue;
        }
        if (errno != EINTR) fail(errno);
    }
}

LineStream::Status LineStream::next(std::string& line, std::chrono::milliseconds timeout) {
    const bool without_limit = timeout.count() < 0;
    const auto deadline = std::chrono::steady_clock::now() + (without_limit ? std::chrono::milliseconds(0) : timeout);
    for (;;) {
        if (takeLine(line)) return Status::Line;
        if (m_end) return Status::End;
        if (!wait(deadline, without_limit)) return Status::Timeout;
        readMore();
    }
}

}  // namespace attnlab
