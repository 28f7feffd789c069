// BLEU (sacreBLEU's default: 13a, cased, exp smoothing, 4-grams, brevity penalty) and chrF on
// cases computed by hand.
#include <attnlab/errors.h>
#include <attnlab/metrics.h>

#include <QtTest/QtTest>

#include <cmath>

using attnlab::corpusBleu;

class TestMetrics : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void tokenize13a_data();
    void tokenize13a();
    void identicalIsHundred();
    void brevityPenaltyAndSmoothing();
    void corpusLevelNotAverage();
    void emptyHypothesis();
    void chrfByHand();
    void mismatchedCounts();
};

void TestMetrics::tokenize13a_data() {
    QTest::addColumn<QString>("in");
    QTest::addColumn<QString>("out");
    QTest::newRow("punctuation") << "Hello, world!"
                                 << "Hello , world !";
    QTest::newRow("numbers keep . and ,") << "It costs 3.50 or 1,000."
                                          << "It costs 3.50 or 1,000 .";
    QTest::newRow("dash after digit") << "pages 5-6 and well-known"
                                      << "pages 5 - 6 and well-known";
    QTest::newRow("apostrophe kept") << "Don't stop"
                                     << "Don't stop";
    QTest::newRow("entities") << "&quot;hi&quot; &amp; bye"
                              << "\" hi \" & bye";
    QTest::newRow("brackets and quotes") << "(a) [b] {c} \"d\""
                                         << "( a ) [ b ] { c } \" d \"";
    QTest::newRow("umlauts untouched") << QString::fromUtf8("Männer über Straßen.")
                                       << QString::fromUtf8("Männer über Straßen .");
}

void TestMetrics::tokenize13a() {
    QFETCH(QString, in);
    QFETCH(QString, out);
    QCOMPARE(QString::fromStdString(attnlab::tokenize13a(in.toStdString())), out);
}

void TestMetrics::identicalIsHundred() {
    const auto b = corpusBleu({"The cat sat on the mat."}, {"The cat sat on the mat."});
    QVERIFY(std::abs(b.score - 100.0) < 1e-9);
    QCOMPARE(b.brevity_penalty, 1.0);
    QCOMPARE(b.signature, std::string("nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.0.0"));
}

void TestMetrics::brevityPenaltyAndSmoothing() {
    // hyp "the cat the cat" (4 tokens) vs ref "the cat sat on the mat" (6 tokens):
    // 1-grams 3/4 (the x2 clipped to 2, cat x2 clipped to 1), 2-grams 1/3, 3-grams 0/2 -> 100/(2*2),
    // 4-grams 0/1 -> 100/(4*1); BP = exp(1 - 6/4).
    const auto b = corpusBleu({"the cat the cat"}, {"the cat sat on the mat"});
    const double p[4] = {75.0, 100.0 / 3.0, 25.0, 25.0};
    const double expected =
        std::exp(1.0 - 6.0 / 4.0) * std::exp((std::log(p[0]) + std::log(p[1]) + std::log(p[2]) + std::log(p[3])) / 4);
    QVERIFY2(std::abs(b.score - expected) < 1e-9, qPrintable(QString("%1 vs %2").arg(b.score).arg(expected)));
    QVERIFY(std::abs(b.score - 21.4438) < 1e-3);
    QCOMPARE(b.sys_len, int64_t(4));
    QCOMPARE(b.ref_len, int64_t(6));
    for (int i = 0; i < 4; ++i) QVERIFY(std::abs(b.precisions[i] - p[i]) < 1e-9);
    // Case matters (case:mixed).
    QVERIFY(corpusBleu({"The Cat"}, {"the cat"}).score < 10);
}

void TestMetrics::corpusLevelNotAverage() {
    // Counts are pooled over sentences: sentence 2's missing 4-grams are covered by sentence 1's.
    const auto b = corpusBleu({"a b c d e", "x y"}, {"a b c d e", "x y"});
    QVERIFY(std::abs(b.score - 100.0) < 1e-9);
    const auto c = corpusBleu({"a b c d e", "x z"}, {"a b c d e", "x y"});
    // 1-grams 6/7, 2-grams 4/5, 3-grams 3/3, 4-grams 2/2, lengths equal.
    const double expected = std::exp((std::log(600.0 / 7) + std::log(80.0) + std::log(100.0) + std::log(100.0)) / 4);
    QVERIFY(std::abs(c.score - expected) < 1e-9);
}

void TestMetrics::emptyHypothesis() {
    const auto b = corpusBleu({""}, {"a b c"});
    QCOMPARE(b.score, 0.0);
    QCOMPARE(b.brevity_penalty, 0.0);
}

void TestMetrics::chrfByHand() {
    QVERIFY(std::abs(attnlab::corpusChrf({"ab"}, {"ab"}) - 100.0) < 1e-9);
    // "abc" vs "abd": 1-grams P=R=2/3, 2-grams 1/2, 3-grams 0; 4..6-grams absent (not counted).
    // avg P = avg R = (2/3 + 1/2 + 0)/3, and F_beta with P == R is P.
    const double p = (2.0 / 3 + 0.5 + 0) / 3;
    QVERIFY(std::abs(attnlab::corpusChrf({"abc"}, {"abd"}) - 100 * p) < 1e-9);
    // Whitespace is ignored.
    QVERIFY(std::abs(attnlab::corpusChrf({"a bc"}, {"ab d"}) - 100 * p) < 1e-9);
}

void TestMetrics::mismatchedCounts() {
    try {
        corpusBleu({"a"}, {"a", "b"});
        QFAIL("no exception");
    } catch (const attnlab::InputError& e) {
        QVERIFY2(QString(e.what()).contains("1 hypotheses but 2 references"), e.what());
    }
}

QTEST_APPLESS_MAIN(TestMetrics)
#include "tst_metrics.moc"
