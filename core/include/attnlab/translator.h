#pragma once
// Translator: loads a model package onto a device and translates sentences, returning every
// attention map in std types. Thread-compatible: one Translator per thread, or external locking.

#include <attnlab/attention_flow.h>
#include <attnlab/confidence.h>
#include <attnlab/config.h>
#include <attnlab/contributions.h>
#include <attnlab/decoding_options.h>
#include <attnlab/device.h>
#include <attnlab/explain.h>
#include <attnlab/gradients.h>
#include <attnlab/package.h>
#include <attnlab/positional.h>
#include <attnlab/translation.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace attnlab {

namespace decoding {
class Engine;  // core-private
}

struct TranslatorOptions {
    std::string device = "auto";  // "auto" (CUDA when available, else CPU) | "cpu" | "cuda" | "cuda:N"
    int num_threads = 0;          // LibTorch intra-op threads; 0 = $ATTNLAB_THREADS, else the policy of
                                  // threadsFor (attnlab/device.h): by the multiply-adds of a decoding step
    bool packed_weights = true;   // CPU: multiply by weights packed once (XNNPACK) rather than LibTorch's
                                  // at::linear, which re-packs them on every call: 2-3x faster decoding, as
                                  // much memory again for the packed copies, results equal up to float
                                  // rounding (docs/benchmarks.md, "Packed weights"); false = at::linear
    // What the products of decoding are computed in (CTranslate2's names): float32, the exact one;
    // int8 (weights per output row, inputs per row on each product) or bfloat16, through oneDNN, on
    // the CPU where the processor has the instructions (refused with the reason elsewhere).
    std::string compute_type = "float32";
    void validate() const;  // throws ConfigError
};

// Parameter counts per part of the model (shared tensors are counted once, in the first part
// that owns them: decoder embedding, then encoder embedding, then output projection).
struct ParameterCounts {
    int64_t encoder_embedding = 0;
    int64_t encoder_layers = 0;
    int64_t decoder_embedding = 0;
    int64_t decoder_layers = 0;
    int64_t output_projection = 0;
    int64_t layer_norms = 0;  // the two after embedding + positional encoding
    int64_t total = 0;
};

struct ModelInfo {
    std::string package_dir;
    PackageConfig config;
    ParameterCounts parameters;
    int vocab_size = 0;                    // the tokenizer's
    std::string device;                    // e.g. "cpu", "cuda:0"
    std::string stored_dtype;              // "F32" or "F16" as stored in model.safetensors
    std::string compute_type = "float32";  // TranslatorOptions::compute_type, as the model computes
    double load_seconds = 0.0;
    // The package's confidence calibration (confidence.json); absent in packages made before it.
    std::optional<ConfidenceCalibration> confidence;
    std::vector<Example> examples;              // the package's examples.tsv (none when absent)
    RelativePositionTables relative_positions;  // the learned relative position tables (none: empty)
};

class Translator {
public:
    // Loads and checks the package; throws PackageError / DeviceError / TokenizerError.
    Translator(const std::string& package_dir, const TranslatorOptions& options = {});
    ~Translator();
    Translator(Translator&&) noexcept;
    Translator& operator=(Translator&&) noexcept;

    const ModelInfo& info() const;

    // Throws InputError for an empty sentence or one longer than the model accepts (no
    // truncation), CancelledError when the callback returns false.
    TranslationResult translate(const std::string& sentence, const DecodingOptions& options = {},
                                const StepCallback& on_step = {}) const;
    // Sentences are sorted by length and decoded max_batch_size at a time; results come back in
    // input order. Any invalid sentence makes the whole call throw (InputError names its index);
    // use inputProblem() first to filter.
    std::vector<TranslationResult> translateBatch(const std::vector<std::string>& sentences,
                                                  const DecodingOptions& options = {},
                                                  const StepCallback& on_step = {}) const;

    // Results for given translations instead of the model's own (teacher forcing): best holds each
    // target's pieces and </s> with the model's log-probability of each, and every attention map
    // (options.return_attention); no steps, no trace. options.ablate applies; beam settings do not.
    // Characters the vocabulary lacks are left out of either side, with a warning. Throws InputError
    // naming the pair (1-based) and side, CancelledError when the callback (once per batch) returns false.
    std::vector<TranslationResult> teacherForce(const std::vector<std::string>& sources,
                                                const std::vector<std::string>& targets,
                                                const DecodingOptions& options = {},
                                                const StepCallback& on_batch = {}) const;
    // The same through the best hypotheses of earlier results (their token ids as they are): the
    // maps of many translations from one padded pass per batch instead of one pass per sentence.
    std::vector<TranslationResult> teacherForce(const std::vector<TranslationResult>& results,
                                                const DecodingOptions& options = {},
                                                const StepCallback& on_batch = {}) const;

    // Why the sentence cannot be translated (empty, too long), or nothing when it can.
    [[nodiscard]] std::optional<std::string> inputProblem(const std::string& sentence) const;

    // The numbers behind a translation (attnlab/explain.h), from a teacher-forced pass over its
    // source and best hypothesis. Throw InputError naming an index out of range.
    AttentionExplanation explain(const TranslationResult& result, const CellRef& cell) const;
    TokenInside tokenInside(const TranslationResult& result, bool target, int position) const;
    // The padding, look-ahead and cross masks the model builds when these are decoded together.
    BatchMasks masks(const std::vector<TranslationResult>& results) const;
    // Every head's value norms ||f_h(x_j)|| for the result's maps (attnlab/attention_flow.h), from
    // the same teacher-forced pass as explain(); throws InputError for an empty translation.
    ValueNorms valueNorms(const TranslationResult& result) const;

    // Gradient x input of every input token for each of the result's target tokens
    // (attnlab/gradients.h), from one backward pass with the result's ablated heads off; throws
    // InputError for an empty translation.
    Saliency saliency(const TranslationResult& result) const;
    // Michel et al.'s |dL/d gate| of every head for each pair, teacher-forced through the targets, one
    // backward pass per batch of options.max_batch_size (options.ablate does not apply). Throws
    // InputError naming the pair that cannot be read, CancelledError when the callback returns false.
    HeadGateGradients headGateGradients(const std::vector<std::string>& sources,
                                        const std::vector<std::string>& targets, const DecodingOptions& options = {},
                                        const StepCallback& on_batch = {}) const;

    // Token contributions beyond attention weights (attnlab/contributions.h, issue 54), each from a
    // teacher-forced pass over the result's source and best hypothesis; throw InputError for an empty
    // translation. contributions(): ALTI+ or value zeroing, layer-wise and aggregated. logitLens(): each
    // decoder layer's prediction at every position, the `top` most probable pieces. contrastive(): why
    // best.pieces[query.step] and not query.alternative (InputError naming a step out of range or a piece
    // the vocabulary lacks).
    Contributions contributions(const TranslationResult& result, ContributionMethod method) const;
    LogitLens logitLens(const TranslationResult& result, int top = 5) const;
    Contrastive contrastive(const TranslationResult& result, const ContrastiveQuery& query) const;

    // The sinusoid table of the loaded model, [position][dimension] (what the GUI plots).
    std::vector<std::vector<float>> positionalTable() const;

private:
    std::unique_ptr<decoding::Engine> m_engine;
};

}  // namespace attnlab
