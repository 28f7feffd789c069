// attnlab-cli --slurm N (issue 55, item 3; docs/scale-out.md): the job's scripts as text, the scripts run by hand as
// Slurm would run them, and a real single-node Slurm cluster (support/slurm_cluster.h) running a 3-task array and
// its merge job submitted with --submit; every merged result is compared with the one-process run's.
#include "fake_hub_server.h"
#include "fixtures.h"
#include "slurm_cluster.h"

#include <attnlab/slurm.h>

#include <QtTest/QtTest>

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <vector>

namespace fs = std::filesystem;
using attnlab::testing::readFile;
using attnlab::testing::runCli;
using attnlab::testing::SlurmCluster;
using attnlab::testing::writeFile;

namespace {
QString text(const QString& path) { return QString::fromStdString(readFile(path.toStdString())); }

// The #SBATCH lines of a script, as sbatch reads them: those before its first command.
QStringList sbatchLines(const QString& script) {
    QStringList found;
    for (const QString& line : script.split('\n')) {
        if (line.startsWith("#SBATCH ")) found << line.mid(8);
        if (!line.isEmpty() && !line.startsWith('#')) break;
    }
    return found;
}

// One #SBATCH line's option as sbatch takes it (slurm src/sbatch/opt.c, _get_argument): a blank ends it outside
// quotes, ' or " open and close a quote, a backslash escapes the next character, an unquoted # ends the line.
QString sbatchArgument(const QString& line) {
    QString out;
    QChar quote;
    bool escaped = false;
    for (const QChar c : line) {
        if (escaped) {
            escaped = false;
        } else if (c == '\\') {
            escaped = true;
            continue;
        } else if (!quote.isNull()) {
            if (c == quote) {
                quote = QChar();
                continue;
            }
        } else if (c == '"' || c == '\'') {
            quote = c;
            continue;
        } else if (c == '#' || c.isSpace()) {
            break;
        }
        out += c;
    }
    return quote.isNull() ? out : "unmatched " + QString(quote);
}

// A command line refused: exit status 2, and this on stderr.
struct Refusal {
    QStringList args;
    QString message;
};

// Each of `refusals` run after `command`; a failure names the case.
void checkRefusals(const QStringList& command, const std::vector<Refusal>& refusals) {
    for (const auto& c : refusals) {
        const auto r = runCli(command + c.args);
        QVERIFY2(r.code == 2 && r.err.contains(c.message), qPrintable(c.args.join(' ') + ": " + r.err));
    }
}

// A JSON file as text in one layout (a failed comparison shows where they differ).
QString readJson(const QString& path) {
    return QString::fromStdString(nlohmann::json::parse(readFile(path.toStdString())).dump(1));
}

// Every value of a JSON document by its path ("importance.curve[2].bleu"), an empty object or array as a value, but
// its timing fields ("seconds").
void flatten(const nlohmann::json& j, const std::string& at, std::map<std::string, nlohmann::json>& out) {
    if (j.is_object() && !j.empty()) {
        for (const auto& [key, value] : j.items())
            if (key != "seconds") flatten(value, at + "." + key, out);
    } else if (j.is_array() && !j.empty()) {
        for (size_t i = 0; i < j.size(); ++i) flatten(j[i], at + "[" + std::to_string(i) + "]", out);
    } else {
        out[at] = j;
    }
}

// Where two heads results differ, or "": the same paths, floats within 1e-9 relative (absolute below 1; a merge weighs
// the parts' statistics by their rows, summed in part order: not the one-process run's order), every other value equal.
QString firstDifference(const QString& a, const QString& b) {
    std::map<std::string, nlohmann::json> x, y;
    flatten(nlohmann::json::parse(readFile(a.toStdString())), "", x);
    flatten(nlohmann::json::parse(readFile(b.toStdString())), "", y);
    for (const auto& [path, value] : x) {
        const auto other = y.find(path);
        if (other == y.end()) return QString::fromStdString(path + " only in the first");
        const bool same = value.is_number_float() && other->second.is_number()
                              ? std::abs(value.get<double>() - other->second.get<double>()) <=
                                    1e-9 * std::max(std::abs(value.get<double>()), 1.0)
                              : value == other->second;
        if (!same) return QString::fromStdString(path + ": " + value.dump() + " against " + other->second.dump());
    }
    return x.size() == y.size() ? QString() : QString("the second has %1 values more").arg(y.size() - x.size());
}
}  // namespace

class TestSlurm : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void scriptsOfThreeTasks();
    void scriptsRunByHandMergeToTheOneProcessResult();
    void badOptionsRefusedByName();
    void abbreviatedReservedNamesRefused();
    void whatTasksCannotShardRefused();
    void moreTasksThanBlocksSaid();
    void importanceChainScripts();
    void mergeOfManyTasksHasABoundedCommandLine();
    void everyTaskTakesItsThreadsFromSlurm();
    void foldersWithQuotesAndHashesReadBack();
    void hubModelDownloadedOnceBeforeTheTasks();
    void clusterRunsTheArrayAndItsMerge();

private:
    QStringList evalArgs(const QString& json) const;
    QStringList importanceArgs(const QString& json) const;
    QTemporaryDir m_dir;
    QString m_pkg, m_src, m_ref, m_whole;
};

