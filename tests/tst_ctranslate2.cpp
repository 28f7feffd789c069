// CTranslate2 model directories, Argos Translate packages and `score`, against an independent Python
// implementation written from CTranslate2's source (scripts/ct2_reference.py, Debian's python3-torch
// and python3-sentencepiece), which also writes the model.bin files (random weights, every dtype,
// binary versions 2-6, pre- and post-norm, shared and separate vocabularies, with and without
// config.json): source ids, greedy ids, every attention map (1e-5 in float32) and log-probability
// (1e-4); teacher-forced scores; the quantized variants against their float32 originals within the
// bound quantization allows; .argosmodel as a file and unpacked; `import`; what is refused, by
// message. Skipped, with a message, where python3-torch is missing (failed under CI=true).
#include "ct2_reference_run.h"
#include "fixtures.h"
#include "memory_limit.h"

#include <attnlab/errors.h>
#include <attnlab/package.h>
#include <attnlab/translator.h>

#include "formats/argos/argos_package.h"
#include "formats/ctranslate2/ct2_model.h"
#include "util/atomic_file.h"

#include <QtTest/QtTest>

#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>

using nlohmann::json;
namespace fs = std::filesystem;

class TestCtranslate2 : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void matchesReference_data();
    void matchesReference();
    void scoresMatchReference();
    void quantizedStaysNearFloat32_data();
    void quantizedStaysNearFloat32();
    void argosPackageOpensAsFileAndFolder();
    void importedPackageGivesTheSameResults();
    void cliScoresAndTranslatesTokens();
    void windowsLineEndingsReadAsCTranslate2ReadsThem();
    void vocabularyWithoutUnknownTokenGetsItAppended();
    void duplicateTokenTakesItsFirstId();
    void refusedByMessage_data();
    void refusedByMessage();
    void vocabularyCountedBeforeItIsStored_data();
    void vocabularyCountedBeforeItIsStored();
    void argosBombStopsAtItsBound_data();
    void argosBombStopsAtItsBound();
    void argosStagingOfAKilledProcessIsSwept();

private:
    QString make(const QString& name, const QStringList& options);
    json reference(const QString& model, const std::vector<std::string>& sentences, int max_length);
    std::vector<std::string> sentencesFor(const QString& dir) const;
    static attnlab::DecodingOptions greedy(int max_length);
    void compare(const std::vector<attnlab::TranslationResult>& results, const json& ref);

    QTemporaryDir m_dir;
    QString m_python = qEnvironmentVariable("ATTNLAB_PYTHON", "/usr/bin/python3");
    static constexpr int kMaxLength = 12;
};

void TestCtranslate2::initTestCase() { ATTNLAB_REQUIRE_REFERENCE_PYTHON(m_python, "CTranslate2 cross-check"); }

QString TestCtranslate2::make(const QString& name, const QStringList& options) {
    return attnlab::testing::makeCt2Model(m_python, m_dir.path(), name, options);
}

json TestCtranslate2::reference(const QString& model, const std::vector<std::string>& sentences, int max_length) {
    return attnlab::testing::runCt2Reference(m_python, m_dir.path(), model, sentences, max_length);
}

// Text the model can read: plain sentences for a SentencePiece model; for a whitespace one, runs of
// its own tokens and one token it lacks (which becomes <unk>, as CTranslate2 maps it).
std::vector<std::string> TestCtranslate2::sentencesFor(const QString& dir) const {
    const std::string d = dir.toStdString();
    if (fs::exists(d + "/sentencepiece.model") || fs::exists(d + "/model/model.bin"))
        return {"Hello world.", "The children are playing in the garden.", "Der Zug hatte Verspätung.", "A b c"};
    const auto v = attnlab::package::readCt2Vocabularies(d);
    auto token = [&](size_t i) { return v.source.at(4 + i % (v.source.size() - 4)); };
    return {token(0) + " " + token(7) + " " + token(3), token(11) + " " + token(2),
            token(5) + " not-in-the-vocabulary " + token(9) + " " + token(13) + " " + token(1),
            token(20) + "  " + token(21) + "\t" + token(22)};
}

attnlab::DecodingOptions TestCtranslate2::greedy(int max_length) {
    return attnlab::testing::referenceGreedy(max_length);
}

using attnlab::testing::worstMapDifference;

