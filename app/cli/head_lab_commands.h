#pragma once
// attnlab-cli heads / align: the head lab from the command line (attnlab/head_lab.h).
#include "cli_common.h"

#include <attnlab/decoding_options.h>

#include <CLI/CLI.hpp>

#include <string>

namespace attnlab_cli {

struct HeadsCommand {
    CLI::App* cmd = nullptr;
    std::string src, ref, json_path, csv_path, kinds, compare_model, measure = "weights";
    std::string shard_by = "lines", importance_singles;  // --importance split (attnlab/importance_parts.h)
    bool importance = false, gradient = false, compare_reversed = false;
    int radius = 8;
    int bootstrap = 1000;
    int curve_step = 8;
    int limit = 0;
    int workers = 2;
    CorpusOutput corpus;  // --shard (its --json is json_path)
    attnlab::DecodingOptions decoding;
};
void addHeads(CLI::App& app, CommonOptions& common, HeadsCommand& h);
int runHeads(const CommonOptions& common, const HeadsCommand& h);

struct AlignCommand {
    CLI::App* cmd = nullptr;
    std::string src, tgt, gold, method = "all", output, json_path, reverse_model;
    std::vector<std::string> dev;  // SRC TGT GOLD of a development set, or empty
    bool one_indexed = false, reversed = false, no_reverse = false;
    double threshold = 0.0;
    int batch_size = attnlab::DecodingOptions{}.max_batch_size;  // pairs teacher-forced together
    CorpusOutput corpus;                                         // --shard (its --json is json_path)
    attnlab::DecodingOptions languages;                          // --src-lang / --tgt-lang (a multilingual model's)
};
void addAlign(CLI::App& app, CommonOptions& common, AlignCommand& a);
int runAlign(const CommonOptions& common, const AlignCommand& a);

}  // namespace attnlab_cli
