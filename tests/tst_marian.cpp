// Hugging Face MarianMT directories (OPUS-MT) against an independent Python implementation of
// MarianTokenizer and MarianMTModel (scripts/marian_reference.py, Debian's python3-torch and
// python3-sentencepiece): source ids, greedy ids, log-probabilities, text and every attention map,
// for several architectures and file layouts; the package `import` writes gives the same results;
// broken directories get errors naming file and problem.
//
// The tokenizer files and config come from ../shared/data/opus-mt-en-mg (a real OPUS-MT model
// without its weights; ATTNLAB_OPUS_MT_DIR overrides the place); the weights are random ones of
// small dimensions made by the Python script. Skipped, with a message, where either is missing.
#include "fixtures.h"
#include "python_probe.h"

#include <attnlab/errors.h>
#include <attnlab/package.h>
#include <attnlab/translator.h>
#include <attnlab/unknown_languages.h>

#include <QtTest/QtTest>

#include <nlohmann/json.hpp>

#include <filesystem>

using nlohmann::json;
namespace fs = std::filesystem;

class TestMarian : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void matchesReference_data();
    void matchesReference();
    void importedPackageGivesTheSameResults();
    void brokenDirectoriesAreNamed_data();
    void brokenDirectoriesAreNamed();
    void importNeverReplacesTheSourceOrForeignFiles();
    void languageCodes();
    void hubSnapshotLanguagesComeFromTheRepositoryName();

private:
    QString make(const QString& name, const QStringList& options);
    json reference(const QString& dir, const std::vector<std::string>& sentences, const QStringList& options = {});
    static attnlab::DecodingOptions greedy(const attnlab::Translator& t);

    QTemporaryDir m_dir;
    // Debian's python3 with python3-torch; ATTNLAB_PYTHON names another (scripts/gpu_check.sh: pip's torch).
    QString m_python = qEnvironmentVariable("ATTNLAB_PYTHON", "/usr/bin/python3");
    QString m_opus;
    const std::vector<std::string> m_sentences = {"Hello world.", "The cat sat on the mat.",
                                                  ">>fra<< A dog runs in the park.", "Ünïcödé ✓ 42 times"};
};

void TestMarian::initTestCase() {
    m_opus = qEnvironmentVariable("ATTNLAB_OPUS_MT_DIR", QString(ATTNLAB_SOURCE_DIR) + "/../shared/data/opus-mt-en-mg");
    if (!QFileInfo(m_opus + "/vocab.json").exists())
        QSKIP(qPrintable("no OPUS-MT tokenizer files at " + m_opus + " (set ATTNLAB_OPUS_MT_DIR): skipped"));
    ATTNLAB_REQUIRE_PYTHON(m_python, (QStringList{"torch", "numpy", "sentencepiece"}), "Marian cross-check");
}

QString TestMarian::make(const QString& name, const QStringList& options) {
    const QString out = m_dir.path() + "/" + name;
    attnlab::testing::runScript(m_python, "marian_reference.py",
                                QStringList{"make", "--from", m_opus, "--out", out} + options);
    return out;
}

// `options`: more of marian_reference.py run's (--max-length, --no-attentions).
json TestMarian::reference(const QString& dir, const std::vector<std::string>& sentences, const QStringList& options) {
    const QString in = m_dir.path() + "/sentences.txt", out = m_dir.path() + "/reference.json";
    std::string text;
    for (const auto& s : sentences) text += s + "\n";
    attnlab::testing::writeFile(in.toStdString(), text);
    attnlab::testing::runScript(m_python, "marian_reference.py",
                                QStringList{"run", "--model", dir, "--sentences", in, "--out", out} + options);
    return json::parse(attnlab::testing::readFile(out.toStdString()));
}

// Greedy search as Hugging Face's generate with num_beams=1: the model's max_length (which
// counts the start token) as the only cap.
attnlab::DecodingOptions TestMarian::greedy(const attnlab::Translator& t) {
    attnlab::DecodingOptions o;
    o.beam_size = 1;
    o.max_length = t.info().config.max_length - 1;
    o.max_length_ratio = 0;
    o.top_k_candidates = 0;
    return o;
}

void TestMarian::matchesReference_data() {
    QTest::addColumn<QStringList>("options");
    // seed 3 with an eos bias: one sentence stops at once, others after a few tokens or at the cap.
    const QStringList base{"--seed", "3", "--eos-bias", "6.5", "--max-length", "14"};
    QTest::newRow("safetensors, swish, tied, final_logits_bias")
        << base + QStringList{"--format", "safetensors", "--activation", "swish", "--final-logits-bias"};
    QTest::newRow("pytorch_model.bin, relu, untied, eos 7")
        << base + QStringList{"--format", "bin", "--activation", "relu", "--untied", "--eos-id", "7"};
    QTest::newRow("safetensors F16, gelu, tied once, no positions")
        << base + QStringList{"--format",    "safetensors",    "--dtype",
                              "F16",         "--activation",   "gelu",
                              "--tied-once", "--no-positions", "--final-logits-bias"};
    QTest::newRow("pytorch_model.bin, 2 encoder + 1 decoder layers, ffn 48/24")
        << base + QStringList{"--format",      "bin", "--decoder-layers",   "1", "--ffn", "48",
                              "--decoder-ffn", "24",  "--final-logits-bias"};
}