void TestCtranslate2::compare(const std::vector<attnlab::TranslationResult>& results, const json& ref) {
    double worst_map = 0, worst_logp = 0;
    QCOMPARE(results.size(), ref["sentences"].size());
    for (size_t s = 0; s < results.size(); ++s) {
        const auto& r = results[s];
        const json& e = ref["sentences"][s];
        QCOMPARE(r.source_ids, e["source_ids"].get<std::vector<int>>());
        const auto expected = e["target_ids"].get<std::vector<int>>();
        const std::vector<int> ours(r.best.ids.begin(),
                                    r.best.ids.begin() + std::min(r.best.ids.size(), expected.size()));
        QCOMPARE(ours, expected);
        if (e["stop_reason"] == "eos") {
            QCOMPARE(r.best.ids.size(), expected.size());
            // Argos translates with replace_unknowns (an <unk> becomes the source piece its alignment
            // head looks at most); AttnLab shows the model's own tokens.
            QCOMPARE(r.best.text, e.value("text_without_replace_unknowns", e["text"].get<std::string>()));
        }
        const auto logp = e["step_log_probs"].get<std::vector<double>>();
        for (size_t t = 0; t < expected.size(); ++t)
            worst_logp = std::max(worst_logp, std::abs(r.best.token_log_probs.at(t) - logp.at(t)));
        worst_map = std::max({worst_map, worstMapDifference(r.encoder_self, e["attentions"]["encoder"], 1u << 30),
                              worstMapDifference(r.decoder_self, e["attentions"]["decoder"], expected.size()),
                              worstMapDifference(r.cross, e["attentions"]["cross"], expected.size())});
    }
    qInfo("largest difference: attention %.2e, log-probability %.2e", worst_map, worst_logp);
    // float32 against float64: summation order and rounding, far below what a reading of a map or a
    // score could notice; a position off by one moves weights by 1e-2 and more.
    QVERIFY2(worst_map < 1e-5, qPrintable(QString::number(worst_map)));
    QVERIFY2(worst_logp < 1e-4, qPrintable(QString::number(worst_logp)));
}

void TestCtranslate2::matchesReference_data() {
    QTest::addColumn<QStringList>("options");
    const QStringList small = {"--layers", "2",  "--decoder-layers", "2",   "--d-model",  "32", "--heads", "4",
                               "--ffn",    "64", "--vocab-size",     "300", "--eos-bias", "2"};
    QTest::newRow("post-norm, shared json vocabulary, float32, v6")
        << small + QStringList{"--norm", "post", "--seed", "1"};
    QTest::newRow("pre-norm, separate txt vocabularies, float16, no config.json")
        << small + QStringList{"--norm",  "pre",         "--vocab", "separate", "--vocab-format", "txt", "--dtype",
                               "float16", "--no-config", "--seed",  "2"};
    QTest::newRow("bfloat16, stored positions, gelu, layernorm_embedding, projection bias, 3 decoder layers")
        << QStringList{"--layers",
                       "2",
                       "--decoder-layers",
                       "3",
                       "--d-model",
                       "32",
                       "--heads",
                       "4",
                       "--ffn",
                       "64",
                       "--vocab-size",
                       "300",
                       "--eos-bias",
                       "2",
                       "--dtype",
                       "bfloat16",
                       "--positions",
                       "learned",
                       "--activation",
                       "gelu",
                       "--layernorm-embedding",
                       "--projection-bias",
                       "--seed",
                       "3"};
    QTest::newRow("int8, tied projection, source bos and eos, start </s>, v5")
        << small + QStringList{"--dtype",
                               "int8",
                               "--tie-projection",
                               "--share-embeddings",
                               "--add-source-bos",
                               "--add-source-eos",
                               "--decoder-start-token",
                               "</s>",
                               "--binary-version",
                               "5",
                               "--seed",
                               "4"};
    QTest::newRow("int16, v3, revision 4 (attributes at the top)")
        << small + QStringList{"--dtype", "int16", "--binary-version", "3", "--spec-revision", "4", "--seed", "5"};
    QTest::newRow("float32, v2, revision 2 TransformerBase, swish, post-norm") << QStringList{
        "--layers",        "2",  "--decoder-layers", "2",     "--d-model",  "32",   "--heads",          "8",
        "--ffn",           "64", "--vocab-size",     "300",   "--eos-bias", "2",    "--binary-version", "2",
        "--spec-revision", "2",  "--activation",     "swish", "--norm",     "post", "--seed",           "6"};
    QTest::newRow("gelutanh, no final norm, eps in config.json")
        << small + QStringList{"--activation", "gelutanh", "--eps", "1e-6", "--seed", "7"};
    QTest::newRow("SentencePiece beside the vocabulary (Argos layout), int8_float16")
        << small + QStringList{"--spm", "--dtype", "int8_float16", "--seed", "8"};
}

void TestCtranslate2::matchesReference() {
    QFETCH(QStringList, options);
    static int made = 0;
    const QString dir = make(QString("model-%1").arg(++made), options);
    const auto sentences = sentencesFor(dir);
    const json ref = reference(dir, sentences, kMaxLength);
    attnlab::Translator t(dir.toStdString(), {attnlab::testing::testDevice()});
    QCOMPARE(t.info().config.tokenizer, std::string("ctranslate2"));
    compare(t.translateBatch(sentences, greedy(kMaxLength)), ref);
}

