#pragma once
// Token contributions beyond attention weights (issue 54, docs/contributions.md): ALTI+ (Ferrando et
// al. 2022, "Towards Opening the Black Box of Neural Machine Translation: Source and Target
// Contributions in the Transformer"), value zeroing (Mohebbi et al. 2023, "Quantifying Context Mixing
// in Transformers"), the logit lens on the decoder, and contrastive contributions ("why this piece and
// not that one"). Computed by Translator::contributions, Translator::logitLens and
// Translator::contrastive from a teacher-forced pass over a result; the UI and the CLI only show them.

#include <attnlab/gradients.h>
#include <attnlab/translation.h>

#include <optional>
#include <string>
#include <vector>

namespace attnlab {

// The methods and their names: the keys of the attention JSON's "contributions" object, the values of
// `attnlab-cli translate --contributions`, and what sessions and lessons write.
enum class ContributionMethod { AltiPlus, ValueZeroing };
inline constexpr ContributionMethod kContributionMethods[] = {ContributionMethod::AltiPlus,
                                                              ContributionMethod::ValueZeroing};
inline constexpr const char* kAltiPlusName = "alti+";
inline constexpr const char* kValueZeroingName = "value-zeroing";
std::string contributionMethodName(ContributionMethod method);
std::optional<ContributionMethod> parseContributionMethod(const std::string& name);

// One method's contributions for one translation. Rows are queries, as in the attention maps of a
// TranslationResult: source pieces [src], target rows [tgt] (row i = the step that produced
// best.pieces[i]), decoder input columns (decoder_input_pieces).
struct Contributions {
    ContributionMethod method = ContributionMethod::AltiPlus;
    // Layer-wise, one map per layer of each kind (all heads together), not aggregated:
    std::vector<Matrix> encoder_self;  // [layer][src][src]
    std::vector<Matrix> decoder_self;  // [layer][tgt][decoder input]
    std::vector<Matrix> cross;         // [layer][tgt][src]
    // Through the whole model, aggregated as the method's paper aggregates (ALTI+: the rollout of the
    // layer-wise matrices; the source part and the target part of each row sum to 1 together):
    Matrix source;  // [tgt][src]
    Matrix target;  // [tgt][decoder input]
};

// The logit lens: what each decoder layer's output would predict at each target position, sent
// through the model's final layer norm (where it has one) and its output projection.
struct LensPrediction {
    std::string piece;
    int id = 0;
    double probability = 0.0;
};
struct LogitLensCell {
    std::vector<LensPrediction> top;  // the most probable pieces, most probable first
    double chosen_probability = 0.0;  // of the piece the translation has at this position
    int chosen_rank = 0;              // its rank among every piece (0 = the most probable)
};
struct LogitLens {
    std::vector<std::string> pieces;                 // the translation's pieces (best.pieces), one per position
    std::vector<std::vector<LogitLensCell>> layers;  // [decoder layer][position]; the last is the model's own
};

// "Why `chosen` and not `alternative` at target step `step`?": the contributions and the gradient
// saliency of log p(chosen) - log p(alternative) at that step (inseq's contrastive step functions).
struct ContrastiveQuery {
    int step = 0;             // index into best.pieces
    std::string alternative;  // a piece of the target vocabulary
};
struct Contrastive {
    ContrastiveQuery query;
    std::string chosen;       // best.pieces[step]
    std::string alternative;  // query.alternative as the vocabulary writes it (a typed word: "▁" + word where
                              // the chosen piece starts a word)
    double chosen_log_probability = 0.0;
    double alternative_log_probability = 0.0;
    std::vector<float> saliency_source;  // gradient x input of the difference, per source piece
    std::vector<float> saliency_target;  // per decoder input position (0 after the step)
    // Value zeroing on the difference (docs/contributions.md "Contrastive"): for each layer of each kind, the
    // difference minus the difference with that piece's value vectors zeroed in every head of that layer's
    // attention, signed, not normalised (> 0: the piece pushes towards the chosen piece through that layer).
    std::vector<std::vector<float>> zeroing_encoder_self;  // [encoder layer][source piece]
    std::vector<std::vector<float>> zeroing_decoder_self;  // [decoder layer][decoder input] (0 after the step)
    std::vector<std::vector<float>> zeroing_cross;         // [decoder layer][source piece]
};

}  // namespace attnlab
