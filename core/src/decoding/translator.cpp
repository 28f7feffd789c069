// Translator: the public face of decoding::Engine.
#include <attnlab/translator.h>
#include "model/low_precision.h"

#include "decoding/engine.h"
#include "util/checks.h"
#include "util/torch_errors.h"

namespace attnlab {

std::optional<std::string> computeTypeUnavailable(const std::string& compute_type) {
    return model::computeTypeUnavailable(model::parseComputeType(compute_type));
}

void TranslatorOptions::validate() const {
    const char* o = "translator options";
    util::requireRange("num_threads", num_threads, 0, 4096, o);
    if (!isDeviceName(device))
        throw ConfigError("translator options: device '" + device + "' is not one of " + kDeviceNames);
    if (compute_type != "float32" && compute_type != "int8" && compute_type != "bfloat16")
        throw ConfigError("translator options: compute type '" + compute_type +
                          "' is not one of float32 | int8 | bfloat16");
}

// Every entry point translates LibTorch's c10::Error into InternalError: no c10::Error reaches a caller.
Translator::Translator(const std::string& package_dir, const TranslatorOptions& options)
    : m_engine(util::translatingTorchErrors(
          "loading the model", [&] { return std::make_unique<decoding::Engine>(package_dir, options); })) {}
Translator::~Translator() = default;
Translator::Translator(Translator&&) noexcept = default;
Translator& Translator::operator=(Translator&&) noexcept = default;

const ModelInfo& Translator::info() const { return m_engine->info(); }

TranslationResult Translator::translate(const std::string& sentence, const DecodingOptions& options,
                                        const StepCallback& on_step) const {
    return util::translatingTorchErrors("translating",
                                        [&] { return m_engine->translate({sentence}, options, on_step).front(); });
}

std::vector<TranslationResult> Translator::translateBatch(const std::vector<std::string>& sentences,
                                                          const DecodingOptions& options,
                                                          const StepCallback& on_step) const {
    return util::translatingTorchErrors("translating",
                                        [&] { return m_engine->translate(sentences, options, on_step); });
}

std::vector<TranslationResult> Translator::teacherForce(const std::vector<std::string>& sources,
                                                        const std::vector<std::string>& targets,
                                                        const DecodingOptions& options,
                                                        const StepCallback& on_batch) const {
    return util::translatingTorchErrors("teacher forcing",
                                        [&] { return m_engine->teacherForce(sources, targets, options, on_batch); });
}

std::vector<TranslationResult> Translator::teacherForce(const std::vector<TranslationResult>& results,
                                                        const DecodingOptions& options,
                                                        const StepCallback& on_batch) const {
    return util::translatingTorchErrors("teacher forcing",
                                        [&] { return m_engine->teacherForce(results, options, on_batch); });
}

std::optional<std::string> Translator::inputProblem(const std::string& sentence) const {
    return util::translatingTorchErrors("checking the sentence", [&] { return m_engine->inputProblem(sentence); });
}

ValueNorms Translator::valueNorms(const TranslationResult& result) const {
    return util::translatingTorchErrors("computing value norms", [&] { return m_engine->valueNorms(result); });
}

Saliency Translator::saliency(const TranslationResult& result) const { return m_engine->saliency(result); }

HeadGateGradients Translator::headGateGradients(const std::vector<std::string>& sources,
                                                const std::vector<std::string>& targets, const DecodingOptions& options,
                                                const StepCallback& on_batch) const {
    return m_engine->headGateGradients(sources, targets, options, on_batch);
}

AttentionExplanation Translator::explain(const TranslationResult& result, const CellRef& cell) const {
    return util::translatingTorchErrors("explaining a weight", [&] { return m_engine->explain(result, cell); });
}

TokenInside Translator::tokenInside(const TranslationResult& result, bool target, int position) const {
    return util::translatingTorchErrors("opening up a token",
                                        [&] { return m_engine->tokenInside(result, target, position); });
}

BatchMasks Translator::masks(const std::vector<TranslationResult>& results) const {
    return util::translatingTorchErrors("building the masks", [&] { return m_engine->masks(results); });
}

std::vector<std::vector<float>> Translator::positionalTable() const {
    return util::translatingTorchErrors("the positional table", [&] { return m_engine->positionalTable(); });
}

}  // namespace attnlab
