// The teaching explanations (core/src/decoding/explain.cpp) against independent computations from
// the model's weights: one attention weight opened up, one token before the first layer, the
// masks of a two-sentence batch, and the errors for indices out of range.
#include "ct2_reference_run.h"
#include "decoding/engine.h"
#include "fixtures.h"

#include <attnlab/attention_flow.h>
#include <attnlab/errors.h>
#include <attnlab/explain.h>
#include <attnlab/teaching_json.h>
#include <attnlab/translator.h>

#include <nlohmann/json.hpp>

#include <QtTest/QtTest>

#include <cmath>

using attnlab::AttentionKind;
using attnlab::CellRef;
using attnlab::DecodingOptions;
using attnlab::Translator;

namespace {
// The sinusoid of the paper, by its formula, in double precision.
double sinusoid(int pos, int i, int d) {
    const double angle = pos / std::pow(10000.0, 2.0 * (i / 2) / d);
    return i % 2 == 0 ? std::sin(angle) : std::cos(angle);
}

// Layer norm by its definition (biased variance, eps 1e-6), in double precision.
std::vector<double> layerNorm(const std::vector<double>& x, const torch::Tensor& gamma, const torch::Tensor& beta) {
    double mean = 0, var = 0;
    for (double v : x) mean += v;
    mean /= double(x.size());
    for (double v : x) var += (v - mean) * (v - mean);
    var /= double(x.size());
    std::vector<double> y;
    for (size_t i = 0; i < x.size(); ++i)
        y.push_back((x[i] - mean) / std::sqrt(var + 1e-6) * gamma[i].item<double>() + beta[i].item<double>());
    return y;
}

// Row `h` of head h's projection: x [d_model] times W[h*dk:(h+1)*dk, :]^T, in double.
std::vector<double> project(const std::vector<double>& x, const torch::Tensor& w, int h, int dk) {
    std::vector<double> out(dk, 0.0);
    auto wa = w.accessor<float, 2>();
    for (int r = 0; r < dk; ++r)
        for (size_t c = 0; c < x.size(); ++c) out[r] += double(wa[h * dk + r][c]) * x[c];
    return out;
}
}  // namespace

class TestExplain : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void encoderWeightFromTheWeights();
    void rowsAreTheMaps();
    void decoderMaskIsExplained();
    void tokenInsideFromTheWeights();
    void masksOfTwoSentences();
    void outOfRangeIsNamed();
    void explanationJsonKeys();
    void relativeExplanationJsonKeys();
    void minimalPairDifference();
    void valueNormsFromTheWeights();

private:
    // The first layer's input of source piece `pos`, computed here from the weights.
    std::vector<double> firstLayerInput(const attnlab::TranslationResult& r, int pos) const;

    QTemporaryDir m_dir;
    std::unique_ptr<Translator> m_t;
    std::unique_ptr<attnlab::decoding::Engine> m_engine;  // the same package, for its weights
    attnlab::ModelConfig m_cfg;
};

void TestExplain::initTestCase() {
    const std::string tok = attnlab::testing::trainTokenizer(m_dir.path().toStdString(), 400);
    m_cfg = attnlab::testing::smallConfig(400);
    m_cfg.n_position = 40;
    attnlab::testing::writeRandomPackage(m_dir.path().toStdString() + "/pkg", tok, m_cfg);
    m_t = std::make_unique<Translator>(m_dir.path().toStdString() + "/pkg",
                                       attnlab::TranslatorOptions{attnlab::testing::testDevice()});
    m_engine = std::make_unique<attnlab::decoding::Engine>(m_dir.path().toStdString() + "/pkg",
                                                           attnlab::TranslatorOptions{"cpu"});
    QVERIFY(m_cfg.scaleEmb());
}

std::vector<double> TestExplain::firstLayerInput(const attnlab::TranslationResult& r, int pos) const {
    auto model = m_engine->model();
    const auto& w = model->encoder->embeddingWeight();
    const int d = int(m_cfg.d_model);
    std::vector<double> x(d);
    for (int i = 0; i < d; ++i)
        x[i] = w[r.source_ids[pos]][i].item<double>() * std::sqrt(double(d)) + sinusoid(pos, i, d);
    return layerNorm(x, model->encoder->layer_norm->weight, model->encoder->layer_norm->bias);
}

