// Greedy and beam search: greedy == beam 1, n-best sorted by normalised score, every score
// recomputed independently by a teacher-forced full pass, cached == full-prefix decoding.
#include "decoding/search.h"
#include "fixtures.h"
#include "random_model.h"

#include <attnlab/errors.h>

#include <QtTest/QtTest>

#include <cmath>

using namespace attnlab::decoding;

namespace {
constexpr int64_t kEos = 3;

attnlab::model::Transformer eosFriendlyModel(uint64_t seed) {
    auto c = attnlab::testing::smallConfig(40);
    auto m = attnlab::testing::randomModel(c, seed);
    // Make </s> a plausible choice so that hypotheses finish at different lengths.
    torch::NoGradGuard g;
    m->decoder->trg_word_emb->weight[kEos].mul_(2.5);
    return m;
}

torch::Tensor sources() { return torch::tensor({{5, 9, 14, 22, 31, 3}, {7, 8, 30, 3, 0, 0}, {11, 12, 13, 3, 0, 0}}); }

SearchOptions options(int beam, int nbest, int max_len, int64_t n) {
    SearchOptions o;
    o.beam_size = beam;
    o.nbest = nbest;
    o.length_penalty = 0.7;
    o.max_lengths.assign(n, max_len);
    return o;
}

// Sum of log-probabilities of `tokens` under a teacher-forced full forward pass.
double teacherForcedScore(attnlab::model::Transformer& m, const torch::Tensor& src_row,
                          const std::vector<int64_t>& tokens) {
    std::vector<int64_t> in{2};
    in.insert(in.end(), tokens.begin(), tokens.end() - 1);
    auto logp = torch::log_softmax(m->forwardFull(src_row.unsqueeze(0), torch::tensor(in).unsqueeze(0)), -1)[0].to(
        torch::kFloat64);
    double s = 0;
    for (size_t i = 0; i < tokens.size(); ++i) s += logp[i][tokens[i]].item<double>();
    return s;
}
}  // namespace

class TestSearch : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void greedyEqualsBeamOne();
    void beamSortedAndScoresRecomputed();
    void cachedEqualsFullRecomputation();
    void lengthCapAndCancel();
    void beamNoWorseThanGreedyOnAverage();
};

void TestSearch::greedyEqualsBeamOne() {
    torch::NoGradGuard g;
    int finished = 0;
    for (uint64_t seed : {1, 2, 3, 4}) {
        auto m = eosFriendlyModel(seed);
        auto src = sources();
        auto greedy_stepper = makeStepper(StepperKind::Cached, m, src);
        auto greedy = greedySearch(*greedy_stepper, 3, options(1, 1, 15, 3));
        auto beam_stepper = makeStepper(StepperKind::Cached, m, src);
        auto beam = beamSearch(*beam_stepper, 3, options(1, 1, 15, 3));
        for (int i = 0; i < 3; ++i) {
            QCOMPARE(greedy[i].size(), size_t(1));
            QCOMPARE(beam[i].size(), size_t(1));
            QCOMPARE(beam[i][0].tokens, greedy[i][0].tokens);
            QVERIFY(std::abs(beam[i][0].score - greedy[i][0].score) < 1e-5);
            QCOMPARE(beam[i][0].finished, greedy[i][0].finished);
            finished += greedy[i][0].finished;
        }
    }
    QVERIFY2(finished > 0, "no hypothesis reached </s>: the test would not cover finishing");
}

