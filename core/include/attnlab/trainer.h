#pragma once
// Trainer: trains a Transformer on a parallel corpus and writes a model package, with
// checkpoints that resume exactly. Options are checked up front (validate() throws ConfigError).

#include <attnlab/config.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace attnlab {

struct TrainingOptions {
    // ---- data: a Multi30k-style directory (train.<src>[.gz], val.<src>[.gz], ...) or explicit files.
    //      On --resume they may be left out (the run's own are used); given, they must hold the
    //      data the run was trained on (checked by a fingerprint of the encoded corpus).
    std::string data_dir;
    std::string src_lang = "de", tgt_lang = "en";
    std::string train_src, train_tgt, valid_src, valid_tgt;  // override data_dir when set
    int max_tokens_per_sentence = 100;  // longer pairs (in pieces) are skipped and counted in the log

    // ---- vocabulary
    std::string tokenizer;  // an existing SentencePiece model; empty = train one on train src+tgt

    // ---- starting point: a package whose weights, shape and tokenizer start the run (fine-tuning);
    //      only model.dropout is taken from these options. Empty = random initialisation.
    std::string init_from;
    int vocab_size = 8000;

    // ---- model: the reference constructor's arguments (vocab sizes and pad ids are filled in)
    ModelConfig model = bundledShape();

    // ---- optimisation (the reference's ScheduledOptim: lr = lr_mul * d_model^-0.5 *
    //      min(step^-0.5, step * warmup^-1.5); Adam(0.9, 0.98, eps 1e-9))
    int batch_tokens = 4096;  // per batch: sentences x longest side, at most this
    double label_smoothing = 0.1;
    double lr_mul = 0.32;
    int warmup_steps = 500;
    // Final decay: over the last decay_steps steps before max_steps the rate above is multiplied
    // by a factor falling linearly to 0, so that the last epochs (and their average) settle.
    // 0 = off; needs max_steps.
    int64_t decay_steps = 0;
    double clip_norm = 0.0;  // 0 = no gradient clipping
    uint64_t seed = 1;
    int threads = 0;  // 0 = all cores
    // Where the model trains: "cpu" (the default: a resumed run continues bit for bit only there, as
    // the dropout masks come from the CPU generator a checkpoint stores), "cuda", "cuda:N" or "auto".
    // Not stored in a checkpoint: a run may resume on another device.
    std::string device = "cpu";

    // ---- stopping (whichever comes first; 0 = unlimited, but one of them must be set)
    int epochs = 0;
    int64_t max_steps = 0;
    double time_budget_minutes = 0.0;

    // ---- output
    std::string output_dir;  // checkpoints/, log.tsv, steps.tsv, and the final package in model/
    bool resume = false;     // continue from output_dir/checkpoints/latest
    double save_every_minutes = 15.0;
    int log_every_steps = 100;
    int valid_bleu_sentences = 0;    // 0 = the whole validation set
    int valid_beam = 1;              // beam for the validation BLEU (1 = greedy)
    int keep_epoch_checkpoints = 5;  // model-only packages checkpoints/epoch-NNN kept for averaging
    // The final package is the model at the run's last step, not the best checkpoint by validation
    // BLEU: the toy's, whose rate anneals to 0 over its last half (its last step is its settled
    // model; the best checkpoint was an epoch's end before it). Not stored in a checkpoint.
    bool package_last_step = false;
    std::string command_line;  // recorded in MODEL_CARD.md (informational)

    // ---- attention history (attnlab/attention_history.h): the maps of probe sentences recorded
    //      at the start, steps 25, 50, 100, ... doubling below record_every, every record_every
    //      steps, every epoch's end and the run's last step; into <run>/attention_history.bin,
    //      each checkpoint (up to its step) and the package (up to the step of its weights). A resumed run continues
    //      its history; a run from a package that carries one
    //      (--init-from) continues that as its next stage. Probes: probe_file, else the first
    //      probe_count validation pairs.
    bool record_attention = false;
    int record_every = 1000;
    std::string probe_file;
    int probe_count = 8;

    void validate() const;
    bool hasData() const;  // data_dir or all four files given

    static ModelConfig bundledShape();  // 3+3 layers, d_model 256, 8 heads, d_inner 1024, all shared, "emb"
};

struct TrainingProgress {
    int epoch = 0;
    int64_t step = 0;
    int64_t batch_in_epoch = 0, batches_per_epoch = 0;
    double loss = 0.0;  // mean per token of the last log window
    double learning_rate = 0.0;
    double target_tokens_per_second = 0.0;
    double elapsed_seconds = 0.0;
    double eta_seconds = -1.0;  // to the nearest stopping criterion, -1 when unknown
    std::string message;        // a line worth printing (validation results, checkpoint written)
};

using TrainingCallback = std::function<void(const TrainingProgress&)>;

struct TrainingSummary {
    int64_t steps = 0;
    int epochs_completed = 0;
    double seconds = 0.0;
    double best_valid_bleu = 0.0;
    std::string package_dir;     // output_dir/model (the best checkpoint by validation BLEU, or package_last_step)
    bool stopped_early = false;  // stop flag (Ctrl-C, SIGTERM) or time budget
};

// Averages the parameters of packages with the same configuration (checkpoint averaging) and
// writes the result as a package to `output_dir` (tokenizer and config of the first).
void averagePackages(const std::vector<std::string>& package_dirs, const std::string& output_dir);

// Runs training; returns when a stopping criterion is met or *stop becomes true (a checkpoint is
// written first). Throws ConfigError / InputError / PackageError with clear messages.
TrainingSummary train(const TrainingOptions& options, const TrainingCallback& progress = {},
                      const std::atomic<bool>* stop = nullptr);

}  // namespace attnlab