void TestExplain::encoderWeightFromTheWeights() {
    // Encoder layer 0: its input is embedding * sqrt(d_model) + PE, layer-normed, all computed
    // here from the weights in double precision; q and k are that input times W_q / W_k. The
    // model computes in float32 with another summation order: 1e-4 on values of order 1.
    const auto r = m_t->translate("Ein Mädchen spielt mit einem Ball.");
    auto model = m_engine->model();
    auto attn = model->encoder->layer_stack[0]->as<attnlab::model::EncoderLayer>()->slf_attn;
    const int dk = int(m_cfg.d_k), S = int(r.source_ids.size());
    for (int head : {0, 3}) {
        const int i = 1;
        std::vector<std::vector<double>> keys;
        for (int j = 0; j < S; ++j) keys.push_back(project(firstLayerInput(r, j), attn->w_ks->weight, head, dk));
        const auto q = project(firstLayerInput(r, i), attn->w_qs->weight, head, dk);
        for (int j = 0; j < S; ++j) {
            const auto e = m_t->explain(r, {AttentionKind::EncoderSelf, 0, head, i, j});
            QCOMPARE(int(e.query_vector.size()), dk);
            double dot = 0;
            for (int c = 0; c < dk; ++c) {
                QVERIFY(std::abs(e.query_vector[c] - q[c]) < 1e-4);
                QVERIFY(std::abs(e.key_vector[c] - keys[j][c]) < 1e-4);
                QVERIFY(std::abs(e.products[c] - double(e.query_vector[c]) * e.key_vector[c]) < 1e-12);
                dot += q[c] * keys[j][c];
            }
            QVERIFY(std::abs(e.dot - dot) < 1e-3);
            QCOMPARE(e.temperature, std::sqrt(double(dk)));
            QVERIFY(std::abs(e.scaled - e.dot / e.temperature) < 1e-12);
            // The model's own row: (q / temperature) . k, the same number up to float rounding.
            QVERIFY(std::abs(e.row_scaled[j] - e.scaled) < 1e-4);
            QVERIFY(!e.masked && e.mask_reason.empty());
        }
        // The softmax of the row, by hand, is the row of weights.
        const auto e = m_t->explain(r, {AttentionKind::EncoderSelf, 0, head, i, 2});
        double z = 0;
        for (float v : e.row_scaled) z += std::exp(double(v));
        for (int j = 0; j < S; ++j) QVERIFY(std::abs(std::exp(double(e.row_scaled[j])) / z - e.row_weights[j]) < 1e-6);
        QCOMPARE(e.weight, double(e.row_weights[2]));
        // The head's output is the weighted sum of the value rows.
        for (int c = 0; c < int(m_cfg.d_v); ++c) {
            double sum = 0;
            for (int j = 0; j < S; ++j) sum += double(e.row_weights[j]) * e.value_vectors[j][c];
            QVERIFY(std::abs(sum - e.head_output[c]) < 1e-5);
        }
    }
}

