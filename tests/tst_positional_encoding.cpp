// The sinusoid table against the paper's formula, computed independently with std::sin/std::cos.
#include "model/positional_encoding.h"

#include <attnlab/errors.h>
#include <attnlab/positional.h>

#include <QtTest/QtTest>

#include <cmath>

class TestPositionalEncoding : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void tableMatchesFormula_data();
    void tableMatchesFormula();
    void bufferIsPosTableAndAddsRows();
    void publicTableEqualsModelBuffer();
    void rejectsOversizedTable();
    void halfLayoutMatchesFormula();
    void offsetShiftsPositions();
    void fairseqLayoutMatchesFormula();
};

void TestPositionalEncoding::tableMatchesFormula_data() {
    QTest::addColumn<int>("pos");
    QTest::addColumn<int>("dim");
    QTest::addColumn<int>("d_hid");
    for (int d : {16, 256, 512}) {
        for (auto [p, i] : std::vector<std::pair<int, int>>{{0, 0},
                                                            {0, 1},
                                                            {1, 0},
                                                            {1, 1},
                                                            {7, 4},
                                                            {13, 5},
                                                            {199, 0},
                                                            {199, d - 1},
                                                            {50, d / 2},
                                                            {123, d / 2 + 1}}) {
            QTest::addRow("d%d_pos%d_dim%d", d, p, i) << p << i << d;
        }
    }
}

void TestPositionalEncoding::tableMatchesFormula() {
    QFETCH(int, pos);
    QFETCH(int, dim);
    QFETCH(int, d_hid);
    const auto table = attnlab::model::sinusoidTable(200, d_hid);
    QCOMPARE(table.size(0), 200);
    QCOMPARE(table.size(1), d_hid);
    const int i2 = dim - dim % 2;  // "2i" of the paper
    const double angle = pos / std::pow(10000.0, double(i2) / d_hid);
    const double expected = (dim % 2 == 0) ? std::sin(angle) : std::cos(angle);
    QVERIFY2(
        std::abs(table[pos][dim].item<float>() - expected) < 1e-6,
        qPrintable(
            QString("PE(%1,%2) = %3, formula %4").arg(pos).arg(dim).arg(table[pos][dim].item<float>()).arg(expected)));
}

void TestPositionalEncoding::bufferIsPosTableAndAddsRows() {
    attnlab::model::PositionalEncoding pe(8, 20);
    auto buffers = pe->named_buffers();
    QVERIFY(buffers.contains("pos_table"));
    QCOMPARE(buffers["pos_table"].sizes().vec(), (std::vector<int64_t>{1, 20, 8}));
    QCOMPARE(pe->named_parameters().size(), size_t(0));  // not a parameter
    auto x = torch::zeros({2, 5, 8});
    auto y = pe(x);
    QVERIFY(torch::equal(y[1], attnlab::model::sinusoidTable(20, 8).slice(0, 0, 5)));
    auto z = pe->forwardAt(torch::zeros({1, 1, 8}), 6);
    QVERIFY(torch::equal(z[0][0], attnlab::model::sinusoidTable(20, 8)[6]));
}

void TestPositionalEncoding::publicTableEqualsModelBuffer() {
    const auto t = attnlab::sinusoidTable(30, 10);
    QCOMPARE(int(t.size()), 30);
    QCOMPARE(int(t[0].size()), 10);
    const double angle = 29 / std::pow(10000.0, 8.0 / 10);
    QVERIFY(std::abs(t[29][9] - std::cos(angle)) < 1e-6);
    QVERIFY(std::abs(t[29][8] - std::sin(angle)) < 1e-6);
}

void TestPositionalEncoding::rejectsOversizedTable() {
    try {
        attnlab::sinusoidTable(1 << 20, 1 << 10);
        QFAIL("no exception");
    } catch (const attnlab::ConfigError& e) {
        QVERIFY(QString(e.what()).contains("too large"));
    }
}

// Marian's layout (MarianSinusoidalPositionalEmbedding): column j < d/2 is sin(pos / 10000^(2j/d)),
// column d/2 + j is cos of the same angle; an odd width gives the sines one column more.
void TestPositionalEncoding::halfLayoutMatchesFormula() {
    for (int d : {16, 15}) {
        const auto t = attnlab::model::halfSinusoidTable(40, d);
        const int sines = (d + 1) / 2;
        for (int pos : {0, 1, 7, 39})
            for (int col = 0; col < d; ++col) {
                const int j = col < sines ? col : col - sines;  // the pair index
                const double angle = pos / std::pow(10000.0, 2.0 * j / d);
                const double expected = col < sines ? std::sin(angle) : std::cos(angle);
                QVERIFY2(std::abs(t[pos][col].item<float>() - expected) < 1e-6,
                         qPrintable(QString("d %1 pos %2 col %3").arg(d).arg(pos).arg(col)));
            }
    }
}

// pos_offset: the table gains `offset` rows and token i adds row i + offset.
void TestPositionalEncoding::offsetShiftsPositions() {
    attnlab::model::PositionalEncoding pe(8, 20, attnlab::model::PositionLayout::Interleaved, /*offset=*/2);
    QCOMPARE(pe->pos_table.sizes().vec(), (std::vector<int64_t>{1, 22, 8}));
    const auto y = pe(torch::zeros({1, 3, 8}));
    QVERIFY(torch::equal(y[0], attnlab::model::sinusoidTable(22, 8).slice(0, 2, 5)));
    const auto z = pe->forwardAt(torch::zeros({1, 1, 8}), 4);
    QVERIFY(torch::equal(z[0][0], attnlab::model::sinusoidTable(22, 8)[6]));
}

// fairseq's layout (M2M100, NLLB: M2M100SinusoidalPositionalEmbedding.get_embedding): column j <
// d/2 is sin(pos * exp(-j ln(10000) / (d/2 - 1))), column d/2 + j the cosine of the same angle, a
// zero column when d is odd. Checked against the formula in double precision: the table is made in
// float32 as transformers makes it, so a row differs from the exact values by float32 rounding of
// the angle (pos * 1 ulp), under 2e-5 for positions below 200.
void TestPositionalEncoding::fairseqLayoutMatchesFormula() {
    for (int d : {16, 15}) {
        const auto t = attnlab::model::fairseqSinusoidTable(200, d);
        QCOMPARE(t.size(1), int64_t(d));
        const int half = d / 2;
        for (int pos : {0, 1, 2, 7, 199})
            for (int col = 0; col < d; ++col) {
                if (col >= 2 * half) {
                    QCOMPARE(t[pos][col].item<float>(), 0.0f);  // the odd width's zero column
                    continue;
                }
                const int j = col < half ? col : col - half;
                const double angle = pos * std::exp(-j * std::log(10000.0) / (half - 1));
                const double expected = col < half ? std::sin(angle) : std::cos(angle);
                QVERIFY2(std::abs(t[pos][col].item<float>() - expected) < 2e-5,
                         qPrintable(QString("d %1 pos %2 col %3: %4 vs %5")
                                        .arg(d)
                                        .arg(pos)
                                        .arg(col)
                                        .arg(t[pos][col].item<float>())
                                        .arg(expected)));
            }
    }
    // Not Marian's: that timescale divides by d/2, this one by d/2 - 1.
    QVERIFY(!torch::allclose(attnlab::model::fairseqSinusoidTable(20, 16), attnlab::model::halfSinusoidTable(20, 16)));
}

QTEST_APPLESS_MAIN(TestPositionalEncoding)
#include "tst_positional_encoding.moc"
