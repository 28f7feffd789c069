#pragma once
// A corpus command split over a Slurm cluster (issue 55, docs/scale-out.md): an array job of N tasks, each
// running the command on one shard (`--shard K/N --json part-K.json`), and a merge job that starts when every
// task has succeeded (`--dependency=afterok:<array job>`) and puts the parts together (`attnlab-cli merge`).
// This is the one owner of the job folder's file names and of the scripts' text; attnlab-cli's --slurm fills a
// SlurmJob and writes it here.
//
//   <folder>/array.sbatch        the array: one shard a task
//   <folder>/merge.sbatch        the merge
//   <folder>/submit.sh           submits the two (sbatch --parsable), the merge after the array; prints both ids
//   <folder>/part-K.json         task K's partial result (K = 1..N)
//   <folder>/logs/task-K.out     task K's output (stdout and stderr); logs/merge.out the merge's
#include <string>
#include <utility>
#include <vector>

namespace attnlab::slurm {

namespace slurm_files {
inline constexpr const char* kArrayScript = "array.sbatch";
inline constexpr const char* kMergeScript = "merge.sbatch";
inline constexpr const char* kSubmitScript = "submit.sh";
inline constexpr const char* kLogs = "logs";
// "part-3.json": the partial result of shard 3 (1-based, as --shard K/N counts).
std::string partName(int shard);
}  // namespace slurm_files

// An #SBATCH option: its long name without the dashes ("partition") and its value ("" for a flag: "exclusive").
using SbatchOption = std::pair<std::string, std::string>;

struct SlurmJob {
    int tasks = 0;                       // N: the array's tasks, each one shard (1..N)
    std::string program;                 // attnlab-cli as the tasks run it (an absolute path)
    std::vector<std::string> arguments;  // the command and its options, without --slurm*, --submit, --json, --shard
    std::string folder;                  // the job folder (absolute): scripts, parts, logs
    std::string merged;                  // where the merge job writes the merged result (--json; absolute)
    std::string work_dir;                // where the tasks run (#SBATCH --chdir): the folder the command was given in
    std::string job_name;                // "attnlab-eval"; the merge job's is "<job_name>-merge"
    std::vector<SbatchOption> options;   // #SBATCH lines of both jobs, in order (the merge's without cpus-per-task)
};

// The options the scripts set themselves, refused from the user: array, chdir, dependency, error, output, parsable,
// wrap; and any prefix of one ("out"), which sbatch's getopt_long reads as that option (or as ambiguous). Returns the
// reserved option `key` names or is a prefix of, or "" when none.
std::string reservedOptionFor(const std::string& key);
// "KEY=VALUE", "KEY" (a flag), also written "--KEY=VALUE" or "--KEY VALUE" (as an #SBATCH line): one option. Throws
// ConfigError naming `where` (the option or the file and line) for an empty or malformed name, a reserved one, a
// control character or a double quote in the value.
SbatchOption parseSbatchOption(const std::string& text, const std::string& where);
// A file of options, one a line, as parseSbatchOption takes them or as a job script writes them
// ("#SBATCH --partition=debug"); empty lines and other "#" lines are skipped. Throws InputError for a file that
// cannot be read, ConfigError naming the file and line for a bad option.
std::vector<SbatchOption> readSbatchOptions(const std::string& path);

// The scripts' text (checked as SlurmJob says; throws ConfigError for tasks < 1 or a relative path).
std::string arrayScript(const SlurmJob& job);
std::string mergeScript(const SlurmJob& job);
std::string submitScript(const SlurmJob& job);
// Writes the three scripts into job.folder (made with its logs folder as needed, and the folder of job.merged);
// returns submit.sh's path.
std::string writeSlurmJob(const SlurmJob& job);

struct SubmittedJob {
    std::string array_id, merge_id;
};
// Runs <folder>/submit.sh (sbatch must be on PATH; sbatch's own messages go to stderr) and returns the two job
// ids. Throws InputError when sbatch is missing or refuses a job (the script's exit status named).
SubmittedJob submitSlurmJob(const std::string& folder);

// `text` quoted for a POSIX shell: 'text', each ' written '\''.
std::string shellQuoted(const std::string& text);

}  // namespace attnlab::slurm