// Kobayashi et al.'s ||f_h(x_j)||: encoder layer 0's from the weights by hand (the first layer's
// input, W_V's rows of the head, then W_O's columns of the head, in double), every kind's shapes
// those of the maps, and the weighted map of the attention flow header from them.
void TestExplain::valueNormsFromTheWeights() {
    const auto r = m_t->translate("Ein Mädchen spielt mit einem Ball.");
    const auto norms = m_t->valueNorms(r);
    auto model = m_engine->model();
    auto attn = model->encoder->layer_stack[0]->as<attnlab::model::EncoderLayer>()->slf_attn;
    const int dv = int(m_cfg.d_v), S = int(r.source_ids.size()), d = int(m_cfg.d_model);
    auto wo = attn->fc->weight.accessor<float, 2>();
    for (int head : {0, 2})
        for (int j = 0; j < S; ++j) {
            const auto v = project(firstLayerInput(r, j), attn->w_vs->weight, head, dv);
            double sq = 0;
            for (int o = 0; o < d; ++o) {
                double f = 0;
                for (int c = 0; c < dv; ++c) f += double(wo[o][head * dv + c]) * v[c];
                sq += f * f;
            }
            // float32 in the model, double here: 1e-4 relative
            QVERIFY2(std::abs(norms.encoder_self[0][head][j] - std::sqrt(sq)) < 1e-4 * std::sqrt(sq) + 1e-6,
                     qPrintable(QString("head %1 key %2: %3 vs %4")
                                    .arg(head)
                                    .arg(j)
                                    .arg(norms.encoder_self[0][head][j])
                                    .arg(std::sqrt(sq))));
        }
    const size_t T = r.best.ids.size();
    QCOMPARE(norms.encoder_self.size(), size_t(m_cfg.encoderLayers()));
    QCOMPARE(norms.decoder_self.size(), size_t(m_cfg.decoderLayers()));
    QCOMPARE(norms.cross[0].size(), size_t(m_cfg.n_head));
    QCOMPARE(norms.cross[0][0].size(), size_t(S));  // cross-attention's keys are the source pieces
    QCOMPARE(norms.decoder_self[1][3].size(), T);   // decoder self-attention's, the decoder's input
    const auto weighted = attnlab::weightedByValueNorms(r.cross, norms.cross);
    QCOMPARE(weighted[1][2][0][3], r.cross[1][2][0][3] * norms.cross[1][2][3]);
    // An ablated translation's norms come from the pass with those heads off: layer 0's keys are the
    // same, layer 1's (whose input the switched-off head fed) are not.
    DecodingOptions ablate;
    ablate.ablate = {{AttentionKind::EncoderSelf, 0, 1}};
    const auto ra = m_t->translate("Ein Mädchen spielt mit einem Ball.", ablate);
    const auto na = m_t->valueNorms(ra);
    QCOMPARE(na.encoder_self[0], norms.encoder_self[0]);
    QVERIFY(na.encoder_self[1] != norms.encoder_self[1]);
    QCOMPARE(m_t->valueNorms(r).encoder_self[1], norms.encoder_self[1]);  // and back, not the ablated pass kept
    attnlab::TranslationResult empty;
    try {
        m_t->valueNorms(empty);
        QFAIL("no error for an empty translation");
    } catch (const attnlab::InputError& e) {
        QCOMPARE(QString(e.what()), QString("value norms: the translation is empty"));
    }
}

void TestExplain::rowsAreTheMaps() {
    // The explanation's softmax row is the map's row: both come from a teacher-forced pass of the
    // same shape over the same tokens (same kernels), so they agree to float rounding (1e-6).
    DecodingOptions o;
    o.max_length = 8;
    const auto r = m_t->translate("Der Hund läuft über die Wiese.", o);
    for (auto kind : {AttentionKind::EncoderSelf, AttentionKind::DecoderSelf, AttentionKind::Cross}) {
        const auto& maps = kind == AttentionKind::EncoderSelf   ? r.encoder_self
                           : kind == AttentionKind::DecoderSelf ? r.decoder_self
                                                                : r.cross;
        for (int layer = 0; layer < int(m_cfg.n_layers); ++layer) {
            const int head = (layer + 1) % int(m_cfg.n_head);
            const int rows = int(maps[layer][head].size());
            const int query = rows - 1;
            const auto e = m_t->explain(r, {kind, layer, head, query, 0});
            QCOMPARE(e.row_weights.size(), maps[layer][head][query].size());
            for (size_t j = 0; j < e.row_weights.size(); ++j)
                QVERIFY2(std::abs(e.row_weights[j] - maps[layer][head][query][j]) < 1e-6,
                         qPrintable(QString::fromStdString(attnlab::attentionKindName(kind))));
        }
    }
    // The pieces named are the map's labels.
    const auto e = m_t->explain(r, {AttentionKind::Cross, 1, 2, 0, 1});
    QCOMPARE(e.query_piece, r.best.pieces[0]);
    QCOMPARE(e.key_piece, r.source_pieces[1]);
    QCOMPARE(e.row_pieces, r.source_pieces);
    const auto d = m_t->explain(r, {AttentionKind::DecoderSelf, 0, 0, 0, 0});
    QCOMPARE(d.row_pieces, r.decoder_input_pieces);
}

