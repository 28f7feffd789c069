// Corpus runs split with --shard K/N and put together by `attnlab-cli merge` (issue 55): for eval, score,
// translate, align and heads, the corpus run whole and in 2, 3 and 7 parts (the counts), merged, gives the
// whole run's JSON (integer counts equal, floats within 1e-9 relative); parts of another model or other options are
// refused, a part missing or given twice is named, a part whose every line is skipped merges as a part without
// sentences.
//
// A sentence's floats depend on the sentences padded into its batch (the softmax's and the products' summation
// order over the padded length): when parts were contiguous lines and a part sorted and batched its own lines, they
// differed from the whole run's by up to 2.6e-6 relative (score), 3e-7 (translate), 6e-9 (heads). A part is now made
// of whole blocks of kShardBlockBatches x --batch-size lines, and every command batches within a block only
// (attnlab/partial_result.h). The runs here batch 1 sentence (blocks of 8 lines) over kLines = 52 lines: 7 blocks,
// the last one of 4 lines, so that each of 7 parts holds a block and the 2 and 3 parts hold blocks of others' sizes.
// The lines are the corpus's shortest, and every part is a process of its own (as a Slurm task is) while the
// whole run is shared by the three splits: each CLI process costs ~0.5 s before its first sentence.
#include "fixtures.h"
#include "multi30k.h"

#include <attnlab/errors.h>
#include <attnlab/head_lab.h>
#include <attnlab/head_lab_json.h>
#include <attnlab/importance_parts.h>
#include <attnlab/metrics.h>
#include <attnlab/package.h>
#include <attnlab/partial_result.h>
#include <attnlab/text_io.h>

#include <QtTest/QtTest>

#include <nlohmann/json.hpp>

#include <cmath>
#include <functional>
#include <numeric>

namespace {
using attnlab::testing::CliRun;

constexpr int kLines = 52;        // 7 blocks of 8 lines at --batch-size 1, the last of 4
constexpr int kBlankBlock = 5;    // heads and align: the lines of this block (1-based) are blank in the source
const int kSplits[] = {2, 3, 7};  // the part counts; 7 parts of 7 blocks: none empty

// Batches of 1 sentence (blocks of 8 lines), on the tests' device.
QStringList batched(const QStringList& args) {
    return args + QStringList{"--batch-size", "1", "--device", attnlab::testing::testDeviceArg()};
}
using nlohmann::json;

CliRun cli(const QStringList& args) { return attnlab::testing::runCli(args); }

json readJson(const QString& path) { return json::parse(attnlab::testing::readFile(path.toStdString())); }

// Where `a` and `b` differ ("" when they do not): every key and element alike, integers and strings equal, floats
// within 1e-9 relative.
std::string difference(const json& a, const json& b, const std::string& at = "") {
    if (a.is_number_float() || b.is_number_float()) {
        if (!a.is_number() || !b.is_number()) return at + ": " + a.dump() + " against " + b.dump();
        const double x = a.get<double>(), y = b.get<double>();
        return std::abs(x - y) <= 1e-9 * std::max(std::abs(x), std::abs(y))
                   ? ""
                   : at + ": " + a.dump() + " against " + b.dump();
    }
    if (a.type() != b.type()) return at + ": " + a.dump() + " against " + b.dump();
    if (a.is_object()) {
        if (a.size() != b.size())
            return at + ": keys " + std::to_string(a.size()) + " against " + std::to_string(b.size());
        for (auto it = a.begin(); it != a.end(); ++it) {
            if (!b.contains(it.key())) return at + "." + it.key() + ": missing";
            if (auto d = difference(it.value(), b[it.key()], at + "." + it.key()); !d.empty()) return d;
        }
        return "";
    }
    if (a.is_array()) {
        if (a.size() != b.size())
            return at + ": " + std::to_string(a.size()) + " elements against " + std::to_string(b.size());
        for (size_t i = 0; i < a.size(); ++i)
            if (auto d = difference(a[i], b[i], at + "[" + std::to_string(i) + "]"); !d.empty()) return d;
        return "";
    }
    return a == b ? "" : at + ": " + a.dump() + " against " + b.dump();
}

void writeLines(const QString& path, const std::vector<std::string>& lines) {
    std::string text;
    for (const auto& l : lines) text += l + "\n";
    attnlab::testing::writeFile(path.toStdString(), text);
}
}  // namespace

