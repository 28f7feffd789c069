// The model's structure: the reference's state-dict keys, weight sharing, scale_emb_or_prj, and
// return_attns shapes.
#include "fixtures.h"
#include "model/masks.h"
#include "package/package_io.h"
#include "random_model.h"

#include <attnlab/errors.h>

#include <QtTest/QtTest>

#include <cmath>

using attnlab::ModelConfig;
using attnlab::model::Transformer;

class TestTransformer : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void stateDictKeysAreTheReferences_data();
    void stateDictKeysAreTheReferences();
    void tiedWeightsAreOneTensor();
    void scaleProjection();
    void scaleEmbedding();
    void noScalingWithoutProjectionSharing();
    void returnAttnsShapes();
    void forwardAtSelectsRows();
    void invalidConfigs();
};

void TestTransformer::stateDictKeysAreTheReferences_data() {
    QTest::addColumn<bool>("prj_sharing");
    QTest::addColumn<bool>("emb_sharing");
    QTest::newRow("both") << true << true;
    QTest::newRow("prj only") << true << false;
    QTest::newRow("none") << false << false;
    QTest::newRow("emb only") << false << true;
}

void TestTransformer::stateDictKeysAreTheReferences() {
    QFETCH(bool, prj_sharing);
    QFETCH(bool, emb_sharing);
    ModelConfig c = attnlab::testing::smallConfig(50);
    c.trg_emb_prj_weight_sharing = prj_sharing;
    c.emb_src_trg_weight_sharing = emb_sharing;
    Transformer m(c);
    std::map<std::string, std::vector<int64_t>> actual;
    for (const auto& p : m->named_parameters()) actual[p.key()] = p.value().sizes().vec();
    for (const auto& b : m->named_buffers()) actual[b.key()] = b.value().sizes().vec();
    std::map<std::string, std::vector<int64_t>> expected;
    for (const auto& [k, v] : attnlab::package::expectedTensors(c)) expected[k] = v;
    QCOMPARE(actual, expected);
    // Spot checks of names written out as in the reference's state dict.
    QVERIFY(actual.count("encoder.layer_stack.0.slf_attn.w_qs.weight"));
    QVERIFY(actual.count("decoder.layer_stack.1.enc_attn.layer_norm.bias"));
    QVERIFY(actual.count("decoder.layer_stack.0.pos_ffn.w_1.bias"));
    QVERIFY(actual.count("encoder.layer_norm.weight"));
    QVERIFY(actual.count("encoder.position_enc.pos_table"));
    QCOMPARE(actual.count("trg_word_prj.weight"), size_t(prj_sharing ? 0 : 1));
    QCOMPARE(actual.count("encoder.src_word_emb.weight"), size_t(emb_sharing ? 0 : 1));
    QCOMPARE(actual["decoder.layer_stack.0.slf_attn.w_qs.weight"], (std::vector<int64_t>{c.n_head * c.d_k, c.d_model}));
    QCOMPARE(actual["decoder.layer_stack.0.slf_attn.fc.weight"], (std::vector<int64_t>{c.d_model, c.n_head * c.d_v}));
    // No biases on the attention projections.
    QVERIFY(!actual.count("encoder.layer_stack.0.slf_attn.w_qs.bias"));
}

void TestTransformer::tiedWeightsAreOneTensor() {
    ModelConfig c = attnlab::testing::smallConfig(50);
    Transformer m(c);
    const auto& dec = m->decoder->trg_word_emb->weight;
    QCOMPARE(m->encoder->embeddingWeight().unsafeGetTensorImpl(), dec.unsafeGetTensorImpl());
    QCOMPARE(m->projectionWeight().unsafeGetTensorImpl(), dec.unsafeGetTensorImpl());
    // Counted once by named_parameters (what the optimizer sees).
    int64_t seen = 0;
    for (const auto& p : m->parameters()) seen += p.unsafeGetTensorImpl() == dec.unsafeGetTensorImpl();
    QCOMPARE(seen, int64_t(1));
}

void TestTransformer::scaleProjection() {
    ModelConfig c = attnlab::testing::smallConfig(50);
    c.scale_emb_or_prj = "none";
    auto none = attnlab::testing::randomModel(c, 3);
    c.scale_emb_or_prj = "prj";
    auto prj = attnlab::testing::randomModel(c, 3);  // same seed: same weights
    torch::NoGradGuard g;
    auto src = torch::randint(4, 50, {2, 6}), trg = torch::randint(4, 50, {2, 5});
    auto a = none(src, trg), b = prj(src, trg);
    QCOMPARE(a.sizes().vec(), (std::vector<int64_t>{10, 50}));
    QVERIFY(torch::allclose(b, a * std::pow(double(c.d_model), -0.5), 1e-5, 1e-6));
}

