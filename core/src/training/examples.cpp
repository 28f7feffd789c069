#include "training/examples.h"

#include <torch/torch.h>

#include <cstdio>

namespace attnlab::training {

Encoded encode(const Tokenizer& tok, const data::ParallelCorpus& c, int max_len) {
    Encoded e;
    const int eos = tok.eosId();
    for (size_t i = 0; i < c.src.size(); ++i) {
        const bool blank_s = c.src[i].find_first_not_of(" \t") == std::string::npos;
        const bool blank_t = c.tgt[i].find_first_not_of(" \t") == std::string::npos;
        if (blank_s || blank_t) {
            ++e.skipped_empty;
            continue;
        }
        data::Example ex;
        ex.src = tok.encode(c.src[i]).ids;
        ex.tgt = tok.encode(c.tgt[i]).ids;
        if (static_cast<int>(ex.src.size()) + 1 > max_len || static_cast<int>(ex.tgt.size()) + 1 > max_len) {
            ++e.skipped_long;
            continue;
        }
        ex.src.push_back(eos);
        e.examples.push_back(std::move(ex));
    }
    return e;
}

std::string CorpusFingerprint::describe() const {
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
    return std::to_string(pairs) + " pairs, ids hash " + hex;
}

CorpusFingerprint fingerprint(const Encoded& encoded) {
    uint64_t h = 1469598103934665603ull;  // FNV-1a 64
    auto mix = [&](int64_t v) {
        for (int b = 0; b < 8; ++b) {
            h ^= static_cast<uint64_t>(v >> (8 * b)) & 0xffu;
            h *= 1099511628211ull;
        }
    };
    for (const auto& ex : encoded.examples) {
        for (int id : ex.src) mix(id);
        mix(-1);
        for (int id : ex.tgt) mix(id);
        mix(-2);
    }
    return {static_cast<int64_t>(encoded.examples.size()), h};
}

BatchTensors toTensors(const std::vector<data::Example>& ex, const data::Batch& b, int64_t pad, int64_t bos,
                       int64_t eos, torch::Device device) {
    const int64_t n = static_cast<int64_t>(b.examples.size());
    BatchTensors t;
    t.src = torch::full({n, b.src_len}, pad, torch::kInt64);
    t.trg_in = torch::full({n, b.tgt_len}, pad, torch::kInt64);
    t.gold = torch::full({n, b.tgt_len}, pad, torch::kInt64);
    auto s = t.src.accessor<int64_t, 2>();
    auto ti = t.trg_in.accessor<int64_t, 2>();
    auto g = t.gold.accessor<int64_t, 2>();
    for (int64_t i = 0; i < n; ++i) {
        const auto& e = ex[b.examples[i]];
        for (size_t j = 0; j < e.src.size(); ++j) s[i][j] = e.src[j];
        ti[i][0] = bos;
        for (size_t j = 0; j < e.tgt.size(); ++j) {
            ti[i][j + 1] = e.tgt[j];
            g[i][j] = e.tgt[j];
        }
        g[i][e.tgt.size()] = eos;
        t.target_tokens += static_cast<int64_t>(e.tgt.size()) + 1;
    }
    if (device != t.src.device()) {
        t.src = t.src.to(device);
        t.trg_in = t.trg_in.to(device);
        t.gold = t.gold.to(device);
    }
    return t;
}

}  // namespace attnlab::training