void TestSlurm::initTestCase() {
    const std::string dir = m_dir.path().toStdString();
    const std::string tok = attnlab::testing::trainTokenizer(dir, 400);
    m_pkg = QString::fromStdString(
        attnlab::testing::writeRandomPackage(dir + "/pkg", tok, attnlab::testing::smallConfig(400)));
    // 24 lines: at --batch-size 1 blocks of 8 (partial_result.h: 8 batches a block), so 3 shards of 8 lines each.
    std::string src, ref;
    for (const auto& l : attnlab::testing::corpusLines(24, 3)) src += l + "\n";
    for (const auto& l : attnlab::testing::corpusLines(24, 4)) ref += l + "\n";
    m_src = m_dir.path() + "/src.txt";
    m_ref = m_dir.path() + "/ref.txt";
    writeFile(m_src.toStdString(), src);
    writeFile(m_ref.toStdString(), ref);
    m_whole = m_dir.path() + "/whole.json";
    const auto r = runCli(evalArgs(m_whole));
    QVERIFY2(r.code == 0, qPrintable(r.err));
}

// --batch-size 1: blocks of 8 lines (a shard is whole blocks, each batched alike in the whole run and the parts, so
// the merged JSON equals the whole run's byte for byte), so that 24 lines make 3 non-empty shards.
QStringList TestSlurm::evalArgs(const QString& json) const {
    const QString device = attnlab::testing::testDeviceArg();
    return QStringList{"eval", "--model", m_pkg, "--src", m_src, "--ref", m_ref} +
           QStringList{"--beam", "1", "--batch-size", "1", "--device", device, "--json", json};
}

// heads --importance over the same 24 lines (3 blocks at --batch-size 1), few resamples: seconds with the tiny model.
QStringList TestSlurm::importanceArgs(const QString& json) const {
    return QStringList{"heads", "--model", m_pkg,          "--src",       m_src,
                       "--ref", m_ref,     "--importance", "--bootstrap", "100"} +
           QStringList{"--batch-size", "1", "--device", attnlab::testing::testDeviceArg(), "--json", json};
}

