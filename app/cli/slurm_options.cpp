#include "slurm_options.h"

#include <attnlab/errors.h>
#include <attnlab/slurm.h>
#include <attnlab/terminal_text.h>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <iostream>

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
        if (a == kSubmit) continue;
        const std::string name = a.substr(0, a.find('='));
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

// The one option of `cmd` whose value names where the merged result goes (--json), checked.
std::string mergedPath(const CLI::App& cmd) {
    const CLI::Option* json = cmd.get_option_no_throw("--json");
    if (!json || json->count() == 0 || json->as<std::string>().empty())
        throw attnlab::ConfigError("--slurm needs --json FILE: where the merge job writes the result");
    if (const CLI::Option* shard = cmd.get_option_no_throw("--shard"); shard && shard->count() > 0)
        throw attnlab::ConfigError("--slurm N makes N shards itself: leave out --shard");
    for (const char* name : kOtherOutputs)
        if (const CLI::Option* o = cmd.get_option_no_throw(name); o && o->count() > 0)
            throw attnlab::ConfigError(std::string(name) +
                                       " cannot go with --slurm: every task would write it (the merged --json "
                                       "holds every line's result)");
    return fs::absolute(json->as<std::string>()).lexically_normal().string();
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

const CLI::App& corpusCommand(const CLI::App& app) {
    const auto parsed = app.get_subcommands();
    if (parsed.empty()) throw attnlab::InternalError("--slurm without a command");
    return *parsed.front();
}
}  // namespace

void addSlurm(CLI::App* cmd, SlurmOptions& s) {
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
    checkInput(cmd, job.options);
    // A Hugging Face name is downloaded here, once, into the shared cache the tasks read (HF_HUB_OFFLINE there).
    resolveModel(common.model);
    const std::string submit = slurm::writeSlurmJob(job);
    const std::string folder = attnlab::escapedForTerminal(job.folder);
    if (!s.submit) {
        std::cout << "wrote " << folder << "/" << slurm::slurm_files::kArrayScript << " (" << job.tasks
                  << " tasks) and " << folder << "/" << slurm::slurm_files::kMergeScript << "; submit them with: sh "
                  << attnlab::escapedForTerminal(submit) << "\n";
        return 0;
    }
    const auto ids = slurm::submitSlurmJob(job.folder);
    std::cout << "array job " << attnlab::escapedForTerminal(ids.array_id) << ": " << job.tasks << " tasks, logs in "
              << folder << "/" << slurm::slurm_files::kLogs << "\nmerge job "
              << attnlab::escapedForTerminal(ids.merge_id) << ": after every task succeeded, writes "
              << attnlab::escapedForTerminal(job.merged) << "\n";
    return 0;
}

}  // namespace attnlab_cli
