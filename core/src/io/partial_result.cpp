// Corpus results whole and in parts, and their merge (attnlab/partial_result.h, docs/scale-out.md): every key of
// the files and every rule of the merge is here.
#include <attnlab/errors.h>
#include <attnlab/package.h>
#include <attnlab/partial_result.h>

#include "io/head_lab_merge.h"
#include "io/run_options.h"
#include "util/json_number.h"
#include "util/json_parse.h"
#include "util/small_file.h"

#include <openssl/evp.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <set>

namespace attnlab {
using nlohmann::json;
namespace fs = std::filesystem;

namespace {
// A part's file is read whole: at most this many bytes (a 100,000-line eval part is ~40 MB).
constexpr size_t kMaxResultBytes = size_t(2) << 30;

int parseCount(const std::string& digits, const std::string& text) {
    if (digits.empty() || digits.size() > 6 ||
        !std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return c >= '0' && c <= '9'; }))
        throw ConfigError("--shard " + text + ": not K/N (two whole numbers, e.g. 2/8: the second of eight parts)");
    return std::stoi(digits);
}

// sha256 through OpenSSL's EVP, fed by the caller.
class Sha256 {
public:
    Sha256() : m_ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free) {
        if (!m_ctx || EVP_DigestInit_ex(m_ctx.get(), EVP_sha256(), nullptr) != 1)
            throw InternalError("sha256: OpenSSL's digest could not be set up");
    }
    void add(const char* data, size_t size) { EVP_DigestUpdate(m_ctx.get(), data, size); }
    void add(const std::string& s) { add(s.data(), s.size()); }
    std::string hex() {
        unsigned char digest[EVP_MAX_MD_SIZE];
        unsigned int size = 0;
        EVP_DigestFinal_ex(m_ctx.get(), digest, &size);
        static const char* kHex = "0123456789abcdef";
        std::string out = "sha256:";
        for (unsigned int i = 0; i < size; ++i) {
            out += kHex[digest[i] >> 4];
            out += kHex[digest[i] & 15];
        }
        return out;
    }

private:
    std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> m_ctx;
};

void hashFile(Sha256& sha, const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw InputError(path.string() + ": cannot be read: " + std::strerror(errno));
    std::vector<char> buffer(size_t(1) << 20);
    while (in) {
        in.read(buffer.data(), std::streamsize(buffer.size()));
        sha.add(buffer.data(), size_t(in.gcount()));
    }
    if (in.bad()) throw InputError(path.string() + ": read failed");
}

bool changesNoResult(const std::string& name) {
    namespace pf = package_files;
    for (const char* n : {pf::kModelCard, pf::kTrainingLog, pf::kAveragedFrom, pf::kConfidence, pf::kExamples,
                          pf::kAlignments, pf::kAttentionHistory, pf::kWrittenByAttnlab})
        if (name == n) return true;
    return false;
}
}  // namespace

Shard parseShard(const std::string& text) {
    const size_t slash = text.find('/');
    if (slash == std::string::npos)
        throw ConfigError("--shard " + text + ": not K/N (two whole numbers, e.g. 2/8: the second of eight parts)");
    Shard s{parseCount(text.substr(0, slash), text), parseCount(text.substr(slash + 1), text)};
    if (s.count < 1 || s.count > kMaxShards)
        throw ConfigError("--shard " + text + ": N must be between 1 and " + std::to_string(kMaxShards));
    if (s.index < 1 || s.index > s.count)
        throw ConfigError("--shard " + text + ": K must be between 1 and N (" + std::to_string(s.count) + ")");
    return s;
}

size_t shardBlock(int batch_size) { return kShardBlockBatches * size_t(std::max(batch_size, 1)); }

LineRange shardLines(size_t lines, const Shard& shard, size_t block) {
    block = std::max<size_t>(block, 1);
    const size_t blocks = (lines + block - 1) / block;
    // blocks * k fits: a corpus read into memory has far fewer than 2^64 / kMaxShards lines.
    const auto at = [&](int k) { return std::min(lines, blocks * size_t(k) / size_t(shard.count) * block); };
    return {at(shard.index - 1), at(shard.index)};
}

size_t chunkEnd(size_t line, size_t block, size_t chunk) {
    const auto next = [&](size_t every) { return every ? (line / every + 1) * every : SIZE_MAX; };
    return std::min(next(block), next(chunk));
}

LineRange partLines(const CorpusRun& run) { return shardLines(size_t(run.lines), run.shard, size_t(run.block)); }

