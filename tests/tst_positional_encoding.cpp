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

QTEST_APPLESS_MAIN(TestPositionalEncoding)
#include "tst_positional_encoding.moc"