void TestCtranslate2::scoresMatchReference() {
    const QString dir = make("score", {"--layers", "2", "--d-model", "32", "--heads", "4", "--ffn", "64",
                                       "--vocab-size", "300", "--vocab", "separate", "--seed", "11"});
    const auto sources = sentencesFor(dir);
    const auto v = attnlab::package::readCt2Vocabularies(dir.toStdString());
    const std::vector<std::string> targets = {v.target[10] + " " + v.target[40], v.target[7],
                                              v.target[100] + " unknown-word " + v.target[5], v.target[50]};
    const QString src = m_dir.path() + "/score-src.txt", tgt = m_dir.path() + "/score-tgt.txt",
                  out = m_dir.path() + "/score.json";
    auto lines = [](const std::vector<std::string>& l) {
        std::string s;
        for (const auto& x : l) s += x + "\n";
        return s;
    };
    attnlab::testing::writeFile(src.toStdString(), lines(sources));
    attnlab::testing::writeFile(tgt.toStdString(), lines(targets));
    attnlab::testing::runScript(m_python, "ct2_reference.py",
                                {"score", "--model", dir, "--sources", src, "--targets", tgt, "--out", out});
    const json ref = json::parse(attnlab::testing::readFile(out.toStdString()));
    attnlab::Translator t(dir.toStdString(), {attnlab::testing::testDevice()});
    const auto results = t.teacherForce(sources, targets);
    double worst_logp = 0, worst_map = 0;
    for (size_t i = 0; i < results.size(); ++i) {
        const json& e = ref["pairs"][i];
        QCOMPARE(results[i].best.ids, e["target_ids"].get<std::vector<int>>());
        const auto logp = e["token_log_probs"].get<std::vector<double>>();
        QCOMPARE(results[i].best.token_log_probs.size(), logp.size());
        for (size_t k = 0; k < logp.size(); ++k)
            worst_logp = std::max(worst_logp, std::abs(results[i].best.token_log_probs[k] - logp[k]));
        worst_map = std::max(worst_map, worstMapDifference(results[i].cross, e["attentions"]["cross"], 1u << 30));
    }
    qInfo("scores: largest difference log-probability %.2e, cross-attention %.2e", worst_logp, worst_map);
    QVERIFY2(worst_logp < 1e-4, qPrintable(QString::number(worst_logp)));
    QVERIFY2(worst_map < 1e-5, qPrintable(QString::number(worst_map)));
}

void TestCtranslate2::quantizedStaysNearFloat32_data() {
    QTest::addColumn<QString>("dtype");
    QTest::addColumn<double>("map_bound");
    QTest::addColumn<double>("logp_bound");
    // What rounding the stored weights costs, through 2+2 random layers of width 32 (random weights
    // make the maps far more sensitive than a trained model's): int8 keeps a step of amax/127 per
    // output row, int16 a step of max|W|/1024 for the whole tensor (model_spec.py's 2^10 scale),
    // float16 11 significant bits of every tensor, biases and norms included. Measured (the weights
    // are seeded, so only float32 summation order varies, by ~1e-6): maps 2.0e-2 / 6.2e-3 / 1.2e-3,
    // log-probabilities 5.5e-2 / 1.1e-2 / 2.6e-3; the bounds are three times that, so that a
    // dequantization off by a factor (scale multiplied instead of divided, a row's scale applied to
    // another row) fails by orders of magnitude. docs/ctranslate2.md gives the figures.
    QTest::newRow("int8") << "int8" << 6e-2 << 0.17;
    QTest::newRow("int16") << "int16" << 2e-2 << 3.5e-2;
    QTest::newRow("float16") << "float16" << 4e-3 << 8e-3;
}

void TestCtranslate2::quantizedStaysNearFloat32() {
    QFETCH(QString, dtype);
    QFETCH(double, map_bound);
    QFETCH(double, logp_bound);
    const QStringList same = {"--layers", "2",  "--d-model",    "32",  "--heads", "4",
                              "--ffn",    "64", "--vocab-size", "300", "--seed",  "21"};
    const QString f32 = make("f32-" + dtype, same), q = make("q-" + dtype, same + QStringList{"--dtype", dtype});
    const auto sentences = sentencesFor(f32);
    attnlab::Translator a(f32.toStdString(), {attnlab::testing::testDevice()});
    attnlab::Translator b(q.toStdString(), {attnlab::testing::testDevice()});
    const auto ra = a.translateBatch(sentences, greedy(kMaxLength));
    const auto rb = b.teacherForce(ra);  // the same targets, so that every map has the same shape
    const auto rf = a.teacherForce(ra);
    double worst_map = 0, worst_logp = 0;
    for (size_t i = 0; i < ra.size(); ++i) {
        for (size_t k = 0; k < rf[i].best.token_log_probs.size(); ++k)
            worst_logp = std::max(worst_logp, std::abs(rf[i].best.token_log_probs[k] - rb[i].best.token_log_probs[k]));
        for (const auto maps : {&attnlab::TranslationResult::cross, &attnlab::TranslationResult::encoder_self,
                                &attnlab::TranslationResult::decoder_self}) {
            worst_map = std::max(worst_map, attnlab::testing::worstMapDifference(rf[i].*maps, rb[i].*maps));
        }
    }
    qInfo("%s against float32: attention %.2e, log-probability %.2e", qPrintable(dtype), worst_map, worst_logp);
    QVERIFY2(worst_map > 0, "the quantized model computed exactly the float32 numbers: was it quantized?");
    QVERIFY2(worst_map < map_bound, qPrintable(QString::number(worst_map)));
    QVERIFY2(worst_logp < logp_bound, qPrintable(QString::number(worst_logp)));
}