void TestMarian::matchesReference() {
    QFETCH(QStringList, options);
    static int made = 0;
    const QString dir = make(QString("model-%1").arg(++made), options);
    const json ref = reference(dir, m_sentences);
    attnlab::Translator t(dir.toStdString(), {attnlab::testing::testDevice()});
    QCOMPARE(t.info().config.tokenizer, std::string("marian"));
    auto o = greedy(t);
    const auto results = t.translateBatch(m_sentences, o);
    double worst_map = 0, worst_logp = 0;
    int compared_rows = 0;
    for (size_t s = 0; s < results.size(); ++s) {
        const auto& r = results[s];
        const json& e = ref["sentences"][s];
        QCOMPARE(r.source_ids, e["source_ids"].get<std::vector<int>>());
        auto expected = e["greedy_ids"].get<std::vector<int>>();
        // Hugging Face forces </s> as the last token at max_length; AttnLab stops there unfinished.
        if (e["stop_reason"] == "forced_eos") expected.pop_back();
        const std::vector<int> ours(r.best.ids.begin(),
                                    r.best.ids.begin() + std::min(r.best.ids.size(), expected.size()));
        QCOMPARE(ours, expected);
        if (e["stop_reason"] == "eos") QCOMPARE(r.best.text, e["text"].get<std::string>());
        // AttnLab's log-probabilities are log_softmax over the whole vocabulary, the never-generated
        // pad then set to -inf without renormalising: the reference's raw step_log_probs.
        const auto logp = e["step_log_probs"].get<std::vector<double>>();
        for (size_t i = 0; i < expected.size(); ++i)
            worst_logp = std::max(worst_logp, std::abs(r.best.token_log_probs[i] - logp[i]));
        // Maps: every row of the tokens both produced.
        const json& att = e["attentions"];
        auto compare = [&](const attnlab::LayerHeadMaps& maps, const json& theirs, size_t rows) {
            QCOMPARE(maps.size(), theirs.size());
            for (size_t l = 0; l < maps.size(); ++l)
                for (size_t h = 0; h < maps[l].size(); ++h)
                    for (size_t i = 0; i < rows; ++i)
                        for (size_t j = 0; j < maps[l][h][i].size(); ++j) {
                            const double d = std::abs(maps[l][h][i][j] - theirs[l][h][i][j].get<double>());
                            worst_map = std::max(worst_map, d);
                        }
        };
        compare(r.encoder_self, att["encoder"], r.source_ids.size());
        compare(r.decoder_self, att["decoder"], expected.size());
        compare(r.cross, att["cross"], expected.size());
        compared_rows += int(expected.size());
    }
    qInfo("%d target rows; largest differences: attention %.3g, log-probability %.3g", compared_rows, worst_map,
          worst_logp);
    QVERIFY(compared_rows > 3);
    // float32 here, float64 there: 1e-5 for probabilities, 1e-4 for log-probabilities (sums of
    // a vocabulary of 54,688 logits) on any BLAS kernel.
    QVERIFY2(worst_map < 1e-5, qPrintable(QString::number(worst_map)));
    QVERIFY2(worst_logp < 1e-4, qPrintable(QString::number(worst_logp)));
}

void TestMarian::importedPackageGivesTheSameResults() {
    const QString dir = make("for-import", {"--seed", "5", "--format", "bin", "--final-logits-bias", "--eos-bias", "6",
                                            "--max-length", "12"});
    const std::string pkg = m_dir.path().toStdString() + "/imported";
    const auto config = attnlab::importMarianModel(dir.toStdString(), pkg);
    QCOMPARE(config.tokenizer, std::string("marian"));
    for (const char* f :
         {"config.json", "model.safetensors", "source.spm", "target.spm", "vocab.json", "MODEL_CARD.md"})
        QVERIFY2(fs::exists(fs::path(pkg) / f), f);
    QVERIFY(attnlab::testing::readFile(pkg + "/MODEL_CARD.md").find("for-import") != std::string::npos);
    const auto read_back = attnlab::readPackageConfig(pkg);
    QCOMPARE(read_back.model.ffn_activation, std::string("swish"));
    QCOMPARE(read_back.model.pos_encoding, std::string("half"));
    QCOMPARE(read_back.num_beams, 4);

    attnlab::Translator a(dir.toStdString(), {attnlab::testing::testDevice()}),
        b(pkg, {attnlab::testing::testDevice()});
    auto o = greedy(a);
    o.beam_size = 4;  // the model's own default, through AttnLab's beam search
    const auto ra = a.translateBatch(m_sentences, o), rb = b.translateBatch(m_sentences, o);
    for (size_t s = 0; s < ra.size(); ++s) {
        QCOMPARE(rb[s].best.ids, ra[s].best.ids);
        QCOMPARE(rb[s].best.text, ra[s].best.text);
        QCOMPARE(rb[s].cross, ra[s].cross);  // the same weights: the same numbers, exactly
        QCOMPARE(rb[s].source_pieces, ra[s].source_pieces);
    }
}

