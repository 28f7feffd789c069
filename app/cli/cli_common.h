#pragma once
// What every attnlab-cli subcommand shares: the model options and loading, and progress on stderr.
#include <attnlab/head_lab.h>
#include <attnlab/hub.h>
#include <attnlab/partial_result.h>
#include <attnlab/translator.h>

#include <CLI/CLI.hpp>

#include <string>

namespace attnlab_cli {

struct CommonOptions {
    std::string model;
    std::string device = "auto";
    int threads = 0;
    bool no_packed_weights = false;
    std::string compute_type = "float32";
};

void addCommon(CLI::App* cmd, CommonOptions& o);
// --src-lang / --tgt-lang: a multilingual model's languages, as the model names them.
void addLanguages(CLI::App* cmd, attnlab::DecodingOptions& d);
// A download's progress on stderr: a line redrawn in place on a terminal; in a script a line as each file begins,
// one every 10 s and "· done" at the end. `drawn`: a line is left open (the caller ends it).
attnlab::HubProgressCallback downloadProgress(bool& drawn);
// downloadProgress's open line ended when the object goes, also when the download fails (the error then goes
// on a line of its own).
class DownloadProgressLine {
public:
    DownloadProgressLine() = default;
    DownloadProgressLine(const DownloadProgressLine&) = delete;
    DownloadProgressLine& operator=(const DownloadProgressLine&) = delete;
    ~DownloadProgressLine();
    attnlab::HubProgressCallback callback() { return downloadProgress(m_drawn); }

private:
    bool m_drawn = false;
};
// --model as given, or the bundled default; throws InputError when there is none.
std::string resolveModel(const std::string& given);
attnlab::Translator load(const CommonOptions& o);
// The model's own decoding defaults (an imported model's num_beams and max_length) where the
// user gave no --beam on `cmd`.
void useModelDefaults(attnlab::DecodingOptions& d, const attnlab::Translator& t, const CLI::App* cmd);

// Layers and heads as people count them, 1-based, in what the commands print for people (as the
// app's ui/numbering.h); arguments and files keep the 0-based `kind:layer:head` (attnlab::headName).
std::string shownHead(const attnlab::HeadRef& head);  // "cross L3 H6" for cross:2:5
// "L3 H6", "L3" (its heads' mean), "all"; "shift L3 H6" and so on for shifted methods
std::string shownMethod(const attnlab::AlignmentMethod& method);

// --shard K/N and --json FILE of a corpus command (issue 55, attnlab/partial_result.h): parsed and checked once,
// here, for every command that takes them.
struct CorpusOutput {
    std::string shard;      // "K/N", empty: the whole corpus
    std::string json_path;  // the result, whole or a part
    attnlab::Shard parsed() const { return shard.empty() ? attnlab::Shard{} : attnlab::parseShard(shard); }
};
// `json_help`: what --json writes (nullptr: the command has its own --json, bound to o.json_path by the caller).
void addCorpusOutput(CLI::App* cmd, CorpusOutput& o, const char* json_help);
// The run a corpus result records: the command, the model's fingerprint and device kind, every option of `cmd` that
// changes a number (not the files read or written, --model, --device's index, --threads, --shard), each input's
// role and checksum, the corpus's line count, its blocks (attnlab::shardBlock of `batch_size`, the command's
// --batch-size) and the part.
attnlab::CorpusRun corpusRun(const CLI::App* cmd, const attnlab::Translator& translator, const CorpusOutput& o,
                             const std::vector<std::pair<std::string, const std::vector<std::string>*>>& inputs,
                             int batch_size);
// "part 2 of 3: lines 11..20 of 30" on stderr (nothing for a whole run).
void announcePart(const attnlab::CorpusRun& run);

// "\r<stage> done/total" on stderr when it is a terminal (nothing otherwise); clear() erases it.
class ProgressLine {
public:
    ProgressLine();
    attnlab::CorpusCallback callback();
    void clear();

private:
    bool m_tty;
};

}  // namespace attnlab_cli