class TestShardMerge : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void shardOptionIsChecked();
    void partsAreWholeBlocks();
    void evalMergedEqualsWhole();
    void scoreMergedEqualsWhole();
    void translateMergedEqualsWhole();
    void alignMergedEqualsWhole();
    void headsMergedEqualsWhole();
    void partsOfAnotherRunAreRefused();
    void missingAndDuplicatedPartsAreNamed();
    void hostileNumbersAreRefused();

private:
    void hostileHeadsRefused(
        const std::string& d, attnlab::HeadStatsReport stats,
        const std::function<std::string(const std::string&, const std::function<void(json&)>&)>& changed);
    // `args` with --json DIR/NAME.json: the whole run's result.
    json whole(const QStringList& args, const QString& name);
    // The files of `args` run as `parts` parts (--shard k/parts --json DIR/NAME.k-parts.json), each in a process of
    // its own; made once. Fails the test (and returns none) when a part's run fails.
    QStringList partFiles(const QStringList& args, const QString& name, int parts);
    // The whole run against its merge in each of kSplits parts.
    void checkAllSplits(const QStringList& args, const QString& name);

    QTemporaryDir m_dir;
    QString m_model, m_src, m_src_blanks, m_ref, m_gold, m_small_src, m_small_ref;
    std::vector<std::string> m_sources, m_refs;
};

void TestShardMerge::initTestCase() {
    QVERIFY(m_dir.isValid());
    m_model = QString::fromStdString(attnlab::resolveModelArgument("de-en"));
    // The kLines shortest real sentence pairs (in the corpus's order) and a gold alignment of each pair's diagonal.
    const QStringList de = attnlab::testing::multi30kLines("test_2016_flickr.de.gz");
    const QStringList en = attnlab::testing::multi30kLines("test_2016_flickr.en.gz");
    QCOMPARE(de.size(), en.size());
    std::vector<int> order(size_t(de.size()));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return de[a].size() < de[b].size(); });
    order.resize(kLines);
    std::sort(order.begin(), order.end());
    std::vector<std::string> gold, blanks;
    for (int i : order) {
        m_sources.push_back(de[i].toStdString());
        m_refs.push_back(en[i].toStdString());
        const int words = std::min(de[i].split(' ').size(), en[i].split(' ').size());
        std::string g;
        for (int w = 0; w < words; ++w) g += (w ? " " : "") + std::to_string(w) + "-" + std::to_string(w);
        gold.push_back(g);
        const int block = int(blanks.size()) / 8 + 1;
        blanks.push_back(block == kBlankBlock ? "" : m_sources.back());
    }
    m_src = m_dir.path() + "/src.de";
    m_src_blanks = m_dir.path() + "/src-blanks.de";
    m_ref = m_dir.path() + "/ref.en";
    m_gold = m_dir.path() + "/gold.txt";
    writeLines(m_src, m_sources);
    writeLines(m_src_blanks, blanks);
    writeLines(m_ref, m_refs);
    writeLines(m_gold, gold);
    // Runs whose parts are refused need no more than three lines (one block at the default batch size).
    m_small_src = m_dir.path() + "/small.de";
    m_small_ref = m_dir.path() + "/small.en";
    writeLines(m_small_src, {m_sources.begin(), m_sources.begin() + 3});
    writeLines(m_small_ref, {m_refs.begin(), m_refs.begin() + 3});
}

json TestShardMerge::whole(const QStringList& args, const QString& name) {
    const QString path = m_dir.path() + "/" + name + ".json";
    const auto r = cli(args + QStringList{"--json", path});
    if (r.code != 0) qFatal("%s", qPrintable(r.err));
    return readJson(path);
}

QStringList TestShardMerge::partFiles(const QStringList& args, const QString& name, int parts) {
    QStringList paths;
    for (int k = 1; k <= parts; ++k) {
        paths << m_dir.path() + QString("/%1.%2-%3.json").arg(name).arg(k).arg(parts);
        if (QFile::exists(paths.back())) continue;
        const auto r = cli(args + QStringList{"--shard", QString("%1/%2").arg(k).arg(parts), "--json", paths.back()});
        if (r.code != 0) {
            QTest::qFail(qPrintable(QString("%1, part %2 of %3: %4").arg(name).arg(k).arg(parts).arg(r.err)), __FILE__,
                         __LINE__);
            return {};
        }
    }
    return paths;
}

