// Translator end to end on a small random model: the result's pieces, attention maps and
// per-step candidates against independent computations; input errors; batches; progress.
#include "decoding/translator_impl.h"
#include "fixtures.h"

#include <attnlab/errors.h>
#include <attnlab/translator.h>

#include <QtTest/QtTest>

#include <cmath>

using attnlab::DecodingOptions;
using attnlab::Translator;

class TestTranslator : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void resultShapesAndRows();
    void stepsMatchScore();
    void greedyEqualsBeamOne();
    void batchKeepsOrderAndMatchesSingle();
    void inputErrors();
    void unknownCharactersWarn();
    void progressAndCancel();
    void deviceAndOptions();
    void positionalTable();

private:
    QTemporaryDir m_dir;
    std::unique_ptr<Translator> m_t;
};

void TestTranslator::initTestCase() {
    const std::string tok = attnlab::testing::trainTokenizer(m_dir.path().toStdString(), 400);
    auto cfg = attnlab::testing::smallConfig(400);
    cfg.n_position = 40;
    attnlab::testing::writeRandomPackage(m_dir.path().toStdString() + "/pkg", tok, cfg);
    m_t = std::make_unique<Translator>(m_dir.path().toStdString() + "/pkg");
    QCOMPARE(m_t->info().device, std::string("cpu"));
    QVERIFY(m_t->info().load_seconds > 0);
}

void TestTranslator::resultShapesAndRows() {
    DecodingOptions o;
    o.max_length = 9;
    auto r = m_t->translate("Ein Mädchen spielt mit einem Ball.", o);
    const size_t S = r.source_pieces.size(), T = r.best.pieces.size();
    QCOMPARE(r.source_pieces.back(), std::string("</s>"));
    QCOMPARE(r.source_ids.size(), S);
    QCOMPARE(r.decoder_input_pieces.size(), T);
    QCOMPARE(r.decoder_input_pieces.front(), std::string("<s>"));
    QVERIFY(T >= 1 && T <= 9);
    for (const auto* maps : {&r.encoder_self, &r.decoder_self, &r.cross}) {
        QCOMPARE(maps->size(), size_t(2));          // layers
        QCOMPARE(maps->at(0).size(), size_t(4));    // heads
    }
    for (int l = 0; l < 2; ++l)
        for (int h = 0; h < 4; ++h) {
            const auto& e = r.encoder_self[l][h];
            const auto& d = r.decoder_self[l][h];
            const auto& c = r.cross[l][h];
            QCOMPARE(e.size(), S);
            QCOMPARE(e[0].size(), S);
            QCOMPARE(d.size(), T);
            QCOMPARE(d[0].size(), T);
            QCOMPARE(c.size(), T);
            QCOMPARE(c[0].size(), S);
            for (const auto* m : {&e, &d, &c})
                for (const auto& row : *m) {
                    double sum = 0;
                    for (float v : row) sum += v;
                    QVERIFY(std::abs(sum - 1.0) < 1e-5);
                }
            for (size_t i = 0; i < T; ++i)
                for (size_t j = i + 1; j < T; ++j) QCOMPARE(d[i][j], 0.0f);
        }
    // The maps equal the model's own return_attns on the same input.
    auto& impl = m_t->impl();
    torch::NoGradGuard g;
    std::vector<int64_t> src(r.source_ids.begin(), r.source_ids.end()), trg{2};
    for (size_t i = 0; i + 1 < T; ++i) trg.push_back(r.best.ids[i]);
    attnlab::model::Attentions a;
    impl.model->forwardFull(torch::tensor(src).unsqueeze(0), torch::tensor(trg).unsqueeze(0), &a);
    QCOMPARE(r.cross[1][3][T - 1][S - 1], a.cross[1][0][3][T - 1][S - 1].item<float>());
    QCOMPARE(r.encoder_self[0][2][1][0], a.encoder_self[0][0][2][1][0].item<float>());
}

void TestTranslator::stepsMatchScore() {
    DecodingOptions o;
    o.beam_size = 4;
    o.max_length = 10;
    o.top_k_candidates = 5;
    auto r = m_t->translate("Zwei Männer arbeiten auf der Baustelle.", o);
    QCOMPARE(r.steps.size(), r.best.ids.size());
    double sum = 0;
    for (size_t i = 0; i < r.steps.size(); ++i) {
        const auto& s = r.steps[i];
        QCOMPARE(s.chosen_id, r.best.ids[i]);
        QCOMPARE(s.candidates.size(), size_t(5));
        for (size_t k = 1; k < s.candidates.size(); ++k) QVERIFY(s.candidates[k - 1].probability >= s.candidates[k].probability);
        QVERIFY(s.candidates[0].probability >= s.chosen_probability);
        sum += std::log(double(s.chosen_probability));
    }
    // The search's score is the sum of the chosen tokens' log-probabilities.
    QVERIFY2(std::abs(sum - r.best.score) < 1e-3, qPrintable(QString("%1 vs %2").arg(sum).arg(r.best.score)));
    QCOMPARE(r.nbest.size(), size_t(1));
    QCOMPARE(r.best.text, r.nbest[0].text);
}