void TestCtranslate2::argosPackageOpensAsFileAndFolder() {
    const QString zip = m_dir.path() + "/translate-en_de-1_0.argosmodel", unpacked = m_dir.path() + "/argos-installed";
    const QString dir =
        make("argos-src",
             {"--layers", "2",           "--d-model",  "32",        "--heads", "4",  "--ffn",   "64", "--vocab-size",
              "300",      "--spm",       "--eos-bias", "2",         "--seed",  "31", "--argos", zip,  "--argos-dir",
              unpacked,   "--from-code", "en",         "--to-code", "de"});
    const auto sentences = sentencesFor(dir);
    const json ref = reference(dir, sentences, kMaxLength);
    // The .argosmodel is unpacked into a folder of TMPDIR: one of this test's own, empty, so that what other
    // programs unpack into the shared /tmp beside it (ctest -j) is not counted as left behind.
    const QString tmp = m_dir.path() + "/tmp";
    QVERIFY(QDir().mkpath(tmp));
    const QByteArray tmpdir = qgetenv("TMPDIR");
    const auto restore = qScopeGuard([&] { tmpdir.isNull() ? qunsetenv("TMPDIR") : qputenv("TMPDIR", tmpdir); });
    qputenv("TMPDIR", tmp.toUtf8());
    for (const QString& path : {zip, unpacked}) {
        attnlab::Translator t(path.toStdString(), {attnlab::testing::testDevice()});
        QCOMPARE(t.info().config.source_lang, std::string("en"));
        QCOMPARE(t.info().config.target_lang, std::string("de"));
        compare(t.translateBatch(sentences, greedy(kMaxLength)), ref);
    }
    // The temporary folder is gone once the model is loaded.
    QCOMPARE(QDir(tmp).entryList(QDir::AllEntries | QDir::Hidden | QDir::System | QDir::NoDotAndDotDot), QStringList{});
    // Installed packages are listed from ARGOS_PACKAGES_DIR with their languages.
    const QString packages = m_dir.path() + "/argos-packages";
    fs::create_directories(packages.toStdString());
    fs::copy(unpacked.toStdString(), (packages + "/translate-en_de-1_0").toStdString(), fs::copy_options::recursive);
    qputenv("ARGOS_PACKAGES_DIR", packages.toUtf8());
    const auto installed = attnlab::installedArgosModels();  // what the app's model switch lists
    qunsetenv("ARGOS_PACKAGES_DIR");
    QCOMPARE(installed.size(), size_t(1));
    QCOMPARE(installed[0].name, std::string("translate-en_de-1_0"));
    QCOMPARE(installed[0].direction(), std::string("en-de"));
    // ... and --model takes it by its path, as the switch hands it over.
    QCOMPARE(attnlab::resolveModelArgument(installed[0].dir), installed[0].dir);
    QCOMPARE(attnlab::resolveModelArgument(zip.toStdString()), zip.toStdString());
}

void TestCtranslate2::importedPackageGivesTheSameResults() {
    const QString dir = make(
        "to-import", {"--layers", "2", "--d-model", "32", "--heads", "4", "--ffn", "64", "--vocab-size", "300",
                      "--vocab", "separate", "--dtype", "int8", "--add-source-eos", "--eos-bias", "2", "--seed", "41"});
    const std::string pkg = m_dir.path().toStdString() + "/imported";
    const auto config = attnlab::importMarianModel(dir.toStdString(), pkg);
    QCOMPARE(config.tokenizer, std::string("ctranslate2"));
    QVERIFY(fs::exists(pkg + "/source_vocabulary.json") || fs::exists(pkg + "/source_vocabulary.txt"));
    const auto sentences = sentencesFor(dir);
    const json ref = reference(dir, sentences, kMaxLength);
    attnlab::Translator t(pkg, {attnlab::testing::testDevice()});
    compare(t.translateBatch(sentences, greedy(kMaxLength)), ref);
}

