#pragma once
// The decoding engine: a loaded model with its tokenizer and device, turning sentences into
// TranslationResults. It is core-private (it holds tensors); attnlab::Translator is its thin public
// face, and the trainer's validation, the benchmarks and the tests use it directly.
//
// Where the next features go:
//   - options of a search (as the forced target prefix, blocked tokens): DecodingOptions ->
//     searchOptions() here -> decoding::SearchOptions, implemented in search.cpp;
//   - what a search records (as the trace): decoding::Hyp / TraceSteps in search.cpp, copied out
//     in fillResult() / run();
//   - changes to the forward pass (head masks): model::TransformerImpl, reached through model();
//   - numbers derived from one teacher-forced pass (attention maps, per-cell q.k): analyse().
#include <attnlab/attention_flow.h>
#include <attnlab/config.h>
#include <attnlab/decoding_options.h>
#include <attnlab/explain.h>
#include <attnlab/gradients.h>
#include <attnlab/tokenizer.h>
#include <attnlab/translation.h>
#include <attnlab/translator.h>

#include "decoding/search.h"
#include "model/transformer.h"
#include "tokenizer/text_codec.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace attnlab::decoding {

class Engine {
public:
    // Loads and checks a package, or a Hugging Face MarianMT directory (formats/huggingface/marian_import.h);
    // throws PackageError / DeviceError / ConfigError.
    Engine(const std::string& package_dir, const TranslatorOptions& options);
    // Around a model in memory (the trainer's validation): the model is shared, not copied.
    Engine(const PackageConfig& config, model::Transformer model, std::unique_ptr<Tokenizer> tokenizer);
    ~Engine();

    const ModelInfo& info() const { return m_info; }
    const PackageConfig& config() const { return m_config; }
    // The one SentencePiece model of a "sentencepiece" package (training); InputError otherwise.
    const Tokenizer& tokenizer() const;
    model::Transformer model() const { return m_model; }
    torch::Device device() const { return m_device; }

    // Why the sentence cannot be translated, or nothing when it can.
    std::optional<std::string> inputProblem(const std::string& sentence) const;

    // Sentences are sorted by length and decoded options.max_batch_size at a time; results come
    // back in input order. Throws InputError (naming the sentence's index when there are several),
    // CancelledError, InternalError for a LibTorch failure.
    std::vector<TranslationResult> translate(const std::vector<std::string>& sentences, const DecodingOptions& options,
                                             const StepCallback& on_step = {},
                                             StepperKind kind = StepperKind::Cached) const;

    // teacher_forcing.cpp: results for given targets instead of a search's output (head statistics
    // over references, alignment against gold). best = the target's pieces and </s>, with the
    // model's log-probability of each; every map; no steps, no trace. Sentences are sorted by length
    // and run options.max_batch_size at a time (padded keys get weight 0, so each sentence's maps are
    // its own). Characters the vocabulary lacks are left out of either side, with a warning.
    // Throws InputError naming the pair's index (1-based), CancelledError.
    std::vector<TranslationResult> teacherForce(const std::vector<std::string>& sources,
                                                const std::vector<std::string>& targets, const DecodingOptions& options,
                                                const StepCallback& on_batch = {}) const;
    // The same for the best hypotheses of results (their ids as they are, </s> when they have it).
    std::vector<TranslationResult> teacherForce(const std::vector<TranslationResult>& results,
                                                const DecodingOptions& options,
                                                const StepCallback& on_batch = {}) const;

    // explain.cpp: the numbers behind a translation, from a teacher-forced pass over its source and
    // best hypothesis (attnlab/explain.h). Throw InputError naming an index out of range.
    AttentionExplanation explain(const TranslationResult& r, const CellRef& cell) const;
    TokenInside tokenInside(const TranslationResult& r, bool target, int position) const;
    BatchMasks masks(const std::vector<TranslationResult>& results) const;
    // Every head's ||f_h(x_j)|| for every key (attnlab/attention_flow.h), from the same pass.
    ValueNorms valueNorms(const TranslationResult& r) const;

