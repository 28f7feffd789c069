// Weight x value norm and attention rollout (attnlab/attention_flow.h) on maps small enough to work
// out by hand, and the properties every rollout has (rows that sum to 1).
#include <attnlab/attention_flow.h>
#include <attnlab/contributions.h>
#include <attnlab/errors.h>

#include <QtTest/QtTest>

#include <random>

using attnlab::LayerHeadMaps;
using attnlab::Matrix;

namespace {
QString errorOf(const std::function<void()>& f) {
    try {
        f();
    } catch (const attnlab::Error& e) {
        return e.what();
    }
    return "no error";
}

bool near(const Matrix& a, const Matrix& b, double tol = 1e-6) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
        if (a[i].size() != b[i].size()) return false;
        for (size_t j = 0; j < a[i].size(); ++j)
            if (std::abs(double(a[i][j]) - double(b[i][j])) > tol) return false;
    }
    return true;
}

// A random map whose rows sum to 1 (a causal one when `causal`).
Matrix randomRows(size_t rows, size_t cols, std::mt19937& rng, bool causal = false) {
    std::uniform_real_distribution<float> u(0.01f, 1.f);
    Matrix m(rows, std::vector<float>(cols, 0.f));
    for (size_t i = 0; i < rows; ++i) {
        float sum = 0;
        for (size_t j = 0; j < cols && (!causal || j <= i); ++j) sum += (m[i][j] = u(rng));
        for (float& x : m[i]) x /= sum;
    }
    return m;
}
}  // namespace

class TestAttentionFlow : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void valueNormWeighting();
    void rolloutByHand();
    void rolloutRowsSumToOne();
    void shapesAreChecked();
    void measuredMapsOfAResult();
};

void TestAttentionFlow::valueNormWeighting() {
    // A key with a long value vector moves the output more than its weight says, a short one less.
    const Matrix w{{0.5f, 0.5f}, {1.f, 0.f}};
    QCOMPARE(attnlab::weightedByValueNorms(w, {2.f, 4.f}), (Matrix{{1.f, 2.f}, {2.f, 0.f}}));
    QVERIFY(near(attnlab::rowNormalized({{1.f, 2.f}, {2.f, 0.f}, {0.f, 0.f}}),
                 {{1.f / 3, 2.f / 3}, {1.f, 0.f}, {0.f, 0.f}}));
    const LayerHeadMaps maps{{w, w}};
    const attnlab::HeadKeyNorms norms{{{1.f, 1.f}, {0.f, 3.f}}};
    const auto weighted = attnlab::weightedByValueNorms(maps, norms);
    QCOMPARE(weighted[0][0], w);
    QCOMPARE(weighted[0][1], (Matrix{{0.f, 1.5f}, {0.f, 0.f}}));
    attnlab::ValueNorms v;
    v.cross = norms;
    QCOMPARE(&v.of(attnlab::AttentionKind::Cross), &v.cross);
    QCOMPARE(&v.of(attnlab::AttentionKind::EncoderSelf), &v.encoder_self);
}

void TestAttentionFlow::rolloutByHand() {
    // Layer 0: A = [[1, 0], [.5, .5]] -> (A + I) / 2 = [[1, 0], [.25, .75]].
    // Layer 1 (two heads, mean [[0, 1], [0, 1]]) -> [[.5, .5], [0, 1]]; R_1 = that times R_0.
    const LayerHeadMaps self{{{{1.f, 0.f}, {0.5f, 0.5f}}}, {{{0.f, 1.f}, {0.f, 1.f}}, {{0.f, 1.f}, {0.f, 1.f}}}};
    const auto r = attnlab::attentionRollout(self);
    QCOMPARE(r.size(), size_t(2));
    QVERIFY(near(r[0], {{1.f, 0.f}, {0.25f, 0.75f}}));
    QVERIFY(near(r[1], {{0.625f, 0.375f}, {0.25f, 0.75f}}));
    // Cross-attention of one target step: heads [1, 0] and [0, 1], mean [.5, .5], through R_1.
    const LayerHeadMaps cross{{{{1.f, 0.f}}, {{0.f, 1.f}}}};
    const auto c = attnlab::crossRollout(cross, r.back());
    QCOMPARE(c.size(), size_t(1));
    QVERIFY(near(c[0], {{0.4375f, 0.5625f}}));
}

void TestAttentionFlow::rolloutRowsSumToOne() {
    std::mt19937 rng(7);
    for (bool causal : {false, true}) {
        LayerHeadMaps self(3);
        for (auto& layer : self)
            for (int h = 0; h < 4; ++h) layer.push_back(randomRows(6, 6, rng, causal));
        const auto r = attnlab::attentionRollout(self);
        for (const auto& m : r)
            for (size_t i = 0; i < m.size(); ++i) {
                double sum = 0;
                for (size_t j = 0; j < m[i].size(); ++j) {
                    sum += m[i][j];
                    if (causal && j > i) QCOMPARE(m[i][j], 0.f);  // nothing from the future, ever
                }
                QVERIFY(std::abs(sum - 1.0) < 1e-5);
            }
        LayerHeadMaps cross(2);
        for (auto& layer : cross)
            for (int h = 0; h < 4; ++h) layer.push_back(randomRows(3, 6, rng));
        for (const auto& m : attnlab::crossRollout(cross, r.back()))
            for (const auto& row : m) {
                double sum = 0;
                for (float x : row) sum += x;
                QVERIFY(std::abs(sum - 1.0) < 1e-5);
            }
    }
}

