// Quantized while reading (issue 53, item 3): an int8 / bfloat16 model loaded straight from its file, a chunk
// of rows at a time (TransformerImpl's `held`), is bit for bit the model the float32 load quantized afterwards
// (setComputeType + dropFloatWeights) made: every linear layer's held copy (its bytes and its dequantized
// weight), the output projection's, the embeddings' rows, and the logits of a forward pass; and it holds no
// float32 copy of those weights. Formats: CTranslate2 (tied and untied embeddings, float32 and int8 stored),
// AttnLab's package (safetensors), Hugging Face safetensors and pytorch_model.bin (mBART-50's layout). A
// NaN in a weight read the new way, and a model.bin that shrinks after its header was read, give the
// loaders' messages. Models of width 32, 2 layers (scripts/ct2_reference.py, hf_multilingual_reference.py):
// each of their weights is one chunk of rows, so a weight of 2^21 columns (2 rows a chunk) checks the reading
// of several chunks against the per-row formula, and that a row refused for int8 is named by its place.
#include "ct2_reference_run.h"
#include "fixtures.h"

#include "formats/ctranslate2/ct2_weights.h"
#include "formats/huggingface/hf_multilingual.h"
#include "formats/huggingface/hf_weights.h"
#include "formats/safetensors/safetensors.h"
#include "model/low_precision.h"
#include "model/packed_linear.h"
#include "model/transformer.h"
#include "package/package_io.h"

#include <attnlab/errors.h>

#include <torch/torch.h>

#include <QtTest/QtTest>

#include <filesystem>
#include <fstream>
#include <functional>

using attnlab::model::ComputeType;
using attnlab::model::LowPrecisionMatmul;
using attnlab::model::LowPrecisionRows;
using attnlab::model::PackedLinearImpl;
using attnlab::model::RowReader;
using attnlab::model::Transformer;
namespace fs = std::filesystem;

namespace {
// `t`'s name in test rows.
ComputeType typeNamed(const QString& t) { return attnlab::model::parseComputeType(t.toStdString()); }

// Overwrites the 4 bytes at `offset` of `path` with a float32 `value` (NaN when not given).
void writeNan(const std::string& path, uint64_t offset, float value = std::nanf("")) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(std::streamoff(offset));
    f.write(reinterpret_cast<const char*>(&value), sizeof value);
    QVERIFY(f.good());
}

// What `load` throws, as a PackageError's message ("" when it loads).
QString packageError(const std::function<void()>& load) {
    try {
        load();
    } catch (const attnlab::PackageError& e) {
        return QString::fromUtf8(e.what());
    }
    return {};
}
}  // namespace

class TestQuantizedLoading : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void ctranslate2SameAsQuantizedAfter_data();
    void ctranslate2SameAsQuantizedAfter();
    void packageSameAsQuantizedAfter_data();
    void packageSameAsQuantizedAfter();
    void huggingFaceSameAsQuantizedAfter_data();
    void huggingFaceSameAsQuantizedAfter();
    void nanInAHeldWeightIsNamed();
    void modelBinShrunkWhileReadIsNamed();
    void tiedCopiesThatDifferAreRefused();
    void aWeightIsReadAChunkOfRowsAtATime_data();
    void aWeightIsReadAChunkOfRowsAtATime();
    void aRowBeyondInt8IsNamedByItsPlaceInTheWeight();

private:
    // Skips the row where `type` cannot run here (bfloat16 without AVX512_BF16), saying why.
    bool available(ComputeType type);
    QString makeCt2(const QString& name, const QStringList& options);
    QTemporaryDir m_dir;
    QString m_python = qEnvironmentVariable("ATTNLAB_PYTHON", "/usr/bin/python3");
    const QStringList m_small = {"--layers", "2", "--d-model", "32", "--heads", "4", "--ffn", "64", "--seed", "5"};
};

void TestQuantizedLoading::initTestCase() {
    ATTNLAB_REQUIRE_REFERENCE_PYTHON(m_python, "models to load (ct2_reference.py make)");
}

bool TestQuantizedLoading::available(ComputeType type) {
    if (auto why = attnlab::model::computeTypeUnavailable(type)) {
        qWarning("%s unavailable here: %s", attnlab::model::computeTypeName(type).c_str(), why->c_str());
        return false;
    }
    return true;
}