void TestCtranslate2::cliScoresAndTranslatesTokens() {
    const QString dir = make("cli", {"--layers", "2", "--d-model", "32", "--heads", "4", "--ffn", "64", "--vocab-size",
                                     "300", "--eos-bias", "2", "--seed", "51"});
    const auto v = attnlab::package::readCt2Vocabularies(dir.toStdString());
    const QString src = m_dir.path() + "/cli-src.txt", tgt = m_dir.path() + "/cli-tgt.txt";
    attnlab::testing::writeFile(src.toStdString(), v.source[10] + " " + v.source[11] + "\n" + v.source[12] + "\n");
    attnlab::testing::writeFile(tgt.toStdString(), v.target[20] + "\n" + v.target[21] + " " + v.target[22] + "\n");
    QProcess p;
    p.start(ATTNLAB_CLI_PATH, {"score", "--model", dir, "--src", src, "--tgt", tgt, "--device", "cpu", "--attention",
                               m_dir.path() + "/cli-score.json"});
    QVERIFY(p.waitForFinished(120000));
    QCOMPARE(p.exitCode(), 0);
    const QStringList out = QString::fromUtf8(p.readAllStandardOutput()).split('\n', Qt::SkipEmptyParts);
    QCOMPARE(out.size(), 2);
    // "mean<TAB>piece=logp ...": the target's tokens and </s>, the mean their average.
    const QStringList second = out[1].split('\t');
    const QStringList pieces = second[1].split(' ');
    QCOMPARE(pieces.size(), 3);
    QVERIFY(pieces[0].startsWith(QString::fromStdString(v.target[21]) + "="));
    QVERIFY(pieces[2].startsWith("</s>="));
    double sum = 0;
    for (const auto& piece : pieces) sum += piece.section('=', -1).toDouble();
    QVERIFY(std::abs(sum / 3 - second[0].toDouble()) < 1e-5);
    const json j = json::parse(attnlab::testing::readFile(m_dir.path().toStdString() + "/cli-score.json"));
    QCOMPARE(j["sentences"].size(), size_t(2));
    // Mismatched files: refused by message.
    attnlab::testing::writeFile(tgt.toStdString(), v.target[20] + "\n");
    p.start(ATTNLAB_CLI_PATH, {"score", "--model", dir, "--src", src, "--tgt", tgt, "--device", "cpu"});
    QVERIFY(p.waitForFinished(120000));
    QVERIFY(p.exitCode() != 0);
    QVERIFY(QString::fromUtf8(p.readAllStandardError()).contains("--src has 2 lines but --tgt has 1"));
    // translate prints a whitespace model's tokens separated by spaces.
    p.start(ATTNLAB_CLI_PATH, {"translate", "--model", dir, "--device", "cpu", "--beam", "1", "--text",
                               QString::fromStdString(v.source[10] + " " + v.source[11])});
    QVERIFY(p.waitForFinished(120000));
    QCOMPARE(p.exitCode(), 0);
    const QString line = QString::fromUtf8(p.readAllStandardOutput()).trimmed();
    for (const QString& token : line.split(' ', Qt::SkipEmptyParts))
        QVERIFY2(std::find(v.target.begin(), v.target.end(), token.toStdString()) != v.target.end(), qPrintable(line));
}

void TestCtranslate2::windowsLineEndingsReadAsCTranslate2ReadsThem() {
    // A vocabulary.txt saved with CRLF: CTranslate2 drops the \r of every line when all have one.
    const QString dir = make("crlf", {"--layers", "1", "--d-model", "16", "--heads", "2", "--ffn", "32", "--vocab-size",
                                      "60", "--vocab-format", "txt", "--eos-bias", "2", "--seed", "61"});
    const std::string file = dir.toStdString() + "/shared_vocabulary.txt";
    const auto before = attnlab::package::readCt2Vocabularies(dir.toStdString()).source;
    std::string crlf;
    for (const auto& t : before) crlf += t + "\r\n";
    attnlab::testing::writeFile(file, crlf);
    QCOMPARE(attnlab::package::readCt2Vocabularies(dir.toStdString()).source, before);
    attnlab::Translator t(dir.toStdString(), {attnlab::testing::testDevice()});
    QVERIFY(!t.translate(before[5] + " " + before[6], greedy(kMaxLength)).best.ids.empty());
}

void TestCtranslate2::vocabularyWithoutUnknownTokenGetsItAppended() {
    // A trained model's vocabulary files often have no <unk> line: CTranslate2 appends it
    // (src/vocabulary.cc), so the embeddings have one row more than the file has lines. The reference
    // writes such a model (its embeddings' last row is the appended <unk>'s) and maps tokens as vocabulary.cc.
    const QString dir =
        make("no-unk", {"--layers", "2", "--d-model", "32", "--heads", "4", "--ffn", "64", "--vocab-size", "120",
                        "--specials", "<blank> <s> </s>", "--vocab-format", "txt", "--eos-bias", "2", "--seed", "71"});
    const auto v = attnlab::package::readCt2Vocabularies(dir.toStdString());
    QVERIFY(std::find(v.source.begin(), v.source.end(), "<unk>") == v.source.end());
    const auto unk = int(v.source.size());  // the appended token's id: the last
    attnlab::Translator t(dir.toStdString(), {attnlab::testing::testDevice()});
    QCOMPARE(t.info().config.unk_idx, int64_t(unk));
    QCOMPARE(t.info().config.model.n_src_vocab, int64_t(unk) + 2);  // and AttnLab's <pad> after it
    QCOMPARE(t.info().config.model.src_pad_idx, int64_t(unk) + 1);
    const auto sentences = sentencesFor(dir);  // the third holds a word the vocabulary lacks
    const json ref = reference(dir, sentences, kMaxLength);
    const auto results = t.translateBatch(sentences, greedy(kMaxLength));
    compare(results, ref);
    QCOMPARE(results[2].source_ids.at(1), unk);
    QCOMPARE(results[2].source_pieces.at(1), std::string("<unk>"));
    // Imported, the vocabulary is written as CTranslate2 holds it, the <unk> last, then AttnLab's <pad>, and reads
    // back the same.
    const std::string pkg = m_dir.path().toStdString() + "/no-unk-imported";
    (void)attnlab::importMarianModel(dir.toStdString(), pkg);
    const auto written = json::parse(attnlab::testing::readFile(pkg + "/shared_vocabulary.json"));
    QCOMPARE(written.size(), size_t(unk) + 2);
    QCOMPARE(written.at(size_t(unk)).get<std::string>(), std::string("<unk>"));
    QCOMPARE(written.back().get<std::string>(), std::string("<pad>"));
    attnlab::Translator imported(pkg, {attnlab::testing::testDevice()});
    compare(imported.translateBatch(sentences, greedy(kMaxLength)), ref);
}

