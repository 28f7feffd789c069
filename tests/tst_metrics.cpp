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
    void sentenceStatsSumToCorpus();
    void pairedBootstrapByHand();
    void bootstrapResamplesAndSignificance();
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

namespace {
const std::vector<std::string> kRefs{"A dog runs in the park .", "Two children play football .",
                                     "A woman reads a book .", "The man drinks coffee ."};
const std::vector<std::string> kHyps{"A dog runs through the park .", "Two kids play soccer .",
                                     "A woman reads a book .", "A man drinks a coffee ."};
}  // namespace

// Corpus BLEU from summed sentence statistics is corpusBleu, and the statistics of a sentence are its
// clipped n-gram counts (by hand for one).
void TestMetrics::sentenceStatsSumToCorpus() {
    const auto stats = attnlab::sentenceBleuStats(kHyps, kRefs);
    attnlab::BleuStats sum;
    for (const auto& s : stats) sum += s;
    QCOMPARE(attnlab::bleuFromStats(sum).score, corpusBleu(kHyps, kRefs).score);
    // "Two kids play soccer ." against "Two children play football .": unigrams Two, play, . of 5;
    // no bigram or longer matches; 5 and 5 words.
    const auto& s = stats[1];
    QCOMPARE(s.correct[0], int64_t(3));
    QCOMPARE(s.total[0], int64_t(5));
    QCOMPARE(s.correct[1], int64_t(0));
    QCOMPARE(s.total[3], int64_t(2));
    QCOMPARE(s.sys_len, int64_t(5));
    QCOMPARE(s.ref_len, int64_t(5));
}

// Two resamples given by hand: each one's corpus BLEU from corpusBleu over the resampled strings,
// the percentiles by numpy's linear rule (2.5 %: 2.5 % of the way from the lower to the higher).
void TestMetrics::pairedBootstrapByHand() {
    const std::vector<std::string> base{"A dog runs in the park .", "Two kids play football .", "A book .",
                                        "The man drinks coffee ."};
    const std::vector<std::vector<size_t>> resamples{{0, 0, 1, 3}, {1, 2, 2, 3}};
    std::vector<double> sys, diff;
    for (const auto& r : resamples) {
        std::vector<std::string> h, b, ref;
        for (size_t i : r) h.push_back(kHyps[i]), b.push_back(base[i]), ref.push_back(kRefs[i]);
        sys.push_back(corpusBleu(h, ref).score);
        diff.push_back(corpusBleu(h, ref).score - corpusBleu(b, ref).score);
    }
    const auto p = attnlab::pairedBootstrap(attnlab::sentenceBleuStats(base, kRefs),
                                            attnlab::sentenceBleuStats(kHyps, kRefs), resamples);
    auto at = [](std::vector<double> v, double q) {
        std::sort(v.begin(), v.end());
        return v[0] + q * (v[1] - v[0]);
    };
    QCOMPARE(p.resamples, 2);
    QVERIFY(std::abs(p.low - at(sys, 0.025)) < 1e-9);
    QVERIFY(std::abs(p.high - at(sys, 0.975)) < 1e-9);
    QVERIFY(std::abs(p.difference_low - at(diff, 0.025)) < 1e-9);
    QVERIFY(std::abs(p.difference_high - at(diff, 0.975)) < 1e-9);
    QVERIFY(p.low < p.high);
    try {
        attnlab::pairedBootstrap(attnlab::sentenceBleuStats(base, kRefs), {}, resamples);
        QFAIL("no exception");
    } catch (const attnlab::InputError& e) {
        QCOMPARE(QString(e.what()), QString("paired bootstrap: 4 baseline sentences but 0 system sentences"));
    }
    try {
        attnlab::pairedBootstrap(attnlab::sentenceBleuStats(base, kRefs), attnlab::sentenceBleuStats(kHyps, kRefs),
                                 {{0, 1, 2, 7}});
        QFAIL("no exception");
    } catch (const attnlab::InputError& e) {
        QCOMPARE(QString(e.what()), QString("paired bootstrap: sentence index out of range"));
    }
}

// Resamples: as many as asked, each as long as the corpus, indices in range, the same for the same
// seed; every sentence drawn about equally often. A system against itself differs by exactly 0; a
// system that outputs nothing is significantly lower; one worse in one sentence of 40 is not.
void TestMetrics::bootstrapResamplesAndSignificance() {
    const auto r = attnlab::bootstrapResamples(40, 1000, 7);
    QCOMPARE(r.size(), size_t(1000));
    QCOMPARE(r[999].size(), size_t(40));
    QCOMPARE(attnlab::bootstrapResamples(40, 1000, 7), r);
    QVERIFY(attnlab::bootstrapResamples(40, 1000, 8) != r);
    std::vector<int> count(40, 0);
    for (const auto& s : r)
        for (size_t i : s) {
            QVERIFY(i < 40);
            ++count[i];
        }
    // 40,000 draws: each index ~1000 times, sd ~31; 1000 +- 200 fails with probability ~1e-9.
    for (int c : count) QVERIFY2(c > 800 && c < 1200, qPrintable(QString::number(c)));

    std::vector<std::string> refs, hyps, empty(40, ""), one_off;
    for (int i = 0; i < 40; ++i) {
        refs.push_back(kRefs[size_t(i) % 4]);
        hyps.push_back(kHyps[size_t(i) % 4]);
    }
    one_off = hyps;
    one_off[4] = "A cat sleeps .";  // worse in one sentence of 40 (was "A dog runs through the park .")
    const auto base = attnlab::sentenceBleuStats(hyps, refs);
    const auto same = attnlab::pairedBootstrap(base, base, r);
    QCOMPARE(same.difference_low, 0.0);
    QCOMPARE(same.difference_high, 0.0);
    QVERIFY(!same.significantlyLower());
    QVERIFY(same.low <= corpusBleu(hyps, refs).score && corpusBleu(hyps, refs).score <= same.high);
    QVERIFY(attnlab::pairedBootstrap(base, attnlab::sentenceBleuStats(empty, refs), r).significantlyLower());
    const auto close = attnlab::pairedBootstrap(base, attnlab::sentenceBleuStats(one_off, refs), r);
    // Every resample without sentence 4 (about 36 % of them) differs by 0, those with it by less.
    QVERIFY(close.difference_low < 0);
    QCOMPARE(close.difference_high, 0.0);
    QVERIFY(!close.significantlyLower());
}

QTEST_APPLESS_MAIN(TestMetrics)
#include "tst_metrics.moc"
