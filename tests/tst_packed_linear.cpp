// Weights packed once for inference (model/packed_linear.h, issue 25): the packed products equal
// at::linear's up to float rounding, follow every change of the weight, stay out of training and of
// autograd, and one model may be used from several threads at once.
#include "fixtures.h"
#include "model/packed_linear.h"
#include "model/transformer.h"

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <QtTest/QtTest>

#include <thread>

using attnlab::model::PackedLinear;
using attnlab::model::WeightPack;

namespace {
// The packed kernel sums the products in another order than OpenBLAS, and the order depends on the
// machine's vector width (AVX-512 or AVX2 kernels): float32 sums of 256-1024 terms of size ~1 differ
// by ~1e-5 between orders. 1e-3 (relative to the largest output) leaves room on every machine while
// still catching a wrong product, transpose or bias (errors of order 1).
constexpr double kTolerance = 1e-3;

double relativeDifference(const torch::Tensor& a, const torch::Tensor& b) {
    const auto a64 = a.to(torch::kFloat64), b64 = b.to(torch::kFloat64);
    return ((a64 - b64).abs().max() / b64.abs().max().clamp_min(1e-12)).item<double>();
}

// x·Wᵀ + b in float64: an independent computation of what the layer must give.
torch::Tensor reference(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b) {
    auto y = torch::matmul(x.to(torch::kFloat64), w.to(torch::kFloat64).t());
    return b.defined() ? y + b.to(torch::kFloat64) : y;
}
}  // namespace

class TestPackedLinear : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() {
        if (!WeightPack::available())
            QSKIP("this build has no XNNPACK (scripts/install_packages.sh installs libxnnpack-dev): at::linear only");
    }
    void init() { at::set_num_threads(1); }
    void equalsTheProduct_data();
    void equalsTheProduct();
    void followsChangesOfTheWeight();
    void trainingAndAutogradUseAtLinear();
    void largeWorkOnSeveralThreadsUsesAtLinear();
    void oneModelFromSeveralThreads();
    void decodingIsTheSame();
};

void TestPackedLinear::equalsTheProduct_data() {
    QTest::addColumn<int>("in");
    QTest::addColumn<int>("out");
    QTest::addColumn<QList<int>>("leading");
    QTest::addColumn<bool>("bias");
    QTest::newRow("one beam row") << 256 << 1024 << QList<int>{1} << true;
    QTest::newRow("five beams, no bias") << 256 << 256 << QList<int>{5} << false;
    QTest::newRow("[2,7] rows, ffn down") << 1024 << 256 << QList<int>{2, 7} << true;
    QTest::newRow("odd sizes") << 37 << 53 << QList<int>{3, 1, 4} << true;
    QTest::newRow("vocabulary projection") << 64 << 8000 << QList<int>{5, 1} << false;
}

void TestPackedLinear::equalsTheProduct() {
    QFETCH(int, in);
    QFETCH(int, out);
    QFETCH(QList<int>, leading);
    QFETCH(bool, bias);
    torch::manual_seed(3);
    PackedLinear layer(torch::nn::LinearOptions(in, out).bias(bias));
    layer->eval();
    layer->setPacked(true);
    std::vector<int64_t> shape(leading.begin(), leading.end());
    shape.push_back(in);
    const auto x = torch::randn(shape);
    torch::NoGradGuard no_grad;
    QVERIFY2(WeightPack::applies(x, layer->weight),
             "packed weights are not available (scripts/install_packages.sh installs libxnnpack-dev)");
    const auto y = layer(x);
    std::vector<int64_t> expected_shape(shape.begin(), shape.end() - 1);
    expected_shape.push_back(out);
    QCOMPARE(y.sizes().vec(), expected_shape);
    const double d = relativeDifference(y, reference(x, layer->weight, bias ? layer->bias : torch::Tensor()));
    QVERIFY2(d < kTolerance, qPrintable(QString::number(d)));
    QVERIFY(layer->pack().holdsPack());  // the product came from the packed copy, not at::linear
}

void TestPackedLinear::followsChangesOfTheWeight() {
    torch::manual_seed(4);
    PackedLinear layer(torch::nn::LinearOptions(32, 16));
    layer->eval();
    layer->setPacked(true);
    torch::NoGradGuard no_grad;
    const auto x = torch::randn({4, 32});
    layer(x);                  // packed now
    layer->weight.mul_(-2.0);  // in place: the version changes
    QVERIFY(relativeDifference(layer(x), reference(x, layer->weight, layer->bias)) < kTolerance);
    layer->weight.set_data(torch::randn({16, 32}));  // new storage
    layer->bias.copy_(torch::randn({16}));           // the bias alone
    QVERIFY(relativeDifference(layer(x), reference(x, layer->weight, layer->bias)) < kTolerance);
    layer->setPacked(false);  // at::linear again, bit for bit, and the packed copy freed
    QVERIFY(!layer->pack().holdsPack());
    QVERIFY(torch::equal(layer(x), torch::nn::functional::linear(x, layer->weight, layer->bias)));
}