void TestExplain::decoderMaskIsExplained() {
    DecodingOptions o;
    o.max_length = 8;
    const auto r = m_t->translate("Eine Frau liest ein Buch.", o);
    const int T = int(r.best.ids.size());
    QVERIFY(T >= 3);
    const auto e = m_t->explain(r, {AttentionKind::DecoderSelf, 1, 1, 1, 2});
    QVERIFY(e.masked);
    QCOMPARE(e.mask_reason, std::string("future position"));
    QCOMPARE(e.weight, 0.0);
    QCOMPARE(e.key_piece, r.decoder_input_pieces[2]);
    for (int j = 0; j < T; ++j) {
        QCOMPARE(bool(e.row_masked[j]), j > 1);
        if (j > 1) QCOMPARE(e.row_weights[j], 0.f);
    }
    const auto seen = m_t->explain(r, {AttentionKind::DecoderSelf, 1, 1, 1, 1});
    QVERIFY(!seen.masked && seen.mask_reason.empty() && seen.weight > 0);
    // Another sentence, same kind and layer: its own pass (the engine caches the last pass per
    // tokens, kind and layer), so its row is its own map's.
    const auto other = m_t->translate("Zwei Hunde spielen im Schnee.", o);
    const auto e2 = m_t->explain(other, {AttentionKind::DecoderSelf, 1, 1, 1, 0});
    for (size_t j = 0; j < e2.row_weights.size(); ++j)
        QVERIFY(std::abs(e2.row_weights[j] - other.decoder_self[1][1][1][j]) < 1e-6);
    const auto again = m_t->explain(r, {AttentionKind::DecoderSelf, 1, 1, 1, 0});
    for (size_t j = 0; j < again.row_weights.size(); ++j)
        QVERIFY(std::abs(again.row_weights[j] - r.decoder_self[1][1][1][j]) < 1e-6);
}

void TestExplain::tokenInsideFromTheWeights() {
    const auto r = m_t->translate("Ein Mädchen spielt mit einem Ball.");
    auto model = m_engine->model();
    const int d = int(m_cfg.d_model), pos = 3;
    const auto t = m_t->tokenInside(r, false, pos);
    QCOMPARE(t.token_id, r.source_ids[pos]);
    QCOMPARE(t.piece, r.source_pieces[pos]);
    QCOMPARE(t.scale, std::sqrt(double(d)));
    const auto& w = model->encoder->embeddingWeight();
    for (int i = 0; i < d; ++i) {
        QCOMPARE(t.embedding[i], w[t.token_id][i].item<float>());
        QVERIFY(std::abs(t.scaled[i] - t.embedding[i] * t.scale) < 1e-5);
        QVERIFY(std::abs(t.positional[i] - sinusoid(pos, i, d)) < 1e-6);  // the table is float32
        QVERIFY(std::abs(t.sum[i] - (t.scaled[i] + t.positional[i])) < 1e-5);
    }
    const auto expected = firstLayerInput(r, pos);
    for (int i = 0; i < d; ++i) QVERIFY(std::abs(t.normalized[i] - expected[i]) < 1e-4);
    // And it is what the first layer's attention projects: q of that piece, from the explanation.
    auto attn = model->encoder->layer_stack[0]->as<attnlab::model::EncoderLayer>()->slf_attn;
    std::vector<double> normalized(t.normalized.begin(), t.normalized.end());
    const auto q = project(normalized, attn->w_qs->weight, 2, int(m_cfg.d_k));
    const auto e = m_t->explain(r, {AttentionKind::EncoderSelf, 0, 2, pos, 0});
    for (size_t c = 0; c < q.size(); ++c) QVERIFY(std::abs(q[c] - e.query_vector[c]) < 1e-4);
    // A target piece: the decoder's own embedding (tied here) and its input pieces.
    const auto tt = m_t->tokenInside(r, true, 0);
    QCOMPARE(tt.piece, std::string("<s>"));
    QVERIFY(tt.target);
}

void TestExplain::masksOfTwoSentences() {
    DecodingOptions o;
    o.max_length = 6;
    const auto a = m_t->translate("Ein Hund.", o);
    const auto b = m_t->translate("Eine Frau hält ihre Hände vor dem großen Gebäude.", o);
    const auto m = m_t->masks({a, b});
    QCOMPARE(m.encoder.size(), size_t(2));
    const size_t S = std::max(a.source_ids.size(), b.source_ids.size());
    QVERIFY(a.source_ids.size() < S);
    for (int s = 0; s < 2; ++s) {
        const auto& r = s == 0 ? a : b;
        const size_t len = r.source_ids.size(), tlen = r.best.ids.size();
        QCOMPARE(m.source_pieces[s].size(), S);
        QCOMPARE(m.encoder[s].size(), S);
        for (size_t i = 0; i < S; ++i)
            for (size_t j = 0; j < S; ++j) QCOMPARE(bool(m.encoder[s][i][j]), j < len);  // padded keys removed
        const size_t T = m.decoder[s].size();
        QCOMPARE(m.target_pieces[s].size(), T);
        for (size_t i = 0; i < T; ++i) {
            for (size_t j = 0; j < T; ++j) QCOMPARE(bool(m.decoder[s][i][j]), j <= i && j < tlen);  // no future, no pad
            for (size_t j = 0; j < S; ++j) QCOMPARE(bool(m.cross[s][i][j]), j < len);
        }
        if (len < S) QCOMPARE(m.source_pieces[s].back(), std::string("<pad>"));
    }
}

