// Gradients of a teacher-forced pass (core/src/decoding/gradients.cpp) against finite differences
// computed here on a double-precision copy of the same model: gradient x input (saliency) and the
// gradient of the loss with respect to a gate on every head (Michel et al.'s importance).
#include "decoding/engine.h"
#include "fixtures.h"
#include "model/attention.h"

#include <attnlab/errors.h>
#include <attnlab/gradients.h>
#include <attnlab/tokenizer.h>
#include <attnlab/translator.h>

#include <QtTest/QtTest>

#include <cmath>

using attnlab::AttentionKind;
using attnlab::Translator;

namespace {
torch::Tensor row(const std::vector<int>& ids) {
    std::vector<int64_t> v(ids.begin(), ids.end());
    return torch::tensor(v, torch::kInt64).unsqueeze(0);
}
}  // namespace

class TestGradients : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void saliencyIsFiniteDifference();
    void saliencyRespectsCausality();
    void gateGradientIsFiniteDifference();
    void gateGradientsArePerPair();
    void contrastiveIsSaliencyDifference();
    void contrastiveRefusedByMessage();
    void typedWordTakesThePieceOfItsPlace();
    void errorsAreNamed();
    void modelIsLeftAsItWas();

private:
    // log p of every target token (row t: token t of r.best) with the double model, teacher-forced.
    std::vector<double> logProbs(const attnlab::TranslationResult& r);
    // Finite difference of f along a scale of embedding row `id` ((f(1+e) - f(1-e)) / 2e): the
    // directional derivative along that row at every position it is used, i.e. the sum of those
    // positions' gradient x input.
    std::vector<double> alongRow(torch::Tensor weight, int id, const attnlab::TranslationResult& r);

    QTemporaryDir m_dir;
    std::unique_ptr<Translator> m_t;
    std::unique_ptr<attnlab::decoding::Engine> m_double;  // the same package, its model in double
    attnlab::ModelConfig m_cfg;
    std::string m_tokenizer;  // the package's SentencePiece model
};

void TestGradients::initTestCase() {
    const std::string tok = attnlab::testing::trainTokenizer(m_dir.path().toStdString(), 400);
    m_tokenizer = tok;
    m_cfg = attnlab::testing::smallConfig(400);
    // Untied embeddings: scaling one row of the source (or target) embedding then changes nothing but
    // that token's input, which is what the finite differences need.
    m_cfg.trg_emb_prj_weight_sharing = m_cfg.emb_src_trg_weight_sharing = false;
    const std::string pkg = attnlab::testing::writeRandomPackage(m_dir.path().toStdString() + "/pkg", tok, m_cfg);
    m_t = std::make_unique<Translator>(pkg, attnlab::TranslatorOptions{attnlab::testing::testDevice()});
    m_double = std::make_unique<attnlab::decoding::Engine>(pkg, attnlab::TranslatorOptions{"cpu"});
    m_double->model()->setPackedInference(false);
    m_double->model()->to(torch::kFloat64);
}

std::vector<double> TestGradients::logProbs(const attnlab::TranslationResult& r) {
    torch::NoGradGuard no_grad;
    std::vector<int> in{int(m_double->config().bos_idx)};
    for (size_t i = 0; i + 1 < r.best.ids.size(); ++i) in.push_back(r.best.ids[i]);
    auto logits = m_double->model()->forwardFull(row(r.source_ids), row(in));
    auto logp = torch::log_softmax(logits, -1)[0];
    std::vector<double> out;
    for (size_t t = 0; t < r.best.ids.size(); ++t) out.push_back(logp[int64_t(t)][r.best.ids[t]].item<double>());
    return out;
}

std::vector<double> TestGradients::alongRow(torch::Tensor weight, int id, const attnlab::TranslationResult& r) {
    const double eps = 1e-4;
    torch::NoGradGuard no_grad;
    const auto original = weight[id].clone();
    weight[id].mul_(1 + eps);
    const auto up = logProbs(r);
    weight[id].copy_(original * (1 - eps));
    const auto down = logProbs(r);
    weight[id].copy_(original);
    std::vector<double> d;
    for (size_t t = 0; t < up.size(); ++t) d.push_back((up[t] - down[t]) / (2 * eps));
    return d;
}

