// Relative position representations (Shaw et al. 2018; OpenNMT-py's max_relative_positions) in CTranslate2
// models converted from OpenNMT-py, against the float64 reference scripts/ct2_reference.py (its forward pass
// uses OpenNMT-py's generate_relative_positions_matrix and relative_matmul; its writer stores the tables as
// converters/opennmt_py.py does): the encoder and the decoder, both the translation (cached, step by step) and
// a step() driven by hand, every map within 1e-5, ids equal, log-probabilities within 1e-4; the one-weight
// explanation's relative term against the reference's own reading of the tables; a package round trip
// (format 5, the tables in model.safetensors); what is refused, by message. Skipped, with a message, where
// python3-torch is missing (failed under CI=true).
#include "ct2_reference_run.h"
#include "fixtures.h"

#include <attnlab/errors.h>
#include <attnlab/package.h>
#include <attnlab/translator.h>

#include "formats/ctranslate2/ct2_model.h"
#include "formats/ctranslate2/ct2_weights.h"
#include "formats/safetensors/safetensors.h"
#include "model/masks.h"

#include <QtTest/QtTest>

#include <nlohmann/json.hpp>

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

using nlohmann::json;
namespace fs = std::filesystem;

class TestRelativePositions : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void matchesReference_data();
    void matchesReference();
    void decoderStepsMatchReference();
    void explanationNamesTheRelativeTerm();
    void packageRoundTrip();
    void refusedByMessage_data();
    void refusedByMessage();
    void refusedTablesByMessage_data();
    void refusedTablesByMessage();
    void shiftedOffsetsDiffer();
    void valueNormsRefused();
    void tokenInsideSaysNoAbsolutePositions();

private:
    void runPython(const QString& code, const QStringList& args);
    QString make(const QString& name, const QStringList& options);
    json reference(const QString& model, const std::vector<std::string>& sentences);
    json referenceTables(const QString& model);
    std::vector<std::string> sentencesFor(const QString& dir) const;
    static attnlab::DecodingOptions greedy();
    void compare(const std::vector<attnlab::TranslationResult>& results, const json& ref);

    QTemporaryDir m_dir;
    QString m_python = qEnvironmentVariable("ATTNLAB_PYTHON", "/usr/bin/python3");
    // Long enough that offsets beyond +-k occur on both sides (sources of 5-7 tokens, outputs of up to 10).
    static constexpr int kMaxLength = 10;
};

namespace {
// Two layers of width 32 with 4 heads: small enough for a busy machine, deep enough that a wrong offset in
// layer 1 changes what layer 2 sees.
const QStringList kSmall = {"--layers", "2", "--d-model", "32", "--heads", "4", "--ffn", "64", "--vocab-size", "120"};

// float32 against float64: summation order and rounding, far below what a reading of a map or a score could
// notice; an offset off by one moves weights by 1e-2 and more (the tables are drawn with std 0.5).
constexpr double kMapTolerance = 1e-5, kLogProbTolerance = 1e-4;
}  // namespace

void TestRelativePositions::initTestCase() {
    ATTNLAB_REQUIRE_REFERENCE_PYTHON(m_python, "relative positions cross-check");
}

QString TestRelativePositions::make(const QString& name, const QStringList& options) {
    return attnlab::testing::makeCt2Model(m_python, m_dir.path(), name, options);
}

json TestRelativePositions::reference(const QString& model, const std::vector<std::string>& sentences) {
    return attnlab::testing::runCt2Reference(m_python, m_dir.path(), model, sentences, kMaxLength);
}

// The tables as the reference reads them from model.bin: {"encoder"|"decoder": [layer]{"keys", "values"}}.
json TestRelativePositions::referenceTables(const QString& model) {
    const QString out = m_dir.path() + "/tables.json";
    runPython(R"(m = r.Translator(sys.argv[1], None).m
t = {s["name"]: [{"keys": L["self"]["rel_k"].tolist(), "values": L["self"]["rel_v"].tolist()}
                 for L in s["layers"]] for s in (m.enc, m.dec)}
json.dump(t, open(sys.argv[2], "w"))
)",
              {model, out});
    return json::parse(attnlab::testing::readFile(out.toStdString()));
}

