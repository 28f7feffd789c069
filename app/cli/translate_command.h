#pragma once
// attnlab-cli translate: sentences from --text, or from stdin as they arrive (docs/reliability.md,
// "stdin streams").
#include "cli_common.h"

#include <attnlab/decoding_options.h>

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace attnlab_cli {

struct TranslateCommand {
    CLI::App* cmd = nullptr;
    attnlab::DecodingOptions decoding;
    std::vector<std::string> texts;
    std::string attention_path;
    std::vector<std::string> maps;           // --maps: which maps the attention JSON holds besides the weights
    std::vector<std::string> contributions;  // --contributions: methods (attnlab/contributions.h) the JSON holds
    std::string trace_path;
    std::string ablate;
    bool scores = false;
    bool logit_lens = false;  // --logit-lens: each sentence's "logit_lens" in the attention JSON
    std::string contrast;     // --contrast STEP:PIECE: each sentence's "contrastive" in the attention JSON
    // --from / --to: the languages, the route among the installed models chosen for them
    // (attnlab/route.h); empty = --model.
    std::string from, to;
    CorpusOutput corpus;  // --shard K/N, --json FILE: the input read whole, then its part translated
};

void addTranslate(CLI::App& app, CommonOptions& common, TranslateCommand& t);
int runTranslate(const CommonOptions& common, const TranslateCommand& t);

}  // namespace attnlab_cli
