// attnlab-cli: translate and inspect with AttnLab models. Only wiring: every behaviour lives in
// attnlab_core.
#include <attnlab/confidence.h>
#include <attnlab/config_fields.h>
#include <attnlab/errors.h>
#include <attnlab/file_write.h>
#include <attnlab/metrics.h>
#include <attnlab/package.h>
#include <attnlab/result_json.h>
#include <attnlab/run_layout.h>
#include <attnlab/teaching_json.h>
#include <attnlab/terminal_text.h>
#include <attnlab/text_io.h>
#include <attnlab/trainer.h>
#include <attnlab/translator.h>
#include <attnlab/version.h>

#include "argos_command.h"
#include "cli_common.h"
#include "eval_command.h"
#include "head_lab_commands.h"
#include "history_command.h"
#include "merge_command.h"
#include "score_command.h"
#include "slurm_options.h"
#include "toy_command.h"
#include "translate_command.h"

#include <CLI/CLI.hpp>

#include <malloc.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>

#include <cstdio>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace {

using attnlab::escapedForTerminal;
using attnlab_cli::addCommon;
using attnlab_cli::CommonOptions;
using attnlab_cli::load;
using attnlab_cli::TranslateCommand;

// Every subcommand's options, in one struct each, registered by one function each.

// Set by SIGINT/SIGTERM; the trainer polls it after every step, saves and returns. A signal
// handler can only reach a static.
std::atomic<bool> g_stop_requested{false};
extern "C" void onStopSignal(int) { g_stop_requested.store(true); }

std::string clock(double seconds) {
    if (seconds < 0) return "?";
    const long s = static_cast<long>(seconds);
    char buf[32];
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
    return buf;
}

int runTrain(const attnlab::TrainingOptions& options) {
    options.validate();
    // A training step allocates and frees tensors of up to ~130 MB (the logits of a 4096-token
    // batch). glibc serves anything over 32 MB with mmap and gives it back on free, so every step
    // page-faulted its largest buffers in again: 14 % of the time in the kernel. Keep freed memory
    // in the heap instead (training is this process's only job; the heap peaks at ~2 GB).
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    std::signal(SIGINT, onStopSignal);
    std::signal(SIGTERM, onStopSignal);
    const bool tty = isatty(STDERR_FILENO);
    auto progress = [&](const attnlab::TrainingProgress& p) {
        if (!p.message.empty()) {
            std::cerr << (tty ? "\r\033[K" : "") << escapedForTerminal(p.message) << "\n";
            return;
        }
        const int width = 20;
        const int filled = p.batches_per_epoch ? static_cast<int>(width * p.batch_in_epoch / p.batches_per_epoch) : 0;
        std::ostringstream line;
        line << "epoch " << p.epoch << " [" << std::string(filled, '#') << std::string(width - filled, '-') << "] "
             << p.batch_in_epoch << "/" << p.batches_per_epoch << "  step " << p.step << "  loss " << std::fixed
             << std::setprecision(3) << p.loss << "  lr " << std::scientific << std::setprecision(2) << p.learning_rate
             << std::fixed << std::setprecision(0) << "  " << p.target_tokens_per_second << " tok/s  elapsed "
             << clock(p.elapsed_seconds) << "  ETA " << clock(p.eta_seconds);
        std::cerr << (tty ? "\r\033[K" : "") << line.str() << (tty ? "" : "\n") << std::flush;
    };
    const auto summary = attnlab::train(options, progress, &g_stop_requested);
    std::cerr << (tty ? "\n" : "")
              << (summary.stopped_early ? "stopped (checkpoint saved; continue with --resume) after "
                                        : "finished after ")
              << summary.steps << " steps, " << summary.epochs_completed << " epochs, " << clock(summary.seconds)
              << "; best validation BLEU " << std::fixed << std::setprecision(2) << summary.best_valid_bleu
              << "\nmodel package: " << escapedForTerminal(summary.package_dir) << "\n";
    return 0;
}