void TestExplain::outOfRangeIsNamed() {
    const auto r = m_t->translate("Ein Hund.");
    auto message = [&](CellRef c) -> std::string {
        try {
            m_t->explain(r, c);
        } catch (const attnlab::InputError& e) {
            return e.what();
        }
        return "no error";
    };
    QCOMPARE(message({AttentionKind::Cross, 2, 0, 0, 0}),
             std::string("layer 2 is out of range: there are 2 layers (0-based: 0..1)"));
    QCOMPARE(message({AttentionKind::Cross, 0, -1, 0, 0}),
             std::string("head -1 is out of range: there are 4 heads per layer (0-based: 0..3)"));
    const int S = int(r.source_ids.size());
    QCOMPARE(message({AttentionKind::EncoderSelf, 0, 0, 0, S}),
             "key " + std::to_string(S) + " is out of range: there are " + std::to_string(S) +
                 " source pieces (0-based: 0.." + std::to_string(S - 1) + ")");
    QVERIFY(message({AttentionKind::DecoderSelf, 0, 0, 99, 0}).rfind("query 99 is out of range", 0) == 0);
    QVERIFY_THROWS_EXCEPTION(attnlab::InputError, m_t->tokenInside(r, true, 99));
}

void TestExplain::explanationJsonKeys() {
    // The keys the issue names, with the explanation's numbers.
    const auto r = m_t->translate("Ein Hund.");
    const auto e = m_t->explain(r, {AttentionKind::Cross, 1, 3, 0, 1});
    const auto j = nlohmann::json::parse(attnlab::explanationJson(e));
    for (const char* k : {"query_vector", "key_vector", "products", "dot", "temperature", "scaled", "masked",
                          "row_scaled", "row_weights", "weight"})
        QVERIFY2(j.contains(k), k);
    QCOMPARE(j["kind"].get<std::string>(), std::string("cross"));
    QCOMPARE(j["weight"].get<double>(), e.weight);
    QCOMPARE(j["row_weights"].size(), e.row_weights.size());
    QCOMPARE(j["query_vector"][0].get<float>(), e.query_vector[0]);
    // No relative positions: the score is the content score alone, and there is no "relative" part.
    QCOMPARE(j["score"].get<double>(), j["scaled"].get<double>());
    QVERIFY(!j.contains("relative"));
    QVERIFY(m_t->tokenInside(r, false, 0).absolute_positions);
}

// A model with relative positions (scripts/ct2_reference.py, width 16, one layer): "score" is "scaled" +
// "relative.scaled"; "row_scaled" holds every key's whole score and "relative.row" its relative part, each key's
// checked against that key's own explanation (its content score q.k/sqrt(d_k) from its vectors, and its q.a^K).
void TestExplain::relativeExplanationJsonKeys() {
    const QString python = qEnvironmentVariable("ATTNLAB_PYTHON", "/usr/bin/python3");
    ATTNLAB_REQUIRE_REFERENCE_PYTHON(python, "a model with relative positions");
    const QString dir = attnlab::testing::makeCt2Model(
        python, m_dir.path(), "relative",
        {"--layers", "1", "--d-model", "16", "--heads", "2", "--ffn", "32", "--vocab-size", "60", "--relative-position",
         "1", "--relative-separate-values", "--seed", "5"});
    const auto vocab =
        nlohmann::json::parse(attnlab::testing::readFile((dir + "/shared_vocabulary.json").toStdString()));
    std::string text;
    for (int i = 10; i < 15; ++i) text += (text.empty() ? "" : " ") + vocab.at(i).get<std::string>();
    Translator t(dir.toStdString(), {attnlab::testing::testDevice()});
    const auto r = t.translate(text, attnlab::testing::referenceGreedy(6));
    const int n = int(r.source_ids.size());
    QCOMPARE(n, 5);
    const auto e = t.explain(r, {AttentionKind::EncoderSelf, 0, 1, 1, 4});
    const auto j = nlohmann::json::parse(attnlab::explanationJson(e));
    QVERIFY(j.contains("relative"));
    const auto& rel = j["relative"];
    QVERIFY2(!rel.contains("row_scaled"), "the relative part's row is \"row\"");
    QCOMPARE(rel["max_relative_positions"].get<int>(), 1);
    QCOMPARE(rel["offset"].get<int>(), 3);
    QCOMPARE(rel["clipped_offset"].get<int>(), 1);
    QCOMPARE(j["score"].get<double>(), j["scaled"].get<double>() + rel["scaled"].get<double>());
    QCOMPARE(int(j["row_scaled"].size()), n);
    QCOMPARE(int(rel["row"].size()), n);
    for (int k = 0; k < n; ++k) {
        const auto ek = t.explain(r, {AttentionKind::EncoderSelf, 0, 1, 1, k});
        // float32 sums in the pass against double sums of the same float32 vectors: 1e-5 is hundreds of ulps of
        // these scores (|score| < 10), and a missing or misplaced part moves them by 1e-2 or more.
        QVERIFY2(std::abs(rel["row"][k].get<double>() - ek.relative_scaled) < 1e-5, qPrintable(QString::number(k)));
        QVERIFY2(std::abs(j["row_scaled"][k].get<double>() - (ek.scaled + ek.relative_scaled)) < 1e-5,
                 qPrintable(QString::number(k)));
    }
}