void TestShardMerge::checkAllSplits(const QStringList& args, const QString& name) {
    const json one = whole(args, name);
    QVERIFY(one.contains("run") && !one["run"].contains("shard"));
    QCOMPARE(one["run"]["corpus"]["block"].get<int>(), 8);
    for (int parts : kSplits) {
        QStringList files = partFiles(args, name, parts);
        if (files.isEmpty()) return;
        for (int k = 1; k <= parts; ++k)  // none empty: each part a run of its own
            QVERIFY(attnlab::shardLines(kLines, {k, parts}, 8).size() > 0);
        std::reverse(files.begin(), files.end());  // any order
        std::vector<std::string> paths;
        for (const QString& f : files) paths.push_back(f.toStdString());
        const json m = json::parse(attnlab::mergeCorpusResults(paths));  // attnlab-cli merge's core, in this process
        const std::string d = difference(one, m);
        QVERIFY2(d.empty(),
                 qPrintable(QString("%1 in %2 parts: %3").arg(name).arg(parts).arg(QString::fromStdString(d))));
    }
}

void TestShardMerge::shardOptionIsChecked() {
    for (const auto& [given, message] : std::vector<std::pair<QString, QString>>{
             {"4/3", "--shard 4/3: K must be between 1 and N (3)"},
             {"0/3", "--shard 0/3: K must be between 1 and N (3)"},
             {"1/0", "--shard 1/0: N must be between 1 and 100000"},
             {"2", "--shard 2: not K/N (two whole numbers, e.g. 2/8: the second of eight parts)"},
             {"a/3", "--shard a/3: not K/N (two whole numbers, e.g. 2/8: the second of eight parts)"}}) {
        try {
            (void)attnlab::parseShard(given.toStdString());
            QFAIL(qPrintable(given + " accepted"));
        } catch (const attnlab::ConfigError& e) {
            QCOMPARE(QString(e.what()), message);
        }
    }
    // The commands read --shard through it before any sentence.
    for (const QString command : {"eval", "score"}) {
        const auto r = cli(
            {command, "-m", m_model, "--src", m_src, command == "eval" ? "--ref" : "--tgt", m_ref, "--shard", "4/3"});
        QCOMPARE(r.code, 2);
        QCOMPARE(r.err, QString("attnlab-cli: --shard 4/3: K must be between 1 and N (3)\n"));
    }
}
void TestShardMerge::partsAreWholeBlocks() {
    QCOMPARE(attnlab::shardBlock(2), size_t(16));
    QCOMPARE(attnlab::shardBlock(32), size_t(256));
    // Every line in exactly one part, in order, whatever N; each part whole blocks (it begins at a block's first
    // line), the parts' block counts differ by at most one.
    for (size_t block : {1, 16, 256}) {
        for (size_t lines : {0, 1, 5, 23, 40, 1000}) {
            const size_t blocks = (lines + block - 1) / block;
            for (int n : {1, 2, 3, 7, 50}) {
                size_t next = 0, smallest = blocks, largest = 0;
                for (int k = 1; k <= n; ++k) {
                    const auto r = attnlab::shardLines(lines, {k, n}, block);
                    QCOMPARE(r.begin, next);
                    QCOMPARE(r.begin % block, size_t(0));
                    next = r.end;
                    const size_t count = (r.size() + block - 1) / block;
                    smallest = std::min(smallest, count);
                    largest = std::max(largest, count);
                }
                QCOMPARE(next, lines);
                QVERIFY(largest - smallest <= 1);
            }
        }
    }
    // Chunks end at the next multiple of the block or of the chunk, in corpus lines.
    QCOMPARE(attnlab::chunkEnd(0, 16, 64), size_t(16));
    QCOMPARE(attnlab::chunkEnd(17, 256, 64), size_t(64));
    QCOMPARE(attnlab::chunkEnd(250, 256, 64), size_t(256));
    QCOMPARE(attnlab::chunkEnd(300, 256, 0), size_t(512));
    QCOMPARE(attnlab::chunkEnd(5, 0, 256), size_t(256));
}

void TestShardMerge::evalMergedEqualsWhole() {
    const QStringList args = batched({"eval", "-m", m_model, "--src", m_src, "--ref", m_ref, "--beam", "2"});
    checkAllSplits(args, "eval");
    // The whole result's BLEU and chrF are the corpus's from its own translations, and its statistics add up.
    const json one = readJson(m_dir.path() + "/eval.json");
    std::vector<std::string> hyps;
    for (const auto& l : one["lines"]) hyps.push_back(l["hypothesis"].get<std::string>());
    QCOMPARE(hyps.size(), m_refs.size());
    QCOMPARE(one["bleu"]["score"].get<double>(), attnlab::corpusBleu(hyps, m_refs).score);
    QCOMPARE(one["chrf"].get<double>(), attnlab::corpusChrf(hyps, m_refs));
    QVERIFY(one["bleu"]["score"].get<double>() > 5);  // a real model on real sentences: matches to count
}