// Cell (t, j) of the source map summed over the positions of one token equals the derivative of
// log p(y_t) along that token's embedding row; the same for the target's (decoder input) map. The
// engine computes in float32, the differences in double (central, step 1e-4: error ~1e-8). They
// agree to ~1e-6 relative here (cells are ~1e-3); 1e-3 relative plus 1e-6 leaves room for float32
// rounding with any summation order or kernel, and still fails a map off by 1 %.
void TestGradients::saliencyIsFiniteDifference() {
    const auto r = m_t->translate("Ein Mädchen spielt mit einem Ball im Park.");
    QVERIFY(r.best.ids.size() >= 3);
    const auto s = m_t->saliency(r);
    QCOMPARE(s.source.size(), r.best.ids.size());
    QCOMPARE(s.source[0].size(), r.source_ids.size());
    QCOMPARE(s.target.size(), r.best.ids.size());
    QCOMPARE(s.target[0].size(), r.best.ids.size());  // <s> and every target token but the last
    auto model = m_double->model();
    int checked = 0;
    for (size_t j = 0; j < r.source_ids.size(); ++j) {
        const int id = r.source_ids[j];
        const auto fd = alongRow(model->encoder->src_word_emb->weight, id, r);
        for (size_t t = 0; t < fd.size(); ++t) {
            double sum = 0;
            for (size_t k = 0; k < r.source_ids.size(); ++k)
                if (r.source_ids[k] == id) sum += s.source[t][k];
            QVERIFY2(std::abs(sum - fd[t]) < 1e-3 * std::abs(fd[t]) + 1e-6,
                     qPrintable(QString("source %1, target %2: %3 vs %4").arg(j).arg(t).arg(sum).arg(fd[t])));
            ++checked;
        }
    }
    std::vector<int> in{int(m_double->config().bos_idx)};
    for (size_t i = 0; i + 1 < r.best.ids.size(); ++i) in.push_back(r.best.ids[i]);
    for (size_t k = 0; k < in.size(); ++k) {
        const auto fd = alongRow(model->decoder->trg_word_emb->weight, in[k], r);
        for (size_t t = 0; t < fd.size(); ++t) {
            double sum = 0;
            for (size_t m = 0; m < in.size(); ++m)
                if (in[m] == in[k]) sum += s.target[t][m];
            QVERIFY2(std::abs(sum - fd[t]) < 1e-3 * std::abs(fd[t]) + 1e-6,
                     qPrintable(QString("input %1, target %2: %3 vs %4").arg(k).arg(t).arg(sum).arg(fd[t])));
            ++checked;
        }
    }
    QVERIFY(checked > 20);
}

// Target token t cannot see decoder inputs after position t: exactly 0 there; and some of the
// positions it sees matter (not an all-zero map).
void TestGradients::saliencyRespectsCausality() {
    const auto r = m_t->translate("Zwei Hunde laufen über die Wiese.");
    const auto s = m_t->saliency(r);
    double seen = 0;
    for (size_t t = 0; t < s.target.size(); ++t)
        for (size_t k = 0; k < s.target[t].size(); ++k) {
            if (k > t)
                QCOMPARE(s.target[t][k], 0.0f);
            else
                seen += std::abs(s.target[t][k]);
        }
    QVERIFY(seen > 0);
    double source = 0;
    for (const auto& row : s.source)
        for (float v : row) source += std::abs(v);
    QVERIFY(source > 0);
}