void TestCtranslate2::duplicateTokenTakesItsFirstId() {
    // vocabulary.cc add_token: a token listed twice keeps its first id; the later line still takes a row.
    const QString dir =
        make("duplicate", {"--layers", "1", "--d-model", "16", "--heads", "2", "--ffn", "32", "--vocab-size", "60",
                           "--vocab-format", "txt", "--eos-bias", "2", "--seed", "81"});
    const std::string file = dir.toStdString() + "/shared_vocabulary.txt";
    auto tokens = attnlab::package::readCt2Vocabularies(dir.toStdString()).source;
    tokens[30] = tokens[20];
    std::string text;
    for (const auto& t : tokens) text += t + "\n";
    attnlab::testing::writeFile(file, text);
    const std::vector<std::string> sentences = {tokens[20] + " " + tokens[21], tokens[22] + " " + tokens[20]};
    const json ref = reference(dir, sentences, kMaxLength);
    attnlab::Translator t(dir.toStdString(), {attnlab::testing::testDevice()});
    const auto results = t.translateBatch(sentences, greedy(kMaxLength));
    compare(results, ref);
    QCOMPARE(results[0].source_ids.at(0), 20);
    QCOMPARE(results[1].source_ids.at(1), 20);
}

void TestCtranslate2::refusedByMessage_data() {
    QTest::addColumn<QStringList>("options");
    QTest::addColumn<QString>("edit");
    QTest::addColumn<QString>("message");
    QTest::newRow("rotary") << QStringList{"--rotary"} << ""
                            << "rotary position embeddings";
    QTest::newRow("multi-query") << QStringList{"--multi-query"} << ""
                                 << "multi-query attention";
    QTest::newRow("gated feed-forward") << QStringList{"--ffn-glu"} << ""
                                        << "gated feed-forward";
    QTest::newRow("RMS norm") << QStringList{"--rms-norm"} << ""
                              << "RMS normalisation";
    QTest::newRow("truncated model.bin") << QStringList{} << "truncate"
                                         << "is truncated";
    QTest::newRow("vocabulary shorter than the embeddings") << QStringList{} << "vocabulary"
                                                            << "rows";
    QTest::newRow("a newer binary version") << QStringList{} << "version"
                                            << "binary version 7";
    QTest::newRow("another spec") << QStringList{} << "spec"
                                  << "WhisperSpec";
    QTest::newRow("spec revision 0") << QStringList{} << "revision-0"
                                     << "spec revision 0 is not one CTranslate2 writes: its revisions count from 1";
    QTest::newRow("aliases of no role") << QStringList{} << "aliases-1000"
                                        << "unexpected alias 'unknown/alias_0' (of 'decoder/embeddings/weight'): a "
                                           "name of no role";
    QTest::newRow("100,000 aliases") << QStringList{} << "aliases-100000"
                                     << "claims 100000 aliases; AttnLab reads at most 65536";
    QTest::newRow("zip member outside the package") << QStringList{} << "zip-slip"
                                                    << "lies outside the package";
    QTest::newRow("zip with a link") << QStringList{} << "zip-link"
                                     << "a link or a special file";
    QTest::newRow("Argos package with bpe.model") << QStringList{} << "bpe"
                                                  << "bpe.model (Moses and subword-nmt)";
}

namespace {
// model.bin's header, rewritten: the spec name (binary version >= 2: u32 version, u16 length, name).
void rewriteSpecName(const std::string& path, const std::string& name) {
    std::string bytes = attnlab::testing::readFile(path);
    const uint16_t old_len = uint16_t(uint8_t(bytes[4]) | (uint8_t(bytes[5]) << 8));
    const uint16_t len = uint16_t(name.size() + 1);
    std::string header = bytes.substr(0, 4) + std::string{char(len & 0xff), char(len >> 8)} + name + '\0';
    attnlab::testing::writeFile(path, header + bytes.substr(6 + old_len));
}
// The spec revision (after the version and the spec name) set to `revision`.
void rewriteSpecRevision(const std::string& path, uint32_t revision) {
    std::string bytes = attnlab::testing::readFile(path);
    const size_t at = 6 + size_t(uint8_t(bytes[4]) | (uint8_t(bytes[5]) << 8));
    std::memcpy(&bytes[at], &revision, 4);
    attnlab::testing::writeFile(path, bytes);
}

// `count` more aliases "unknown/alias_N" of the decoder's embeddings, after those model.bin has.
void addAliases(const std::string& path, uint32_t count) {
    const auto bin = attnlab::package::ct2::readModelBin(path);
    uint64_t end = 0;
    for (const auto& v : bin.variables) end = std::max(end, v.offset + v.nbytes);
    std::string bytes = attnlab::testing::readFile(path);
    uint32_t n = 0;
    std::memcpy(&n, &bytes[end], 4);
    n += count;
    std::memcpy(&bytes[end], &n, 4);
    auto text = [&](const std::string& t) {
        const uint16_t len = uint16_t(t.size() + 1);
        bytes += std::string{char(len & 0xff), char(len >> 8)} + t + '\0';
    };
    for (uint32_t i = 0; i < count; ++i) {
        text("unknown/alias_" + std::to_string(i));
        text(bin.resolve("decoder/embeddings/weight"));
    }
    attnlab::testing::writeFile(path, bytes);
}
}  // namespace

