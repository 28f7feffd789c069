#pragma once
// ALTI+ by decoder layer (issue 54, docs/contributions.md): the source part of ALTI+'s rollout through the
// first l + 1 decoder layers, for each l, as the authors score alignment layer by layer (mt-upc/
// transformer-contributions-nmt alignment/aer.py, extract_contribution_matrix: alti_model['total'][l]).
#include <attnlab/contributions.h>

#include <vector>

namespace attnlab {

// From a translation's ALTI+ contributions (their layer-wise maps; a cross-attention row's residual share is
// 1 - its sum): [decoder layer][target row][source piece]. The last equals Contributions::source up to the
// float32 rounding of the maps it is computed from (1e-6). Empty for a decoder without layers; InputError for
// another method's contributions or maps of mismatched sizes.
std::vector<Matrix> altiPlusSourceByLayer(const Contributions& alti_plus);

}  // namespace attnlab
