#pragma once
// attnlab-cli merge OUT.json PART.json... [--parts-from LIST]: the parts of a sharded corpus run (--shard K/N --json)
// put together (attnlab/partial_result.h, docs/scale-out.md).
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace attnlab_cli {

struct MergeCommand {
    CLI::App* cmd = nullptr;
    std::string output;
    std::vector<std::string> parts;
    std::string parts_from;  // a file of more parts' paths, one a line
};
void addMerge(CLI::App& app, MergeCommand& m);
int runMerge(const MergeCommand& m);

}  // namespace attnlab_cli
