#pragma once
// TranslationResult: what Translator returns, in std types only, so that the GUI and the CLI
// never see a tensor.

#include <attnlab/attention_kind.h>

#include <functional>
#include <string>
#include <vector>

namespace attnlab {

// One attention map: rows are queries, columns are keys; every row sums to 1.
using Matrix = std::vector<std::vector<float>>;
// [layer][head] -> Matrix
using LayerHeadMaps = std::vector<std::vector<Matrix>>;

struct Hypothesis {
    std::vector<int> ids;                 // generated target ids, </s> included when it was produced
    std::vector<std::string> pieces;      // the same as SentencePiece pieces
    std::string text;                     // detokenized, without </s>
    std::vector<double> token_log_probs;  // log-probability of each generated token, as the search
                                          // computed it (exp: the piece's probability)
    double score = 0.0;                   // sum of log-probabilities of the generated tokens
    double normalized_score = 0.0;        // score / length^alpha (the ranking key)
    bool finished = false;                // true when </s> was produced before the length cap
};

struct TokenCandidate {
    int id = 0;
    std::string piece;
    float probability = 0.f;
};

// The decoder's distribution at one step of the best hypothesis: the top-k next tokens given the
// prefix actually chosen.
struct DecodingStep {
    int chosen_id = 0;
    std::string chosen_piece;
    float chosen_probability = 0.f;
    std::vector<TokenCandidate> candidates;  // sorted, most probable first
};

// A word of the translation (the pieces from one that starts with "▁" up to the next) and how
// probable the model found it: the product of its pieces' probabilities, P(word | what precedes).
struct WordProbability {
    std::string text;     // the word, detokenized
    int first_piece = 0;  // index into Hypothesis::pieces
    int piece_count = 0;
    double probability = 0.0;
};

// How probable the model finds its translation (attnlab/confidence.h computes and explains it).
struct Confidence {
    double mean_log_prob = 0.0;  // per generated token of the best hypothesis, </s> included
    double probability = 0.0;    // exp(mean_log_prob): the geometric mean of the pieces' probabilities
    bool calibrated = false;     // the package carries a threshold (confidence.json)
    double threshold = 0.0;      // mean log-probability below which a translation is flagged
    double percentile = 0.0;     // % of the model's validation translations below the threshold
    bool low = false;            // calibrated and mean_log_prob < threshold
};

// One continuation the search scored at one step (the beam as a tree; docs/trace-json.md). For
// greedy search a step holds the one token chosen.
struct TraceHypothesis {
    int parent = -1;  // index into the previous step's hypotheses; -1 at step 0 (<s>)
    int token_id = 0;
    std::string piece;
    double log_prob = 0.0;          // of this token given the parent's prefix
    double score = 0.0;             // cumulative log-probability of the prefix ending here
    double normalized_score = 0.0;  // score / length^alpha
    bool finished = false;          // ended with </s> and left the beam as a finished hypothesis
    bool pruned = false;            // dropped: outside the beam, or the search ended without it
};

struct TraceStep {
    std::vector<TraceHypothesis> hypotheses;  // best score first
};

struct TranslationResult {
    std::string source_text;
    std::vector<int> source_ids;  // what the encoder saw (pieces, then </s>)
    std::vector<std::string> source_pieces;
    // The whitespace word of source_text that each source piece covers (0-based; -1 for </s> and
    // the other pieces the model adds), found from the tokenizer's surfaces: a word with characters
    // the vocabulary lacks (left out, or written as byte pieces) stays one word.
    std::vector<int> source_piece_words;
    // The same for best.pieces over best.text when the target was given (teacher forcing); empty
    // for a generated translation, whose words are its pieces' "▁" groups.
    std::vector<int> target_piece_words;
    // The decoder's input at each step: <s>, then the generated tokens but the last.
    std::vector<std::string> decoder_input_pieces;

    Hypothesis best;                // == nbest.front()
    std::vector<Hypothesis> nbest;  // sorted by normalized_score, best first

    // Attention of the best hypothesis, recomputed over the whole output in one pass.
    // encoder_self   [layer][head][src][src]
    // decoder_self   [layer][head][tgt][tgt]  (row i = step producing best.pieces[i];
    //                                          column j = decoder_input_pieces[j]; j > i are 0)
    // cross          [layer][head][tgt][src]
    LayerHeadMaps encoder_self;
    LayerHeadMaps decoder_self;
    LayerHeadMaps cross;

    Confidence confidence;               // of the best hypothesis
    std::vector<WordProbability> words;  // the best hypothesis's words, </s> left out
    std::vector<DecodingStep> steps;     // one per generated token of the best hypothesis
    int forced_tokens = 0;               // leading tokens of best forced: by the model, then by force_prefix
    int forced_by_model = 0;             // of those, the target language's token (a multilingual model)
    // The decoder's first input was a zero vector plus position 0, not a token's embedding
    // (ModelConfig::start_from_zero_embedding: Marian's models converted by CTranslate2);
    // decoder_input_pieces[0] is then kZeroStartPiece.
    bool decoder_starts_from_zero = false;
    int prefixTokens() const { return forced_tokens - forced_by_model; }  // forced by force_prefix
    std::string forced_text;                                              // those tokens as text (what a session saves)
    std::vector<TraceStep> trace;  // DecodingOptions::record_trace: the search, step by step
    // The heads switched off (DecodingOptions::ablate): their maps are still the weights they
    // computed, but their output did not reach the next layer.
    std::vector<HeadRef> ablated;
    std::vector<std::string> warnings;  // e.g. characters the vocabulary lacks (left out)
    double seconds = 0.0;               // wall time of this sentence's translation
};

// The label of a decoder input that is a zero vector plus its position (decoder_starts_from_zero).
inline constexpr const char* kZeroStartPiece = "\u2205+pos";  // "∅+pos"

// Reported after every decoding step; return false from the callback to cancel.
struct StepProgress {
    int sentence_begin = 0;  // index of the first sentence of the batch being decoded
    int sentence_end = 0;    // one past the last
    int sentences_total = 0;
    int step = 0;       // decoding step within the batch (0-based)
    int max_steps = 0;  // the length cap of this batch
};

// Return false to cancel.
using StepCallback = std::function<bool(const StepProgress&)>;

}  // namespace attnlab
