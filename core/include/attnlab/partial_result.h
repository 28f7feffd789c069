#pragma once
// Corpus runs split over processes (issue 55, docs/scale-out.md): `--shard K/N` takes the Kth of N parts of a
// corpus, `--json FILE` writes a corpus command's result, whole or a part, and `attnlab-cli merge` puts the
// parts of one run together. Every key of these files and every rule of the merge is owned here
// (core/src/io/partial_result.cpp); the head lab's keys stay in io/head_lab_json.cpp.
//
// A part is a run of whole blocks: the corpus's L lines are cut into B = ceil(L / block) blocks of `block` lines
// (shardBlock(): kShardBlockBatches batches of the command's --batch-size), and part K of N holds blocks
// [floor((K-1)B/N), floor(KB/N)), so that every line is in exactly one part whatever N (a part may be empty when
// N > B), and the per-line outputs of the parts (translations, Pharaoh lines, score lines), concatenated in part
// order, are the whole run's. Every corpus command, whole or a part, sorts, pads and batches its lines only
// within a block (chunkEnd()), so that a line's numbers come from the same batch in a part as in the whole run:
// merged floats equal the one-process run's, not just nearly.
//
// Every result carries a "run": the command, the model's fingerprint, the options that change its numbers,
// the corpus (its line count and a checksum of each input) and, for a part, which part it is. A whole result
// and a merged one have the same fields (a merge of one part is the whole result); the merge refuses parts of
// another command, model, options or corpus, names a part missing or given twice, and recomputes every corpus
// figure from the parts' integer counts (BLEU's and chrF's n-gram statistics, AER's links) and per-line values
// summed in line order, so that it equals the one-process run's.

#include <attnlab/metrics.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace attnlab {

inline constexpr int kCorpusResultVersion = 2;  // 2: the run's corpus has its "block"

struct Shard {
    int index = 1;  // K, 1-based
    int count = 1;  // N
    bool whole() const { return count == 1; }
    bool operator==(const Shard& o) const { return index == o.index && count == o.count; }
};
// "K/N" with 1 <= K <= N (N at most kMaxShards); throws ConfigError "--shard TEXT: ..." otherwise.
Shard parseShard(const std::string& text);
inline constexpr int kMaxShards = 100000;

struct LineRange {
    size_t begin = 0, end = 0;  // [begin, end), 0-based
    size_t size() const { return end - begin; }
};
// A block is this many batches of the command's --batch-size (eval, score, translate: 32 by default, 256 lines;
// heads: 128, 1024 lines; align: 256 lines).
inline constexpr size_t kShardBlockBatches = 8;
// The lines of a block for this --batch-size (at least 1).
size_t shardBlock(int batch_size);
// The lines of `shard` among `lines` (whole blocks of `block` lines, above).
LineRange shardLines(size_t lines, const Shard& shard, size_t block = 1);
// Where the chunk of lines beginning at `line` (0-based, in the corpus) ends: at the next multiple of `block` or
// of `chunk`, whichever comes first, so that chunks never straddle a block and fall on the same lines in a part
// as in the whole run.
size_t chunkEnd(size_t line, size_t block, size_t chunk);
// lines[range], copied.
std::vector<std::string> linesOf(const std::vector<std::string>& lines, const LineRange& range);

// "sha256:HEX" of the lines, each followed by "\n" (of a plain file with "\n" line ends and a final newline, this
// is `sha256sum FILE`; of a .gz file, of what it holds).
std::string linesChecksum(const std::vector<std::string>& lines);
// "sha256:HEX" over the model's files: every regular file under `package_dir` (or the file itself), by relative
// path in byte order, its path and its bytes, except what does not change a result (the model card, the training
// log, the examples, the attention history, the confidence calibration, the gold alignments, the marker file).
// Reads every byte of the weights once (NLLB-200-600M's 2.5 GB: ~2 s). Throws InputError naming an unreadable file.
std::string modelFingerprint(const std::string& package_dir);

// What every part of one run shares, and which part this is.
struct CorpusRun {
    std::string command;            // "eval", "score", "translate", "align", "heads"
    std::string model;              // the package directory (shown; parts from other folders still merge)
    std::string model_fingerprint;  // modelFingerprint()
    // Every option that changes the numbers, as name and value ("--beam", "4"); compared, in order.
    std::vector<std::pair<std::string, std::string>> options;
    // Each input file's role ("src", "ref", "gold") and linesChecksum(); compared.
    std::vector<std::pair<std::string, std::string>> inputs;
    int64_t lines = 0;  // the whole corpus's
    Shard shard;
    int64_t block = 1;  // shardBlock() of the run's batch size: its parts are made of whole blocks
};
// shardLines() of the run's part.
LineRange partLines(const CorpusRun& run);

// eval: one line's translation and its sentence statistics. `skipped`: why the source could not be translated
// (scored as an empty translation), or empty.
struct EvalLine {
    std::string hypothesis, skipped;
    BleuStats bleu;
    ChrfStats chrf;
};
EvalLine evalLine(const std::string& hypothesis, const std::string& reference, const std::string& skipped = {});
// {"format": "attnlab-eval", "version", "run", "lines": [{"line" (1-based, in the corpus), "hypothesis",
//  "skipped" (only when), "bleu_stats": [correct 1..4, total 1..4, sys_len, ref_len], "chrf_stats":
//  {"hypothesis": [6], "reference": [6], "matches": [6]}}], "bleu": {"score", "precisions", "brevity_penalty",
//  "sys_len", "ref_len", "signature"}, "chrf"}: the corpus figures of these lines.
std::string evalResultJson(const CorpusRun& run, const std::vector<EvalLine>& lines);

// score: one pair's pieces (</s> included) and the model's log-probability of each.
struct ScoreLine {
    std::vector<std::string> pieces;
    std::vector<double> log_probs;
};
// {"format": "attnlab-score", "version", "run", "lines": [{"line", "pieces", "log_probs", "mean"}], "pieces" (all
//  lines'), "log_prob_sum" (summed in line order), "mean_log_prob" (per piece), "mean_of_means" (per line)}
std::string scoreResultJson(const CorpusRun& run, const std::vector<ScoreLine>& lines);

// translate: one line's translations (--nbest: best first) and their scores; `skipped` as EvalLine's.
struct TranslateLine {
    std::vector<std::string> translations;
    std::vector<double> scores;
    std::string skipped;
};
// {"format": "attnlab-translations", "version", "run", "lines": [{"line", "translations", "scores", "skipped"
//  (only when)}], "translated" (lines not skipped)}
std::string translateResultJson(const CorpusRun& run, const std::vector<TranslateLine>& lines);

// The head lab's documents (attnlab/head_lab_json.h) as corpus results: `document` with this run added as its
// "run".
std::string withRun(const std::string& document, const CorpusRun& run);

// Reads the parts (paths; a whole result counts as part 1 of 1), checks that they are the parts of one run,
// every part once, and returns the merged result's text (a whole result: no "shard"). Throws InputError naming
// the file and the problem: "a.json: not a result of attnlab-cli --json", "part 2 of 3 is missing", "part 2 of
// 3 is given twice: a.json and b.json", "b.json: another model than a.json (sha256:... against sha256:...)",
// "b.json: other options than a.json: --beam 5 against --beam 4", "b.json: another corpus than a.json ...".
std::string mergeCorpusResults(const std::vector<std::string>& paths);

}  // namespace attnlab
