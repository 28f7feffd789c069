// Training: the loss and the schedule against independent computations, a tiny model learning to
// copy, exact resume, and the errors of bad corpora and checkpoints.
#include "data/corpus.h"
#include "decoding/engine.h"
#include "decoding/search.h"
#include "fixtures.h"
#include "random_model.h"
#include "training/objective.h"

#include <attnlab/attention_history.h>
#include <attnlab/confidence.h>
#include <attnlab/device.h>
#include <attnlab/errors.h>
#include <attnlab/package.h>
#include <attnlab/run_layout.h>
#include <attnlab/toy.h>
#include <attnlab/trainer.h>
#include <attnlab/translator.h>

#include <QtTest/QtTest>

#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <type_traits>

namespace fs = std::filesystem;
using namespace attnlab;

class TestTraining : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void labelSmoothedLossMatchesDenseComputation();
    void learningRateSchedule();
    void finalDecayReachesTheLastStep();
    void initFromStartsAtThePackage();
    void batchesRespectTokenBudget();
    void tinyModelLearnsToCopy();
    void resumeReproducesUninterruptedRun();
    void resumeAcrossEpochAndValidation();
    void resumeAtEpochEndKeepsTheLog();
    void resumeRefusesOtherData();
    void averageIsTheMean();
    void corpusErrors();
    void checkpointErrors();
    void optionErrors();
    void trainsOnTheTestDevice();
    void resumesOnTheTestDevice();
    void historyHoldsTheCheckpointsMaps();
    void resumedHistoryEqualsAnUninterruptedOne();
    void initFromContinuesTheHistory();
    void staleStagingIsRemoved();
    void toyGeneratorFollowsEachTasksRule();
    void toyReverseIsLearnedWithinItsSteps();
    void historyEndsAtTheRunsLastStep();

private:
    TrainingOptions smallRun(const std::string& out) const;
    QTemporaryDir m_dir;
    std::string m_tok, m_data;
};

void TestTraining::initTestCase() {
    m_tok = testing::trainTokenizer(m_dir.path().toStdString(), 400);
    m_data = m_dir.path().toStdString() + "/data";
    fs::create_directories(m_data);
    const auto de = testing::corpusLines(240, 3), en = testing::corpusLines(240, 4);
    auto write = [&](const std::string& name, const std::vector<std::string>& lines, size_t from, size_t to) {
        std::ofstream f(m_data + "/" + name);
        for (size_t i = from; i < to; ++i) f << lines[i] << "\n";
    };
    write("train.de", de, 0, 200);
    write("train.en", en, 0, 200);
    write("val.de", de, 200, 240);
    write("val.en", en, 200, 240);
}

TrainingOptions TestTraining::smallRun(const std::string& out) const {
    TrainingOptions o;
    o.data_dir = m_data;
    o.output_dir = out;
    o.tokenizer = m_tok;
    o.model = testing::smallConfig(400);
    o.model.n_position = 64;
    o.max_tokens_per_sentence = 60;
    o.batch_tokens = 300;
    o.save_every_minutes = 0;
    o.log_every_steps = 2;
    o.valid_bleu_sentences = 5;
    o.warmup_steps = 4;
    o.lr_mul = 1.0;
    o.threads = 1;
    return o;
}

void TestTraining::labelSmoothedLossMatchesDenseComputation() {
    torch::manual_seed(3);
    const int64_t V = 11, pad = 0;
    auto logits = torch::randn({7, V}, torch::kFloat64).to(torch::kFloat32);
    auto gold = torch::tensor({3, 5, 0, 10, 1, 0, 7});
    for (double eps : {0.0, 0.1, 0.3}) {
        auto r = training::labelSmoothedLoss(logits, gold, eps, pad);
        // The reference's cal_loss: dense one-hot, gold 1-eps, others eps/(V-1), pad rows dropped.
        auto one_hot = torch::zeros({7, V}, torch::kFloat64).scatter_(1, gold.unsqueeze(1), 1.0);
        auto smoothed = one_hot * (1 - eps) + (1 - one_hot) * eps / double(V - 1);
        auto logp = torch::log_softmax(logits.to(torch::kFloat64), 1);
        auto per = -(smoothed * logp).sum(1);
        double expected = 0;
        int64_t tokens = 0;
        for (int64_t i = 0; i < 7; ++i)
            if (gold[i].item<int64_t>() != pad) {
                expected += per[i].item<double>();
                ++tokens;
            }
        QVERIFY2(std::abs(r.loss_sum.item<double>() - expected) < 1e-4,
                 qPrintable(QString("eps %1: %2 vs %3").arg(eps).arg(r.loss_sum.item<double>()).arg(expected)));
        QCOMPARE(r.tokens, tokens);
        int64_t correct = 0;
        for (int64_t i = 0; i < 7; ++i)
            correct += gold[i].item<int64_t>() != pad && logits[i].argmax().item<int64_t>() == gold[i].item<int64_t>();
        QCOMPARE(r.correct, correct);

        // Gradient: autograd through the dense formula (pad rows dropped, mean over tokens).
        auto x1 = logits.clone().requires_grad_(true);
        auto r1 = training::labelSmoothedLoss(x1, gold, eps, pad);
        (r1.loss_sum / double(r1.tokens) * 2.5).backward();
        auto x2 = logits.to(torch::kFloat64).requires_grad_(true);
        auto keep = gold.ne(pad).to(torch::kFloat64);
        auto dense = (-(smoothed * torch::log_softmax(x2, 1)).sum(1) * keep).sum() / double(tokens) * 2.5;
        dense.backward();
        QVERIFY2(torch::allclose(x1.grad().to(torch::kFloat64), x2.grad(), 1e-5, 1e-6),
                 qPrintable(QString("eps %1: gradient differs by %2")
                                .arg(eps)
                                .arg((x1.grad().to(torch::kFloat64) - x2.grad()).abs().max().item<double>())));
        QCOMPARE(x1.grad()[2].abs().sum().item<double>(), 0.0);  // a pad row gets no gradient
    }
}

