#pragma once
// ALTI+ (Ferrando et al. 2022, "Towards Opening the Black Box of Neural Machine Translation: Source and Target
// Contributions in the Transformer"; the authors' code: mt-upc/transformer-contributions-nmt): every layer's
// contribution matrices and their rollout through the whole model. The decomposition of each block, for
// post-norm and pre-norm layers, is written down in docs/contributions.md.
#include "contributions/contributions.h"

namespace attnlab::contributions {

Contributions altiPlus(const ForcedPass& pass);

}  // namespace attnlab::contributions
