#include "slurm_options.h"

#include <attnlab/decoding_options.h>
#include <attnlab/errors.h>
#include <attnlab/partial_result.h>
#include <attnlab/slurm.h>
#include <attnlab/terminal_text.h>
#include <attnlab/text_io.h>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>

namespace attnlab_cli {
namespace fs = std::filesystem;
namespace slurm = attnlab::slurm;

namespace {
// The options of this file, and the two the job sets for each task (--json, --shard): left out of the tasks'
// command line. `--submit` is the one flag among them.
constexpr std::array<const char*, 6> kWithValue{"--slurm",     "--slurm-option", "--slurm-options",
                                                "--slurm-dir", "--json",         "--shard"};
constexpr const char* kSubmit = "--submit";
// What a corpus command writes besides --json: every task would write the same file.
constexpr std::array<const char*, 4> kOtherOutputs{"--output", "--csv", "--attention", "--trace"};

// The command and its options as given (argv[1..]), without the options above (as "--name value" or
// "--name=value").
std::vector<std::string> taskArguments(int argc, char** argv) {
    std::vector<std::string> kept;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const std::string name = a.substr(0, a.find('='));
        if (name == kSubmit) continue;  // "--submit", "--submit=true": a task submits nothing
        if (std::find(kWithValue.begin(), kWithValue.end(), name) == kWithValue.end()) {
            kept.push_back(a);
            continue;
        }
        if (name == a) ++i;  // its value is the next argument
    }
    return kept;
}

// attnlab-cli as the tasks should run it: the launcher beside this program (attnlab-cli.real), else this program.
std::string thisProgram() {
    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    if (ec) throw attnlab::InputError("cannot find attnlab-cli's own path (/proc/self/exe): " + ec.message());
    const std::string suffix = ".real", s = self.string();
    if (s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0) {
        const std::string launcher = s.substr(0, s.size() - suffix.size());
        if (access(launcher.c_str(), X_OK) == 0) return launcher;
    }
    return s;
}

// The options file's, then --slurm-option's: one given on the command line replaces the file's of that name.
std::vector<slurm::SbatchOption> sbatchOptions(const SlurmOptions& s) {
    std::vector<slurm::SbatchOption> all;
    if (!s.options_file.empty()) all = slurm::readSbatchOptions(s.options_file);
    for (const auto& text : s.options) {
        auto o = slurm::parseSbatchOption(text, "--slurm-option " + text);
        auto same = std::find_if(all.begin(), all.end(), [&](const auto& a) { return a.first == o.first; });
        if (same == all.end())
            all.push_back(std::move(o));
        else
            *same = std::move(o);
    }
    return all;
}

// Whether `cmd` has the option `name` and it was given.
bool given(const CLI::App& cmd, const char* name) {
    const CLI::Option* o = cmd.get_option_no_throw(name);
    return o && o->count() > 0;
}

// The one option of `cmd` whose value names where the merged result goes (--json), checked.
std::string mergedPath(const CLI::App& cmd) {
    const CLI::Option* json = cmd.get_option_no_throw("--json");
    if (!json || json->count() == 0 || json->as<std::string>().empty())
        throw attnlab::ConfigError("--slurm needs --json FILE: where the merge job writes the result");
    if (given(cmd, "--shard")) throw attnlab::ConfigError("--slurm N makes N shards itself: leave out --shard");
    for (const char* name : kOtherOutputs)
        if (given(cmd, name))
            throw attnlab::ConfigError(std::string(name) +
                                       " cannot go with --slurm: every task would write it (the merged --json "
                                       "holds every line's result)");
    return fs::absolute(json->as<std::string>()).lexically_normal().string();
}

// What the tasks' --shard K/N cannot take, refused here rather than by every task on the cluster: more parts than
// --shard takes (parseShard), a route through two models (runTranslate refuses --shard with --from / --to), the
// file the importance chain's first merge writes.
void checkShardable(const CLI::App& cmd, int tasks) {
    if (tasks > attnlab::kMaxShards)
        throw attnlab::ConfigError("--slurm " + std::to_string(tasks) + ": at most " +
                                   std::to_string(attnlab::kMaxShards) + " tasks (the parts --shard K/N takes)");
    if (given(cmd, "--from"))
        throw attnlab::ConfigError(
            "--slurm runs one model (--model) in every task, not a route (--from / --to): a pivot's two legs "
            "are not sharded");
    if (given(cmd, "--importance-singles"))
        throw attnlab::ConfigError(
            "--importance-singles is what the job's first merge writes (heads --importance --slurm runs both "
            "stages): leave it out");
}

// translate's lines from standard input: a task has none of its own (sbatch gives it /dev/null) but the file
// --slurm-option input=FILE names (#SBATCH --input).
void checkInput(const CLI::App& cmd, const std::vector<slurm::SbatchOption>& options) {
    if (cmd.get_name() != "translate") return;
    const CLI::Option* text = cmd.get_option_no_throw("--text");
    const bool input = std::any_of(options.begin(), options.end(), [](const auto& o) { return o.first == "input"; });
    if ((!text || text->count() == 0) && !input)
        throw attnlab::ConfigError(
            "translate --slurm: a task reads no terminal; give the lines with --text, or the "
            "file of them with --slurm-option input=FILE (each task's standard input)");
}

// Every file a task reads, checked here whatever --shard-by (heads' parts read every line): --src, --ref, --tgt,
// --gold, align's --dev SRC TGT GOLD, and translate's #SBATCH --input file (not a filename pattern: a file per task).
// Relative paths mean the same here as in the tasks (#SBATCH --chdir is this folder). The models are found apart
// (resolveModel).
void checkInputFiles(const CLI::App& cmd, const std::vector<slurm::SbatchOption>& options) {
    std::vector<std::pair<std::string, std::string>> files;  // the option, the path
    for (const char* name : {"--src", "--ref", "--tgt", "--gold", "--dev"})
        if (given(cmd, name))
            for (const auto& path : cmd.get_option(name)->as<std::vector<std::string>>())
                files.emplace_back(name, path);
    for (const auto& o : options)
        if (o.first == "input" && o.second.find('%') == std::string::npos)
            files.emplace_back("--slurm-option input", o.second);
    for (const auto& [name, path] : files) {
        std::error_code ec;
        const auto status = fs::status(path, ec);
        std::string problem;
        if (!fs::exists(status))
            problem = "missing file";
        else if (fs::is_directory(status))
            problem = "a folder, not a file";
        else if (access(path.c_str(), R_OK) != 0)
            problem = std::string("cannot be read: ") + std::strerror(errno);
        if (!problem.empty())
            throw attnlab::InputError(path + ": " + problem + " (" + name + ", which every task reads)");
    }
}

// The lines the tasks' parts are cut from: --src (heads: the first --limit), translate's --text or the file
// #SBATCH --input gives it; nothing where that is a filename pattern (a file per task) or none is given.
std::optional<size_t> corpusLines(const CLI::App& cmd, const std::vector<slurm::SbatchOption>& options) {
    if (cmd.get_name() == "translate") {
        if (given(cmd, "--text")) return cmd.get_option("--text")->results().size();
        const auto input =
            std::find_if(options.begin(), options.end(), [](const auto& o) { return o.first == "input"; });
        if (input == options.end() || input->second.find('%') != std::string::npos) return std::nullopt;
        return attnlab::readTextLines(input->second).size();
    }
    if (!given(cmd, "--src")) return std::nullopt;
    size_t lines = attnlab::readTextLines(cmd.get_option("--src")->as<std::string>()).size();
    if (given(cmd, "--limit")) {
        const int limit = cmd.get_option("--limit")->as<int>();
        if (limit > 0) lines = std::min(lines, size_t(limit));
    }
    return lines;
}

// The command's --batch-size, which sizes its blocks: as given, else its default (the command's variable; where none
// is registered, DecodingOptions' batch, align's default: AlignCommand::batch_size).
int batchSize(const CLI::App& cmd, const SlurmOptions& s) {
    if (given(cmd, "--batch-size")) return cmd.get_option("--batch-size")->as<int>();
    const auto batch =
        std::find_if(s.batch_sizes.begin(), s.batch_sizes.end(), [&](const auto& b) { return b.first == &cmd; });
    return batch != s.batch_sizes.end() && batch->second ? *batch->second : attnlab::DecodingOptions{}.max_batch_size;
}

// More tasks than the corpus has blocks (partial_result.h: a part is whole blocks) leave some without lines: they
// still run and merge, but each one loads the model for nothing, so it is said before the job is written.
void warnOfEmptyTasks(const CLI::App& cmd, const SlurmOptions& s, const std::vector<slurm::SbatchOption>& options) {
    if (cmd.get_option_no_throw("--shard-by") && cmd.get_option("--shard-by")->as<std::string>() == "heads")
        return;  // the parts are heads, not lines
    const auto lines = corpusLines(cmd, options);
    if (!lines) return;
    const size_t block = attnlab::shardBlock(batchSize(cmd, s)), blocks = (*lines + block - 1) / block;
    if (size_t(s.tasks) <= blocks) return;
    std::cerr << "attnlab-cli: warning: --slurm " << s.tasks << ": " << size_t(s.tasks) - blocks << " of the "
              << s.tasks << " tasks will have no lines: the corpus's " << *lines << " lines are " << blocks
              << (blocks == 1 ? " block" : " blocks") << " of " << block
              << " lines and a task takes whole blocks (they run and merge all the same; --slurm "
              << std::max<size_t>(blocks, 1) << " gives every task lines"
              << (cmd.get_option_no_throw("--batch-size") ? ", a smaller --batch-size smaller blocks" : "") << ")\n";
}

// "wrote F/array.sbatch (3 tasks) and F/merge.sbatch; submit them with: sh F/submit.sh"
void printWritten(const slurm::SlurmJob& job, const std::vector<slurm::JobScript>& scripts, const std::string& submit) {
    std::cout << "wrote ";
    for (size_t k = 0; k < scripts.size(); ++k) {
        std::cout << (k == 0                    ? ""
                      : k + 1 == scripts.size() ? " and "
                                                : ", ")
                  << attnlab::escapedForTerminal(job.folder + "/" + scripts[k].file);
        if (scripts[k].tasks > 0) std::cout << " (" << scripts[k].tasks << " tasks)";
    }
    // shell-quoted, so that the line can be pasted whatever the folder's name holds
    std::cout << "; submit them with: sh " << attnlab::escapedForTerminal(slurm::shellQuoted(submit)) << "\n";
}

// A line per job submitted, in order: "array job 12: 3 tasks, logs in F/logs", "merge job 13: after every task
// succeeded, writes OUT".
void printSubmitted(const slurm::SlurmJob& job, const std::vector<slurm::JobScript>& scripts,
                    const std::vector<std::string>& ids) {
    if (ids.size() != scripts.size())
        throw attnlab::InputError("submit.sh printed " + std::to_string(ids.size()) + " job ids for " +
                                  std::to_string(scripts.size()) + " jobs");
    for (size_t k = 0; k < scripts.size(); ++k) {
        const std::string id = attnlab::escapedForTerminal(ids[k]);
        if (scripts[k].tasks > 0)
            std::cout << "array job " << id << ": " << scripts[k].tasks << " tasks, logs in "
                      << attnlab::escapedForTerminal(job.folder) << "/" << slurm::slurm_files::kLogs << "\n";
        else
            std::cout << "merge job " << id << ": after every task succeeded, writes "
                      << attnlab::escapedForTerminal(scripts[k].writes) << "\n";
    }
}

const CLI::App& corpusCommand(const CLI::App& app) {
    const auto parsed = app.get_subcommands();
    if (parsed.empty()) throw attnlab::InternalError("--slurm without a command");
    return *parsed.front();
}
}  // namespace

