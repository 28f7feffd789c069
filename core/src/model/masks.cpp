#include "model/masks.h"

#include <torch/torch.h>

namespace attnlab::model {

torch::Tensor padMask(const torch::Tensor& seq, int64_t pad_idx) { return seq.ne(pad_idx).unsqueeze(-2); }

torch::Tensor subsequentMask(const torch::Tensor& seq) {
    const int64_t len = seq.size(1);
    auto ones = torch::ones({1, len, len}, torch::TensorOptions().dtype(torch::kBool).device(seq.device()));
    // ref: get_subsequent_mask = 1 - triu(ones, diagonal=1)
    return ones.tril(0);
}

torch::Tensor decoderMask(const torch::Tensor& trg_seq, int64_t pad_idx) {
    // The first position is the decoder's start token, never padding, even where the two share an
    // id (Marian starts the decoder with the pad id); the reference's <s> is not the pad anyway.
    auto keep = trg_seq.ne(pad_idx);
    if (keep.size(1) > 0) keep.select(1, 0).fill_(true);
    return keep.unsqueeze(-2) & subsequentMask(trg_seq);
}

}  // namespace attnlab::model
