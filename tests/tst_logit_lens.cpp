// The logit lens on the decoder (core/src/contributions/logit_lens.cpp, docs/contributions.md): the last layer's
// row is the translation's own distribution (each piece's log-probability as the search computed it, within 1e-5),
// and every layer's row matches the independent float64 reference scripts/reference_value_zeroing.py on small
// random models in each family's layer structure (support/family_packages.h: without a final layer norm, with
// one, with an embedding norm, with relative positions); what is refused, by message; the CLI's "logit_lens" in the
// attention JSON. The reference cross-check is skipped, with a message, where python3-torch is missing (failed
// under CI=true).
#include "family_packages.h"
#include "fixtures.h"
#include "python_probe.h"

#include <attnlab/contributions.h>
#include <attnlab/errors.h>
#include <attnlab/translator.h>

#include <QtTest/QtTest>

#include <nlohmann/json.hpp>

#include <cmath>
#include <map>
#include <memory>

using nlohmann::json;

namespace {
const char* const kSource = "Der kleine Hund läuft schnell nach Hause";
const char* const kTarget = "The small dog runs home";

// A log-probability the model computed in float32 against the float64 reference: 1e-5 covers float32's rounding
// through two layers and a softmax over 400 pieces.
constexpr double kLogTolerance = 1e-5;

attnlab::DecodingOptions shortTranslation() {
    attnlab::DecodingOptions o;
    o.beam_size = 1;
    o.max_length = 8;  // a random model seldom stops by itself
    return o;
}
}  // namespace

class TestLogitLens : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void lastLayerIsTheTranslation_data();
    void lastLayerIsTheTranslation();
    void matchesReference();
    void refusedByMessage();
    void cliWritesTheLens();

private:
    void checkFamily(const std::string& family);

    QTemporaryDir m_dir;
    QString m_python;
    std::map<std::string, std::string> m_packages;
    std::map<std::string, std::unique_ptr<attnlab::Translator>> m_translators;
    std::map<std::string, attnlab::TranslationResult> m_forced;
    json m_reference;  // family -> the reference's lens
};

void TestLogitLens::initTestCase() {
    QVERIFY(m_dir.isValid());
    m_python = qEnvironmentVariable("ATTNLAB_PYTHON", "/usr/bin/python3");
    const std::string dir = m_dir.path().toStdString();
    const std::string tok = attnlab::testing::trainTokenizer(dir, 400);
    json cases = json::array();
    for (const auto& family : attnlab::testing::layerFamilies()) {
        m_packages[family] = attnlab::testing::writeLayerFamilyPackage(dir + "/" + family, tok, family, 29);
        m_translators[family] = std::make_unique<attnlab::Translator>(
            m_packages[family], attnlab::TranslatorOptions{attnlab::testing::testDevice()});
        const auto r = m_forced[family] = m_translators[family]->teacherForce({kSource}, {kTarget}).front();
        std::vector<int> decoder_input{int(m_translators[family]->info().config.bos_idx)};
        decoder_input.insert(decoder_input.end(), r.best.ids.begin(), r.best.ids.end() - 1);
        cases.push_back({{"model", m_packages[family]},
                         {"source_ids", r.source_ids},
                         {"decoder_input_ids", decoder_input},
                         {"target_ids", r.best.ids},
                         {"top", 5}});
    }
    if (!attnlab::testing::pythonProblem(m_python, {"torch", "numpy"}).isEmpty()) return;
    const QString in = m_dir.filePath("cases.json"), out = m_dir.filePath("reference.json");
    attnlab::testing::writeFile(in.toStdString(), json{{"cases", cases}}.dump());
    attnlab::testing::runScript(m_python, "reference_value_zeroing.py", {"--input", in, "--output", out});
    const json all = json::parse(attnlab::testing::readFile(out.toStdString()))["cases"];
    for (size_t i = 0; i < all.size(); ++i) m_reference[attnlab::testing::layerFamilies()[i]] = all[i]["lens"];
}

void TestLogitLens::lastLayerIsTheTranslation_data() {
    QTest::addColumn<QString>("family");
    for (const auto& family : attnlab::testing::layerFamilies()) QTest::newRow(family.c_str()) << family.c_str();
}

// The search's log-probabilities come from cached steps (keys and values kept, one query a step), the lens from
// one pass over the whole prefix: the same arithmetic in another order, within 1e-5.
void TestLogitLens::lastLayerIsTheTranslation() {
    QFETCH(QString, family);
    const auto& t = *m_translators.at(family.toStdString());
    const auto r = t.translate(kSource, shortTranslation());
    const auto lens = t.logitLens(r, 3);
    QCOMPARE(lens.layers.size(), size_t(2));
    QCOMPARE(lens.pieces, r.best.pieces);
    for (const auto& layer : lens.layers) QCOMPARE(layer.size(), r.best.ids.size());
    for (size_t i = 0; i < r.best.ids.size(); ++i) {
        const auto& cell = lens.layers.back()[i];
        QVERIFY2(std::abs(std::log(cell.chosen_probability) - r.best.token_log_probs[i]) < kLogTolerance,
                 qPrintable(QString("position %1: %2 against %3")
                                .arg(i)
                                .arg(std::log(cell.chosen_probability))
                                .arg(r.best.token_log_probs[i])));
        QCOMPARE(cell.top.size(), size_t(3));
        // Greedy search (beam 1 here) chose the most probable piece at every step.
        QCOMPARE(cell.chosen_rank, 0);
        QCOMPARE(cell.top.front().id, r.best.ids[i]);
        QCOMPARE(QString::fromStdString(cell.top.front().piece), QString::fromStdString(r.best.pieces[i]));
    }
}

