// FastDropout: the distribution of torch::nn::Dropout (keep 1 - p, scale 1 / (1 - p)), a mask
// that depends only on the seed, reproducibility from torch::manual_seed, identity in eval mode.
#include "fixtures.h"
#include "model/dropout.h"

#include <attnlab/errors.h>

#include <ATen/Parallel.h>
#include <QtTest/QtTest>

#include <cmath>

using attnlab::model::FastDropout;

class TestDropout : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void keepsOneMinusPScaled_data();
    void keepsOneMinusPScaled();
    void elementsAreIndependentDraws();
    void maskIsTheSameForAnyThreadCount();
    void reproducibleFromManualSeed();
    void evalModeAndEdgeProbabilities();
    void gradientIsTheMask();
};

void TestDropout::keepsOneMinusPScaled_data() {
    QTest::addColumn<double>("p");
    QTest::newRow("0.1") << 0.1;
    QTest::newRow("0.3") << 0.3;
    QTest::newRow("0.5") << 0.5;
    QTest::newRow("0.9") << 0.9;
}

void TestDropout::keepsOneMinusPScaled() {
    QFETCH(double, p);
    const int64_t n = 1000001;  // odd: the last element comes from half of a 64-bit draw
    auto mask = attnlab::model::dropoutMask(torch::empty({n}), p, 12345);
    const double scale = 1.0 / (1.0 - p);
    auto kept = mask.ne(0);
    // every value is 0 or exactly the scale
    QCOMPARE(mask.eq(0).logical_or(mask.eq(float(scale))).all().item<bool>(), true);
    const double frac = kept.to(torch::kFloat64).mean().item<double>();
    const double sd = std::sqrt(p * (1 - p) / double(n));
    QVERIFY2(std::abs(frac - (1 - p)) < 5 * sd, qPrintable(QString("kept %1, expected %2").arg(frac).arg(1 - p)));
    // the mean of x * mask is the mean of x (inverted dropout)
    QVERIFY(std::abs(mask.to(torch::kFloat64).mean().item<double>() - 1.0) < 5 * sd * scale);
}

void TestDropout::elementsAreIndependentDraws() {
    // Neighbouring elements (the two halves of one 64-bit draw, and consecutive draws) are
    // uncorrelated: P(both kept) ~ (1 - p)^2.
    const double p = 0.5;
    const int64_t n = 1 << 20;
    auto kept = attnlab::model::dropoutMask(torch::empty({n}), p, 7).ne(0).to(torch::kFloat64);
    for (int64_t lag : {1, 2, 3, 64}) {
        const double both = (kept.slice(0, 0, n - lag) * kept.slice(0, lag, n)).mean().item<double>();
        QVERIFY2(std::abs(both - 0.25) < 0.005, qPrintable(QString("lag %1: %2").arg(lag).arg(both)));
    }
    // A different seed gives a different mask.
    auto other = attnlab::model::dropoutMask(torch::empty({n}), p, 8).ne(0).to(torch::kFloat64);
    QVERIFY(std::abs((kept * other).mean().item<double>() - 0.25) < 0.005);
}

void TestDropout::maskIsTheSameForAnyThreadCount() {
    const int threads = at::get_num_threads();
    at::set_num_threads(1);
    auto one = attnlab::model::dropoutMask(torch::empty({3, 777, 129}), 0.1, 99);
    at::set_num_threads(std::max(2, threads));
    auto many = attnlab::model::dropoutMask(torch::empty({3, 777, 129}), 0.1, 99);
    at::set_num_threads(threads);
    QVERIFY(torch::equal(one, many));
}

void TestDropout::reproducibleFromManualSeed() {
    FastDropout d(0.1);
    d->train();
    auto x = torch::ones({64, 33});
    torch::manual_seed(5);
    auto a1 = d(x), a2 = d(x);
    torch::manual_seed(5);
    auto b1 = d(x), b2 = d(x);
    QVERIFY(torch::equal(a1, b1));
    QVERIFY(torch::equal(a2, b2));
    QVERIFY(!torch::equal(a1, a2));  // successive calls draw new masks
}

void TestDropout::evalModeAndEdgeProbabilities() {
    auto x = torch::randn({10, 10});
    FastDropout d(0.3);
    d->eval();
    QVERIFY(torch::equal(d(x), x));
    FastDropout none(0.0);
    none->train();
    QVERIFY(torch::equal(none(x), x));
    FastDropout all(1.0);
    all->train();
    QCOMPARE(all(x).abs().sum().item<double>(), 0.0);
    bool threw = false;
    try {
        FastDropout bad(1.5);
    } catch (const attnlab::ConfigError& e) {
        threw = QString(e.what()).contains("dropout must be in [0, 1]");
    }
    QVERIFY(threw);
}

void TestDropout::gradientIsTheMask() {
    FastDropout d(0.25);
    d->train();
    auto x = torch::randn({40, 50}).requires_grad_(true);
    auto y = d(x);
    y.sum().backward();
    // where kept, y = x / 0.75 and the gradient is 1 / 0.75; where dropped both are 0
    auto kept = y.ne(0);
    QVERIFY(torch::allclose(x.grad(), kept.to(torch::kFloat32) / 0.75f));
    QVERIFY(torch::allclose(y, x.detach() * kept.to(torch::kFloat32) / 0.75f));
}

QTEST_APPLESS_MAIN(TestDropout)
#include "tst_dropout.moc"