std::vector<std::string> linesOf(const std::vector<std::string>& lines, const LineRange& range) {
    return {lines.begin() + std::ptrdiff_t(range.begin), lines.begin() + std::ptrdiff_t(range.end)};
}

std::string linesChecksum(const std::vector<std::string>& lines) {
    Sha256 sha;
    for (const auto& l : lines) {
        sha.add(l);
        sha.add("\n", 1);
    }
    return sha.hex();
}

std::string modelFingerprint(const std::string& package_dir) {
    const fs::path root(package_dir);
    std::error_code ec;
    Sha256 sha;
    if (fs::is_regular_file(root, ec)) {
        hashFile(sha, root);
        return sha.hex();
    }
    std::vector<std::string> files;  // relative, generic form
    for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec))
        if (it->is_regular_file(ec) && !changesNoResult(it->path().filename().string()))
            files.push_back(it->path().lexically_relative(root).generic_string());
    if (ec) throw InputError(package_dir + ": cannot list the model's files: " + ec.message());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
        sha.add(f);
        sha.add("\0", 1);
        hashFile(sha, root / f);
    }
    return sha.hex();
}

// ---- the run ----

namespace {
json shardJson(const Shard& s) { return {{"index", s.index}, {"count", s.count}}; }

json pairsJson(const std::vector<std::pair<std::string, std::string>>& pairs) {
    json out = json::array();
    for (const auto& [k, v] : pairs) out.push_back({k, v});
    return out;
}

json runJson(const CorpusRun& run) {
    json j = {{"command", run.command},
              {"model", {{"package", run.model}, {"fingerprint", run.model_fingerprint}}},
              {"options", pairsJson(run.options)},
              {"corpus", {{"lines", run.lines}, {"block", run.block}, {"inputs", pairsJson(run.inputs)}}}};
    if (!run.shard.whole()) j["shard"] = shardJson(run.shard);
    return j;
}

json documentStart(const char* format, const CorpusRun& run) {
    return {{"format", format}, {"version", kCorpusResultVersion}, {"run", runJson(run)}};
}

// The first line (1-based) of this run's part.
int64_t firstLine(const CorpusRun& run) { return int64_t(partLines(run).begin) + 1; }

template <size_t N>
json arrayOf(const int64_t (&v)[N]) {
    return json(std::vector<int64_t>(v, v + N));
}
}  // namespace

EvalLine evalLine(const std::string& hypothesis, const std::string& reference, const std::string& skipped) {
    return {hypothesis, skipped, sentenceBleuStats(hypothesis, reference), sentenceChrfStats(hypothesis, reference)};
}

std::string evalResultJson(const CorpusRun& run, const std::vector<EvalLine>& lines) {
    json root = documentStart("attnlab-eval", run);
    json out = json::array();
    BleuStats bleu;
    ChrfStats chrf;
    int64_t number = firstLine(run);
    for (const auto& l : lines) {
        json j = {{"line", number++}, {"hypothesis", l.hypothesis}};
        if (!l.skipped.empty()) j["skipped"] = l.skipped;
        std::vector<int64_t> b(l.bleu.correct, l.bleu.correct + 4);
        b.insert(b.end(), l.bleu.total, l.bleu.total + 4);
        b.push_back(l.bleu.sys_len);
        b.push_back(l.bleu.ref_len);
        j["bleu_stats"] = b;
        j["chrf_stats"] = {{"hypothesis", arrayOf(l.chrf.hypothesis)},
                           {"reference", arrayOf(l.chrf.reference)},
                           {"matches", arrayOf(l.chrf.matches)}};
        out.push_back(std::move(j));
        bleu += l.bleu;
        chrf += l.chrf;
    }
    root["lines"] = std::move(out);
    const BleuScore b = bleuFromStats(bleu);
    root["bleu"] = {{"score", b.score},
                    {"precisions", std::vector<double>(b.precisions, b.precisions + 4)},
                    {"brevity_penalty", b.brevity_penalty},
                    {"sys_len", b.sys_len},
                    {"ref_len", b.ref_len},
                    {"signature", b.signature}};
    root["chrf"] = chrfFromStats(chrf);
    return root.dump(1) + "\n";
}

