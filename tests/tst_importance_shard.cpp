// heads --importance, --gradient-importance and --compare-model split with --shard K/N and put together by
// `attnlab-cli merge` (issue 55, docs/scale-out.md "Importance in two stages"): the whole run against 2, 3 and 7
// parts, by lines and by heads, merged JSON equal but for timing; a second stage against another run's singles
// refused; a part missing or given twice named. And the head statistics' means and typical sentences of a merge equal
// the whole run's to the last bit, on a near tie built for it.
#include "fixtures.h"
#include "multi30k.h"

#include <attnlab/head_lab_json.h>
#include <attnlab/head_stats.h>
#include <attnlab/package.h>
#include <attnlab/partial_result.h>

#include "io/head_lab_merge.h"

#include <QtTest/QtTest>

#include <nlohmann/json.hpp>

#include <cmath>

namespace {
using attnlab::HeadStatistic;
using attnlab::TranslationResult;
using nlohmann::json;

// One sentence of three pieces whose encoder head (one layer, one head) puts `diagonal[i]` on row i's own position.
TranslationResult diagonalSentence(const std::vector<float>& diagonal) {
    TranslationResult r;
    r.source_pieces = {"a", "b", "c"};
    attnlab::Matrix m(diagonal.size(), std::vector<float>(diagonal.size(), 0.0f));
    for (size_t i = 0; i < diagonal.size(); ++i) m[i][i] = diagonal[i];
    r.encoder_self = {{m}};
    return r;
}

using attnlab::testing::CliRun;

// The corpus: the first kLines pairs of Multi30k's test set whose German side has at most 5 words (short sentences:
// each of the 25 importance runs translates them all), at --batch-size 1: blocks of 8 lines, so 2 blocks.
constexpr int kLines = 9;

json readJson(const QString& path) { return json::parse(attnlab::testing::readFile(path.toStdString())); }
void writeJson(const QString& path, const json& doc) { attnlab::testing::writeFile(path.toStdString(), doc.dump()); }

// attnlab-cli merge's message for these files ("" when they merge).
QString mergeMessage(const QStringList& files) {
    std::vector<std::string> paths;
    for (const QString& f : files) paths.push_back(f.toStdString());
    return attnlab::testing::messageOf([&] { attnlab::mergeCorpusResults(paths); });
}

// Where `a` and `b` differ ("" when they do not): integers and strings equal, floats within 1e-9 relative, timing
// ("seconds") left out.
std::string difference(const json& a, const json& b, const std::string& at = "") {
    if (a.is_number_float() || b.is_number_float()) {
        const bool near = a.is_number() && b.is_number() &&
                          std::abs(a.get<double>() - b.get<double>()) <=
                              1e-9 * std::max(std::abs(a.get<double>()), std::abs(b.get<double>()));
        return near ? "" : at + ": " + a.dump() + " against " + b.dump();
    }
    if (a.type() != b.type() || a.size() != b.size()) return at + ": " + a.dump(-1) + " against " + b.dump(-1);
    if (a.is_object()) {
        for (auto it = a.begin(); it != a.end(); ++it)
            if (it.key() != "seconds") {
                if (!b.contains(it.key())) return at + "." + it.key() + ": missing";
                if (auto d = difference(it.value(), b[it.key()], at + "." + it.key()); !d.empty()) return d;
            }
        return "";
    }
    if (a.is_array()) {
        for (size_t i = 0; i < a.size(); ++i)
            if (auto d = difference(a[i], b[i], at + "[" + std::to_string(i) + "]"); !d.empty()) return d;
        return "";
    }
    return a == b ? "" : at + ": " + a.dump() + " against " + b.dump();
}

// A report's heads document as a part writes it (keep_sentences, its sentences' corpus lines from `first`).
json partDocument(const attnlab::HeadStatsAccumulator& acc, int first) {
    auto rep = acc.report(true, true);
    for (int s = 0; s < rep.sentences; ++s) rep.sentence_lines.push_back(first + s);
    return json::parse(attnlab::headsJson(rep, nullptr, attnlab::ModelInfo{}));
}
}  // namespace

