#pragma once
#include <torch/nn/module.h>
#include <torch/types.h>

#include <string>

namespace attnlab::model {

// The sinusoid table of the paper, [n_position, d_hid]:
//   PE(pos, 2i) = sin(pos / 10000^(2i/d_hid)),  PE(pos, 2i+1) = cos(pos / 10000^(2i/d_hid)).
// Computed in double precision and rounded to float, as the reference does with numpy.
torch::Tensor sinusoidTable(int64_t n_position, int64_t d_hid);
// The same values with the sines in the first half of the dimensions and the cosines in the second
// (Marian, fairseq): column j < d/2 is column 2j of sinusoidTable, column d/2 + j is column 2j + 1.
torch::Tensor halfSinusoidTable(int64_t n_position, int64_t d_hid);

// fairseq's table (M2M100, NLLB: M2M100SinusoidalPositionalEmbedding.get_embedding): sines in the
// first half, cosines in the second, frequencies exp(-i ln(10000) / (d/2 - 1)), a zero column
// when d_hid is odd; computed in float32 in transformers' order of operations, so that its rows
// are the very floats the model was run with.
torch::Tensor fairseqSinusoidTable(int64_t n_position, int64_t d_hid);

// ModelConfig::pos_encoding.
// None: no absolute positions (a model with relative positions only): the table holds zeros and
// nothing is added.
enum class PositionLayout { Interleaved, Half, Fairseq, Learned, None };
PositionLayout positionLayout(const std::string& pos_encoding);  // throws ConfigError for another name

// ref: PositionalEncoding — the table is a (persistent) buffer named pos_table, 1 x n_position x d_hid.
// `offset` is the position of the first token (ModelConfig::pos_offset): the table then has
// n_position + offset rows and token i adds row i + offset. A learned table starts as zeros and is
// read with the weights.
class PositionalEncodingImpl : public torch::nn::Module {
public:
    PositionalEncodingImpl(int64_t d_hid, int64_t n_position, PositionLayout layout = PositionLayout::Interleaved,
                           int64_t offset = 0);
    // x: [batch, len, d_hid]; adds the first len rows.
    torch::Tensor forward(const torch::Tensor& x);
    // x: [batch, len, d_hid] holding positions offset .. offset+len-1 (incremental decoding).
    torch::Tensor forwardAt(const torch::Tensor& x, int64_t offset);

    torch::Tensor pos_table;
    int64_t first_position = 0;
    bool adds = true;  // false for PositionLayout::None
};
TORCH_MODULE(PositionalEncoding);

}  // namespace attnlab::model
