#pragma once
// attnlab-cli merge OUT.json PART.json...: the parts of a sharded corpus run (--shard K/N --json) put together
// (attnlab/partial_result.h, docs/scale-out.md).
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace attnlab_cli {

struct MergeCommand {
    CLI::App* cmd = nullptr;
    std::string output;
    std::vector<std::string> parts;
};
void addMerge(CLI::App& app, MergeCommand& m);
int runMerge(const MergeCommand& m);

}  // namespace attnlab_cli
