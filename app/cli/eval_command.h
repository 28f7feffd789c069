#pragma once
// attnlab-cli eval: translate a file and score it, corpus BLEU (sacreBLEU's default) and chrF; whole or a part
// (--shard K/N), the result as JSON with --json (attnlab/partial_result.h).
#include "cli_common.h"

#include <attnlab/decoding_options.h>

#include <CLI/CLI.hpp>

#include <string>

namespace attnlab_cli {

struct EvalCommand {
    CLI::App* cmd = nullptr;
    std::string src, ref, hyp_out;
    CorpusOutput corpus;
    attnlab::DecodingOptions decoding;
};
void addEval(CLI::App& app, CommonOptions& common, EvalCommand& e);
int runEval(const CommonOptions& common, EvalCommand& e);

}  // namespace attnlab_cli