void TestCtranslate2::refusedByMessage() {
    QFETCH(QStringList, options);
    QFETCH(QString, edit);
    QFETCH(QString, message);
    static int made = 0;
    const QString dir = make(
        QString("refused-%1").arg(++made),
        QStringList{"--layers", "1", "--d-model", "16", "--heads", "2", "--ffn", "32", "--vocab-size", "60"} + options);
    std::string path = dir.toStdString();
    const std::string bin = path + "/model.bin";
    if (edit == "truncate") {
        fs::resize_file(bin, fs::file_size(bin) - 100);
    } else if (edit == "vocabulary") {
        const auto v = attnlab::package::readCt2Vocabularies(path);
        json shorter(std::vector<std::string>(v.source.begin(), v.source.end() - 1));
        for (const auto& f : v.files) fs::remove(f);
        attnlab::testing::writeFile(path + "/shared_vocabulary.json", shorter.dump());
    } else if (edit == "version") {
        std::string bytes = attnlab::testing::readFile(bin);
        bytes[0] = 7;
        attnlab::testing::writeFile(bin, bytes);
    } else if (edit == "spec") {
        rewriteSpecName(bin, "WhisperSpec");
    } else if (edit == "revision-0") {
        rewriteSpecRevision(bin, 0);
    } else if (edit.startsWith("aliases-")) {
        addAliases(bin, edit.mid(8).toUInt());
    } else if (edit == "bpe") {
        // An installed Argos package whose tokenizer is argos-translate's BPETokenizer.
        path = m_dir.path().toStdString() + "/bpe-package";
        fs::create_directories(path);
        fs::rename(dir.toStdString(), path + "/model");
        attnlab::testing::writeFile(path + "/metadata.json", R"({"from_code": "en", "to_code": "de"})");
        attnlab::testing::writeFile(path + "/bpe.model", "#version: 0.2\n");
    } else if (edit.startsWith("zip-")) {
        path = m_dir.path().toStdString() + "/bad-" + std::to_string(made) + ".argosmodel";
        const std::string script = edit == "zip-slip"
                                       ? "import zipfile,sys\nz=zipfile.ZipFile(sys.argv[1],'w')\n"
                                         "z.writestr('pkg/metadata.json','{}')\nz.writestr('pkg/../../evil.txt','x')\n"
                                       : "import zipfile,sys\nz=zipfile.ZipFile(sys.argv[1],'w')\n"
                                         "i=zipfile.ZipInfo('pkg/model')\ni.external_attr=(0o120777<<16)\n"
                                         "z.writestr(i,'/etc')\n";
        QProcess p;
        p.start(m_python, {"-c", QString::fromStdString(script), QString::fromStdString(path)});
        QVERIFY(p.waitForFinished(60000) && p.exitCode() == 0);
    }
    const QString got =
        attnlab::testing::messageOf([&] { attnlab::Translator t(path, {attnlab::testing::testDevice()}); });
    QVERIFY2(got.contains(message), qPrintable(got));
    QVERIFY(!fs::exists(m_dir.path().toStdString() + "/evil.txt"));
}

// The issue's vocabulary: 64 MB of 22 M empty strings took 2.67 GB as a JSON DOM (the .txt form of
// newlines 423 MB) before "more than 4194304 tokens". Now counted before a token is stored: read
// with 256 MiB of address space to spare, the message comes, not bad_alloc.
void TestCtranslate2::vocabularyCountedBeforeItIsStored_data() {
    QTest::addColumn<QString>("file");
    QTest::newRow("JSON") << "shared_vocabulary.json";
    QTest::newRow("one token a line") << "shared_vocabulary.txt";
}

void TestCtranslate2::vocabularyCountedBeforeItIsStored() {
    QFETCH(QString, file);
    const std::string dir = m_dir.path().toStdString() + "/empty-tokens-" + file.toStdString();
    fs::create_directories(dir);
    const size_t bytes = (size_t(64) << 20) - 2;  // just under the file size cap
    std::string text;
    if (file.endsWith(".json")) {
        text.reserve(bytes + 2);
        text = "[\"\"";
        while (text.size() + 3 < bytes) text += ",\"\"";
        text += "]";
    } else {
        text.assign(bytes, '\n');
    }
    attnlab::testing::writeFile(dir + "/" + file.toStdString(), text);
    text = std::string();
    const AddressSpaceLimit limit(uint64_t(256) << 20);
    QVERIFY(limit.active());
    const QString got =
        attnlab::testing::messageOf<std::exception>([&] { attnlab::package::readCt2Vocabularies(dir); });
    QVERIFY2(got.endsWith(file + ": holds more than 4194304 tokens"), qPrintable(got));
}