void TestSearch::beamSortedAndScoresRecomputed() {
    torch::NoGradGuard g;
    auto m = eosFriendlyModel(5);
    auto src = sources();
    auto stepper = makeStepper(StepperKind::Cached, m, src);
    auto res = beamSearch(*stepper, 3, options(5, 5, 15, 3));
    for (int i = 0; i < 3; ++i) {
        QVERIFY(!res[i].empty() && res[i].size() <= 5);
        for (size_t k = 0; k < res[i].size(); ++k) {
            const Hyp& h = res[i][k];
            if (k) QVERIFY(res[i][k - 1].normalized >= h.normalized);
            QCOMPARE(h.finished, h.tokens.back() == kEos);
            // eos appears only at the end: a finished hypothesis stops growing and scoring.
            QCOMPARE(std::count(h.tokens.begin(), h.tokens.end(), kEos), h.finished ? 1L : 0L);
            const double expected = teacherForcedScore(m, src[i], h.tokens);
            QVERIFY2(std::abs(h.score - expected) < 1e-4,
                     qPrintable(QString("sentence %1 hyp %2: %3 vs %4").arg(i).arg(k).arg(h.score).arg(expected)));
            QVERIFY(std::abs(h.normalized - h.score / std::pow(double(h.tokens.size()), 0.7)) < 1e-9);
        }
        // Distinct hypotheses.
        for (size_t a = 0; a < res[i].size(); ++a)
            for (size_t b = a + 1; b < res[i].size(); ++b) QVERIFY(res[i][a].tokens != res[i][b].tokens);
    }
}

void TestSearch::cachedEqualsFullRecomputation() {
    torch::NoGradGuard g;
    auto m = eosFriendlyModel(6);
    auto src = sources();
    for (int beam : {1, 4}) {
        auto a = makeStepper(StepperKind::Cached, m, src);
        auto b = makeStepper(StepperKind::Full, m, src);
        auto ra = beamSearch(*a, 3, options(beam, beam, 12, 3));
        auto rb = beamSearch(*b, 3, options(beam, beam, 12, 3));
        for (int i = 0; i < 3; ++i) {
            QCOMPARE(ra[i].size(), rb[i].size());
            for (size_t k = 0; k < ra[i].size(); ++k) {
                QCOMPARE(ra[i][k].tokens, rb[i][k].tokens);
                QVERIFY(std::abs(ra[i][k].score - rb[i][k].score) < 1e-4);
            }
        }
    }
}

void TestSearch::lengthCapAndCancel() {
    torch::NoGradGuard g;
    auto c = attnlab::testing::smallConfig(40);
    auto m = attnlab::testing::randomModel(c, 8);
    auto src = sources();
    auto o = options(3, 3, 4, 3);
    o.max_lengths = {2, 4, 1};
    auto stepper = makeStepper(StepperKind::Cached, m, src);
    auto res = beamSearch(*stepper, 3, o);
    for (int i = 0; i < 3; ++i)
        for (const auto& h : res[i]) QVERIFY(int(h.tokens.size()) <= o.max_lengths[i]);
    int calls = 0;
    o.on_step = [&](int step, int /*max_steps*/) {
        ++calls;
        return step < 1;
    };
    auto stepper2 = makeStepper(StepperKind::Cached, m, src);
    QVERIFY_THROWS_EXCEPTION(attnlab::CancelledError, beamSearch(*stepper2, 3, o));
    QCOMPARE(calls, 2);
}

void TestSearch::beamNoWorseThanGreedyOnAverage() {
    // Beam search explores a superset of greedy's path; its best normalised score should not be
    // below greedy's on average over many sentences.
    torch::NoGradGuard g;
    auto m = eosFriendlyModel(9);
    auto src = torch::randint(4, 40, {16, 7});
    auto gs = makeStepper(StepperKind::Cached, m, src);
    auto bs = makeStepper(StepperKind::Cached, m, src);
    auto greedy = beamSearch(*gs, 16, options(1, 1, 12, 16));
    auto beam = beamSearch(*bs, 16, options(5, 1, 12, 16));
    double sg = 0, sb = 0;
    for (int i = 0; i < 16; ++i) {
        sg += greedy[i][0].normalized;
        sb += beam[i][0].normalized;
    }
    QVERIFY2(sb >= sg, qPrintable(QString("beam %1 < greedy %2").arg(sb).arg(sg)));
}

QTEST_APPLESS_MAIN(TestSearch)
#include "tst_search.moc"
