// Translator end to end on a small random model: the result's pieces, attention maps and
// per-step candidates against independent computations; input errors; batches; progress.
#include "decoding/engine.h"
#include "fixtures.h"
#include "model/masks.h"
#include "package/package_io.h"
#include "random_model.h"

#include <attnlab/errors.h>
#include <attnlab/package.h>
#include <attnlab/translator.h>

#include <QtTest/QtTest>

#include <sys/stat.h>

#include <cmath>
#include <filesystem>
#include <functional>

using attnlab::DecodingOptions;
using attnlab::Translator;

class TestTranslator : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void resultShapesAndRows();
    void stepsMatchScore();
    void pieceProbabilitiesAreTheSearchs();
    void greedyEqualsBeamOne();
    void padAndBosAreNeverGenerated();
    void batchKeepsOrderAndMatchesSingle();
    void inputErrors();
    void unknownCharactersWarn();
    void progressAndCancel();
    void deviceAndOptions();
    void positionalTable();
    void forcedPrefixBeginsTheOutput();
    void forcingTheFreeOutputReproducesIt();
    void traceIsTheSearch();
    void ablatingNoHeadIsThePlainTranslation();
    void ablatingAHeadRemovesItsContribution();
    void libtorchErrorsNeverReachTheCaller();
    void hugeFiniteWeightsAreANumericError();
    void specialFileWhereTheModelShouldBeIsNamed();

private:
    QTemporaryDir m_dir;
    std::unique_ptr<Translator> m_t;
    std::unique_ptr<attnlab::decoding::Engine> m_engine;  // the same package, for internals
};

void TestTranslator::initTestCase() {
    const std::string tok = attnlab::testing::trainTokenizer(m_dir.path().toStdString(), 400);
    auto cfg = attnlab::testing::smallConfig(400);
    cfg.n_position = 40;
    attnlab::testing::writeRandomPackage(m_dir.path().toStdString() + "/pkg", tok, cfg);
    m_t = std::make_unique<Translator>(m_dir.path().toStdString() + "/pkg");
    m_engine = std::make_unique<attnlab::decoding::Engine>(m_dir.path().toStdString() + "/pkg",
                                                           attnlab::TranslatorOptions{"cpu"});
    // The default device, "auto": the GPU where LibTorch sees one (scripts/gpu_check.sh), else the CPU.
    QCOMPARE(m_t->info().device, std::string(attnlab::cudaAvailable() ? "cuda:0" : "cpu"));
    QVERIFY(m_t->info().load_seconds > 0);
}

