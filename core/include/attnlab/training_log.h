#pragma once
// The trainer's TSV logs (log.tsv, one row per epoch; steps.tsv, one row per N steps) read back
// as numbers, for plots. A package carries its run's log.tsv as training_log.tsv.
#include <string>
#include <vector>

namespace attnlab {

struct TrainingLog {
    std::string path;
    std::vector<std::string> columns;        // the header line's names
    std::vector<std::vector<double>> rows;   // rows[i][j]: the value of columns[j] in data line i

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