// |dL/d gate| of a head against the difference of L with that head's output scaled by 1 +- e (the
// same gate the engine puts in, set here through the module's head_keep on the double model). The
// same margin as for saliency, for the same reason.
void TestGradients::gateGradientIsFiniteDifference() {
    const std::vector<std::string> src{"Ein Mann fährt Fahrrad.", "Eine Frau liest ein Buch im Garten."};
    const std::vector<std::string> tgt{"A man rides a bike.", "A woman reads a book in the garden."};
    const auto g = m_t->headGateGradients(src, tgt);
    const size_t heads = size_t(m_cfg.n_head) * size_t(m_cfg.encoderLayers() + 2 * m_cfg.decoderLayers());
    QCOMPARE(g.heads.size(), heads);
    QCOMPARE(g.per_pair.size(), size_t(2));
    QCOMPARE(g.per_pair[1].size(), heads);
    const auto forced = m_t->teacherForce(src, tgt);
    auto model = m_double->model();
    // The module by hand, not through TransformerImpl::attention (what the engine's gates use).
    auto moduleOf = [&](const attnlab::HeadRef& h) -> attnlab::model::MultiHeadAttention {
        if (h.kind == AttentionKind::EncoderSelf)
            return model->encoder->layer_stack[h.layer]->as<attnlab::model::EncoderLayer>()->slf_attn;
        auto layer = model->decoder->layer_stack[h.layer]->as<attnlab::model::DecoderLayer>();
        return h.kind == AttentionKind::DecoderSelf ? layer->slf_attn : layer->enc_attn;
    };
    const double eps = 1e-4;
    for (size_t p = 0; p < src.size(); ++p) {
        // The loss of the teacher-forced pass: minus the sum of its tokens' log-probabilities.
        QVERIFY(std::abs(g.loss[p] + forced[p].best.score) < 1e-4 * std::abs(g.loss[p]));
        for (size_t k = 0; k < g.heads.size(); k += 3) {
            const auto& h = g.heads[k];
            auto module = moduleOf(h);
            auto loss = [&](double gate) {
                auto keep = torch::ones({m_cfg.n_head}, torch::kFloat64);
                keep[h.head] = gate;
                module->head_keep = keep;
                double sum = 0;
                for (double lp : logProbs(forced[p])) sum -= lp;
                module->head_keep = torch::Tensor();
                return sum;
            };
            const double fd = (loss(1 + eps) - loss(1 - eps)) / (2 * eps);
            QVERIFY2(std::abs(g.per_pair[p][k] - std::abs(fd)) < 1e-3 * std::abs(fd) + 1e-6,
                     qPrintable(QString("pair %1 head %2: %3 vs %4")
                                    .arg(p)
                                    .arg(QString::fromStdString(attnlab::headName(h)))
                                    .arg(g.per_pair[p][k])
                                    .arg(fd)));
        }
    }
}

// Gradient x input of log p(chosen) - log p(alternative) at one step is the difference of two saliencies: that
// step's row for the translation, and for the translation with the alternative in the chosen piece's place (row t
// reads only the inputs up to t, which the two share). The same arithmetic summed otherwise: 1e-4 relative plus
// 1e-6. The two log-probabilities are the search's (the step's candidates), within float32's 1e-5.
void TestGradients::contrastiveIsSaliencyDifference() {
    const auto r = m_t->translate("Ein Mädchen spielt mit einem Ball im Park.");
    QVERIFY(r.best.ids.size() >= 3);
    const int step = 1;
    const auto& candidate = r.steps.at(step).candidates.at(1);  // the runner-up at that step
    QVERIFY(candidate.id != r.best.ids[step]);
    const auto c = m_t->contrastive(r, {step, candidate.piece});
    auto other = r;
    other.best.ids[step] = candidate.id;
    const auto s = m_t->saliency(r), t = m_t->saliency(other);
    QCOMPARE(c.saliency_source.size(), r.source_ids.size());
    QCOMPARE(c.saliency_target.size(), r.best.ids.size());
    double seen = 0;
    for (size_t j = 0; j < c.saliency_source.size(); ++j) {
        const double want = double(s.source[step][j]) - double(t.source[step][j]);
        QVERIFY2(std::abs(c.saliency_source[j] - want) < 1e-4 * std::abs(want) + 1e-6,
                 qPrintable(QString("source %1: %2 vs %3").arg(j).arg(c.saliency_source[j]).arg(want)));
        seen += std::abs(want);
    }
    for (size_t k = 0; k < c.saliency_target.size(); ++k) {
        const double want = double(s.target[step][k]) - double(t.target[step][k]);
        QVERIFY2(std::abs(c.saliency_target[k] - want) < 1e-4 * std::abs(want) + 1e-6,
                 qPrintable(QString("target %1: %2 vs %3").arg(k).arg(c.saliency_target[k]).arg(want)));
        if (k > size_t(step)) QCOMPARE(c.saliency_target[k], 0.0f);  // inputs the step never saw
    }
    QVERIFY(seen > 0);
    QCOMPARE(c.chosen, r.best.pieces[step]);
    QCOMPARE(c.query.alternative, candidate.piece);
    QVERIFY(std::abs(c.chosen_log_probability - r.best.token_log_probs[step]) < 1e-5);
    QVERIFY(std::abs(c.alternative_log_probability - std::log(double(candidate.probability))) < 1e-5);
    QVERIFY(c.alternative_log_probability < c.chosen_log_probability);
}

