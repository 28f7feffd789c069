#include "data/corpus.h"

#include <attnlab/errors.h>

#include "util/small_file.h"

#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <random>

namespace attnlab::data {
namespace fs = std::filesystem;

std::vector<std::string> readLines(const std::string& path) {
    if (auto problem = util::fileProblem(path)) throw InputError(*problem);
    std::error_code ec;
    // gzopen reads plain files transparently too.
    gzFile f = gzopen(path.c_str(), "rb");
    if (!f) throw InputError(path + ": cannot be opened");
    // 128 KiB of input buffer for a corpus, no more than the file for a small one (a package's
    // examples, a gold file): zlib allocates it, and twice that for output, on every open.
    const auto size = fs::file_size(path, ec);
    gzbuffer(f, unsigned(std::clamp<std::uintmax_t>(ec ? 0 : size, 8192, 1 << 17)));
    std::vector<std::string> lines;
    std::string cur;
    char buf[1 << 16];
    int n;
    while ((n = gzread(f, buf, sizeof buf)) > 0) {
        for (int i = 0; i < n; ++i) {
            if (buf[i] == '\n') {
                if (!cur.empty() && cur.back() == '\r') cur.pop_back();
                lines.push_back(std::move(cur));
                cur.clear();
            } else {
                cur.push_back(buf[i]);
            }
        }
    }
    int err = 0;
    const char* msg = gzerror(f, &err);
    const bool failed = n < 0 || (err != Z_OK && err != Z_STREAM_END);
    const std::string why = failed ? std::string(msg ? msg : "read error") : "";
    gzclose(f);
    if (failed) throw InputError(path + ": corrupt or truncated (" + why + ")");
    if (!cur.empty()) lines.push_back(std::move(cur));
    return lines;
}

std::string findCorpusFile(const std::string& base) {
    std::error_code ec;
    for (const std::string& p : {base, base + ".gz"})
        if (fs::is_regular_file(p, ec)) return p;
    return {};
}

ParallelCorpus readParallel(const std::string& src_path, const std::string& tgt_path) {
    ParallelCorpus c{readLines(src_path), readLines(tgt_path)};
    if (c.src.size() != c.tgt.size())
        throw InputError("mismatched corpus files: " + src_path + " has " + std::to_string(c.src.size()) +
                         " lines but " + tgt_path + " has " + std::to_string(c.tgt.size()));
    return c;
}

std::vector<Batch> makeBatches(const std::vector<Example>& ex, int batch_tokens) {
    std::vector<int> order(ex.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        if (ex[a].src.size() != ex[b].src.size()) return ex[a].src.size() < ex[b].src.size();
        return ex[a].tgt.size() < ex[b].tgt.size();
    });
    std::vector<Batch> batches;
    Batch cur;
    for (int i : order) {
        const int s = static_cast<int>(ex[i].src.size()), t = static_cast<int>(ex[i].tgt.size()) + 1;
        const int src_len = std::max(cur.src_len, s), tgt_len = std::max(cur.tgt_len, t);
        const int64_t cost = int64_t(cur.examples.size() + 1) * std::max(src_len, tgt_len);
        if (!cur.examples.empty() && cost > batch_tokens) {
            batches.push_back(std::move(cur));
            cur = Batch{};
        }
        cur.examples.push_back(i);
        cur.src_len = std::max(cur.src_len, s);
        cur.tgt_len = std::max(cur.tgt_len, t);
    }
    if (!cur.examples.empty()) batches.push_back(std::move(cur));
    return batches;
}

std::vector<int> epochOrder(size_t n, uint64_t seed, int epoch) {
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::mt19937_64 rng(seed * 1000003ull + static_cast<uint64_t>(epoch));
    std::shuffle(order.begin(), order.end(), rng);
    return order;
}

}  // namespace attnlab::data
