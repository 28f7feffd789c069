#include "toy_command.h"

#include <csignal>
#include <iomanip>
#include <iostream>

namespace attnlab_cli {

void addToy(CLI::App& app, ToyCommand& t) {
    t.cmd = app.add_subcommand("toy", "Train a small Transformer on a toy task (tokens 0-9) and print its accuracy");
    t.cmd->add_option("--task", t.task, "copy, reverse, sort, shift or swap")->capture_default_str();
    t.cmd->add_option("-o,--output", t.output, "The package to write (the run beside it: OUTPUT-run)")->required();
    t.cmd->add_option("--steps", t.options.steps, "Training steps")->capture_default_str();
    t.cmd->add_option("--seed", t.options.seed, "Random seed (data, weights, order)")->capture_default_str();
    t.cmd->add_option("--threads", t.options.threads, "LibTorch threads (0 = all cores)")->capture_default_str();
}

int runToy(ToyCommand& t) {
    t.options.task = attnlab::parseToyTask(t.task);
    t.options.output_dir = t.output + "-run";
    t.options.package_dir = t.output;
    const auto r = attnlab::trainToy(t.options, [](const attnlab::TrainingProgress& p) {
        if (!p.message.empty())
            std::cerr << p.message << "\n";
        else
            std::cerr << "step " << p.step << "  loss " << std::fixed << std::setprecision(3) << p.loss << "  "
                      << std::setprecision(0) << p.target_tokens_per_second << " tok/s\n";
    });
    std::cout << "toy " << t.task << ": " << r.training.steps << " steps in " << std::fixed << std::setprecision(1)
              << r.training.seconds << " s; exact match on " << r.evaluated
              << " fresh sequences: " << std::setprecision(1) << 100.0 * r.accuracy
              << " %\npackage: " << r.training.package_dir << "\n";
    return 0;
}

}  // namespace attnlab_cli
