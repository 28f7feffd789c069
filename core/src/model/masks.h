#pragma once
// Masks as the reference builds them (transformer/Models.py): true = may attend.
#include <torch/types.h>

namespace attnlab::model {

// [batch, 1, len]: true where seq != pad_idx.
torch::Tensor padMask(const torch::Tensor& seq, int64_t pad_idx);
// [1, len, len]: true on and below the diagonal (a query sees itself and the past).
torch::Tensor subsequentMask(const torch::Tensor& seq);
// The decoder's self-attention mask: padMask & subsequentMask, [batch, len, len].
torch::Tensor decoderMask(const torch::Tensor& trg_seq, int64_t pad_idx);

}  // namespace attnlab::model
