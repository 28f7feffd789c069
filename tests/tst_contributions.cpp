// ALTI+ (Translator::contributions, core/src/contributions/alti.cpp) against an independent float64 Python
// implementation written from the paper and the authors' code (scripts/reference_contributions.py), on small
// random models of each layer structure AttnLab opens; and the properties any implementation must have: a head
// switched off contributes as a head whose value vectors are zero (nothing), and with every attention output
// zeroed each piece contributes only to itself. Skipped, with a message, where python3-torch is missing, except
// under CI (CI=true), where that fails.
#include "fixtures.h"
#include "model/low_precision.h"
#include "model/transformer.h"
#include "package/package_io.h"
#include "python_probe.h"

#include <attnlab/alignment.h>
#include <attnlab/contributions.h>
#include <attnlab/head_lab.h>
#include <attnlab/translator.h>

#include <QtTest/QtTest>

#include <torch/torch.h>

#include <functional>

using attnlab::AttentionKind;
using attnlab::Matrix;
using nlohmann::json;

Q_DECLARE_METATYPE(attnlab::ModelConfig)

namespace {
const std::vector<std::string> kSentences{"Ein Mann läuft über die Straße.", "Zwei Hunde spielen im Park."};

// Every parameter moved away from its initial value (layer norms' gains around 1, biases, relative tables and a
// learned position table around 0): a layer norm of gain 1 and bias 0 or a zero bias would hide a term left out.
void perturb(attnlab::model::Transformer& m, uint64_t seed) {
    torch::NoGradGuard no_grad;
    torch::manual_seed(seed);
    auto ends = [](const std::string& s, const std::string& tail) {
        return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
    };
    for (auto& p : m->named_parameters()) {
        torch::Tensor t = p.value();
        if (ends(p.key(), "layer_norm.weight"))
            t.copy_(1 + 0.2 * torch::randn_like(t));
        else if (t.dim() == 1)
            t.copy_(0.2 * torch::randn_like(t));
        else if (p.key().find("relative_position") != std::string::npos)
            t.copy_(0.5 * torch::randn_like(t));
    }
    if (m->config().pos_encoding == "learned")
        for (auto& b : m->named_buffers())
            if (ends(b.key(), "pos_table")) b.value().copy_(0.3 * torch::randn_like(b.value()));
}

double largestDifference(const Matrix& ours, const json& ref) {
    if (ref.size() != ours.size()) return 1e9;
    double worst = 0;
    for (size_t i = 0; i < ours.size(); ++i) {
        if (ref[i].size() != ours[i].size()) return 1e9;
        for (size_t j = 0; j < ours[i].size(); ++j)
            worst = std::max(worst, std::abs(double(ours[i][j]) - ref[i][j].get<double>()));
    }
    return worst;
}

double largestDifference(const std::vector<Matrix>& ours, const json& ref) {
    if (ref.size() != ours.size()) return 1e9;
    double worst = 0;
    for (size_t l = 0; l < ours.size(); ++l) worst = std::max(worst, largestDifference(ours[l], ref[l]));
    return worst;
}

// The identity (or zeros) of a map's size, to compare a map with.
Matrix identityLike(const Matrix& m, float diagonal) {
    Matrix out = m;
    for (size_t i = 0; i < out.size(); ++i)
        for (size_t j = 0; j < out[i].size(); ++j) out[i][j] = i == j ? diagonal : 0.0f;
    return out;
}

double largestFrom(const Matrix& m, float diagonal) {
    double worst = 0;
    const Matrix want = identityLike(m, diagonal);
    for (size_t i = 0; i < m.size(); ++i)
        for (size_t j = 0; j < m[i].size(); ++j) worst = std::max(worst, std::abs(double(m[i][j] - want[i][j])));
    return worst;
}

// The current data row's tag as a file name.
QString tagName() {
    QString s = QTest::currentDataTag();
    for (QChar& ch : s)
        if (!ch.isLetterOrNumber()) ch = '-';
    return s;
}

std::vector<attnlab::HeadRef> everyHead(const attnlab::ModelConfig& c) {
    std::vector<attnlab::HeadRef> heads;
    for (AttentionKind kind : attnlab::attentionKinds())
        for (int l = 0; l < int(c.layers(kind)); ++l)
            for (int h = 0; h < int(c.n_head); ++h) heads.push_back({kind, l, h});
    return heads;
}
}  // namespace