    // gradients.cpp (attnlab/gradients.h): gradient x input of a translation's tokens, one backward
    // pass for all its target tokens; and the head gates' gradients of given pairs, one backward pass
    // per batch of options.max_batch_size (options.ablate does not apply: every gate is 1). Throws
    // InputError (naming the pair), CancelledError when the callback (once per batch) returns false.
    Saliency saliency(const TranslationResult& r) const;
    HeadGateGradients headGateGradients(const std::vector<std::string>& sources,
                                        const std::vector<std::string>& targets, const DecodingOptions& options,
                                        const StepCallback& on_batch = {}) const;

    // contributions/contributions.cpp (attnlab/contributions.h): ALTI+ or value zeroing from one teacher-forced
    // pass over a translation's source and best hypothesis, its ablated heads switched off; InputError for an
    // empty translation.
    Contributions contributions(const TranslationResult& r, ContributionMethod method) const;
    // contributions/logit_lens.cpp (attnlab/contributions.h): each decoder layer's output at every position through
    // what the model puts after its last layer (the final layer norm, where it has one) and project(); the `top`
    // most probable pieces of each. InputError for an empty translation or a `top` out of range.
    LogitLens logitLens(const TranslationResult& r, int top) const;
    // gradients.cpp: gradient x input of log p(chosen) - log p(alternative) at one step (attnlab/contributions.h);
    // InputError naming a step out of range or a piece the target vocabulary lacks.
    Contrastive contrastive(const TranslationResult& r, const ContrastiveQuery& query) const;

    // The sinusoid table of the loaded model, [position][dimension].
    std::vector<std::vector<float>> positionalTable() const;

    // The search options for a batch of sources of these lengths (special ids, blocked tokens, caps).
    SearchOptions searchOptions(const DecodingOptions& options, const std::vector<size_t>& source_lengths) const;
    // The target ids of options.force_prefix (none when empty); throws InputError when the prefix
    // is longer than the model's positions or has characters the vocabulary lacks.
    std::vector<int64_t> forcedTokens(const DecodingOptions& options) const;
    // The same without a multilingual model's forced language token.
    std::vector<int64_t> prefixTokens(const DecodingOptions& options) const;

private:
    struct Source {
        std::string text;
        std::vector<int> ids;
        std::vector<std::string> pieces;
        std::vector<int> word_of_piece;  // TranslationResult::source_piece_words (empty: unknown)
        std::vector<std::string> warnings;
    };

