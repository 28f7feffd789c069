#pragma once
// Translator's internals, visible to tests and benchmarks (not to ui/ or app/).
#include <attnlab/tokenizer.h>
#include <attnlab/translator.h>

#include "decoding/search.h"
#include "model/transformer.h"

#include <memory>

namespace attnlab {

torch::Device resolveDevice(const std::string& name);

struct Translator::Impl {
    Impl(const std::string& dir, const TranslatorOptions& options);
    // Around a model in memory (the trainer's validation); the model is shared, not copied.
    Impl(const PackageConfig& config, model::Transformer model, std::unique_ptr<Tokenizer> tokenizer);

    struct Source {
        std::string text;
        std::vector<int> ids;
        std::vector<std::string> pieces;
        std::vector<std::string> warnings;
    };

    std::string checkInput(const std::string& sentence) const;
    // Also hands back the encoding it made, so that prepare() tokenizes once.
    std::string checkInput(const std::string& sentence, Encoding& encoding) const;
    Source prepare(const std::string& sentence) const;  // throws InputError
    int maxLength(size_t src_len, const DecodingOptions& o) const;
    torch::Tensor sourceTensor(const std::vector<const Source*>& batch) const;
    std::vector<TranslationResult> run(const std::vector<std::string>& sentences, const DecodingOptions& o,
                                       const StepCallback& on_step, decoding::StepperKind kind);
    Hypothesis toHypothesis(const decoding::Hyp& h) const;
    void fillResult(TranslationResult& r, const Source& src, const std::vector<decoding::Hyp>& hyps,
                    const DecodingOptions& o);
    void analyse(TranslationResult& r, const DecodingOptions& o);
    ParameterCounts countParameters() const;

    PackageConfig config;
    ModelInfo info;
    std::unique_ptr<Tokenizer> tokenizer;
    model::Transformer model{nullptr};
    torch::Device device;
};

}  // namespace attnlab