void TestPackedLinear::trainingAndAutogradUseAtLinear() {
    torch::manual_seed(5);
    PackedLinear layer(torch::nn::LinearOptions(256, 64));
    layer->setPacked(true);
    const auto x = torch::randn({5, 256});
    // Training mode: at::linear exactly, and gradients flow.
    layer->train();
    auto y = layer(x);
    QVERIFY(torch::equal(y, torch::nn::functional::linear(x, layer->weight, layer->bias)));
    y.sum().backward();
    QVERIFY(layer->weight.grad().defined());
    // Evaluation with autograd on (no NoGradGuard): at::linear as well, with a graph.
    layer->eval();
    y = layer(x);
    QVERIFY(y.requires_grad());
    QVERIFY(torch::equal(y, torch::nn::functional::linear(x, layer->weight, layer->bias)));
    QVERIFY(!WeightPack::applies(x, layer->weight));
    QVERIFY(!layer->pack().holdsPack());
    // A bias that does not fit the weight is never handed to XNNPACK.
    torch::NoGradGuard no_grad;
    QVERIFY(WeightPack::applies(x, layer->weight, torch::randn({64})));
    QVERIFY(!WeightPack::applies(x, layer->weight, torch::randn({63})));
    QVERIFY(!WeightPack::applies(x, layer->weight, torch::randn({64}, torch::kFloat64)));
    // A weight made under InferenceMode has no version to follow: at::linear. An input made there
    // (what the decoding engine hands over) is packed against an ordinary weight.
    c10::InferenceMode inference;
    const auto xi = torch::randn({5, 256}), wi = torch::randn({64, 256});
    QVERIFY(!WeightPack::applies(xi, wi));
    QVERIFY(WeightPack::applies(xi, layer->weight, layer->bias));
    const auto yi = layer(xi);
    QVERIFY(layer->pack().holdsPack());
    QVERIFY(relativeDifference(yi, torch::nn::functional::linear(xi, layer->weight, layer->bias)) < kTolerance);
}

void TestPackedLinear::largeWorkOnSeveralThreadsUsesAtLinear() {
    torch::NoGradGuard no_grad;
    const auto w = torch::randn({64, 256});
    const auto few = torch::randn({WeightPack::kMaxRowsOnOneThread, 256});
    const auto many = torch::randn({WeightPack::kMaxRowsOnOneThread + 1, 256});
    QVERIFY(WeightPack::applies(few, w) && WeightPack::applies(many, w));
    at::set_num_threads(2);
    QVERIFY(WeightPack::applies(few, w));
    QVERIFY(!WeightPack::applies(many, w));
    QVERIFY(!WeightPack::applies(few.to(torch::kFloat64), w.to(torch::kFloat64)));
}

void TestPackedLinear::oneModelFromSeveralThreads() {
    // One packed operator is set up anew for each call: two threads on one layer must not mix their
    // inputs and outputs.
    torch::manual_seed(6);
    PackedLinear layer(torch::nn::LinearOptions(128, 512));
    layer->eval();
    layer->setPacked(true);
    const auto xa = torch::randn({5, 128}), xb = torch::randn({3, 128});
    torch::Tensor ya, yb;
    {
        torch::NoGradGuard no_grad;
        ya = layer(xa);
        yb = layer(xb);
    }
    std::atomic<int> wrong{0};
    auto work = [&](const torch::Tensor& x, const torch::Tensor& expected) {
        torch::NoGradGuard no_grad;
        at::set_num_threads(1);
        for (int i = 0; i < 300; ++i)
            if (!torch::equal(layer(x), expected)) ++wrong;
    };
    std::thread a(work, xa, ya), b(work, xb, yb);
    a.join();
    b.join();
    QCOMPARE(wrong.load(), 0);
}

void TestPackedLinear::decodingIsTheSame() {
    // A whole model: the packed forward pass gives the same logits as at::linear's, up to rounding.
    auto cfg = attnlab::testing::smallConfig(60);
    torch::manual_seed(7);
    attnlab::model::Transformer m(cfg);
    m->eval();
    torch::NoGradGuard no_grad;
    const auto src = torch::randint(4, 60, {2, 9}), trg = torch::randint(4, 60, {2, 7});
    const auto plain = m->forwardFull(src, trg);
    m->setPackedInference(true);
    const auto packed = m->forwardFull(src, trg);
    const double d = relativeDifference(packed, plain);
    QVERIFY2(d < kTolerance, qPrintable(QString::number(d)));
    // Every linear layer and the output projection multiplied from a packed copy.
    int layers = 0;
    for (const auto& module : m->modules(/*include_self=*/false))
        if (auto* linear = dynamic_cast<attnlab::model::PackedLinearImpl*>(module.get())) {
            QVERIFY(linear->pack().holdsPack());
            ++layers;
        }
    QCOMPARE(layers, int(cfg.n_layers) * (4 + 2) + int(cfg.n_layers) * (8 + 2));
    QVERIFY(m->projectionPack().holdsPack());
    m->setPackedInference(false);
    QVERIFY(!m->projectionPack().holdsPack());
    QVERIFY(torch::equal(m->forwardFull(src, trg), plain));
}

QTEST_APPLESS_MAIN(TestPackedLinear)
#include "tst_packed_linear.moc"