class TestContributions : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void methodNames();
    void matchesReference_data();
    void matchesReference();
    void switchedOffHeadIsZeroedValues();
    void residualAlone_data();
    void residualAlone();
    void emptyTranslationRefused();
    void alignsByAltiPlus();
    void int8FromTheWeightsItHolds();

private:
    // A package of `cfg` with perturbed random weights, `edit` applied before it is written.
    std::string package(const QString& name, const attnlab::ModelConfig& cfg, uint64_t seed,
                        const std::function<void(attnlab::model::Transformer&)>& edit = {});
    QTemporaryDir m_dir;
    std::string m_tok;
    QString m_python = qEnvironmentVariable("ATTNLAB_PYTHON", "/usr/bin/python3");
    bool m_have_python = false;
};

void TestContributions::initTestCase() {
    m_have_python = attnlab::testing::pythonProblem(m_python, {"torch", "numpy"}).isEmpty();
    m_tok = attnlab::testing::trainTokenizer(m_dir.path().toStdString(), 400);
}

std::string TestContributions::package(const QString& name, const attnlab::ModelConfig& cfg, uint64_t seed,
                                       const std::function<void(attnlab::model::Transformer&)>& edit) {
    torch::manual_seed(seed);
    attnlab::model::Transformer m(cfg);  // Xavier-initialised
    m->eval();
    perturb(m, seed + 1);
    if (edit) edit(m);
    const std::string dir = (m_dir.path() + "/" + name).toStdString();
    attnlab::package::savePackage(dir, attnlab::testing::packageConfig(cfg), m, m_tok);
    return dir;
}

void TestContributions::methodNames() {
    for (attnlab::ContributionMethod method : attnlab::kContributionMethods)
        QVERIFY(attnlab::parseContributionMethod(attnlab::contributionMethodName(method)) == method);
    QCOMPARE(attnlab::contributionMethodName(attnlab::ContributionMethod::AltiPlus), std::string("alti+"));
    QVERIFY(!attnlab::parseContributionMethod("alti").has_value());
}

void TestContributions::matchesReference_data() {
    QTest::addColumn<attnlab::ModelConfig>("config");
    auto base = attnlab::testing::smallConfig(400);
    QTest::newRow("post-norm, the paper's") << base;
    auto marian = base;  // MarianMT: biases, no embedding norm, Marian's positions, swish, logits bias, 2 + 1 layers
    marian.attn_bias = true, marian.emb_layer_norm = false, marian.pos_encoding = "half";
    marian.ffn_activation = "swish", marian.logits_bias = true, marian.n_dec_layers = 1;
    QTest::newRow("post-norm, Marian") << marian;
    auto m2m = base;  // M2M100 / NLLB: pre-norm, final layer norms, fairseq's positions from pad + 1
    m2m.norm_position = "pre", m2m.final_layer_norm = true, m2m.emb_layer_norm = false, m2m.attn_bias = true;
    m2m.pos_encoding = "fairseq", m2m.pos_offset = 1, m2m.emb_scale = "sqrt_d_model", m2m.layer_norm_eps = 1e-5;
    QTest::newRow("pre-norm, M2M100 / NLLB") << m2m;
    auto mbart = m2m;  // mBART: also a layer norm on the embeddings, learned positions from 2, gelu, logits bias
    mbart.emb_layer_norm = true, mbart.pos_encoding = "learned", mbart.pos_offset = 2, mbart.emb_scale = "none";
    mbart.ffn_activation = "gelu", mbart.logits_bias = true;
    QTest::newRow("pre-norm, mBART") << mbart;
    auto ct2 = m2m;  // an OpenNMT-py model through CTranslate2: relative positions only
    ct2.pos_encoding = "none", ct2.pos_offset = 0, ct2.max_relative_positions = 3;
    QTest::newRow("pre-norm, CTranslate2 relative positions") << ct2;
    auto ct2_post = marian;  // Marian through CTranslate2: relative positions on a post-norm model, zero first input
    ct2_post.pos_encoding = "none", ct2_post.max_relative_positions = 2, ct2_post.start_from_zero_embedding = true;
    QTest::newRow("post-norm, CTranslate2 relative positions") << ct2_post;
}