void TestTransformer::scaleEmbedding() {
    ModelConfig c = attnlab::testing::smallConfig(50);
    c.scale_emb_or_prj = "emb";
    auto emb = attnlab::testing::randomModel(c, 5);
    c.scale_emb_or_prj = "none";
    auto none = attnlab::testing::randomModel(c, 5);
    torch::NoGradGuard g;
    // Scaling the embedding output by sqrt(d_model) equals scaling the embedding table.
    none->decoder->trg_word_emb->weight.mul_(std::sqrt(double(c.d_model)));
    auto src = torch::randint(4, 50, {2, 6});
    QVERIFY(torch::allclose(emb->encode(src), none->encode(src), 1e-4, 1e-5));
}

void TestTransformer::noScalingWithoutProjectionSharing() {
    ModelConfig c = attnlab::testing::smallConfig(50);
    c.trg_emb_prj_weight_sharing = false;
    c.emb_src_trg_weight_sharing = false;
    c.scale_emb_or_prj = "prj";
    QVERIFY(!c.scalePrj());
    c.scale_emb_or_prj = "emb";
    QVERIFY(!c.scaleEmb());  // as the reference: scaling only applies with projection sharing
}

void TestTransformer::forwardAtSelectsRows() {
    auto m = attnlab::testing::randomModel(attnlab::testing::smallConfig(50), 4);
    torch::NoGradGuard g;
    auto src = torch::tensor({{5, 6, 7, 3, 0}, {8, 9, 10, 11, 3}});
    auto trg = torch::tensor({{2, 12, 13}, {2, 14, 0}});
    auto all = m->forward(src, trg);  // [6, 50]
    auto rows = torch::tensor({0, 1, 2, 3, 4}, torch::kInt64);
    auto some = m->forwardAt(src, trg, rows);
    QCOMPARE(some.sizes().vec(), (std::vector<int64_t>{5, 50}));
    QVERIFY(torch::allclose(some, all.index_select(0, rows), 1e-5, 1e-6));
    auto last = m->forwardAt(src, trg, torch::tensor({5}, torch::kInt64));
    QVERIFY(torch::allclose(last[0], all[5], 1e-5, 1e-6));
}

void TestTransformer::returnAttnsShapes() {
    ModelConfig c = attnlab::testing::smallConfig(50);
    c.n_layers = 3;
    auto m = attnlab::testing::randomModel(c, 9);
    torch::NoGradGuard g;
    auto src = torch::tensor({{5, 6, 7, 3, 0}, {8, 9, 10, 11, 3}});
    auto trg = torch::tensor({{2, 12, 13}, {2, 14, 0}});
    attnlab::model::Attentions a;
    auto logits = m->forwardFull(src, trg, &a);
    QCOMPARE(logits.sizes().vec(), (std::vector<int64_t>{2, 3, 50}));
    QCOMPARE(a.encoder_self.size(), size_t(3));
    QCOMPARE(a.decoder_self.size(), size_t(3));
    QCOMPARE(a.cross.size(), size_t(3));
    QCOMPARE(a.encoder_self[0].sizes().vec(), (std::vector<int64_t>{2, 4, 5, 5}));
    QCOMPARE(a.decoder_self[2].sizes().vec(), (std::vector<int64_t>{2, 4, 3, 3}));
    QCOMPARE(a.cross[1].sizes().vec(), (std::vector<int64_t>{2, 4, 3, 5}));
    // Per head, not averaged: heads differ.
    QVERIFY(!torch::allclose(a.encoder_self[0][0][0], a.encoder_self[0][0][1]));
    // Padding of sentence 0's source gets no cross-attention; target padding no self-attention.
    QCOMPARE(a.cross[0][0].select(2, 4).abs().max().item<float>(), 0.0f);
    QCOMPARE(a.decoder_self[0][1].select(2, 2).abs().max().item<float>(), 0.0f);
}

void TestTransformer::invalidConfigs() {
    auto expectError = [](ModelConfig c, const QString& needle) {
        try {
            Transformer m(c);
            QFAIL("no exception");
        } catch (const attnlab::ConfigError& e) {
            QVERIFY2(QString(e.what()).contains(needle), e.what());
        }
    };
    ModelConfig c = attnlab::testing::smallConfig(50);
    c.d_word_vec = 16;
    expectError(c, "d_word_vec (16) must equal d_model (32)");
    c = attnlab::testing::smallConfig(50);
    c.scale_emb_or_prj = "both";
    expectError(c, "scale_emb_or_prj is 'both'");
    c = attnlab::testing::smallConfig(50);
    c.n_trg_vocab = 60;
    expectError(c, "emb_src_trg_weight_sharing needs n_src_vocab == n_trg_vocab");
    c = attnlab::testing::smallConfig(50);
    c.n_head = 0;
    expectError(c, "n_head = 0 is out of range");
}

QTEST_APPLESS_MAIN(TestTransformer)
#include "tst_transformer.moc"