void TestTranslator::resultShapesAndRows() {
    DecodingOptions o;
    o.max_length = 9;
    auto r = m_t->translate("Ein Mädchen spielt mit einem Ball.", o);
    const size_t S = r.source_pieces.size(), T = r.best.pieces.size();
    QCOMPARE(r.source_pieces.back(), std::string("</s>"));
    QCOMPARE(r.source_ids.size(), S);
    QCOMPARE(r.decoder_input_pieces.size(), T);
    QCOMPARE(r.decoder_input_pieces.front(), std::string("<s>"));
    QVERIFY(T >= 1 && T <= 9);
    for (const auto* maps : {&r.encoder_self, &r.decoder_self, &r.cross}) {
        QCOMPARE(maps->size(), size_t(2));        // layers
        QCOMPARE(maps->at(0).size(), size_t(4));  // heads
    }
    for (int l = 0; l < 2; ++l)
        for (int h = 0; h < 4; ++h) {
            const auto& e = r.encoder_self[l][h];
            const auto& d = r.decoder_self[l][h];
            const auto& c = r.cross[l][h];
            QCOMPARE(e.size(), S);
            QCOMPARE(e[0].size(), S);
            QCOMPARE(d.size(), T);
            QCOMPARE(d[0].size(), T);
            QCOMPARE(c.size(), T);
            QCOMPARE(c[0].size(), S);
            for (const auto* m : {&e, &d, &c})
                for (const auto& row : *m) {
                    double sum = 0;
                    for (float v : row) sum += v;
                    QVERIFY(std::abs(sum - 1.0) < 1e-5);
                }
            for (size_t i = 0; i < T; ++i)
                for (size_t j = i + 1; j < T; ++j) QCOMPARE(d[i][j], 0.0f);
        }
    // Independent computations of two maps from the weights: encoder layer 0 by hand (embedding
    // x sqrt(d_model) + the sinusoid table, layer norm, q/k projections, softmax(q.k / sqrt(d_k))),
    // and the cross-attention of the last step through the incremental decoder (step(), not the
    // full forward pass that analyse() uses).
    auto model = m_engine->model();
    torch::NoGradGuard g;
    std::vector<int64_t> src(r.source_ids.begin(), r.source_ids.end());
    auto src_t = torch::tensor(src).unsqueeze(0);
    const auto& cfg = model->config();
    auto x = model->encoder->embeddingWeight().index_select(0, src_t[0]) * std::sqrt(double(cfg.d_model));
    x = x + attnlab::model::sinusoidTable(cfg.n_position, cfg.d_model).slice(0, 0, int64_t(S));
    x = torch::layer_norm(x, {cfg.d_model}, model->encoder->layer_norm->weight, model->encoder->layer_norm->bias, 1e-6);
    auto layer0 = model->encoder->layer_stack->ptr(0);
    auto w_q = layer0->named_parameters()["slf_attn.w_qs.weight"],
         w_k = layer0->named_parameters()["slf_attn.w_ks.weight"];
    for (int h = 0; h < 4; ++h) {
        auto q = torch::mm(x, w_q.t()).slice(1, h * cfg.d_k, (h + 1) * cfg.d_k);
        auto k = torch::mm(x, w_k.t()).slice(1, h * cfg.d_k, (h + 1) * cfg.d_k);
        auto by_hand = torch::softmax(torch::mm(q, k.t()) / std::sqrt(double(cfg.d_k)), -1);
        for (size_t i = 0; i < S; ++i)
            for (size_t j = 0; j < S; ++j)
                QVERIFY2(std::abs(r.encoder_self[0][h][i][j] - by_hand[i][j].item<float>()) < 1e-5,
                         qPrintable(QString("encoder layer 0 head %1 [%2][%3]").arg(h).arg(i).arg(j)));
    }
    auto src_mask = attnlab::model::padMask(src_t, cfg.src_pad_idx);
    auto state = model->decoder->initState(model->encoder(src_t, src_mask), src_mask);
    std::vector<int64_t> trg{2};  // <s>
    for (size_t i = 0; i + 1 < T; ++i) trg.push_back(r.best.ids[i]);
    attnlab::model::Attentions last;
    for (size_t t = 0; t < T; ++t) {
        last = {};
        model->decoder->step(torch::tensor({trg[t]}), state, &last);
    }
    for (int l = 0; l < 2; ++l)
        for (int h = 0; h < 4; ++h)
            for (size_t j = 0; j < S; ++j)
                QVERIFY(std::abs(r.cross[l][h][T - 1][j] - last.cross[l][0][h][0][j].item<float>()) < 1e-5);
}

void TestTranslator::stepsMatchScore() {
    DecodingOptions o;
    o.beam_size = 4;
    o.max_length = 10;
    o.top_k_candidates = 5;
    auto r = m_t->translate("Zwei Männer arbeiten auf der Baustelle.", o);
    QCOMPARE(r.steps.size(), r.best.ids.size());
    double sum = 0;
    for (size_t i = 0; i < r.steps.size(); ++i) {
        const auto& s = r.steps[i];
        QCOMPARE(s.chosen_id, r.best.ids[i]);
        QCOMPARE(s.candidates.size(), size_t(5));
        for (size_t k = 1; k < s.candidates.size(); ++k)
            QVERIFY(s.candidates[k - 1].probability >= s.candidates[k].probability);
        QVERIFY(s.candidates[0].probability >= s.chosen_probability);
        sum += std::log(double(s.chosen_probability));
    }
    // The search's score is the sum of the chosen tokens' log-probabilities.
    QVERIFY2(std::abs(sum - r.best.score) < 1e-3, qPrintable(QString("%1 vs %2").arg(sum).arg(r.best.score)));
    QCOMPARE(r.nbest.size(), size_t(1));
    QCOMPARE(r.best.text, r.nbest[0].text);
}