void TestShardMerge::scoreMergedEqualsWhole() {
    checkAllSplits(batched({"score", "-m", m_model, "--src", m_src, "--tgt", m_ref}), "score");
    const json one = readJson(m_dir.path() + "/score.json");
    double sum = 0;
    int64_t pieces = 0;
    for (const auto& l : one["lines"])
        for (const auto& p : l["log_probs"]) sum += p.get<double>(), ++pieces;
    QCOMPARE(one["pieces"].get<int64_t>(), pieces);
    QCOMPARE(one["log_prob_sum"].get<double>(), sum);
}

void TestShardMerge::translateMergedEqualsWhole() {
    QStringList args = batched({"translate", "-m", m_model, "--beam", "2", "--nbest", "2"});
    for (const auto& s : m_sources) args << "--text" << QString::fromStdString(s);
    checkAllSplits(args, "translate");
}

// With the source of one block blank, each of its pairs is skipped: its part in 7 has every line skipped and merges
// as a part without pairs (the whole run skips the same lines).
void TestShardMerge::alignMergedEqualsWhole() {
    checkAllSplits(
        batched({"align", "-m", m_model, "--src", m_src_blanks, "--tgt", m_ref, "--gold", m_gold, "--no-reverse"}),
        "align");
    const json one = readJson(m_dir.path() + "/align.json");
    QVERIFY(one["best"].is_object() && one["methods"].size() > 10);
    QCOMPARE(one["skipped"].size(), size_t(8));
    QCOMPARE(one["skipped"][0]["pair"].get<int>(), (kBlankBlock - 1) * 8 + 1);
    // A corpus whose every pair is skipped is refused whole, and its parts (every line of each skipped) when merged.
    writeLines(m_dir.path() + "/blank.de", std::vector<std::string>(9, ""));
    writeLines(m_dir.path() + "/blank.en", {m_refs.begin(), m_refs.begin() + 9});
    const QStringList blank = batched({"align", "-m", m_model, "--src", m_dir.path() + "/blank.de", "--tgt",
                                       m_dir.path() + "/blank.en", "--no-reverse"});
    const auto r = cli(blank + QStringList{"--json", m_dir.path() + "/blank.json"});
    QCOMPARE(r.code, 2);
    const QString refusal = "attnlab-cli: no sentence pair could be aligned (line 1: source: the sentence is empty)\n";
    QCOMPARE(r.err, refusal);
    const QStringList parts = partFiles(blank, "align-blank", 2);  // 8 lines and 1
    QCOMPARE(parts.size(), 2);
    try {
        (void)attnlab::mergeCorpusResults({parts[0].toStdString(), parts[1].toStdString()});
        QFAIL("the parts of a corpus without a pair to align were merged");
    } catch (const attnlab::InputError& e) {
        QCOMPARE("attnlab-cli: " + QString(e.what()) + "\n", refusal);
    }
}

void TestShardMerge::headsMergedEqualsWhole() {
    const QStringList args = batched({"heads", "-m", m_model, "--src", m_src_blanks, "--ref", m_ref});
    checkAllSplits(args, "heads");
    const json one = readJson(m_dir.path() + "/heads.json");
    QCOMPARE(one["sentences"].get<int>(), kLines - 8);
    QCOMPARE(one["skipped"].size(), size_t(8));
    // A whole run's statistics have no sentence of their own to merge: refused.
    const auto r = cli({"merge", m_dir.path() + "/x.json", m_dir.path() + "/heads.json"});
    QCOMPARE(r.code, 2);
    QCOMPARE(r.err, "attnlab-cli: " + m_dir.path() +
                        "/heads.json: a whole run's statistics, without each sentence's (write parts with --shard)\n");
}

