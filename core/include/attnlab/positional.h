#pragma once
#include <vector>

namespace attnlab {

// The sinusoid positional table of the paper, [position][dimension], for any size (the GUI's
// positional-encoding lab lets users change both): PE(pos, 2i) = sin(pos / 10000^(2i/d)),
// PE(pos, 2i+1) = cos(pos / 10000^(2i/d)). The same code builds the model's pos_table buffer.
std::vector<std::vector<float>> sinusoidTable(int n_position, int d_hid);
// The same values with the sines in the first half of the dimensions and the cosines in the second,
// as Marian and fairseq lay them out (ModelConfig::pos_encoding "half").
std::vector<std::vector<float>> halfSinusoidTable(int n_position, int d_hid);

// Dot products PE(i) . PE(j) of every pair of positions, [n_position][n_position]: they depend
// only on i - j, which is what lets attention read relative positions.
std::vector<std::vector<float>> positionalDotProducts(int n_position, int d_hid);

// A model's relative position representations (Shaw et al.; ModelConfig::max_relative_positions): per layer of
// each stack's self-attention, the learned key vectors a^K and value vectors a^V of the offsets -k..k, row r for
// offset r - k ([2k+1][d_k] and [2k+1][d_v]). Empty when the model has none (max_distance 0).
struct RelativePositionTables {
    int max_distance = 0;  // k: offsets beyond +-k use the rows of +-k
    std::vector<std::vector<std::vector<float>>> encoder_keys, encoder_values, decoder_keys, decoder_values;
    bool empty() const { return max_distance == 0; }
};

}  // namespace attnlab
