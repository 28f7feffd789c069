#pragma once
// Parallel corpora (plain or gzip) and length-bucketed token batches.
#include <cstdint>
#include <string>
#include <vector>

namespace attnlab::data {

// All lines of a text file, plain or gzip (detected by content); throws InputError naming it.
std::vector<std::string> readLines(const std::string& path);

// The first of <base>, <base>.gz that exists; empty when neither does.
std::string findCorpusFile(const std::string& base);

struct ParallelCorpus {
    std::vector<std::string> src, tgt;
};
// Reads both sides; throws InputError when the line counts differ (naming both files and counts).
ParallelCorpus readParallel(const std::string& src_path, const std::string& tgt_path);

struct Example {
    std::vector<int> src, tgt;  // src: pieces + </s>; tgt: pieces (the trainer adds <s>/</s>)
};

struct Batch {
    std::vector<int> examples;  // indices into the example list
    int src_len = 0, tgt_len = 0;
};

// Sorts examples by length and groups them so that sentences x max(src_len, tgt_len + 1) stays
// within batch_tokens (a single longer example makes a batch alone). Deterministic.
std::vector<Batch> makeBatches(const std::vector<Example>& examples, int batch_tokens);

// The order of batches in an epoch: a permutation seeded by (seed, epoch), so a resumed run sees
// the same order without storing it.
std::vector<int> epochOrder(size_t n_batches, uint64_t seed, int epoch);

}  // namespace attnlab::data