void TestTranslator::greedyEqualsBeamOne() {
    DecodingOptions greedy;
    greedy.beam_size = 1;
    greedy.max_length = 12;
    DecodingOptions beam1 = greedy;
    beam1.nbest = 1;
    for (const char* s : {"Der Hund läuft.", "Eine Frau hält ihre Hände vor dem Gebäude."}) {
        auto a = m_t->translate(s, greedy);
        auto b = m_t->impl().run({s}, beam1, {}, attnlab::decoding::StepperKind::Full).front();
        QCOMPARE(a.best.ids, b.best.ids);
    }
}

void TestTranslator::batchKeepsOrderAndMatchesSingle() {
    const std::vector<std::string> s = {"Ein Mann.", "Zwei mädchen spielt mit einem großen ball im garten.", "Die Katze schläft."};
    DecodingOptions o;
    o.beam_size = 3;
    o.max_length = 10;
    o.max_batch_size = 2;
    auto batch = m_t->translateBatch(s, o);
    QCOMPARE(batch.size(), s.size());
    for (size_t i = 0; i < s.size(); ++i) {
        auto single = m_t->translate(s[i], o);
        QCOMPARE(batch[i].source_text, s[i]);
        QCOMPARE(batch[i].best.ids, single.best.ids);
        QVERIFY(std::abs(batch[i].best.score - single.best.score) < 1e-4);
    }
}

void TestTranslator::inputErrors() {
    auto expect = [&](const std::string& s, const QString& needle) {
        try {
            m_t->translate(s);
            QFAIL("no exception");
        } catch (const attnlab::InputError& e) {
            QVERIFY2(QString(e.what()).contains(needle), e.what());
        }
        QVERIFY(QString::fromStdString(m_t->checkInput(s)).contains(needle));
    };
    expect("", "the sentence is empty");
    expect("   \t ", "the sentence is empty");
    std::string longer;
    for (int i = 0; i < 60; ++i) longer += "Hund ";
    expect(longer, "this model accepts at most 40 (n_position)");
    expect(std::string(100000, 'a'), "at most 65536 are accepted");
    try {
        m_t->translateBatch({"Ein Hund.", ""});
        QFAIL("no exception");
    } catch (const attnlab::InputError& e) {
        QVERIFY2(QString(e.what()).startsWith("sentence 2: the sentence is empty"), e.what());
    }
    QVERIFY(m_t->checkInput("Ein Hund.").empty());
}

void TestTranslator::unknownCharactersWarn() {
    DecodingOptions o;
    o.max_length = 5;
    auto r = m_t->translate("Der Hund 🐕 bellt.", o);
    QCOMPARE(r.warnings.size(), size_t(1));
    QVERIFY2(QString::fromStdString(r.warnings[0]).contains(QString::fromUtf8("not in the vocabulary: 🐕")), r.warnings[0].c_str());
    QVERIFY(m_t->translate("Der Hund bellt.", o).warnings.empty());
}

void TestTranslator::progressAndCancel() {
    DecodingOptions o;
    o.max_length = 6;
    o.max_length_ratio = 0;
    std::vector<attnlab::StepProgress> seen;
    m_t->translate("Ein Hund.", o, [&](const attnlab::StepProgress& p) -> bool {
        seen.push_back(p);
        return true;
    });
    QVERIFY(seen.size() >= 1 && seen.size() <= 6);
    for (size_t i = 0; i < seen.size(); ++i) {
        QCOMPARE(seen[i].step, int(i));
        QCOMPARE(seen[i].max_steps, 6);
        QCOMPARE(seen[i].sentences_total, 1);
    }
    QVERIFY_THROWS_EXCEPTION(attnlab::CancelledError,
                             m_t->translate("Ein Hund.", o, [](const attnlab::StepProgress&) { return false; }));
}

void TestTranslator::deviceAndOptions() {
    if (!attnlab::cudaAvailable()) {
        try {
            Translator t(m_dir.path().toStdString() + "/pkg", {"cuda"});
            QFAIL("no exception");
        } catch (const attnlab::DeviceError& e) {
            QVERIFY2(QString(e.what()).contains("sees no CUDA device"), e.what());
        }
    }
    QVERIFY_THROWS_EXCEPTION(attnlab::ConfigError, Translator(m_dir.path().toStdString() + "/pkg", {"tpu"}));
    DecodingOptions bad;
    bad.nbest = 7;
    bad.beam_size = 5;
    try {
        m_t->translate("Ein Hund.", bad);
        QFAIL("no exception");
    } catch (const attnlab::ConfigError& e) {
        QVERIFY2(QString(e.what()).contains("nbest = 7 is out of range [1, 5]"), e.what());
    }
}

void TestTranslator::positionalTable() {
    auto t = m_t->positionalTable();
    QCOMPARE(t.size(), size_t(40));
    QCOMPARE(t[0].size(), size_t(32));
    QVERIFY(std::abs(t[17][6] - std::sin(17 / std::pow(10000.0, 6.0 / 32))) < 1e-6);
}

QTEST_APPLESS_MAIN(TestTranslator)
#include "tst_translator.moc"