void TestContributions::matchesReference() {
    if (!m_have_python) ATTNLAB_REQUIRE_PYTHON(m_python, (QStringList{"torch", "numpy"}), "ALTI+ cross-check");
    QFETCH(attnlab::ModelConfig, config);
    const std::string pkg = package("ref-" + tagName(), config, 5);
    attnlab::Translator t(pkg, {attnlab::testing::testDevice()});
    attnlab::DecodingOptions o;
    o.max_length = 6;
    std::vector<attnlab::TranslationResult> results{t.translate(kSentences[0], o)};
    o.ablate = {{AttentionKind::EncoderSelf, 0, 1}, {AttentionKind::Cross, 0, 2}, {AttentionKind::DecoderSelf, 0, 3}};
    results.push_back(t.translate(kSentences[1], o));  // heads switched off: the reference switches them off too
    json in;
    for (const auto& r : results) {
        std::vector<int> dec_in{2};  // packageConfig's bos
        for (size_t i = 0; i + 1 < r.best.ids.size(); ++i) dec_in.push_back(r.best.ids[i]);
        json ablate = json::array();
        for (const auto& h : r.ablated) ablate.push_back({attnlab::attentionKindName(h.kind), h.layer, h.head});
        in["sentences"].push_back({{"source_ids", r.source_ids},
                                   {"decoder_input_ids", dec_in},
                                   {"target_ids", r.best.ids},
                                   {"ablate", ablate}});
    }
    const QString in_path = m_dir.path() + "/in.json", out_path = m_dir.path() + "/out.json";
    attnlab::testing::writeFile(in_path.toStdString(), in.dump());
    attnlab::testing::runScript(m_python, "reference_contributions.py",
                                {"--model", QString::fromStdString(pkg), "--input", in_path, "--output", out_path});
    const json out = json::parse(attnlab::testing::readFile(out_path.toStdString()));
    for (size_t s = 0; s < results.size(); ++s) {
        const auto& r = results[s];
        const json& ref = out["sentences"][s];
        // The reference's forward pass is the model's (its log-probabilities of the translation's pieces).
        for (size_t i = 0; i < r.best.ids.size(); ++i)
            QVERIFY2(std::abs(r.best.token_log_probs[i] - ref["log_probs"][i].get<double>()) < 1e-4,
                     qPrintable(QString("piece %1: %2 vs %3")
                                    .arg(i)
                                    .arg(r.best.token_log_probs[i])
                                    .arg(ref["log_probs"][i].get<double>())));
        const attnlab::Contributions c = t.contributions(r, attnlab::ContributionMethod::AltiPlus);
        QVERIFY(c.method == attnlab::ContributionMethod::AltiPlus);
        QCOMPARE(c.encoder_self.size(), size_t(config.encoderLayers()));
        QCOMPARE(c.decoder_self.size(), size_t(config.decoderLayers()));
        const double worst =
            std::max({largestDifference(c.encoder_self, ref["encoder_self"]),
                      largestDifference(c.decoder_self, ref["decoder_self"]), largestDifference(c.cross, ref["cross"]),
                      largestDifference(c.source, ref["source"]), largestDifference(c.target, ref["target"])});
        qInfo("sentence %zu: largest difference from the Python reference %.3g", s, worst);
        // float32 activations (the model's pass) against float64 ones: about 1e-7 relative; 1e-5 is every
        // machine's margin (the figure).
        QVERIFY2(worst < 1e-5, qPrintable(QString("sentence %1: largest difference %2").arg(s).arg(worst)));
        for (size_t i = 0; i < c.source.size(); ++i) {
            double sum = 0;
            for (float v : c.source[i]) sum += v;
            for (float v : c.target[i]) sum += v;
            QVERIFY2(std::abs(sum - 1.0) < 1e-6, qPrintable(QString("row %1 sums to %2").arg(i).arg(sum, 0, 'g', 9)));
        }
        QCOMPARE(c.target.size(), r.best.ids.size());
        QCOMPARE(c.source.front().size(), r.source_ids.size());
    }
}