// Every family in one function: Python is probed once.
void TestLogitLens::matchesReference() {
    ATTNLAB_REQUIRE_PYTHON(m_python, QStringList({"torch", "numpy"}), "the logit lens against the float64 reference");
    for (const auto& family : attnlab::testing::layerFamilies()) {
        checkFamily(family);
        if (QTest::currentTestFailed()) return;
    }
}

void TestLogitLens::checkFamily(const std::string& family) {
    const auto lens = m_translators.at(family)->logitLens(m_forced.at(family), 5);
    const json& ref = m_reference.at(family);
    QCOMPARE(lens.layers.size(), ref.size());
    for (size_t l = 0; l < ref.size(); ++l)
        for (size_t t = 0; t < ref[l].size(); ++t) {
            const auto& cell = lens.layers[l][t];
            const json& theirs = ref[l][t];
            const QString where = QString("%1: layer %2, position %3").arg(family.c_str()).arg(l).arg(t);
            QVERIFY2(
                std::abs(std::log(cell.chosen_probability) - theirs["chosen_log_prob"].get<double>()) < kLogTolerance,
                qPrintable(where));
            QVERIFY2(cell.chosen_rank >= theirs["chosen_rank_range"][0].get<int>() &&
                         cell.chosen_rank <= theirs["chosen_rank_range"][1].get<int>(),
                     qPrintable(where + QString(": rank %1").arg(cell.chosen_rank)));
            const json& logps = theirs["top_log_probs"];
            for (size_t k = 0; k < cell.top.size(); ++k) {
                QVERIFY2(std::abs(std::log(cell.top[k].probability) - logps[k].get<double>()) < kLogTolerance,
                         qPrintable(where));
                // The same piece unless a neighbour is as probable within the tolerance (a tie either may break).
                const bool tie =
                    (k > 0 && logps[k - 1].get<double>() - logps[k].get<double>() < kLogTolerance) ||
                    (k + 1 < logps.size() && logps[k].get<double>() - logps[k + 1].get<double>() < kLogTolerance);
                if (!tie) QCOMPARE(cell.top[k].id, theirs["top_ids"][k].get<int>());
            }
        }
}

void TestLogitLens::refusedByMessage() {
    const auto& t = *m_translators.at("marian");
    const auto& r = m_forced.at("marian");
    using attnlab::testing::messageOf;
    QCOMPARE(messageOf<attnlab::InputError>([&] { t.logitLens(r, 0); }),
             QString("logit lens: top 0 is out of range: 1..400"));
    QCOMPARE(messageOf<attnlab::InputError>([&] { t.logitLens(r, 401); }),
             QString("logit lens: top 401 is out of range: 1..400"));
    QCOMPARE(messageOf<attnlab::InputError>([&] { t.logitLens(attnlab::TranslationResult{}, 5); }),
             QString("logit lens: the translation is empty"));
}

// attnlab-cli translate --logit-lens --attention OUT.json: each sentence's "logit_lens", one row of cells per
// decoder layer, the last the translation's own probabilities (docs/attention-json.md).
void TestLogitLens::cliWritesTheLens() {
    const QString out = m_dir.filePath("lens.json");
    const auto run = attnlab::testing::runCli(
        {"translate", "--model", QString::fromStdString(m_packages.at("mbart")), "--device",
         attnlab::testing::testDeviceArg(), "--beam", "1", "--max-len", "8", "--logit-lens", "--attention", out},
        QByteArray(kSource) + "\n");
    QVERIFY2(run.code == 0, qPrintable(run.err));
    const json doc = json::parse(attnlab::testing::readFile(out.toStdString()));
    const json& sentence = doc["sentences"][0];
    const json& lens = sentence["logit_lens"];
    QCOMPARE(lens["layers"].size(), size_t(2));
    const auto r = m_translators.at("mbart")->translate(kSource, shortTranslation());
    const json& last = lens["layers"][1];
    QCOMPARE(last.size(), r.best.ids.size());
    for (size_t i = 0; i < last.size(); ++i) {
        // The file's numbers are rounded to 6 decimals (docs/attention-json.md).
        QVERIFY(std::abs(last[i]["chosen_probability"].get<double>() - std::exp(r.best.token_log_probs[i])) < 2e-6);
        QCOMPARE(last[i]["top"].size(), size_t(5));
        QCOMPARE(last[i]["top"][0]["id"].get<int>(), r.best.ids[i]);
        QCOMPARE(last[i]["top"][0]["piece"].get<std::string>(), r.best.pieces[i]);
    }
}

QTEST_GUILESS_MAIN(TestLogitLens)
#include "tst_logit_lens.moc"
