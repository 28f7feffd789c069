#pragma once
// A corpus turned into what the training loop consumes: encoded examples (with what was skipped),
// their fingerprint, and batches as tensors.
#include "data/corpus.h"

#include <attnlab/tokenizer.h>

#include <torch/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace attnlab::training {

struct Encoded {
    std::vector<data::Example> examples;
    int64_t skipped_empty = 0, skipped_long = 0;
};

// Pieces of each pair, </s> after the source; pairs with an empty side or longer than max_len
// pieces (with </s>) are skipped and counted.
Encoded encode(const Tokenizer& tok, const data::ParallelCorpus& corpus, int max_len);

// What identifies the training data of a run: the number of pairs used and a 64-bit FNV-1a hash
// of their encoded ids (so a different file, order, direction or tokenizer gives another value).
struct CorpusFingerprint {
    int64_t pairs = 0;
    uint64_t hash = 0;
    bool operator==(const CorpusFingerprint& o) const { return pairs == o.pairs && hash == o.hash; }
    std::string describe() const;  // "29000 pairs, ids hash 0123456789abcdef"
};
CorpusFingerprint fingerprint(const Encoded& encoded);

struct BatchTensors {
    torch::Tensor src, trg_in, gold;  // [n, len]: source; <s> + target; target + </s>
    int64_t target_tokens = 0;
};
// The batch's tensors, filled on the CPU and then moved to `device` (the model's).
BatchTensors toTensors(const std::vector<data::Example>& examples, const data::Batch& batch, int64_t pad, int64_t bos,
                       int64_t eos, torch::Device device);

}  // namespace attnlab::training