// How a model's text becomes ids, as inspect names it (PackageConfig::tokenizer).
std::string tokenizerLayout(const std::string& tokenizer) {
    if (tokenizer == "marian") return "source.spm + target.spm through vocab.json";
    if (tokenizer == "ctranslate2") return "CTranslate2's vocabularies: tokens, or SentencePiece pieces";
    return "shared SentencePiece model";
}

int runInspect(const CommonOptions& common) {
    auto translator = load(common);
    const auto& i = translator.info();
    const auto& m = i.config.model;
    // Every name here comes from the model's files or the command line: escaped (a language name's
    // escape sequence would act on the terminal).
    std::cout << "package        " << escapedForTerminal(i.package_dir) << "\n"
              << "languages      " << escapedForTerminal(i.config.source_lang) << " -> "
              << escapedForTerminal(i.config.target_lang)
              << (i.config.multilingual() ? "  (the default pair; --src-lang and --tgt-lang choose)" : "") << "\n";
    if (i.config.multilingual()) {  // every code, as --src-lang and --tgt-lang take them
        std::cout << "               " << i.config.languages.size() << " languages:";
        for (const auto& l : i.config.languages) std::cout << " " << escapedForTerminal(l.code);
        std::cout << "\n";
    }
    std::cout << "device         " << escapedForTerminal(i.device) << "\n"
              << "stored dtype   " << escapedForTerminal(i.stored_dtype) << "\n"
              << "vocabulary     " << i.vocab_size << " target tokens (" << tokenizerLayout(i.config.tokenizer) << ")\n"
              << "load time      " << std::fixed << std::setprecision(3) << i.load_seconds << " s\n\n"
              << "configuration\n";
    for (const auto& f : attnlab::modelConfigFields())
        // a space after the value always: "interleaved" and "sqrt_d_model" are wider than the column
        std::cout << "  " << std::left << std::setw(28) << f.name << std::setw(13)
                  << (escapedForTerminal(f.valueText(m)) + " ") << f.meaning << "\n";
    std::cout << "  " << std::left << std::setw(28) << "bos_idx / eos_idx / unk_idx" << i.config.bos_idx << " / "
              << i.config.eos_idx << " / " << i.config.unk_idx << "\n";
    std::cout << "  " << std::setw(28) << "tokenizer" << escapedForTerminal(i.config.tokenizer) << "\n"
              << "  " << std::setw(28) << "num_beams / max_length" << i.config.num_beams << " / " << i.config.max_length
              << "   (0 = AttnLab's default)" << std::right << "\n\nparameters\n";
    const auto& p = i.parameters;
    auto row = [](const char* name, int64_t n) {
        std::cout << "  " << std::left << std::setw(20) << name << std::right << std::setw(12) << n << "\n";
    };
    row("encoder embedding", p.encoder_embedding);
    row("encoder layers", p.encoder_layers);
    row("decoder embedding", p.decoder_embedding);
    row("decoder layers", p.decoder_layers);
    row("output projection", p.output_projection);
    row("embedding norms", p.layer_norms);
    row("total", p.total);
    if (m.emb_src_trg_weight_sharing || m.trg_emb_prj_weight_sharing)
        std::cout << "  (tied embeddings are counted once, under decoder embedding)\n";
    return 0;
}

struct TrainCommand {
    CLI::App* cmd = nullptr;
    attnlab::TrainingOptions options;
};