QString TestQuantizedLoading::makeCt2(const QString& name, const QStringList& options) {
    return attnlab::testing::makeCt2Model(m_python, m_dir.path(), name, m_small + options);
}

namespace {
// `fresh` (read straight into its compute type) against `after` (float32, quantized after loading): the same
// held copies, rows and logits, bit for bit; and `fresh` holds no float32 storage for its linear weights.
void compareHeld(Transformer& after, Transformer& fresh, ComputeType type) {
    torch::NoGradGuard no_grad;
    after->setComputeType(type);
    after->dropFloatWeights();
    QVERIFY(fresh->droppedFloatWeights());
    QCOMPARE(int(fresh->computeType()), int(type));
    auto modules = fresh->named_modules();
    int layers = 0;
    for (const auto& item : after->named_modules()) {
        auto* a = dynamic_cast<PackedLinearImpl*>(item.value().get());
        if (!a) continue;
        auto* b = modules[item.key()]->as<PackedLinearImpl>();
        QVERIFY2(b->pack().droppedFloatWeight(), item.key().c_str());
        QCOMPARE(b->weight.storage().nbytes(), sizeof(float));  // the NaN a dropped weight reads
        QCOMPARE(b->pack().lowPrecisionBytes(), a->pack().lowPrecisionBytes());
        QVERIFY2(torch::equal(a->pack().held()->dequantizedWeight(), b->pack().held()->dequantizedWeight()),
                 item.key().c_str());
        ++layers;
    }
    QVERIFY(layers >= 2 * 6 + 2 * 4);  // 2 decoder layers (6 linear each) and 2 encoder layers (4)
    QCOMPARE(fresh->projectionPack().lowPrecisionBytes(), after->projectionPack().lowPrecisionBytes());
    QVERIFY(torch::equal(after->projectionPack().held()->dequantizedWeight(),
                         fresh->projectionPack().held()->dequantizedWeight()));
    const auto& c = after->config();
    const torch::Tensor src_ids = torch::arange(c.n_src_vocab), trg_ids = torch::arange(c.n_trg_vocab);
    QVERIFY(torch::equal(after->encoder->wordEmbedding(src_ids), fresh->encoder->wordEmbedding(src_ids)));
    QVERIFY(torch::equal(after->decoder->wordEmbedding(trg_ids), fresh->decoder->wordEmbedding(trg_ids)));
    torch::manual_seed(3);
    const torch::Tensor src = torch::randint(4, c.n_src_vocab, {2, 7}), trg = torch::randint(4, c.n_trg_vocab, {2, 5});
    const torch::Tensor la = after->forwardFull(src, trg), lb = fresh->forwardFull(src, trg);
    QVERIFY(torch::isfinite(la).all().item<bool>());
    QVERIFY(torch::equal(la, lb));
}
}  // namespace

void TestQuantizedLoading::ctranslate2SameAsQuantizedAfter_data() {
    QTest::addColumn<QString>("type");
    QTest::addColumn<QStringList>("options");
    for (const QString t : {"int8", "bfloat16"}) {
        QTest::addRow("%s tied", qPrintable(t)) << t << QStringList{"--share-embeddings", "--tie-projection"};
        QTest::addRow("%s untied", qPrintable(t)) << t << QStringList{};
        QTest::addRow("%s from int8", qPrintable(t))
            << t << QStringList{"--share-embeddings", "--tie-projection", "--dtype", "int8"};
    }
}

void TestQuantizedLoading::ctranslate2SameAsQuantizedAfter() {
    QFETCH(QString, type);
    QFETCH(QStringList, options);
    if (!available(typeNamed(type))) QSKIP("compute type unavailable (see the warning)");
    const QString dir = makeCt2(QString("ct2-%1").arg(QTest::currentDataTag()).replace(' ', '-'), options);
    const auto m = attnlab::package::readCtranslate2Model(dir.toStdString());
    Transformer after = attnlab::package::loadCt2Weights(m);
    Transformer fresh = attnlab::package::loadCt2Weights(m, typeNamed(type));
    compareHeld(after, fresh, typeNamed(type));
}

void TestQuantizedLoading::packageSameAsQuantizedAfter_data() {
    QTest::addColumn<QString>("type");
    QTest::newRow("int8") << "int8";
    QTest::newRow("bfloat16") << "bfloat16";
}