void TestContributions::switchedOffHeadIsZeroedValues() {
    // Head 1 of the encoder's first layer switched off, and the same model with that head's value projection
    // (weight rows and bias) zeroed: every value vector of the head is zero, so through it no token contributes.
    // The two passes compute the same numbers, and ALTI+ must see the same: the switched-off head counted as
    // contributing nothing.
    auto cfg = attnlab::testing::smallConfig(400);
    cfg.attn_bias = true;
    const int head = 1;
    const auto zeroed = [&](attnlab::model::Transformer& m) {
        torch::NoGradGuard no_grad;
        auto module = m->attention(AttentionKind::EncoderSelf, 0);
        module->w_vs->weight.narrow(0, head * cfg.d_v, cfg.d_v).zero_();
        module->w_vs->bias.narrow(0, head * cfg.d_v, cfg.d_v).zero_();
    };
    attnlab::Translator off(package("head-off", cfg, 9), {attnlab::testing::testDevice()});
    attnlab::Translator zero(package("head-zero", cfg, 9, zeroed), {attnlab::testing::testDevice()});
    attnlab::DecodingOptions o;
    o.max_length = 6;
    const auto plain = zero.translate(kSentences[0], o);
    o.ablate = {{AttentionKind::EncoderSelf, 0, head}};
    const auto switched = off.translate(kSentences[0], o);
    QCOMPARE(switched.best.ids, plain.best.ids);
    const auto a = off.contributions(switched, attnlab::ContributionMethod::AltiPlus);
    const auto b = zero.contributions(plain, attnlab::ContributionMethod::AltiPlus);
    const auto as_json = [](const std::vector<Matrix>& maps) { return json(maps); };
    QVERIFY(largestDifference(a.encoder_self, as_json(b.encoder_self)) < 1e-6);
    QVERIFY(largestDifference(a.source, json(b.source)) < 1e-6);
    QVERIFY(largestDifference(a.target, json(b.target)) < 1e-6);
    // And it matters: the same translation with the head on contributes otherwise in that layer.
    auto on = switched;
    on.ablated.clear();
    const auto c = off.contributions(on, attnlab::ContributionMethod::AltiPlus);
    QVERIFY(largestDifference(c.encoder_self.front(), json(a.encoder_self.front())) > 1e-3);
}

void TestContributions::residualAlone_data() {
    QTest::addColumn<attnlab::ModelConfig>("config");
    auto post = attnlab::testing::smallConfig(400);
    post.attn_bias = true;
    QTest::newRow("post-norm") << post;
    auto pre = post;
    pre.norm_position = "pre", pre.final_layer_norm = true;
    QTest::newRow("pre-norm") << pre;
}

void TestContributions::residualAlone() {
    // Every head switched off: each attention block passes on its input (and biases) only, so each piece
    // contributes to itself alone, in every layer and through the model; the source contributes nothing.
    QFETCH(attnlab::ModelConfig, config);
    attnlab::Translator t(package("alone-" + tagName(), config, 11), {attnlab::testing::testDevice()});
    attnlab::DecodingOptions o;
    o.max_length = 5;
    o.ablate = everyHead(config);
    const auto r = t.translate(kSentences[1], o);
    const auto c = t.contributions(r, attnlab::ContributionMethod::AltiPlus);
    double worst = 0;
    for (const auto& m : c.encoder_self) worst = std::max(worst, largestFrom(m, 1));
    for (const auto& m : c.decoder_self) worst = std::max(worst, largestFrom(m, 1));
    for (const auto& m : c.cross) worst = std::max(worst, largestFrom(m, 0));
    worst = std::max({worst, largestFrom(c.source, 0), largestFrom(c.target, 1)});
    QVERIFY2(worst < 1e-6, qPrintable(QString("largest difference from the identity %1").arg(worst)));
}

void TestContributions::emptyTranslationRefused() {
    auto cfg = attnlab::testing::smallConfig(400);
    attnlab::Translator t(package("empty", cfg, 3), {attnlab::testing::testDevice()});
    QCOMPARE(attnlab::testing::messageOf<attnlab::InputError>(
                 [&] { t.contributions(attnlab::TranslationResult{}, attnlab::ContributionMethod::AltiPlus); }),
             QString("alti+ contributions: the translation is empty"));
}