void TestShardMerge::partsOfAnotherRunAreRefused() {
    const QStringList args{"eval", "-m", m_model, "--src", m_small_src, "--ref", m_small_ref, "--beam", "2"};
    const QString d = m_dir.path();
    QVERIFY(cli(args + QStringList{"--shard", "1/2", "--json", d + "/p1.json"}).code == 0);
    // Other options: --beam 3.
    QStringList other = args;
    other[other.indexOf("2", other.indexOf("--beam"))] = "3";
    QVERIFY(cli(other + QStringList{"--shard", "2/2", "--json", d + "/p2-beam3.json"}).code == 0);
    auto r = cli({"merge", d + "/m.json", d + "/p1.json", d + "/p2-beam3.json"});
    QCOMPARE(r.code, 2);
    QCOMPARE(r.err,
             "attnlab-cli: " + d + "/p2-beam3.json: other options than " + d + "/p1.json: --beam 3 against --beam 2\n");
    const auto refusal = [&](const QString& part) {
        try {
            (void)attnlab::mergeCorpusResults({(d + "/p1.json").toStdString(), part.toStdString()});
        } catch (const attnlab::InputError& e) {
            return QString(e.what());
        }
        return QString();
    };
    // Another model: the bundled en-de.
    other = args;
    other[other.indexOf(m_model)] = QString::fromStdString(attnlab::resolveModelArgument("en-de"));
    QVERIFY(cli(other + QStringList{"--shard", "2/2", "--json", d + "/p2-en-de.json"}).code == 0);
    QVERIFY2(
        refusal(d + "/p2-en-de.json").startsWith(d + "/p2-en-de.json: another model than " + d + "/p1.json (sha256:"),
        qPrintable(refusal(d + "/p2-en-de.json")));
    // Another corpus: both files one line longer.
    attnlab::testing::writeFile((d + "/long.en").toStdString(),
                                attnlab::testing::readFile(m_small_ref.toStdString()) + "One more line.\n");
    attnlab::testing::writeFile((d + "/long.de").toStdString(),
                                attnlab::testing::readFile(m_small_src.toStdString()) + "Noch eine Zeile.\n");
    QVERIFY(cli({"eval", "-m", m_model, "--src", d + "/long.de", "--ref", d + "/long.en", "--beam", "2", "--shard",
                 "2/2", "--json", d + "/p2-long.json"})
                .code == 0);
    QVERIFY2(refusal(d + "/p2-long.json").startsWith(d + "/p2-long.json: another corpus than " + d + "/p1.json"),
             qPrintable(refusal(d + "/p2-long.json")));
    // Another command's result.
    QVERIFY(cli({"score", "-m", m_model, "--src", m_small_src, "--tgt", m_small_ref, "--shard", "2/2", "--json",
                 d + "/score-p2.json"})
                .code == 0);
    QVERIFY2(refusal(d + "/score-p2.json").contains("score-p2.json: a result of attnlab-cli \"score\""),
             qPrintable(refusal(d + "/score-p2.json")));
    // Not a result at all.
    attnlab::testing::writeFile((d + "/other.json").toStdString(), "{\"format\": \"something\"}\n");
    QCOMPARE(refusal(d + "/other.json"),
             d + "/other.json: not a result of attnlab-cli --json (no \"run\": written by an older version, or another "
                 "file)");
    // A part whose "run" is cut or out of range: named, never a crash nor a table of 2e9 parts.
    json cut = readJson(d + "/p1.json");
    cut["run"].erase("command");
    attnlab::testing::writeFile((d + "/cut.json").toStdString(), cut.dump());
    QVERIFY2(refusal(d + "/cut.json").startsWith(d + "/cut.json: its \"run\" is incomplete: "),
             qPrintable(refusal(d + "/cut.json")));
    json huge = readJson(d + "/p1.json");
    huge["run"]["shard"]["count"] = 2000000000;
    attnlab::testing::writeFile((d + "/huge.json").toStdString(), huge.dump());
    r = cli({"merge", d + "/m.json", d + "/huge.json"});
    QCOMPARE(r.code, 2);
    QCOMPARE(r.err, "attnlab-cli: " + d +
                        "/huge.json: \"run\".\"shard\".\"count\" is 2000000000, not a whole number from 1 to 100000\n");
    QVERIFY(!QFile::exists(d + "/m.json"));
}

// The parts of scoreMergedEqualsWhole's runs (made here when it did not run).
void TestShardMerge::missingAndDuplicatedPartsAreNamed() {
    const QStringList args = batched({"score", "-m", m_model, "--src", m_src, "--tgt", m_ref});
    const QStringList parts = partFiles(args, "score", 3);
    QCOMPARE(parts.size(), 3);
    const QString d = m_dir.path();
    auto r = cli({"merge", d + "/m.json", parts[0], parts[2]});
    QCOMPARE(r.code, 2);
    QCOMPARE(r.err, QString("attnlab-cli: part 2 of 3 is missing\n"));
    QVERIFY(QFile::copy(parts[1], d + "/copy-of-part-2.json"));
    r = cli({"merge", d + "/m.json", parts[0], parts[1], parts[2], d + "/copy-of-part-2.json"});
    QCOMPARE(r.code, 2);
    QCOMPARE(r.err, "attnlab-cli: part 2 of 3 is given twice: " + parts[1] + " and " + d + "/copy-of-part-2.json\n");
    // A part of a run in 3 beside parts of a run in 2.
    const QStringList two = partFiles(args, "score", 2);
    QCOMPARE(two.size(), 2);
    r = cli({"merge", d + "/m.json", two[0], parts[1]});
    QCOMPARE(r.code, 2);
    QCOMPARE(r.err, "attnlab-cli: " + parts[1] + " is part 2 of 3 but " + two[0] +
                        " is part 1 of 2: parts of one run are merged\n");
    QVERIFY(!QFile::exists(d + "/m.json"));
}

