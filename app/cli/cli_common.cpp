#include "cli_common.h"

#include <algorithm>
#include <chrono>
#include <iterator>
#include <memory>

#include <attnlab/errors.h>
#include <attnlab/hub.h>
#include <attnlab/hub_progress.h>
#include <attnlab/package.h>
#include <attnlab/terminal_text.h>

#include <unistd.h>

#include <cstdio>
#include <iostream>

namespace attnlab_cli {

std::string shownHead(const attnlab::HeadRef& head) {
    return attnlab::attentionKindName(head.kind) + " L" + std::to_string(head.layer + 1) + " H" +
           std::to_string(head.head + 1);
}

std::string shownMethod(const attnlab::AlignmentMethod& m) {
    const std::string shift = (m.sym == attnlab::Symmetrization::None ? "" : attnlab::symmetrizationName(m.sym) + " ") +
                              (m.shift ? "shift " : "");
    switch (m.kind) {
    case attnlab::AlignmentMethod::Kind::Head:
        return shift + "L" + std::to_string(m.layer + 1) + " H" + std::to_string(m.head + 1);
    case attnlab::AlignmentMethod::Kind::Layer: return shift + "L" + std::to_string(m.layer + 1);
    case attnlab::AlignmentMethod::Kind::AltiPlus: return shift + "ALTI+";
    case attnlab::AlignmentMethod::Kind::ValueZeroing: return shift + "value zeroing";
    case attnlab::AlignmentMethod::Kind::AltiPlusLayer: return shift + "ALTI+ L" + std::to_string(m.layer + 1);
    case attnlab::AlignmentMethod::Kind::ValueZeroingLayer:
        return shift + "value zeroing L" + std::to_string(m.layer + 1);
    case attnlab::AlignmentMethod::Kind::All: break;
    }
    return shift + "all";
}

void addCommon(CLI::App* cmd, CommonOptions& o) {
    cmd->add_option("--model,-m", o.model,
                    "Model package directory, a bundled model's name or direction (de-en), or a Hugging Face name "
                    "ORG/NAME[@REVISION] (the shared cache, else downloaded: docs/hub.md); default: the bundled de-en");
    cmd->add_option("--device", o.device, "auto | cpu | cuda | cuda:N")->capture_default_str();
    cmd->add_option("--threads", o.threads,
                    "LibTorch threads (wins over ATTNLAB_THREADS; 0 = by the work of a decoding step: the model's "
                    "size x a batch's sentences x the beam, one thread for small work, up to every core)")
        ->capture_default_str();
    cmd->add_flag("--no-packed-weights", o.no_packed_weights,
                  "Multiply with LibTorch's at::linear instead of weights packed once (slower; the results "
                  "before issue 25, for comparison)");
    cmd->add_option("--compute-type", o.compute_type,
                    "float32 (as trained) | int8 | bfloat16: what the model is computed in (CPU; int8 and bfloat16 "
                    "through oneDNN, where the processor has the instructions, holding a quarter / half of "
                    "float32's memory)")
        ->check(CLI::IsMember({"float32", "int8", "bfloat16"}))
        ->capture_default_str();
}

void addLanguages(CLI::App* cmd, attnlab::DecodingOptions& d) {
    cmd->add_option("--src-lang", d.source_language,
                    "Source language of a multilingual model, as it names them (en or __en__, eng_Latn, en_XX); "
                    "default: the model's");
    cmd->add_option("--tgt-lang", d.target_language,
                    "Target language of a multilingual model (its token is forced as the first output); default: "
                    "the model's");
}

// A download's progress on stderr. On a terminal, one line redrawn in place (at least every second or two while
// a request waits or bytes come). In a script (stderr not a terminal), a line as each file begins, one every
// 10 s while it arrives and one when the last has come ("· done"), so that a log shows what is going on and that it is
// alive. A notice (the model is not a folder here; a file of the cache set aside) always on a line of its own. `drawn`
// says whether a line is left open (ended by the caller once the download is over: shards may come after a file count
// looked complete).
attnlab::HubProgressCallback downloadProgress(bool& drawn) {
    using Clock = std::chrono::steady_clock;
    struct Shown {
        Clock::time_point at{};
        std::string file;
        int files_done = -1;
    };
    const bool tty = isatty(STDERR_FILENO);
    auto shown = std::make_shared<Shown>();
    return [tty, shown, &drawn](const attnlab::HubProgress& p) {
        if (!p.notice.empty()) {
            std::cerr << (drawn ? "\r\033[K" : "") << "attnlab-cli: " << attnlab::escapedForTerminal(p.notice) << "\n";
            drawn = false;
            return true;
        }
        if (p.files_total == 0) return true;  // still listing the files
        const std::string line = attnlab::escapedForTerminal(attnlab::describeHubProgress(p));
        if (tty) {
            std::cerr << "\r\033[K  " << line << std::flush;
            drawn = true;
            return true;
        }
        const Clock::time_point now = Clock::now();
        const bool last = p.files_done == p.files_total;  // (shards may still follow: the caller ends the line)
        const bool turn = p.file != shown->file || (last && p.files_done != shown->files_done);
        if (!turn && now - shown->at < std::chrono::seconds(10)) return true;
        *shown = {now, p.file, p.files_done};
        std::cerr << "  " << line << (last ? " · done" : "") << std::endl;
        return true;
    };
}

DownloadProgressLine::~DownloadProgressLine() {
    if (m_drawn) std::cerr << "\n";
}

std::string resolveModel(const std::string& given) {
    if (!given.empty()) {
        DownloadProgressLine line;
        return attnlab::resolveModelArgument(given, line.callback());
    }
    const std::string dir = attnlab::defaultModelDir();
    if (dir.empty())
        throw attnlab::InputError(
            "no --model given and no bundled model found (set ATTNLAB_MODEL_DIR or pass --model DIR)");
    return dir;
}

void useModelDefaults(attnlab::DecodingOptions& d, const attnlab::Translator& t, const CLI::App* cmd) {
    const auto& c = t.info().config;
    const CLI::Option* beam = cmd ? cmd->get_option_no_throw("--beam") : nullptr;
    if (c.num_beams > 0 && (!beam || beam->count() == 0)) d.beam_size = std::max(c.num_beams, d.nbest);
    // Hugging Face's max_length counts the decoder's start token.
    if (c.max_length > 1) d.max_length = std::min(d.max_length, c.max_length - 1);
}

attnlab::Translator load(const CommonOptions& o) {
    attnlab::TranslatorOptions t;
    t.device = o.device;
    t.num_threads = o.threads;
    t.packed_weights = !o.no_packed_weights;
    t.compute_type = o.compute_type;
    return attnlab::Translator(resolveModel(o.model), t);
}

void addCorpusOutput(CLI::App* cmd, CorpusOutput& o, const char* json_help) {
    cmd->add_option("--shard", o.shard,
                    "K/N: only the Kth of N parts of the corpus (contiguous blocks of lines), written with --json as "
                    "a part that `attnlab-cli merge` puts together with the others (docs/scale-out.md)");
    if (json_help) cmd->add_option("--json", o.json_path, json_help);
}

namespace {
// Options that name what is read or written, or where and how fast it runs: not part of a run's identity.
bool outsideIdentity(const std::string& name) {
    static const char* kNames[] = {"--help",    "--model", "--device", "--threads",   "--shard",
                                   "--json",    "--csv",   "--output", "--src",       "--ref",
                                   "--tgt",     "--gold",  "--text",   "--attention", "--trace",
                                   "--workers", "--slurm", "--submit", "--sbatch",    "--dev"};
    return std::find(std::begin(kNames), std::end(kNames), name) != std::end(kNames) ||
           name.rfind("--sbatch", 0) == 0 || name.rfind("--slurm", 0) == 0;
}

std::string optionValue(const CLI::Option* o) {
    if (o->count() == 0) return o->get_default_str();
    std::string out;
    for (const auto& r : o->results()) out += (out.empty() ? "" : ",") + r;
    return out;
}
}  // namespace

attnlab::CorpusRun corpusRun(const CLI::App* cmd, const attnlab::Translator& translator, const CorpusOutput& o,
                             const std::vector<std::pair<std::string, const std::vector<std::string>*>>& inputs,
                             int batch_size) {
    attnlab::CorpusRun run;
    run.command = cmd->get_name();
    run.model = translator.info().package_dir;
    run.model_fingerprint = attnlab::modelFingerprint(run.model);
    const std::string device = translator.info().device;
    run.options.emplace_back("device", device.substr(0, device.find(':')));
    for (const CLI::Option* opt : cmd->get_options()) {
        const std::string name = opt->get_name();
        if (!outsideIdentity(name)) run.options.emplace_back(name, optionValue(opt));
    }
    for (const auto& [role, lines] : inputs) run.inputs.emplace_back(role, attnlab::linesChecksum(*lines));
    run.lines = inputs.empty() ? 0 : int64_t(inputs.front().second->size());
    run.shard = o.parsed();
    run.block = int64_t(attnlab::shardBlock(batch_size));
    return run;
}

void announcePart(const attnlab::CorpusRun& run) {
    if (run.shard.whole()) return;
    const auto r = attnlab::partLines(run);
    std::cerr << "part " << run.shard.index << " of " << run.shard.count << ": ";
    if (r.size() == 0)
        std::cerr << "no lines";  // more parts than blocks
    else
        std::cerr << "lines " << r.begin + 1 << ".." << r.end;
    std::cerr << " of " << run.lines << " (blocks of " << run.block << " lines)\n";
}

ProgressLine::ProgressLine() : m_tty(isatty(STDERR_FILENO)) {}

attnlab::CorpusCallback ProgressLine::callback() {
    return [this](const attnlab::CorpusProgress& p) {
        if (m_tty) std::cerr << "\r\033[K" << p.stage << " " << p.done << "/" << p.total << std::flush;
        return true;
    };
}

void ProgressLine::clear() {
    if (m_tty) std::cerr << "\r\033[K" << std::flush;
}

}  // namespace attnlab_cli
