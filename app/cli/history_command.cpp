#include "history_command.h"

#include <attnlab/attention_history.h>
#include <attnlab/errors.h>
#include <attnlab/package.h>

#include <filesystem>
#include <iomanip>
#include <iostream>
#include <sstream>

namespace attnlab_cli {

namespace fs = std::filesystem;

void addHistory(CLI::App& app, HistoryCommand& h) {
    h.cmd = app.add_subcommand(
        "history", "Show a model's attention history (recorded with train --record-attention), or export it");
    h.cmd->add_option("-m,--model", h.model,
                      "Package, training run directory, bundled model (name or direction, e.g. en-de) or "
                      "attention_history.bin; default: the bundled model");
    h.cmd->add_option("--json", h.json_path, "Write every point with its figures and maps as JSON");
}

int runHistory(const HistoryCommand& h) {
    // A file is the history itself; anything else is what --model takes elsewhere: a folder, a
    // bundled model's name or its direction ("en-de").
    std::string path = fs::is_regular_file(h.model) ? h.model : resolveModel(h.model);
    if (fs::is_directory(path)) path = (fs::path(path) / attnlab::package_files::kAttentionHistory).string();
    if (!fs::exists(path))
        throw attnlab::InputError(path +
                                  ": missing: this model carries no attention history (train it with "
                                  "--record-attention)");
    const attnlab::AttentionHistory history = attnlab::readAttentionHistory(path);
    std::cout << history.points.size() << " points, " << history.probes.size() << " probe sentences, "
              << history.n_layers << " layers x " << history.n_head << " heads (" << path << ")\n"
              << std::setw(6) << "stage" << std::setw(9) << "step" << std::setw(7) << "epoch" << std::setw(12)
              << "train loss" << std::setw(12) << "valid loss" << std::setw(12) << "valid BLEU"
              << "\n";
    auto figure = [](double v) {
        std::ostringstream s;
        if (v < 0)
            s << "-";
        else
            s << std::fixed << std::setprecision(3) << v;
        return s.str();
    };
    for (const auto& p : history.points)
        std::cout << std::setw(6) << p.stage << std::setw(9) << p.step << std::setw(7) << p.epoch << std::setw(12)
                  << figure(p.train_loss) << std::setw(12) << figure(p.valid_loss) << std::setw(12)
                  << figure(p.valid_bleu) << "\n";
    if (!h.json_path.empty()) {
        attnlab::writeAttentionHistoryJson(h.json_path, history);
        std::cout << "wrote " << h.json_path << "\n";
    }
    return 0;
}

}  // namespace attnlab_cli