void TestTraining::learningRateSchedule() {
    // lr = lr_mul * d^-0.5 * min(step^-0.5, step * warmup^-1.5), d = 256, warmup 400, lr_mul 0.32
    QVERIFY(std::abs(training::learningRate(1, 0.32, 256, 400) - 0.32 / 16 * std::pow(400.0, -1.5)) < 1e-15);
    QVERIFY(std::abs(training::learningRate(400, 0.32, 256, 400) - 0.001) < 1e-12);  // the peak
    QVERIFY(std::abs(training::learningRate(1600, 0.32, 256, 400) - 0.0005) < 1e-12);
    QVERIFY(training::learningRate(399, 0.32, 256, 400) < training::learningRate(400, 0.32, 256, 400));
    QVERIFY(training::learningRate(401, 0.32, 256, 400) < training::learningRate(400, 0.32, 256, 400));
    // The final decay over the last 4 of 10 steps: 1 up to step 6, then 4/5, 3/5, 2/5, 1/5.
    const double expected[] = {1, 1, 1, 1, 1, 1, 0.8, 0.6, 0.4, 0.2};
    for (int step = 1; step <= 10; ++step)
        QVERIFY2(std::abs(training::decayFactor(step, 10, 4) - expected[step - 1]) < 1e-15,
                 qPrintable(QString("step %1").arg(step)));
    QCOMPARE(training::decayFactor(7, 10, 0), 1.0);  // off
}

namespace {
// A TSV file's rows, split into fields.
std::vector<std::vector<std::string>> tsvRows(const std::string& file) {
    std::vector<std::vector<std::string>> rows;
    std::istringstream in(testing::readFile(file));
    std::string line;
    while (std::getline(in, line)) {
        std::vector<std::string> f;
        std::istringstream fields(line);
        std::string x;
        while (std::getline(fields, x, '\t')) f.push_back(x);
        rows.push_back(f);
    }
    return rows;
}

// Field `column` of the row whose first field is `key`; empty when there is none.
std::string tsvField(const std::string& file, const std::string& key, size_t column) {
    for (const auto& f : tsvRows(file))
        if (!f.empty() && f[0] == key && column < f.size()) return f[column];
    return {};
}
}  // namespace

void TestTraining::finalDecayReachesTheLastStep() {
    const std::string out = m_dir.path().toStdString() + "/decay";
    auto o = smallRun(out);
    o.max_steps = 8;
    o.decay_steps = 4;
    o.log_every_steps = 1;
    train(o);
    // steps.tsv's lr column (index 4) at each step against the schedule computed here.
    for (int step : {4, 5, 6, 8}) {
        const double logged = std::stod(tsvField(out + "/steps.tsv", std::to_string(step), 4));
        const double factor = step <= 4 ? 1.0 : (8.0 - step + 1) / 5.0;
        const double want = 1.0 * std::pow(32.0, -0.5) * std::min(std::pow(step, -0.5), step * std::pow(4.0, -1.5));
        QVERIFY2(std::abs(logged - want * factor) <= 1e-3 * want,  // the log prints 6 significant digits
                 qPrintable(QString("step %1: logged %2, expected %3").arg(step).arg(logged).arg(want * factor)));
    }
    // decay_steps travels with the checkpoint: a resume with another value keeps the run's.
    const std::string state = testing::readFile(out + "/checkpoints/latest/trainer_state.json");
    QVERIFY2(state.find("\"decay_steps\": 4") != std::string::npos, state.c_str());
}

void TestTraining::initFromStartsAtThePackage() {
    const std::string base = m_dir.path().toStdString() + "/init-base",
                      tuned = m_dir.path().toStdString() + "/init-tuned";
    auto o = smallRun(base);
    o.max_steps = 3;
    train(o);
    // One step at a vanishing learning rate: the weights stay the package's (a random start would
    // differ by the initialisation's scale, ~0.1), the shape is the package's even though these
    // options ask for one layer, and the dropout is this run's.
    auto t = smallRun(tuned);
    t.tokenizer.clear();
    t.init_from = base + "/checkpoints/latest";
    t.model.n_layers = 1;
    t.model.dropout = 0.3;
    t.lr_mul = 1e-12;
    t.max_steps = 1;
    train(t);
    decoding::Engine a(base + "/checkpoints/latest", {"cpu"}), b(tuned + "/checkpoints/latest", {"cpu"});
    auto pa = a.model()->named_parameters(), pb = b.model()->named_parameters();
    QCOMPARE(pb.size(), pa.size());
    for (const auto& p : pa) QVERIFY2(torch::allclose(p.value(), pb[p.key()], 0, 1e-6), p.key().c_str());
    const std::string config = testing::readFile(tuned + "/checkpoints/latest/config.json");
    QVERIFY2(config.find("\"dropout\": 0.3") != std::string::npos, config.c_str());
    QVERIFY2(config.find("\"n_layers\": 2") != std::string::npos, config.c_str());
    // A package of the other direction is refused, by name.
    auto w = smallRun(m_dir.path().toStdString() + "/init-wrong");
    w.tokenizer.clear();
    w.init_from = base + "/checkpoints/latest";
    w.src_lang = "en";
    w.tgt_lang = "de";
    w.max_steps = 1;
    try {
        train(w);
        QFAIL("no exception");
    } catch (const InputError& e) {
        QVERIFY2(QString(e.what()).contains("that model translates de -> en, this run en -> de"), e.what());
    }
}

void TestTraining::batchesRespectTokenBudget() {
    std::vector<data::Example> ex;
    std::mt19937 rng(5);
    for (int i = 0; i < 300; ++i) {
        data::Example e;
        e.src.assign(3 + rng() % 30, 7);
        e.tgt.assign(2 + rng() % 30, 8);
        ex.push_back(e);
    }
    const auto batches = data::makeBatches(ex, 256);
    size_t seen = 0;
    for (const auto& b : batches) {
        seen += b.examples.size();
        QVERIFY(int64_t(b.examples.size()) * std::max(b.src_len, b.tgt_len) <= 256 || b.examples.size() == 1);
        for (int i : b.examples) {
            QVERIFY(int(ex[i].src.size()) <= b.src_len);
            QVERIFY(int(ex[i].tgt.size()) + 1 <= b.tgt_len);
        }
    }
    QCOMPARE(seen, ex.size());
    // Length-sorted: padding is small.
    int64_t padded = 0, real = 0;
    for (const auto& b : batches)
        for (int i : b.examples) {
            padded += b.src_len;
            real += int64_t(ex[i].src.size());
        }
    QVERIFY2(double(real) / double(padded) > 0.9, "batches should be bucketed by length");
    QCOMPARE(data::epochOrder(50, 1, 3), data::epochOrder(50, 1, 3));
    QVERIFY(data::epochOrder(50, 1, 3) != data::epochOrder(50, 1, 4));
}

