#include "score_command.h"

#include <attnlab/errors.h>
#include <attnlab/file_write.h>
#include <attnlab/partial_result.h>
#include <attnlab/result_json.h>
#include <attnlab/text_io.h>
#include <attnlab/translator.h>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <iostream>
#include <numeric>

namespace attnlab_cli {

namespace {
// Pairs teacher-forced together; --attention keeps every result for its one JSON document.
constexpr size_t kChunk = 64;
constexpr size_t kMaxKeptResults = 1000;

std::string number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6f", v);
    return buf;
}
// teacherForce names "pair K" of the chunk; the user counts lines of the files.
std::string lineNamed(const std::string& message, size_t chunk_begin) {
    const size_t colon = message.find(':');
    if (message.rfind("pair ", 0) != 0 || colon == std::string::npos) return message;
    size_t k = 0;
    for (size_t i = 5; i < colon; ++i) {
        if (!std::isdigit(static_cast<unsigned char>(message[i]))) return message;
        k = k * 10 + size_t(message[i] - '0');
    }
    return "line " + std::to_string(chunk_begin + k) + message.substr(colon);
}
}  // namespace

std::string scoreLine(const std::vector<std::string>& pieces, const std::vector<double>& log_probs) {
    const size_t n = std::min(pieces.size(), log_probs.size());
    const double mean = n ? std::accumulate(log_probs.begin(), log_probs.begin() + long(n), 0.0) / double(n) : 0.0;
    std::string out = number(mean) + "\t";
    for (size_t i = 0; i < n; ++i) out += (i ? " " : "") + pieces[i] + "=" + number(log_probs[i]);
    return out;
}

void addScore(CLI::App& app, CommonOptions& common, ScoreCommand& s) {
    s.cmd =
        app.add_subcommand("score",
                           "Score given translations: each target piece's log-probability under teacher forcing (</s> "
                           "included) and their mean, one line per pair");
    addCommon(s.cmd, common);
    s.cmd->add_option("--src", s.src, "Source sentences, one per line")->required();
    s.cmd->add_option("--tgt", s.tgt, "Their translations, one per line (as many lines as --src)")->required();
    s.cmd->add_option("--attention", s.attention_path,
                      "Write the pieces and every attention map of the forced targets to this JSON file (at most " +
                          std::to_string(kMaxKeptResults) + " pairs)");
    s.cmd->add_option("--batch-size", s.decoding.max_batch_size, "Pairs computed together")->capture_default_str();
    addLanguages(s.cmd, s.decoding);
    addCorpusOutput(s.cmd, s.corpus,
                    "Write the result as JSON: every pair's pieces, their log-probabilities and mean, and the corpus's "
                    "sum and means (a part's with --shard)");
}

namespace {
// The pairs [range) teacher-forced kChunk at a time, the chunks cut at the corpus's blocks (attnlab/partial_result.h:
// a pair is batched with the same pairs in a part as in the whole run), each line printed as it comes; every result
// kept with `keep`.
std::vector<attnlab::ScoreLine> scored(const attnlab::Translator& t, const std::vector<std::string>& sources,
                                       const std::vector<std::string>& targets, const attnlab::LineRange& range,
                                       size_t block, const attnlab::DecodingOptions& d,
                                       std::vector<attnlab::TranslationResult>* keep) {
    std::vector<attnlab::ScoreLine> lines;
    const bool progress = isatty(STDERR_FILENO) && !isatty(STDOUT_FILENO);
    for (size_t begin = range.begin, end; begin < range.end; begin = end) {
        end = std::min(range.end, attnlab::chunkEnd(begin, block, kChunk));
        const std::vector<std::string> src(sources.begin() + long(begin), sources.begin() + long(end));
        const std::vector<std::string> tgt(targets.begin() + long(begin), targets.begin() + long(end));
        std::vector<attnlab::TranslationResult> results;
        try {
            results = t.teacherForce(src, tgt, d);
        } catch (const attnlab::InputError& e) {
            throw attnlab::InputError(lineNamed(e.what(), begin));
        }
        for (const auto& r : results) {
            std::cout << scoreLine(r.best.pieces, r.best.token_log_probs) << "\n";
            lines.push_back({r.best.pieces, r.best.token_log_probs});
        }
        std::cout.flush();
        if (progress) std::cerr << "\rscored " << end - range.begin << " of " << range.size() << " pairs" << std::flush;
        if (keep) std::move(results.begin(), results.end(), std::back_inserter(*keep));
    }
    if (progress) std::cerr << "\r\033[K" << std::flush;
    return lines;
}
}  // namespace

int runScore(const CommonOptions& common, ScoreCommand& s) {
    const attnlab::Shard shard = s.corpus.parsed();
    const auto sources = attnlab::readTextLines(s.src), targets = attnlab::readTextLines(s.tgt);
    if (sources.size() != targets.size())
        throw attnlab::InputError("--src has " + std::to_string(sources.size()) + " lines but --tgt has " +
                                  std::to_string(targets.size()) + ": score needs one translation per source line");
    const auto part = attnlab::shardLines(sources.size(), shard, attnlab::shardBlock(s.decoding.max_batch_size));
    const bool keep = !s.attention_path.empty();
    if (keep && part.size() > kMaxKeptResults)
        throw attnlab::InputError("--attention keeps every pair's maps in one file: at most " +
                                  std::to_string(kMaxKeptResults) + " pairs (" + std::to_string(part.size()) +
                                  " given)");
    attnlab::Translator t = load(common);
    const auto run = corpusRun(s.cmd, t, s.corpus, {{"src", &sources}, {"tgt", &targets}}, s.decoding.max_batch_size);
    announcePart(run);
    s.decoding.return_attention = keep;
    std::vector<attnlab::TranslationResult> kept;
    const auto lines = scored(t, sources, targets, part, size_t(run.block), s.decoding, keep ? &kept : nullptr);
    if (keep) attnlab::writeAttentionJson(s.attention_path, kept, t.info(), s.decoding);
    if (!s.corpus.json_path.empty()) attnlab::saveToFile(s.corpus.json_path, attnlab::scoreResultJson(run, lines));
    return 0;
}

}  // namespace attnlab_cli
