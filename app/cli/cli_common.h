#pragma once
// What every attnlab-cli subcommand shares: the model options and loading, and progress on stderr.
#include <attnlab/head_lab.h>
#include <attnlab/translator.h>

#include <CLI/CLI.hpp>

#include <string>

namespace attnlab_cli {

struct CommonOptions {
    std::string model;
    std::string device = "auto";
    int threads = 0;
};

void addCommon(CLI::App* cmd, CommonOptions& o);
// --model as given, or the bundled default; throws InputError when there is none.
std::string resolveModel(const std::string& given);
attnlab::Translator load(const CommonOptions& o);

// "\r<stage> done/total" on stderr when it is a terminal (nothing otherwise); clear() erases it.
class ProgressLine {
public:
    ProgressLine();
    attnlab::CorpusCallback callback();
    void clear();

private:
    bool m_tty;
};

}  // namespace attnlab_cli