void TestTraining::tinyModelLearnsToCopy() {
    // Ids 4..19, sequences of 3-7 tokens; target = source. Trained with the trainer's loss and
    // schedule, decoded greedily with the translator's search on 100 held-out sequences.
    //
    // What is asserted, and why these margins: the training trajectory depends on float rounding,
    // and rounding depends on the OpenBLAS kernel (Haswell, SkylakeX, Zen, Sandybridge, Prescott
    // sum in different orders) and on the thread count. The first version demanded 20 of 20 exact
    // copies and failed with 19/20 on Haswell/Zen/Sandybridge kernels. Measured here on 100
    // held-out sequences after 800 steps, every kernel and 1 or 2 threads (scripts/portability.sh,
    // docs/portability.md): exact copies 88-100 %, token accuracy >= 97 %. The untrained model
    // copies none exactly and gets ~1/17 of the tokens right (chance). So "learned to copy" is
    // asserted as >= 75 % exact and >= 90 % of tokens: far from chance, with a margin of more than
    // 10 points below the worst kernel measured.
    ModelConfig c = testing::smallConfig(20);
    c.dropout = 0.0;
    c.n_layers = 1;
    c.d_model = c.d_word_vec = 64;
    c.d_inner = 128;
    c.n_head = 4;
    c.d_k = c.d_v = 16;
    c.n_position = 16;
    torch::manual_seed(1);
    model::Transformer m(c);
    std::mt19937 rng(7);
    auto sample = [&](int n) {
        std::vector<std::vector<int64_t>> s(n);
        for (auto& x : s) {
            x.resize(3 + rng() % 5);
            for (auto& t : x) t = 4 + rng() % 16;
        }
        return s;
    };
    auto pack = [](const std::vector<std::vector<int64_t>>& seqs, int64_t prefix, int64_t suffix) {
        size_t len = 0;
        for (const auto& s : seqs) len = std::max(len, s.size() + 1);
        auto t = torch::zeros({int64_t(seqs.size()), int64_t(len)}, torch::kInt64);
        for (size_t i = 0; i < seqs.size(); ++i) {
            size_t j = 0;
            if (prefix >= 0) t[i][j++] = prefix;
            for (auto v : seqs[i]) t[i][j++] = v;
            if (suffix >= 0) t[i][j] = suffix;
        }
        return t;
    };
    const auto held_out = sample(100);
    struct Score {
        int exact = 0;
        int64_t right = 0, total = 0;
    };
    auto evaluate = [&]() {
        m->eval();
        torch::NoGradGuard g;
        auto src = pack(held_out, -1, 3);
        auto stepper = decoding::makeStepper(decoding::StepperKind::Cached, m, src);
        decoding::SearchOptions so;
        so.beam_size = 1;
        so.max_lengths.assign(held_out.size(), 12);
        auto hyps = decoding::greedySearch(*stepper, int64_t(held_out.size()), so);
        Score s;
        for (size_t i = 0; i < held_out.size(); ++i) {
            auto expected = held_out[i];
            expected.push_back(3);
            const auto& got = hyps[i][0].tokens;
            s.exact += got == expected;
            for (size_t j = 0; j < expected.size(); ++j) s.right += j < got.size() && got[j] == expected[j];
            s.total += int64_t(expected.size());
        }
        m->train();
        return s;
    };
    const Score before = evaluate();
    QVERIFY2(before.exact == 0 && before.right < before.total / 5,
             qPrintable(QString("the untrained model already copies (%1 exact)").arg(before.exact)));

    m->train();
    torch::optim::Adam opt(m->parameters(), torch::optim::AdamOptions(1e-3).betas({0.9, 0.98}).eps(1e-9));
    for (int64_t step = 1; step <= 800; ++step) {
        auto batch = sample(32);
        auto src = pack(batch, -1, 3), trg_in = pack(batch, 2, -1), gold = pack(batch, -1, 3);
        for (auto& g : opt.param_groups())
            static_cast<torch::optim::AdamOptions&>(g.options()).lr(training::learningRate(step, 1.0, c.d_model, 50));
        opt.zero_grad();
        auto r = training::labelSmoothedLoss(m->forward(src, trg_in), gold.view(-1), 0.1, 0);
        (r.loss_sum / double(r.tokens)).backward();
        opt.step();
    }
    const Score after = evaluate();
    const double token_acc = double(after.right) / double(after.total);
    qInfo("copy task: %d of 100 held-out sequences exact, token accuracy %.4f (untrained: %d exact, %.4f)", after.exact,
          token_acc, before.exact, double(before.right) / double(before.total));
    QVERIFY2(
        after.exact >= 75 && token_acc >= 0.90,
        qPrintable(
            QString("%1 of 100 held-out sequences copied exactly, token accuracy %2").arg(after.exact).arg(token_acc)));
}

void TestTraining::resumeReproducesUninterruptedRun() {
    const std::string a = m_dir.path().toStdString() + "/straight", b = m_dir.path().toStdString() + "/resumed";
    auto o = smallRun(a);
    o.max_steps = 6;
    const auto sa = train(o);
    QCOMPARE(sa.steps, int64_t(6));
    auto ob = smallRun(b);
    ob.max_steps = 3;
    train(ob);
    ob.max_steps = 6;
    ob.resume = true;
    ob.batch_tokens = 999;  // hyperparameters come from the checkpoint, not the resuming command
    ob.lr_mul = 5.0;
    ob.tokenizer.clear();  // taken from the checkpoint
    const auto sb = train(ob);
    QCOMPARE(sb.steps, int64_t(6));
    decoding::Engine ta(a + "/checkpoints/latest", {"cpu"}), tb(b + "/checkpoints/latest", {"cpu"});
    auto pa = ta.model()->named_parameters(), pb = tb.model()->named_parameters();
    for (const auto& p : pa) QVERIFY2(torch::equal(p.value(), pb[p.key()]), p.key().c_str());
    // The logs hold one row per logged window; the resumed run continued the step count.
    QVERIFY(testing::readFile(b + "/steps.tsv").find("\n6\t") != std::string::npos);
    QVERIFY(fs::is_regular_file(b + "/model/config.json"));
    const std::string card = testing::readFile(b + "/model/MODEL_CARD.md");
    QVERIFY2(card.find("- steps: 6, epochs completed: 0") != std::string::npos, card.c_str());
    QVERIFY2(card.find("| d_model | 32 | model width |") != std::string::npos, card.c_str());
    QVERIFY(card.find("| n_head | 4 | attention heads |") != std::string::npos);
    // Data named by file name, never by the machine's absolute path.
    QVERIFY2(card.find("training: `train.de`, `train.en`") != std::string::npos, card.c_str());
    QVERIFY(card.find(m_data) == std::string::npos);
    // The final package is calibrated on the validation set (40 sentences) and says so.
    const auto cal = readConfidenceCalibration(b + "/model");
    QVERIFY(cal);
    QCOMPARE(cal->sentences, 40);
    QCOMPARE(cal->data, std::string("`val.de`"));
    QVERIFY2(card.find("## Confidence\n") != std::string::npos &&
                 card.find("40 validation sentences (`val.de`") != std::string::npos,
             card.c_str());
}