void TestMarian::brokenDirectoriesAreNamed_data() {
    QTest::addColumn<QString>("breakage");
    QTest::addColumn<QString>("message");
    QTest::newRow("t5") << "t5"
                        << "model_type 't5' (T5, mT5, MADLAD-400) is not supported";
    QTest::newRow("pre-layer-norm") << "prenorm"
                                    << "pre-layer-norm models are not supported";
    QTest::newRow("no target.spm") << "no-target-spm"
                                   << "target.spm: missing file";
    QTest::newRow("vocabulary size") << "vocab-size"
                                     << "vocab.json: has no piece for 5312 of the model's 60000 ids (config.json's "
                                        "vocab_size)";
    QTest::newRow("truncated weights") << "truncated"
                                       << "pytorch_model.bin";
    QTest::newRow("no weights") << "no-weights"
                                << "has neither model.safetensors nor pytorch_model.bin";
    QTest::newRow("eos disagrees") << "eos"
                                   << "eos_token_id is 5 but vocab.json gives '</s>' the id 0";
}

void TestMarian::brokenDirectoriesAreNamed() {
    QFETCH(QString, breakage);
    QFETCH(QString, message);
    const QString dir = make("broken-" + breakage, {"--format", "bin"});
    const std::string d = dir.toStdString();
    auto edit = [&](const std::function<void(json&)>& f) {
        json j = json::parse(attnlab::testing::readFile(d + "/config.json"));
        f(j);
        attnlab::testing::writeFile(d + "/config.json", j.dump());
    };
    if (breakage == "t5") edit([](json& j) { j["model_type"] = "t5"; });
    if (breakage == "prenorm") edit([](json& j) { j["normalize_before"] = true; });
    if (breakage == "no-target-spm") fs::remove(d + "/target.spm");
    if (breakage == "vocab-size") edit([](json& j) { j["vocab_size"] = 60000; });
    if (breakage == "eos") edit([](json& j) { j["eos_token_id"] = 5; });
    if (breakage == "no-weights") fs::remove(d + "/pytorch_model.bin");
    if (breakage == "truncated") fs::resize_file(d + "/pytorch_model.bin", fs::file_size(d + "/pytorch_model.bin") / 2);
    if (breakage == "lfs")
        attnlab::testing::writeFile(d + "/pytorch_model.bin",
                                    "version https://git-lfs.github.com/spec/v1\noid sha256:0\nsize 300000000\n");
    if (breakage == "separate") attnlab::testing::writeFile(d + "/target_vocab.json", "{}");
    if (breakage == "nested")  // a million '[': a stack overflow in a recursive parser, an error here
        attnlab::testing::writeFile(d + "/tokenizer_config.json", std::string(1000000, '['));
    // The weights' own shapes decide before any allocation: a 2^24 vocabulary is refused by the
    // shape check, not allocated (the model would be 1 GB).
    if (breakage == "huge-vocab") edit([](json& j) { j["vocab_size"] = 1 << 24; });
    try {
        attnlab::Translator t(d, {attnlab::testing::testDevice()});
        QFAIL("loaded a broken directory");
    } catch (const attnlab::Error& e) {
        QVERIFY2(QString(e.what()).contains(message), e.what());
    }
}