void TestGradients::contrastiveRefusedByMessage() {
    const auto r = m_t->translate("Ein Hund.");
    const int last = int(r.best.ids.size()) - 1;
    using attnlab::testing::messageOf;
    QCOMPARE(messageOf<attnlab::InputError>([&] {
                 m_t->contrastive(r, {last + 1, r.best.pieces[0]});
             }),
             QString("contrastive: step %1 is out of range: the translation has %1 pieces (0-based: 0..%2)")
                 .arg(last + 1)
                 .arg(last));
    QCOMPARE(messageOf<attnlab::InputError>([&] {
                 m_t->contrastive(r, {0, "no-such-piece"});
             }),
             QString("contrastive: 'no-such-piece' is not a piece of the target vocabulary"));
    QCOMPARE(messageOf<attnlab::InputError>([&] {
                 m_t->contrastive(r, {0, r.best.pieces[0]});
             }),
             QString("contrastive: '%1' is the piece chosen at step 0").arg(QString::fromStdString(r.best.pieces[0])));
    QCOMPARE(messageOf<attnlab::InputError>([&] {
                 m_t->contrastive(attnlab::TranslationResult{}, {0, "x"});
             }),
             QString("contrastive: the translation is empty"));
    QCOMPARE(messageOf<attnlab::InputError>([&] {
                 m_t->contrastive(r, {0, ""});
             }),
             QString("contrastive: no alternative piece was given (a piece of the target vocabulary, or a word)"));
}

// A SentencePiece vocabulary holds "▁hound" (a word's start) and "hound" (within a word) apart. A word typed in place
// of a piece that starts a word means the word-initial piece; typed in place of a piece within a word, the bare one;
// either way the other form where the vocabulary has only that one. The typed word of the chosen piece is refused,
// naming the piece.
void TestGradients::typedWordTakesThePieceOfItsPlace() {
    const attnlab::Tokenizer vocabulary(m_tokenizer);
    const std::string marker = "\xE2\x96\x81";
    auto startsWord = [&](const std::string& piece) { return piece.rfind(marker, 0) == 0; };
    std::string word;  // a word whose two pieces both exist
    int bare_id = -1, marked_id = -1, inner_id = -1;
    for (int id = 0; id < vocabulary.vocabSize() && bare_id < 0; ++id) {
        const std::string piece = vocabulary.idToPiece(id);
        if (!startsWord(piece) || piece.size() == marker.size()) continue;
        const int bare = vocabulary.pieceToId(piece.substr(marker.size()));
        if (vocabulary.idToPiece(bare) == piece.substr(marker.size()))
            word = piece.substr(marker.size()), bare_id = bare, marked_id = id;
    }
    QVERIFY2(bare_id >= 0, "the test vocabulary has no word in both forms");
    for (int id = 4; id < vocabulary.vocabSize() && inner_id < 0; ++id)
        if (!startsWord(vocabulary.idToPiece(id)) && id != bare_id && !vocabulary.isByte(id)) inner_id = id;
    auto r = m_t->translate("Ein Mädchen spielt mit einem Ball im Park.");
    int step = 0;  // a step whose chosen piece starts a word and is neither form
    while (step < int(r.best.ids.size()) &&
           (!startsWord(r.best.pieces[size_t(step)]) || r.best.ids[size_t(step)] == marked_id))
        ++step;
    QVERIFY(step < int(r.best.ids.size()));
    const auto typed = m_t->contrastive(r, {step, word});
    QCOMPARE(typed.alternative, marker + word);
    QCOMPARE(typed.query.alternative, word);
    const auto exact = m_t->contrastive(r, {step, marker + word});
    QCOMPARE(typed.alternative_log_probability, exact.alternative_log_probability);
    QCOMPARE(typed.saliency_source, exact.saliency_source);
    // Within a word: the chosen piece replaced by one that does not start a word (the pass is teacher-forced).
    auto inner = r;
    inner.best.ids[size_t(step)] = inner_id;
    QCOMPARE(m_t->contrastive(inner, {step, word}).alternative, word);
    // The chosen piece typed as a word.
    auto chosen = r;
    chosen.best.ids[size_t(step)] = marked_id;
    QCOMPARE(attnlab::testing::messageOf<attnlab::InputError>([&] {
                 m_t->contrastive(chosen, {step, word});
             }),
             QString::fromStdString("contrastive: '" + word + "' is '" + marker + word +
                                    "', the piece chosen at step " + std::to_string(step)));
}