namespace {
// log.tsv rows without the wall-clock column.
std::vector<std::string> logRows(const std::string& run) {
    std::vector<std::string> rows;
    for (auto f : tsvRows(run + "/log.tsv")) {
        if (f.size() > 2) f.erase(f.begin() + 2);  // elapsed_s
        std::string row;
        for (const auto& v : f) row += v + "|";
        rows.push_back(row);
    }
    return rows;
}

// Adam keeps a parameter's state under its TensorImpl: printed as a string in LibTorch 1.x, the
// pointer itself in 2.x (scripts/gpu_check.sh builds against 2.x).
template <typename StateMap>
torch::optim::OptimizerParamState& adamState(StateMap& state, const torch::Tensor& p) {
    if constexpr (std::is_same_v<typename StateMap::key_type, std::string>) {
        std::ostringstream key;
        key << p.unsafeGetTensorImpl();
        return *state.at(key.str());
    } else {
        return *state.at(p.unsafeGetTensorImpl());
    }
}

void compareRuns(const std::string& a, const std::string& b) {
    decoding::Engine ta(a + "/checkpoints/latest", {"cpu"}), tb(b + "/checkpoints/latest", {"cpu"});
    auto pa = ta.model()->named_parameters(), pb = tb.model()->named_parameters();
    for (const auto& p : pa) QVERIFY2(torch::equal(p.value(), pb[p.key()]), p.key().c_str());
    // Adam's moments: load both optimizer states onto one model's parameters and compare.
    auto optimizerState = [](decoding::Engine& e, const std::string& dir) {
        torch::optim::Adam opt(e.model()->parameters(), torch::optim::AdamOptions(1e-3));
        torch::load(opt, dir + "/checkpoints/latest/optimizer.pt");
        std::vector<torch::Tensor> out;
        for (const auto& p : e.model()->parameters()) {
            auto& st = static_cast<torch::optim::AdamParamState&>(adamState(opt.state(), p));
            out.push_back(st.exp_avg());
            out.push_back(st.exp_avg_sq());
            out.push_back(torch::tensor(st.step()));
        }
        return out;
    };
    const auto oa = optimizerState(ta, a), ob = optimizerState(tb, b);
    QCOMPARE(oa.size(), ob.size());
    for (size_t i = 0; i < oa.size(); ++i)
        QVERIFY2(torch::equal(oa[i], ob[i]), qPrintable(QString("optimizer tensor %1").arg(i)));
    const auto ra = logRows(a), rb = logRows(b);
    QCOMPARE(rb, ra);
}

int batchesPerEpoch(const std::string& run) {
    const auto rows = logRows(run);
    return std::stoi(rows.at(1).substr(rows.at(1).find('|') + 1));  // the step after epoch 1
}
}  // namespace

void TestTraining::resumeAcrossEpochAndValidation() {
    // An uninterrupted 2-epoch run against one stopped 2 steps into epoch 2 (after epoch 1's
    // validation and checkpoints) and resumed: parameters, Adam's moments and every log row
    // (train loss, validation figures, learning rate) are bit-identical.
    const std::string base = m_dir.path().toStdString();
    auto o = smallRun(base + "/e-straight");
    o.epochs = 2;
    train(o);
    const int per_epoch = batchesPerEpoch(base + "/e-straight");
    QVERIFY(per_epoch > 3);
    auto ob = smallRun(base + "/e-resumed");
    ob.max_steps = per_epoch + 2;
    train(ob);
    ob.max_steps = 0;
    ob.epochs = 2;
    ob.resume = true;
    const auto sb = train(ob);
    QCOMPARE(sb.epochs_completed, 2);
    compareRuns(base + "/e-straight", base + "/e-resumed");
}

void TestTraining::resumeAtEpochEndKeepsTheLog() {
    // A run that dies right after the checkpoint of an epoch's last batch (before its validation)
    // resumes straight into that validation. Its log row must still hold the whole epoch's
    // training loss and the learning rate of the last step (they were lost and 0 before the
    // epoch's running totals were checkpointed).
    const std::string base = m_dir.path().toStdString();
    auto o = smallRun(base + "/x-straight");
    o.epochs = 1;
    train(o);
    auto ob = smallRun(base + "/x-killed");
    ob.epochs = 1;
    ob.save_every_minutes = 1e-9;  // a checkpoint after every step
    auto die = [](const TrainingProgress& p) {
        if (p.message.rfind("validating after epoch", 0) == 0) throw std::runtime_error("simulated crash");
    };
    QVERIFY_EXCEPTION_THROWN(train(ob, die), std::runtime_error);
    ob.resume = true;
    ob.save_every_minutes = 0;
    train(ob);
    const auto ra = logRows(base + "/x-straight"), rb = logRows(base + "/x-killed");
    QCOMPARE(rb, ra);
    QVERIFY2(!QString::fromStdString(rb.at(1)).endsWith("|0|"), rb.at(1).c_str());  // lr
}

void TestTraining::resumeRefusesOtherData() {
    const std::string base = m_dir.path().toStdString();
    auto o = smallRun(base + "/d-run");
    o.max_steps = 2;
    train(o);
    // Other data: the same files with their lines in another order (same sizes).
    const std::string other = base + "/d-other";
    fs::create_directories(other);
    for (const char* f : {"train.de", "train.en", "val.de", "val.en"}) {
        std::istringstream in(testing::readFile(m_data + "/" + f));
        std::vector<std::string> lines;
        std::string l;
        while (std::getline(in, l)) lines.push_back(l);
        std::reverse(lines.begin(), lines.end());
        std::string text;
        for (const auto& x : lines) text += x + "\n";
        testing::writeFile(other + "/" + f, text);
    }
    auto r = o;
    r.resume = true;
    r.max_steps = 3;
    r.data_dir = other;
    try {
        train(r);
        QFAIL("no exception");
    } catch (const InputError& e) {
        QVERIFY2(QString(e.what()).contains("the training data differs from the run's") &&
                     QString(e.what()).contains("200 pairs, ids hash"),
                 e.what());
    }
    // A swapped direction is named as such.
    r.data_dir = m_data;
    r.src_lang = "en";
    r.tgt_lang = "de";
    try {
        train(r);
        QFAIL("no exception");
    } catch (const InputError& e) {
        QVERIFY2(QString(e.what()).contains("translates de -> en but --src/--tgt say en -> de"), e.what());
    }
    // Without data options the run's own files are used.
    r.data_dir.clear();
    r.src_lang = "xx";
    r.tgt_lang = "yy";
    QCOMPARE(train(r).steps, int64_t(3));
}