void TestAttentionFlow::shapesAreChecked() {
    QCOMPARE(errorOf([] {
                 attnlab::weightedByValueNorms(Matrix{{1.f, 0.f}}, {1.f});
             }),
             QString("value norms: 1 keys for a map of 2 columns"));
    QCOMPARE(errorOf([] { attnlab::weightedByValueNorms(LayerHeadMaps{{Matrix{{1.f}}}}, attnlab::HeadKeyNorms{}); }),
             QString("value norms: 0 layers for 1 layers of maps"));
    QCOMPARE(errorOf([] {
                 attnlab::attentionRollout({{Matrix{{1.f, 0.f}, {0.f, 1.f}}}, {Matrix{{1.f}}}});
             }),
             QString("rollout: maps of different sizes"));
    QCOMPARE(errorOf([] {
                 attnlab::crossRollout({{Matrix{{1.f, 0.f, 0.f}}}}, Matrix{{1.f, 0.f}, {0.f, 1.f}});
             }),
             QString("cross rollout: maps of different sizes"));
    QVERIFY(attnlab::attentionRollout({}).empty());
}

// What a view draws for each measure: the weights as they are, the value-norm maps with rows
// normalised, the rollout one map per layer (cross-attention through the encoder's last rollout).
void TestAttentionFlow::measuredMapsOfAResult() {
    using attnlab::AttentionKind;
    using attnlab::MapMeasure;
    std::mt19937 rng(3);
    attnlab::TranslationResult r;
    for (int l = 0; l < 2; ++l) {
        r.encoder_self.push_back({randomRows(4, 4, rng), randomRows(4, 4, rng)});
        r.decoder_self.push_back({randomRows(3, 3, rng, true), randomRows(3, 3, rng, true)});
        r.cross.push_back({randomRows(3, 4, rng), randomRows(3, 4, rng)});
    }
    attnlab::ValueNorms n;
    n.cross = {{{1, 2, 3, 4}, {4, 3, 2, 1}}, {{1, 1, 1, 1}, {0, 0, 1, 1}}};
    QCOMPARE(attnlab::measuredMaps(r, AttentionKind::Cross, MapMeasure::Weights, nullptr), r.cross);
    const auto vn = attnlab::measuredMaps(r, AttentionKind::Cross, MapMeasure::ValueNorm, &n);
    QVERIFY(near(vn[0][1], attnlab::rowNormalized(attnlab::weightedByValueNorms(r.cross[0][1], n.cross[0][1]))));
    QVERIFY(near(vn[1][0], r.cross[1][0]));  // equal norms change nothing once rows are normalised
    QCOMPARE(errorOf([&] { attnlab::measuredMaps(r, AttentionKind::Cross, MapMeasure::ValueNorm, nullptr); }),
             QString("the value-norm maps need the value norms"));
    const auto rollout = attnlab::measuredMaps(r, AttentionKind::Cross, MapMeasure::Rollout, nullptr);
    QCOMPARE(rollout.size(), size_t(2));
    QCOMPARE(rollout[1].size(), size_t(1));
    QVERIFY(near(rollout[1][0], attnlab::crossRollout(r.cross, attnlab::attentionRollout(r.encoder_self).back())[1]));
    QVERIFY(near(attnlab::measuredMaps(r, AttentionKind::DecoderSelf, MapMeasure::Rollout, nullptr)[0][0],
                 attnlab::attentionRollout(r.decoder_self)[0]));
    for (auto m : attnlab::kMapMeasures) QCOMPARE(attnlab::parseMapMeasure(attnlab::mapMeasureName(m)), m);
    QVERIFY(!attnlab::parseMapMeasure("saliency"));
    // ALTI+ and value zeroing (issue 54) are measures too, named as contributions.h names the methods, one map
    // per layer; made from the model (Translator::contributions), not from a result's maps, so that neither
    // `translate --maps` nor `heads --measure` offers them.
    QCOMPARE(attnlab::parseMapMeasure(attnlab::kAltiPlusName), std::optional(MapMeasure::AltiPlus));
    QCOMPARE(attnlab::parseMapMeasure(attnlab::kValueZeroingName), std::optional(MapMeasure::ValueZeroing));
    QCOMPARE(attnlab::mapMeasureNames(), (std::vector<std::string>{"weights", "value-norm", "rollout"}));
    QCOMPARE(errorOf([&] { attnlab::measuredMaps(r, AttentionKind::Cross, MapMeasure::AltiPlus, &n); }),
             QString("the alti+ maps are computed from the model (Translator::contributions), not from the attention "
                     "maps"));
    for (auto m : attnlab::kMapMeasures) {
        const auto method = attnlab::contributionMethodOf(m);
        QCOMPARE(bool(method), m == MapMeasure::AltiPlus || m == MapMeasure::ValueZeroing);
        if (method) QCOMPARE(attnlab::measureOf(*method), m);
        QCOMPARE(attnlab::onePerLayer(m), m == MapMeasure::Rollout || bool(method));
    }
    attnlab::Contributions c;
    c.encoder_self = {r.encoder_self[0][0], r.encoder_self[1][1]};
    c.cross = {r.cross[0][1], r.cross[1][0]};
    const auto per_layer = attnlab::contributionMaps(c, AttentionKind::Cross);
    QCOMPARE(per_layer, (attnlab::LayerHeadMaps{{r.cross[0][1]}, {r.cross[1][0]}}));
    QCOMPARE(attnlab::contributionMaps(c, AttentionKind::EncoderSelf)[1],
             std::vector<attnlab::Matrix>{c.encoder_self[1]});
    QVERIFY(attnlab::contributionMaps(c, AttentionKind::DecoderSelf).empty());
}

QTEST_APPLESS_MAIN(TestAttentionFlow)
#include "tst_attention_flow.moc"