void TestQuantizedLoading::packageSameAsQuantizedAfter() {
    QFETCH(QString, type);
    if (!available(typeNamed(type))) QSKIP("compute type unavailable (see the warning)");
    const QString ct2 = makeCt2("for-package-" + type, {});  // untied: three tables
    const auto m = attnlab::package::readCtranslate2Model(ct2.toStdString());
    Transformer model = attnlab::package::loadCt2Weights(m);
    const std::string dir = (m_dir.path() + "/package-" + type).toStdString();
    attnlab::package::savePackage(dir, m.config, model, "");
    Transformer after = attnlab::package::loadWeights(dir, m.config);
    Transformer fresh = attnlab::package::loadWeights(dir, m.config, nullptr, typeNamed(type));
    compareHeld(after, fresh, typeNamed(type));
}

void TestQuantizedLoading::huggingFaceSameAsQuantizedAfter_data() {
    QTest::addColumn<QString>("type");
    QTest::addColumn<QString>("format");
    QTest::addColumn<QStringList>("options");
    for (const QString t : {"int8", "bfloat16"})
        for (const QString f : {"safetensors", "bin"})
            QTest::addRow("%s %s", qPrintable(t), qPrintable(f)) << t << f << QStringList{};
    // every tied copy stored (compared a chunk of rows at a time before the model is built)
    QTest::newRow("int8 safetensors, tied copies stored") << "int8"
                                                          << "safetensors" << QStringList{"--store-tied"};
}

void TestQuantizedLoading::huggingFaceSameAsQuantizedAfter() {
    QFETCH(QString, type);
    QFETCH(QString, format);
    QFETCH(QStringList, options);
    if (!available(typeNamed(type))) QSKIP("compute type unavailable (see the warning)");
    const QString real = qEnvironmentVariable("ATTNLAB_HF_MULTILINGUAL_DIR",
                                              QString(ATTNLAB_SOURCE_DIR) + "/../shared/data/hf-multilingual") +
                         "/mbart-large-50-many-to-many-mmt";
    if (!QFileInfo(real + "/config.json").exists()) {
        if (qEnvironmentVariable("CI") == "true") QFAIL(qPrintable("no real configuration at " + real));
        QSKIP(qPrintable("no real configuration at " + real + " (set ATTNLAB_HF_MULTILINGUAL_DIR)"));
    }
    const QString out = m_dir.path() + "/hf-" + QString(QTest::currentDataTag()).replace(' ', '-').remove(',');
    attnlab::testing::runScript(
        m_python, "hf_multilingual_reference.py",
        QStringList{"make", "--family", "mbart50", "--from", real, "--out", out, "--format", format, "--d-model", "32",
                    "--layers", "2", "--heads", "4", "--ffn", "64", "--seed", "6"} +
            options);
    const auto mm = attnlab::package::readMultilingualModel(out.toStdString());
    Transformer after = attnlab::package::loadHfWeights(out.toStdString(), mm.config, mm.family);
    Transformer fresh =
        attnlab::package::loadHfWeights(out.toStdString(), mm.config, mm.family, nullptr, typeNamed(type));
    compareHeld(after, fresh, typeNamed(type));
}

void TestQuantizedLoading::nanInAHeldWeightIsNamed() {
    if (!available(ComputeType::Int8)) QSKIP("int8 unavailable (see the warning)");
    // CTranslate2: a NaN in the last row of the tied embedding (the output projection, read last of its rows).
    const QString ct2 = makeCt2("nan-ct2", {"--share-embeddings", "--tie-projection"});
    auto m = attnlab::package::readCtranslate2Model(ct2.toStdString());
    const auto& src = m.sources.at("decoder.trg_word_emb.weight");
    const auto* v = m.bin.find(src.variable);
    writeNan(m.bin.path, v->offset + v->nbytes - sizeof(float));
    const QString want =
        QString::fromStdString(m.bin.path + ": variable '" + src.variable) + "' contains NaN or infinite values";
    QCOMPARE(packageError([&] { attnlab::package::loadCt2Weights(m); }), want);  // as float32 says it
    QCOMPARE(packageError([&] { attnlab::package::loadCt2Weights(m, ComputeType::Int8); }), want);
    // AttnLab's package: a NaN in a linear layer's weight, read the new way.
    const QString clean = makeCt2("nan-package-source", {});
    const auto mc = attnlab::package::readCtranslate2Model(clean.toStdString());
    Transformer model = attnlab::package::loadCt2Weights(mc);
    const std::string dir = (m_dir.path() + "/nan-package").toStdString();
    attnlab::package::savePackage(dir, mc.config, model, "");
    const std::string weights = dir + "/model.safetensors", name = "encoder.layer_stack.1.pos_ffn.w_2.weight";
    const auto header = attnlab::safetensors::readHeader(weights);
    writeNan(weights, header.data_offset + header.find(name)->begin + 40);
    QCOMPARE(packageError([&] { attnlab::package::loadWeights(dir, mc.config, nullptr, ComputeType::Int8); }),
             QString::fromStdString(weights + ": tensor '" + name + "' contains NaN or infinite values"));
}

