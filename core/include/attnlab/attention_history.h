#pragma once
// Attention history (issue 28, docs/attention-history.md): the attention maps of a fixed set of
// probe sentences, teacher-forced through their references, recorded at points of a training run
// with the step, the epoch and the figures of that point. Written by the trainer
// (--record-attention) into the run and its checkpoints, carried into the package
// (package_files::kAttentionHistory), read by `attnlab-cli history` and the app.
//
// The file: 8 bytes "ATTNHIST", a little-endian uint64 N, N bytes of JSON (the header: format,
// version, shape, probes with their pieces, points with their figures and, since version 2, the
// length of their maps' zlib stream), then the maps of every point (version 2: one zlib stream per
// point), probe by probe, each map's weights as bytes (weight = byte / 255) row by row: for each
// probe the encoder self-attention (layer, head, S x S), the decoder self-attention (T x T) and the
// cross-attention (T x S), S the probe's source pieces, T its target pieces (both with </s>).

#include <attnlab/attention_kind.h>
#include <attnlab/head_stats.h>
#include <attnlab/translation.h>

#include <cstdint>
#include <string>
#include <vector>

namespace attnlab {

inline constexpr int kAttentionHistoryVersion = 2;  // written; version 1 (maps uncompressed) is read too
// A recorded weight is within half of this of the weight computed.
inline constexpr double kHistoryQuantizationStep = 1.0 / 255.0;

struct HistoryProbe {
    std::string source, target;
    std::vector<std::string> source_pieces;         // what the encoder saw, </s> last (S)
    std::vector<std::string> target_pieces;         // the reference's pieces, </s> last (T)
    std::vector<std::string> decoder_input_pieces;  // <s> and the reference's pieces (T)
};

struct ProbeMaps {
    LayerHeadMaps encoder_self, decoder_self, cross;  // [layer][head][row][column]
};

struct HistoryPoint {
    int stage = 0;           // 0 = the run that began the history; +1 for each run that continued it (--init-from)
    int64_t step = 0;        // optimizer steps since the history began, over all stages
    int epoch = 0;           // epochs completed when it was recorded, over all stages
    double train_loss = -1;  // mean per target token over the epoch so far (at its end: the epoch's); -1 = none
    double valid_loss = -1;  // at the end of an epoch; -1 elsewhere
    double valid_bleu = -1;
    std::vector<ProbeMaps> maps;  // one per probe
};

struct AttentionHistory {
    int n_layers = 0, n_head = 0;
    int record_every = 0;  // the run's --record-every (informational)
    // Where the newest stage began (header keys stage, stage_step, stage_epoch; 0 when absent): a
    // resumed stage counts its steps and epochs on from there even before its first point.
    int stage = 0;
    int64_t stage_step = 0;
    int stage_epoch = 0;
    std::vector<HistoryProbe> probes;
    std::vector<HistoryPoint> points;  // by step, each step at most once
};

// The file's bytes (weights quantized to 8 bits).
std::string attentionHistoryBytes(const AttentionHistory& history);
// Reads those bytes back; throws PackageError "<origin>: ..." naming what is wrong (magic, header
// field, a shape that does not match the pieces, a size that does not match the points).
AttentionHistory parseAttentionHistory(const std::string& bytes, const std::string& origin);
AttentionHistory readAttentionHistory(const std::string& path);                        // at most 1 GiB
void writeAttentionHistory(const std::string& path, const AttentionHistory& history);  // atomic
// Every head's statistics (attnlab/head_stats.h) over the probe sentences, one report per point: how
// a head's entropy, offset or share on </s> moved as the model learned.
std::vector<HeadStatsReport> historyHeadStatistics(const AttentionHistory& history);
// The point (1..points-1) at which `head`'s maps moved most since the point before: the sum over
// probes and cells of |w_now - w_before|. -1 with fewer than two points.
int historyLargestChange(const AttentionHistory& history, const HeadRef& head);

// The export of `attnlab-cli history --json`: the header and a `points` list, each point with its
// figures and its maps as numbers.
std::string attentionHistoryJson(const AttentionHistory& history);
void writeAttentionHistoryJson(const std::string& path, const AttentionHistory& history);  // atomic

}  // namespace attnlab