namespace {
// An .argosmodel whose model.bin is `mib` MiB of zeros (deflated to about a thousandth): honest, or
// with its headers saying 1000 bytes.
void writeArgosBomb(const QString& python, const std::string& path, int mib, bool lying) {
    const char* script = R"(import struct, sys, zipfile
path, mib, lying = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
    z.writestr("pkg/metadata.json", '{"from_code": "en", "to_code": "de"}')
    with z.open("pkg/model/model.bin", "w") as f:
        for _ in range(mib):
            f.write(bytes(1 << 20))
if lying:
    b = bytearray(open(path, "rb").read())
    for sig, size_at, name_at in ((b"PK\x03\x04", 22, 30), (b"PK\x01\x02", 24, 46)):
        i = b.find(sig)
        while i >= 0:
            if b[i + name_at:i + name_at + 19] == b"pkg/model/model.bin":
                struct.pack_into("<I", b, i + size_at, 1000)
            i = b.find(sig, i + 4)
    open(path, "wb").write(bytes(b))
)";
    QProcess p;
    p.start(python, {"-c", script, QString::fromStdString(path), QString::number(mib), lying ? "1" : "0"});
    QVERIFY(p.waitForFinished(60000));
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
}

// TMPDIR set to `dir` while it lives, then as it was (unset when it was).
class TmpdirSet {
public:
    explicit TmpdirSet(const std::string& dir) : m_had(qEnvironmentVariableIsSet("TMPDIR")), m_old(qgetenv("TMPDIR")) {
        qputenv("TMPDIR", QByteArray::fromStdString(dir));
    }
    ~TmpdirSet() { m_had ? qputenv("TMPDIR", m_old) : qunsetenv("TMPDIR"); }
    TmpdirSet(const TmpdirSet&) = delete;
    TmpdirSet& operator=(const TmpdirSet&) = delete;

private:
    bool m_had;
    QByteArray m_old;
};

size_t entriesIn(const std::string& dir) {
    std::error_code ec;
    return size_t(std::distance(fs::directory_iterator(dir, ec), fs::directory_iterator()));
}
}  // namespace

// The issue's bomb: a 9.6 MB .argosmodel wrote 8.1 GB into TMPDIR before it was refused. An archive
// now unpacks to at most 20 times its size (32 MiB at least): a 200 MiB model.bin of zeros (a
// 200 kB zip) is refused at 32 MiB, by its header when that is honest and as the bytes come when it
// lies; TMPDIR is as it was.
void TestCtranslate2::argosBombStopsAtItsBound_data() {
    QTest::addColumn<bool>("lying");
    QTest::newRow("honest header") << false;
    QTest::newRow("header says 1000 bytes") << true;
}

void TestCtranslate2::argosBombStopsAtItsBound() {
    QFETCH(bool, lying);
    const std::string zip = m_dir.path().toStdString() + "/bomb-" + (lying ? "lying" : "honest") + ".argosmodel";
    writeArgosBomb(m_python, zip, 200, lying);
    QVERIFY(fs::file_size(zip) < (size_t(1) << 20));
    const std::string tmp = m_dir.path().toStdString() + "/bomb-tmp";
    fs::create_directories(tmp);
    const QString got = attnlab::testing::messageOf([&] {
        const TmpdirSet in_tmp(tmp);
        attnlab::package::locateCtranslate2(zip);
    });
    QVERIFY2(got.contains("member 'pkg/model/model.bin'") &&
                 got.contains("the archive unpacks to more than 32 MiB, the most AttnLab writes for an archive of 1 "
                              "MiB (20 times its size, at least 32 MiB)"),
             qPrintable(got));
    QCOMPARE(got.contains("says it holds 200 MiB"), !lying);
    QCOMPARE(entriesIn(tmp), size_t(0));
}

// A process killed while unpacking leaves its staging folder (marked, named for its pid); the next
// one that unpacks an .argosmodel removes it.
void TestCtranslate2::argosStagingOfAKilledProcessIsSwept() {
    const std::string tmp = m_dir.path().toStdString() + "/killed-tmp";
    fs::create_directories(tmp);
    const pid_t child = fork();
    if (child == 0) {
        const std::string folder = attnlab::util::makeStagingFolderIn(tmp, "attnlab-argos");
        std::ofstream(folder + "/half-unpacked.bin") << std::string(1 << 20, 'x');
        ::raise(SIGKILL);
        ::_exit(0);
    }
    int status = 0;
    QCOMPARE(::waitpid(child, &status, 0), child);
    QVERIFY(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    QCOMPARE(entriesIn(tmp), size_t(1));
    const std::string left = fs::directory_iterator(tmp)->path().filename().string();
    QVERIFY2(left.rfind(".attnlab-argos-", 0) == 0 &&
                 left.find(".attnlab-staging-" + std::to_string(child)) != std::string::npos,
             left.c_str());
    const std::string zip = m_dir.path().toStdString() + "/no-model.argosmodel";
    QProcess p;
    p.start(m_python,
            {"-c", "import sys, zipfile\nzipfile.ZipFile(sys.argv[1], 'w').writestr('pkg/metadata.json', '{}')",
             QString::fromStdString(zip)});
    QVERIFY(p.waitForFinished(60000) && p.exitCode() == 0);
    const QString got = attnlab::testing::messageOf([&] {
        const TmpdirSet in_tmp(tmp);
        attnlab::package::locateCtranslate2(zip);
    });
    QVERIFY2(got.contains("holds no model/model.bin"), qPrintable(got));
    QCOMPARE(entriesIn(tmp), size_t(0));
}

QTEST_MAIN(TestCtranslate2)
#include "tst_ctranslate2.moc"
