#pragma once
// The trainer's TSV logs (log.tsv, one row per epoch; steps.tsv, one row per N steps) read back
// as numbers, for plots. A package carries its run's log.tsv as training_log.tsv.
#include <string>
#include <vector>

namespace attnlab {

// The column names of the trainer's per-epoch log (log.tsv in a run, training_log.tsv in a
// package), in file order: written by the trainer, read by the GUI's training curves.
namespace epoch_log {
inline constexpr const char* kEpoch = "epoch";
inline constexpr const char* kStep = "step";
inline constexpr const char* kElapsed = "elapsed_s";
inline constexpr const char* kTrainLoss = "train_loss";  // mean per target token over the epoch
inline constexpr const char* kValidLoss = "valid_loss";
inline constexpr const char* kValidPpl = "valid_ppl";
inline constexpr const char* kValidAcc = "valid_acc";
inline constexpr const char* kValidBleu = "valid_bleu";
inline constexpr const char* kValidChrf = "valid_chrf";
inline constexpr const char* kLr = "lr";
inline constexpr const char* kColumns[] = {kEpoch,    kStep,     kElapsed,   kTrainLoss, kValidLoss,
                                           kValidPpl, kValidAcc, kValidBleu, kValidChrf, kLr};
}  // namespace epoch_log

// The columns of steps.tsv (one row per logged window of steps), in file order.
namespace step_log {
inline constexpr const char* kStep = "step";
inline constexpr const char* kEpoch = "epoch";
inline constexpr const char* kElapsed = "elapsed_s";
inline constexpr const char* kLoss = "loss";
inline constexpr const char* kLr = "lr";
inline constexpr const char* kTokensPerSecond = "tgt_tokens_per_s";
inline constexpr const char* kColumns[] = {kStep, kEpoch, kElapsed, kLoss, kLr, kTokensPerSecond};
}  // namespace step_log

struct TrainingLog {
    std::string path;
    std::vector<std::string> columns;       // the header line's names
    std::vector<std::vector<double>> rows;  // rows[i][j]: the value of columns[j] in data line i

    bool has(const std::string& column) const;
    // Every row's value of one column; throws InputError naming the file and the column if absent.
    std::vector<double> column(const std::string& name) const;
};

// Reads a tab-separated file whose first line names the columns and whose other lines are numbers
// (nan and inf allowed; blank lines skipped). Throws InputError naming the file and, for a bad
// line, its number and the problem (a missing file, no header, a line with the wrong number of
// fields, a field that is not a number).
TrainingLog readTrainingLog(const std::string& path);

}  // namespace attnlab
