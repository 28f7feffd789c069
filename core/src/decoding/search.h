#pragma once
// Greedy and beam search over a Stepper: the thing that, given each row's prefix, returns the
// log-probabilities of the next token. Two steppers: CachedStepper (incremental decoding with
// cached keys and values: a step costs O(t)) and FullStepper (reruns the decoder over the whole
// prefix at every step, as the reference's translator does; kept for the benchmark and tests).

#include "model/transformer.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace attnlab::decoding {

class Stepper {
public:
    virtual ~Stepper() = default;
    // prefix [n, t] (starting with <s>) -> log-probabilities of token t+1, [n, vocab].
    virtual torch::Tensor logProbs(const torch::Tensor& prefix) = 0;
    // Keep rows `index` (int64, on the model's device), in that order.
    virtual void select(const torch::Tensor& index) = 0;
    virtual torch::Device device() const = 0;
    // Where the forward pass behind logProbs(prefix) first becomes non-finite, in words ("" when
    // nowhere): the model's firstNonFiniteStage over the rows the stepper holds now.
    virtual std::string whereNonFinite(const torch::Tensor& prefix) = 0;
};

enum class StepperKind { Cached, Full };

// src [n, s] source ids (padded with src_pad_idx). reference_projection: the logits without the
// d_model^-0.5 of "prj" models, as the reference's Translator computes them.
std::unique_ptr<Stepper> makeStepper(StepperKind kind, model::Transformer& model, const torch::Tensor& src,
                                     bool reference_projection = false);

// One node of a search's trace: a continuation the search scored at one step.
struct TraceNode {
    int parent = -1;  // index into the previous step's nodes (-1 at the first step: <s>)
    int64_t token = 0;
    double log_prob = 0.0;    // of the token given the parent's prefix
    double score = 0.0;       // cumulative: the parent's score + log_prob
    double normalized = 0.0;  // score / length^alpha
    bool finished = false;    // ended with </s> and left the beam as a finished hypothesis
    bool pruned = false;      // fell outside the beam (or the search ended with it unfinished)
};
using TraceSteps = std::vector<std::vector<TraceNode>>;  // [step][node]

struct SearchOptions {
    int beam_size = 5;
    double length_penalty = 0.7;  // alpha
    int nbest = 1;
    int64_t bos = special_ids::kBos, eos = special_ids::kEos;
    // Tokens never generated (their log-probability is set to -inf at every step): the engine
    // blocks padding and <s>.
    std::vector<int64_t> blocked;
    int min_length = 0;            // eos is blocked at steps before this one
    std::vector<int> max_lengths;  // per sentence: generated tokens at most (>= 1)
    // Tokens every sentence's output must begin with (a forced target prefix): at step t <
    // forced.size() every other token's log-probability is -inf; the forced token keeps the
    // model's own. The callers keep max_lengths > forced.size().
    std::vector<int64_t> forced;
    // When set: one trace per sentence (resized by the search). A trace never changes the search.
    std::vector<TraceSteps>* traces = nullptr;
    // Called after each step with the step index; return false to cancel (throws CancelledError).
    std::function<bool(int step, int max_steps)> on_step;
};

struct Hyp {
    std::vector<int64_t> tokens;       // generated tokens, eos included when finished
    std::vector<double> token_scores;  // the log-probability of each, as the search computed it
    double score = 0.0;                // sum of log-probabilities
    double normalized = 0.0;           // score / len^alpha
    bool finished = false;
};

// Every search checks each step's log-probabilities once (one reduction, one host sync): a
// non-finite value throws NumericError naming the step (1-based) and the stage where it first
// appeared (Stepper::whereNonFinite). A model with finite weights gives finite log-probabilities
// unless its numbers overflow, so this costs nothing else.
// One list per sentence, sorted best first, at most nbest long.
std::vector<std::vector<Hyp>> greedySearch(Stepper& stepper, int64_t n_sentences, const SearchOptions& options);
std::vector<std::vector<Hyp>> beamSearch(Stepper& stepper, int64_t n_sentences, const SearchOptions& options);

// The reference implementation's Translator.translate_sentence, reproduced for one sentence (the
// stepper holds one row): K beams from the first step's top K; every row keeps extending after
// </s> and keeps adding to its score; the search ends when every row contains </s> or at
// max_lengths[0] generated tokens; the answer is the row with the best score / len^alpha, where
// len counts <s> and the tokens up to the first </s>. Returns that one hypothesis (tokens up to
// and including its first </s>; score: the row's whole score, as the reference keeps it).
// Nothing is blocked (options.blocked is ignored), as in the reference.
Hyp referenceBeamSearch(Stepper& stepper, const SearchOptions& options);

double normalizedScore(double score, size_t length, double alpha);

}  // namespace attnlab::decoding