// `code` run with scripts/ct2_reference.py imported as r (and json, sys, torch, numpy as np), argv[1..] = args.
void TestRelativePositions::runPython(const QString& code, const QStringList& args) {
    const QString head = QString(
                             "import json, sys\nimport numpy as np\nimport torch\nsys.path.insert(0, \"%1/scripts\")\n"
                             "import ct2_reference as r\n")
                             .arg(ATTNLAB_SOURCE_DIR);
    attnlab::testing::runPythonCode(m_python, head + code, args, 120);
}

// Runs of the model's own tokens, 5 to 7 of them (one the vocabulary lacks: <unk>).
std::vector<std::string> TestRelativePositions::sentencesFor(const QString& dir) const {
    const auto v = attnlab::package::readCt2Vocabularies(dir.toStdString());
    auto token = [&](size_t i) { return v.source.at(4 + i % (v.source.size() - 4)); };
    return {token(0) + " " + token(7) + " " + token(3) + " " + token(30) + " " + token(12),
            token(11) + " " + token(2) + " " + token(2) + " " + token(40) + " " + token(41) + " " + token(9),
            token(5) + " not-in-the-vocabulary " + token(9) + " " + token(13) + " " + token(1) + " " + token(60) + " " +
                token(8)};
}

attnlab::DecodingOptions TestRelativePositions::greedy() { return attnlab::testing::referenceGreedy(kMaxLength); }

void TestRelativePositions::compare(const std::vector<attnlab::TranslationResult>& results, const json& ref) {
    using attnlab::testing::worstMapDifference;
    double worst_map = 0, worst_logp = 0;
    size_t longest = 0;
    QCOMPARE(results.size(), ref["sentences"].size());
    for (size_t s = 0; s < results.size(); ++s) {
        const auto& r = results[s];
        const json& e = ref["sentences"][s];
        QCOMPARE(r.source_ids, e["source_ids"].get<std::vector<int>>());
        const auto expected = e["target_ids"].get<std::vector<int>>();
        QCOMPARE(std::vector<int>(r.best.ids.begin(), r.best.ids.end()), expected);
        longest = std::max(longest, expected.size());
        const auto logp = e["step_log_probs"].get<std::vector<double>>();
        for (size_t t = 0; t < expected.size(); ++t)
            worst_logp = std::max(worst_logp, std::abs(r.best.token_log_probs.at(t) - logp.at(t)));
        worst_map = std::max({worst_map, worstMapDifference(r.encoder_self, e["attentions"]["encoder"]),
                              worstMapDifference(r.decoder_self, e["attentions"]["decoder"]),
                              worstMapDifference(r.cross, e["attentions"]["cross"])});
    }
    qInfo("largest difference: attention %.2e, log-probability %.2e", worst_map, worst_logp);
    QVERIFY2(worst_map < kMapTolerance, qPrintable(QString::number(worst_map)));
    QVERIFY2(worst_logp < kLogProbTolerance, qPrintable(QString::number(worst_logp)));
    QVERIFY2(longest > 5, "no output long enough to reach past the clipping distance");
}

void TestRelativePositions::matchesReference_data() {
    QTest::addColumn<QStringList>("options");
    QTest::newRow("k 2, pre-norm, a values table of its own, float32")
        << kSmall + QStringList{"--relative-position", "2", "--relative-separate-values", "--seed", "21"};
    QTest::newRow("k 3, post-norm, values aliased to keys (the converter's), separate vocabularies, int8")
        << kSmall + QStringList{"--relative-position",
                                "3",
                                "--norm",
                                "post",
                                "--vocab",
                                "separate",
                                "--dtype",
                                "int8",
                                "--seed",
                                "22"};
    QTest::newRow("k 1, 3 decoder layers, float16") << kSmall + QStringList{"--relative-position",
                                                                            "1",
                                                                            "--decoder-layers",
                                                                            "3",
                                                                            "--dtype",
                                                                            "float16",
                                                                            "--relative-separate-values",
                                                                            "--seed",
                                                                            "23"};
}

