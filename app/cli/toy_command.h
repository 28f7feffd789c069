#pragma once
// attnlab-cli toy: a small Transformer trained on a toy task (attnlab/toy.h), its accuracy printed.
#include <attnlab/toy.h>

#include <CLI/CLI.hpp>

#include <string>

namespace attnlab_cli {

struct ToyCommand {
    CLI::App* cmd = nullptr;
    std::string task = "reverse";
    std::string output;
    attnlab::ToyOptions options;
};
void addToy(CLI::App& app, ToyCommand& t);
int runToy(ToyCommand& t);

}  // namespace attnlab_cli