void TestTranslator::pieceProbabilitiesAreTheSearchs() {
    // For every search: the per-piece log-probabilities add up to the hypothesis's score (the
    // search's own numbers: the same additions, only the order of the sum differs, 1e-9), and
    // their exp equals the probability of the chosen piece in an independent teacher-forced pass
    // over the whole output (float32 softmax against the search's log_softmax over cached keys:
    // 1e-4 absolute). The words' probabilities are the products of their pieces'.
    for (int beam : {1, 4}) {
        for (bool reference : {false, true}) {
            if (reference && beam == 1) continue;
            DecodingOptions o;
            o.beam_size = beam;
            o.reference_beam = reference;
            o.max_length = 12;
            o.top_k_candidates = 1;
            const auto r = m_t->translate("Ein Kind springt in einen See.", o);
            const QString what = QString("beam %1%2").arg(beam).arg(reference ? " (reference)" : "");
            QCOMPARE(r.best.token_log_probs.size(), r.best.ids.size());
            double sum = 0;
            for (size_t i = 0; i < r.steps.size(); ++i) {
                sum += r.best.token_log_probs[i];
                QVERIFY2(std::abs(std::exp(r.best.token_log_probs[i]) - r.steps[i].chosen_probability) < 1e-4,
                         qPrintable(what));
            }
            // The reference search keeps adding after </s>, so its score is not the sum.
            if (!reference) QVERIFY2(std::abs(sum - r.best.score) < 1e-9, qPrintable(what));
            QVERIFY(std::abs(r.confidence.mean_log_prob - sum / double(r.steps.size())) < 1e-12);
            QVERIFY(std::abs(r.confidence.probability - std::exp(r.confidence.mean_log_prob)) < 1e-12);
            QVERIFY(!r.confidence.calibrated && !r.confidence.low);  // this package has no confidence.json
            int pieces = 0;
            for (const auto& w : r.words) {
                double product = 1;
                for (int i = w.first_piece; i < w.first_piece + w.piece_count; ++i)
                    product *= std::exp(r.best.token_log_probs[i]);
                QVERIFY(std::abs(product - w.probability) < 1e-12);
                QCOMPARE(w.first_piece, pieces);
                pieces += w.piece_count;
            }
            const bool ends = r.best.finished;
            QCOMPARE(size_t(pieces), r.best.ids.size() - (ends ? 1 : 0));  // </s> belongs to no word
        }
    }
}

void TestTranslator::greedyEqualsBeamOne() {
    // Greedy search (the translator's path for beam 1) against beam search run with K = 1 on the
    // same source: the same tokens and, summed in the same order, the same score.
    DecodingOptions greedy;
    greedy.beam_size = 1;
    greedy.max_length = 12;
    auto model = m_engine->model();
    torch::NoGradGuard g;
    for (const char* s : {"Der Hund läuft.", "Eine Frau hält ihre Hände vor dem Gebäude."}) {
        auto a = m_t->translate(s, greedy);
        auto src = torch::tensor(std::vector<int64_t>(a.source_ids.begin(), a.source_ids.end())).unsqueeze(0);
        auto stepper = attnlab::decoding::makeStepper(attnlab::decoding::StepperKind::Full, model, src);
        auto so = m_engine->searchOptions(greedy, {a.source_ids.size()});
        const auto beam = attnlab::decoding::beamSearch(*stepper, 1, so);
        const std::vector<int64_t> ids(a.best.ids.begin(), a.best.ids.end());
        QCOMPARE(beam[0][0].tokens, ids);
        QVERIFY(std::abs(beam[0][0].score - a.best.score) < 1e-4);
    }
}

void TestTranslator::padAndBosAreNeverGenerated() {
    // A model that prefers pad (id 0) above everything and <s> (id 2) next, at every step: the
    // last decoder layer's layer norm outputs a constant vector b (weight 0, bias b), and the
    // untied projection's rows for pad and <s> are 10 b and 9 b, every other row small.
    const std::string dir = m_dir.path().toStdString();
    auto cfg = attnlab::testing::smallConfig(400);
    cfg.trg_emb_prj_weight_sharing = false;
    cfg.n_position = 40;
    auto m = attnlab::testing::randomModel(cfg, 11);
    {
        torch::NoGradGuard g;
        auto params = m->named_parameters();
        auto b = torch::linspace(-1, 1, cfg.d_model);
        params["decoder.layer_stack.1.pos_ffn.layer_norm.weight"].zero_();
        params["decoder.layer_stack.1.pos_ffn.layer_norm.bias"].copy_(b);
        auto& w = params["trg_word_prj.weight"];
        w.mul_(0.01);
        w[0].copy_(b * 10);
        w[2].copy_(b * 9);
    }
    // Unblocked, the search does pick pad: the model really favours it.
    {
        torch::NoGradGuard g;
        auto src = torch::tensor(std::vector<int64_t>{40, 41, 42, 3}).unsqueeze(0);
        auto stepper = attnlab::decoding::makeStepper(attnlab::decoding::StepperKind::Cached, m, src);
        attnlab::decoding::SearchOptions raw;
        raw.beam_size = 1;
        raw.max_lengths = {5};
        QCOMPARE(attnlab::decoding::greedySearch(*stepper, 1, raw)[0][0].tokens.front(), int64_t(0));
    }
    const std::string pkg = dir + "/favours-pad";
    attnlab::package::savePackage(pkg, attnlab::testing::packageConfig(cfg), m, dir + "/spm.model");
    Translator t(pkg, {attnlab::testing::testDevice()});
    for (int beam : {1, 3}) {
        DecodingOptions o;
        o.beam_size = beam;
        o.max_length = 6;
        const auto r = t.translate("Ein Hund läuft.", o);
        QCOMPARE(r.best.ids.size(), size_t(6));
        for (int id : r.best.ids)
            QVERIFY2(id != 0 && id != 2, qPrintable(QString("beam %1 generated id %2").arg(beam).arg(id)));
        // The maps are those of the searched tokens: every decoder self-attention row covers
        // the whole prefix (a generated pad would have been masked out of later rows).
        for (size_t i = 0; i < r.best.ids.size(); ++i)
            for (size_t j = 0; j <= i; ++j) QVERIFY(r.decoder_self[0][0][i][j] > 0.0f);
    }
}