void addTrain(CLI::App& app, TrainCommand& t) {
    auto& topt = t.options;
    auto* train = t.cmd = app.add_subcommand("train", "Train a model on a parallel corpus and write a model package");
    train->add_option("--data", topt.data_dir, "Directory with train.<src>(.gz), train.<tgt>, val.<src>, val.<tgt>");
    train->add_option("--src", topt.src_lang, "Source language suffix")->capture_default_str();
    train->add_option("--tgt", topt.tgt_lang, "Target language suffix")->capture_default_str();
    train->add_option("--train-src", topt.train_src, "Training source file (overrides --data)");
    train->add_option("--train-tgt", topt.train_tgt, "Training target file");
    train->add_option("--valid-src", topt.valid_src, "Validation source file");
    train->add_option("--valid-tgt", topt.valid_tgt, "Validation target file");
    train->add_option("--output,-o", topt.output_dir, "Output directory (checkpoints, logs, model/)")->required();
    train->add_option("--tokenizer", topt.tokenizer, "Reuse this SentencePiece model instead of training one");
    train->add_option("--vocab-size", topt.vocab_size, "Joint SentencePiece vocabulary size")->capture_default_str();
    train->add_option("--max-len", topt.max_tokens_per_sentence, "Skip pairs longer than this many pieces")
        ->capture_default_str();
    auto& m = topt.model;
    train->add_option("--layers", m.n_layers, "n_layers")->capture_default_str();
    train->add_option("--heads", m.n_head, "n_head")->capture_default_str();
    train->add_option("--d-model", m.d_model, "d_model (= d_word_vec)")->capture_default_str();
    train->add_option("--d-inner", m.d_inner, "d_inner")->capture_default_str();
    train->add_option("--d-k", m.d_k, "d_k")->capture_default_str();
    train->add_option("--d-v", m.d_v, "d_v")->capture_default_str();
    train->add_option("--dropout", m.dropout, "dropout")->capture_default_str();
    train->add_option("--n-position", m.n_position, "n_position")->capture_default_str();
    train->add_option("--share-proj", m.trg_emb_prj_weight_sharing, "trg_emb_prj_weight_sharing (true/false)")
        ->capture_default_str();
    train->add_option("--share-emb", m.emb_src_trg_weight_sharing, "emb_src_trg_weight_sharing (true/false)")
        ->capture_default_str();
    train->add_option("--scale-emb-or-prj", m.scale_emb_or_prj, "emb | prj | none")->capture_default_str();
    train->add_option("--batch-tokens", topt.batch_tokens, "Tokens per batch")->capture_default_str();
    train->add_option("--label-smoothing", topt.label_smoothing, "epsilon")->capture_default_str();
    train->add_option("--lr-mul", topt.lr_mul, "Learning-rate multiplier of the warm-up schedule")
        ->capture_default_str();
    train->add_option("--warmup", topt.warmup_steps, "Warm-up steps")->capture_default_str();
    train
        ->add_option("--decay-steps", topt.decay_steps,
                     "Final decay: the learning rate falls linearly to 0 over this many steps before --max-steps")
        ->capture_default_str();
    train->add_option("--init-from", topt.init_from,
                      "Start from this package's weights, shape and tokenizer (fine-tuning; --dropout still applies)");
    train->add_option("--clip-norm", topt.clip_norm, "Gradient clipping norm (0 = off)")->capture_default_str();
    train->add_option("--seed", topt.seed, "Random seed")->capture_default_str();
    train->add_option("--threads", topt.threads, "LibTorch threads (0 = all cores)")->capture_default_str();
    train
        ->add_option("--device", topt.device,
                     "Where the model trains: cpu | cuda | cuda:N | auto (a resumed run continues bit for bit "
                     "only on the CPU)")
        ->capture_default_str();
    train->add_option("--epochs", topt.epochs, "Stop after this many epochs")->capture_default_str();
    train->add_option("--max-steps", topt.max_steps, "Stop after this many steps")->capture_default_str();
    train
        ->add_option("--time-budget", topt.time_budget_minutes,
                     "Stop after this many minutes of training (all sessions)")
        ->capture_default_str();
    train->add_option("--save-every-minutes", topt.save_every_minutes, "Checkpoint interval")->capture_default_str();
    train->add_option("--log-every", topt.log_every_steps, "Steps between progress lines / steps.tsv rows")
        ->capture_default_str();
    train
        ->add_option("--valid-bleu-sentences", topt.valid_bleu_sentences,
                     "Validation sentences translated for BLEU (0 = all)")
        ->capture_default_str();
    train->add_option("--valid-beam", topt.valid_beam, "Beam of the validation BLEU")->capture_default_str();
    train->add_option("--keep-epoch-checkpoints", topt.keep_epoch_checkpoints, "Epoch checkpoints kept for averaging")
        ->capture_default_str();
    train->add_flag("--resume", topt.resume, "Continue from OUTPUT/checkpoints/latest");
    train->add_flag("--record-attention", topt.record_attention,
                    "Record the probe sentences' attention maps across training (attnlab-cli history)");
    train->add_option("--record-every", topt.record_every, "Steps between recorded points (denser at the start)")
        ->capture_default_str();
    train->add_option("--probe", topt.probe_file, "Probe sentences: source<TAB>reference per line");
    train->add_option("--probe-count", topt.probe_count, "Without --probe: the first N validation pairs")
        ->capture_default_str();
}