// A pair's gradients do not depend on the pairs batched with it (one gate per pair and head): the
// two pairs together equal each alone (float32 with other padding: 1e-4 relative).
void TestGradients::gateGradientsArePerPair() {
    const std::vector<std::string> src{"Ein Hund.", "Ein kleines Kind spielt mit einem roten Ball im Sand."};
    const std::vector<std::string> tgt{"A dog.", "A small child plays with a red ball in the sand."};
    const auto both = m_t->headGateGradients(src, tgt);
    for (size_t p = 0; p < 2; ++p) {
        const auto alone = m_t->headGateGradients({src[p]}, {tgt[p]});
        for (size_t k = 0; k < alone.heads.size(); ++k)
            QVERIFY(std::abs(alone.per_pair[0][k] - both.per_pair[p][k]) < 1e-4 * alone.per_pair[0][k] + 1e-6);
    }
}

void TestGradients::errorsAreNamed() {
    try {
        m_t->headGateGradients({"Ein Hund.", "Eine Katze."}, {"A dog.", ""});
        QFAIL("no error for an empty target");
    } catch (const attnlab::InputError& e) {
        QVERIFY2(QString(e.what()).startsWith("pair 2: target:"), e.what());
    }
    try {
        m_t->headGateGradients({"Ein Hund."}, {"A dog.", "A cat."});
        QFAIL("no error for differing counts");
    } catch (const attnlab::InputError& e) {
        QCOMPARE(QString(e.what()), QString("1 sources but 2 targets"));
    }
    try {
        m_t->saliency(attnlab::TranslationResult{});
        QFAIL("no error for an empty translation");
    } catch (const attnlab::InputError& e) {
        QCOMPARE(QString(e.what()), QString("saliency: the translation is empty"));
    }
}

// Gates and embedding taps are off again after a call, and after one that failed: a translation
// after them equals one before. Saliency follows the translation's ablated heads.
void TestGradients::modelIsLeftAsItWas() {
    attnlab::DecodingOptions o;
    o.beam_size = 1;
    const auto before = m_t->translate("Eine Katze schläft auf dem Sofa.", o);
    m_t->headGateGradients({"Ein Hund."}, {"A dog."});
    m_t->saliency(before);
    try {
        m_t->headGateGradients({"Ein Hund."}, {""});
    } catch (const attnlab::InputError&) {
    }
    const auto after = m_t->translate("Eine Katze schläft auf dem Sofa.", o);
    QCOMPARE(after.best.ids, before.best.ids);
    QCOMPARE(after.cross, before.cross);
    attnlab::DecodingOptions ablated = o;
    ablated.ablate = {{AttentionKind::EncoderSelf, 0, 1}};
    auto off = before;  // the same tokens, read by the model with one head off
    off.ablated = ablated.ablate;
    QVERIFY(m_t->saliency(off).source != m_t->saliency(before).source);
}

QTEST_GUILESS_MAIN(TestGradients)
#include "tst_gradients.moc"
