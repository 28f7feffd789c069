#pragma once
// Explaining the numbers of a translation for teaching: how one attention weight came to be
// (q, k, sqrt(d_k), the mask, the softmax; the reference's order), what one token is before the
// first layer (embedding, scaling, positional encoding, layer norm), and the masks of a batch.
// Translator computes them from the model's own forward pass; the UI and the CLI only show them.

#include <attnlab/attention_kind.h>
#include <attnlab/translation.h>

#include <optional>
#include <string>
#include <vector>

namespace attnlab {

// One cell of one map: row `query`, column `key` of head `head` in layer `layer` (0-based). The
// indices are those of TranslationResult's maps: encoder self [src][src], decoder self
// [tgt][tgt] (row i = the step that produced best.pieces[i]), cross [tgt][src].
struct CellRef {
    AttentionKind kind = AttentionKind::Cross;
    int layer = 0;
    int head = 0;
    int query = 0;
    int key = 0;
};

struct AttentionExplanation {
    CellRef cell;
    std::string query_piece, key_piece;  // the query row's and the key column's pieces
    std::vector<float> query_vector;     // q_i of this head (d_k values), before the temperature
    std::vector<float> key_vector;       // k_j of this head (d_k values)
    std::vector<double> products;        // q_i[d] * k_j[d]
    double dot = 0.0;                    // their sum, q_i . k_j
    double temperature = 0.0;            // sqrt(d_k)
    double scaled = 0.0;                 // dot / temperature
    bool masked = false;                 // the mask removes this key for this query
    std::string mask_reason;             // "padding" | "future position" | "" when not masked
    // The whole row as the model computed it: the score of every key j, (q_i / temperature) . k_j, plus
    // (q_i / temperature) . a^K_ij with relative positions (row_relative_scaled holds that part alone); which
    // keys the mask removes (their score becomes -1e9), and the softmax = the map's row.
    std::vector<std::string> row_pieces;  // the keys' pieces
    std::vector<float> row_scaled;
    std::vector<bool> row_masked;
    std::vector<float> row_weights;
    double weight = 0.0;                            // row_weights[key]
    std::vector<std::vector<float>> value_vectors;  // v_j of this head for every key [lk][d_v]
    std::vector<float> head_output;                 // sum_j row_weights[j] * v_j (d_v values)
    // A self-attention with relative positions (ModelConfig::max_relative_positions = k > 0): the score is
    // scaled + relative_scaled, i.e. q.k/sqrt(d_k) + q.a^K_ij/sqrt(d_k), where a^K_ij is the learned key vector of
    // the offset j - i clipped to [-k, k]; the head output adds sum_j weight_j a^V_ij. Empty / 0 otherwise.
    bool relative = false;
    int max_relative_positions = 0;          // k
    int relative_offset = 0;                 // j - i (the query's own position counts as i)
    int relative_clipped = 0;                // clip(j - i, -k, k): the table row is relative_clipped + k
    std::vector<float> relative_key;         // a^K_ij (d_k values)
    std::vector<double> relative_products;   // q_i[d] * a^K_ij[d]
    double relative_dot = 0.0;               // their sum, q_i . a^K_ij
    double relative_scaled = 0.0;            // relative_dot / temperature
    double score = 0.0;                      // scaled + relative_scaled: what the softmax sees (unmasked)
    std::vector<float> row_relative_scaled;  // q_i . a^K_ij / temperature for every key j of the row
    std::vector<float> relative_value;       // a^V_ij (d_v values)
};

// One piece before the first layer, in the reference's order: embedding row, times sqrt(d_model)
// when scale_emb_or_prj is "emb", plus the positional encoding of its position, then the layer
// norm after them (dropout is off at inference).
struct TokenInside {
    bool target = false;  // a decoder input piece (else a source piece)
    int position = 0;
    int token_id = 0;
    std::string piece;
    std::vector<float> embedding;   // the embedding row
    double scale = 1.0;             // sqrt(d_model) or 1
    std::vector<float> scaled;      // embedding * scale
    std::vector<float> positional;  // PE(position); zeros without absolute positions
    std::vector<float> sum;         // scaled + positional
    std::vector<float> normalized;  // layer_norm(sum): the first layer's input
    // How the model knows positions: absolute = a position vector added here (pos_encoding is not "none");
    // otherwise only relative position terms inside every self-attention, offsets clipped to +-max_relative_positions.
    bool absolute_positions = true;
    int max_relative_positions = 0;        // k, 0 without relative positions
    double sum_mean = 0.0, sum_std = 0.0;  // what the layer norm subtracts and divides by
};

// The masks the model builds for a batch (true = may attend), as matrices [row][column].
struct BatchMasks {
    std::vector<std::vector<std::string>> source_pieces;  // per sentence, padded with "<pad>"
    std::vector<std::vector<std::string>> target_pieces;  // decoder inputs, padded with "<pad>"
    // Per sentence: the source padding mask as the encoder sees it [src][src] (every query row the
    // same: padded keys removed), the decoder's self-attention mask [tgt][tgt] (padding & no
    // future), and the cross-attention mask [tgt][src].
    std::vector<std::vector<std::vector<bool>>> encoder, decoder, cross;
};

// Minimal pairs: two maps of the same kind, layer and head for two sentences, compared where their
// pieces line up: the pieces both have in the same order (a longest common subsequence), and
// between two of those the pieces position by position when both sides have as many (a changed
// word); other pieces are left out. difference = a - b on the aligned rows and columns; a label is
// the piece, or "a/b" where they differ. Throws InputError when labels and maps disagree in size.
struct MapDifference {
    Matrix difference;
    std::vector<std::string> rows, columns;
    bool same_shape = false;  // both maps had the same number of rows and columns
};
MapDifference compareMaps(const Matrix& a, const Matrix& b, const std::vector<std::string>& a_rows,
                          const std::vector<std::string>& b_rows, const std::vector<std::string>& a_columns,
                          const std::vector<std::string>& b_columns);

}  // namespace attnlab