class TestImportanceShard : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void importanceInTwoStagesEqualsTheWholeRun_data();
    void importanceInTwoStagesEqualsTheWholeRun();
    void gradientAloneByLines();
    void secondStageOfAnotherRunRefused();
    void missingAndDoubledPartsNamed();
    void hostileSentenceStatisticsRefused();
    void batchedInBlocksByLines();
    void curveMessagesAndSinglesAlone();
    void singlesHeadsCheckedAgainstTheModel();
    void nearTieMergesAsTheWholeRun();

private:
    QString path(const QString& name) const { return m_dir.path() + "/" + name; }
    CliRun cli(const QStringList& args) const;
    // --shard k/N --json DIR/NAME-k.json for k = 1..N (with `extra`), then merged into DIR/NAME.json: its path.
    QString partsMerged(const QStringList& args, const QString& name, int parts, const QStringList& extra = {},
                        const QString& beside = {});
    // The first stage split `by` in `parts`, merged into DIR/singles-BYPARTS.json (made once: each test function
    // runs alone too): its path.
    QString singlesMerged(const QString& by, int parts);
    // The second stage from singlesMerged(first_by, first_parts) split `by` in `parts`, merged into
    // DIR/curve-FIRST-BYPARTS.json (made once; its parts DIR/curve-FIRST-BYPARTS-k.json): its path.
    QString curveMerged(const QString& first_by, int first_parts, const QString& by, int parts);
    // Multi30k's first `lines` test pairs whose German side has at most 5 words, into DIR/NAME.de and DIR/NAME.en.
    void writeCorpus(const QString& name, int lines);
    // heads --importance of the cross-attention heads, DIR/SRC against DIR/REF, with `options`; one worker and one
    // thread, as a part on a node would run.
    QStringList importanceArgs(const QString& src, const QString& ref, const QString& options) const {
        return QStringList{"heads",
                           "--model",
                           "de-en",
                           "--src",
                           path(src),
                           "--ref",
                           path(ref),
                           "--importance",
                           "--importance-kinds",
                           "cross",
                           "--workers",
                           "1",
                           "--threads",
                           "1"} +
               options.split(' ');
    }

    QTemporaryDir m_dir;
    QStringList m_importance;  // heads --importance over the corpus, small options
    json m_whole;              // its whole run
    QStringList m_partErrors;  // partsMerged's parts' standard error, part by part
};

CliRun TestImportanceShard::cli(const QStringList& args) const {
    if (args.front() == "merge") return attnlab::testing::runCli(args);
    return attnlab::testing::runCli(args + QStringList{"--device", attnlab::testing::testDeviceArg()});
}

void TestImportanceShard::writeCorpus(const QString& name, int lines) {
    const QStringList de = attnlab::testing::multi30kLines("test_2016_flickr.de.gz");
    const QStringList en = attnlab::testing::multi30kLines("test_2016_flickr.en.gz");
    std::string src, ref;
    int n = 0;
    for (int i = 0; i < de.size() && n < lines; ++i)
        if (de[i].split(' ').size() <= 5) {
            src += de[i].toStdString() + "\n";
            ref += en[i].toStdString() + "\n";
            ++n;
        }
    QCOMPARE(n, lines);
    attnlab::testing::writeFile(path(name + ".de").toStdString(), src);
    attnlab::testing::writeFile(path(name + ".en").toStdString(), ref);
}

void TestImportanceShard::initTestCase() {
    QVERIFY(m_dir.isValid());
    writeCorpus("src", kLines);
    QVERIFY(QFile::rename(path("src.en"), path("ref.en")));
    // The 24 cross-attention heads (25 single runs), two curve points (12 and 24 removed), 50 resamples; one worker
    // and one thread, as a part on a node would run.
    m_importance = importanceArgs("src.de", "ref.en", "--curve-step 12 --bootstrap 50 --batch-size 1");
    const auto r = cli(m_importance + QStringList{"--json", path("whole.json")});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    m_whole = readJson(path("whole.json"));
    QCOMPARE(m_whole.at("importance").at("curve").size(), size_t(3));
    QVERIFY(m_whole.at("importance").at("curve")[1].contains("interval"));
    QVERIFY(m_whole.contains("gradient_importance"));
}