void TestRelativePositions::matchesReference() {
    QFETCH(QStringList, options);
    static int made = 0;
    const QString dir = make(QString("model-%1").arg(++made), options);
    const auto sentences = sentencesFor(dir);
    const json ref = reference(dir, sentences);
    attnlab::Translator t(dir.toStdString(), {attnlab::testing::testDevice()});
    const auto& c = t.info().config.model;
    QCOMPARE(c.pos_encoding, std::string("none"));
    QCOMPARE(c.emb_scale, std::string("none"));  // opennmt_py.py set_input_layers: scale_embeddings = False
    QVERIFY(c.max_relative_positions >= 1);
    // The tables the app shows are the ones the reference reads from model.bin.
    const json tables = referenceTables(dir);
    const auto& rel = t.info().relative_positions;
    QCOMPARE(int64_t(rel.max_distance), c.max_relative_positions);
    QCOMPARE(rel.decoder_values.size(), tables["decoder"].size());
    double worst = 0;
    for (size_t l = 0; l < rel.encoder_keys.size(); ++l)
        for (size_t r = 0; r < rel.encoder_keys[l].size(); ++r)
            for (size_t d = 0; d < rel.encoder_keys[l][r].size(); ++d)
                worst = std::max(
                    {worst, std::abs(rel.encoder_keys[l][r][d] - tables["encoder"][l]["keys"][r][d].get<double>()),
                     std::abs(rel.encoder_values[l][r][d] - tables["encoder"][l]["values"][r][d].get<double>())});
    QVERIFY2(worst < 1e-6, qPrintable(QString::number(worst)));  // int8: the same dequantization, float32 vs 64
    compare(t.translateBatch(sentences, greedy()), ref);
}

// DecoderImpl::step by hand, one token at a time over the reference's decoder input: each step's self-attention
// row (offsets -(t)..0 from the cache, clipped at -k) and log-probability, against the reference's rows.
void TestRelativePositions::decoderStepsMatchReference() {
    const QString dir =
        make("steps", kSmall + QStringList{"--relative-position", "2", "--relative-separate-values", "--seed", "24"});
    const auto sentences = sentencesFor(dir);
    const json ref = reference(dir, sentences);
    const auto ct2 = attnlab::package::readCtranslate2Model(dir.toStdString());
    auto model = attnlab::package::loadCt2Weights(ct2);
    torch::NoGradGuard no_grad;
    double worst_map = 0, worst_logp = 0;
    size_t steps = 0;
    for (const json& e : ref["sentences"]) {
        const auto src_ids = e["source_ids"].get<std::vector<int64_t>>();
        const auto input = e["decoder_input_ids"].get<std::vector<int64_t>>();
        const auto target = e["target_ids"].get<std::vector<int64_t>>();
        const auto src = torch::tensor(src_ids, torch::kInt64).unsqueeze(0);
        auto state =
            model->decoder->initState(model->encode(src), attnlab::model::padMask(src, ct2.config.model.src_pad_idx));
        for (size_t t = 0; t < input.size(); ++t, ++steps) {
            attnlab::model::Attentions a;
            const auto out = model->decoder->step(torch::tensor({input[t]}, torch::kInt64), state, &a);
            const auto logp = torch::log_softmax(model->project(out).to(torch::kFloat64), -1)[0][0];
            worst_logp =
                std::max(worst_logp, std::abs(logp[target[t]].item<double>() - e["step_log_probs"][t].get<double>()));
            for (size_t l = 0; l < a.decoder_self.size(); ++l) {
                const auto row = a.decoder_self[l][0];  // [heads, 1, t + 1]
                QCOMPARE(row.size(2), int64_t(t + 1));
                for (int64_t h = 0; h < row.size(0); ++h)
                    for (int64_t j = 0; j <= int64_t(t); ++j)
                        worst_map = std::max(worst_map, std::abs(row[h][0][j].item<double>() -
                                                                 e["attentions"]["decoder"][l][h][t][j].get<double>()));
            }
        }
    }
    qInfo("%zu steps; largest difference: self-attention row %.2e, log-probability %.2e", steps, worst_map, worst_logp);
    QVERIFY(steps > 12);
    QVERIFY2(worst_map < kMapTolerance, qPrintable(QString::number(worst_map)));
    QVERIFY2(worst_logp < kLogProbTolerance, qPrintable(QString::number(worst_logp)));
}

