#include <attnlab/errors.h>
#include <attnlab/run_layout.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

namespace attnlab::run_layout {
namespace fs = std::filesystem;

namespace {
constexpr const char* kEpochPrefix = "epoch-";
}

std::string epochCheckpointName(int epoch) {
    char name[32];
    std::snprintf(name, sizeof name, "%s%03d", kEpochPrefix, epoch);
    return name;
}

int epochOfCheckpointName(const std::string& name) {
    const std::string prefix = kEpochPrefix;
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return -1;
    const std::string digits = name.substr(prefix.size());
    if (digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) return -1;
    return std::stoi(digits);
}

std::vector<std::string> epochCheckpoints(const std::string& run_dir) {
    const fs::path dir = fs::path(run_dir) / kCheckpoints;
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
        throw InputError(dir.string() + ": missing directory (is " + run_dir + " a training run?)");
    std::vector<std::pair<int, std::string>> found;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
        const int epoch = epochOfCheckpointName(e.path().filename().string());
        if (epoch >= 0 && e.is_directory()) found.emplace_back(epoch, e.path().string());
    }
    if (ec) throw InputError(dir.string() + ": " + ec.message());
    std::sort(found.begin(), found.end());
    std::vector<std::string> out;
    for (auto& f : found) out.push_back(std::move(f.second));
    return out;
}

}  // namespace attnlab::run_layout