struct AverageCommand {
    CLI::App* cmd = nullptr;
    std::vector<std::string> inputs;
    std::string run, output;
    int last = 5;
};

void addAverage(CLI::App& app, AverageCommand& a) {
    auto& average_inputs = a.inputs;
    auto& average_run = a.run;
    auto& average_output = a.output;
    auto& average_last = a.last;
    auto* average = a.cmd = app.add_subcommand("average", "Average the parameters of checkpoints into one package");
    average->add_option("packages", average_inputs, "Packages or checkpoints to average");
    average->add_option("--run", average_run, "A training output directory: average its last N epoch checkpoints");
    average->add_option("--last", average_last, "N for --run")->capture_default_str();
    average->add_option("--output,-o", average_output, "Where to write the averaged package")->required();
}

int runAverage(AverageCommand& a) {
    if (!a.run.empty()) {
        auto found = attnlab::run_layout::epochCheckpoints(a.run);
        if (static_cast<int>(found.size()) > a.last) found.erase(found.begin(), found.end() - a.last);
        a.inputs.insert(a.inputs.end(), found.begin(), found.end());
    }
    attnlab::averagePackages(a.inputs, a.output);
    std::cerr << "averaged " << a.inputs.size() << " packages into " << escapedForTerminal(a.output) << "\n";
    return 0;
}

struct CalibrateCommand {
    CLI::App* cmd = nullptr;
    std::string src;
    double percentile = 5.0;
    attnlab::DecodingOptions decoding;
};

void addCalibrate(CLI::App& app, CommonOptions& common, CalibrateCommand& c) {
    c.cmd = app.add_subcommand("calibrate",
                               "Set the package's low-confidence threshold from its translations of validation "
                               "sentences (writes confidence.json and the model card's Confidence section)");
    addCommon(c.cmd, common);
    c.cmd->add_option("--src", c.src, "Validation source sentences, one per line (.gz too)")->required();
    c.cmd->add_option("--percentile", c.percentile, "Share of the validation translations flagged, in %")
        ->capture_default_str();
    c.cmd->add_option("--beam", c.decoding.beam_size, "Beam size")->capture_default_str();
    attnlab_cli::addLanguages(c.cmd, c.decoding);
    c.cmd->add_option("--alpha", c.decoding.length_penalty, "Length penalty")->capture_default_str();
}

int runCalibrate(const CommonOptions& common, const CalibrateCommand& c) {
    c.decoding.validate();
    const auto sources = attnlab::readTextLines(c.src);
    auto translator = load(common);
    const auto cal = attnlab::calibrateConfidence(translator, sources, c.decoding, c.percentile,
                                                  "`" + std::filesystem::path(c.src).filename().string() + "`");
    attnlab::writeConfidenceCalibration(translator.info().package_dir, cal);
    std::cout << "threshold: mean log-probability per piece " << cal.threshold << " (probability "
              << std::exp(cal.threshold) << "), the " << cal.percentile << "th percentile of " << cal.sentences
              << " validation translations; written to " << escapedForTerminal(translator.info().package_dir) << "/"
              << attnlab::package_files::kConfidence << "\n";
    return 0;
}

struct ExplainCommand {
    CLI::App* cmd = nullptr;
    std::string text, kind = "cross";
    attnlab::CellRef cell;
    attnlab::DecodingOptions decoding;
};