// explain() of a clipped encoder cell, a decoder self-attention cell and a cross-attention cell: the relative
// key vector is the reference's table row of the clipped offset; q . a^K and its scaled value follow from the
// vectors shown; scaled + relative_scaled is the row's score, and the softmax of the row's scores is the
// reference's map row.
void TestRelativePositions::explanationNamesTheRelativeTerm() {
    const QString dir =
        make("explain", kSmall + QStringList{"--relative-position", "2", "--relative-separate-values", "--seed", "25"});
    const auto sentences = sentencesFor(dir);
    const json ref = reference(dir, {sentences[1]});
    const json tables = referenceTables(dir);
    attnlab::Translator t(dir.toStdString(), {attnlab::testing::testDevice()});
    const auto r = t.translate(sentences[1], greedy());
    const json& e_ref = ref["sentences"][0];
    const int src_len = int(r.source_ids.size()), trg_len = int(r.best.ids.size());
    QVERIFY(src_len >= 6 && trg_len >= 4);
    struct Case {
        attnlab::AttentionKind kind;
        int layer, head, query, key;
        const char* stack;
        const char* map;
    };
    const Case cases[] = {{attnlab::AttentionKind::EncoderSelf, 1, 2, 0, src_len - 1, "encoder", "encoder"},
                          {attnlab::AttentionKind::EncoderSelf, 0, 1, src_len - 1, 1, "encoder", "encoder"},
                          {attnlab::AttentionKind::DecoderSelf, 1, 3, trg_len - 1, 0, "decoder", "decoder"}};
    for (const auto& c : cases) {
        const auto e = t.explain(r, {c.kind, c.layer, c.head, c.query, c.key});
        QVERIFY(e.relative);
        QCOMPARE(e.max_relative_positions, 2);
        QCOMPARE(e.relative_offset, c.key - c.query);
        QCOMPARE(e.relative_clipped, std::clamp(c.key - c.query, -2, 2));
        const json& row = tables[c.stack][c.layer]["keys"][e.relative_clipped + 2];
        QCOMPARE(e.relative_key.size(), row.size());
        double dot = 0;
        for (size_t d = 0; d < row.size(); ++d) {
            QVERIFY(std::abs(e.relative_key[d] - row[d].get<double>()) < 1e-6);
            dot += double(e.query_vector[d]) * row[d].get<double>();
        }
        QVERIFY2(std::abs(e.relative_dot - dot) < 1e-4 * (1 + std::abs(dot)), qPrintable(QString::number(dot)));
        QVERIFY(std::abs(e.relative_scaled - e.relative_dot / e.temperature) < 1e-9);
        QVERIFY(std::abs(e.score - (e.scaled + e.relative_scaled)) < 1e-9);
        QVERIFY(std::abs(e.row_scaled.at(c.key) - e.score) < 1e-4);  // float32 pass vs double sums of its vectors
        // The row's softmax (content + relative scores) is the reference's map row.
        std::vector<double> w(e.row_scaled.size());
        double top = -1e300, total = 0;
        for (size_t j = 0; j < w.size(); ++j)
            if (!e.row_masked[j]) top = std::max(top, double(e.row_scaled[j]));
        for (size_t j = 0; j < w.size(); ++j) total += (w[j] = e.row_masked[j] ? 0 : std::exp(e.row_scaled[j] - top));
        for (size_t j = 0; j < w.size(); ++j)
            QVERIFY2(std::abs(w[j] / total - e_ref["attentions"][c.map][c.layer][c.head][c.query][j].get<double>()) <
                         kMapTolerance,
                     qPrintable(QString("%1 row %2 column %3").arg(c.map).arg(c.query).arg(j)));
        // The relative term matters here: without it the row would be another distribution.
        QVERIFY(std::abs(e.relative_scaled) > 1e-3);
        QCOMPARE(e.relative_value.size(), e.head_output.size());
    }
    const auto cross = t.explain(r, {attnlab::AttentionKind::Cross, 0, 0, 0, 0});
    QVERIFY(!cross.relative);
    QCOMPARE(cross.score, cross.scaled);
}

