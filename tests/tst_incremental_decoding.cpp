// Cached incremental decoding against a full recomputation of the same prefix: logits within 1e-5
// and the same attention rows, also after the cache's rows are reordered (beam search).
#include "fixtures.h"
#include "model/masks.h"
#include "random_model.h"

#include <QtTest/QtTest>

using attnlab::model::Attentions;

class TestIncrementalDecoding : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void stepMatchesFullRecomputation_data();
    void stepMatchesFullRecomputation();
    void reorderedCacheMatches();
};

void TestIncrementalDecoding::stepMatchesFullRecomputation_data() {
    QTest::addColumn<QString>("scale");
    QTest::addColumn<bool>("shared");
    QTest::newRow("emb, shared") << "emb" << true;
    QTest::newRow("prj, shared") << "prj" << true;
    QTest::newRow("none, separate") << "none" << false;
}

void TestIncrementalDecoding::stepMatchesFullRecomputation() {
    QFETCH(QString, scale);
    QFETCH(bool, shared);
    auto c = attnlab::testing::smallConfig(60);
    c.scale_emb_or_prj = scale.toStdString();
    c.trg_emb_prj_weight_sharing = c.emb_src_trg_weight_sharing = shared;
    auto m = attnlab::testing::randomModel(c, 11);
    torch::NoGradGuard g;
    // Two sentences, the second padded.
    auto src = torch::tensor({{5, 9, 14, 22, 31, 3}, {7, 8, 40, 3, 0, 0}});
    auto prefix = torch::cat({torch::full({2, 1}, 2, torch::kInt64), torch::randint(4, 60, {2, 9})}, 1);  // [2,10]
    auto src_mask = attnlab::model::padMask(src, 0);
    auto enc = m->encoder(src, src_mask);
    auto state = m->decoder->initState(enc, src_mask);
    Attentions whole;  // the whole prefix at once: row t-1 must match step t and be 0 beyond t
    m->forwardFull(src, prefix, &whole);
    for (int64_t t = 1; t <= prefix.size(1); ++t) {
        Attentions step_attn;
        auto out = m->decoder->step(prefix.select(1, t - 1), state, &step_attn);
        auto step_logits = m->project(out.squeeze(1));

        Attentions full_attn;
        auto full_logits = m->forwardFull(src, prefix.slice(1, 0, t), &full_attn);
        auto last = full_logits.select(1, t - 1);
        const double diff = (step_logits - last).abs().max().item<double>();
        QVERIFY2(diff < 1e-5, qPrintable(QString("step %1: logits differ by %2").arg(t).arg(diff)));
        for (int64_t l = 0; l < c.n_layers; ++l) {
            // Self-attention: row t-1 of the full map, over the t positions seen so far.
            auto full_self = full_attn.decoder_self[l].select(2, t - 1).slice(2, 0, t);  // [2,h,t]
            QVERIFY(torch::allclose(step_attn.decoder_self[l].squeeze(2), full_self, 1e-5, 1e-6));
            // The future part of the full row is exactly zero.
            auto whole_row = whole.decoder_self[l].select(2, t - 1);  // [2,h,T]
            QVERIFY(torch::allclose(step_attn.decoder_self[l].squeeze(2), whole_row.slice(2, 0, t), 1e-5, 1e-6));
            if (t < prefix.size(1)) QCOMPARE(whole_row.slice(2, t).abs().max().item<float>(), 0.0f);
            auto full_cross = full_attn.cross[l].select(2, t - 1);
            QVERIFY(torch::allclose(step_attn.cross[l].squeeze(2), full_cross, 1e-5, 1e-6));
        }
    }
    QCOMPARE(state.length, prefix.size(1));
}

void TestIncrementalDecoding::reorderedCacheMatches() {
    auto c = attnlab::testing::smallConfig(60);
    auto m = attnlab::testing::randomModel(c, 12);
    torch::NoGradGuard g;
    auto src = torch::tensor({{5, 9, 14, 3}, {7, 8, 40, 3}, {11, 12, 3, 0}});
    auto prefix = torch::cat({torch::full({3, 1}, 2, torch::kInt64), torch::randint(4, 60, {3, 4})}, 1);
    auto src_mask = attnlab::model::padMask(src, 0);
    auto state = m->decoder->initState(m->encoder(src, src_mask), src_mask);
    for (int64_t t = 0; t < 3; ++t) m->decoder->step(prefix.select(1, t), state);
    // Reorder and duplicate rows as a beam would, then keep decoding.
    auto index = torch::tensor({2, 0, 0});
    state.select(index);
    auto src2 = src.index_select(0, index), prefix2 = prefix.index_select(0, index);
    for (int64_t t = 3; t < 5; ++t) {
        auto out = m->decoder->step(prefix2.select(1, t), state);
        auto full = m->forwardFull(src2, prefix2.slice(1, 0, t + 1)).select(1, t);
        QVERIFY((m->project(out.squeeze(1)) - full).abs().max().item<double>() < 1e-5);
    }
}

QTEST_APPLESS_MAIN(TestIncrementalDecoding)
#include "tst_incremental_decoding.moc"
