// confidence.json (the package's confidence calibration): its one reader and writer, the
// percentile it stores, and the judgement of a translation against it.
#include <attnlab/confidence.h>
#include <attnlab/errors.h>
#include <attnlab/package.h>
#include <attnlab/translator.h>

#include "util/atomic_file.h"
#include "util/small_file.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdio>
#include <filesystem>

namespace attnlab {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {
constexpr size_t kMaxConfidenceBytes = 64 * 1024;  // what AttnLab writes takes 200 bytes
// The keys of confidence.json.
constexpr const char* kThreshold = "mean_log_prob_threshold";
constexpr const char* kPercentile = "percentile";
constexpr const char* kSentences = "validation_sentences";
constexpr const char* kBeam = "beam_size";
constexpr const char* kAlpha = "length_penalty";
constexpr const char* kData = "data";

// A whole number that fits an int, or ConfigError naming the key: a number such as 1e73 or 2.5
// would be cut or overflow the conversion (the fuzzer found 1e73 for validation_sentences).
int wholeNumber(const json& j, const char* key, const std::string& origin) {
    const json& v = j.at(key);
    const bool fits = v.is_number_unsigned()
                          ? v.get<uint64_t>() <= uint64_t(INT_MAX)
                          : v.is_number_integer() && v.get<int64_t>() >= INT_MIN && v.get<int64_t>() <= INT_MAX;
    if (!fits) throw ConfigError(origin + ": " + key + " must be a whole number that fits an int, not " + v.dump());
    return int(v.get<int64_t>());
}

void check(const ConfidenceCalibration& c, const std::string& origin) {
    auto fail = [&](const std::string& m) { throw ConfigError(origin + ": " + m); };
    if (!std::isfinite(c.threshold) || c.threshold > 0) fail("the threshold must be a log-probability (finite, <= 0)");
    if (!(c.percentile > 0 && c.percentile < 100)) fail("the percentile must be in (0, 100)");
    if (c.sentences < 1) fail("it must come from at least one sentence");
    if (c.beam_size < 1) fail("beam_size must be at least 1");
}
}  // namespace

ConfidenceCalibration confidenceCalibrationFromJson(const std::string& text, const std::string& origin) {
    ConfidenceCalibration c;
    try {
        const json j = json::parse(text);
        c.threshold = j.at(kThreshold).get<double>();
        c.percentile = j.at(kPercentile).get<double>();
        c.sentences = wholeNumber(j, kSentences, origin);
        c.beam_size = wholeNumber(j, kBeam, origin);
        c.length_penalty = j.at(kAlpha).get<double>();
        c.data = j.value(kData, std::string());
        check(c, origin);
    } catch (const json::exception& e) {
        throw PackageError(origin + ": not a confidence calibration: " + e.what());
    } catch (const ConfigError& e) {
        throw PackageError(e.what());
    }
    return c;
}

std::string confidenceCalibrationToJson(const ConfidenceCalibration& c) {
    check(c, "confidence calibration");
    const json j = {{kThreshold, c.threshold}, {kPercentile, c.percentile}, {kSentences, c.sentences},
                    {kBeam, c.beam_size},      {kAlpha, c.length_penalty},  {kData, c.data}};
    return j.dump(2) + "\n";
}

std::optional<ConfidenceCalibration> readConfidenceCalibration(const std::string& package_dir) {
    const std::string path = (fs::path(package_dir) / package_files::kConfidence).string();
    if (!util::optionalFilePresent(path)) return std::nullopt;
    return confidenceCalibrationFromJson(util::readSmallFile(path, kMaxConfidenceBytes), path);
}

void writeConfidenceCalibration(const std::string& package_dir, const ConfidenceCalibration& c) {
    util::saveToFile((fs::path(package_dir) / package_files::kConfidence).string(), confidenceCalibrationToJson(c));
    const std::string card_path = (fs::path(package_dir) / package_files::kModelCard).string();
    std::error_code ec;
    if (fs::exists(card_path, ec))
        util::saveToFile(card_path, withConfidenceSection(util::readSmallFile(card_path, 1 << 20), c));
}

std::string withConfidenceSection(const std::string& card, const ConfidenceCalibration& c) {
    const std::string heading = "## Confidence\n";
    const std::string section = confidenceCardSection(c);
    const size_t line = card.find("\n" + heading);
    const size_t at = card.rfind(heading, 0) == 0 ? 0 : line == std::string::npos ? line : line + 1;
    if (at == std::string::npos) return card + (card.empty() || card.back() == '\n' ? "\n" : "\n\n") + section;
    const size_t next = card.find("\n## ", at + heading.size());
    return card.substr(0, at) + section + (next == std::string::npos ? "" : card.substr(next + 1));
}

double percentileOf(std::vector<double> values, double percentile) {
    if (values.empty()) throw ConfigError("percentile of an empty list");
    if (!(percentile > 0 && percentile < 100)) throw ConfigError("the percentile must be in (0, 100)");
    std::sort(values.begin(), values.end());
    const auto rank = static_cast<size_t>(std::ceil(percentile / 100.0 * double(values.size())));
    return values[std::clamp<size_t>(rank, 1, values.size()) - 1];
}

ConfidenceCalibration calibrateConfidence(const Translator& translator, const std::vector<std::string>& sentences,
                                          const DecodingOptions& options, double percentile, const std::string& data,
                                          const StepCallback& on_step) {
    DecodingOptions o = options;
    o.nbest = 1;
    o.return_attention = false;
    o.top_k_candidates = 0;
    std::vector<std::string> usable;
    for (const auto& s : sentences)
        if (!translator.inputProblem(s)) usable.push_back(s);
    if (usable.empty()) throw InputError("confidence calibration: no translatable sentence in " + data);
    std::vector<double> means;
    for (const auto& r : translator.translateBatch(usable, o, on_step)) means.push_back(r.confidence.mean_log_prob);
    ConfidenceCalibration c;
    c.threshold = percentileOf(means, percentile);
    c.percentile = percentile;
    c.sentences = static_cast<int>(usable.size());
    c.beam_size = o.beam_size;
    c.length_penalty = o.length_penalty;
    c.data = data;
    return c;
}

Confidence judgeConfidence(const Hypothesis& h, const std::optional<ConfidenceCalibration>& calibration,
                           int forced_tokens) {
    Confidence c;
    // The model's own choices, after the forced prefix; every piece if the prefix left none (the
    // search does not: it chooses </s> at least).
    const auto& lp = h.token_log_probs;
    const size_t from = forced_tokens > 0 && size_t(forced_tokens) < lp.size() ? size_t(forced_tokens) : 0;
    double sum = 0;
    for (size_t i = from; i < lp.size(); ++i) sum += lp[i];
    c.mean_log_prob = lp.empty() ? 0.0 : sum / double(lp.size() - from);
    c.probability = std::exp(c.mean_log_prob);
    if (calibration) {
        c.calibrated = true;
        c.threshold = calibration->threshold;
        c.percentile = calibration->percentile;
        c.low = c.mean_log_prob < c.threshold;
    }
    return c;
}

std::string confidenceCardSection(const ConfidenceCalibration& c) {
    char figures[400];
    std::snprintf(figures, sizeof figures,
                  "On %d validation sentences (%s; beam %d, length penalty %.1f), %.0f %% of this model's translations "
                  "have a mean probability per piece of at least **%.2f** (mean log-probability %.3f).",
                  c.sentences, c.data.empty() ? "source unrecorded" : c.data.c_str(), c.beam_size, c.length_penalty,
                  100.0 - c.percentile, std::exp(c.threshold), c.threshold);
    return std::string("## Confidence\n\n") +
           "Every translation carries the model's own confidence: the probability of each generated piece (as the "
           "search computed it) and, for the sentence, their geometric mean (exp of the mean log-probability per "
           "piece, `</s>` included). " +
           figures +
           " A translation below that is flagged *low confidence* (the app's warning under the translation; the "
           "CLI's `line N: low confidence ...` on stderr): the sentence is probably unlike the training data. The "
           "flag is a hint, not a verdict: a flagged translation can be right, and an unflagged one wrong. The "
           "threshold is stored in `" +
           std::string(package_files::kConfidence) + "`.\n\n";
}

std::string lowConfidenceMessage(const Confidence& c) {
    if (!c.low) return {};
    char buf[400];
    std::snprintf(buf, sizeof buf,
                  "low confidence: the model gives this translation a mean probability per piece of %.2f, below the "
                  "%.2f that %.0f %% of its own validation translations reach; the sentence is probably unlike what "
                  "it was trained on, so do not trust this translation",
                  c.probability, std::exp(c.threshold), 100.0 - c.percentile);
    return buf;
}

}  // namespace attnlab