void TestTranslator::batchKeepsOrderAndMatchesSingle() {
    const std::vector<std::string> s = {"Ein Mann.", "Zwei mädchen spielt mit einem großen ball im garten.",
                                        "Die Katze schläft."};
    DecodingOptions o;
    o.beam_size = 3;
    o.max_length = 10;
    o.max_batch_size = 2;
    auto batch = m_t->translateBatch(s, o);
    QCOMPARE(batch.size(), s.size());
    for (size_t i = 0; i < s.size(); ++i) {
        auto single = m_t->translate(s[i], o);
        QCOMPARE(batch[i].source_text, s[i]);
        QCOMPARE(batch[i].best.ids, single.best.ids);
        QVERIFY(std::abs(batch[i].best.score - single.best.score) < 1e-4);
    }
}

void TestTranslator::inputErrors() {
    auto expect = [&](const std::string& s, const QString& needle) {
        try {
            m_t->translate(s);
            QFAIL("no exception");
        } catch (const attnlab::InputError& e) {
            QVERIFY2(QString(e.what()).contains(needle), e.what());
        }
        const auto why = m_t->inputProblem(s);
        QVERIFY(why && QString::fromStdString(*why).contains(needle));
    };
    expect("", "the sentence is empty");
    expect("   \t ", "the sentence is empty");
    std::string longer;
    for (int i = 0; i < 60; ++i) longer += "Hund ";
    expect(longer, "this model accepts at most 40 (n_position)");
    expect(std::string(100000, 'a'), "at most 65536 are accepted");
    try {
        m_t->translateBatch({"Ein Hund.", ""});
        QFAIL("no exception");
    } catch (const attnlab::InputError& e) {
        QVERIFY2(QString(e.what()).startsWith("sentence 2: the sentence is empty"), e.what());
    }
    QVERIFY(!m_t->inputProblem("Ein Hund."));
}

void TestTranslator::unknownCharactersWarn() {
    // Characters the vocabulary lacks are left out and named; the known part translates exactly as
    // the sentence without them (pieces, tokens, score and maps).
    DecodingOptions o;
    o.max_length = 5;
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"Der Hund 🐕 bellt.", "Der Hund bellt."},
        {"😀 Ein Hund 中文 läuft.", "Ein Hund läuft."},
        {"Ein👍Mann.", "Ein Mann."},
    };
    for (const auto& [with, without] : cases) {
        auto r = m_t->translate(with, o), plain = m_t->translate(without, o);
        QCOMPARE(r.warnings.size(), size_t(1));
        QVERIFY2(QString::fromStdString(r.warnings[0]).contains("left out of the translation"), r.warnings[0].c_str());
        QCOMPARE(r.source_text, with);
        QCOMPARE(r.source_pieces, plain.source_pieces);
        QCOMPARE(r.best.ids, plain.best.ids);
        QCOMPARE(r.best.score, plain.best.score);
        QCOMPARE(r.cross, plain.cross);
        QVERIFY(plain.warnings.empty());
    }
    auto r = m_t->translate("😀 Ein Hund 中文 läuft.", o);
    QVERIFY2(QString::fromStdString(r.warnings[0]).endsWith(QString::fromUtf8(": 😀 中 文")), r.warnings[0].c_str());
    // Nothing known at all: an error that says so, also from inputProblem().
    const auto why = m_t->inputProblem("😀 中文");
    QVERIFY(why && QString::fromStdString(*why).contains("no character this model knows"));
    QVERIFY_EXCEPTION_THROWN(m_t->translate("😀 中文"), attnlab::InputError);
}

void TestTranslator::progressAndCancel() {
    DecodingOptions o;
    o.max_length = 6;
    o.max_length_ratio = 0;
    std::vector<attnlab::StepProgress> seen;
    m_t->translate("Ein Hund.", o, [&](const attnlab::StepProgress& p) -> bool {
        seen.push_back(p);
        return true;
    });
    QVERIFY(seen.size() >= 1 && seen.size() <= 6);
    for (size_t i = 0; i < seen.size(); ++i) {
        QCOMPARE(seen[i].step, int(i));
        QCOMPARE(seen[i].max_steps, 6);
        QCOMPARE(seen[i].sentences_total, 1);
    }
    QVERIFY_THROWS_EXCEPTION(attnlab::CancelledError,
                             m_t->translate("Ein Hund.", o, [](const attnlab::StepProgress&) { return false; }));
}

