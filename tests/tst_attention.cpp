// Multi-head attention against an independent per-head computation with plain tensor operations,
// and the masks' effect on the weights.
#include "model/attention.h"
#include "model/masks.h"

#include <QtTest/QtTest>

#include <cmath>

using attnlab::model::MultiHeadAttention;

namespace {
attnlab::model::AttentionOptions options(int64_t n_head, int64_t d_model, int64_t d_k, int64_t d_v, double dropout) {
    attnlab::model::AttentionOptions o;
    o.n_head = n_head;
    o.d_model = d_model;
    o.d_k = d_k;
    o.d_v = d_v;
    o.dropout = dropout;
    return o;
}
}  // namespace

namespace {
// The paper's formula, one head at a time, on the module's weights: no view/transpose tricks.
std::pair<torch::Tensor, torch::Tensor> reference(MultiHeadAttention& m, const torch::Tensor& q, const torch::Tensor& k,
                                                  const torch::Tensor& v,
                                                  const torch::Tensor& allowed /*[b,lq,lk] or {}*/) {
    const int64_t H = m->n_head, dk = m->d_k, dv = m->d_v, B = q.size(0), Lq = q.size(1), Lk = k.size(1);
    auto out_heads = torch::zeros({B, Lq, H * dv}, torch::kFloat64);
    auto attn = torch::zeros({B, H, Lq, Lk}, torch::kFloat64);
    auto Wq = m->w_qs->weight.to(torch::kFloat64), Wk = m->w_ks->weight.to(torch::kFloat64),
         Wv = m->w_vs->weight.to(torch::kFloat64);
    for (int64_t b = 0; b < B; ++b) {
        auto qb = q[b].to(torch::kFloat64), kb = k[b].to(torch::kFloat64), vb = v[b].to(torch::kFloat64);
        for (int64_t h = 0; h < H; ++h) {
            auto Qh = torch::mm(qb, Wq.slice(0, h * dk, (h + 1) * dk).t());  // [Lq, dk]
            auto Kh = torch::mm(kb, Wk.slice(0, h * dk, (h + 1) * dk).t());
            auto Vh = torch::mm(vb, Wv.slice(0, h * dv, (h + 1) * dv).t());
            auto scores = torch::mm(Qh, Kh.t()) / std::sqrt(double(dk));
            auto w = scores.exp();
            if (allowed.defined()) w = w * allowed[b].to(torch::kFloat64);
            w = w / w.sum(1, true);
            attn[b][h] = w;
            out_heads[b].slice(1, h * dv, (h + 1) * dv) = torch::mm(w, Vh);
        }
    }
    auto y = torch::matmul(out_heads, m->fc->weight.to(torch::kFloat64).t()) + q.to(torch::kFloat64);
    auto mean = y.mean(-1, true), var = y.var(-1, false, true);
    y = (y - mean) / torch::sqrt(var + 1e-6) * m->layer_norm->weight.to(torch::kFloat64) +
        m->layer_norm->bias.to(torch::kFloat64);
    return {y, attn};
}
}  // namespace

class TestAttention : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void init() { torch::manual_seed(1234); }
    void matchesPerHeadComputation();
    void crossAttentionShapes();
    void maskedKeysGetZeroWeight();
    void causalRowsSeeNoFuture();
    void masksAsReference();
    void singleQueryStepAsReference();
};

void TestAttention::matchesPerHeadComputation() {
    MultiHeadAttention m(options(4, 16, 5, 6, 0.1));
    m->eval();
    torch::NoGradGuard g;
    // Random layer-norm affine so that it is checked too.
    m->layer_norm->weight.uniform_(0.5, 1.5);
    m->layer_norm->bias.uniform_(-0.5, 0.5);
    auto x = torch::randn({2, 7, 16});
    auto [out, attn] = m(x, x, x);
    auto [ref_out, ref_attn] = reference(m, x, x, x, {});
    QCOMPARE(attn.sizes().vec(), (std::vector<int64_t>{2, 4, 7, 7}));
    QVERIFY2(torch::allclose(attn.to(torch::kFloat64), ref_attn, 1e-5, 1e-6), "attention weights differ");
    QVERIFY2(torch::allclose(out.to(torch::kFloat64), ref_out, 1e-4, 1e-5), "outputs differ");
    QVERIFY(torch::allclose(attn.sum(-1), torch::ones({2, 4, 7}), 1e-5, 1e-6));
}

void TestAttention::crossAttentionShapes() {
    MultiHeadAttention m(options(2, 8, 4, 4, 0.0));
    m->eval();
    torch::NoGradGuard g;
    auto q = torch::randn({3, 2, 8}), kv = torch::randn({3, 9, 8});
    auto [out, attn] = m(q, kv, kv);
    auto [ref_out, ref_attn] = reference(m, q, kv, kv, {});
    QCOMPARE(out.sizes().vec(), (std::vector<int64_t>{3, 2, 8}));
    QCOMPARE(attn.sizes().vec(), (std::vector<int64_t>{3, 2, 2, 9}));
    QVERIFY(torch::allclose(attn.to(torch::kFloat64), ref_attn, 1e-5, 1e-6));
    QVERIFY(torch::allclose(out.to(torch::kFloat64), ref_out, 1e-4, 1e-5));
}

