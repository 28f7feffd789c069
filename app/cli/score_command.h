#pragma once
// attnlab-cli score: the model's log-probability of each piece of given translations under teacher
// forcing (</s> included), and their mean, one line per pair; --attention writes the maps of those
// forced targets.
#include "cli_common.h"

#include <attnlab/decoding_options.h>

#include <CLI/CLI.hpp>

#include <string>

namespace attnlab_cli {

struct ScoreCommand {
    CLI::App* cmd = nullptr;
    std::string src, tgt, attention_path;
    CorpusOutput corpus;
    attnlab::DecodingOptions decoding;
};
void addScore(CLI::App& app, CommonOptions& common, ScoreCommand& s);
int runScore(const CommonOptions& common, ScoreCommand& s);

// "mean<TAB>piece=logp piece=logp ... </s>=logp" (6 decimals): one output line of `score`.
std::string scoreLine(const std::vector<std::string>& pieces, const std::vector<double>& log_probs);

}  // namespace attnlab_cli