void TestTraining::averageIsTheMean() {
    const auto cfg = testing::smallConfig(400);
    const std::string a = testing::writeRandomPackage(m_dir.path().toStdString() + "/avg-a", m_tok, cfg, 1);
    const std::string b = testing::writeRandomPackage(m_dir.path().toStdString() + "/avg-b", m_tok, cfg, 2);
    const std::string c = testing::writeRandomPackage(m_dir.path().toStdString() + "/avg-c", m_tok, cfg, 3);
    const std::string out = m_dir.path().toStdString() + "/avg-out";
    averagePackages({a, b, c}, out);
    decoding::Engine t(out, {"cpu"});
    auto ma = testing::randomModel(cfg, 1), mb = testing::randomModel(cfg, 2), mc = testing::randomModel(cfg, 3);
    auto avg = t.model()->named_parameters();
    for (const auto& p : ma->named_parameters()) {
        auto expected = (p.value().to(torch::kFloat64) + mb->named_parameters()[p.key()].to(torch::kFloat64) +
                         mc->named_parameters()[p.key()].to(torch::kFloat64)) /
                        3.0;
        QVERIFY2(torch::allclose(avg[p.key()].to(torch::kFloat64), expected, 0, 1e-6), p.key().c_str());
    }
    auto other = cfg;
    other.n_layers = 1;
    const std::string d = testing::writeRandomPackage(m_dir.path().toStdString() + "/avg-d", m_tok, other, 4);
    try {
        averagePackages({a, d}, out);
        QFAIL("no exception");
    } catch (const PackageError& e) {
        QVERIFY2(QString(e.what()).contains("only identical models can be averaged"), e.what());
    }
}

void TestTraining::corpusErrors() {
    const std::string dir = m_dir.path().toStdString() + "/bad";
    fs::create_directories(dir);
    testing::writeFile(dir + "/a.txt", "eins\nzwei\ndrei\n");
    testing::writeFile(dir + "/b.txt", "one\ntwo\n");
    try {
        data::readParallel(dir + "/a.txt", dir + "/b.txt");
        QFAIL("no exception");
    } catch (const InputError& e) {
        QVERIFY2(QString(e.what()).contains("a.txt has 3 lines but") && QString(e.what()).contains("b.txt has 2"),
                 e.what());
    }
    // gzip, read transparently; a truncated one is an error.
    gzFile f = gzopen((dir + "/c.gz").c_str(), "wb");
    std::string text;
    for (int i = 0; i < 2000; ++i) text += "Zeile " + std::to_string(i) + "\n";
    gzwrite(f, text.data(), unsigned(text.size()));
    gzclose(f);
    QCOMPARE(data::readLines(dir + "/c.gz").size(), size_t(2000));
    const std::string gz = testing::readFile(dir + "/c.gz");
    testing::writeFile(dir + "/d.gz", gz.substr(0, gz.size() / 2));
    try {
        data::readLines(dir + "/d.gz");
        QFAIL("no exception");
    } catch (const InputError& e) {
        QVERIFY2(QString(e.what()).contains("corrupt or truncated"), e.what());
    }
    auto o = smallRun(m_dir.path().toStdString() + "/nodata");
    o.data_dir = dir;
    o.max_steps = 1;
    try {
        train(o);
        QFAIL("no exception");
    } catch (const InputError& e) {
        QVERIFY2(QString(e.what()).contains("train.de(.gz): missing file"), e.what());
    }
}

void TestTraining::checkpointErrors() {
    auto o = smallRun(m_dir.path().toStdString() + "/never");
    o.max_steps = 1;
    o.resume = true;
    try {
        train(o);
        QFAIL("no exception");
    } catch (const InputError& e) {
        QVERIFY2(QString(e.what()).contains("nothing to resume"), e.what());
    }
    const std::string run = m_dir.path().toStdString() + "/corrupt";
    auto c = smallRun(run);
    c.max_steps = 2;
    train(c);
    testing::writeFile(run + "/checkpoints/latest/trainer_state.json", "{\"step\": ");
    c.resume = true;
    c.max_steps = 3;
    try {
        train(c);
        QFAIL("no exception");
    } catch (const PackageError& e) {
        QVERIFY2(QString(e.what()).contains("corrupt checkpoint state"), e.what());
    }
    testing::writeFile(run + "/checkpoints/latest/trainer_state.json",
                       R"({"step": 2, "epoch": 0, "batch_in_epoch": 2, "best_bleu": -1, "elapsed_seconds": 1})");
    testing::writeFile(run + "/checkpoints/latest/optimizer.pt", "garbage");
    try {
        train(c);
        QFAIL("no exception");
    } catch (const PackageError& e) {
        QVERIFY2(QString(e.what()).contains("corrupt optimizer or random state"), e.what());
    }
}

// --device: a name AttnLab does not take is refused up front; a CUDA device that LibTorch does not
// see is refused by name; on the test device (ATTNLAB_TEST_DEVICE: the GPU under
// scripts/gpu_check.sh, else the CPU again) the first four steps' losses are the CPU's. Dropout is
// off so that both runs do the same arithmetic. Step 1's loss is the same weights' forward pass:
// its margin, 1e-3 of the loss, covers float32 kernels that sum in another order (cuBLAS against
// OpenBLAS: ~1e-6 relative here) and steps.tsv's four decimals. Steps 2-4 get 3 %: Adam's first
// update is lr * g / (|g| + eps), a full step of lr (0.02 here, warmup 4) in the direction of the
// gradient's sign for every element, so elements whose gradient is rounding noise (zero but for
// the order of summation) move by +-lr on one device and -+lr on the other. On an H100 that made
// step 2 differ by 0.4 % (5.827 against 5.849, docs/gpu.md); from step 2 on Adam's second moment
// damps it, as resumesOnTheTestDevice shows at 1e-3 (passed so on an H100).
void TestTraining::trainsOnTheTestDevice() {
    auto o = smallRun(m_dir.path().toStdString() + "/device-bad");
    o.max_steps = 2;
    o.device = "gpu";
    try {
        o.validate();
        QFAIL("no exception");
    } catch (const ConfigError& e) {
        QVERIFY2(QString(e.what()).contains("--device 'gpu' is not one of auto, cpu, cuda, cuda:N"), e.what());
    }
    if (!attnlab::cudaAvailable()) {
        o.device = "cuda";
        try {
            train(o);
            QFAIL("no exception");
        } catch (const DeviceError& e) {
            QVERIFY2(QString(e.what()).contains("LibTorch sees no CUDA device"), e.what());
        }
    }
    auto losses = [&](const std::string& name, const std::string& device) {
        auto r = smallRun(m_dir.path().toStdString() + "/" + name);
        r.model.dropout = 0;
        r.max_steps = 4;
        r.log_every_steps = 1;
        r.device = device;
        train(r);
        std::vector<double> out;
        for (int step = 1; step <= 4; ++step)
            out.push_back(std::stod(tsvField(r.output_dir + "/steps.tsv", std::to_string(step), 3)));
        return out;
    };
    const auto cpu = losses("device-cpu", "cpu"), dev = losses("device-test", testing::testDevice());
    for (size_t i = 0; i < cpu.size(); ++i)
        qInfo("step %zu: %.4f on the CPU, %.4f on %s", i + 1, cpu[i], dev[i], testing::testDevice().c_str());
    for (size_t i = 0; i < cpu.size(); ++i)
        QVERIFY2(std::abs(cpu[i] - dev[i]) <= (i == 0 ? 1e-3 : 3e-2) * std::abs(cpu[i]),
                 qPrintable(QString("step %1: %2 on the CPU, %3 on %4")
                                .arg(i + 1)
                                .arg(cpu[i])
                                .arg(dev[i])
                                .arg(QString::fromStdString(testing::testDevice()))));
}

