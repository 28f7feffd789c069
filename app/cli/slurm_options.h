#pragma once
// --slurm N on the corpus commands (translate, eval, score, heads, align): the command written as a Slurm job
// of N shards and their merge (attnlab/slurm.h, docs/scale-out.md), submitted with --submit, instead of run here.
#include "cli_common.h"

#include <CLI/CLI.hpp>

#include <string>
#include <utility>
#include <vector>

namespace attnlab_cli {

struct SlurmOptions {
    int tasks = 0;                     // --slurm N; 0: the command runs here
    std::vector<std::string> options;  // --slurm-option KEY=VALUE, in order (they win over the file's)
    std::string options_file;          // --slurm-options FILE
    std::string folder;                // --slurm-dir; default: beside --json, <its stem>.slurm
    bool submit = false;               // --submit
    // Each corpus command and its --batch-size (nullptr: align, which has none), for the blocks a part is made of.
    std::vector<std::pair<const CLI::App*, const int*>> batch_sizes;
    bool requested() const {
        return tasks != 0 || submit || !options.empty() || !options_file.empty() || !folder.empty();
    }
};

// --slurm and its options on the corpus command `cmd`, whose --batch-size is `batch_size` (nullptr: it has none).
void addSlurm(CLI::App* cmd, SlurmOptions& s, const int* batch_size);
// Writes the job of the command `app` parsed (its arguments as given, argv), submits it with --submit, and
// prints what it did; the model is found first (a Hugging Face name downloaded into the shared cache once).
int runSlurm(const CommonOptions& common, const SlurmOptions& s, const CLI::App& app, int argc, char** argv);

}  // namespace attnlab_cli