// import writes a format-5 package: config.json's max_relative_positions and pos_encoding "none", the tables
// under <stack>.layer_stack.<i>.slf_attn.relative_position_keys / _values; read back, it translates as the
// CTranslate2 directory does and holds the same tables. (Seed 29: a random model whose greedy outputs hold no
// <s> or padding id, which CTranslate2 may emit and AttnLab never does.)
void TestRelativePositions::packageRoundTrip() {
    const QString dir = make("to-import", kSmall + QStringList{"--relative-position", "3", "--relative-separate-values",
                                                               "--dtype", "int8", "--seed", "29"});
    const std::string pkg = m_dir.path().toStdString() + "/imported";
    attnlab::importMarianModel(dir.toStdString(), pkg);
    const auto config = json::parse(attnlab::testing::readFile(pkg + "/config.json"));
    QCOMPARE(config["format_version"].get<int>(), 5);
    QCOMPARE(config["max_relative_positions"].get<int>(), 3);
    QCOMPARE(config["pos_encoding"].get<std::string>(), std::string("none"));
    const auto header = attnlab::safetensors::readHeader(pkg + "/model.safetensors");
    for (const char* name : {"encoder.layer_stack.1.slf_attn.relative_position_keys",
                             "decoder.layer_stack.0.slf_attn.relative_position_values"}) {
        const auto* info = header.find(name);
        QVERIFY2(info, name);
        QCOMPARE(info->shape, (std::vector<int64_t>{7, 8}));
    }
    QVERIFY(!header.find("decoder.layer_stack.0.enc_attn.relative_position_keys"));
    attnlab::Translator from_ct2(dir.toStdString(), {attnlab::testing::testDevice()});
    attnlab::Translator from_pkg(pkg, {attnlab::testing::testDevice()});
    const auto& a = from_ct2.info().relative_positions;
    const auto& b = from_pkg.info().relative_positions;
    QCOMPARE(b.max_distance, 3);
    QCOMPARE(b.encoder_keys, a.encoder_keys);  // float32 written, float32 read: the same values
    QCOMPARE(b.decoder_values, a.decoder_values);
    const auto sentences = sentencesFor(dir);
    compare(from_pkg.translateBatch(sentences, greedy()), reference(dir, sentences));
    // A format-4 file cannot hold the field.
    std::string text = attnlab::testing::readFile(pkg + "/config.json");
    text.replace(text.find("\"format_version\": 5"), 19, "\"format_version\": 4");
    attnlab::testing::writeFile(pkg + "/config.json", text);
    QVERIFY(attnlab::testing::messageOf([&] {
                attnlab::readPackageConfig(pkg);
            }).contains("field 'max_relative_positions' needs format_version 5"));
}

void TestRelativePositions::refusedByMessage_data() {
    QTest::addColumn<QString>("from");
    QTest::addColumn<QString>("to");
    QTest::addColumn<QString>("message");
    // The same length, so that model.bin stays well-formed (names are length-prefixed).
    QTest::newRow("keys without values") << "decoder/layer_1/self_attention/relative_position_values"
                                         << "decoder/layer_1/self_attention/relative_position_valuex"
                                         << "'decoder/layer_1/self_attention' has relative_position_keys without "
                                            "relative_position_values; AttnLab needs both";
    QTest::newRow("values without keys") << "encoder/layer_0/self_attention/relative_position_keys"
                                         << "encoder/layer_0/self_attention/relative_position_keyx"
                                         << "'encoder/layer_0/self_attention' has relative_position_values without "
                                            "relative_position_keys; AttnLab needs both";
}