// A run checkpointed on the CPU and resumed on the test device (the GPU under
// scripts/gpu_check.sh) continues where it stopped: the optimizer's moments move with the model
// (an Adam step with its state on another device than the parameters throws), and steps 4-6 lose
// what an uninterrupted CPU run loses, within 1e-3 (trainsOnTheTestDevice's margin for step 1).
// The model card names the device of the resumed session.
void TestTraining::resumesOnTheTestDevice() {
    auto run = [&](const std::string& name) {
        auto r = smallRun(m_dir.path().toStdString() + "/" + name);
        r.model.dropout = 0;
        r.log_every_steps = 1;
        return r;
    };
    auto straight = run("device-straight");
    straight.max_steps = 6;
    train(straight);
    auto resumed = run("device-resumed");
    resumed.max_steps = 3;
    train(resumed);
    resumed.max_steps = 6;
    resumed.resume = true;
    resumed.tokenizer.clear();
    resumed.device = testing::testDevice();
    QCOMPARE(train(resumed).steps, int64_t(6));
    for (int step = 4; step <= 6; ++step) {
        const double a = std::stod(tsvField(straight.output_dir + "/steps.tsv", std::to_string(step), 3));
        const double b = std::stod(tsvField(resumed.output_dir + "/steps.tsv", std::to_string(step), 3));
        QVERIFY2(std::abs(a - b) <= 1e-3 * std::abs(a),
                 qPrintable(QString("step %1: %2 straight on the CPU, %3 resumed on %4")
                                .arg(step)
                                .arg(a)
                                .arg(b)
                                .arg(QString::fromStdString(testing::testDevice()))));
    }
    const std::string card = testing::readFile(resumed.output_dir + "/model/MODEL_CARD.md");
    QVERIFY2(card.find("- trained on: " + testing::testDevice() + " (`--device`)") != std::string::npos, card.c_str());
}

void TestTraining::optionErrors() {
    TrainingOptions o;
    auto expect = [](const TrainingOptions& x, const QString& needle) {
        try {
            x.validate();
            QFAIL("no exception");
        } catch (const ConfigError& e) {
            QVERIFY2(QString(e.what()).contains(needle), e.what());
        }
    };
    expect(o, "--output is required");
    o.output_dir = "/tmp/x";
    expect(o, "give --data DIR");
    o.data_dir = "/tmp";
    expect(o, "no stopping criterion");
    o.epochs = 1;
    o.decay_steps = 10;
    expect(o, "--decay-steps needs --max-steps");
    o.max_steps = 5;
    expect(o, "--decay-steps 10 is longer than --max-steps 5");
    o.decay_steps = 0;
    o.init_from = "/tmp/pkg";
    o.tokenizer = "/tmp/spm.model";
    expect(o, "--init-from uses the package's own tokenizer");
    o.tokenizer.clear();
    o.model.n_head = 0;
    expect(o, "n_head = 0");
    o = TrainingOptions{};
    o.data_dir = "/tmp/d";
    o.output_dir = "/tmp/o";
    o.epochs = 1;
    o.probe_file = "p.tsv";
    expect(o, "--probe goes with --record-attention");
    o.record_attention = true;
    o.record_every = 0;
    expect(o, "--record-every must be at least 1");
}

namespace {
const HistoryPoint* pointAtEpochEnd(const AttentionHistory& h, int epoch) {
    for (const auto& p : h.points)
        if (p.epoch == epoch && p.valid_bleu >= 0) return &p;
    return nullptr;
}
}  // namespace

// The maps recorded at the end of epoch 1 are those the epoch-1 checkpoint gives when its probes are
// teacher-forced through their references, within half the quantization step.
void TestTraining::historyHoldsTheCheckpointsMaps() {
    const std::string out = m_dir.path().toStdString() + "/history";
    auto o = smallRun(out);
    o.epochs = 2;
    o.record_attention = true;
    o.record_every = 4;
    o.probe_count = 3;
    o.keep_epoch_checkpoints = 2;
    train(o);
    const AttentionHistory h = readAttentionHistory(out + "/" + package_files::kAttentionHistory);
    QCOMPARE(h.probes.size(), size_t(3));
    QCOMPARE(h.n_layers, int(o.model.n_layers));
    QCOMPARE(h.points.front().step, int64_t(0));
    QCOMPARE(h.points.front().train_loss, -1.0);
    for (size_t i = 1; i < h.points.size(); ++i) QVERIFY(h.points[i].step > h.points[i - 1].step);
    std::set<int64_t> steps;
    for (const auto& p : h.points) steps.insert(p.step);
    QVERIFY(steps.count(4) && steps.count(8));  // every 4 steps (below 25: no denser start)
    const HistoryPoint* end1 = pointAtEpochEnd(h, 1);
    QVERIFY(end1 && pointAtEpochEnd(h, 2));
    QVERIFY(end1->train_loss > 0 && end1->valid_loss > 0);
    const std::string ckpt = out + "/checkpoints/" + run_layout::epochCheckpointName(1);
    Translator t(ckpt, {attnlab::testing::testDevice()});
    std::vector<std::string> sources, targets;
    for (const auto& p : h.probes) sources.push_back(p.source), targets.push_back(p.target);
    const auto forced = t.teacherForce(sources, targets);
    double worst = 0;
    for (size_t k = 0; k < forced.size(); ++k) {
        QCOMPARE(forced[k].source_pieces, h.probes[k].source_pieces);
        const ProbeMaps& rec = end1->maps[k];
        const std::vector<std::pair<const LayerHeadMaps*, const LayerHeadMaps*>> kinds{
            {&rec.encoder_self, &forced[k].encoder_self},
            {&rec.decoder_self, &forced[k].decoder_self},
            {&rec.cross, &forced[k].cross}};
        for (const auto& [mine, theirs] : kinds)
            for (size_t l = 0; l < mine->size(); ++l)
                for (size_t hd = 0; hd < (*mine)[l].size(); ++hd)
                    for (size_t r = 0; r < (*mine)[l][hd].size(); ++r)
                        for (size_t c = 0; c < (*mine)[l][hd][r].size(); ++c)
                            worst = std::max(worst, double(std::abs((*mine)[l][hd][r][c] - (*theirs)[l][hd][r][c])));
    }
    // Half a quantization step, and 1e-5 for another batch shape (summation order) in the
    // checkpoint's pass.
    QVERIFY2(worst <= kHistoryQuantizationStep / 2 + 1e-5, qPrintable(QString::number(worst)));
    QVERIFY(worst > 0);  // the file holds quantized weights
    // Each checkpoint and the package carry the history up to their own step.
    const AttentionHistory at1 = readAttentionHistory(ckpt + "/" + package_files::kAttentionHistory);
    QCOMPARE(at1.points.back().step, end1->step);
    QVERIFY(fs::exists(out + "/model/" + package_files::kAttentionHistory));
    // An average of epoch checkpoints carries the history of the newest.
    averagePackages({ckpt, out + "/checkpoints/" + run_layout::epochCheckpointName(2)}, out + "/averaged");
    const AttentionHistory averaged = readAttentionHistory(out + "/averaged/" + package_files::kAttentionHistory);
    QCOMPARE(averaged.points.back().step, pointAtEpochEnd(h, 2)->step);
}

