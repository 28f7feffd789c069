// ALTI+ (Translator::contributions, core/src/contributions/alti.cpp) against an independent float64 Python
// implementation written from the paper and the authors' code (scripts/reference_contributions.py), on small
// random models of each layer structure AttnLab opens; and the properties any implementation must have: a head
// switched off contributes as a head whose value vectors are zero (nothing), and with every attention output
// zeroed each piece contributes only to itself. Skipped, with a message, where python3-torch is missing, except
// under CI (CI=true), where that fails.
#include "contributions/alti.h"
#include "fixtures.h"
#include "model/low_precision.h"
#include "model/transformer.h"
#include "package/package_io.h"
#include "python_probe.h"

#include <attnlab/alignment.h>
#include <attnlab/contribution_layers.h>
#include <attnlab/contributions.h>
#include <attnlab/head_lab.h>
#include <attnlab/translator.h>

#include <QtTest/QtTest>

#include <torch/torch.h>

#include <algorithm>
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
    void tilesGiveTheSameNumbers_data();
    void tilesGiveTheSameNumbers();
    void tileBound();
    void allClippedRowKeepsItself();
    void stacksWithoutLayers();
    void byDecoderLayer();
    void unknownMethodIsAProgrammingError();
    void alignsByContributionLayers();
    void contributionsOnlyWhereNeeded();

private:
    // A package of `cfg` with perturbed random weights, `edit` applied before it is written.
    std::string package(const QString& name, const attnlab::ModelConfig& cfg, uint64_t seed,
                        const std::function<void(attnlab::model::Transformer&)>& edit = {});
    // scripts/reference_contributions.py's output for `results` of the package `pkg`.
    json reference(const std::string& pkg, const std::vector<attnlab::TranslationResult>& results);
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
    const json out = reference(pkg, results);
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

