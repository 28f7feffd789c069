#pragma once
// What gradients say about a translation (issue 27, docs/head-lab.md "Saliency" and "Gradient
// importance"): gradient x input of every input token for every produced token, and the gradient of
// the loss with respect to a gate on every head (Michel et al. 2019). Computed by
// Translator::saliency and Translator::headGateGradients.

#include <attnlab/attention_kind.h>
#include <attnlab/translation.h>

#include <vector>

namespace attnlab {

// Gradient x input: for each target token t of a translation (its best hypothesis, </s> included) and
// each input token j, sum_d x_jd * d log p(y_t) / d x_jd, where x_j is token j's word embedding as
// the model adds it to the positional encoding (scaled by sqrt(d_model) when the model scales).
// Positive: the token's embedding pushes the chosen token up.
// Its name where maps are chosen (attnlab-cli translate --maps, the attention JSON's key).
inline constexpr const char* kSaliencyName = "saliency";

struct Saliency {
    Matrix source;  // [target token][source piece] (the source's </s> included when the model has it)
    // [target token][decoder input position]: position 0 is <s>, position k the target token k-1.
    // Cells after t are 0 (the decoder cannot see them).
    Matrix target;
};

// Michel et al.'s per-example head importance: for pair x and head h, |dL(x)/d xi_h| at xi = 1, where
// xi_h is a gate multiplying the head's output (its weighted sum of values) and L(x) the pair's
// teacher-forced loss, the sum of -log p over the reference's tokens and </s>. Equals
// |sum_t Att_h(x)_t . dL/dAtt_h(x)_t|.
struct HeadGateGradients {
    std::vector<HeadRef> heads;                 // every head: encoder, decoder, cross; layer; head
    std::vector<std::vector<double>> per_pair;  // [pair][head] in heads' order
    std::vector<double> loss;                   // [pair] L(x)
};

}  // namespace attnlab