void addExplain(CLI::App& app, CommonOptions& common, ExplainCommand& e) {
    e.cmd = app.add_subcommand("explain",
                               "Translate a sentence and print, as JSON, how one attention weight came to be "
                               "(q, k, their products and dot, sqrt(d_k), the mask, the row's softmax)");
    addCommon(e.cmd, common);
    e.cmd->add_option("--text,-t", e.text, "The sentence")->required();
    e.cmd->add_option("--kind", e.kind, "encoder | decoder | cross")->capture_default_str();
    e.cmd->add_option("--layer", e.cell.layer, "Layer, 0-based")->capture_default_str();
    e.cmd->add_option("--head", e.cell.head, "Head, 0-based")->capture_default_str();
    e.cmd->add_option("--query", e.cell.query, "Row of the map (query position), 0-based")->capture_default_str();
    e.cmd->add_option("--key", e.cell.key, "Column of the map (key position), 0-based")->capture_default_str();
    e.cmd->add_option("--beam", e.decoding.beam_size, "Beam size")->capture_default_str();
    attnlab_cli::addLanguages(e.cmd, e.decoding);
    e.cmd->add_option("--alpha", e.decoding.length_penalty, "Length penalty")->capture_default_str();
    e.cmd->add_option("--max-len", e.decoding.max_length, "Longest output in tokens")->capture_default_str();
    e.cmd->add_option("--force-prefix", e.decoding.force_prefix, "Forced beginning of the translation");
}