void TestRelativePositions::refusedByMessage() {
    QFETCH(QString, from);
    QFETCH(QString, to);
    QFETCH(QString, message);
    QCOMPARE(from.size(), to.size());
    static int made = 0;
    // --no-alias: the values are a variable of their own, whose name can be edited in place.
    const QString dir = make(QString("refused-%1").arg(++made),
                             kSmall + QStringList{"--relative-position", "2", "--no-alias", "--seed", "27"});
    const std::string path = dir.toStdString() + "/model.bin";
    std::string bytes = attnlab::testing::readFile(path);
    const size_t at = bytes.find(from.toStdString());
    QVERIFY(at != std::string::npos);
    bytes.replace(at, size_t(from.size()), to.toStdString());
    attnlab::testing::writeFile(path, bytes);
    const QString got = attnlab::testing::messageOf<attnlab::PackageError>(
        [&] { attnlab::Translator(dir.toStdString(), {attnlab::testing::testDevice()}); });
    QVERIFY2(got.contains(message), qPrintable(got));
}

// Tables of a shape AttnLab cannot read, written into model.bin by the reference's own reader and writer
// (`edit` changes v: name -> (dtype, array)); each refused by its message.
void TestRelativePositions::refusedTablesByMessage_data() {
    QTest::addColumn<QString>("edit");
    QTest::addColumn<QString>("message");
    const QString both = "for n in ('keys', 'values'):\n    name = '%1/relative_position_' + n\n    d, a = v[name]\n";
    QTest::newRow("an even row count")
        << both.arg("encoder/layer_0/self_attention") + "    v[name] = (d, a[:4])\n"
        << "'encoder/layer_0/self_attention/relative_position_keys' has 4 rows, an even count; relative positions "
           "need 2k + 1 (offsets -k..k)";
    QTest::newRow("one row") << both.arg("decoder/layer_1/self_attention") + "    v[name] = (d, a[:1])\n"
                             << "'decoder/layer_1/self_attention/relative_position_keys' has 1 row(s); relative "
                                "positions need at least 3 rows (k >= 1: offsets -k..k)";
    QTest::newRow("another k in a later layer")
        << both.arg("encoder/layer_1/self_attention") + "    v[name] = (d, a[1:4])\n"
        << "'encoder/layer_1/self_attention' clips relative positions at 1 while 'encoder/layer_0/self_attention' "
           "clips them at 2; AttnLab needs one distance for every self-attention";
    QTest::newRow("tables in a cross-attention")
        << both.arg("decoder/layer_0/self_attention") + "    v[name.replace('self_attention', 'attention')] = (d, a)\n"
        << "'decoder/layer_0/attention' (a cross-attention) has relative positions: CTranslate2's converters give "
           "them to self-attention only";
    QTest::newRow("an encoder without tables")
        << "for n in [n for n in v if n.startswith('encoder/') and 'relative_position' in n]:\n    del v[n]\n"
        << "'decoder/layer_0/self_attention' clips relative positions at 2 while 'encoder/layer_0/self_attention' "
           "has none";
    QTest::newRow("a decoder without tables")
        << "for n in [n for n in v if n.startswith('decoder/') and 'relative_position' in n]:\n    del v[n]\n"
        << "'decoder/layer_0/self_attention' has no relative positions while 'encoder/layer_0/self_attention' "
           "clips them at 2";
    // max_relative_positions' bound in the field table (config_fields.cpp): 4096, so 2 x 4097 + 1 rows.
    QTest::newRow("k over the package field's bound")
        << both.arg("encoder/layer_0/self_attention") + "    v[name] = (d, np.resize(a, (8195, a.shape[1])))\n"
        << "'encoder/layer_0/self_attention/relative_position_keys' has 8195 rows: k = 4097 exceeds "
           "max_relative_positions' maximum 4096";
}

void TestRelativePositions::refusedTablesByMessage() {
    QFETCH(QString, edit);
    QFETCH(QString, message);
    static int made = 0;
    // --no-alias: the values a variable of their own, so that each table can be changed alone.
    const QString dir = make(QString("refused-tables-%1").arg(++made),
                             kSmall + QStringList{"--relative-position", "2", "--no-alias", "--seed", "28"});
    runPython("path = sys.argv[1]\nm = r.read_model_bin(path)\nv = m['variables']\n" + edit +
                  "r.write_model_bin(path, m['spec'], m['revision'], v, dict(m['aliases']), m['binary_version'])\n",
              {dir + "/model.bin"});
    const QString got = attnlab::testing::messageOf<attnlab::PackageError>(
        [&] { attnlab::Translator(dir.toStdString(), {attnlab::testing::testDevice()}); });
    QVERIFY2(got.contains(message), qPrintable(got));
}

