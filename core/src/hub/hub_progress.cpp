#include <attnlab/hub_progress.h>

#include <algorithm>
#include <cstdio>

namespace attnlab {

std::string byteSizeText(int64_t bytes) {
    char b[32];
    const double v = double(std::max<int64_t>(bytes, 0));
    if (v < 1e6)
        std::snprintf(b, sizeof b, "%.0f kB", v / 1e3);
    else if (v < 1e9)
        std::snprintf(b, sizeof b, "%.1f MB", v / 1e6);
    else
        std::snprintf(b, sizeof b, "%.2f GB", v / 1e9);
    return b;
}

std::string describeHubProgress(const HubProgress& p) {
    if (p.files_total == 0) return "Asking which files the model has…";
    // a total of 0: no size was said (an Argos index without "size"): what arrived so far
    std::string line = (p.file.empty() ? std::string() : p.file + " · ") + byteSizeText(p.done) +
                       (p.total > 0 ? " of " + byteSizeText(p.total) : " so far");
    if (p.bytes_per_second > 0) line += " · " + byteSizeText(int64_t(p.bytes_per_second)) + "/s";
    if (p.seconds_left >= 0) {
        const long s = long(p.seconds_left + 0.5);
        char left[48];
        std::snprintf(left, sizeof left, " · %ld:%02ld left", s / 60, s % 60);
        line += left;
    }
    return line + " · file " + std::to_string(std::min(p.files_done + 1, p.files_total)) + " of " +
           std::to_string(p.files_total);
}

}  // namespace attnlab
