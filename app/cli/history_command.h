#pragma once
// attnlab-cli history: a model's (or a training run's) attention history (attnlab/attention_history.h).
#include "cli_common.h"

#include <CLI/CLI.hpp>

#include <string>

namespace attnlab_cli {

struct HistoryCommand {
    CLI::App* cmd = nullptr;
    std::string model;      // a package, a run directory or the file itself
    std::string json_path;  // the export: header and a `points` list with their maps
};
void addHistory(CLI::App& app, HistoryCommand& h);
int runHistory(const HistoryCommand& h);

}  // namespace attnlab_cli