json TestContributions::reference(const std::string& pkg, const std::vector<attnlab::TranslationResult>& results) {
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
    return json::parse(attnlab::testing::readFile(out_path.toStdString()));
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
    // Every contribution method, whole and by layer (value zeroing too): scored with the links alignWords gives
    // from the translation's contributions of that method.
    const auto methods = attnlab::contributionAlignmentMethods(2);
    for (const auto& method : methods) {
        const auto* got = rep.find(method);
        QVERIFY2(got, attnlab::alignmentMethodName(method).c_str());
        attnlab::AlignmentCounts counts;
        for (size_t p = 0; p < forced.size(); ++p) {
            const auto c = t.contributions(forced[p], *attnlab::contributionMethodOf(method));
            const auto links = attnlab::alignWords(forced[p], method, 0.0, &c).links;
            QCOMPARE(got->links[p], links);
            counts.add(links, gold[p]);
        }
        QCOMPARE(got->counts.aer(), counts.aer());
        QCOMPARE(got->counts.predicted, counts.predicted);
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

void TestContributions::tilesGiveTheSameNumbers_data() {
    QTest::addColumn<attnlab::ModelConfig>("config");
    auto post = attnlab::testing::smallConfig(400);  // post-norm, with a zero first input and relative positions
    post.attn_bias = true, post.max_relative_positions = 2, post.pos_encoding = "none";
    post.start_from_zero_embedding = true;
    QTest::newRow("post-norm, relative positions") << post;
    auto pre = attnlab::testing::smallConfig(400);
    pre.norm_position = "pre", pre.final_layer_norm = true, pre.attn_bias = true;
    QTest::newRow("pre-norm") << pre;
}

void TestContributions::tilesGiveTheSameNumbers() {
    // ALTI+ decomposes each block a tile of queries x keys at a time (alti.h, kAltiTileElements): tiles of one
    // query and one key, of 3 x 3 (ragged at the ends of 9 source and 7 target pieces), of 3 queries x every key,
    // and the whole block as one tile give the same maps (the block's output, blockSum, is summed in chunks of the
    // same query rows: of 1, 3 and every query). Each tile sums the same float64 products of one query
    // and key; only the order of the attention output's sum differs: 1e-12.
    QFETCH(attnlab::ModelConfig, config);
    torch::NoGradGuard no_grad;
    torch::manual_seed(21);
    attnlab::model::Transformer m(config);
    m->eval();
    perturb(m, 22);
    const auto ids = [](std::vector<int64_t> v) { return torch::tensor(v, torch::kInt64).unsqueeze(0); };
    const attnlab::contributions::ForcedPass pass{m, ids({5, 17, 42, 8, 99, 23, 61, 7, 3}),
                                                  ids({2, 31, 12, 77, 140, 9, 55})};
    using Tiles = attnlab::contributions::AltiTiles;
    const auto whole = attnlab::contributions::altiPlus(pass, Tiles{1000, 1000});
    for (const Tiles& tiles : {Tiles{1, 1}, Tiles{3, 3}, Tiles{3, 1000}, Tiles{}}) {
        const auto c = attnlab::contributions::altiPlus(pass, tiles);
        const double worst = std::max(
            {largestDifference(c.encoder_self, json(whole.encoder_self)),
             largestDifference(c.decoder_self, json(whole.decoder_self)), largestDifference(c.cross, json(whole.cross)),
             largestDifference(c.source, json(whole.source)), largestDifference(c.target, json(whole.target))});
        QVERIFY2(worst < 1e-12, qPrintable(QString("tiles %1 x %2: largest difference %3")
                                               .arg(tiles.query_rows)
                                               .arg(tiles.key_columns)
                                               .arg(worst)));
    }
    QCOMPARE(whole.source.size(), size_t(7));
    QCOMPARE(whole.source.front().size(), size_t(9));
}

void TestContributions::tileBound() {
    // The tile of a block holds at most kAltiTileElements (2^20) float64 in each temporary: its vectors
    // (queries x keys x d_model) and its keys' values through W_O (heads x keys x d_model); one query x one key
    // where heads x d_model alone is more. And it is the largest such tile: no more tiles than needed.
    using attnlab::contributions::altiTiles;
    const int64_t bound = attnlab::contributions::kAltiTileElements;
    QCOMPARE(bound, int64_t(1) << 20);
    struct Shape {
        int64_t queries, keys, heads, d_model;
    };
    for (const Shape& s : {Shape{200, 200, 16, 1024}, Shape{1, 1, 8, 512}, Shape{5000, 3000, 16, 1024},
                           Shape{10, 12, 1, 4}, Shape{7, 9, 32, 65536}, Shape{400, 30, 8, 512}}) {
        const auto t = altiTiles(s.queries, s.keys, s.heads, s.d_model);
        const QString shape = QString("%1 x %2, %3 heads x %4").arg(s.queries).arg(s.keys).arg(s.heads).arg(s.d_model);
        QVERIFY2(t.query_rows >= 1 && t.query_rows <= s.queries, qPrintable(shape));
        QVERIFY2(t.key_columns >= 1 && t.key_columns <= s.keys, qPrintable(shape));
        if (s.heads * s.d_model > bound) {  // one key's values through W_O alone are more: one key at a time
            QVERIFY2(t.key_columns == 1 && t.query_rows * s.d_model <= bound, qPrintable(shape));
            continue;
        }
        QVERIFY2(t.query_rows * t.key_columns * s.d_model <= bound, qPrintable(shape));
        QVERIFY2(s.heads * t.key_columns * s.d_model <= bound, qPrintable(shape));
        QVERIFY2(t.key_columns == s.keys || s.heads * (t.key_columns + 1) * s.d_model > bound, qPrintable(shape));
        QVERIFY2(t.query_rows == s.queries || (t.query_rows + 1) * t.key_columns * s.d_model > bound,
                 qPrintable(shape));
    }
    // NLLB-600M's width and 200 pieces: 64 keys x 16 queries a tile (8 MiB), where the whole block was 200 x 200.
    const auto nllb = altiTiles(200, 200, 16, 1024);
    QCOMPARE(nllb.key_columns, int64_t(64));
    QCOMPARE(nllb.query_rows, int64_t(16));
}

void TestContributions::allClippedRowKeepsItself() {
    // A post-norm block whose layer norm has gain 0 and bias 0 outputs 0 for every query: every token's distance
    // to the output is its own size, every score clips to 0. Such a row stands for the identity (the token keeps
    // itself): its own key in the encoder's first self-attention, the residual in the last decoder layer's
    // cross-attention (no source piece). Through the model the rows still split 1 between source and target, with
    // no NaN (the authors' normalisation divided 0 by 0: every row NaN from that layer on).
    auto cfg = attnlab::testing::smallConfig(400);
    const auto silenced = [&](attnlab::model::Transformer& m) {
        torch::NoGradGuard no_grad;
        for (auto module : {m->attention(AttentionKind::EncoderSelf, 0),
                            m->attention(AttentionKind::Cross, int(cfg.decoderLayers()) - 1)}) {
            module->layer_norm->weight.zero_();
            module->layer_norm->bias.zero_();
        }
    };
    attnlab::Translator t(package("silenced", cfg, 23, silenced), {attnlab::testing::testDevice()});
    attnlab::DecodingOptions o;
    o.max_length = 6;
    const auto r = t.translate(kSentences[0], o);
    const auto c = t.contributions(r, attnlab::ContributionMethod::AltiPlus);
    QVERIFY2(largestFrom(c.encoder_self.front(), 1) == 0, "the silenced encoder layer is the identity");
    QVERIFY2(largestFrom(c.cross.back(), 0) == 0, "the silenced cross-attention takes nothing from the source");
    for (size_t i = 0; i < c.source.size(); ++i) {
        double sum = 0;
        for (float v : c.source[i]) sum += v;
        for (float v : c.target[i]) sum += v;
        QVERIFY2(std::abs(sum - 1.0) < 1e-6, qPrintable(QString("row %1 sums to %2").arg(i).arg(sum, 0, 'g', 9)));
    }
    // The last cross-attention passes the decoder's stream on: through the model the rows are the layer before's
    // spread by the last self-attention, not 0.
    double source_total = 0;
    for (const auto& row : c.source)
        for (float v : row) source_total += v;
    QVERIFY2(source_total > 0.1, qPrintable(QString("the source's share %1").arg(source_total)));
}

void TestContributions::stacksWithoutLayers() {
    // ModelConfig refuses a model without layers (n_layers >= 1), so ALTI+ by layer is checked on hand-made maps: a
    // decoder without layers has no layer to report, and maps that do not fit together are refused by message,
    // not read beyond their ends.
    attnlab::Contributions none;
    none.source = none.target = {{1.f}};
    QVERIFY(attnlab::altiPlusSourceByLayer(none).empty());
    attnlab::Contributions odd = none;
    odd.decoder_self = {{{1.f}}};
    QCOMPARE(attnlab::testing::messageOf<attnlab::InputError>([&] { attnlab::altiPlusSourceByLayer(odd); }),
             QString("ALTI+ by layer: 0 cross-attention maps for 1 decoder layers"));
    odd.cross = {{{0.5f}}};
    odd.encoder_self = {{{1.f, 0.f}}};  // a row of 2 for a source of 1 piece
    QCOMPARE(
        attnlab::testing::messageOf<attnlab::InputError>([&] { attnlab::altiPlusSourceByLayer(odd); }),
        QString("ALTI+ by layer: a map of the wrong size (encoder layer 0: 1 x 2 for 1 source and 1 target pieces)"));
}

void TestContributions::byDecoderLayer() {
    // ALTI+'s source part through the first l + 1 decoder layers (the authors' per-layer alignment maps): after
    // the first layer it is that layer's cross-attention times the encoder's rollout (computed here from the
    // layer-wise maps by hand), after the last it is Contributions::source (recomputed from the float32 maps: 1e-6).
    auto cfg = attnlab::testing::smallConfig(400);
    cfg.n_dec_layers = 3;
    attnlab::Translator t(package("by-layer", cfg, 29), {attnlab::testing::testDevice()});
    attnlab::DecodingOptions o;
    o.max_length = 6;
    const auto r = t.translate(kSentences[1], o);
    const auto c = t.contributions(r, attnlab::ContributionMethod::AltiPlus);
    const auto layers = attnlab::altiPlusSourceByLayer(c);
    QCOMPARE(layers.size(), size_t(3));
    QVERIFY(largestDifference(layers.back(), json(c.source)) < 1e-6);
    const size_t s = c.source.front().size();
    Matrix encoder = identityLike(c.encoder_self.front(), 1);
    for (const Matrix& layer : c.encoder_self) {  // R = C_L ... C_1
        Matrix next(s, std::vector<float>(s, 0.f));
        for (size_t i = 0; i < s; ++i)
            for (size_t j = 0; j < s; ++j)
                for (size_t k = 0; k < s; ++k) next[i][j] += layer[i][k] * encoder[k][j];
        encoder = next;
    }
    Matrix first(c.cross.front().size(), std::vector<float>(s, 0.f));
    for (size_t i = 0; i < first.size(); ++i)
        for (size_t j = 0; j < s; ++j)
            for (size_t k = 0; k < s; ++k) first[i][j] += c.cross.front()[i][k] * encoder[k][j];
    QVERIFY(largestDifference(layers.front(), json(first)) < 1e-6);
    QVERIFY(largestDifference(layers.front(), json(c.source)) > 1e-3);  // the layers differ
    auto vz = c;
    vz.method = attnlab::ContributionMethod::ValueZeroing;
    QCOMPARE(attnlab::testing::messageOf<attnlab::InputError>([&] { attnlab::altiPlusSourceByLayer(vz); }),
             QString("ALTI+ by layer: the contributions are value-zeroing, not alti+"));
    // The middle layer (neither the first's product nor the whole model's source) against the float64 reference's
    // rollout after each layer: float32 maps against float64 ones, 1e-5 as matchesReference.
    QVERIFY(largestDifference(layers[1], json(layers[0])) > 1e-3);
    QVERIFY(largestDifference(layers[1], json(c.source)) > 1e-3);
    if (!m_have_python) ATTNLAB_REQUIRE_PYTHON(m_python, (QStringList{"torch", "numpy"}), "ALTI+ by layer cross-check");
    const json ref = reference(t.info().package_dir, {r})["sentences"][0];
    const double middle = largestDifference(layers[1], ref["source_by_layer"][1]);
    qInfo("the middle layer's largest difference from the Python reference: %.3g", middle);
    QVERIFY2(middle < 1e-5, qPrintable(QString("largest difference %1").arg(middle)));
}

void TestContributions::unknownMethodIsAProgrammingError() {
    attnlab::Translator t(package("unknown", attnlab::testing::smallConfig(400), 31), {attnlab::testing::testDevice()});
    attnlab::DecodingOptions o;
    o.max_length = 4;
    const auto r = t.translate(kSentences[0], o);
    QCOMPARE(attnlab::testing::messageOf<attnlab::InternalError>(
                 [&] { t.contributions(r, static_cast<attnlab::ContributionMethod>(7)); }),
             QString("contributions: ContributionMethod 7 is not one the dispatch knows (a programming error)"));
}

void TestContributions::alignsByContributionLayers() {
    // Value zeroing and each decoder layer as alignment methods beside alti+: the names read back, each method's
    // links are its piece map merged to words and linked as the attention methods' (value-zeroing: value zeroing's
    // source; value-zeroing:layer:L: its layer-L cross-attention map; alti+:layer:L: ALTI+ through layers 0..L), and
    // a method given another method's contributions or a layer the model lacks is refused by message.
    using K = attnlab::AlignmentMethod::Kind;
    using attnlab::ContributionMethod;
    const auto methods = attnlab::contributionAlignmentMethods(2);
    QCOMPARE(methods.size(), size_t(2 * 2 * (1 + 2)));  // (ALTI+, value zeroing) x (whole, 2 layers) x shifted
    std::vector<std::string> names;
    for (const auto& m : methods) {
        names.push_back(attnlab::alignmentMethodName(m));
        QCOMPARE(attnlab::parseAlignmentMethod(names.back()), m);
    }
    QCOMPARE(names, (std::vector<std::string>{"alti+", "alti+:layer:0", "alti+:layer:1", "value-zeroing",
                                              "value-zeroing:layer:0", "value-zeroing:layer:1", "shift:alti+",
                                              "shift:alti+:layer:0", "shift:alti+:layer:1", "shift:value-zeroing",
                                              "shift:value-zeroing:layer:0", "shift:value-zeroing:layer:1"}));
    QVERIFY(attnlab::parseAlignmentMethod("sym:union:value-zeroing:layer:3").kind == K::ValueZeroingLayer);
    for (const char* bad : {"alti+:layer:", "alti+:layer:x", "value-zeroing:1", "alti+:layer:1:2", "value_zeroing"})
        QVERIFY2(attnlab::testing::messageOf<attnlab::ConfigError>([&] {
                     attnlab::parseAlignmentMethod(bad);
                 }).startsWith(QString("alignment method '%1' is not").arg(bad)),
                 bad);
    QCOMPARE(attnlab::alignmentMethodProblem(attnlab::parseAlignmentMethod("alti+:layer:2"), 2, 4),
             std::optional<std::string>("layer 2 is out of range (0..1)"));

    attnlab::Translator t(package("align-layers", attnlab::testing::smallConfig(400), 37),
                          {attnlab::testing::testDevice()});
    const auto r = t.teacherForce({"Zwei Hunde spielen im Park."}, {"Two dogs play in the park."}).front();
    const auto alti = t.contributions(r, ContributionMethod::AltiPlus);
    const auto vz = t.contributions(r, ContributionMethod::ValueZeroing);
    const auto source = attnlab::groupPiecesIntoWords(r.source_pieces);
    const auto target = attnlab::groupPiecesIntoWords(r.best.pieces);
    const auto by_layer = attnlab::altiPlusSourceByLayer(alti);
    const std::vector<std::pair<std::string, const Matrix*>> expected{
        {"value-zeroing", &vz.source},           {"value-zeroing:layer:0", &vz.cross[0]},
        {"value-zeroing:layer:1", &vz.cross[1]}, {"alti+:layer:0", &by_layer[0]},
        {"alti+:layer:1", &by_layer[1]},         {"alti+", &alti.source}};
    const auto all_maps = attnlab::wordMapsOfContributions(r, {alti, vz});
    QCOMPARE(all_maps.size(), methods.size());
    for (bool shift : {false, true})
        for (const auto& [name, piece_map] : expected) {
            auto method = attnlab::parseAlignmentMethod(name);
            method.shift = shift;
            const auto& c = attnlab::contributionMethodOf(method) == ContributionMethod::AltiPlus ? alti : vz;
            const auto map =
                attnlab::mergeToWords(shift ? attnlab::shiftedRows(*piece_map) : *piece_map, target, source);
            QCOMPARE(attnlab::alignWords(r, method, 0.0, &c).links, attnlab::extractLinks(map));
            const size_t at = size_t(std::find(methods.begin(), methods.end(), method) - methods.begin());
            QCOMPARE(all_maps.at(at), map);
        }
    // The layers differ from the whole model's (else the per-layer methods would say nothing new).
    QVERIFY(largestDifference(vz.cross[0], json(vz.source)) > 1e-3);
    QCOMPARE(attnlab::testing::messageOf<attnlab::InputError>(
                 [&] { attnlab::alignWords(r, attnlab::parseAlignmentMethod("value-zeroing:layer:1"), 0.0, &alti); }),
             QString("alignment method value-zeroing:layer:1: needs the translation's value zeroing contributions "
                     "(Translator::contributions)"));
    QCOMPARE(attnlab::testing::messageOf<attnlab::InputError>(
                 [&] { attnlab::alignWords(r, attnlab::parseAlignmentMethod("alti+:layer:2"), 0.0, &alti); }),
             QString("alignment method alti+:layer:2: layer 2 is out of range (0..1)"));
    // ALTI+'s alone: its methods' maps, in the same order (alignCorpus without gold computes only what it writes).
    const auto alti_maps = attnlab::wordMapsOfContributions(r, {alti});
    std::vector<Matrix> expected_alti;
    for (size_t m = 0; m < methods.size(); ++m)
        if (attnlab::contributionMethodOf(methods[m]) == ContributionMethod::AltiPlus)
            expected_alti.push_back(all_maps[m]);
    QCOMPARE(alti_maps, expected_alti);
}

void TestContributions::contributionsOnlyWhereNeeded() {
    // A contribution method costs passes of its own (value zeroing ~1.5 translations), so alignCorpus computes one
    // only when its links are used: with gold every one (every method is scored), without gold only the method
    // whose links are written (`chosen`), none for an attention method. The report lists what was computed;
    // the links of a method computed are the same either way.
    attnlab::Translator t(package("align-needed", attnlab::testing::smallConfig(400), 41),
                          {attnlab::testing::testDevice()});
    const std::vector<std::string> src{"Ein Mann läuft."}, tgt{"A man runs."};
    const auto contributionMethods = [](const attnlab::AlignmentReport& rep) {
        std::vector<std::string> names;
        for (const auto& m : rep.methods)
            if (attnlab::contributionMethodOf(m.method)) names.push_back(attnlab::alignmentMethodName(m.method));
        return names;
    };
    const auto plain = attnlab::alignCorpus(t, src, tgt, nullptr, "");
    QCOMPARE(contributionMethods(plain), std::vector<std::string>{});
    const auto layer = attnlab::parseAlignmentMethod("layer:1");
    const auto by_layer = attnlab::alignCorpus(t, src, tgt, nullptr, "", 0.0, {}, nullptr, {}, {}, &layer);
    QCOMPARE(contributionMethods(by_layer), std::vector<std::string>{});
    QCOMPARE(by_layer.find(layer)->links, plain.find(layer)->links);
    const auto vz = attnlab::parseAlignmentMethod("shift:value-zeroing:layer:0");
    const auto one = attnlab::alignCorpus(t, src, tgt, nullptr, "", 0.0, {}, &t, {}, {}, &vz);
    std::vector<std::string> expected;
    for (const char* how :
         {"", "sym:intersect:", "sym:union:", "sym:grow-diag:", "sym:grow-diag-final:", "sym:grow-diag-final-and:"})
        for (const char* shift : {"", "shift:"})
            for (const char* m : {"value-zeroing", "value-zeroing:layer:0", "value-zeroing:layer:1"})
                expected.push_back(std::string(how) + shift + m);
    auto got = contributionMethods(one);
    std::sort(got.begin(), got.end());
    std::sort(expected.begin(), expected.end());
    QCOMPARE(got, expected);
    const std::vector<attnlab::GoldAlignment> gold{attnlab::parseGoldLine("0-0 1-1 2-2", {}, "g")};
    const auto scored = attnlab::alignCorpus(t, src, tgt, &gold, "gold.txt", 0.0, {}, nullptr, {}, {}, &layer);
    QCOMPARE(contributionMethods(scored).size(), attnlab::contributionAlignmentMethods(2).size());
    QCOMPARE(scored.find(vz)->links, one.find(vz)->links);
}

QTEST_GUILESS_MAIN(TestContributions)
#include "tst_contributions.moc"
