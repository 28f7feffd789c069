#include "training/model_card.h"

#include <attnlab/config_fields.h>
#include <attnlab/package.h>
#include <attnlab/run_layout.h>

#include <ATen/Parallel.h>

#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>

namespace attnlab::training {
namespace fs = std::filesystem;

namespace {
std::string fixed(double v, int prec) {
    std::ostringstream s;
    s << std::fixed << std::setprecision(prec) << v;
    return s.str();
}

std::string hardware() {
    std::ifstream cpu("/proc/cpuinfo");
    std::string line, model;
    int cores = 0;
    while (std::getline(cpu, line)) {
        if (line.rfind("model name", 0) == 0 && model.empty()) model = line.substr(line.find(':') + 2);
        if (line.rfind("processor", 0) == 0) ++cores;
    }
    return (model.empty() ? std::string("unknown CPU") : model) + ", " + std::to_string(cores) + " logical cores, " +
           std::to_string(at::get_num_threads()) + " LibTorch threads";
}

// A model card names data by file name: a local absolute path means nothing to its readers.
std::string fileName(const std::string& path) { return "`" + fs::path(path).filename().string() + "`"; }
// A package by its name: a run's package folder (RUN/model) is named after its run.
std::string packageName(const std::string& path) {
    fs::path p = fs::path(path).lexically_normal();
    if (p.filename().empty()) p = p.parent_path();
    if (p.filename() == run_layout::kFinalPackage && p.has_parent_path()) p = p.parent_path();
    return "`" + p.filename().string() + "`";
}

// The command line with every absolute path reduced to its last component (a card is read on
// other machines).
std::string portableCommand(const std::string& command) {
    std::istringstream in(command);
    std::string word, out;
    while (in >> word) {
        if (word.size() > 1 && word[0] == '/') word = fs::path(word).filename().string();
        out += (out.empty() ? "" : " ") + word;
    }
    return out;
}

void dataSection(std::ostream& c, const ModelCardFacts& f) {
    const DataFiles& d = f.state.data;
    c << "## Data\n\n"
      << "- training: " << fileName(d.train_src) << ", " << fileName(d.train_tgt) << " (" << f.train_pairs << " pairs; "
      << f.train.examples.size() << " used, " << f.train.skipped_empty << " skipped as empty, " << f.train.skipped_long
      << " skipped as longer than " << f.options.max_tokens_per_sentence << " pieces; "
      << f.state.train_fingerprint.describe() << ")\n"
      << "- validation: " << fileName(d.valid_src) << ", " << fileName(d.valid_tgt) << "\n"
      << "- vocabulary: joint SentencePiece model, " << f.config.model.n_src_vocab << " pieces, byte fallback\n\n";
}

void hyperparameterSection(std::ostream& c, const ModelCardFacts& f) {
    const TrainingOptions& o = f.options;
    c << "## Model (the reference constructor's arguments)\n\n| field | value | meaning |\n| --- | --- | --- |\n";
    for (const auto& field : modelConfigFields())
        c << "| " << field.name << " | " << field.valueText(f.config.model) << " | " << field.meaning << " |\n";
    c << "\n## Training hyperparameters\n\n| | |\n| --- | --- |\n"
      << "| batch | " << o.batch_tokens << " tokens |\n"
      << "| label smoothing | " << o.label_smoothing << " |\n"
      << "| Adam | betas (0.9, 0.98), eps 1e-9; lr = " << o.lr_mul << " * d_model^-0.5 * min(step^-0.5, step * "
      << o.warmup_steps << "^-1.5) |\n"
      << "| final decay | "
      << (o.decay_steps > 0 ? "linear to 0 over the last " + std::to_string(o.decay_steps) + " of " +
                                  std::to_string(o.max_steps) + " steps"
                            : std::string("off"))
      << " |\n"
      << "| started from | "
      << (o.init_from.empty() ? std::string("random initialisation (seed below)")
                              : "the weights of " + packageName(o.init_from))
      << " |\n"
      << "| gradient clipping | " << (o.clip_norm > 0 ? std::to_string(o.clip_norm) : std::string("off")) << " |\n"
      << "| seed | " << o.seed << " |\n\n";
}
}  // namespace

std::string modelCard(const ModelCardFacts& f) {
    const PackageConfig& pc = f.config;
    std::ostringstream c;
    c << "# Model card: " << pc.source_lang << " -> " << pc.target_lang << " Transformer\n\n"
      << "Trained with AttnLab's trainer (`attnlab-cli train`), the encoder-decoder of *Attention Is All You Need* as "
         "structured by the reference PyTorch implementation. This package is the "
      << f.which << " checkpoint.\n\n";
    dataSection(c, f);
    hyperparameterSection(c, f);
    c << "## Training\n\n"
      << "- steps: " << f.state.step << ", epochs completed: " << f.state.epoch << "\n"
      << "- training wall time (all sessions, validation included): " << fixed(f.seconds / 3600.0, 2) << " h\n"
      << "- hardware: " << hardware() << "\n"
      << "- trained on: " << f.options.device << " (`--device`)\n"
      << "- best validation BLEU (greedy, sacreBLEU default signature nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp): "
      << fixed(f.state.best_bleu, 2) << "\n"
      << "- per-epoch validation figures: `" << package_files::kTrainingLog << "` in this package\n\n"
      << (f.confidence ? confidenceCardSection(*f.confidence)
                       : std::string("## Confidence\n\nNot calibrated: training stopped before the validation "
                                     "translations were scored (`attnlab-cli calibrate` adds it).\n\n"))
      << "## Reproduce\n\n```sh\n"
      << (f.options.command_line.empty() ? std::string("attnlab-cli train ...")
                                         : portableCommand(f.options.command_line))
      << "\n```\n";
    return c.str();
}

}  // namespace attnlab::training