void TestExplain::minimalPairDifference() {
    // Rows: "x" lines up; "y" (one piece) against "z w" (two) is left out. Columns: "p" and "r"
    // line up, "q" against "s" (one each, between them) is paired.
    const attnlab::Matrix a{{0.5f, 0.25f, 0.25f}, {0.25f, 0.25f, 0.5f}};
    const attnlab::Matrix b{{1.f, 0.f, 0.f}, {0.f, 1.f, 0.f}, {0.5f, 0.5f, 0.f}};
    const auto d = attnlab::compareMaps(a, b, {"x", "y"}, {"x", "z", "w"}, {"p", "q", "r"}, {"p", "s", "r"});
    QVERIFY(!d.same_shape);
    QCOMPARE(d.rows, (std::vector<std::string>{"x"}));
    QCOMPARE(d.columns, (std::vector<std::string>{"p", "q/s", "r"}));
    QCOMPARE(d.difference, (attnlab::Matrix{{-0.5f, 0.25f, 0.25f}}));
    // A word split differently: "▁Der" against "▁D en" is left out, "▁den"/"▁der" paired.
    const auto w = attnlab::compareMaps(attnlab::Matrix(4, std::vector<float>(1, 0.f)),
                                        attnlab::Matrix(5, std::vector<float>(1, 0.f)), {"_Der", "_Hund", "_den", "."},
                                        {"_D", "en", "_Hund", "_der", "."}, {"k"}, {"k"});
    QCOMPARE(w.rows, (std::vector<std::string>{"_Hund", "_den/_der", "."}));
    // Two real sentences of the same length: the difference of their maps, cell by cell.
    DecodingOptions o;
    o.max_length = 6;
    const auto r1 = m_t->translate("Der Hund beißt den Mann.", o);
    const auto r2 = m_t->translate("Den Hund beißt der Mann.", o);
    const auto e = attnlab::compareMaps(r1.encoder_self[1][2], r2.encoder_self[1][2], r1.source_pieces,
                                        r2.source_pieces, r1.source_pieces, r2.source_pieces);
    QVERIFY(!e.difference.empty());
    // "▁Hund" lines up in both: its row and column hold the difference of the two maps' cells.
    auto at = [](const std::vector<std::string>& v, const std::string& p) {
        return size_t(std::find(v.begin(), v.end(), p) - v.begin());
    };
    const std::string hund = "\xE2\x96\x81Hund";
    const size_t i1 = at(r1.source_pieces, hund), i2 = at(r2.source_pieces, hund), id = at(e.rows, hund);
    if (i1 < r1.source_pieces.size() && i2 < r2.source_pieces.size()) {
        QVERIFY(id < e.rows.size());
        QCOMPARE(e.difference[id][at(e.columns, hund)], r1.encoder_self[1][2][i1][i1] - r2.encoder_self[1][2][i2][i2]);
    }
}

QTEST_APPLESS_MAIN(TestExplain)
#include "tst_explain.moc"
