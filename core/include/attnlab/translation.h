#pragma once
// TranslationResult: what Translator returns, in std types only, so that the GUI and the CLI
// never see a tensor.

#include <string>
#include <vector>

namespace attnlab {

// One attention map: rows are queries, columns are keys; every row sums to 1.
using Matrix = std::vector<std::vector<float>>;
// [layer][head] -> Matrix
using LayerHeadMaps = std::vector<std::vector<Matrix>>;

struct Hypothesis {
    std::vector<int> ids;             // generated target ids, </s> included when it was produced
    std::vector<std::string> pieces;  // the same as SentencePiece pieces
    std::string text;                 // detokenized, without </s>
    double score = 0.0;               // sum of log-probabilities of the generated tokens
    double normalized_score = 0.0;    // score / length^alpha (the ranking key)
    bool finished = false;            // true when </s> was produced before the length cap
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

struct TranslationResult {
    std::string source_text;
    std::vector<int> source_ids;  // what the encoder saw (pieces, then </s>)
    std::vector<std::string> source_pieces;
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

    std::vector<DecodingStep> steps;    // one per generated token of the best hypothesis
    std::vector<std::string> warnings;  // e.g. characters the vocabulary lacks (left out)
    double seconds = 0.0;               // wall time of this sentence's translation
};

// Reported after every decoding step; return false from the callback to cancel.
struct StepProgress {
    int sentence_begin = 0;  // index of the first sentence of the batch being decoded
    int sentence_end = 0;    // one past the last
    int sentences_total = 0;
    int step = 0;       // decoding step within the batch (0-based)
    int max_steps = 0;  // the length cap of this batch
};

}  // namespace attnlab