std::string scoreResultJson(const CorpusRun& run, const std::vector<ScoreLine>& lines) {
    json root = documentStart("attnlab-score", run);
    json out = json::array();
    int64_t number = firstLine(run), pieces = 0;
    double sum = 0, sum_of_means = 0;
    for (const auto& l : lines) {
        const size_t n = std::min(l.pieces.size(), l.log_probs.size());
        double line_sum = 0;  // in piece order, as the score line's mean
        for (size_t i = 0; i < n; ++i) line_sum += l.log_probs[i];
        const double mean = n ? line_sum / double(n) : 0.0;
        out.push_back({{"line", number++}, {"pieces", l.pieces}, {"log_probs", l.log_probs}, {"mean", mean}});
        for (size_t i = 0; i < n; ++i) sum += l.log_probs[i];
        pieces += int64_t(n);
        sum_of_means += mean;
    }
    root["lines"] = std::move(out);
    root["pieces"] = pieces;
    root["log_prob_sum"] = sum;
    root["mean_log_prob"] = pieces ? sum / double(pieces) : 0.0;
    root["mean_of_means"] = lines.empty() ? 0.0 : sum_of_means / double(lines.size());
    return root.dump(1) + "\n";
}

std::string translateResultJson(const CorpusRun& run, const std::vector<TranslateLine>& lines) {
    json root = documentStart("attnlab-translations", run);
    json out = json::array();
    int64_t number = firstLine(run), translated = 0;
    for (const auto& l : lines) {
        json j = {{"line", number++}, {"translations", l.translations}, {"scores", l.scores}};
        if (!l.skipped.empty())
            j["skipped"] = l.skipped;
        else
            ++translated;
        out.push_back(std::move(j));
    }
    root["lines"] = std::move(out);
    root["translated"] = translated;
    return root.dump(1) + "\n";
}

std::string withRun(const std::string& document, const CorpusRun& run) {
    json root = util::parseJson(document, "withRun");
    root["run"] = runJson(run);
    return root.dump(1) + "\n";
}

// ---- reading back and merging ----

namespace {
struct Part {
    std::string path;
    json doc;
    Shard shard;
};

std::string describeOptions(const json& options) {
    std::string out;
    for (const auto& o : options)
        out += (out.empty() ? "" : " ") + o.at(0).get<std::string>() + " " + o.at(1).get<std::string>();
    return out.empty() ? "none" : out;
}

}  // namespace

std::string optionDifference(const json& a, const json& b) {
    for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
        const std::string x =
            i < a.size() ? a[i].at(0).get<std::string>() + " " + a[i].at(1).get<std::string>() : "(none)";
        const std::string y =
            i < b.size() ? b[i].at(0).get<std::string>() + " " + b[i].at(1).get<std::string>() : "(none)";
        if (x != y) return x + " against " + y;
    }
    return describeOptions(a);
}