void TestQuantizedLoading::modelBinShrunkWhileReadIsNamed() {
    if (!available(ComputeType::Int8)) QSKIP("int8 unavailable (see the warning)");
    // The header is read and checked first; the file then loses the second half of its largest variable
    // (the tied embedding, the first weight the int8 load reads) before the weights are read.
    const QString dir = makeCt2("shrunk", {"--share-embeddings", "--tie-projection"});
    const auto m = attnlab::package::readCtranslate2Model(dir.toStdString());
    const auto* v = m.bin.find(m.sources.at("decoder.trg_word_emb.weight").variable);
    fs::resize_file(m.bin.path, v->offset + v->nbytes / 2);
    const QString message = packageError([&] { attnlab::package::loadCt2Weights(m, ComputeType::Int8); });
    QVERIFY2(message.startsWith(QString::fromStdString(m.bin.path + ": cannot read variable '")), qPrintable(message));
}

// Tied copies a safetensors file stores more than once are compared a chunk of rows at a time (hf_weights.cpp's
// sameValues): a copy whose last value differs is refused, naming both, in float32 as in int8.
void TestQuantizedLoading::tiedCopiesThatDifferAreRefused() {
    const QString real = qEnvironmentVariable("ATTNLAB_HF_MULTILINGUAL_DIR",
                                              QString(ATTNLAB_SOURCE_DIR) + "/../shared/data/hf-multilingual") +
                         "/mbart-large-50-many-to-many-mmt";
    if (!QFileInfo(real + "/config.json").exists()) {
        if (qEnvironmentVariable("CI") == "true") QFAIL(qPrintable("no real configuration at " + real));
        QSKIP(qPrintable("no real configuration at " + real + " (set ATTNLAB_HF_MULTILINGUAL_DIR)"));
    }
    const QString out = m_dir.path() + "/hf-tied-differ";
    attnlab::testing::runScript(
        m_python, "hf_multilingual_reference.py",
        QStringList{"make",     "--family",    "mbart50",   "--from", real,       "--out",       out,
                    "--format", "safetensors", "--d-model", "32",     "--layers", "1",           "--heads",
                    "4",        "--ffn",       "64",        "--seed", "6",        "--store-tied"});
    const std::string weights = (out + "/model.safetensors").toStdString();
    const auto header = attnlab::safetensors::readHeader(weights);
    const auto* lm_head = header.find("lm_head.weight");
    QVERIFY(lm_head);
    QCOMPARE(lm_head->dtype, std::string("F32"));
    writeNan(weights, header.data_offset + lm_head->end - sizeof(float), 0.125f);
    const auto mm = attnlab::package::readMultilingualModel(out.toStdString());
    for (const ComputeType t : {ComputeType::Float32, ComputeType::Int8}) {
        const QString message =
            packageError([&] { attnlab::package::loadHfWeights(out.toStdString(), mm.config, mm.family, nullptr, t); });
        QVERIFY2(message.startsWith(QString::fromStdString(weights + ": 'lm_head.weight' differs from '")) &&
                     message.endsWith("', though config.json ties them"),
                 qPrintable(message));
    }
}