void TestTranslator::deviceAndOptions() {
    if (!attnlab::cudaAvailable()) {
        try {
            Translator t(m_dir.path().toStdString() + "/pkg", {"cuda"});
            QFAIL("no exception");
        } catch (const attnlab::DeviceError& e) {
            QVERIFY2(QString(e.what()).contains("sees no CUDA device"), e.what());
        }
    } else {
        // On a GPU (scripts/gpu_check.sh): a device past the last one is refused by name, and the
        // GPU's translation is the CPU's (a random model's candidates are far apart compared with
        // the ~1e-6 that cuBLAS and the CPU's kernels differ by).
        try {
            Translator t(m_dir.path().toStdString() + "/pkg", {"cuda:99"});
            QFAIL("no exception");
        } catch (const attnlab::DeviceError& e) {
            QVERIFY2(QString(e.what()).contains("device 'cuda:99' does not exist"), e.what());
        }
        Translator gpu(m_dir.path().toStdString() + "/pkg", {"cuda"}),
            cpu(m_dir.path().toStdString() + "/pkg", {"cpu"});
        QCOMPARE(gpu.info().device, std::string("cuda"));
        DecodingOptions o;
        o.beam_size = 3;
        o.max_length = 12;
        for (const char* s : {"Ein Hund läuft über die Wiese.", "Zwei Kinder spielen."})
            QCOMPARE(gpu.translate(s, o).best.ids, cpu.translate(s, o).best.ids);
    }
    QVERIFY_THROWS_EXCEPTION(attnlab::ConfigError, Translator(m_dir.path().toStdString() + "/pkg", {"tpu"}));
    DecodingOptions bad;
    bad.nbest = 7;
    bad.beam_size = 5;
    try {
        m_t->translate("Ein Hund.", bad);
        QFAIL("no exception");
    } catch (const attnlab::ConfigError& e) {
        QVERIFY2(QString(e.what()).contains("nbest = 7 is out of range [1, 5]"), e.what());
    }
}

void TestTranslator::positionalTable() {
    auto t = m_t->positionalTable();
    QCOMPARE(t.size(), size_t(40));
    QCOMPARE(t[0].size(), size_t(32));
    QVERIFY(std::abs(t[17][6] - std::sin(17 / std::pow(10000.0, 6.0 / 32))) < 1e-6);
}

void TestTranslator::forcedPrefixBeginsTheOutput() {
    // The output begins with the forced text; each forced token keeps the model's own
    // log-probability (the teacher-forced pass's probability of that token, 1e-4 as above).
    for (int beam : {1, 4}) {
        DecodingOptions o;
        o.beam_size = beam;
        o.max_length = 10;
        o.top_k_candidates = 1;
        o.force_prefix = "Hund Katze";
        const auto r = m_t->translate("Eine Frau liest ein Buch.", o);
        QVERIFY2(r.best.text.rfind("Hund Katze", 0) == 0, r.best.text.c_str());
        const auto forced = m_engine->tokenizer().encode("Hund Katze").ids;
        QCOMPARE(r.forced_tokens, int(forced.size()));
        QVERIFY(std::equal(forced.begin(), forced.end(), r.best.ids.begin()));
        for (int i = 0; i < r.forced_tokens; ++i)
            QVERIFY(std::abs(std::exp(r.best.token_log_probs[i]) - r.steps[i].chosen_probability) < 1e-4);
        QVERIFY(int(r.best.ids.size()) > r.forced_tokens);  // the model continues
        QCOMPARE(r.forced_text, std::string("Hund Katze"));
        // The confidence is the model's own choices': the forced pieces are not counted.
        double sum = 0;
        for (size_t i = size_t(r.forced_tokens); i < r.best.token_log_probs.size(); ++i)
            sum += r.best.token_log_probs[i];
        const double free_mean = sum / double(r.best.token_log_probs.size() - size_t(r.forced_tokens));
        QVERIFY2(std::abs(r.confidence.mean_log_prob - free_mean) < 1e-12,
                 qPrintable(QString("%1 against %2").arg(r.confidence.mean_log_prob).arg(free_mean)));
    }
    // A prefix longer than the length cap still fits: the cap grows to it.
    DecodingOptions tight;
    tight.max_length = 2;
    tight.force_prefix = "Hund Katze Maus Hund";
    const auto r = m_t->translate("Ein Hund.", tight);
    QVERIFY(r.best.text.rfind("Hund Katze Maus Hund", 0) == 0);
    QCOMPARE(int(r.best.ids.size()), r.forced_tokens + 1);
    // Not with the reference's search, whose code has no prefix.
    DecodingOptions ref;
    ref.reference_beam = true;
    ref.force_prefix = "Hund";
    QVERIFY_THROWS_EXCEPTION(attnlab::ConfigError, m_t->translate("Ein Hund.", ref));
}