int runExplain(const CommonOptions& common, ExplainCommand& e) {
    e.cell.kind = attnlab::parseAttentionKind(e.kind, "--kind");
    e.decoding.return_attention = false;
    e.decoding.top_k_candidates = 0;
    e.decoding.validate();
    auto translator = load(common);
    if (auto why = translator.inputProblem(e.text)) throw attnlab::InputError(*why);
    const auto result = translator.translate(e.text, e.decoding);
    std::cout << attnlab::explanationJson(translator.explain(result, e.cell));
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"AttnLab command line: translate with a Transformer model package and inspect it"};
    app.require_subcommand(1);
    app.set_version_flag("--version", std::string("attnlab-cli ") + attnlab::version());
    // A repeated option keeps its last value, so that a wrapper script's defaults can be
    // overridden by appending (scripts/train_bundled_model.sh DATA --time-budget 185).
    app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);

    CommonOptions common;
    TranslateCommand translate;
    TrainCommand train;
    AverageCommand average;
    attnlab_cli::EvalCommand eval;
    attnlab_cli::MergeCommand merge;
    CalibrateCommand calibrate;
    ExplainCommand explain;
    attnlab_cli::HeadsCommand heads;
    attnlab_cli::AlignCommand align;
    attnlab_cli::HistoryCommand history;
    attnlab_cli::ToyCommand toy;
    attnlab_cli::ArgosCommand argos;
    attnlab_cli::ScoreCommand score;
    attnlab_cli::addTranslate(app, common, translate);
    auto* inspect = app.add_subcommand("inspect", "Show a model package's configuration and parameter counts");
    addCommon(inspect, common);
    std::string import_from, import_to;
    auto* import_cmd = app.add_subcommand(
        "import",
        "Write a Hugging Face directory (MarianMT / OPUS-MT, M2M100, NLLB-200, mBART-50) or a CTranslate2 model "
        "(a model directory, an Argos Translate package or .argosmodel) as an AttnLab package, once");
    import_cmd
        ->add_option("--from", import_from,
                     "The Hugging Face directory (config.json, weights, the tokenizer's files) as downloaded, or the "
                     "CTranslate2 model")
        ->required();
    import_cmd->add_option("-o,--output", import_to, "The package directory to write")->required();
    addTrain(app, train);
    addAverage(app, average);
    attnlab_cli::addEval(app, common, eval);
    attnlab_cli::addMerge(app, merge);
    addCalibrate(app, common, calibrate);
    addExplain(app, common, explain);
    attnlab_cli::addHeads(app, common, heads);
    attnlab_cli::addAlign(app, common, align);
    attnlab_cli::addHistory(app, history);
    attnlab_cli::addToy(app, toy);
    attnlab_cli::addArgos(app, argos);
    attnlab_cli::addScore(app, common, score);
    attnlab_cli::SlurmOptions slurm;  // --slurm N on the corpus commands: a Slurm job instead of a run here
    for (const auto& [corpus, batch] :
         std::initializer_list<std::pair<CLI::App*, const int*>>{{translate.cmd, &translate.decoding.max_batch_size},
                                                                 {eval.cmd, &eval.decoding.max_batch_size},
                                                                 {score.cmd, &score.decoding.max_batch_size},
                                                                 {heads.cmd, &heads.decoding.max_batch_size},
                                                                 {align.cmd, nullptr}})
        attnlab_cli::addSlurm(corpus, slurm, batch);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        // CLI11 prints the help; a bad option is exit status 2 like every other error (README), not
        // CLI11's own codes (105, 107, ...), and CLI11's message, which quotes the command line, escaped.
        if (e.get_exit_code() == 0) return app.exit(e);
        const std::string what = e.what(), message = CLI::FailureMessage::simple(&app, e);
        std::cerr << escapedForTerminal(what) << message.substr(std::min(what.size(), message.size()));
        return 2;
    }
    try {
        if (slurm.requested()) return attnlab_cli::runSlurm(common, slurm, app, argc, argv);
        if (translate.cmd->parsed()) {
            translate.decoding.return_attention = !translate.attention_path.empty();
            translate.decoding.top_k_candidates = translate.attention_path.empty() ? 0 : 5;
            translate.decoding.record_trace = !translate.trace_path.empty();
            try {
                translate.decoding.ablate = attnlab::parseHeadList(translate.ablate);
            } catch (const attnlab::ConfigError& e) {
                throw attnlab::ConfigError(std::string("--ablate: ") + e.what());
            }
            return attnlab_cli::runTranslate(common, translate);
        }
        if (inspect->parsed()) return runInspect(common);
        if (import_cmd->parsed()) {
            const auto c = attnlab::importMarianModel(import_from, import_to);
            std::cout << "imported " << escapedForTerminal(c.source_lang) << " -> " << escapedForTerminal(c.target_lang)
                      << (c.multilingual() ? " (default; " + std::to_string(c.languages.size()) + " languages)" : "")
                      << " (" << c.model.encoderLayers() << "+" << c.model.decoderLayers() << " layers, "
                      << c.model.n_head << " heads, vocabulary " << c.model.n_trg_vocab << ") into "
                      << escapedForTerminal(import_to) << "\n";
            return 0;
        }
        if (train.cmd->parsed()) {
            train.options.model.d_word_vec = train.options.model.d_model;
            for (int i = 0; i < argc; ++i) train.options.command_line += (i ? " " : "") + std::string(argv[i]);
            return runTrain(train.options);
        }
        if (eval.cmd->parsed()) return attnlab_cli::runEval(common, eval);
        if (merge.cmd->parsed()) return attnlab_cli::runMerge(merge);
        if (average.cmd->parsed()) return runAverage(average);
        if (calibrate.cmd->parsed()) return runCalibrate(common, calibrate);
        if (explain.cmd->parsed()) return runExplain(common, explain);
        if (heads.cmd->parsed()) return attnlab_cli::runHeads(common, heads);
        if (align.cmd->parsed()) return attnlab_cli::runAlign(common, align);
        if (history.cmd->parsed()) return attnlab_cli::runHistory(history);
        if (toy.cmd->parsed()) return attnlab_cli::runToy(toy);
        if (argos.cmd->parsed()) return attnlab_cli::runArgos(argos);
        if (score.cmd->parsed()) return attnlab_cli::runScore(common, score);
    } catch (const attnlab::Error& e) {
        // A message may quote a file's or the command line's text: escaped once more as a whole.
        std::cerr << "attnlab-cli: " << escapedForTerminal(e.what()) << "\n";
        return 2;
    } catch (const std::exception& e) {
        std::cerr << "attnlab-cli: unexpected error: " << escapedForTerminal(e.what()) << "\n";
        return 3;
    }
    return 0;
}