void addSlurm(CLI::App* cmd, SlurmOptions& s, const int* batch_size) {
    s.batch_sizes.emplace_back(cmd, batch_size);
    cmd->add_option("--slurm", s.tasks,
                    "Write a Slurm job instead of running here: an array of N tasks, each one shard (--shard K/N), "
                    "and a merge job after them writing --json (docs/scale-out.md)")
        ->check(CLI::PositiveNumber);
    cmd->add_option("--slurm-option", s.options,
                    "An #SBATCH option of both jobs, KEY=VALUE with sbatch's long name: partition=debug, "
                    "time=02:00:00, mem=8G, cpus-per-task=4 (the tasks' threads); repeat for more")
        ->take_all()
        ->allow_extra_args(false);
    cmd->add_option("--slurm-options", s.options_file,
                    "A file of #SBATCH options, one a line (KEY=VALUE or '#SBATCH --KEY=VALUE'); --slurm-option "
                    "wins");
    cmd->add_option("--slurm-dir", s.folder,
                    "The job's folder (scripts, parts, logs), on a file system the nodes share; default: beside "
                    "--json, named after it with .slurm");
    cmd->add_flag(kSubmit, s.submit, "Submit the job (sbatch) and print its ids");
}

int runSlurm(const CommonOptions& common, const SlurmOptions& s, const CLI::App& app, int argc, char** argv) {
    if (s.tasks < 1)
        throw attnlab::ConfigError("--slurm-option, --slurm-options, --slurm-dir and --submit need --slurm N");
    const CLI::App& cmd = corpusCommand(app);
    slurm::SlurmJob job;
    job.tasks = s.tasks;
    job.merged = mergedPath(cmd);
    checkShardable(cmd, s.tasks);
    const fs::path merged(job.merged);
    job.folder =
        fs::absolute(s.folder.empty() ? merged.parent_path() / (merged.stem().string() + ".slurm") : fs::path(s.folder))
            .lexically_normal()
            .string();
    job.work_dir = fs::current_path().string();
    job.program = thisProgram();
    job.arguments = taskArguments(argc, argv);
    job.job_name = "attnlab-" + cmd.get_name();
    job.options = sbatchOptions(s);
    // --importance's pruning curve needs every head's single ablation, over the whole corpus: a second array after
    // the first one's merge (head_lab_commands.cpp, --importance-singles)
    job.importance_chain = cmd.get_name() == "heads" && given(cmd, "--importance");
    checkInput(cmd, job.options);
    checkInputFiles(cmd, job.options);
    warnOfEmptyTasks(cmd, s, job.options);
    // A Hugging Face name is downloaded here, once, into the shared cache the tasks read (HF_HUB_OFFLINE there).
    resolveModel(common.model);
    // ...and so is the second model a task reads (heads --compare-model, align --reverse-model)
    for (const char* other : {"--compare-model", "--reverse-model"})
        if (given(cmd, other)) resolveModel(cmd.get_option(other)->as<std::string>());
    const std::string submit = slurm::writeSlurmJob(job);
    const auto scripts = slurm::jobScripts(job);
    if (!s.submit) {
        printWritten(job, scripts, submit);
        return 0;
    }
    printSubmitted(job, scripts, slurm::submitSlurmJob(job.folder));
    return 0;
}

}  // namespace attnlab_cli