QString TestImportanceShard::partsMerged(const QStringList& args, const QString& name, int parts,
                                         const QStringList& extra, const QString& beside) {
    QStringList files;
    m_partErrors.clear();
    for (int k = 1; k <= parts; ++k) {
        files << path(QString("%1-%2.json").arg(name).arg(k));
        const auto r =
            cli(args + extra + QStringList{"--shard", QString("%1/%2").arg(k).arg(parts), "--json", files.back()});
        m_partErrors << r.err;
        if (r.code != 0) {
            QTest::qFail(qPrintable(QString("%1, part %2 of %3: %4").arg(name).arg(k).arg(parts).arg(r.err)), __FILE__,
                         __LINE__);
            return {};
        }
    }
    std::reverse(files.begin(), files.end());  // any order
    if (!beside.isEmpty()) files.prepend(beside);
    std::vector<std::string> paths;
    for (const QString& f : files) paths.push_back(f.toStdString());
    // attnlab-cli merge's core, in this process (a process costs half a second of LibTorch's start)
    try {
        attnlab::testing::writeFile(path(name + ".json").toStdString(), attnlab::mergeCorpusResults(paths));
    } catch (const attnlab::Error& e) {
        QTest::qFail(qPrintable(name + " merged: " + e.what()), __FILE__, __LINE__);
        return {};
    }
    return path(name + ".json");
}

QString TestImportanceShard::singlesMerged(const QString& by, int parts) {
    const QString name = QString("singles-%1%2").arg(by).arg(parts);
    if (QFile::exists(path(name + ".json"))) return path(name + ".json");
    return partsMerged(m_importance, name, parts, {"--shard-by", by});
}

QString TestImportanceShard::curveMerged(const QString& first_by, int first_parts, const QString& by, int parts) {
    const QString singles = singlesMerged(first_by, first_parts);
    const QString name = QString("curve-%1%2-%3%4").arg(first_by).arg(first_parts).arg(by).arg(parts);
    if (singles.isEmpty() || QFile::exists(path(name + ".json")))
        return singles.isEmpty() ? QString() : path(name + ".json");
    return partsMerged(m_importance, name, parts, {"--shard-by", by, "--importance-singles", singles}, singles);
}

// The first stage (the baseline and each head alone, the statistics, the gradients) and the second (the pruning curve
// from the merged first stage's order) each split by lines or by heads, merged: the whole run's JSON. A stage's parts
// are processes, so each split is run once where it costs least: the first stage (25 single runs, each translating
// every line) by lines in 7 parts and by heads in 2, each merged result equal to the other; the second (2 curve
// points) from these, by lines in 2 and 3 parts and by heads in 3 and 7. With 9 lines in 2 blocks, 3 and 7 parts by
// lines have empty ones; 2 curve points in 3 or 7 groups by heads leave groups empty.
void TestImportanceShard::importanceInTwoStagesEqualsTheWholeRun_data() {
    QTest::addColumn<QString>("firstBy");
    QTest::addColumn<int>("firstParts");
    QTest::addColumn<QString>("secondBy");
    QTest::addColumn<int>("secondParts");
    QTest::newRow("lines 7, then lines 2") << "lines" << 7 << "lines" << 2;
    QTest::newRow("lines 7, then heads 3") << "lines" << 7 << "heads" << 3;
    QTest::newRow("heads 2, then lines 3") << "heads" << 2 << "lines" << 3;
    QTest::newRow("heads 2, then heads 7") << "heads" << 2 << "heads" << 7;
}