// Stopped and resumed, the history is the uninterrupted run's: the same points, the same bytes.
void TestTraining::resumedHistoryEqualsAnUninterruptedOne() {
    const std::string a = m_dir.path().toStdString() + "/history-a", b = m_dir.path().toStdString() + "/history-b";
    auto o = smallRun(a);
    o.record_attention = true;
    o.record_every = 3;
    o.probe_count = 2;
    o.max_steps = 10;
    train(o);
    auto ob = o;
    ob.output_dir = b;
    ob.max_steps = 5;
    train(ob);
    ob.max_steps = 10;
    ob.resume = true;
    ob.record_attention = false;  // a resumed run continues the history its checkpoint carries
    ob.tokenizer.clear();
    train(ob);
    const std::string file = std::string("/") + package_files::kAttentionHistory;
    const auto ha = readAttentionHistory(a + file), hb = readAttentionHistory(b + file);
    std::vector<int64_t> sa, sb;
    for (const auto& p : ha.points) sa.push_back(p.step);
    for (const auto& p : hb.points) sb.push_back(p.step);
    QCOMPARE(sb, sa);
    QCOMPARE(sa, (std::vector<int64_t>{0, 3, 6, 9, 10}));  // the run's last step too
    QVERIFY(attentionHistoryBytes(ha) == attentionHistoryBytes(hb));
}

// A run from a package that carries a history continues it as its next stage.
void TestTraining::initFromContinuesTheHistory() {
    const std::string base = m_dir.path().toStdString() + "/history-a/model";  // from the test above
    const auto before = readAttentionHistory(base + "/" + package_files::kAttentionHistory);
    const std::string out = m_dir.path().toStdString() + "/history-stage2";
    auto o = smallRun(out);
    o.tokenizer.clear();
    o.init_from = base;
    o.record_attention = true;
    o.record_every = 2;
    o.max_steps = 4;
    o.probe_file = m_dir.path().toStdString() + "/probes.tsv";
    try {
        train(o);
        QFAIL("no error");
    } catch (const ConfigError& e) {
        QVERIFY2(std::string(e.what()).find("--probe: the run continues the attention history of") == 0, e.what());
    }
    o.probe_file.clear();
    // Stopped before the stage's first point (step 2) and resumed: the stage still counts on from
    // the package's last point (the file records where the stage began).
    o.max_steps = 1;
    train(o);
    // The card names the package it started from by its run's name, not the run's "model" folder.
    const std::string card = attnlab::testing::readFile(out + "/model/MODEL_CARD.md");
    QVERIFY2(card.find("| started from | the weights of `history-a` |") != std::string::npos, card.c_str());
    o.max_steps = 4;
    o.resume = true;
    o.init_from.clear();
    train(o);
    const auto h = readAttentionHistory(out + "/" + package_files::kAttentionHistory);
    QCOMPARE(h.stage, 1);
    QCOMPARE(h.stage_step, before.points.back().step);
    QCOMPARE(h.probes.size(), before.probes.size());
    const int64_t start = before.points.back().step;
    size_t i = 0;
    for (; i < before.points.size(); ++i) QCOMPARE(h.points[i].step, before.points[i].step);
    QVERIFY(h.points.size() > before.points.size());
    QCOMPARE(h.points[i].stage, 1);
    QCOMPARE(h.points[i].step, start + 2);
    QCOMPARE(h.points.back().step, start + 4);
}

// The toy generator, checked against each task's rule written again here.
void TestTraining::toyGeneratorFollowsEachTasksRule() {
    std::mt19937_64 rng(11);
    for (const ToyTask task : toyTasks()) {
        std::set<int> lengths;
        for (int i = 0; i < 500; ++i) {
            const auto [src, tgt] = toyExample(task, rng);
            std::vector<int> s, t;
            std::istringstream a(src), b(tgt);
            for (int x; a >> x;) s.push_back(x);
            for (int x; b >> x;) t.push_back(x);
            QVERIFY2(int(s.size()) >= kToyMinLength && int(s.size()) <= kToyMaxLength, src.c_str());
            lengths.insert(int(s.size()));
            for (int x : s) QVERIFY(x >= 0 && x <= 9);
            std::vector<int> want = s;
            if (task == ToyTask::Reverse) want.assign(s.rbegin(), s.rend());
            if (task == ToyTask::Sort) std::sort(want.begin(), want.end());
            if (task == ToyTask::Shift)
                for (int& x : want) x = x == 9 ? 0 : x + 1;
            if (task == ToyTask::Swap) {
                QVERIFY(s.size() % 2 == 0);
                for (size_t k = 0; k < s.size(); k += 2) {
                    QVERIFY(s[k] <= 4 && s[k + 1] >= 5);
                    want[k] = s[k + 1];
                    want[k + 1] = s[k];
                }
            }
            QVERIFY2(t == want, (toyTaskName(task) + ": " + src + " -> " + tgt).c_str());
            QCOMPARE(toyTarget(task, src), tgt);
        }
        QVERIFY(lengths.size() >= 4);  // lengths vary
    }
    QCOMPARE(parseToyTask("sort"), ToyTask::Sort);
    try {
        parseToyTask("rotate");
        QFAIL("no error");
    } catch (const InputError& e) {
        QCOMPARE(std::string(e.what()),
                 std::string("toy task 'rotate' is not one of copy, reverse, sort, shift, swap"));
    }
    QVERIFY_THROWS_EXCEPTION(InputError, toyTarget(ToyTask::Copy, "3 x 4"));
    QVERIFY_THROWS_EXCEPTION(InputError, toyTarget(ToyTask::Swap, "7 1"));
}

