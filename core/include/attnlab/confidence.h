#pragma once
// Confidence: how probable the model finds its own translation, and when that is too low to trust.
//
// The sentence-level figure is the mean log-probability per generated token (</s> included) of
// the best hypothesis, as the search computed it. A package may carry a calibration
// (package_files::kConfidence): the value below which only `percentile` % of the model's own
// validation translations fall. A translation below it is flagged as low confidence: the sentence
// is probably unlike what the model was trained on.

#include <attnlab/translation.h>

#include <optional>
#include <string>
#include <vector>

namespace attnlab {

class Translator;
struct DecodingOptions;

struct ConfidenceCalibration {
    double threshold = 0.0;   // mean log-probability per token; below it = low confidence
    double percentile = 5.0;  // % of the validation translations below the threshold
    int sentences = 0;        // validation sentences it was computed from
    int beam_size = 5;        // how they were decoded
    double length_penalty = 0.7;
    std::string data;  // where the sentences came from, by file name (never a local path)
};

// Reads <package_dir>/confidence.json: nothing when the file is absent (a package from before
// calibration), PackageError naming the file when it is corrupt.
std::optional<ConfidenceCalibration> readConfidenceCalibration(const std::string& package_dir);
// Writes it atomically, and the "## Confidence" section of the package's MODEL_CARD.md when it has
// one (replaced, or appended). Throws InputError / ConfigError (a non-finite threshold, percentile
// outside (0, 100)).
void writeConfidenceCalibration(const std::string& package_dir, const ConfidenceCalibration& calibration);
ConfidenceCalibration confidenceCalibrationFromJson(const std::string& text, const std::string& origin);
std::string confidenceCalibrationToJson(const ConfidenceCalibration& calibration);

// The nearest-rank percentile of `values` (percentile in (0, 100)): the smallest value with at
// least percentile % of the values at or below it. Throws ConfigError on an empty list.
double percentileOf(std::vector<double> values, double percentile);

// Translates `sentences` with `options` and sets the threshold at `percentile` of their mean
// log-probabilities per token. `data` names the sentences' source in the result.
ConfidenceCalibration calibrateConfidence(const Translator& translator, const std::vector<std::string>& sentences,
                                          const DecodingOptions& options, double percentile, const std::string& data,
                                          const StepCallback& on_step = {});

// The sentence-level figure of a hypothesis, judged against a calibration when there is one. Its
// first `forced_tokens` (DecodingOptions::force_prefix) are not counted: the model did not choose
// them, and an unlikely forced word would otherwise make an ordinary sentence look unlike the
// training data ("What if?" with "Some" forced: 0.17, the sentence blamed).
Confidence judgeConfidence(const Hypothesis& hypothesis, const std::optional<ConfidenceCalibration>& calibration,
                           int forced_tokens = 0);

// The "## Confidence" section of a model card: what the figure is, the threshold and how to read
// the warning. The one text the trainer's card and `attnlab-cli calibrate` write.
std::string confidenceCardSection(const ConfidenceCalibration& calibration);

// `card` with its "## Confidence" section replaced by confidenceCardSection(calibration), or
// with that section appended when it has none.
std::string withConfidenceSection(const std::string& card, const ConfidenceCalibration& calibration);

// "low confidence: ..." in words, for a flagged result (empty when not low).
std::string lowConfidenceMessage(const Confidence& confidence);

}  // namespace attnlab