void TestImportanceShard::importanceInTwoStagesEqualsTheWholeRun() {
    QFETCH(QString, firstBy);
    QFETCH(int, firstParts);
    QFETCH(QString, secondBy);
    QFETCH(int, secondParts);
    const QString first = singlesMerged(firstBy, firstParts);
    QVERIFY(!first.isEmpty());
    const json singles = readJson(first);
    QVERIFY(singles.contains("importance_singles") && !singles.contains("importance"));
    if (first != path("singles-lines7.json")) {  // by lines and by heads alike
        const std::string d = difference(readJson(singlesMerged("lines", 7)), singles);
        QVERIFY2(d.empty(), qPrintable(QString::fromStdString(d)));
    }
    const QString merged = curveMerged(firstBy, firstParts, secondBy, secondParts);
    QVERIFY(!merged.isEmpty());
    const std::string d = difference(m_whole, readJson(merged));
    QVERIFY2(d.empty(), qPrintable(QString::fromStdString(d)));
}

// --gradient-importance without --importance, and --compare-model (the other direction's statistics of the same
// lines, compared): one stage, by lines; --shard-by heads means nothing there.
void TestImportanceShard::gradientAloneByLines() {
    const QStringList args =
        QStringList{"heads", "--model", "de-en", "--src", path("src.de"), "--ref", path("ref.en")} +
        QString("--gradient-importance --compare-model en-de --compare-reversed --batch-size 1 --threads 1").split(' ');
    const auto r = cli(args + QStringList{"--json", path("gradient-whole.json")});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const QString merged = partsMerged(args, "gradient", 2);
    QVERIFY(!merged.isEmpty());
    const json whole = readJson(path("gradient-whole.json"));
    QVERIFY(whole.at("gradient_importance").at("heads").size() == 72 && whole.contains("comparison"));
    const std::string d = difference(whole, readJson(merged));
    QVERIFY2(d.empty(), qPrintable(QString::fromStdString(d)));
    // --shard 1/1 is a part too (a Slurm array of one task): it carries what a merge needs (failed first: its
    // gradient and statistics were written as a whole run's, refused by the merge).
    const QString one = partsMerged(args, "gradient-one", 1);
    QVERIFY(!one.isEmpty());
    const std::string d1 = difference(whole, readJson(one));
    QVERIFY2(d1.empty(), qPrintable(QString::fromStdString(d1)));
    const auto by_heads = cli(args + QStringList{"--shard-by", "heads", "--shard", "1/2", "--json", path("x.json")});
    QCOMPARE(by_heads.code, 2);
    QVERIFY2(by_heads.err.contains("--shard-by heads splits --importance's runs"), qPrintable(by_heads.err));
}

// The second stage reads the first stage's merged result of its own run only: another run's (other options) and a
// part of one (incomplete) are refused by message, before any translation.
void TestImportanceShard::secondStageOfAnotherRunRefused() {
    const QString singles = singlesMerged("lines", 7);
    QVERIFY(!singles.isEmpty());
    QStringList other = m_importance;
    other[other.indexOf("--curve-step") + 1] = "6";
    auto r = cli(other + QStringList{"--importance-singles", singles, "--shard", "1/2", "--json", path("x.json")});
    QCOMPARE(r.code, 2);
    QVERIFY2(
        r.err.contains(
            singles + ": the first stage of another run than this one: options --curve-step 12 against --curve-step 6"),
        qPrintable(r.err));
    const QString part = path("singles-lines7-2.json");
    r = cli(m_importance + QStringList{"--importance-singles", part, "--shard", "1/2", "--json", path("x.json")});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(part + ": one part of the first stage, not the merge of them all: incomplete"),
             qPrintable(r.err));
    QVERIFY(!QFile::exists(path("x.json")));
}