namespace {

// The run a result records, every field read (a wrong type: json::exception; a number out of range: InputError
// naming `path`), without its part.
CorpusRun wholeRun(const json& run, const std::string& path) {
    CorpusRun r;
    r.command = run.at("command").get<std::string>();
    r.model = run.at("model").at("package").get<std::string>();
    r.model_fingerprint = run.at("model").at("fingerprint").get<std::string>();
    for (const auto& o : run.at("options"))
        r.options.emplace_back(o.at(0).get<std::string>(), o.at(1).get<std::string>());
    for (const auto& o : run.at("corpus").at("inputs"))
        r.inputs.emplace_back(o.at(0).get<std::string>(), o.at(1).get<std::string>());
    const json& corpus = run.at("corpus");
    r.lines = util::wholeNumberAt(corpus, "lines", 0, util::kMaxJsonLines, path, "\"run\".\"corpus\".");
    r.block = util::wholeNumberAt(corpus, "block", 1, util::kMaxJsonLines, path, "\"run\".\"corpus\".");
    return r;
}

Part readPart(const std::string& path) {
    Part p{path, {}, {}};
    try {
        p.doc = util::parseJson(util::readSmallFile(path, kMaxResultBytes), path);
    } catch (const PackageError& e) {
        throw InputError(e.what());
    }
    if (!p.doc.is_object() || !p.doc.contains("run") || !p.doc["run"].is_object() || !p.doc.contains("format"))
        throw InputError(path +
                         ": not a result of attnlab-cli --json (no \"run\": written by an older version, "
                         "or another file)");
    try {
        const json& run = p.doc["run"];
        if (run.contains("shard")) {
            const char* where = "\"run\".\"shard\".";
            p.shard.count = int(util::wholeNumberAt(run["shard"], "count", 1, kMaxShards, path, where));
            p.shard.index = int(util::wholeNumberAt(run["shard"], "index", 1, p.shard.count, path, where));
        }
        (void)wholeRun(run, path);
    } catch (const json::exception& e) {
        throw InputError(path + ": its \"run\" is incomplete: " + e.what());
    }
    return p;
}

// Every part of one run: the same command, model, options and corpus.
void checkSameRun(const Part& a, const Part& b) {
    const json &x = a.doc["run"], &y = b.doc["run"];
    if (a.doc["format"] != b.doc["format"] || x["command"] != y["command"])
        throw InputError(b.path + ": a result of attnlab-cli " + y["command"].dump() + ", " + a.path + " of " +
                         x["command"].dump() + ": parts of one run are merged");
    if (x["model"]["fingerprint"] != y["model"]["fingerprint"])
        throw InputError(b.path + ": another model than " + a.path + " (" +
                         y["model"]["fingerprint"].get<std::string>() + " against " +
                         x["model"]["fingerprint"].get<std::string>() + ")");
    if (x["options"] != y["options"])
        throw InputError(b.path + ": other options than " + a.path + ": " +
                         optionDifference(y["options"], x["options"]));
    if (x["corpus"] != y["corpus"])
        throw InputError(b.path + ": another corpus than " + a.path + " (" + y["corpus"].dump() + " against " +
                         x["corpus"].dump() + ")");
    if (a.shard.count != b.shard.count)
        throw InputError(b.path + " is part " + std::to_string(b.shard.index) + " of " + std::to_string(b.shard.count) +
                         " but " + a.path + " is part " + std::to_string(a.shard.index) + " of " +
                         std::to_string(a.shard.count) + ": parts of one run are merged");
}

// The parts in order, each once; throws naming a part given twice or missing.
std::vector<const Part*> inOrder(const std::vector<Part>& parts) {
    const int n = parts.front().shard.count;
    std::vector<const Part*> at(size_t(n), nullptr);
    for (const auto& p : parts) {
        auto& slot = at[size_t(p.shard.index - 1)];
        if (slot)
            throw InputError("part " + std::to_string(p.shard.index) + " of " + std::to_string(n) +
                             " is given twice: " + slot->path + " and " + p.path);
        slot = &p;
    }
    for (int k = 0; k < n; ++k)
        if (!at[size_t(k)])
            throw InputError("part " + std::to_string(k + 1) + " of " + std::to_string(n) + " is missing");
    return at;
}

// One line of a part, and the part's file (named in messages).
struct PartLine {
    const json& line;
    const std::string& path;
};

// The parts' "lines" one after the other, each part's checked to be its block of the corpus, line by line.
std::vector<PartLine> concatenatedLines(const std::vector<const Part*>& parts, const CorpusRun& run) {
    std::vector<PartLine> out;
    for (const Part* p : parts) {
        const LineRange r = shardLines(size_t(run.lines), p->shard, size_t(run.block));
        const json& l = p->doc.at("lines");
        if (!l.is_array() || l.size() != r.size())
            throw InputError(p->path + ": part " + std::to_string(p->shard.index) + " of " +
                             std::to_string(p->shard.count) + " should hold lines " + std::to_string(r.begin + 1) +
                             ".." + std::to_string(r.end) + " but holds " + std::to_string(l.size()) + " lines");
        for (size_t i = 0; i < l.size(); ++i) {
            const int64_t expected = int64_t(r.begin + i) + 1;
            (void)util::wholeNumberAt(l[i], "line", expected, expected, p->path,
                                      "line " + std::to_string(expected) + "'s ");
            out.push_back({l[i], p->path});
        }
    }
    return out;
}

// A line's counts: each a whole number from 0 to kMaxJsonCount, so that the corpus's sums cannot overflow.
template <size_t N>
void fill(int64_t (&to)[N], const PartLine& l, const json& from, const std::string& name) {
    const std::string what = "line " + l.line["line"].dump() + "'s " + name;
    if (!from.is_array() || from.size() != N)
        throw InputError(l.path + ": " + what + ": " + std::to_string(N) + " counts expected");
    for (size_t i = 0; i < N; ++i)
        to[i] = util::wholeNumber(from[i], 0, util::kMaxJsonCount, l.path, what + "[" + std::to_string(i) + "]");
}

std::string mergedEval(const CorpusRun& run, const std::vector<PartLine>& lines) {
    std::vector<EvalLine> out;
    for (const auto& l : lines) {
        const json& j = l.line;
        EvalLine e;
        e.hypothesis = j.at("hypothesis").get<std::string>();
        e.skipped = j.value("skipped", std::string());
        int64_t b[10];
        fill(b, l, j.at("bleu_stats"), "\"bleu_stats\"");
        std::copy(b, b + 4, e.bleu.correct);
        std::copy(b + 4, b + 8, e.bleu.total);
        e.bleu.sys_len = b[8];
        e.bleu.ref_len = b[9];
        const auto& c = j.at("chrf_stats");
        fill(e.chrf.hypothesis, l, c.at("hypothesis"), "\"chrf_stats\".\"hypothesis\"");
        fill(e.chrf.reference, l, c.at("reference"), "\"chrf_stats\".\"reference\"");
        fill(e.chrf.matches, l, c.at("matches"), "\"chrf_stats\".\"matches\"");
        out.push_back(std::move(e));
    }
    return evalResultJson(run, out);
}

std::string mergedScore(const CorpusRun& run, const std::vector<PartLine>& lines) {
    std::vector<ScoreLine> out;
    for (const auto& l : lines)
        out.push_back(
            {l.line.at("pieces").get<std::vector<std::string>>(), l.line.at("log_probs").get<std::vector<double>>()});
    return scoreResultJson(run, out);
}

std::string mergedTranslations(const CorpusRun& run, const std::vector<PartLine>& lines) {
    std::vector<TranslateLine> out;
    for (const auto& l : lines)
        out.push_back({l.line.at("translations").get<std::vector<std::string>>(),
                       l.line.at("scores").get<std::vector<double>>(), l.line.value("skipped", std::string())});
    return translateResultJson(run, out);
}

// A part may have every line skipped (a part without sentences, CorpusPlace::part); the merged corpus may not, as the
// whole run may not (headlab::checkSomethingLeft's message).
void refuseEmptyCorpus(const json& merged, const CorpusRun& run, const std::string& what) {
    const json& skipped = merged.at("skipped");
    if (run.lines == 0 || skipped.size() != size_t(run.lines)) return;
    throw InputError("no " + what + " (line " + skipped.front().at("pair").dump() + ": " +
                     skipped.front().at("reason").get<std::string>() + ")");
}

// heads --importance's second stage: its parts merge beside the first stage's merged result (io/head_lab_merge.h),
// a whole result of their run, taken out of `parts` here.
std::optional<Part> takeImportanceSingles(std::vector<Part>& parts) {
    const auto it = std::find_if(parts.begin(), parts.end(),
                                 [](const Part& p) { return headlab_merge::isImportanceSingles(p.doc); });
    if (it == parts.end() || parts.size() == 1) return std::nullopt;
    Part singles = std::move(*it);
    parts.erase(it);
    const Shard whole = singles.shard;
    singles.shard = parts.front().shard;  // of their run but for the part
    checkSameRun(parts.front(), singles);
    singles.shard = whole;
    return singles;
}

std::string mergedDocument(const std::vector<const Part*>& parts, const Part* singles = nullptr) {
    const json& first = parts.front()->doc;
    const std::string format = first.at("format").get<std::string>();
    CorpusRun run = wholeRun(first.at("run"), parts.front()->path);
    if (format == "attnlab-eval") return mergedEval(run, concatenatedLines(parts, run));
    if (format == "attnlab-score") return mergedScore(run, concatenatedLines(parts, run));
    if (format == "attnlab-translations") return mergedTranslations(run, concatenatedLines(parts, run));
    std::vector<headlab_merge::PartDocument> docs;
    for (const Part* p : parts) {
        const LineRange r = shardLines(size_t(run.lines), p->shard, size_t(run.block));
        docs.push_back({p->path, &p->doc, int64_t(r.begin), int64_t(r.size())});
    }
    json merged;
    if (format == "attnlab-alignment") {
        merged = headlab_merge::mergeAlignment(docs);
        refuseEmptyCorpus(merged, run, "sentence pair could be aligned");
    } else if (format == "attnlab-heads") {
        merged = singles ? headlab_merge::mergeImportanceCurve({singles->path, &singles->doc, 0, run.lines}, docs)
                         : headlab_merge::mergeHeads(docs);
        refuseEmptyCorpus(merged, run, "line could be read");
    } else
        throw InputError(parts.front()->path + ": results of format \"" + format + "\" are not merged");
    merged["run"] = runJson(run);
    return merged.dump(1) + "\n";
}
}  // namespace

std::string mergeCorpusResults(const std::vector<std::string>& paths) {
    if (paths.empty()) throw InputError("merge: no parts given");
    std::vector<Part> parts;
    for (const auto& p : paths) parts.push_back(readPart(p));
    try {
        const std::optional<Part> singles = takeImportanceSingles(parts);
        for (size_t i = 1; i < parts.size(); ++i) checkSameRun(parts.front(), parts[i]);
        return mergedDocument(inOrder(parts), singles ? &*singles : nullptr);
    } catch (const json::exception& e) {
        throw InputError("merge of " + parts.front().path + "...: a part is malformed: " + e.what());
    }
}

}  // namespace attnlab
