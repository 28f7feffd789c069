#pragma once
// Value zeroing (Mohebbi et al. 2023, "Quantifying Context Mixing in Transformers", EACL; the authors' code:
// hmohebbi/ValueZeroing scoring/value_zeroing.py for encoders, hmohebbi/ContextMixingASR scoring/valueZeroing.py
// for encoder-decoders): for each layer and each key token j, the layer recomputed from its clean input with j's
// value vectors zeroed in every head; the cosine distance of each query's output from the clean output is j's
// score; rows normalised to sum 1 (docs/contributions.md, "Value zeroing"). The same zeroing measured on the
// difference of two candidates' log-probabilities at one step: contrastiveZeroing (docs/contributions.md,
// "Contrastive").
#include "contributions/contributions.h"

#include <cstdint>

namespace attnlab::contributions {

// The most elements one batch of recomputations may hold in its widest tensor (a float64 element counts two):
// 8 M floats, 32 MB. The keys of a map are zeroed that many rows at a time, whatever the sentence's length.
inline constexpr int64_t kZeroingBatchElements = int64_t(1) << 23;

// The widest tensor one row of a recomputation allocates, in floats (a float64 element counts two): `queries`
// positions times the widest of a position's tensors (its feed-forward's hidden layer, its attention scores over
// the `longest` side, its output in float64); `longest` keys times the heads' width (the zeroed values, and a
// cross-attention's keys and values copied per row); with `logits`, one position projected onto the target
// vocabulary in float64.
int64_t zeroingRowElements(const ModelConfig& cfg, int64_t longest, int64_t queries, bool logits);

// encoder_self, decoder_self and cross per layer (rows normalised over the map's own keys, as the authors'
// code does), and source / target: the rollout through the whole model (docs/contributions.md).
// `batch_elements`: the bound above (lowered only to check it).
Contributions valueZeroing(const ForcedPass& pass, int64_t batch_elements = kZeroingBatchElements);

// Contrastive::zeroing_encoder_self, zeroing_decoder_self and zeroing_cross for log p(chosen) - log p(alternative)
// at `step` (an index of pass.trg_in's positions): for each layer and piece, that difference minus the difference
// with the piece's value vectors zeroed in every head of the layer's attention, the layers after it run on.
void contrastiveZeroing(const ForcedPass& pass, int64_t step, int64_t chosen, int64_t alternative, Contrastive& out,
                        int64_t batch_elements = kZeroingBatchElements);

}  // namespace attnlab::contributions