// A part missing or given twice is named, in either stage; the curve's parts without the first stage are refused.
void TestImportanceShard::missingAndDoubledPartsNamed() {
    const auto merging = [&](const QStringList& names) {
        QStringList paths;
        for (const QString& n : names) paths << path(n);
        return mergeMessage(paths);
    };
    const QString singles = "singles-lines7.json", c1 = "curve-lines7-heads3-1.json", c2 = "curve-lines7-heads3-2.json",
                  c3 = "curve-lines7-heads3-3.json";
    QVERIFY(!curveMerged("lines", 7, "heads", 3).isEmpty());
    QCOMPARE(merging({singles, c1, c3}), QString("part 2 of 3 is missing"));
    QCOMPARE(merging({singles, c1, c2, c3, c2}), QString("part 2 of 3 is given twice: %1 and %1").arg(path(c2)));
    QCOMPARE(merging({c1, c2, c3}),
             path(c1) +
                 ": a part of heads --importance's pruning curve: merge it with the first stage's result "
                 "(attnlab-cli merge OUT.json singles.json curve-*.json)");
    QCOMPARE(merging({"singles-lines7-2.json"}), QString("part 1 of 7 is missing"));
    // A count out of range in a part (hand-made, or damaged) is named with its file and value, never summed.
    const QString part = path("singles-lines7-2.json"), hostile = path("hostile-2.json");
    json doc = readJson(part);
    doc["importance_part"]["jobs"]["runs"][3]["bleu_stats"][0] = int64_t(1) << 41;
    attnlab::testing::writeFile(hostile.toStdString(), doc.dump());
    QStringList others;
    for (int k = 1; k <= 7; ++k) others << (k == 2 ? "hostile-2.json" : QString("singles-lines7-%1.json").arg(k));
    QCOMPARE(merging(others), hostile +
                                  ": job 3's \"bleu_stats\" is 2199023255552, not a whole number from 0 to "
                                  "1099511627776");
    // And by the command, which writes nothing.
    const auto r = cli({"merge", path("m.json"), path(singles), path(c1), path(c3)});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("part 2 of 3 is missing"), qPrintable(r.err));
    QVERIFY(!QFile::exists(path("m.json")));
}

// A sentence's BLEU statistics are read up to 2^31 - 1, as eval's parts read a line's: the paired bootstrap sums one
// per sentence over the whole corpus, so 2^40 over 15 million sentences (the run's sums are read up to 2^40) wrapped
// int64 (UB). And the baseline holds one per sentence of the singles. Each refused naming the file, by the merge and
// by the second stage (failed first: 2^40 merged, the short baseline was bootstrapped).
void TestImportanceShard::hostileSentenceStatisticsRefused() {
    const QString singles = singlesMerged("lines", 7);
    QVERIFY(!curveMerged("lines", 7, "lines", 2).isEmpty());
    const QStringList curve = {path("curve-lines7-lines2-1.json"), path("curve-lines7-lines2-2.json")};
    const QString hostile = path("hostile-singles.json");
    json doc = readJson(singles);
    doc["importance_singles"]["baseline_sentences"][4][8] = int64_t(1) << 40;
    writeJson(hostile, doc);
    const QString too_large =
        hostile + ": \"baseline_sentences\" is 1099511627776, not a whole number from 0 to 2147483647";
    QCOMPARE(mergeMessage(QStringList{hostile} + curve), too_large);
    auto r =
        cli(m_importance + QStringList{"--importance-singles", hostile, "--shard", "1/2", "--json", path("x.json")});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(too_large), qPrintable(r.err));
    doc = readJson(singles);
    doc["importance_singles"]["baseline_sentences"].erase(0);
    writeJson(hostile, doc);
    const QString short_baseline =
        QString(hostile + ": \"baseline_sentences\" holds %1 sentences' statistics for %2 sentences of %3 lines")
            .arg(kLines - 1)
            .arg(kLines)
            .arg(kLines);
    QCOMPARE(mergeMessage(QStringList{hostile} + curve), short_baseline);
    r = cli(m_importance + QStringList{"--importance-singles", hostile, "--shard", "1/2", "--json", path("x.json")});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(short_baseline), qPrintable(r.err));
    QVERIFY(!QFile::exists(path("x.json")));
    // In a first stage's part (lines 1..8 are part 4 of 7): the baseline's sentence 0.
    QStringList parts;
    for (int k = 1; k <= 7; ++k) parts << path(QString("singles-lines7-%1.json").arg(k));
    doc = readJson(parts[3]);
    doc["importance_part"]["jobs"]["runs"][0]["sentences"][0][8] = int64_t(1) << 40;
    parts[3] = path("hostile-4.json");
    writeJson(parts[3], doc);
    QCOMPARE(mergeMessage(parts),
             parts[3] + ": job 0's sentences is 1099511627776, not a whole number from 0 to 2147483647");
}