void TestTranslator::forcingTheFreeOutputReproducesIt() {
    // Greedy search forced through the first k tokens of its own free output makes the same
    // choices: the forced tokens are the argmax anyway and keep the same log-probabilities (the
    // same computation), so the tokens and the score are the same.
    DecodingOptions greedy;
    greedy.beam_size = 1;
    greedy.max_length = 12;
    auto model = m_engine->model();
    torch::NoGradGuard g;
    // The engine's own translation (on the CPU), not m_t's, which may run on the GPU: the premise
    // is the same computation.
    const auto free = m_engine->translate({"Eine Frau hält ihre Hände vor dem Gebäude."}, greedy).at(0);
    const std::vector<int64_t> ids(free.best.ids.begin(), free.best.ids.end());
    for (size_t k : {size_t(1), size_t(3), ids.size() - 1}) {
        auto src = torch::tensor(std::vector<int64_t>(free.source_ids.begin(), free.source_ids.end())).unsqueeze(0);
        auto stepper = attnlab::decoding::makeStepper(attnlab::decoding::StepperKind::Cached, model, src);
        auto so = m_engine->searchOptions(greedy, {free.source_ids.size()});
        so.forced.assign(ids.begin(), ids.begin() + k);
        const auto forced = attnlab::decoding::greedySearch(*stepper, 1, so);
        QCOMPARE(forced[0][0].tokens, ids);
        QVERIFY(std::abs(forced[0][0].score - free.best.score) < 1e-9);
    }
}

void TestTranslator::traceIsTheSearch() {
    for (int beam : {1, 4}) {
        DecodingOptions o;
        o.beam_size = beam;
        o.max_length = 12;
        const auto plain = m_t->translate("Ein Kind springt in einen See.", o);
        o.record_trace = true;
        const auto r = m_t->translate("Ein Kind springt in einen See.", o);
        // A trace never changes the translation.
        QCOMPARE(r.best.ids, plain.best.ids);
        QCOMPARE(r.best.score, plain.best.score);
        QVERIFY(plain.trace.empty());
        // The search may go on after the best hypothesis finished (others are longer).
        QVERIFY(r.trace.size() >= r.best.ids.size());
        if (beam == 1) QCOMPARE(r.trace.size(), r.best.ids.size());
        for (size_t t = 0; t < r.trace.size(); ++t) {
            const auto& hyps = r.trace[t].hypotheses;
            QVERIFY(!hyps.empty());
            int kept = 0;
            for (size_t k = 0; k < hyps.size(); ++k) {
                const auto& h = hyps[k];
                if (k > 0) QVERIFY(hyps[k - 1].score >= h.score);  // best first
                QVERIFY(!(h.finished && h.pruned));
                if (!h.finished && !h.pruned) ++kept;
                if (h.finished) QVERIFY2(int(k) < beam, "only the beam's top K may finish");
                if (t == 0) {
                    QCOMPARE(h.parent, -1);
                    QVERIFY(std::abs(h.score - h.log_prob) < 1e-12);
                } else {
                    QVERIFY(h.parent >= 0 && h.parent < int(r.trace[t - 1].hypotheses.size()));
                    const auto& p = r.trace[t - 1].hypotheses[h.parent];
                    QVERIFY2(!p.finished && !p.pruned, "only live hypotheses are extended");
                    QVERIFY(std::abs(p.score + h.log_prob - h.score) < 1e-9);
                }
            }
            QVERIFY(kept <= beam);
            if (beam == 1) QCOMPARE(hyps.size(), size_t(1));
        }
        // The best hypothesis is a path through the trace whose log-probabilities sum to its score.
        const int end = int(r.best.ids.size()) - 1;
        const auto& last = r.trace[end].hypotheses;
        int node = -1;
        for (size_t k = 0; k < last.size(); ++k)
            if (last[k].score == r.best.score && last[k].token_id == r.best.ids.back() && !last[k].pruned)
                node = int(k);
        QVERIFY(node >= 0);
        QCOMPARE(last[node].finished, r.best.finished);
        double sum = 0;
        for (int t = end; t >= 0; --t) {
            const auto& h = r.trace[t].hypotheses[node];
            QCOMPARE(h.token_id, r.best.ids[t]);
            sum += h.log_prob;
            node = h.parent;
        }
        QCOMPARE(node, -1);
        QVERIFY(std::abs(sum - r.best.score) < 1e-9);
    }
}

