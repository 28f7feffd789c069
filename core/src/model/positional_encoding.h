#pragma once
#include <torch/nn/module.h>
#include <torch/types.h>

namespace attnlab::model {

// The sinusoid table of the paper, [n_position, d_hid]:
//   PE(pos, 2i) = sin(pos / 10000^(2i/d_hid)),  PE(pos, 2i+1) = cos(pos / 10000^(2i/d_hid)).
// Computed in double precision and rounded to float, as the reference does with numpy.
torch::Tensor sinusoidTable(int64_t n_position, int64_t d_hid);

// ref: PositionalEncoding — the table is a (persistent) buffer named pos_table, 1 x n_position x d_hid.
class PositionalEncodingImpl : public torch::nn::Module {
public:
    PositionalEncodingImpl(int64_t d_hid, int64_t n_position);
    // x: [batch, len, d_hid]; adds the first len rows.
    torch::Tensor forward(const torch::Tensor& x);
    // x: [batch, len, d_hid] holding positions offset .. offset+len-1 (incremental decoding).
    torch::Tensor forwardAt(const torch::Tensor& x, int64_t offset);

    torch::Tensor pos_table;
};
TORCH_MODULE(PositionalEncoding);

}  // namespace attnlab::model
