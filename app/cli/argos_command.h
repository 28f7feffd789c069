#pragma once
// attnlab-cli argos list | install PAIR | remove PAIR: the Argos Translate package index and argos-translate's
// packages folder (attnlab/argos_index.h), as argospm does it.
#include <CLI/CLI.hpp>

#include <string>

namespace attnlab_cli {

struct ArgosCommand {
    CLI::App* cmd = nullptr;
    CLI::App* list = nullptr;
    CLI::App* install = nullptr;
    CLI::App* remove = nullptr;
    std::string search;  // list --search LANGUAGE
    bool installed_only = false;
    std::string name;  // install / remove: "en-de" or a package's code or folder
    bool replace = false;
};
void addArgos(CLI::App& app, ArgosCommand& a);
int runArgos(const ArgosCommand& a);

}  // namespace attnlab_cli