void TestMarian::importNeverReplacesTheSourceOrForeignFiles() {
    const QString dir = make("import-guard", {"--format", "bin"});
    const std::string d = dir.toStdString();
    auto refused = [](const std::string& from, const std::string& to, const char* message) {
        try {
            attnlab::importMarianModel(from, to);
            QFAIL(qPrintable(QString("imported into ") + QString::fromStdString(to)));
        } catch (const attnlab::PackageError& e) {
            QVERIFY2(QString(e.what()).contains(message), e.what());
        }
    };
    refused(d, d, "is the source directory");
    refused(d, d + "/inside", "is the source directory");
    const std::string foreign = m_dir.path().toStdString() + "/somebodys-files";
    fs::create_directories(foreign);
    attnlab::testing::writeFile(foreign + "/notes.txt", "keep me");
    refused(d, foreign, "somebodys-files: is a folder of other files, not a model package AttnLab wrote");
    QVERIFY(fs::exists(d + "/pytorch_model.bin") && fs::exists(foreign + "/notes.txt"));
    // A config.json does not make a folder a package (an editor's settings beside notes and
    // photos): the adversarial trial's import deleted all three.
    const std::string editor = m_dir.path().toStdString() + "/with-config";
    fs::create_directories(editor + "/photos");
    attnlab::testing::writeFile(editor + "/config.json", "{\"tabSize\": 4}");
    attnlab::testing::writeFile(editor + "/notes.txt", "keep me");
    attnlab::testing::writeFile(editor + "/photos/a.jpg", "jpeg");
    refused(d, editor, "with-config: is a folder of other files, not a model package AttnLab wrote");
    QCOMPARE(attnlab::testing::readFile(editor + "/notes.txt"), std::string("keep me"));
    QCOMPARE(attnlab::testing::readFile(editor + "/photos/a.jpg"), std::string("jpeg"));
    // A sibling whose name the old writer took for its own staging (<out>.tmp-*) is left alone,
    // and an import over a package import wrote replaces it.
    const std::string out = m_dir.path().toStdString() + "/pkg4";
    fs::create_directories(out + ".tmp-backup");
    attnlab::testing::writeFile(out + ".tmp-backup/thesis.tex", "thesis");
    attnlab::importMarianModel(d, out);
    attnlab::importMarianModel(d, out);
    QCOMPARE(attnlab::testing::readFile(out + ".tmp-backup/thesis.tex"), std::string("thesis"));
    QVERIFY(fs::is_regular_file(out + "/" + attnlab::package_files::kWrittenByAttnlab));
}

void TestMarian::languageCodes() {
    const QString dir = make("codes", {"--seed", "1"});
    attnlab::Translator t(dir.toStdString(), {attnlab::testing::testDevice()});
    auto o = greedy(t);
    o.max_length = 3;
    const auto r = t.translate(">>fra<< Hello world.", o);
    // en-mg's vocabulary has no >>fra<< token: the code is one <unk> (id 1), not characters.
    QCOMPARE(r.source_pieces.front(), std::string("<unk>"));
    QCOMPARE(r.source_ids.front(), 1);
    // Only the source ids are compared: the reference decodes 3 tokens without maps (its model's own cap, 512
    // tokens with every map, took 40 of this test's 41 s and checked nothing more).
    const QStringList ids_only{"--max-length", "4", "--no-attentions"};
    QCOMPARE(r.source_ids,
             reference(dir, {">>fra<< Hello world."}, ids_only)["sentences"][0]["source_ids"].get<std::vector<int>>());
    QVERIFY(!r.warnings.empty() && QString::fromStdString(r.warnings.front()).contains("read as <unk>"));
    // Only a leading code is one token; '>>' and '<<' elsewhere are text (as the reference).
    const std::vector<std::string> texts = {"Use >> and << in C++", "x>>y<<z", ">>fra<<", ">> <<x"};
    const json ref = reference(dir, texts, ids_only);
    for (size_t i = 0; i < texts.size(); ++i)
        QCOMPARE(t.translate(texts[i], o).source_ids, ref["sentences"][i]["source_ids"].get<std::vector<int>>());
}

// A snapshot of the Hugging Face cache (models--ORG--NAME/snapshots/COMMIT) whose tokenizer files and
// card name no languages: they are guessed from the repository's name, not from the commit's folder;
// a name that says none gives the codes of unknown languages.
void TestMarian::hubSnapshotLanguagesComeFromTheRepositoryName() {
    const QString made = make("snapshot", {"--seed", "2"});
    const std::string commit(40, 'a');
    for (const auto& [repo_folder, source, target] :
         {std::tuple<std::string, std::string, std::string>{"models--some-org--opus-mt-de-fr", "de", "fr"},
          {"models--some-org--plainmodel", attnlab::unknown_language::kSource, attnlab::unknown_language::kTarget}}) {
        const fs::path snapshot = fs::path(m_dir.path().toStdString()) / "hub" / repo_folder / "snapshots" / commit;
        fs::create_directories(snapshot);
        for (const auto& f : fs::directory_iterator(made.toStdString()))
            fs::copy(f.path(), snapshot / f.path().filename());
        const attnlab::Translator t(snapshot.string(), {attnlab::testing::testDevice()});
        QCOMPARE(t.info().config.source_lang, source);
        QCOMPARE(t.info().config.target_lang, target);
    }
}

QTEST_GUILESS_MAIN(TestMarian)
#include "tst_marian.moc"