void TestContributions::alignsByAltiPlus() {
    // ALTI+'s source part as an alignment method: its piece map merged to words and linked as the attention
    // methods' maps are (mergeToWords, extractLinks), and alignCorpus scoring alti+ and shift:alti+ against gold
    // beside them, with the counts of those links.
    using K = attnlab::AlignmentMethod::Kind;
    attnlab::Translator t(package("align", attnlab::testing::smallConfig(400), 13), {attnlab::testing::testDevice()});
    const std::vector<std::string> src{"Ein Mann läuft.", "Zwei Hunde spielen im Park."};
    const std::vector<std::string> tgt{"A man runs.", "Two dogs play in the park."};
    const std::vector<attnlab::GoldAlignment> gold{attnlab::parseGoldLine("0-0 1-1 2-2", {}, "g"),
                                                   attnlab::parseGoldLine("0-0 1-1 2-2 3-3 3-4 4-5", {}, "g")};
    const auto rep = attnlab::alignCorpus(t, src, tgt, &gold, "gold.txt");
    const auto forced = t.teacherForce(src, tgt);
    for (bool shift : {false, true}) {
        const attnlab::AlignmentMethod method{K::AltiPlus, 0, 0, shift};
        QCOMPARE(attnlab::parseAlignmentMethod(attnlab::alignmentMethodName(method)), method);
        const auto* got = rep.find(method);
        QVERIFY(got);
        attnlab::AlignmentCounts counts;
        for (size_t p = 0; p < forced.size(); ++p) {
            const auto& r = forced[p];
            const auto c = t.contributions(r, attnlab::ContributionMethod::AltiPlus);
            const auto source = attnlab::groupPiecesIntoWords(r.source_pieces);
            const auto target = attnlab::groupPiecesIntoWords(r.best.pieces);
            const auto map = attnlab::mergeToWords(shift ? attnlab::shiftedRows(c.source) : c.source, target, source);
            const auto links = attnlab::extractLinks(map);
            QCOMPARE(attnlab::alignWords(r, method, 0.0, &c).links, links);
            QCOMPARE(got->links[p], links);
            counts.add(links, gold[p]);
        }
        QCOMPARE(got->counts.aer(), counts.aer());
    }
    QCOMPARE(
        attnlab::testing::messageOf<attnlab::InputError>(
            [&] { attnlab::alignWords(forced[0], attnlab::parseAlignmentMethod("alti+")); }),
        QString("alignment method alti+: needs the translation's ALTI+ contributions (Translator::contributions)"));
}

void TestContributions::int8FromTheWeightsItHolds() {
    // An int8 model's contributions come from a pass in float32 products with the weights it holds (as its
    // attention maps do), not from its int8 products of rounded inputs: they equal those of a float32 model whose
    // weights are the int8 ones dequantized (LowPrecisionMatmul::quantizeRows, per output row), on the same
    // translation. Both sum the same float32 products (another order): 1e-5.
    if (attnlab::testing::testDevice() != "cpu") QSKIP("int8 computes on the CPU");
    if (const auto why = attnlab::computeTypeUnavailable("int8")) QSKIP(why->c_str());
    const auto cfg = attnlab::testing::smallConfig(400);
    const auto rounded = [](attnlab::model::Transformer& m) {
        torch::NoGradGuard no_grad;
        for (auto& p : m->named_parameters()) {
            if (p.value().dim() != 2) continue;  // layer norms and biases stay float32
            auto [q, scale] = attnlab::model::LowPrecisionMatmul::quantizeRows(p.value());
            p.value().copy_(q.to(torch::kFloat32) * scale.unsqueeze(1));
        }
    };
    attnlab::TranslatorOptions int8;
    int8.device = "cpu";
    int8.compute_type = "int8";
    attnlab::Translator q(package("int8", cfg, 17), int8);
    attnlab::Translator f(package("int8-dequantized", cfg, 17, rounded), {"cpu"});
    attnlab::DecodingOptions o;
    o.max_length = 6;
    const auto r = q.translate(kSentences[0], o);
    const auto a = q.contributions(r, attnlab::ContributionMethod::AltiPlus);
    const auto b = f.contributions(r, attnlab::ContributionMethod::AltiPlus);
    const double worst =
        std::max({largestDifference(a.encoder_self, json(b.encoder_self)), largestDifference(a.source, json(b.source)),
                  largestDifference(a.target, json(b.target))});
    QVERIFY2(worst < 1e-5, qPrintable(QString("largest difference %1").arg(worst)));
}

QTEST_GUILESS_MAIN(TestContributions)
#include "tst_contributions.moc"
