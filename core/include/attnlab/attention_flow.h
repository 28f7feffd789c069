#pragma once
// Maps that say what moves the output, beyond raw attention weights (issue 27, docs/head-lab.md
// "Beyond raw weights"): weight x value norm (Kobayashi et al. 2020, "Attention is Not Only a
// Weight") and attention rollout (Abnar & Zuidema 2020, "Quantifying Attention Flow in
// Transformers"). Pure arithmetic over a TranslationResult's maps and the value norms that
// Translator::valueNorms computes from the model.

#include <attnlab/attention_kind.h>
#include <attnlab/translation.h>

#include <optional>
#include <string>
#include <vector>

namespace attnlab {

// What a drawn map shows (the app's Method): the weights; each weight times its key's value norm, rows
// normalised; the rollout up to each layer (one map per layer); or a method of attnlab/contributions.h
// (ALTI+, value zeroing: one map per layer of each kind, all heads together, computed from the model
// by Translator::contributions, issue 54). Named "weights", "value-norm", "rollout", "alti+",
// "value-zeroing" (the app's sessions and lessons; the last two are contributions.h's kAltiPlusName and
// kValueZeroingName).
enum class MapMeasure { Weights, ValueNorm, Rollout, AltiPlus, ValueZeroing };
inline constexpr MapMeasure kMapMeasures[] = {MapMeasure::Weights, MapMeasure::ValueNorm, MapMeasure::Rollout,
                                              MapMeasure::AltiPlus, MapMeasure::ValueZeroing};
// The measures made from a result's attention maps (and value norms) alone: what `attnlab-cli translate
// --maps` and `heads --measure` take and the head lab's statistics are taken of.
inline constexpr MapMeasure kAttentionMeasures[] = {MapMeasure::Weights, MapMeasure::ValueNorm, MapMeasure::Rollout};
std::string mapMeasureName(MapMeasure measure);
std::vector<std::string> mapMeasureNames();                          // kAttentionMeasures' names, in order
std::optional<MapMeasure> parseMapMeasure(const std::string& name);  // any of kMapMeasures
enum class ContributionMethod;                                       // attnlab/contributions.h
// The contribution method a measure shows (nothing for the attention measures), and back.
std::optional<ContributionMethod> contributionMethodOf(MapMeasure measure);
MapMeasure measureOf(ContributionMethod method);
// One map per layer (all heads together) rather than one per head: the rollout and the contributions.
bool onePerLayer(MapMeasure measure);

// ||f_h(x_j)|| for every key position j of every head: key j's value vector of head h sent through
// that head's block of the output projection, f_h(x) = W_O^h (W_V^h x + b_V^h) (without the output
// projection's own bias, which is added once whatever the weights). [layer][head][key], the keys
// in the order of the maps' columns.
using HeadKeyNorms = std::vector<std::vector<std::vector<float>>>;

struct ValueNorms {
    HeadKeyNorms encoder_self, decoder_self, cross;
    const HeadKeyNorms& of(AttentionKind kind) const;
};

// Cell (i, j) = weight_ij * ||f(x_j)||: the length of the vector key j adds to query i's output
// (Kobayashi et al.'s ||alpha f(x)||). Throws InputError when the norms do not fit the columns.
Matrix weightedByValueNorms(const Matrix& weights, const std::vector<float>& norms);
// The same for every head of every layer of one kind ([layer][head]).
LayerHeadMaps weightedByValueNorms(const LayerHeadMaps& weights, const HeadKeyNorms& norms);
// Each row divided by its sum (a row of zeros stays zeros): a weighted map drawn like a weight map.
Matrix rowNormalized(const Matrix& m);

// Attention rollout of self-attention, the residual connection included as Abnar & Zuidema do:
// A_l = (mean over layer l's heads + I) / 2, R_0 = A_0, R_l = A_l R_(l-1); one map per layer
// (row i: how much of input position j reaches position i after layer l). Rows sum to 1.
// Throws InputError for maps that are not square or differ in size.
std::vector<Matrix> attentionRollout(const LayerHeadMaps& self);
// Cross-attention through the encoder: layer l's mean over its heads times the encoder's last
// rollout (row i: how much of source input position j reaches target step i through layer l's
// cross-attention). Throws InputError when the shapes do not fit.
std::vector<Matrix> crossRollout(const LayerHeadMaps& cross, const Matrix& encoder_rollout);

struct ValueNorms;
// The maps of one kind under an attention measure, shaped [layer][head] (a rollout: [layer][one map]);
// the value-norm measure needs `norms` (InputError without them). A contribution measure throws
// InputError: its maps come from the model (Translator::contributions, then contributionMaps).
LayerHeadMaps measuredMaps(const TranslationResult& result, AttentionKind kind, MapMeasure measure,
                           const ValueNorms* norms);
struct Contributions;
// A contribution method's layer-wise maps of one kind, shaped as a rollout's: [layer][one map].
LayerHeadMaps contributionMaps(const Contributions& contributions, AttentionKind kind);

}  // namespace attnlab
