#pragma once
// A corpus command split over a Slurm cluster (issue 55, docs/scale-out.md): an array job of N tasks, each
// running the command on one shard (`--shard K/N --json part-K.json`), and a merge job that starts when every
// task has succeeded (`--dependency=afterok:<array job>`) and puts the parts together (`attnlab-cli merge`).
// This is the one owner of the job folder's file names and of the scripts' text; attnlab-cli's --slurm fills a
// SlurmJob and writes it here.
//
//   <folder>/array.sbatch        the array: one shard a task
//   <folder>/merge.sbatch        the merge: lists the parts in part-list.txt, then merge OUT --parts-from it
//   <folder>/submit.sh           submits the two (sbatch --parsable), the merge after the array; prints both ids
//   <folder>/part-K.json         task K's partial result (K = 1..N)
//   <folder>/part-list.txt       the parts' paths, one a line, written by the merge (N paths pass ARG_MAX)
//   <folder>/logs/task-K.out     task K's output (stdout and stderr); logs/merge.out the merge's
//
// heads --importance is a chain of two arrays and two merges, each job after the one before (docs/scale-out.md,
// "The importance chain"): stage 1 (the baseline and every head ablated alone) and stage 2 (the pruning curve, which
// needs every head's single ablation, from the merged singles.json):
//
//   <folder>/singles.sbatch        array 1: task K writes singles-K.json (logs/singles-K.out)
//   <folder>/singles-merge.sbatch  merge 1: singles.json (logs/singles-merge.out)
//   <folder>/curve.sbatch          array 2: task K runs with --importance-singles singles.json, writes curve-K.json
//   <folder>/merge.sbatch          merge 2: the result, from singles.json and curve-1..N.json
#include <string>
#include <utility>
#include <vector>

namespace attnlab::slurm {

namespace slurm_files {
inline constexpr const char* kArrayScript = "array.sbatch";
inline constexpr const char* kMergeScript = "merge.sbatch";
inline constexpr const char* kSubmitScript = "submit.sh";
inline constexpr const char* kLogs = "logs";
// The importance chain's (above); its last merge is kMergeScript.
inline constexpr const char* kSinglesScript = "singles.sbatch";
inline constexpr const char* kSinglesMergeScript = "singles-merge.sbatch";
inline constexpr const char* kCurveScript = "curve.sbatch";
inline constexpr const char* kSingles = "singles.json";
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
    std::vector<SbatchOption> options;   // #SBATCH lines of every job, in order (a merge's without cpus-per-task)
    bool importance_chain = false;       // heads --importance: two stages (above), each an array and its merge
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

// One sbatch script of the job: an array (tasks > 0) or a merge (writing `writes`).
struct JobScript {
    std::string file;  // its name in the job folder
    std::string text;
    int tasks = 0;       // an array's tasks; 0 for a merge
    std::string writes;  // a merge's result (absolute)
};
// The job's scripts in the order submit.sh submits them, each after the one before: the array and its merge, or the
// importance chain's four (checked as SlurmJob says; throws ConfigError for tasks < 1 or a relative path).
std::vector<JobScript> jobScripts(const SlurmJob& job);
std::string submitScript(const SlurmJob& job);
// Writes the scripts and submit.sh into job.folder (made with its logs folder as needed, and the folder of
// job.merged); returns submit.sh's path.
std::string writeSlurmJob(const SlurmJob& job);

// Runs <folder>/submit.sh (sbatch must be on PATH; sbatch's own messages go to stderr) and returns the job ids, one
// per script in jobScripts' order. Throws InputError when sbatch is missing or refuses a job (the script's exit
// status named).
std::vector<std::string> submitSlurmJob(const std::string& folder);

// `text` quoted for a POSIX shell: 'text', each ' written '\''.
std::string shellQuoted(const std::string& text);

}  // namespace attnlab::slurm