// The negative control: the reference run with every offset j - i read one further (clip(j - i + 1, -k, k)) gives
// encoder maps far from AttnLab's, while the reference as written agrees within kMapTolerance: the comparison
// can fail, and an offset off by one would not pass it.
void TestRelativePositions::shiftedOffsetsDiffer() {
    const QString dir =
        make("shifted", kSmall + QStringList{"--relative-position", "2", "--relative-separate-values", "--seed", "26"});
    const auto sentences = sentencesFor(dir);
    attnlab::Translator t(dir.toStdString(), {attnlab::testing::testDevice()});
    const auto results = t.translateBatch(sentences, greedy());
    const json right = reference(dir, sentences);
    const QString in = m_dir.path() + "/shifted.txt", out = m_dir.path() + "/shifted.json";
    std::string text;
    for (const auto& s : sentences) text += s + "\n";
    attnlab::testing::writeFile(in.toStdString(), text);
    runPython(R"(plain = r.relative_positions_for
def shifted(tq, tk, n):  # plain with k + 1 is clip(j - i, -k-1, k+1) + k + 1; this is clip(j - i + 1, -k, k) + k
    return torch.clamp(plain(tq, tk, n + 1) - n, -n, n) + n
r.relative_positions_for = shifted
sys.argv = ["ct2_reference.py", "run", "--model", sys.argv[1], "--sentences", sys.argv[2], "--out", sys.argv[3],
            "--max-length", sys.argv[4]]
r.main()
)",
              {dir, in, out, QString::number(kMaxLength)});
    const json wrong = json::parse(attnlab::testing::readFile(out.toStdString()));
    double agree = 0, differ = 0;
    for (size_t s = 0; s < results.size(); ++s) {
        using attnlab::testing::worstMapDifference;
        agree = std::max(agree,
                         worstMapDifference(results[s].encoder_self, right["sentences"][s]["attentions"]["encoder"]));
        differ = std::max(differ,
                          worstMapDifference(results[s].encoder_self, wrong["sentences"][s]["attentions"]["encoder"]));
    }
    qInfo("encoder maps: %.2e from the reference, %.2e from the reference with offsets shifted by one", agree, differ);
    QVERIFY2(agree < kMapTolerance, qPrintable(QString::number(agree)));
    QVERIFY2(differ > 100 * kMapTolerance, qPrintable(QString::number(differ)));
}

// Weight x value norm assumes one contribution per key; with relative values it depends on the query: refused.
void TestRelativePositions::valueNormsRefused() {
    const QString dir = make("norms", kSmall + QStringList{"--relative-position", "1", "--seed", "30"});
    attnlab::Translator t(dir.toStdString(), {attnlab::testing::testDevice()});
    const auto r = t.translate(sentencesFor(dir)[0], greedy());
    const QString got = attnlab::testing::messageOf<attnlab::InputError>([&] { t.valueNorms(r); });
    QVERIFY2(got.contains("value norms: this model's self-attention adds relative position values "
                          "(max_relative_positions 1)"),
             qPrintable(got));
    QVERIFY2(got.contains("not available for it"), qPrintable(got));
}

// What a token is before the first layer: nothing is added for its position; the result says so, and that k is the
// model's (the Inputs tab's wording rests on it).
void TestRelativePositions::tokenInsideSaysNoAbsolutePositions() {
    const QString dir = make("inside", kSmall + QStringList{"--relative-position", "3", "--seed", "31"});
    attnlab::Translator t(dir.toStdString(), {attnlab::testing::testDevice()});
    const auto r = t.translate(sentencesFor(dir)[1], greedy());
    for (bool target : {false, true}) {
        const auto inside = t.tokenInside(r, target, 2);
        QVERIFY(!inside.absolute_positions);
        QCOMPARE(inside.max_relative_positions, 3);
        for (float x : inside.positional) QCOMPARE(x, 0.0f);
        QCOMPARE(inside.sum, inside.scaled);
    }
}

QTEST_GUILESS_MAIN(TestRelativePositions)
#include "tst_relative_positions.moc"