void TestTranslator::ablatingNoHeadIsThePlainTranslation() {
    DecodingOptions o;
    o.max_length = 10;
    const auto plain = m_t->translate("Ein Kind springt in einen See.", o);
    o.ablate = attnlab::parseHeadList("");
    const auto none = m_t->translate("Ein Kind springt in einen See.", o);
    QCOMPARE(none.best.ids, plain.best.ids);
    QCOMPARE(none.best.score, plain.best.score);  // bit for bit: the same computation
    QCOMPARE(none.cross, plain.cross);
    QVERIFY(none.ablated.empty());
}

void TestTranslator::ablatingAHeadRemovesItsContribution() {
    // Encoder layer 0, head 2 switched off: that layer's self-attention output must equal, computed
    // by hand from the weights, layer_norm(x + fc(heads with head 2's block zeroed)). The module's
    // own forward with the gate set is compared with that, 1e-5 (float32, same operations).
    auto model = m_engine->model();
    torch::NoGradGuard g;
    auto attn = model->encoder->layer_stack[0]->as<attnlab::model::EncoderLayer>()->slf_attn;
    torch::manual_seed(5);
    auto x = torch::randn({1, 6, model->config().d_model});
    const int64_t H = attn->n_head, dk = attn->d_k, dv = attn->d_v;
    auto split = [&](const torch::Tensor& t, int64_t d) { return t.view({1, 6, H, d}).transpose(1, 2); };
    auto q = split(torch::matmul(x, attn->w_qs->weight.t()), dk);
    auto k = split(torch::matmul(x, attn->w_ks->weight.t()), dk);
    auto v = split(torch::matmul(x, attn->w_vs->weight.t()), dv);
    auto w = torch::softmax(torch::matmul(q / std::sqrt(double(dk)), k.transpose(2, 3)), -1);
    auto heads = torch::matmul(w, v);  // [1,H,6,dv]
    heads.select(1, 2).zero_();
    auto joined = heads.transpose(1, 2).reshape({1, 6, H * dv});
    auto expected = attn->layer_norm(x + torch::matmul(joined, attn->fc->weight.t()));
    attn->head_keep = torch::ones({H});
    attn->head_keep[2] = 0.0;
    auto [got, maps] = attn->forward(x, x, x);
    attn->head_keep = torch::Tensor();
    QVERIFY((got - expected).abs().max().item<double>() < 1e-5);
    auto [plain, plain_maps] = attn->forward(x, x, x);
    QVERIFY((plain - expected).abs().max().item<double>() > 1e-4);  // the head mattered
    QVERIFY(torch::equal(maps, plain_maps));                        // its map is still computed

    // Through the translator: reported, every head back on afterwards, cached = full recomputation.
    DecodingOptions o;
    o.max_length = 10;
    const auto before = m_t->translate("Ein Kind springt in einen See.", o);
    o.ablate = attnlab::parseHeadList("encoder:0:2, cross:1:3");
    const auto r = m_t->translate("Ein Kind springt in einen See.", o);
    QVERIFY(r.best.score != before.best.score);  // the two heads took part
    QCOMPARE(r.ablated.size(), size_t(2));
    QVERIFY(r.ablated[1] == (attnlab::HeadRef{attnlab::AttentionKind::Cross, 1, 3}));
    const auto full =
        m_engine->translate({"Ein Kind springt in einen See."}, o, {}, attnlab::decoding::StepperKind::Full);
    QCOMPARE(full[0].best.ids, r.best.ids);
    o.ablate.clear();
    const auto after = m_t->translate("Ein Kind springt in einen See.", o);  // the gates are gone
    QCOMPARE(after.best.ids, before.best.ids);
    QCOMPARE(after.best.score, before.best.score);
    // Out of range and malformed heads are named.
    o.ablate = attnlab::parseHeadList("cross:2:0");
    try {
        m_t->translate("Ein Hund.", o);
        QFAIL("no error");
    } catch (const attnlab::InputError& e) {
        QCOMPARE(std::string(e.what()), std::string("ablate cross:2:0: layer 2 is out of range (0..1)"));
    }
    try {
        attnlab::parseHeadList("cross:1:0,self:0:1");
        QFAIL("no error");
    } catch (const attnlab::ConfigError& e) {
        QVERIFY2(std::string(e.what()).rfind("'self:0:1' is not kind:layer:head", 0) == 0, e.what());
    }
}