namespace {
// The message mergeCorpusResults refuses `paths` with ("" when it merges them).
QString mergeError(const std::vector<std::string>& paths) {
    try {
        (void)attnlab::mergeCorpusResults(paths);
    } catch (const attnlab::InputError& e) {
        return QString::fromStdString(e.what());
    } catch (const std::exception& e) {  // any other: the merge's errors are InputErrors
        return QString("not an InputError: ") + e.what();
    }
    return {};
}

// The message readHeadLabResults refuses `path` with ("" when it reads it).
QString readError(const std::string& path) {
    try {
        (void)attnlab::readHeadLabResults(path);
    } catch (const attnlab::InputError& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

// Part `k` of 2 of a run of 16 lines in blocks of 8: one block each.
attnlab::CorpusRun hostileRun(const char* command, int k) {
    attnlab::CorpusRun run;
    run.command = command;
    run.model = "model";
    run.model_fingerprint = "sha256:00";
    run.lines = 16;
    run.block = 8;
    run.shard = {k, 2};
    return run;
}
}  // namespace

// Numbers in a part read through one checked reader (util/json_number.h): a shard index of 2^40 (get<int> wrapped it
// to 0), a line count of -1 or 1e300, 2^64 - 1, per-line counts near INT64_MAX (their sum overflowed), counts summed
// over parts past INT64_MAX, a line numbered out of its part, a sentence line far outside it: each refused naming
// the file, the key and the value, never merged into wrapped figures.
void TestShardMerge::hostileNumbersAreRefused() {
    const std::string d = m_dir.path().toStdString() + "/hostile-";
    std::vector<attnlab::EvalLine> lines(8, attnlab::evalLine("a dog runs in the park", "a dog runs in a park"));
    std::vector<std::string> eval;
    for (int k = 1; k <= 2; ++k) {
        eval.push_back(d + "eval." + std::to_string(k) + ".json");
        attnlab::testing::writeFile(eval.back(), attnlab::evalResultJson(hostileRun("eval", k), lines));
    }
    QCOMPARE(mergeError(eval), QString());
    const auto changed = [&](const std::string& from, const std::function<void(json&)>& change) {
        json j = readJson(QString::fromStdString(from));
        change(j);
        const std::string to = from + ".changed.json";
        attnlab::testing::writeFile(to, j.dump());
        return to;
    };
    const QString e1 = QString::fromStdString(eval[0]) + ".changed.json";
    QCOMPARE(mergeError({changed(eval[0], [](json& j) { j["run"]["shard"]["index"] = int64_t(1) << 40; }), eval[1]}),
             e1 + ": \"run\".\"shard\".\"index\" is 1099511627776, not a whole number from 1 to 2");
    QCOMPARE(mergeError({changed(eval[0], [](json& j) { j["run"]["shard"]["count"] = UINT64_MAX; }), eval[1]}),
             e1 + ": \"run\".\"shard\".\"count\" is 18446744073709551615, not a whole number from 1 to 100000");
    QCOMPARE(mergeError({changed(eval[0], [](json& j) { j["run"]["corpus"]["lines"] = -1; }), eval[1]}),
             e1 + ": \"run\".\"corpus\".\"lines\" is -1, not a whole number from 0 to 2147483647");
    QCOMPARE(mergeError({changed(eval[0], [](json& j) { j["run"]["corpus"]["lines"] = 1e300; }), eval[1]}),
             e1 + ": \"run\".\"corpus\".\"lines\" is 1e+300, not a whole number from 0 to 2147483647");
    // Counts near INT64_MAX in every line: their sum wrapped to a negative length.
    const auto huge = [](json& j) {
        for (auto& l : j["lines"]) l["bleu_stats"][8] = INT64_MAX;
    };
    QCOMPARE(mergeError({changed(eval[0], huge), changed(eval[1], huge)}),
             e1 + ": line 1's \"bleu_stats\"[8] is 9223372036854775807, not a whole number from 0 to 2147483647");
    QCOMPARE(
        mergeError({eval[0], changed(eval[1], [](json& j) { j["lines"][1]["line"] = 3; })}),
        QString::fromStdString(eval[1]) + ".changed.json: line 10's \"line\" is 3, not a whole number from 10 to 10");

    // align: every part's links counted near INT64_MAX; a part's pairs not its lines.
    attnlab::AlignmentReport rep;
    rep.pairs = 8;
    rep.has_gold = true;
    rep.methods.push_back({attnlab::parseAlignmentMethod("head:0:0"), {int64_t(1) << 40, 10, 5, 5}, {}});
    rep.best = rep.best_head = 0;
    attnlab::ModelInfo model;
    std::vector<std::string> align;
    for (int k = 1; k <= 2; ++k) {
        align.push_back(d + "align." + std::to_string(k) + ".json");
        attnlab::testing::writeFile(align.back(),
                                    attnlab::withRun(attnlab::alignmentJson(rep, model), hostileRun("align", k)));
    }
    QCOMPARE(mergeError(align), QString());  // 2^40 links a part: their sum over 100,000 parts stays below 2^57
    const QString too_many =
        ": method \"head:0:0\"'s \"predicted\" is %1, not a whole number from 0 "
        "to 1099511627776";
    QCOMPARE(mergeError({align[0], changed(align[1], [](json& j) { j["methods"][0]["predicted"] = INT64_MAX; })}),
             QString::fromStdString(align[1]) + ".changed.json" + too_many.arg("9223372036854775807"));
    // 2^62 and 2^62 - 1 links: each part's sum fits, but AER's predicted + sure wrapped (aer 1.0, merged with rc 0).
    const auto links62 = [](int64_t less) {
        return [less](json& j) { j["methods"][0]["predicted"] = (int64_t(1) << 62) - less; };
    };
    QCOMPARE(mergeError({changed(align[0], links62(0)), changed(align[1], links62(1))}),
             QString::fromStdString(align[0]) + ".changed.json" + too_many.arg("4611686018427387904"));
    // Counts no link set has (|A&S| <= min(|A|, |S|), |A&S| <= |A&P| <= |A|): merged, they made an AER of -15747
    // and a precision of 9708.7, marked best.
    const auto impossible = [](json& j) {
        j["methods"][0]["predicted_sure"] = 1000000;
        j["methods"][0]["predicted_possible"] = 1000000;
    };
    QCOMPARE(mergeError({align[0], changed(align[1], impossible)}),
             QString::fromStdString(align[1]) +
                 ".changed.json: method \"head:0:0\"'s \"predicted_sure\" is 1000000, not a whole number from 0 to 10");
    QCOMPARE(mergeError({align[0], changed(align[1], [](json& j) { j["methods"][0]["predicted_possible"] = 4; })}),
             QString::fromStdString(align[1]) +
                 ".changed.json: method \"head:0:0\"'s \"predicted_possible\" is 4, not a whole number from 5 to "
                 "1099511627776");
    // The app's reader (Open results…) holds a whole run's file to the same bound.
    const std::string whole_align = d + "align-whole.json";
    json big = json::parse(attnlab::alignmentJson(rep, model));
    big["methods"][0]["predicted"] = int64_t(1) << 62;
    attnlab::testing::writeFile(whole_align, big.dump());
    QCOMPARE(readError(whole_align), QString::fromStdString(whole_align) + too_many.arg("4611686018427387904"));
    QCOMPARE(mergeError({align[0], changed(align[1], [](json& j) { j["pairs"] = -1; })}),
             QString::fromStdString(align[1]) + ".changed.json: \"pairs\" is -1, not a whole number from 8 to 8");
    QCOMPARE(
        mergeError({align[0], changed(align[1],
                                      [](json& j) {
                                          j["skipped"] = json::array({{{"pair", int64_t(1) << 32}, {"reason", "x"}}});
                                      })}),
        QString::fromStdString(align[1]) +
            ".changed.json: a skipped line's \"pair\" is 4294967296, not a whole number from 9 to 16");

    // heads: a part's sentence named far outside its lines.
    attnlab::HeadStatsReport stats;
    stats.sentences = 1;
    stats.sentence_lines = {0};
    std::vector<std::string> heads;
    for (int k = 1; k <= 2; ++k) {
        stats.sentence_lines = {8 * (k - 1)};
        heads.push_back(d + "heads." + std::to_string(k) + ".json");
        attnlab::testing::writeFile(
            heads.back(), attnlab::withRun(attnlab::headsJson(stats, nullptr, model), hostileRun("heads", k)));
    }
    QCOMPARE(mergeError(heads), QString());
    QCOMPARE(mergeError({heads[0], changed(heads[1], [](json& j) { j["sentence_lines"][0] = int64_t(1) << 40; })}),
             QString::fromStdString(heads[1]) +
                 ".changed.json: \"sentence_lines\" is 1099511627776, not a whole number from 8 to 15");
    hostileHeadsRefused(d, stats, changed);
}

// The heads parts' numbers that the merge reads through readHeadsJson's readers (statsOf, importanceOf): a failure
// named the key but no file (a ConfigError from util::wholeNumberIn).
void TestShardMerge::hostileHeadsRefused(
    const std::string& d, attnlab::HeadStatsReport stats,
    const std::function<std::string(const std::string&, const std::function<void(json&)>&)>& changed) {
    attnlab::HeadStats head;
    head.head = {attnlab::AttentionKind::Cross, 0, 0};
    head.rows = 3;
    head.offset_histogram = {1.0};
    head.sentence_rows = {3};
    head.sentence_sums = {{}};
    stats.heads = {head};
    attnlab::ModelInfo model;
    std::vector<std::string> plain, parts;  // plain heads parts; with --compare-model
    for (int k = 1; k <= 2; ++k) {
        stats.sentence_lines = {8 * (k - 1)};
        plain.push_back(d + "plain." + std::to_string(k) + ".json");
        attnlab::testing::writeFile(
            plain.back(), attnlab::withRun(attnlab::headsJson(stats, nullptr, model), hostileRun("heads", k)));
        parts.push_back(d + "compare." + std::to_string(k) + ".json");
        attnlab::HeadsPartExtras extras;
        extras.other = &stats;
        const std::string doc = attnlab::headsJson(stats, nullptr, model, {&stats, &model, false});
        attnlab::testing::writeFile(parts.back(),
                                    attnlab::withRun(attnlab::withPartExtras(doc, extras), hostileRun("heads", k)));
    }
    QCOMPARE(mergeError(plain), QString());
    QCOMPARE(mergeError(parts), QString());
    // Each part's statistics read as readHeadsJson reads them before they merge: a layer of 2^40, a radius of -7 or a
    // layer beyond the model's merged with rc 0 into a file the app then refused.
    const QString first = QString::fromStdString(plain[0]) + ".changed.json: ";
    const auto both = [&](const std::function<void(json&)>& change) {
        return mergeError({changed(plain[0], change), changed(plain[1], change)});
    };
    QCOMPARE(both([](json& j) { j["heads"][0]["layer"] = int64_t(1) << 40; }),
             first + "\"layer\" is 1099511627776, not a whole number from -2147483648 to 2147483647");
    QCOMPARE(both([](json& j) { j["histogram_radius"] = -7; }),
             first + "\"histogram_radius\" is -7, not a whole number from 0 to 2147483647");
    QCOMPARE(both([](json& j) { j["heads"][0]["layer"] = 6; }),
             first + "cross layer 6 head 0 is not a head of its model (6 layers of 8 heads)");
    // --compare-model's statistics with a histogram radius of -1 in each part.
    const auto radius = [](json& j) { j["comparison"]["statistics"]["histogram_radius"] = -1; };
    QCOMPARE(mergeError({changed(parts[0], radius), changed(parts[1], radius)}),
             QString::fromStdString(parts[0]) +
                 ".changed.json: \"histogram_radius\" is -1, not a whole number from 0 to 2147483647");
    // --compare-model's statistics of a head its model has not.
    const auto beyond = [](json& j) { j["comparison"]["statistics"]["heads"][0]["layer"] = 6; };
    QCOMPARE(mergeError({changed(parts[0], beyond), changed(parts[1], beyond)}),
             QString::fromStdString(parts[0]) +
                 ".changed.json: cross layer 6 head 0 is not a head of its model (6 layers of 8 heads)");
    // The second stage of --importance beside a first stage's result whose sentences are -1.
    const auto curve = [](json& j) { j["importance_part"] = {{"stage", "curve"}}; };
    const std::string singles = d + "singles.json";
    json first_stage = readJson(QString::fromStdString(parts[0]));
    first_stage["run"].erase("shard");
    first_stage["importance_singles"] = {{"sentences", -1}};
    attnlab::testing::writeFile(singles, first_stage.dump());
    QCOMPARE(mergeError({singles, changed(parts[0], curve), changed(parts[1], curve)}),
             QString::fromStdString(singles) + ": \"sentences\" is -1, not a whole number from 0 to 2147483647");
}

QTEST_GUILESS_MAIN(TestShardMerge)
#include "tst_shard_merge.moc"