// A job folder named with ', # and a blank, and an option's value with a backslash as well, reach sbatch whole: its
// parser takes ' as a quote, # as a comment and \\ as an escape (a backslash in the folder is refused:
// badOptionsRefusedByName) (written unquoted, "/o'neil" stopped sbatch with "Unmatched `'`" and
// "/run#2" cut --chdir short, found by review).
void TestSlurm::foldersWithQuotesAndHashesReadBack() {
    const QString base = m_dir.path() + "/o'neil #2 a";
    QVERIFY(QDir().mkpath(base));
    const QString folder = base + "/job";
    const auto r = runCli(evalArgs(base + "/result.json") +
                          QStringList{"--slurm", "2", "--slurm-dir", folder, "--slurm-option", "comment=it's #2 a\\b"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QStringList read;
    for (const QString& line : sbatchLines(text(folder + "/array.sbatch"))) read << sbatchArgument(line);
    QVERIFY2(read.contains("--output=" + folder + "/logs/task-%a.out"), qPrintable(read.join('\n')));
    QVERIFY2(read.contains("--chdir=" + QDir::currentPath()), qPrintable(read.join('\n')));
    QVERIFY2(read.contains("--comment=it's #2 a\\b"), qPrintable(read.join('\n')));  // a backslash in a value
    // the command printed to submit them, read back as a shell reads it: the one word of submit.sh's path
    const QString printed = r.out.section("submit them with: ", 1).trimmed();
    const auto words = attnlab::testing::runProgram("/bin/sh", {"-c", "set -- " + printed + "; printf '%s|' \"$@\""});
    QCOMPARE(words.out, "sh|" + folder + "/submit.sh|");
}

// What --slurm 3 writes, read as sbatch and sh read it: the array's and the merge's #SBATCH options (the command
// line's winning over the file's), the task's command with its shard and part, the merge's parts, and the
// submission with the merge after the array.
void TestSlurm::scriptsOfThreeTasks() {
    const QString out = m_dir.path() + "/text", options = out + "/site.options";
    QDir().mkpath(out);
    writeFile(options.toStdString(), "# the site's defaults\n#SBATCH --partition=batch\nmem=1G\n\n--time 00:30:00\n");
    const auto r = runCli(evalArgs(out + "/result.json") +
                          QStringList{"--slurm", "3", "--slurm-options", options, "--slurm-option", "partition=debug",
                                      "--slurm-option", "cpus-per-task=2", "--submit=false"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const QString folder = out + "/result.slurm";
    QVERIFY2(r.out.contains("wrote " + folder + "/array.sbatch (3 tasks)"), qPrintable(r.out));
    QVERIFY2(r.out.contains("sh '" + folder + "/submit.sh'"), qPrintable(r.out));

    const QString array = text(folder + "/array.sbatch");
    QVERIFY(array.startsWith("#!/bin/sh\n"));
    QCOMPARE(sbatchLines(array),
             QStringList({"--job-name=attnlab-eval", "--chdir=" + QDir::currentPath(),
                          "--output=" + folder + "/logs/task-%a.out", "--array=1-3", "--partition=debug", "--mem=1G",
                          "--time=00:30:00", "--cpus-per-task=2"}));
    QVERIFY2(array.contains("threads=${SLURM_CPUS_PER_TASK:-${SLURM_JOB_CPUS_PER_NODE:-}}"), qPrintable(array));
    const QString task = array.section('\n', -2, -2);  // the last line: the command
    QVERIFY2(task.startsWith("exec '") && task.contains("' 'eval' '--model' '" + m_pkg + "' "), qPrintable(task));
    QVERIFY2(task.endsWith(" --shard \"$SLURM_ARRAY_TASK_ID/3\" --json '" + folder +
                           "/part-'\"$SLURM_ARRAY_TASK_ID\"'.json'"),
             qPrintable(task));
    QVERIFY2(!task.contains("--slurm") && !task.contains("--submit") && !task.contains("result.json"),
             qPrintable(task));

    const QString merge = text(folder + "/merge.sbatch");
    QCOMPARE(sbatchLines(merge), QStringList({"--job-name=attnlab-eval-merge", "--chdir=" + QDir::currentPath(),
                                              "--output=" + folder + "/logs/merge.out", "--partition=debug", "--mem=1G",
                                              "--time=00:30:00"}));
    QVERIFY2(merge.contains("while [ \"$k\" -le 3 ]") &&
                 merge.endsWith("' merge '" + out + "/result.json' --parts-from '" + folder + "/part-list.txt'\n"),
             qPrintable(merge));

    const QString submit = text(folder + "/submit.sh");
    // the environment's SBATCH_* would override the scripts' own lines (sbatch(1)): unset before the first sbatch
    QVERIFY2(submit.contains("\nunset SBATCH_ARRAY_INX SBATCH_OUTPUT SBATCH_ERROR SBATCH_JOB_NAME\njob1=$(sbatch "
                             "--parsable '" +
                             folder + "/array.sbatch')"),
             qPrintable(submit));
    QVERIFY2(submit.contains("job2=$(sbatch --parsable --dependency=afterok:\"$job1\" --kill-on-invalid-dep=yes '" +
                             folder + "/merge.sbatch'"),
             qPrintable(submit));
    QVERIFY2(submit.endsWith("echo \"$job1 $job2\"\n"), qPrintable(submit));
    QVERIFY(QFileInfo(folder + "/submit.sh").isExecutable());
}

// The scripts run as Slurm runs them (sh, SLURM_ARRAY_TASK_ID 1..3, SLURM_CPUS_PER_TASK), in a folder whose name
// needs quoting: the merged result is the one-process run's.
void TestSlurm::scriptsRunByHandMergeToTheOneProcessResult() {
    const QString out = m_dir.path() + "/by hand/it's", folder = m_dir.path() + "/job dir";
    auto r = runCli(evalArgs(out + "/merged.json") + QStringList{"--slurm", "3", "--slurm-dir", folder});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    for (int k = 1; k <= 3; ++k) {
        auto env = QProcessEnvironment::systemEnvironment();
        env.insert("SLURM_ARRAY_TASK_ID", QString::number(k));
        env.insert("SLURM_CPUS_PER_TASK", "1");
        r = attnlab::testing::runProgram("/bin/sh", {folder + "/array.sbatch"}, {}, env);
        QVERIFY2(r.code == 0, qPrintable(QString("task %1: %2").arg(k).arg(r.err)));
        QVERIFY(QFile::exists(folder + QString("/part-%1.json").arg(k)));
    }
    QVERIFY(!QFile::exists(out + "/merged.json"));
    r = attnlab::testing::runProgram("/bin/sh", {folder + "/merge.sbatch"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QCOMPARE(readJson(out + "/merged.json"), readJson(m_whole));
}

void TestSlurm::badOptionsRefusedByName() {
    const QString json = m_dir.path() + "/bad/r.json", file = m_dir.path() + "/bad.options";
    writeFile(file.toStdString(), "partition=debug\nnot an option\n");
    checkRefusals(
        {"eval", "--model", m_pkg, "--src", m_src, "--ref", m_ref},
        {
            {{"--slurm", "3"}, "--slurm needs --json FILE"},
            {{"--slurm", "0", "--json", json}, "--slurm"},
            {{"--slurm", "2", "--json", json, "--slurm-option", "array=1-9"},
             "--slurm-option array=1-9: --array is set by the job's scripts themselves"},
            {{"--slurm", "2", "--json", json, "--slurm-option", "comment=a\"b"},
             "holds a control character or a double quote"},
            {{"--slurm", "2", "--json", json, "--slurm-options", file},
             file + " line 2: 'not an option' is not a Slurm option"},
            {{"--slurm", "2", "--json", json, "--slurm-options", file + ".none"}, file + ".none: cannot read"},
            // read whole only when small: an endless "file" is refused, not read without bound
            {{"--slurm", "2", "--json", json, "--slurm-options", "/dev/zero"},
             "/dev/zero: cannot read the Slurm options"},
            {{"--submit", "--json", json}, "need --slurm N"},
            {{"--slurm", "2", "--json", json, "--shard", "1/2"}, "leave out --shard"},
            {{"--slurm", "2", "--json", json, "--output", json + ".txt"}, "--output cannot go with --slurm"},
            {{"--slurm", "2", "--json", json, "--slurm-dir", m_dir.path() + "/bad/a\"b"},
             "a folder with a line break or a double quote in its name cannot go on an #SBATCH line: "},
            // sbatch's filename pattern reads a backslash as "expand nothing" (sbatch(1)): every task's log would be
            // one file named task-%a.out
            {{"--slurm", "2", "--json", json, "--slurm-dir", m_dir.path() + "/bad/a\\b"},
             "the job folder " + m_dir.path() +
                 "/bad/a\\b has a backslash in its name, which sbatch's --output pattern reads as \"expand no %a\" "
                 "(every task would write one log): give another --slurm-dir"},
        });
    // translate's lines from stdin: none reach a task unless a file is its standard input (#SBATCH --input)
    const auto r = runCli({"translate", "--model", m_pkg, "--slurm", "2", "--json", json}, "Ein Hund.\n");
    QVERIFY2(r.code == 2 && r.err.contains("translate --slurm: a task reads no terminal; give the lines with --text, "
                                           "or the file of them with --slurm-option input=FILE"),
             qPrintable(r.err));
    QVERIFY(!QFile::exists(m_dir.path() + "/bad"));
}

// sbatch parses #SBATCH lines with getopt_long, which takes any unambiguous prefix of a long option for it (slurm
// src/sbatch/opt.c, _opt_batch_script; the table from src/common/slurm_opt.c): "#SBATCH --out=x" sent the job's log
// to x (tried on the local cluster), past the check of reserved names. A prefix of a reserved name is refused as the
// name is, from --slurm-option and from a file; a prefix of another option only ("part") is not.
void TestSlurm::abbreviatedReservedNamesRefused() {
    const QString json = m_dir.path() + "/abbrev/r.json", file = m_dir.path() + "/abbrev.options";
    writeFile(file.toStdString(), "#SBATCH --dep=afterany:1\n");
    checkRefusals(evalArgs(json) + QStringList{"--slurm", "2"},
                  {
                      {{"--slurm-option", "out=/tmp/x"},
                       "--slurm-option out=/tmp/x: --out is a prefix of --output, which sbatch "
                       "could take it for (it takes any unambiguous prefix of a long option for that option, and "
                       "refuses an ambiguous one), and --output is set by the job's scripts themselves"},
                      // sbatch calls --o ambiguous (--open-mode, --output...): "could", not "takes"
                      {{"--slurm-option", "o=/tmp/x"}, "--o is a prefix of --output, which sbatch could take it for"},
                      {{"--slurm-option", "arr=1-9"}, "--arr is a prefix of --array"},
                      {{"--slurm-option", "er=e.log"}, "--er is a prefix of --error"},
                      {{"--slurm-option", "ch=/"}, "--ch is a prefix of --chdir"},
                      {{"--slurm-option", "pars"}, "--pars is a prefix of --parsable"},
                      {{"--slurm-option", "wr=true"}, "--wr is a prefix of --wrap"},
                      {{"--slurm-options", file}, file + " line 1: --dep is a prefix of --dependency"},
                  });
    QVERIFY(!QFile::exists(m_dir.path() + "/abbrev"));
    const auto r = runCli(evalArgs(json) + QStringList{"--slurm", "2", "--slurm-option", "part=debug"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY2(sbatchLines(text(m_dir.path() + "/abbrev/r.slurm/array.sbatch")).contains("--part=debug"),
             qPrintable(text(m_dir.path() + "/abbrev/r.slurm/array.sbatch")));
}

// What a task's --shard K/N would refuse on the cluster is refused before anything is written: more parts than
// --shard takes, and a route (translate --from / --to: a pivot through two models is not sharded).
void TestSlurm::whatTasksCannotShardRefused() {
    const QString json = m_dir.path() + "/unshardable/r.json";
    checkRefusals(
        {}, {
                {evalArgs(json) + QStringList{"--slurm", "100001"},
                 "--slurm 100001: at most 100000 tasks (the parts --shard K/N takes)"},
                // --from and --to need no installed model to be refused: nothing is looked up before
                {{"translate", "--from", "de", "--to", "fr", "--text", "Ein Hund.", "--slurm", "2", "--json", json},
                 "--slurm runs one model (--model) in every task, not a route (--from / --to)"},
                // the corpus is read to count its blocks: one that is not there is found before the tasks
                {{"eval", "--model", m_pkg, "--src", m_src + ".none", "--ref", m_ref, "--json", json, "--slurm", "2"},
                 m_src + ".none: missing file"},
                // every file a task reads, whatever --shard-by: heads by head reads no line before the tasks, and
                // --ref, --tgt, --gold were never looked at (found by review)
                {{"heads", "--model", m_pkg, "--src", m_src, "--ref", m_ref + ".none", "--importance", "--shard-by",
                  "heads", "--json", json, "--slurm", "2"},
                 m_ref + ".none: missing file (--ref, which every task reads)"},
                {{"heads", "--model", m_pkg, "--src", m_src + ".none", "--shard-by", "heads", "--json", json, "--slurm",
                  "2"},
                 m_src + ".none: missing file (--src, which every task reads)"},
                {{"align", "--model", m_pkg, "--src", m_src, "--tgt", m_ref, "--gold", m_dir.path(), "--json", json,
                  "--slurm", "2"},
                 m_dir.path() + ": a folder, not a file (--gold, which every task reads)"},
                {{"align", "--model", m_pkg, "--src", m_src, "--tgt", m_ref, "--dev", m_src, m_ref, m_ref + ".none",
                  "--json", json, "--slurm", "2"},
                 m_ref + ".none: missing file (--dev, which every task reads)"},
                {{"translate", "--model", m_pkg, "--json", json, "--slurm", "2", "--slurm-option",
                  "input=" + m_src + ".none"},
                 m_src + ".none: missing file (--slurm-option input, which every task reads)"},
                // the importance chain's second stage reads what its first merge wrote
                {{"heads", "--model", m_pkg, "--src", m_src, "--ref", m_ref, "--importance", "--importance-singles",
                  json + ".singles", "--json", json, "--slurm", "2"},
                 "--importance-singles is what the job's first merge writes (heads --importance --slurm "
                 "runs both stages): leave it out"},
            });
    QVERIFY(!QFile::exists(m_dir.path() + "/unshardable"));
}

// More tasks than blocks (a part is whole blocks of 8 batches): the tasks left without lines are said, with the
// blocks, before the job is written (they still run and merge). 24 lines are 3 blocks at --batch-size 1; heads'
// default batch of 128 makes them one block of 1024 lines; translate's --text lines are its corpus.
void TestSlurm::moreTasksThanBlocksSaid() {
    const QString dir = m_dir.path() + "/blocks";
    auto r = runCli(evalArgs(dir + "/eval.json") + QStringList{"--slurm", "5"});
    QVERIFY2(r.code == 0 && r.err.contains("warning: --slurm 5: 2 of the 5 tasks will have no lines: the corpus's 24 "
                                           "lines are 3 blocks of 8 lines and a task takes whole blocks (they run "
                                           "and merge all the same; --slurm 3 gives every task lines, a smaller "
                                           "--batch-size smaller blocks)"),
             qPrintable(r.err));
    QVERIFY(QFile::exists(dir + "/eval.slurm/array.sbatch"));
    r = runCli(evalArgs(dir + "/eval3.json") + QStringList{"--slurm", "3"});
    QVERIFY2(r.code == 0 && !r.err.contains("warning"), qPrintable(r.err));
    r = runCli({"heads", "--model", m_pkg, "--src", m_src, "--json", dir + "/heads.json", "--slurm", "2"});
    QVERIFY2(r.code == 0 && r.err.contains("--slurm 2: 1 of the 2 tasks will have no lines: the corpus's 24 lines "
                                           "are 1 block of 1024 lines"),
             qPrintable(r.err));
    r = runCli({"heads", "--model", m_pkg, "--src", m_src, "--limit", "6", "--batch-size", "1", "--json",
                dir + "/heads6.json", "--slurm", "2"});
    QVERIFY2(r.code == 0 && r.err.contains("1 of the 2 tasks will have no lines: the corpus's 6 lines are 1 block "
                                           "of 8 lines"),
             qPrintable(r.err));
    r = runCli({"translate", "--model", m_pkg, "--text", "Ein Hund.", "--text", "Eine Katze.", "--json",
                dir + "/t.json", "--slurm", "3"});
    QVERIFY2(r.code == 0 && r.err.contains("2 of the 3 tasks will have no lines: the corpus's 2 lines are 1 block "
                                           "of 256 lines"),
             qPrintable(r.err));
}

// heads --importance --slurm 2: four jobs, each after the one before (submit.sh): stage 1's array writing
// singles-K.json, its merge writing singles.json, stage 2's array reading it (--importance-singles) and writing
// curve-K.json, the last merge writing the result from singles.json and the curve parts; --shard-by passed through.
void TestSlurm::importanceChainScripts() {
    const QString out = m_dir.path() + "/chain", folder = out + "/heads.slurm";
    // cpus-per-t: a prefix sbatch reads as --cpus-per-task, which the merges (one thread) leave out as they do the name
    const auto r = runCli({"heads", "--model", m_pkg, "--src", m_src, "--ref", m_ref, "--importance", "--batch-size",
                           "1", "--json", out + "/heads.json", "--slurm", "2", "--slurm-option", "cpus-per-t=2"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY2(r.out.contains("wrote " + folder + "/singles.sbatch (2 tasks), " + folder + "/singles-merge.sbatch, " +
                            folder + "/curve.sbatch (2 tasks) and " + folder + "/merge.sbatch; submit them with: sh '" +
                            folder + "/submit.sh'"),
             qPrintable(r.out));
    const QString cwd = QDir::currentPath(), logs = folder + "/logs/";
    const QString singles = text(folder + "/singles.sbatch"), curve = text(folder + "/curve.sbatch");
    QCOMPARE(sbatchLines(singles),
             QStringList({"--job-name=attnlab-heads-singles", "--chdir=" + cwd, "--output=" + logs + "singles-%a.out",
                          "--array=1-2", "--cpus-per-t=2"}));
    QCOMPARE(sbatchLines(curve), QStringList({"--job-name=attnlab-heads-curve", "--chdir=" + cwd,
                                              "--output=" + logs + "curve-%a.out", "--array=1-2", "--cpus-per-t=2"}));
    const QString task1 = singles.section('\n', -2, -2), task2 = curve.section('\n', -2, -2);
    QVERIFY2(task1.contains(" '--importance' ") && !task1.contains("--importance-singles") &&
                 task1.endsWith(" --shard \"$SLURM_ARRAY_TASK_ID/2\" --json '" + folder +
                                "/singles-'\"$SLURM_ARRAY_TASK_ID\"'.json'"),
             qPrintable(task1));
    QVERIFY2(task2.contains(" '--importance' ") && task2.endsWith(" '--importance-singles' '" + folder +
                                                                  "/singles.json' --shard \"$SLURM_ARRAY_TASK_ID/2\" "
                                                                  "--json '" +
                                                                  folder + "/curve-'\"$SLURM_ARRAY_TASK_ID\"'.json'"),
             qPrintable(task2));
    const QString merge1 = text(folder + "/singles-merge.sbatch"), merge2 = text(folder + "/merge.sbatch");
    QCOMPARE(sbatchLines(merge1), QStringList({"--job-name=attnlab-heads-singles-merge", "--chdir=" + cwd,
                                               "--output=" + logs + "singles-merge.out"}));
    QVERIFY2(
        merge1.contains("printf '%s\\n' '" + folder + "/singles-'\"$k\"'.json'") &&
            merge1.endsWith("' merge '" + folder + "/singles.json' --parts-from '" + folder + "/singles-list.txt'\n"),
        qPrintable(merge1));
    QCOMPARE(sbatchLines(merge2)[2], "--output=" + logs + "merge.out");
    QVERIFY2(merge2.contains("printf '%s\\n' '" + folder + "/curve-'\"$k\"'.json'") &&
                 merge2.endsWith("' merge '" + out + "/heads.json' '" + folder + "/singles.json' --parts-from '" +
                                 folder + "/curve-list.txt'\n"),
             qPrintable(merge2));
    // each job after the one before; the four ids printed in order
    const QString submit = text(folder + "/submit.sh");
    const QStringList files{"singles.sbatch", "singles-merge.sbatch", "curve.sbatch", "merge.sbatch"};
    QVERIFY2(submit.contains("job1=$(sbatch --parsable '" + folder + "/singles.sbatch')\n"), qPrintable(submit));
    for (int k = 2; k <= 4; ++k)
        QVERIFY2(submit.contains(QString("job%1=$(sbatch --parsable --dependency=afterok:\"$job%2\" "
                                         "--kill-on-invalid-dep=yes '")
                                     .arg(k)
                                     .arg(k - 1) +
                                 folder + "/" + files[k - 1] + "')"),
                 qPrintable(submit));
    QVERIFY2(submit.endsWith("echo \"$job1 $job2 $job3 $job4\"\n"), qPrintable(submit));
    // --shard-by reaches both stages' tasks (heads --importance shards by head as well as by line)
    const auto h = runCli({"heads", "--model", m_pkg, "--src", m_src, "--ref", m_ref, "--importance", "--shard-by",
                           "heads", "--json", out + "/by-heads.json", "--slurm", "3"});
    QVERIFY2(h.code == 0, qPrintable(h.err));
    for (const char* script : {"/by-heads.slurm/singles.sbatch", "/by-heads.slurm/curve.sbatch"})
        QVERIFY2(text(out + script).contains("'--shard-by' 'heads'"), script);
}

// --slurm 50000 (of the 100,000 --slurm takes): the merge passes its parts in a list file (merge --parts-from), not
// on its command line, which at ~70 bytes a path passed ARG_MAX ("Argument list too long") beyond ~40,000 parts and
// was built in N^2 (set -- "$@" part in a loop: 22.9 s for 8,000, found by review). The merge script is run: it
// lists every part in order and the merge reads the list, naming the first part missing; a list file is also read
// by hand (blank lines skipped) and a bad one refused by name.
void TestSlurm::mergeOfManyTasksHasABoundedCommandLine() {
    const QString out = m_dir.path() + "/many", folder = out + "/r.slurm";
    auto r = runCli(evalArgs(out + "/r.json") + QStringList{"--slurm", "50000"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const QString merge = text(folder + "/merge.sbatch");
    QVERIFY2(merge.size() < 2000, qPrintable(merge));  // the script and the command line it runs: a few lines
    r = attnlab::testing::runProgram("/bin/sh", {folder + "/merge.sbatch"});
    QVERIFY2(r.code != 0 && r.err.contains(folder + "/part-1.json"), qPrintable(r.err));
    const QStringList listed = text(folder + "/part-list.txt").split('\n');
    QCOMPARE(listed.size(), 50001);  // 50,000 lines and the empty text after the last newline
    QCOMPARE(listed[0], folder + "/part-1.json");
    QCOMPARE(listed[49999], folder + "/part-50000.json");
    QVERIFY(listed[50000].isEmpty());

    // the parts of a 3-task job listed by hand, one given on the command line: the whole run's result
    const QString job = m_dir.path() + "/listed";
    r = runCli(evalArgs(out + "/listed.json") + QStringList{"--slurm", "3", "--slurm-dir", job});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    for (int k = 1; k <= 3; ++k) {
        r = runCli(evalArgs(job + QString("/part-%1.json").arg(k)) + QStringList{"--shard", QString("%1/3").arg(k)});
        QVERIFY2(r.code == 0, qPrintable(r.err));
    }
    writeFile((job + "/list").toStdString(), (job + "/part-3.json\n\n" + job + "/part-1.json\n").toStdString());
    r = runCli({"merge", out + "/listed.json", job + "/part-2.json", "--parts-from", job + "/list"});
    QVERIFY2(r.code == 0 && r.err.contains("merged 3 parts"), qPrintable(r.err));
    QCOMPARE(readJson(out + "/listed.json"), readJson(m_whole));
    checkRefusals({"merge", out + "/refused.json"},
                  {
                      {{"--parts-from", job + "/none"}, job + "/none: cannot open the list of parts"},
                      {{"--parts-from", "/dev/null"}, "/dev/null: the list of parts is empty"},
                      {{"--parts-from", "/dev/zero"}, "/dev/zero (the list of parts)"},
                      {{}, "merge: give the parts (PART.json..., or --parts-from LIST)"},
                  });
}

// Every array task, of a job and of both stages of the importance chain, runs on the CPUs Slurm gave it:
// ATTNLAB_THREADS from SLURM_CPUS_PER_TASK, else SLURM_JOB_CPUS_PER_NODE when that is a count (not "2(x3)", a job
// over several nodes), and the hub offline (the model was found before the job was submitted). The scripts are run as
// Slurm runs them, with the program swapped for one that prints what it was given.
void TestSlurm::everyTaskTakesItsThreadsFromSlurm() {
    const QString out = m_dir.path() + "/threads";
    auto r = runCli({"heads", "--model", m_pkg, "--src", m_src, "--ref", m_ref, "--importance", "--batch-size", "1",
                     "--json", out + "/heads.json", "--slurm", "3"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    r = runCli(evalArgs(out + "/eval.json") + QStringList{"--slurm", "3"});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const QString printer = "exec /bin/sh -c 'echo \"threads=${ATTNLAB_THREADS:-unset} offline=$HF_HUB_OFFLINE\"' ";
    const struct {
        QString cpus_per_task, cpus_per_node, expected;
    } cases[] = {{"3", "8", "threads=3"}, {"", "4", "threads=4"}, {"", "2(x3)", "threads=unset"}};
    for (const QString& name :
         QStringList{"heads.slurm/singles.sbatch", "heads.slurm/curve.sbatch", "eval.slurm/array.sbatch"}) {
        QString script = text(out + "/" + name);
        const QString program = QString::fromStdString(attnlab::slurm::shellQuoted(ATTNLAB_CLI_PATH));
        QVERIFY2(script.contains("exec " + program + " "), qPrintable(script));
        script.replace("exec " + program + " ", printer);
        writeFile((out + "/printing.sh").toStdString(), script.toStdString());
        for (const auto& c : cases) {
            auto env = QProcessEnvironment::systemEnvironment();
            for (const char* v : {"SLURM_CPUS_PER_TASK", "SLURM_JOB_CPUS_PER_NODE", "ATTNLAB_THREADS"}) env.remove(v);
            if (!c.cpus_per_task.isEmpty()) env.insert("SLURM_CPUS_PER_TASK", c.cpus_per_task);
            env.insert("SLURM_JOB_CPUS_PER_NODE", c.cpus_per_node);
            env.insert("SLURM_ARRAY_TASK_ID", "2");
            const auto run = attnlab::testing::runProgram("/bin/sh", {out + "/printing.sh"}, {}, env);
            QVERIFY2(run.code == 0 && run.out == c.expected + " offline=1\n",
                     qPrintable(name + " " + c.cpus_per_task + "/" + c.cpus_per_node + ": " + run.out + run.err));
        }
    }
}

// A Hugging Face name is downloaded into the shared cache when the job is written, once: the tasks then run with the
// hub gone (HF_HUB_OFFLINE in the script), and the merge equals the one-process run of the cached model. So is a
// second model the tasks read (align --reverse-model; heads --compare-model alike): before, only --model was, and
// every align task failed offline.
void TestSlurm::hubModelDownloadedOnceBeforeTheTasks() {
    const QString root = m_dir.path() + "/hub";
    attnlab::testing::FakeHub hub(root + "/server");
    attnlab::testing::Files files;
    for (const QString& f : QDir(m_pkg).entryList(QDir::Files))
        files[f.toStdString()] = readFile((m_pkg + "/" + f).toStdString());
    hub.addRepo("someone/tiny", files);
    hub.addRepo("someone/reverse", files);
    hub.start();
    auto env = QProcessEnvironment::systemEnvironment();
    env.insert("HF_ENDPOINT", QString::fromStdString(hub.endpoint()));
    env.insert("HF_HUB_CACHE", root + "/cache");
    env.remove("HF_HUB_OFFLINE");
    const QString folder = root + "/job";
    const QStringList args{"eval",   "--model", "someone/tiny", "--src", m_src, "--ref", m_ref,
                           "--beam", "1",       "--batch-size", "1"};
    auto r =
        runCli(args + QStringList{"--json", root + "/merged.json", "--slurm", "2", "--slurm-dir", folder}, {}, env);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY2(QDir(root + "/cache/models--someone--tiny").exists(), qPrintable(r.err));
    QVERIFY(!hub.requests().empty());
    // a second model the tasks read (align --reverse-model) is downloaded with the first one
    const QStringList align{"align",
                            "--model",
                            "someone/tiny",
                            "--src",
                            m_src,
                            "--tgt",
                            m_ref,
                            "--json",
                            root + "/aligned.json",
                            "--reverse-model",
                            "someone/reverse"};
    r = runCli(align + QStringList{"--slurm", "2", "--slurm-dir", root + "/align-job"}, {}, env);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY2(QDir(root + "/cache/models--someone--reverse").exists(), qPrintable(r.err));
    hub.stop();  // every request from here on fails
    for (int k = 1; k <= 2; ++k) {
        env.insert("SLURM_ARRAY_TASK_ID", QString::number(k));
        r = attnlab::testing::runProgram("/bin/sh", {folder + "/array.sbatch"}, {}, env);
        QVERIFY2(r.code == 0, qPrintable(QString("task %1: %2").arg(k).arg(r.err)));
    }
    r = attnlab::testing::runProgram("/bin/sh", {folder + "/merge.sbatch"}, {}, env);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    for (int k = 1; k <= 2; ++k) {
        env.insert("SLURM_ARRAY_TASK_ID", QString::number(k));
        r = attnlab::testing::runProgram("/bin/sh", {root + "/align-job/array.sbatch"}, {}, env);
        QVERIFY2(r.code == 0, qPrintable(QString("align task %1: %2").arg(k).arg(r.err)));
    }
    r = runCli(args + QStringList{"--json", root + "/whole.json"}, {}, env);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QCOMPARE(readJson(root + "/merged.json"), readJson(root + "/whole.json"));
}

// A real cluster: `--slurm 3 --submit` prints the array's and the merge's ids; the three tasks and then the merge
// complete, their logs where the job's folder is (its name holds a %, which sbatch's --output reads as a pattern);
// the merged result is the one-process run's. Beside it, heads --importance --slurm 2: the chain's four jobs, each
// after the one before, and its result the one-process run's (within 1e-9 for the statistics' floats).
void TestSlurm::clusterRunsTheArrayAndItsMerge() {
    if (const QString why = SlurmCluster::unavailable(); !why.isEmpty()) {
        if (qEnvironmentVariable("CI") == "true" && geteuid() == 0) QFAIL(qPrintable(why));  // setup.sh installs them
        QSKIP(qPrintable(why));
    }
    QTemporaryDir here(QDir::tempPath() + "/attnlab-slurm-XXXXXX");
    QVERIFY2(here.isValid(), qPrintable(here.errorString()));  // else the cluster's folder would be "/cluster"
    SlurmCluster cluster(here.path() + "/cluster");
    // The waits (start, then the job) stay within the test's 600 s (tests/CMakeLists.txt): past it the watchdog
    // aborts the program, no destructor stops the daemons, and they outlive the test.
    const QString problem = cluster.start(150);
    QVERIFY2(problem.isEmpty(), qPrintable(problem));

    const QString merged = here.path() + "/merged.json", folder = here.path() + "/job 100%a";
    // sbatch's input environment variables override a script's #SBATCH lines (sbatch(1), "INPUT ENVIRONMENT
    // VARIABLES"): set where submit.sh runs, they took the array to one task and the logs elsewhere (found by review)
    auto env = cluster.environment();
    env.insert("SBATCH_ARRAY_INX", "1");
    env.insert("SBATCH_OUTPUT", here.path() + "/elsewhere-%a.out");
    env.insert("SBATCH_ERROR", here.path() + "/errors-%a.out");
    env.insert("SBATCH_JOB_NAME", "another-name");
    const auto r = runCli(evalArgs(merged) + QStringList{"--slurm", "3", "--slurm-dir", folder, "--submit"}, {}, env);
    QVERIFY2(r.code == 0, qPrintable(r.err + "\n" + cluster.logs()));
    const auto ids = QRegularExpression("array job (\\d+): 3 tasks.*\\nmerge job (\\d+): ",
                                        QRegularExpression::DotMatchesEverythingOption)
                         .match(r.out);
    QVERIFY2(ids.hasMatch(), qPrintable(r.out));
    const QString importance = here.path() + "/importance.json", chain = here.path() + "/chain";
    const auto c = runCli(importanceArgs(importance) + QStringList{"--slurm", "2", "--slurm-dir", chain, "--submit"},
                          {}, cluster.environment());
    QVERIFY2(c.code == 0, qPrintable(c.err + "\n" + cluster.logs()));
    const auto chained = QRegularExpression(
                             "^array job (\\d+): 2 tasks[^\\n]*\\nmerge job (\\d+): [^\\n]*/singles.json\\n"
                             "array job (\\d+): 2 tasks[^\\n]*\\nmerge job (\\d+): [^\\n]*/importance.json\\n$")
                             .match(c.out);
    QVERIFY2(chained.hasMatch(), qPrintable(c.out));
    // Two CPUs, three tasks of a second or two each and the merge; generous for a busy machine (with the chain's
    // wait below, within the test's 600 s).
    const QString state = cluster.waitForJob(ids.captured(2), 200);
    QVERIFY2(state == "COMPLETED", qPrintable(state + "\n" + text(folder + "/logs/merge.out") + cluster.logs()));
    QCOMPARE(cluster.waitForJob(ids.captured(1), 10), QString("COMPLETED COMPLETED COMPLETED"));
    for (const char* log : {"task-1.out", "task-2.out", "task-3.out", "merge.out"})
        QVERIFY2(QFile::exists(folder + "/logs/" + log), log);
    QVERIFY2(QDir(here.path()).entryList({"elsewhere-*", "errors-*"}).isEmpty(),
             qPrintable(QDir(here.path()).entryList().join(' ')));
    QCOMPARE(readJson(merged), readJson(m_whole));

    const QString last = cluster.waitForJob(chained.captured(4), 200);
    QVERIFY2(last == "COMPLETED", qPrintable(last + "\n" + text(chain + "/logs/singles-merge.out") +
                                             text(chain + "/logs/merge.out") + cluster.logs()));
    for (int k : {1, 3}) QCOMPARE(cluster.waitForJob(chained.captured(k), 10), QString("COMPLETED COMPLETED"));

    // A task of stage 1 that fails cancels every job after it (--kill-on-invalid-dep=yes at each link): the chain
    // written while its --src was there, submitted once it was gone; its tasks fail at once
    const QString gone = here.path() + "/gone.txt", failing = here.path() + "/failing";
    QVERIFY(QFile::copy(m_src, gone));
    auto args = importanceArgs(here.path() + "/failed.json");
    args[args.indexOf(m_src)] = gone;
    const auto w = runCli(args + QStringList{"--slurm", "2", "--slurm-dir", failing}, {}, cluster.environment());
    QVERIFY2(w.code == 0, qPrintable(w.err));
    QVERIFY(QFile::remove(gone));
    const auto sub = attnlab::testing::runProgram("/bin/sh", {failing + "/submit.sh"}, {}, cluster.environment());
    const QStringList jobs = sub.out.split(' ', Qt::SkipEmptyParts);
    QVERIFY2(sub.code == 0 && jobs.size() == 4, qPrintable(sub.out + sub.err));
    QCOMPARE(cluster.waitForJob(jobs[0].trimmed(), 60), QString("FAILED FAILED"));
    for (int k = 1; k < 4; ++k)
        QVERIFY2(cluster.waitForJob(jobs[k].trimmed(), 60) == "CANCELLED",
                 qPrintable(jobs[k] + ": " + cluster.waitForJob(jobs[k].trimmed(), 1)));
    QVERIFY(!QFile::exists(here.path() + "/failed.json"));
    const auto whole = runCli(importanceArgs(here.path() + "/importance-whole.json"));
    QVERIFY2(whole.code == 0, qPrintable(whole.err));
    const QString differs = firstDifference(importance, here.path() + "/importance-whole.json");
    QVERIFY2(differs.isEmpty(), qPrintable(differs));
}

QTEST_GUILESS_MAIN(TestSlurm)
#include "tst_slurm.moc"