void TestAttention::maskedKeysGetZeroWeight() {
    MultiHeadAttention m(options(3, 12, 4, 4, 0.1));
    m->eval();
    torch::NoGradGuard g;
    // Sentence 0 has 6 real tokens, sentence 1 has 4 then padding (id 0).
    auto seq = torch::tensor({{5, 6, 7, 8, 9, 10}, {5, 6, 7, 8, 0, 0}});
    auto mask = attnlab::model::padMask(seq, 0);  // [2,1,6]
    auto x = torch::randn({2, 6, 12});
    auto [out, attn] = m(x, x, x, mask);
    QCOMPARE(attn[1].slice(2, 4, 6).abs().max().item<float>(), 0.0f);
    QVERIFY(attn[0].slice(2, 4, 6).abs().min().item<float>() > 0.0f);
    QVERIFY(torch::allclose(attn.sum(-1), torch::ones({2, 3, 6}), 1e-5, 1e-6));
    auto allowed = mask.expand({2, 6, 6});
    auto [ref_out, ref_attn] = reference(m, x, x, x, allowed);
    QVERIFY(torch::allclose(attn.to(torch::kFloat64), ref_attn, 1e-5, 1e-6));
    // Padding keys cannot change the real tokens' outputs.
    auto x2 = x.clone();
    x2[1].slice(0, 4, 6).normal_();
    auto [out2, attn2] = m(x2, x2, x2, mask);
    QVERIFY(torch::allclose(out2[1].slice(0, 0, 4), out[1].slice(0, 0, 4), 1e-5, 1e-6));
}

void TestAttention::causalRowsSeeNoFuture() {
    MultiHeadAttention m(options(2, 8, 4, 4, 0.1));
    m->eval();
    torch::NoGradGuard g;
    auto seq = torch::tensor({{2, 5, 6, 7, 8}});
    auto mask = attnlab::model::decoderMask(seq, 0);
    auto x = torch::randn({1, 5, 8});
    auto [out, attn] = m(x, x, x, mask);
    for (int64_t i = 0; i < 5; ++i)
        for (int64_t j = 0; j < 5; ++j) {
            const float w = attn[0][0][i][j].item<float>();
            if (j > i)
                QCOMPARE(w, 0.0f);
            else
                QVERIFY(w > 0.0f);
        }
    // Changing a future token leaves earlier outputs unchanged.
    auto x2 = x.clone();
    x2[0][4].normal_();
    auto [out2, attn2] = m(x2, x2, x2, mask);
    QVERIFY(torch::allclose(out2[0].slice(0, 0, 4), out[0].slice(0, 0, 4), 1e-5, 1e-6));
}

void TestAttention::masksAsReference() {
    auto seq = torch::tensor({{4, 5, 0}});
    auto pad = attnlab::model::padMask(seq, 0);
    QCOMPARE(pad.sizes().vec(), (std::vector<int64_t>{1, 1, 3}));
    QVERIFY(torch::equal(pad, torch::tensor({{{true, true, false}}})));
    auto sub = attnlab::model::subsequentMask(seq);
    QVERIFY(torch::equal(sub, torch::tensor({{{true, false, false}, {true, true, false}, {true, true, true}}})));
    auto dec = attnlab::model::decoderMask(seq, 0);
    QVERIFY(torch::equal(dec, torch::tensor({{{true, false, false}, {true, true, false}, {true, true, false}}})));
}

// A cached decoding step (one query per row) takes the fused path (model/attention.cpp) in eval
// mode without autograd: against the per-head double computation, with padded keys, keys and values
// as projectKeys/projectValues leave them (a transposed view), and enough rows on two threads that
// the rows are split between them. The unfused path (autograd on) must agree as well; both are
// float, summed in different orders, hence 1e-5.
void TestAttention::singleQueryStepAsReference() {
    MultiHeadAttention m(options(4, 16, 5, 6, 0.0));
    m->eval();
    m->layer_norm->weight.data().uniform_(0.5, 1.5);
    const int64_t b = 40;
    auto lengths = torch::randint(1, 10, {b});
    auto seq = torch::ones({b, 9}, torch::kLong);
    for (int64_t i = 0; i < b; ++i) seq[i].slice(0, lengths[i].item<int64_t>()).fill_(0);
    const auto mask = attnlab::model::padMask(seq, 0);  // [b,1,9]
    const auto q = torch::randn({b, 1, 16}), kv = torch::randn({b, 9, 16});
    const int threads = at::get_num_threads();
    at::set_num_threads(2);
    torch::Tensor fused_out, fused_attn;
    {
        torch::NoGradGuard g;
        auto k = m->projectKeys(kv), v = m->projectValues(kv);
        QVERIFY(!k.is_contiguous());
        std::tie(fused_out, fused_attn) = m->attend(q, k, v, mask);
    }
    at::set_num_threads(threads);
    auto [ref_out, ref_attn] = reference(m, q, kv, kv, mask);
    QCOMPARE(fused_attn.sizes().vec(), (std::vector<int64_t>{b, 4, 1, 9}));
    QVERIFY2(torch::allclose(fused_attn.to(torch::kFloat64), ref_attn, 1e-5, 1e-6), "weights differ");
    QVERIFY2(torch::allclose(fused_out.to(torch::kFloat64), ref_out, 1e-4, 1e-5), "outputs differ");
    QCOMPARE(fused_attn[3].slice(2, lengths[3].item<int64_t>()).abs().max().item<float>(), 0.0f);
    auto qg = q.clone().requires_grad_(true);  // autograd: the unfused path
    auto [out, attn] = m->attend(qg, m->projectKeys(kv), m->projectValues(kv), mask);
    QVERIFY(out.requires_grad());
    QVERIFY(torch::allclose(attn.detach(), fused_attn, 1e-5, 1e-7));
    QVERIFY(torch::allclose(out.detach(), fused_out, 1e-5, 1e-6));
}

QTEST_APPLESS_MAIN(TestAttention)
#include "tst_attention.moc"
