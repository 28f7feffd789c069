#include "merge_command.h"

#include <attnlab/errors.h>
#include <attnlab/file_write.h>
#include <attnlab/partial_result.h>
#include <attnlab/terminal_text.h>
#include <attnlab/text_io.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>

namespace attnlab_cli {
namespace {
// The longest path a list line may hold (Linux's PATH_MAX), and the most lines: every part of the largest run
// (kMaxShards) and the importance chain's singles.json before them. Bounds what /dev/zero or a wrong file costs.
constexpr size_t kMostPathBytes = 4096;
constexpr size_t kMostListed = size_t(attnlab::kMaxShards) + 1;

// --parts-from LIST: a part's path a line (the Slurm job's merge writes it: slurm_job.cpp, mergeText); blank lines
// are skipped. Throws InputError naming the list and its line.
std::vector<std::string> listedParts(const std::string& list) {
    const int fd = open(list.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw attnlab::InputError(list + ": cannot open the list of parts: " + std::strerror(errno));
    std::vector<std::string> parts;
    try {
        attnlab::LineStream lines(fd, list + " (the list of parts)", kMostPathBytes);
        for (std::string line; lines.next(line, std::chrono::milliseconds(-1)) == attnlab::LineStream::Status::Line;) {
            if (line.find_first_not_of(" \t") == std::string::npos) continue;
            if (parts.size() == kMostListed)
                throw attnlab::InputError(list + ": more than " + std::to_string(kMostListed) +
                                          " parts listed (a run has at most " + std::to_string(attnlab::kMaxShards) +
                                          ")");
            parts.push_back(line);
        }
    } catch (...) {
        close(fd);
        throw;
    }
    close(fd);
    return parts;
}
}  // namespace

void addMerge(CLI::App& app, MergeCommand& m) {
    m.cmd = app.add_subcommand("merge",
                               "Put the parts of a corpus run (eval, score, translate, align, heads with --shard K/N "
                               "--json) together into the result of the whole run (docs/scale-out.md)");
    m.cmd->add_option("output", m.output, "The merged result (JSON)")->required();
    m.cmd->add_option("parts", m.parts, "Every part's --json file, in any order");
    m.cmd->add_option("--parts-from", m.parts_from,
                      "A file listing more parts, one path a line (blank lines skipped), read after those given: "
                      "what a Slurm job's merge passes, N parts being more than a command line holds");
}

int runMerge(const MergeCommand& m) {
    std::vector<std::string> parts = m.parts;
    if (!m.parts_from.empty()) {
        const auto listed = listedParts(m.parts_from);
        if (listed.empty()) throw attnlab::InputError(m.parts_from + ": the list of parts is empty");
        parts.insert(parts.end(), listed.begin(), listed.end());
    }
    if (parts.empty()) throw attnlab::ConfigError("merge: give the parts (PART.json..., or --parts-from LIST)");
    attnlab::saveToFile(m.output, attnlab::mergeCorpusResults(parts));
    std::cerr << "merged " << parts.size() << " part" << (parts.size() == 1 ? "" : "s") << " into "
              << attnlab::escapedForTerminal(m.output) << "\n";
    return 0;
}

}  // namespace attnlab_cli
