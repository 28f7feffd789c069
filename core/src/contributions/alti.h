#pragma once
// ALTI+ (Ferrando et al. 2022, "Towards Opening the Black Box of Neural Machine Translation: Source and Target
// Contributions in the Transformer"; the authors' code: mt-upc/transformer-contributions-nmt): every layer's
// contribution matrices and their rollout through the whole model. The decomposition of each block, for
// post-norm and pre-norm layers, is written down in docs/contributions.md.
#include "contributions/contributions.h"

#include <cstdint>

namespace attnlab::contributions {

// The memory bound. A block of lq queries and lk keys decomposes into lq x lk vectors of d_model (T_ik, one per
// query and key): 328 MB of float64 for each such tensor at NLLB-600M's width (1,024) and 200 pieces, and a block
// needed several. So they are computed a tile of queries x keys at a time, each float64 temporary of a tile (the tile's
// vectors [Q, K, d_model], their distances to the outputs, the keys' value vectors through W_O [heads, K, d_model])
// holding at most kAltiTileElements numbers (8 MiB); one key at a time where one key's values (heads x d_model numbers)
// are more. A tile keeps at most five such temporaries alive (its vectors, the product being added to them, their
// distance to the outputs, the keys' values, its weights), 40 MiB; beside them a block holds maps of its lq x lk
// weights and scores and lq (or lk) x d_model vectors, as the forward pass does.
inline constexpr int64_t kAltiTileElements = int64_t(1) << 20;
struct AltiTiles {
    int64_t query_rows = 0;   // Q; 0 (or key_columns 0) = altiTiles()'s
    int64_t key_columns = 0;  // K
};
// The largest tile within kAltiTileElements: K = clamp(2^20 / (heads x d_model), 1, keys), then
// Q = clamp(2^20 / (K x d_model), 1, queries), so that Q x K x d_model and heads x K x d_model stay within 2^20
// (while heads x d_model does).
AltiTiles altiTiles(int64_t queries, int64_t keys, int64_t heads, int64_t d_model);

// `tiles`: the tile size (the result does not depend on it beyond float64 rounding; tests compare sizes).
Contributions altiPlus(const ForcedPass& pass, const AltiTiles& tiles = {});

}  // namespace attnlab::contributions