// --batch-size 2 batches two lines a translation within blocks of 16 lines (kShardBlockBatches of 2): 17 lines are
// two blocks, so the first stage by lines in 2 parts translates a part's lines in the same pairs as the whole run
// (its last line alone in both); merged, then the curve (one point: all 24 heads) by heads in 2 groups, equal to
// the whole run.
void TestImportanceShard::batchedInBlocksByLines() {
    writeCorpus("b2", 17);
    const QStringList args = importanceArgs("b2.de", "b2.en", "--curve-step 24 --bootstrap 20 --batch-size 2");
    const auto r = cli(args + QStringList{"--json", path("b2-whole.json")});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const json whole = readJson(path("b2-whole.json"));
    QCOMPARE(whole.at("importance").at("curve").size(), size_t(2));
    const QString singles = partsMerged(args, "b2-singles", 2);
    QVERIFY(!singles.isEmpty());
    QVERIFY2(m_partErrors[0].contains("part 1 of 2: lines 1..16 of 17 (blocks of 16 lines)"),
             qPrintable(m_partErrors[0]));
    const QString merged =
        partsMerged(args, "b2-curve", 2, {"--shard-by", "heads", "--importance-singles", singles}, singles);
    QVERIFY(!merged.isEmpty());
    // A part by heads translates every line (failed first: "part 1 of 2: lines 1..16 of 17").
    QVERIFY2(m_partErrors[0].contains("part 1 of 2 by heads: its group of the pruning curve's points over all 17 lines "
                                      "(blocks of 16 lines)"),
             qPrintable(m_partErrors[0]));
    const std::string d = difference(whole, readJson(merged));
    QVERIFY2(d.empty(), qPrintable(QString::fromStdString(d)));
}

// A curve part with a sentence's statistics too few is named as such (failed first: "curve point 1 over 9
// sentences, the singles over 9"); the first stage's merged result merged alone is given back (docs/scale-out.md:
// "merging a result alone gives it back"; failed first: its gradient "a whole run's"); a part of the first stage
// by heads says that it translates every line.
void TestImportanceShard::curveMessagesAndSinglesAlone() {
    const QString singles = singlesMerged("lines", 7);
    QVERIFY(!curveMerged("lines", 7, "lines", 2).isEmpty());
    json doc = readJson(path("curve-lines7-lines2-1.json"));
    doc["importance_part"]["points"]["runs"][1]["sentences"].erase(0);
    const QString short_part = path("short-1.json");
    writeJson(short_part, doc);
    QCOMPARE(mergeMessage({singles, short_part, path("curve-lines7-lines2-2.json")}),
             short_part +
                 "...: curve point 1 carries 8 sentences' statistics for 9 sentences (the paired bootstrap "
                 "needs each one's)");
    const auto r = cli({"merge", path("alone.json"), singles});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    const std::string d = difference(readJson(singles), readJson(path("alone.json")));
    QVERIFY2(d.empty(), qPrintable(QString::fromStdString(d)));
}

