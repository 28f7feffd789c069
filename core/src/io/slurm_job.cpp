// The Slurm job of a corpus command split into shards (attnlab/slurm.h, docs/scale-out.md). What the scripts
// rely on, from Slurm's manual pages (SchedMD/slurm doc/man/man1/sbatch.1): "#SBATCH" lines are read until the
// first command; --array=1-N runs N tasks with SLURM_ARRAY_TASK_ID 1..N; %a in --output is the task's index;
// --parsable prints "jobid[;cluster]"; --dependency=afterok:<array job> waits for every task of the array to
// end with status 0, and --kill-on-invalid-dep=yes cancels the merge when one did not (it would otherwise stay
// pending for ever, "DependencyNeverSatisfied"). sbatch exports the submitting environment to the job (--export
// defaults to ALL), and sets SLURM_CPUS_PER_TASK when --cpus-per-task is given, SLURM_JOB_CPUS_PER_NODE always
// (a count, or a list such as "2(x3)" for a job of several nodes).
#include "util/small_file.h"

#include <attnlab/errors.h>
#include <attnlab/file_write.h>
#include <attnlab/slurm.h>

#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <sstream>

namespace attnlab::slurm {
namespace fs = std::filesystem;

namespace {
constexpr const char* kPartPrefix = "part-";
constexpr const char* kSinglesPrefix = "singles-";
constexpr const char* kCurvePrefix = "curve-";
constexpr const char* kPartSuffix = ".json";
constexpr const char* kCpusPerTask = "cpus-per-task";

std::string trimmed(const std::string& s) {
    const auto b = s.find_first_not_of(" \t\r");
    if (b == std::string::npos) return "";
    return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

bool validName(const std::string& key) {
    if (key.empty() || !std::isalnum(static_cast<unsigned char>(key[0]))) return false;
    return std::all_of(key.begin(), key.end(),
                       [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'; });
}

// "#SBATCH --key=value", as sbatch's own parser of these lines reads them (slurm src/sbatch/opt.c, _get_argument): a
// blank ends the value, ' and " open a quote, an unquoted # starts a comment and a backslash escapes the next
// character. A value holding any of them is written in double quotes, each backslash doubled (a double quote is
// refused before: checkJob, and --slurm-option's reader).
std::string sbatchLine(const SbatchOption& o) {
    if (o.second.empty()) return "#SBATCH --" + o.first + "\n";
    if (o.second.find_first_of(" \t'#\\") == std::string::npos) return "#SBATCH --" + o.first + "=" + o.second + "\n";
    std::string quoted = "\"";
    for (const char c : o.second) quoted += c == '\\' ? std::string("\\\\") : std::string(1, c);
    return "#SBATCH --" + o.first + "=" + quoted + "\"\n";
}

void checkJob(const SlurmJob& job) {
    if (job.tasks < 1) throw ConfigError("--slurm: the tasks must be at least 1, not " + std::to_string(job.tasks));
    for (const std::string* path : {&job.program, &job.folder, &job.merged, &job.work_dir})
        if (!fs::path(*path).is_absolute())
            throw ConfigError("the Slurm job's paths must be absolute (the tasks run elsewhere): " + *path);
    for (const std::string* folder : {&job.folder, &job.work_dir})  // what #SBATCH lines carry
        if (folder->find_first_of("\n\r\"") != std::string::npos)
            throw ConfigError(
                "a folder with a line break or a double quote in its name cannot go on an #SBATCH "
                "line: " +
                *folder);
    // The tasks' logs are <folder>/logs/task-%a.out, an --output filename pattern, in which "\\" means "do not
    // process any of the replacement symbols" (sbatch(1), "filename pattern"): every task would write one log.
    if (job.folder.find('\\') != std::string::npos)
        throw ConfigError("the job folder " + job.folder +
                          " has a backslash in its name, which sbatch's --output pattern reads as \"expand no %a\" "
                          "(every task would write one log): give another --slurm-dir");
}

// `path` in an --output filename pattern (sbatch(1), "filename pattern"): each % written %%.
std::string asFilenamePattern(const std::string& path) {
    std::string out;
    for (char c : path) out += c == '%' ? std::string("%%") : std::string(1, c);
    return out;
}

// The header both scripts share: the shell, what the job is, the job's name, folder and log.
std::string header(const SlurmJob& job, const std::string& what, const std::string& name, const std::string& log) {
    std::string s = "#!/bin/sh\n# " + what + "\n# Written by attnlab-cli --slurm (docs/scale-out.md).\n";
    s += sbatchLine({"job-name", name});
    s += sbatchLine({"chdir", job.work_dir});
    s += sbatchLine({"output", asFilenamePattern((fs::path(job.folder) / slurm_files::kLogs).string()) + "/" + log});
    return s;
}

// One array and the merge after it. A job is one stage; heads --importance is two, the second reading what the
// first one's merge wrote (SlurmJob::importance_chain).
struct Stage {
    std::string array_file, merge_file;  // the scripts' names in the job folder
    std::string what;                    // what a task computes, for the scripts' comments
    std::string job_name;                // the array's; its merge's is "<job_name>-merge"
    std::string part_prefix;             // a task writes <folder>/<part_prefix>K.json
    std::string task_log, merge_log;     // in <folder>/logs
    std::vector<std::string> arguments;  // after the command's own, before --shard
    std::vector<std::string> merged;     // the merge's files before the parts: where it writes, then what it reads
};

std::string inFolder(const SlurmJob& job, const std::string& name) { return (fs::path(job.folder) / name).string(); }

std::vector<Stage> stages(const SlurmJob& job) {
    if (!job.importance_chain)
        return {{slurm_files::kArrayScript,
                 slurm_files::kMergeScript,
                 "shard K/" + std::to_string(job.tasks),
                 job.job_name,
                 kPartPrefix,
                 "task-%a.out",
                 "merge.out",
                 {},
                 {job.merged}}};
    const std::string singles = inFolder(job, slurm_files::kSingles);
    return {
        {slurm_files::kSinglesScript,
         slurm_files::kSinglesMergeScript,
         "stage 1 of --importance (the baseline and every head ablated alone) on shard K/" + std::to_string(job.tasks),
         job.job_name + "-singles",
         kSinglesPrefix,
         "singles-%a.out",
         "singles-merge.out",
         {},
         {singles}},
        {slurm_files::kCurveScript,
         slurm_files::kMergeScript,
         "stage 2 of --importance (the pruning curve, from the merged " + std::string(slurm_files::kSingles) +
             ") on shard K/" + std::to_string(job.tasks),
         job.job_name + "-curve",
         kCurvePrefix,
         "curve-%a.out",
         "merge.out",
         {"--importance-singles", singles},
         {job.merged, singles}}};
}

std::string commandLine(const SlurmJob& job, const Stage& stage) {
    std::string s = "exec " + shellQuoted(job.program);
    for (const auto& a : job.arguments) s += " " + shellQuoted(a);
    for (const auto& a : stage.arguments) s += " " + shellQuoted(a);
    return s;
}

std::string partPrefix(const SlurmJob& job, const Stage& stage) {
    return shellQuoted(inFolder(job, stage.part_prefix));
}

std::string arrayText(const SlurmJob& job, const Stage& stage) {
    const std::string n = std::to_string(job.tasks);
    std::string s = header(job,
                           "Array task K of " + n + " runs " + stage.what + " and writes " + stage.part_prefix + "K" +
                               kPartSuffix + " here; " + stage.merge_file + " puts the parts together.",
                           stage.job_name, stage.task_log);
    s += sbatchLine({"array", "1-" + n});
    for (const auto& o : job.options) s += sbatchLine(o);
    s += "set -eu\n"
         "# LibTorch's threads: the CPUs Slurm gave the task (--cpus-per-task, else the job's CPUs on its node).\n"
         "threads=${SLURM_CPUS_PER_TASK:-${SLURM_JOB_CPUS_PER_NODE:-}}\n"
         "case \"$threads\" in '' | *[!0-9]*) ;; *) ATTNLAB_THREADS=$threads; export ATTNLAB_THREADS ;; esac\n"
         "# The model was found (a Hugging Face name downloaded into the shared cache) before the job was "
         "submitted.\n"
         "HF_HUB_OFFLINE=1; export HF_HUB_OFFLINE\n";
    s += commandLine(job, stage) + " --shard \"$SLURM_ARRAY_TASK_ID/" + n + "\" --json " + partPrefix(job, stage) +
         "\"$SLURM_ARRAY_TASK_ID\"" + shellQuoted(kPartSuffix) + "\n";
    return s;
}

std::string mergeText(const SlurmJob& job, const Stage& stage) {
    std::string s = header(job,
                           "Puts the " + std::to_string(job.tasks) + " parts of " + stage.array_file +
                               " together (submit.sh starts it after every task succeeded).",
                           stage.job_name + "-merge", stage.merge_log);
    for (const auto& o : job.options)  // the merge runs one thread: no --cpus-per-task, nor a prefix sbatch reads as it
        if (std::string(kCpusPerTask).rfind(o.first, 0) != 0) s += sbatchLine(o);
    // The parts' paths go through a list file (merge --parts-from), written in one pass: N = 100,000 parts on the
    // command line would pass ARG_MAX ("Argument list too long"), and a list built with set -- "$@" costs N^2.
    const std::string list = shellQuoted(inFolder(job, stage.part_prefix + "list.txt"));
    s += "set -eu\nk=1\nwhile [ \"$k\" -le " + std::to_string(job.tasks) + " ]; do\n    printf '%s\\n' " +
         partPrefix(job, stage) + "\"$k\"" + shellQuoted(kPartSuffix) + "\n    k=$((k + 1))\ndone >" + list + "\n";
    s += "exec " + shellQuoted(job.program) + " merge";
    for (const auto& f : stage.merged) s += " " + shellQuoted(f);
    return s + " --parts-from " + list + "\n";
}
}  // namespace

std::string slurm_files::partName(int shard) { return kPartPrefix + std::to_string(shard) + kPartSuffix; }

std::string shellQuoted(const std::string& text) {
    std::string q = "'";
    for (char c : text) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

// sbatch reads #SBATCH lines and its command line with getopt_long (slurm src/sbatch/opt.c: _opt_batch_script and
// process_options_first_pass, over the table slurm_option_table_create builds in src/common/slurm_opt.c from
// common_options[]), and getopt_long takes any unambiguous prefix of a long option for that option: "--out=x" is
// --output. So a name that is a prefix of a reserved one either is that option to sbatch or is ambiguous, which sbatch
// refuses at submission. No long option of sbatch 22.05 is itself a shorter prefix of a reserved one (its own
// "ambiguous; possibilities" lists for --a, --c, --d, --e, --o, --p, --w), so this refuses no other option.
std::string reservedOptionFor(const std::string& key) {
    static const std::array<const char*, 7> reserved{"array",  "chdir",    "dependency", "error",
                                                     "output", "parsable", "wrap"};
    if (key.empty()) return "";
    for (const char* r : reserved)
        if (std::string(r).rfind(key, 0) == 0) return r;
    return "";
}

SbatchOption parseSbatchOption(const std::string& text, const std::string& where) {
    std::string t = trimmed(text);
    const bool dashed = t.rfind("--", 0) == 0;  // "--KEY=VALUE" or "--KEY VALUE", as an #SBATCH line has it
    if (dashed) t = t.substr(2);
    const auto cut = t.find_first_of(dashed ? "= \t" : "=");
    SbatchOption o{t.substr(0, cut), cut == std::string::npos ? "" : trimmed(t.substr(cut + 1))};
    if (!validName(o.first))
        throw ConfigError(where + ": '" + text +
                          "' is not a Slurm option (KEY=VALUE with sbatch's long name, e.g. partition=debug)");
    if (const std::string reserved = reservedOptionFor(o.first); !reserved.empty())
        throw ConfigError(where + ": --" + o.first +
                          (o.first == reserved ? ""
                                               : " is a prefix of --" + reserved +
                                                     ", which sbatch could take it for (it takes any unambiguous "
                                                     "prefix of a long option for that option, and refuses an "
                                                     "ambiguous one), and --" +
                                                     reserved) +
                          " is set by the job's scripts themselves (array, chdir, dependency, error, output, parsable "
                          "and wrap are)");
    for (char c : o.second)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f || c == '"')
            throw ConfigError(where + ": the value of --" + o.first +
                              " holds a control character or a double quote, which an #SBATCH line cannot carry");
    return o;
}

std::vector<SbatchOption> readSbatchOptions(const std::string& path) {
    constexpr size_t kMostBytes = size_t(1) << 20;  // a site's options are a few lines; /dev/zero is not
    std::string text;
    try {
        text = util::readSmallFile(path, kMostBytes);
    } catch (const PackageError& e) {
        throw InputError(path + ": cannot read the Slurm options file (" + e.what() + ")");
    }
    std::istringstream in(text);
    std::vector<SbatchOption> options;
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
        std::string t = trimmed(line);
        if (t.rfind("#SBATCH", 0) == 0)
            t = t.substr(7);
        else if (t.empty() || t[0] == '#')
            continue;
        options.push_back(parseSbatchOption(t, path + " line " + std::to_string(n)));
    }
    return options;
}

std::vector<JobScript> jobScripts(const SlurmJob& job) {
    checkJob(job);
    std::vector<JobScript> scripts;
    for (const Stage& stage : stages(job)) {
        scripts.push_back({stage.array_file, arrayText(job, stage), job.tasks, ""});
        scripts.push_back({stage.merge_file, mergeText(job, stage), 0, stage.merged.front()});
    }
    return scripts;
}

std::string submitScript(const SlurmJob& job) {
    std::string s =
        "#!/bin/sh\n"
        "# Submits the jobs in order, each after the one before: afterok starts it only when every task of that one\n"
        "# ended with status 0, and a failure cancels it. Prints their ids. Written by attnlab-cli --slurm.\n"
        "set -eu\n"
        "# sbatch's input environment variables override the scripts' #SBATCH lines (sbatch(1), INPUT ENVIRONMENT\n"
        "# VARIABLES): these would change the array, the logs and the job names the scripts set.\n"
        "unset SBATCH_ARRAY_INX SBATCH_OUTPUT SBATCH_ERROR SBATCH_JOB_NAME\n";
    std::string ids, after;
    int k = 0;
    for (const JobScript& script : jobScripts(job)) {
        const std::string id = "job" + std::to_string(++k), file = shellQuoted(inFolder(job, script.file));
        s += id + "=$(sbatch --parsable" +
             (after.empty() ? "" : " --dependency=afterok:\"$" + after + "\" --kill-on-invalid-dep=yes") + " " + file +
             ")" +
             (after.empty() ? "\n"
                            : " || {\n    echo \"submit.sh: sbatch refused " + script.file +
                                  "; the jobs submitted before it run without it:" + ids + "\" >&2\n    exit 1\n}\n");
        s += id + "=${" + id + "%%;*}\n";
        ids += " $" + id;
        after = id;
    }
    return s + "echo \"" + ids.substr(1) + "\"\n";
}

std::string writeSlurmJob(const SlurmJob& job) {
    const auto scripts = jobScripts(job);  // checked before any folder is made
    const fs::path folder(job.folder);
    std::error_code ec;
    fs::create_directories(folder / slurm_files::kLogs, ec);
    if (ec) throw InputError(job.folder + ": cannot make the Slurm job's folder: " + ec.message());
    // The merge writes there hours later, on another node: a folder missing is better found now.
    fs::create_directories(fs::path(job.merged).parent_path(), ec);
    if (ec) throw InputError(job.merged + ": cannot make its folder: " + ec.message());
    for (const JobScript& script : scripts) saveToFile((folder / script.file).string(), script.text);
    const std::string submit = (folder / slurm_files::kSubmitScript).string();
    saveToFile(submit, submitScript(job));
    fs::permissions(submit, fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                    fs::perm_options::add, ec);
    return submit;
}

std::vector<std::string> submitSlurmJob(const std::string& folder) {
    const std::string script = (fs::path(folder) / slurm_files::kSubmitScript).string();
    FILE* out = popen(("/bin/sh " + shellQuoted(script)).c_str(), "r");
    if (!out) throw InputError("cannot run " + script);
    std::string printed;
    std::array<char, 256> buffer{};
    while (size_t n = std::fread(buffer.data(), 1, buffer.size(), out)) printed.append(buffer.data(), n);
    const int status = pclose(out);
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (code == 127) throw InputError(script + ": sbatch was not found (run --submit on a Slurm submit host)");
    if (code != 0)
        throw InputError(script + " failed (exit status " + std::to_string(code) + "): sbatch's message is above");
    std::vector<std::string> ids;
    std::istringstream words(printed);
    for (std::string id; words >> id;) ids.push_back(id);
    if (ids.size() < 2) throw InputError(script + ": sbatch printed no job ids ('" + trimmed(printed) + "')");
    return ids;
}

}  // namespace attnlab::slurm