// Reversal, as `attnlab-cli toy --task reverse` trains it (its model, data and schedule), in half its
// default 1,500 steps and on one thread: the default took 91 s of CI's test time idle, 450 s beside other
// work (its two threads waiting for each other). 750 steps reach 99.5 % exact match on 200 fresh sequences
// here (OpenBLAS kernels: default 99.5 %, Zen 99.0 %, Sandybridge 99.0 %; 500 steps: 91.5 %); 90 % leaves
// room for another machine's kernels and summation order, which change the trajectory.
void TestTraining::toyReverseIsLearnedWithinItsSteps() {
    ToyOptions o;
    o.task = ToyTask::Reverse;
    o.output_dir = m_dir.path().toStdString() + "/toy";
    o.package_dir = m_dir.path().toStdString() + "/toy-package";
    o.steps = 750;
    o.threads = 1;
    const ToyResult r = trainToy(o);
    QCOMPARE(r.evaluated, 200);
    QVERIFY2(r.accuracy >= 0.9, qPrintable(QString("exact match %1").arg(r.accuracy)));
    Translator t(o.package_dir, {attnlab::testing::testDevice()});
    DecodingOptions d;
    d.beam_size = 1;
    QCOMPARE(t.translate("3 1 4 1 5", d).best.text, std::string("5 1 4 1 3"));
    // Computed in int8 (issue 43), the trained toy's greedy translations are float32's, every one: its
    // choices are far apart compared with int8's rounding (measured: 100 of 100 here; the bundled
    // models, larger and less sure, keep 93 %: docs/benchmarks.md).
    if (!attnlab::computeTypeUnavailable("int8") && attnlab::testing::testDevice() == "cpu") {
        attnlab::TranslatorOptions q;
        q.device = "cpu";
        q.compute_type = "int8";
        Translator t8(o.package_dir, q);
        QCOMPARE(t8.info().compute_type, std::string("int8"));
        std::mt19937_64 rng(7);
        std::vector<std::string> sources;
        for (int i = 0; i < 100; ++i) sources.push_back(toyExample(ToyTask::Reverse, rng).first);
        const auto exact = t.translateBatch(sources, d), int8 = t8.translateBatch(sources, d);
        for (size_t i = 0; i < sources.size(); ++i) QCOMPARE(int8[i].best.text, exact[i].best.text);
    }
    // It recorded how its attention was learned: a point every 50 steps from step 0, and the last step.
    const auto h = readAttentionHistory(o.package_dir + "/" + package_files::kAttentionHistory);
    QVERIFY2(h.points.size() >= size_t(o.steps / 50 + 1), qPrintable(QString::number(h.points.size())));
    QCOMPARE(h.points.back().step, o.steps);
}

// The run's last step is a point of its history, and a package made from that step (the toy's:
// package_last_step) carries it: 73 steps, off the recording interval of 10, over more than one
// epoch (the best checkpoint, an epoch's end, is an earlier step). A toy of 1,500 steps (every
// 50) showed its history to step 1,386, its best checkpoint's, and packaged those weights.
void TestTraining::historyEndsAtTheRunsLastStep() {
    QVERIFY(ToyOptions{}.trainingOptions().package_last_step);
    const std::string out = m_dir.path().toStdString() + "/history-last";
    auto o = smallRun(out);
    o.max_steps = 73;
    o.record_attention = true;
    o.record_every = 10;
    o.probe_count = 1;
    o.keep_epoch_checkpoints = 0;
    o.package_last_step = true;
    const auto r = train(o);
    QCOMPARE(r.steps, int64_t(73));
    QVERIFY2(r.epochs_completed >= 1, "the run should pass an epoch's end before its last step");
    const auto run = readAttentionHistory(out + "/" + package_files::kAttentionHistory);
    QCOMPARE(run.points.back().step, r.steps);
    const auto h = readAttentionHistory(r.package_dir + "/" + package_files::kAttentionHistory);
    QCOMPARE(h.points.front().step, int64_t(0));
    QCOMPARE(h.points.back().step, r.steps);
    // ... and the package's weights are that step's: the latest checkpoint's.
    const std::string card = attnlab::testing::readFile(r.package_dir + "/" + package_files::kModelCard);
    QVERIFY2(card.find("This package is the latest checkpoint.") != std::string::npos, card.c_str());
}

// A checkpoint a killed run was writing (the staging folder of a process that no longer runs,
// carrying AttnLab's marker) is removed when a run starts, whatever its name; the run's own
// checkpoints and a folder without the marker stay.
void TestTraining::staleStagingIsRemoved() {
    const std::string out = m_dir.path().toStdString() + "/stale-staging";
    const pid_t dead = ::fork();
    if (dead == 0) ::_exit(0);
    ::waitpid(dead, nullptr, 0);
    const std::string stale = out + "/checkpoints/.epoch-077.attnlab-staging-" + std::to_string(dead),
                      kept = out + "/checkpoints/notes.txt",
                      unmarked = out + "/checkpoints/.best.attnlab-staging-" + std::to_string(dead);
    std::filesystem::create_directories(stale);
    std::filesystem::create_directories(unmarked);
    attnlab::testing::writeFile(stale + "/model.safetensors", "half written");
    attnlab::testing::writeFile(stale + "/" + attnlab::package_files::kWrittenByAttnlab, "");
    attnlab::testing::writeFile(unmarked + "/mine.txt", "a folder AttnLab did not make");
    attnlab::testing::writeFile(kept, "not staging");
    auto o = smallRun(out);
    o.max_steps = 1;
    train(o);
    QVERIFY(!std::filesystem::exists(stale));
    QVERIFY(std::filesystem::exists(kept));
    QVERIFY(std::filesystem::exists(unmarked + "/mine.txt"));
    QVERIFY(std::filesystem::exists(out + "/checkpoints/latest"));
}

QTEST_GUILESS_MAIN(TestTraining)
#include "tst_training.moc"