    // What is translated: the sentence without the characters the vocabulary lacks (the model
    // never saw them in training: as byte pieces they garble the whole translation), encoded.
    struct Cleaned {
        Encoding encoding;
        std::string text;                   // what was encoded: the sentence, or it without left_out
        std::vector<size_t> origin;         // where each byte of `text` is in the sentence (empty: the same place)
        std::vector<int> word_of_piece;     // the sentence's whitespace word of each encoding piece (empty: unknown)
        std::vector<std::string> left_out;  // the characters removed, each once
        std::vector<std::string> read_as_unknown;  // characters kept as <unk> (TextCodec::keepsUnknown)
    };
    std::optional<std::string> inputProblem(const std::string& sentence, Cleaned& cleaned, bool target = false) const;
    // A multilingual model's language tokens for options' languages (-1 each for another model);
    // throws InputError for a language the model lacks, naming the nearest ones.
    struct LanguageIds {
        int source = -1, target = -1;
    };
    LanguageIds languageIds(const DecodingOptions& o) const;
    int languageId(const std::string& name, const std::string& fallback, const char* side) const;
    // The source's ids: its pieces and </s>, with the language token where the model puts it.
    Source prepare(const std::string& sentence, int source_language = -1) const;  // throws InputError
    // The target's: the language token first (a multilingual model's forced first token), its
    // pieces and </s>; throws InputError.
    Source prepareTarget(const std::string& sentence, int target_language = -1) const;
    std::vector<TranslationResult> forceAll(const std::vector<Source>& sources, const std::vector<Source>& targets,
                                            const DecodingOptions& o, const StepCallback& on_batch) const;
    std::vector<TranslationResult> teacherForceBatch(const std::vector<const Source*>& sources,
                                                     const std::vector<const Source*>& targets,
                                                     const DecodingOptions& o) const;
    // Teacher forcing's tensors for a batch: sources padded, the decoder's input (<s> then each target
    // but its last token), and the gold tokens (each target, pad after it), [b, longest target].
    struct ForcedTensors {
        torch::Tensor src, trg_in, gold;
    };
    ForcedTensors forcedTensors(const std::vector<const Source*>& sources,
                                const std::vector<const Source*>& targets) const;
    // Sources and targets prepared; throws InputError naming the pair (1-based).
    void preparePairs(const std::vector<std::string>& sources, const std::vector<std::string>& targets,
                      const LanguageIds& languages, std::vector<Source>& src, std::vector<Source>& trg) const;
    // Pair indices by the lengths of both sides, shortest first (batches of like lengths pad little).
    static std::vector<size_t> lengthOrder(const std::vector<Source>& src, const std::vector<Source>& trg);
    int maxLength(size_t src_len, const DecodingOptions& o) const;
    torch::Tensor sourceTensor(const std::vector<const Source*>& batch) const;
    std::vector<TranslationResult> run(const std::vector<std::string>& sentences, const DecodingOptions& o,
                                       const StepCallback& on_step, StepperKind kind) const;
    Hypothesis toHypothesis(const Hyp& h) const;
    std::vector<WordProbability> wordsOf(const Hypothesis& h) const;
    void fillResult(TranslationResult& r, const Source& src, const std::vector<Hyp>& hyps,
                    const DecodingOptions& o) const;
    std::vector<TraceStep> toTrace(const TraceSteps& steps) const;
    // Checks DecodingOptions::ablate against the model (InputError naming the head) and switches
    // those heads off until the returned guard is destroyed.
    std::shared_ptr<void> ablateHeads(const std::vector<HeadRef>& heads) const;
    void analyse(TranslationResult& r, const DecodingOptions& o) const;
    ParameterCounts countParameters() const;
    void loadHuggingFaceOrPackage(const std::string& dir, const TranslatorOptions& options);
    void loadCtranslate2(const std::string& path, const TranslatorOptions& options);
    void placeModel(const TranslatorOptions& options);
    // The compute type the loaders read the weights straight into (quantized while reading, issue 53):
    // options.compute_type where placeModel accepts it (m_device the CPU, a processor that has it), else
    // float32 (placeModel then refuses it as before, saying why).
    model::ComputeType heldType(const TranslatorOptions& options) const;
    std::unique_ptr<TextCodec> loadCodec(const std::string& dir) const;
    void checkTokenizerMatches(const std::string& dir, const Tokenizer& tok) const;

    // The last teacher-forced pass explain() captured: clicking more cells of the same map (same
    // tokens, kind and layer) reuses it instead of running the model again.
    struct CaptureCache;
    mutable std::shared_ptr<CaptureCache> m_capture_cache;
    const CaptureCache& captured(const TranslationResult& r) const;  // the cache, for r (a pass when not)

    PackageConfig m_config;
    ModelInfo m_info;
    std::unique_ptr<TextCodec> m_tokenizer;  // text <-> ids (one SentencePiece model, or Marian's layout)
    model::Transformer m_model{nullptr};
    torch::Device m_device;
    // Threads asked for (requestedThreads: --threads, $ATTNLAB_THREADS, $OMP_NUM_THREADS), 0 = the
    // policy of threadsFor (attnlab/device.h), applied per call by the rows its steps carry.
    int m_threads = 0;
    int threadsForRows(int64_t rows) const;
    // The rows of a teacher-forced pass over `trg`: a batch's pairs x the longest target.
    static int64_t forcedRows(const std::vector<Source>& trg, int max_batch_size);
};

}  // namespace attnlab::decoding