// A result whose ids are outside the vocabulary (a file edited by hand, a result of another model)
// makes LibTorch fail inside the engine (index out of range in the embedding); every entry point
// reports it as an attnlab::Error naming the operation, never as c10::Error. (masks() reads only where
// the padding is, so such ids are no problem for it.)
void TestTranslator::libtorchErrorsNeverReachTheCaller() {
    auto r = m_t->translate("Ein Hund.", {});
    for (int& id : r.source_ids) id = 1 << 24;
    for (int& id : r.best.ids) id = 1 << 24;
    const std::vector<std::function<void()>> calls{
        [&] { (void)m_t->tokenInside(r, false, 0); },
        [&] {
            (void)m_t->explain(r, {attnlab::AttentionKind::Cross, 0, 0, 0, 0});
        },
        [&] { (void)m_t->teacherForce(std::vector<attnlab::TranslationResult>{r}); },
    };
    for (size_t i = 0; i < calls.size(); ++i) {
        try {
            calls[i]();
            QFAIL(qPrintable(QString("call %1 accepted ids outside the vocabulary").arg(i)));
        } catch (const attnlab::Error& e) {
            // e.g. "explaining a token: LibTorch failed: select(): index 16777216 out of range ..."
            QVERIFY2(dynamic_cast<const attnlab::InternalError*>(&e), e.what());
            QVERIFY2(std::string(e.what()).find(": LibTorch failed: ") != std::string::npos, e.what());
        } catch (const std::exception& e) {
            QFAIL(qPrintable(QString("call %1 let a non-attnlab exception through: %2").arg(i).arg(e.what())));
        }
    }
}

void TestTranslator::hugeFiniteWeightsAreANumericError() {
    // 3e38 is finite in float32, so the package loads; the values it multiplies overflow. Greedy
    // search printed an empty translation and beam search said "no hypothesis": both now name the
    // step and the first sub-layer whose output is not finite.
    auto cfg = attnlab::testing::smallConfig(400);
    cfg.n_position = 40;
    const std::string tok = m_dir.path().toStdString() + "/spm.model";
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"encoder.layer_stack.1.slf_attn.w_vs.weight", "the encoder's layer 2 self-attention"},
        {"decoder.layer_stack.0.pos_ffn.w_1.weight", "the decoder's layer 1 feed-forward"}};
    for (size_t c = 0; c < cases.size(); ++c) {
        const auto pkg = attnlab::testing::writeHugeWeightPackage(
            m_dir.path().toStdString() + "/huge" + std::to_string(c), tok, cfg, cases[c].first);
        Translator t(pkg, {attnlab::testing::testDevice()});
        for (int beam : {1, 4}) {
            DecodingOptions o;
            o.beam_size = beam;
            try {
                const auto r = t.translate("Ein Hund läuft über die Straße.", o);
                QFAIL(qPrintable(QString("beam %1: translated to '%2'").arg(beam).arg(r.best.text.c_str())));
            } catch (const attnlab::NumericError& e) {
                QCOMPARE(std::string(e.what()),
                         "decoding step 1: " + cases[c].second + " produced non-finite values (weights too large?)");
            }
        }
    }
}

// A FIFO (or a folder) where a CTranslate2 model's model.bin or a package's weights should be is named
// as such, without opening it (a FIFO's open would wait for a writer): a FIFO model.bin was taken for
// "no CTranslate2 model here" and reported as "config.json: missing file".
void TestTranslator::specialFileWhereTheModelShouldBeIsNamed() {
    namespace fs = std::filesystem;
    using attnlab::testing::messageOf;
    const std::string root = m_dir.path().toStdString();
    const std::string fifo = root + "/fifo-ct2", folder = root + "/folder-ct2", package = root + "/fifo-weights";
    fs::create_directories(fifo);
    fs::create_directories(folder + "/model.bin");
    QVERIFY(::mkfifo((fifo + "/model.bin").c_str(), 0600) == 0);
    const QString is_fifo = QString::fromStdString(fifo + "/model.bin: is a FIFO (named pipe), not a regular file");
    QCOMPARE(messageOf<attnlab::PackageError>([&] { Translator t(fifo); }), is_fifo);
    QCOMPARE(messageOf<attnlab::PackageError>([&] { attnlab::importMarianModel(fifo, root + "/fifo-import"); }),
             is_fifo);
    QCOMPARE(messageOf<attnlab::PackageError>([&] { Translator t(folder); }),
             QString::fromStdString(folder + "/model.bin: is a folder, not a file"));
    fs::copy(root + "/pkg", package, fs::copy_options::recursive);
    fs::remove(package + "/model.safetensors");
    QVERIFY(::mkfifo((package + "/model.safetensors").c_str(), 0600) == 0);
    QCOMPARE(messageOf<attnlab::PackageError>([&] { Translator t(package); }),
             QString::fromStdString(package + "/model.safetensors: is a FIFO (named pipe), not a regular file"));
}

QTEST_APPLESS_MAIN(TestTranslator)
#include "tst_translator.moc"
