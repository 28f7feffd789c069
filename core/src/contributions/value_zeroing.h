#pragma once
// Value zeroing (Mohebbi et al. 2023, "Quantifying Context Mixing in Transformers", EACL; the authors' code:
// hmohebbi/ValueZeroing scoring/value_zeroing.py for encoders, hmohebbi/ContextMixingASR scoring/valueZeroing.py
// for encoder-decoders): for each layer and each key token j, the layer recomputed from its clean input with j's
// value vectors zeroed in every head; the cosine distance of each query's output from the clean output is j's
// score; rows normalised to sum 1 (docs/contributions.md, "Value zeroing").
#include "contributions/contributions.h"

namespace attnlab::contributions {

// encoder_self, decoder_self and cross per layer (rows normalised over the map's own keys, as the authors'
// code does), and source / target: the rollout through the whole model (docs/contributions.md).
Contributions valueZeroing(const ForcedPass& pass);

}  // namespace attnlab::contributions