namespace {
// 2^21 columns: a chunk of the readers (16 MiB of float32, low_precision.cpp's byRows) is 2 rows, so that a
// weight of 3 rows is read in two chunks, the second of them starting at row 2. (The models above, of width
// 32, read every weight in one chunk.)
constexpr int64_t kWideCols = int64_t(1) << 21, kWideRows = 3;

// A RowReader over `w` that records its calls (first, n).
RowReader recordingReader(const torch::Tensor& w, std::vector<std::pair<int64_t, int64_t>>& calls) {
    return [&w, &calls](int64_t first, int64_t n) {
        calls.emplace_back(first, n);
        return w.narrow(0, first, n).clone();
    };
}
}  // namespace

void TestQuantizedLoading::aWeightIsReadAChunkOfRowsAtATime_data() {
    QTest::addColumn<QString>("type");
    QTest::newRow("int8") << "int8";
    QTest::newRow("bfloat16") << "bfloat16";
}

// A weight read from a RowReader in several chunks is every row's own quantization, each in its place: against
// the per-row formula over the whole weight (int8: s = amax / 127, q = round(w / s) clamped to +-127, the held
// weight q · s; bfloat16: w rounded), for a product's weight and for a table's rows; the reader is asked for
// consecutive chunks of at most 16 MiB of float32 that cover the weight once.
void TestQuantizedLoading::aWeightIsReadAChunkOfRowsAtATime() {
    QFETCH(QString, type);
    const ComputeType t = typeNamed(type);
    if (!available(t)) QSKIP("compute type unavailable (see the warning)");
    torch::NoGradGuard no_grad;
    torch::manual_seed(11);
    // rows of different magnitudes, so that a row put in another's place would get another scale
    const torch::Tensor w = torch::randn({kWideRows, kWideCols}) * torch::tensor({1.0f, 7.0f, 0.01f}).unsqueeze(1);
    torch::Tensor expected;
    if (t == ComputeType::Int8) {
        const torch::Tensor s = (w.abs().amax(1) / 127.0).unsqueeze(1);
        expected = (w / s).round().clamp(-127, 127) * s;
    } else {
        expected = w.to(torch::kBFloat16).to(torch::kFloat32);
    }
    const std::vector<std::pair<int64_t, int64_t>> chunks = {{0, 2}, {2, 1}};
    std::vector<std::pair<int64_t, int64_t>> calls;
    const LowPrecisionMatmul product(kWideRows, kWideCols, recordingReader(w, calls), torch::Tensor(), t);
    QVERIFY(calls == chunks);
    QVERIFY(torch::equal(product.dequantizedWeight(), expected));
    calls.clear();
    const LowPrecisionRows table(kWideRows, kWideCols, recordingReader(w, calls), t);
    QVERIFY(calls == chunks);
    QVERIFY(torch::equal(table.lookup(torch::arange(kWideRows)), expected));
}

// A weight int8 cannot carry is refused naming the row by its place in the whole weight, also where that row
// is read in a later chunk (row 2 here, the first of the second chunk), from a tensor or a RowReader.
void TestQuantizedLoading::aRowBeyondInt8IsNamedByItsPlaceInTheWeight() {
    if (!available(ComputeType::Int8)) QSKIP("int8 unavailable (see the warning)");
    torch::NoGradGuard no_grad;
    torch::Tensor w = torch::zeros({kWideRows, kWideCols});
    w[2][5] = 1e35f;  // int8's limit in a row of 2^21: FLT_MAX / 2^21 = 1.62e32
    const QString want = "row 2 reaches 1e+35, too large for int8";
    std::vector<std::pair<int64_t, int64_t>> calls;
    const QString from_tensor = attnlab::testing::messageOf<attnlab::ConfigError>(
        [&] { LowPrecisionMatmul(w, torch::Tensor(), ComputeType::Int8); });
    QVERIFY2(from_tensor.startsWith(want), qPrintable(from_tensor));
    const QString from_reader = attnlab::testing::messageOf<attnlab::ConfigError>([&] {
        LowPrecisionMatmul(kWideRows, kWideCols, recordingReader(w, calls), torch::Tensor(), ComputeType::Int8);
    });
    QVERIFY2(from_reader.startsWith(want), qPrintable(from_reader));
    const QString rows = attnlab::testing::messageOf<attnlab::ConfigError>(
        [&] { LowPrecisionRows(kWideRows, kWideCols, recordingReader(w, calls), ComputeType::Int8); });
    QVERIFY2(rows.startsWith(want), qPrintable(rows));
}

QTEST_GUILESS_MAIN(TestQuantizedLoading)
#include "tst_quantized_loading.moc"