// The second stage ranks its curve from singles.json's heads: a hand-edited file whose ranking holds a head twice,
// misses one or names one the model has not is refused naming the file, before anything is translated (failed
// first: all three ran).
void TestImportanceShard::singlesHeadsCheckedAgainstTheModel() {
    const QString singles = singlesMerged("lines", 7);
    QVERIFY(!singles.isEmpty());
    const json doc = readJson(singles);
    const json& heads = doc.at("importance_singles").at("heads");
    QCOMPARE(heads.size(), size_t(24));
    const QString edited = path("edited-singles.json");
    const auto refused = [&](const json& changed) {
        writeJson(edited, changed);
        const auto r =
            cli(m_importance + QStringList{"--importance-singles", edited, "--shard", "1/2", "--json", path("x.json")});
        return r.code == 2 && !QFile::exists(path("x.json")) ? r.err : "rc " + QString::number(r.code) + ": " + r.err;
    };
    json twice = doc;
    twice["importance_singles"]["heads"][1]["head"] = heads[0].at("head");
    twice["importance_singles"]["heads"][1]["layer"] = heads[0].at("layer");
    const QString first =
        QString("cross:%1:%2").arg(heads[0].at("layer").get<int>()).arg(heads[0].at("head").get<int>());
    const QString second =
        QString("cross:%1:%2").arg(heads[1].at("layer").get<int>()).arg(heads[1].at("head").get<int>());
    QString err = refused(twice);
    QVERIFY2(err.contains(edited + ": head " + first + " is ranked twice"), qPrintable(err));
    json missing = doc;
    missing["importance_singles"]["heads"].erase(1);
    err = refused(missing);
    QVERIFY2(err.contains(edited + ": head " + second + " of the model is not ranked"), qPrintable(err));
    json outside = doc;
    outside["importance_singles"]["heads"][1]["layer"] = 99;
    err = refused(outside);
    QVERIFY2(err.contains(edited + ": head cross:99:" + QString::number(heads[1].at("head").get<int>()) +
                          " is ranked, not one of the model's 24 heads of the run's kinds"),
             qPrintable(err));
}

// Five sentences of three rows whose share on the same position is made of powers of two from 1 to 2^-54 (t): in
// double precision 1 + 2^-54 rounds back to 1, so a sum depends on the order of its terms. A search over such values
// (issue 55) found these: the corpus's mean is 1/4 + 0.8t, sentence 0's 1/4 + 4t/3 and sentence 1's 1/4 + t/3, whose
// distances to it differ by t/15, less than the last place of 1/4. The whole run's mean (rows added one by one) and a
// merge's (each part's mean times its rows, added part by part; parts: sentence 0, then the rest) differed in that
// last place, and the typical sentence with them: 0 whole, 1 merged. Both now add the sentences' own sums in line
// order (HeadStatsAccumulator::report, headlab_merge::mergeHeads): the same bits, the same typical sentence.
void TestImportanceShard::nearTieMergesAsTheWholeRun() {
    const float t = std::ldexp(1.0f, -54);  // 2^-54
    const std::vector<std::vector<float>> diagonals = {
        {0.375f, 0.375f, 4 * t}, {0.5f, 0.25f, t}, {0.375f, t, 3 * t}, {0.25f, 1.0f, 0.25f}, {2 * t, 0.375f, t}};
    attnlab::HeadStatsAccumulator whole(2), first(2), rest(2);
    for (size_t s = 0; s < diagonals.size(); ++s) {
        whole.add(diagonalSentence(diagonals[s]));
        (s == 0 ? first : rest).add(diagonalSentence(diagonals[s]));
    }
    const auto w = whole.report(true, false);
    const json a = partDocument(first, 0), b = partDocument(rest, 1);
    const json merged = attnlab::headlab_merge::mergeHeads({{"a.json", &a, 0, 1}, {"b.json", &b, 1, 4}});
    QCOMPARE(merged.at("heads").size(), size_t(1));
    const json& head = merged["heads"][0];
    for (const auto& info : attnlab::headStatisticInfos()) {
        const double merged_value = head.at(info.key).get<double>(), whole_value = w.heads[0].value(info.id);
        QVERIFY2(merged_value == whole_value, qPrintable(QString("%1: %2 merged, %3 whole")
                                                             .arg(info.key)
                                                             .arg(merged_value, 0, 'g', 17)
                                                             .arg(whole_value, 0, 'g', 17)));  // QCOMPARE is fuzzy
        QCOMPARE(head.at("typical_sentence").at(info.key).get<int>(), w.heads[0].typical_sentence[size_t(info.id)]);
    }
}

QTEST_GUILESS_MAIN(TestImportanceShard)
#include "tst_importance_shard.moc"
