// Model packages: save -> load translates identically; every corrupt package gives its own message;
// flipping and truncating bytes at many offsets never crashes the loader.
#include "decoding/engine.h"
#include "fixtures.h"
#include "formats/huggingface/marian_import.h"
#include "formats/safetensors/safetensors.h"
#include "package/package_io.h"
#include "random_model.h"
#include "tokenizer/text_codec.h"

#include <attnlab/confidence.h>
#include <attnlab/config_fields.h>
#include <attnlab/errors.h>
#include <attnlab/package.h>
#include <attnlab/translator.h>

#include <QtTest/QtTest>

#include <sys/stat.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

namespace fs = std::filesystem;
using attnlab::PackageError;
using attnlab::Translator;

namespace {
// The number of members of an aggregate: the largest N for which T{x1, ..., xN} compiles, each x
// convertible to anything. Independent of the field table it checks.
struct AnyMember {
    template <typename T>
    operator T() const;
};
template <typename T, typename... A>
constexpr auto bracesInit(int) -> decltype(T{std::declval<A>()...}, true) {
    return true;
}
template <typename T, typename... A>
constexpr bool bracesInit(...) {
    return false;
}
template <typename T, typename... A>
constexpr size_t memberCount() {
    if constexpr (bracesInit<T, A..., AnyMember>(0))
        return memberCount<T, A..., AnyMember>();
    else
        return sizeof...(A);
}
}  // namespace

class TestPackage : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void saveLoadTranslatesIdentically();
    void halfPrecisionUpcasts();
    void saveReplacesAtomically();
    void refusesToReplaceAFolderOfOtherFiles();
    void corrupt_data();
    void corrupt();
    void fuzzNeverCrashes();
    void configFieldTableCoversTheStruct();
    void formatOneLoadsWithDefaults();
    void noPositionsAtAllRefused();
    void confidenceCalibrationRoundTrips();
    void percentileIsNearestRank();
    void specialFilesAreNamed_data();
    void specialFilesAreNamed();
    void marianDirectoryFilesAreNamed();

private:
    std::string copyGood(const std::string& name);
    QTemporaryDir m_dir;
    std::string m_tok, m_good;
    attnlab::ModelConfig m_cfg;
};

void TestPackage::initTestCase() {
    m_tok = attnlab::testing::trainTokenizer(m_dir.path().toStdString(), 400);
    m_cfg = attnlab::testing::smallConfig(400);
    m_good = attnlab::testing::writeRandomPackage(m_dir.path().toStdString() + "/good", m_tok, m_cfg);
}

std::string TestPackage::copyGood(const std::string& name) {
    const std::string dst = m_dir.path().toStdString() + "/" + name;
    fs::remove_all(dst);
    fs::copy(m_good, dst, fs::copy_options::recursive);
    return dst;
}

void TestPackage::saveLoadTranslatesIdentically() {
    Translator a(m_good, {attnlab::testing::testDevice()});
    // Parameters equal the saved random model bit for bit.
    auto original = attnlab::testing::randomModel(m_cfg, 7);
    attnlab::decoding::Engine ea(m_good, {"cpu"});
    auto am = ea.model();
    auto loaded = am->named_parameters();
    for (const auto& p : original->named_parameters())
        QVERIFY2(torch::equal(p.value(), loaded[p.key()]), p.key().c_str());
    // Save what was loaded, load it again: same translations and attention.
    const std::string again = m_dir.path().toStdString() + "/again";
    attnlab::package::savePackage(again, ea.config(), am, m_tok);
    Translator b(again, {attnlab::testing::testDevice()});
    attnlab::DecodingOptions o;
    o.beam_size = 3;
    o.max_length = 12;
    for (const char* s : {"Ein Mann läuft über die Straße.", "Zwei Kinder spielen 42 mal."}) {
        auto ra = a.translate(s, o), rb = b.translate(s, o);
        QCOMPARE(ra.best.ids, rb.best.ids);
        QCOMPARE(ra.best.score, rb.best.score);
        QCOMPARE(ra.cross, rb.cross);
        QCOMPARE(ra.encoder_self, rb.encoder_self);
    }
    QCOMPARE(b.info().stored_dtype, std::string("F32"));
    QCOMPARE(b.info().parameters.total, a.info().parameters.total);
}

void TestPackage::halfPrecisionUpcasts() {
    const std::string dir = m_dir.path().toStdString() + "/half";
    attnlab::testing::writeRandomPackage(dir, m_tok, m_cfg, 7, "F16");
    QVERIFY(fs::file_size(dir + "/model.safetensors") < fs::file_size(m_good + "/model.safetensors"));
    Translator t(dir, {attnlab::testing::testDevice()});
    QCOMPARE(t.info().stored_dtype, std::string("F16+F32"));  // pos_table buffers stay F32
    auto original = attnlab::testing::randomModel(m_cfg, 7);
    auto loaded = attnlab::decoding::Engine(dir, {"cpu"}).model()->named_parameters();
    for (const auto& p : original->named_parameters()) {
        auto expected = p.value().to(torch::kFloat16).to(torch::kFloat32);
        QVERIFY(torch::equal(loaded[p.key()], expected));
        QCOMPARE(loaded[p.key()].scalar_type(), torch::kFloat32);
    }
}

void TestPackage::saveReplacesAtomically() {
    const std::string dir = copyGood("replace");
    // The old package holds a folder of its own and a link to a folder outside it: the folder goes
    // with the old package, the link is removed without following it (util::removeTree).
    fs::create_directories(dir + "/notes/deeper");
    attnlab::testing::writeFile(dir + "/notes/deeper/n.txt", "old");
    const std::string outside = m_dir.path().toStdString() + "/kept-outside";
    fs::create_directories(outside);
    attnlab::testing::writeFile(outside + "/keep.txt", "mine");
    fs::create_directory_symlink(outside, dir + "/link-out");
    auto cfg = m_cfg;
    auto m = attnlab::testing::randomModel(cfg, 99);
    attnlab::package::savePackage(dir, attnlab::testing::packageConfig(cfg), m, m_tok);
    attnlab::decoding::Engine t(dir, {"cpu"});
    QVERIFY(torch::equal(t.model()->decoder->trg_word_emb->weight, m->decoder->trg_word_emb->weight));
    QVERIFY(!fs::exists(dir + "/notes"));
    QVERIFY(!fs::is_symlink(dir + "/link-out"));
    QCOMPARE(attnlab::testing::readFile(outside + "/keep.txt"), std::string("mine"));
    // No temporary or backup directory is left behind.
    int siblings = 0;
    for (const auto& e : fs::directory_iterator(m_dir.path().toStdString()))
        siblings += e.path().filename().string().rfind("replace", 0) == 0;
    QCOMPARE(siblings, 1);
    // A failing save (tokenizer missing) leaves the old package untouched.
    try {
        attnlab::package::savePackage(dir, attnlab::testing::packageConfig(cfg), m, "/nonexistent.model");
        QFAIL("no exception");
    } catch (const PackageError& e) {
        QCOMPARE(QString(e.what()), QString("/nonexistent.model: cannot be read: No such file or directory"));
    }
    attnlab::decoding::Engine again(dir, {"cpu"});
    QVERIFY(torch::equal(again.model()->decoder->trg_word_emb->weight, m->decoder->trg_word_emb->weight));
}

void TestPackage::refusesToReplaceAFolderOfOtherFiles() {
    // A folder of the user's own files given as the output: refused before anything is written,
    // by savePackage and copyPackage alike, and left as it was.
    const std::string mine = m_dir.path().toStdString() + "/papers";
    fs::create_directories(mine);
    attnlab::testing::writeFile(mine + "/thesis.txt", "mine");
    auto m = attnlab::testing::randomModel(m_cfg, 5);
    for (int writer = 0; writer < 2; ++writer) {
        try {
            if (writer == 0)
                attnlab::package::savePackage(mine, attnlab::testing::packageConfig(m_cfg), m, m_tok);
            else
                attnlab::copyPackage(m_good, mine);
            QFAIL("no exception");
        } catch (const PackageError& e) {
            QVERIFY2(QString(e.what()).contains("papers: is a folder of other files, not a model package"), e.what());
        }
        QCOMPARE(attnlab::testing::readFile(mine + "/thesis.txt"), std::string("mine"));
        QVERIFY(!fs::exists(mine + "/config.json"));
    }
    // A file, likewise.
    try {
        attnlab::copyPackage(m_good, mine + "/thesis.txt");
        QFAIL("no exception");
    } catch (const PackageError& e) {
        QVERIFY2(QString(e.what()).contains("thesis.txt: exists and is not a folder"), e.what());
    }
    // A copy into a new folder, then over itself as a package, equals the original; an empty folder
    // is taken; a source that is not a package is named.
    const std::string copy = m_dir.path().toStdString() + "/copied";
    attnlab::copyPackage(m_good, copy);
    attnlab::copyPackage(m_good, copy);
    QCOMPARE(attnlab::testing::readFile(copy + "/model.safetensors"),
             attnlab::testing::readFile(m_good + "/model.safetensors"));
    fs::create_directories(m_dir.path().toStdString() + "/empty");
    attnlab::copyPackage(m_good, m_dir.path().toStdString() + "/empty");
    QVERIFY(fs::exists(m_dir.path().toStdString() + "/empty/config.json"));
    try {
        attnlab::copyPackage(mine, m_dir.path().toStdString() + "/never");
        QFAIL("no exception");
    } catch (const PackageError& e) {
        QVERIFY2(QString(e.what()).contains("config.json"), e.what());
    }
    QVERIFY(!fs::exists(m_dir.path().toStdString() + "/never"));
}

namespace {
using Mutation = std::function<void(const std::string& dir)>;

void editConfig(const std::string& dir, const std::function<void(nlohmann::json&)>& f) {
    auto j = nlohmann::json::parse(attnlab::testing::readFile(dir + "/config.json"));
    f(j);
    attnlab::testing::writeFile(dir + "/config.json", j.dump());
}

// Rewrites model.safetensors with the tensors `f` leaves.
void editTensors(const std::string& dir, const std::function<void(std::vector<attnlab::safetensors::TensorView>&)>& f) {
    const std::string path = dir + "/model.safetensors";
    auto h = attnlab::safetensors::readHeader(path);
    std::vector<std::vector<char>> data;
    std::vector<attnlab::safetensors::TensorView> views;
    for (const auto& t : h.tensors) data.push_back(attnlab::safetensors::readTensorBytes(h, t));
    for (size_t i = 0; i < h.tensors.size(); ++i)
        views.push_back({h.tensors[i].name, h.tensors[i].dtype, h.tensors[i].shape, data[i].data(), data[i].size()});
    f(views);
    attnlab::safetensors::write(path, views);
}
}  // namespace

void TestPackage::corrupt_data() {
    QTest::addColumn<int>("which");
    QTest::addColumn<QString>("message");
    const char* cases[][2] = {
        {"no directory", "not a directory"},
        {"no config", "config.json: missing file"},
        {"malformed json", "config.json: malformed JSON"},
        {"unknown version", "unknown format_version 99"},
        {"missing field", "missing field 'd_inner'"},
        {"wrong type", "field 'n_layers' must be an integer"},
        {"no weights", "model.safetensors: missing file"},
        {"no tokenizer", "tokenizer.model: missing file"},
        {"corrupt tokenizer", "not a usable SentencePiece model"},
        {"vocab mismatch", "n_src_vocab = 300 but tokenizer.model has 400"},
        {"missing tensor", "missing tensor 'encoder.layer_stack.1.pos_ffn.w_2.bias'"},
        {"unexpected tensor", "unexpected tensor 'trg_word_prj.weight' (the config ties it"},
        {"wrong shape", "tensor 'decoder.layer_norm.weight' has shape [31] but the config needs [32]"},
        {"wrong dtype", "has dtype I32; expected F32, F16 or BF16"},
        {"truncated weights", "truncated file?"},
        {"oversized header", "exceeds the 100 MB limit"},
        {"nan weights", "contains NaN or infinite values"},
        {"eos mismatch", "eos_idx = 5 but tokenizer.model has 3"},
    };
    for (int i = 0; i < int(sizeof(cases) / sizeof(cases[0])); ++i) QTest::newRow(cases[i][0]) << i << cases[i][1];
}

void TestPackage::corrupt() {
    QFETCH(int, which);
    QFETCH(QString, message);
    const std::string dir = copyGood("corrupt" + std::to_string(which));
    const std::string weights = dir + "/model.safetensors";
    std::string target = dir;
    switch (which) {
    case 0: target = dir + "/nothing-here"; break;
    case 1: fs::remove(dir + "/config.json"); break;
    case 2: attnlab::testing::writeFile(dir + "/config.json", "{\"format_version\": 1,"); break;
    case 3: editConfig(dir, [](auto& j) { j["format_version"] = 99; }); break;
    case 4: editConfig(dir, [](auto& j) { j.erase("d_inner"); }); break;
    case 5: editConfig(dir, [](auto& j) { j["n_layers"] = "two"; }); break;
    case 6: fs::remove(weights); break;
    case 7: fs::remove(dir + "/tokenizer.model"); break;
    case 8: attnlab::testing::writeFile(dir + "/tokenizer.model", "garbage"); break;
    case 9:
        editConfig(dir, [](auto& j) {
            j["n_src_vocab"] = 300;
            j["n_trg_vocab"] = 300;
        });
        break;
    case 10:
        editTensors(dir, [](auto& v) {
            v.erase(std::remove_if(v.begin(), v.end(),
                                   [](auto& t) { return t.name == "encoder.layer_stack.1.pos_ffn.w_2.bias"; }),
                    v.end());
        });
        break;
    case 11:
        editTensors(dir, [](auto& v) {
            auto emb =
                *std::find_if(v.begin(), v.end(), [](auto& t) { return t.name == "decoder.trg_word_emb.weight"; });
            emb.name = "trg_word_prj.weight";
            v.push_back(emb);
        });
        break;
    case 12:
        editTensors(dir, [](auto& v) {
            for (auto& t : v)
                if (t.name == "decoder.layer_norm.weight") {
                    t.shape = {31};
                    t.nbytes = 31 * 4;
                }
        });
        break;
    case 13:
        editTensors(dir, [](auto& v) {
            for (auto& t : v)
                if (t.name == "decoder.layer_norm.bias") t.dtype = "I32";
        });
        break;
    case 14: {
        auto bytes = attnlab::testing::readFile(weights);
        attnlab::testing::writeFile(weights, bytes.substr(0, bytes.size() - 100));
        break;
    }
    case 15: {
        auto bytes = attnlab::testing::readFile(weights);
        bytes[6] = '\x01';  // header length += 2^48
        attnlab::testing::writeFile(weights, bytes);
        break;
    }
    case 16: {
        std::vector<float> nan(32, std::numeric_limits<float>::quiet_NaN());
        editTensors(dir, [&](auto& v) {
            for (auto& t : v)
                if (t.name == "encoder.layer_norm.bias") t.data = nan.data();
        });
        break;
    }
    case 17: editConfig(dir, [](auto& j) { j["eos_idx"] = 5; }); break;
    }
    try {
        Translator t(target, {attnlab::testing::testDevice()});
        QFAIL("loaded a corrupt package");
    } catch (const PackageError& e) {
        QVERIFY2(QString(e.what()).contains(message), e.what());
    }
}

void TestPackage::fuzzNeverCrashes() {
    // Flip bytes and truncate at many offsets of model.safetensors, config.json and
    // tokenizer.model: each load
    // either succeeds or throws PackageError. A crash fails the whole test executable.
    const std::string good_weights = attnlab::testing::readFile(m_good + "/model.safetensors");
    const std::string good_config = attnlab::testing::readFile(m_good + "/config.json");
    const std::string dir = copyGood("fuzz");
    std::mt19937 rng(42);
    int loaded = 0, rejected = 0;
    auto attempt = [&] {
        try {
            Translator t(dir, {attnlab::testing::testDevice()});
            ++loaded;
        } catch (const PackageError&) {
            ++rejected;
        }
    };
    const uint64_t header_end = 8 + attnlab::safetensors::readHeader(m_good + "/model.safetensors").data_offset - 8;
    std::uniform_int_distribution<int> byte(0, 255);
    for (int i = 0; i < 120; ++i) {
        std::string w = good_weights;
        // Mostly in the header, where a flip changes meaning; sometimes in the data.
        const size_t at = (i % 4 == 3) ? rng() % w.size() : rng() % header_end;
        w[at] = static_cast<char>(byte(rng));
        attnlab::testing::writeFile(dir + "/model.safetensors", w);
        attempt();
    }
    for (size_t cut : {size_t(0), size_t(3), size_t(8), size_t(9), size_t(header_end / 2), size_t(header_end - 1),
                       size_t(header_end), size_t(header_end + 1), good_weights.size() / 2, good_weights.size() - 1}) {
        attnlab::testing::writeFile(dir + "/model.safetensors", good_weights.substr(0, cut));
        attempt();
    }
    attnlab::testing::writeFile(dir + "/model.safetensors", good_weights);
    for (int i = 0; i < 60; ++i) {
        std::string c = good_config;
        if (i % 3 == 0)
            c = c.substr(0, rng() % c.size());
        else
            c[rng() % c.size()] = static_cast<char>(byte(rng));
        attnlab::testing::writeFile(dir + "/config.json", c);
        attempt();
    }
    attnlab::testing::writeFile(dir + "/config.json", good_config);
    const std::string good_tok = attnlab::testing::readFile(m_good + "/tokenizer.model");
    for (int i = 0; i < 60; ++i) {
        std::string t = good_tok;
        if (i % 3 == 0)
            t = t.substr(0, rng() % t.size());
        else
            for (int k = 0; k < 1 + i % 5; ++k) t[rng() % t.size()] = static_cast<char>(byte(rng));
        attnlab::testing::writeFile(dir + "/tokenizer.model", t);
        attempt();
    }
    QVERIFY(rejected > 100);
    qInfo("fuzz: %d loads, %d rejected with PackageError", loaded, rejected);
}

void TestPackage::confidenceCalibrationRoundTrips() {
    using attnlab::ConfidenceCalibration;
    const std::string dir = copyGood("calibrated");
    QVERIFY(!attnlab::readConfidenceCalibration(dir));  // none yet: the package loads without one
    QVERIFY(!Translator(dir, {attnlab::testing::testDevice()}).info().confidence);
    attnlab::testing::writeFile(dir + "/MODEL_CARD.md", "# Card\n\n## Data\n\nsome\n\n## Reproduce\n\nx\n");
    ConfidenceCalibration c;
    c.threshold = -1.25;
    c.percentile = 5;
    c.sentences = 40;
    c.beam_size = 3;
    c.length_penalty = 0.6;
    c.data = "`val.de`";
    attnlab::writeConfidenceCalibration(dir, c);
    const auto back = attnlab::readConfidenceCalibration(dir);
    QVERIFY(back);
    QCOMPARE(back->threshold, -1.25);
    QCOMPARE(back->percentile, 5.0);
    QCOMPARE(back->sentences, 40);
    QCOMPARE(back->beam_size, 3);
    QCOMPARE(back->length_penalty, 0.6);
    QCOMPARE(back->data, std::string("`val.de`"));
    // The translator carries it and judges every translation against it.
    Translator t(dir, {attnlab::testing::testDevice()});
    QVERIFY(t.info().confidence && t.info().confidence->threshold == -1.25);
    const auto r = t.translate("Ein Hund rennt.");
    QVERIFY(r.confidence.calibrated);
    QCOMPARE(r.confidence.low, r.confidence.mean_log_prob < -1.25);
    // The card got a Confidence section (appended: it had none); writing again replaces it.
    attnlab::writeConfidenceCalibration(dir, c);
    const std::string card = attnlab::testing::readFile(dir + "/MODEL_CARD.md");
    QVERIFY2(card.find("## Data\n\nsome\n\n## Reproduce") != std::string::npos, card.c_str());
    QVERIFY2(card.find("## Confidence\n") != std::string::npos &&
                 card.find("## Confidence\n") == card.rfind("## Confidence\n"),
             card.c_str());
    QVERIFY2(card.find("at least **0.29** (mean log-probability -1.250)") != std::string::npos, card.c_str());
    const std::string replaced =
        attnlab::withConfidenceSection("# C\n\n## Confidence\n\nOLD TEXT\n\n## Next\n\nn\n", c);
    QVERIFY2(replaced.find("OLD TEXT") == std::string::npos && replaced.find("## Next\n\nn\n") != std::string::npos,
             replaced.c_str());
    // Corrupt or out-of-range files are refused, naming the file.
    for (const char* bad : {"{",
                            "{\"mean_log_prob_threshold\": 0.5, \"percentile\": 5, \"validation_sentences\": 3, "
                            "\"beam_size\": 1, \"length_penalty\": 0}",
                            "{\"mean_log_prob_threshold\": -1, \"percentile\": 100, \"validation_sentences\": 3, "
                            "\"beam_size\": 1, \"length_penalty\": 0}"}) {
        attnlab::testing::writeFile(dir + "/confidence.json", bad);
        try {
            attnlab::readConfidenceCalibration(dir);
            QFAIL(bad);
        } catch (const attnlab::PackageError& e) {
            QVERIFY2(QString(e.what()).contains("confidence.json"), e.what());
        }
        QVERIFY_THROWS_EXCEPTION(attnlab::PackageError, Translator(dir, {attnlab::testing::testDevice()}));
    }
    // Counts must be whole numbers that fit an int: 2.5 was cut to 2 and 2^32 + 1 to 1 without a
    // word, and 1e73 overflowed the conversion (undefined behaviour; found by fuzz_confidence_json).
    const std::string rest = "\"mean_log_prob_threshold\": -1, \"percentile\": 5, \"length_penalty\": 0";
    for (const auto& [field, bad] :
         std::vector<std::pair<std::string, std::string>>{{"validation_sentences", "1.0111e+73"},
                                                          {"validation_sentences", "4294967297"},
                                                          {"beam_size", "2.5"},
                                                          {"beam_size", "-9223372036854775808"},
                                                          {"beam_size", "\"5\""}}) {
        const std::string other = field == "beam_size" ? "\"validation_sentences\": 3" : "\"beam_size\": 1";
        attnlab::testing::writeFile(dir + "/confidence.json",
                                    "{" + rest + ", " + other + ", \"" + field + "\": " + bad + "}");
        try {
            attnlab::readConfidenceCalibration(dir);
            QFAIL(bad.c_str());
        } catch (const attnlab::PackageError& e) {
            QVERIFY2(QString(e.what()).contains(QString::fromStdString(
                         "confidence.json: " + field + " must be a whole number that fits an int, not ")),
                     e.what());
        }
    }
}

void TestPackage::percentileIsNearestRank() {
    // Nearest rank: the ceil(p/100 * n)-th smallest. 20 values 1..20: 5 % -> the 1st, 10 % -> the
    // 2nd, 50 % -> the 10th, 51 % -> the 11th.
    std::vector<double> v;
    for (int i = 20; i >= 1; --i) v.push_back(i);
    QCOMPARE(attnlab::percentileOf(v, 5), 1.0);
    QCOMPARE(attnlab::percentileOf(v, 10), 2.0);
    QCOMPARE(attnlab::percentileOf(v, 50), 10.0);
    QCOMPARE(attnlab::percentileOf(v, 51), 11.0);
    QCOMPARE(attnlab::percentileOf({-3.0}, 5), -3.0);
    QVERIFY_THROWS_EXCEPTION(attnlab::ConfigError, attnlab::percentileOf({}, 5));
    QVERIFY_THROWS_EXCEPTION(attnlab::ConfigError, attnlab::percentileOf(v, 100));
}

void TestPackage::configFieldTableCoversTheStruct() {
    // A member added to ModelConfig but not to modelConfigFields() would be silently left out of
    // config.json, inspect, the model card and the Model panel: this fails first.
    const auto& fields = attnlab::modelConfigFields();
    QCOMPARE(fields.size(), memberCount<attnlab::ModelConfig>());
    // Each entry names a distinct member, and config.json round-trips every one of them.
    std::set<std::string> names;
    for (const auto& f : fields) QVERIFY2(names.insert(f.name).second, f.name);
    auto c = m_cfg;
    c.d_inner = 77;
    c.dropout = 0.25;
    c.emb_src_trg_weight_sharing = false;
    c.scale_emb_or_prj = "none";
    c.ffn_activation = "swish";
    c.attn_bias = true;
    c.layer_norm_eps = 1e-5;
    c.emb_layer_norm = false;
    c.emb_scale = "sqrt_d_model";
    c.pos_encoding = "half";
    c.pos_offset = 2;
    c.logits_bias = true;
    c.n_dec_layers = 1;
    c.d_dec_inner = 33;
    attnlab::PackageConfig pc = attnlab::testing::packageConfig(c);
    pc.tokenizer = "marian";
    pc.num_beams = 4;
    pc.max_length = 512;
    const auto back = attnlab::packageConfigFromJson(attnlab::packageConfigToJson(pc), "test");
    for (const auto& f : fields) QCOMPARE(f.valueText(back.model), f.valueText(c));
    QCOMPARE(back.tokenizer, std::string("marian"));
    QCOMPARE(back.num_beams, 4);
    QCOMPARE(back.max_length, 512);
}

void TestPackage::formatOneLoadsWithDefaults() {
    // A format-1 config.json (every package before format 2): the architecture fields that format 2
    // added keep the reference's behaviour; naming one of them in a format-1 file is an error.
    auto j = nlohmann::json::parse(attnlab::packageConfigToJson(attnlab::testing::packageConfig(m_cfg)));
    j["format_version"] = 1;
    for (const auto& f : attnlab::modelConfigFields())
        if (f.since > 1) j.erase(f.name);
    for (const char* k : {"tokenizer", "num_beams", "max_length"}) j.erase(k);
    const auto c = attnlab::packageConfigFromJson(j.dump(), "old.json");
    const attnlab::ModelConfig defaults;
    QCOMPARE(c.model.ffn_activation, defaults.ffn_activation);
    QCOMPARE(c.model.pos_encoding, std::string("interleaved"));
    QCOMPARE(c.model.layer_norm_eps, 1e-6);
    QVERIFY(c.model.emb_layer_norm && !c.model.attn_bias && !c.model.logits_bias);
    QCOMPARE(c.tokenizer, std::string("sentencepiece"));
    QCOMPARE(c.model.decoderLayers(), c.model.n_layers);
    j["ffn_activation"] = "swish";
    QVERIFY_THROWS_EXCEPTION(attnlab::PackageError, attnlab::packageConfigFromJson(j.dump(), "old.json"));
    try {
        attnlab::packageConfigFromJson(j.dump(), "old.json");
    } catch (const attnlab::PackageError& e) {
        QVERIFY2(QString(e.what()).contains("'ffn_activation' needs format_version 2"), e.what());
    }
}

// pos_encoding "none" (format 5) is for models with relative positions: with max_relative_positions 0 the model
// would know no positions at all, and a file of an older format cannot say "none" (its relative positions
// cannot be stored there). Both refused by name; "none" with k >= 1 in format 5 is read.
void TestPackage::noPositionsAtAllRefused() {
    const auto base = nlohmann::json::parse(attnlab::packageConfigToJson(attnlab::testing::packageConfig(m_cfg)));
    auto message = [](const nlohmann::json& j) {
        return attnlab::testing::messageOf<attnlab::PackageError>(
            [&] { attnlab::packageConfigFromJson(j.dump(), "pkg/config.json"); });
    };
    auto j = base;
    j["pos_encoding"] = "none";
    j["max_relative_positions"] = 2;
    QCOMPARE(attnlab::packageConfigFromJson(j.dump(), "pkg/config.json").model.max_relative_positions, int64_t(2));
    j["max_relative_positions"] = 0;
    QString got = message(j);
    QVERIFY2(got.contains("pkg/config.json: model config: pos_encoding 'none' with max_relative_positions 0 leaves "
                          "the model no positions at all"),
             qPrintable(got));
    for (int format : {2, 4}) {
        auto old = base;
        old["format_version"] = format;
        for (const auto& f : attnlab::modelConfigFields())
            if (f.since > format) old.erase(f.name);
        old["pos_encoding"] = "none";
        got = message(old);
        QVERIFY2(got.contains("pkg/config.json: package config: pos_encoding 'none' needs format_version 5 or later "
                              "(this one is " +
                              QString::number(format) + ")"),
                 qPrintable(got));
    }
}

namespace {
// What a test puts where a package file should be: a FIFO, a folder, a link to a character
// device (/dev/null: no mknod needed), a dangling link.
void replaceWith(const std::string& path, const std::string& what) {
    fs::remove_all(path);
    if (what == "fifo") QVERIFY(::mkfifo(path.c_str(), 0600) == 0);
    if (what == "folder") fs::create_directory(path);
    if (what == "device") fs::create_symlink("/dev/null", path);
    if (what == "dangling") fs::create_symlink(path + ".gone", path);
}

}  // namespace

using attnlab::testing::messageOf;

// Issue 39, item 8: a FIFO, a folder or a device where a package file should be is named as what
// it is (it said "missing file"); optional files (confidence.json, examples.tsv) that are there
// but are not regular files are errors, not ignored.
void TestPackage::specialFilesAreNamed_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("what");
    QTest::addColumn<QString>("message");
    QTest::newRow("weights a FIFO") << "model.safetensors"
                                    << "fifo"
                                    << "model.safetensors: is a FIFO (named pipe), not a regular file";
    QTest::newRow("weights a folder") << "model.safetensors"
                                      << "folder"
                                      << "model.safetensors: is a folder, not a file";
    QTest::newRow("config a FIFO") << "config.json"
                                   << "fifo"
                                   << "config.json: is a FIFO (named pipe), not a regular file";
    QTest::newRow("tokenizer a device") << "tokenizer.model"
                                        << "device"
                                        << "tokenizer.model: is a character device, not a regular file";
    QTest::newRow("tokenizer a dangling link") << "tokenizer.model"
                                               << "dangling"
                                               << "tokenizer.model.gone, which does not exist";
    QTest::newRow("confidence.json a FIFO") << "confidence.json"
                                            << "fifo"
                                            << "confidence.json: is a FIFO (named pipe), not a regular file";
    QTest::newRow("examples.tsv a folder") << "examples.tsv"
                                           << "folder"
                                           << "examples.tsv: is a folder, not a file";
}

void TestPackage::specialFilesAreNamed() {
    QFETCH(QString, file);
    QFETCH(QString, what);
    QFETCH(QString, message);
    const std::string dir = copyGood("special-" + what.toStdString() + "-" + file.toStdString());
    replaceWith(dir + "/" + file.toStdString(), what.toStdString());
    const QString m = messageOf([&] { Translator t(dir, {attnlab::testing::testDevice()}); });
    QVERIFY2(m.contains(QString::fromStdString(dir) + "/" + message), qPrintable(m));
}

// The same for a Hugging Face MarianMT directory (a copy of a real OPUS-MT one, without its
// weights: what is read before them), and two silent readings of its config.json: 0 decoder
// layers or a 0-wide decoder feed-forward meant "as the encoder"; a vocabulary id vocab.json
// lacks showed as "<unused N>" in translations.
void TestPackage::marianDirectoryFilesAreNamed() {
    const QString opus =
        qEnvironmentVariable("ATTNLAB_OPUS_MT_DIR", QString(ATTNLAB_SOURCE_DIR) + "/../shared/data/opus-mt-en-mg");
    if (!QFileInfo(opus + "/vocab.json").exists())
        QSKIP(qPrintable("no OPUS-MT tokenizer files at " + opus + " (set ATTNLAB_OPUS_MT_DIR): skipped"));
    int made = 0;
    auto copy = [&] {
        const std::string d = m_dir.path().toStdString() + "/marian-" + std::to_string(++made);
        fs::create_directories(d);
        for (const char* f : {"config.json", "vocab.json", "source.spm", "target.spm"}) {
            fs::copy_file(opus.toStdString() + "/" + f, d + "/" + f);
            fs::permissions(d + "/" + f, fs::perms::owner_write, fs::perm_options::add);
        }
        return d;
    };
    namespace pkg = attnlab::package;
    const std::string real = copy();
    QCOMPARE(pkg::readMarianConfig(real).model.n_trg_vocab, int64_t(54688));  // every id has its piece
    // Its languages: nothing here names them ("marian-1" is no opus-mt-xx-yy), so "src" / "tgt"; with
    // the card beside it, the card's "* source languages: en" / "* target languages: mg".
    QCOMPARE(pkg::readMarianConfig(real).source_lang, std::string("src"));
    const std::string carded = copy();
    fs::copy_file(opus.toStdString() + "/MODEL_CARD.md", carded + "/MODEL_CARD.md");
    const auto languages = pkg::readMarianConfig(carded);
    QCOMPARE(languages.source_lang, std::string("en"));
    QCOMPARE(languages.target_lang, std::string("mg"));
    QVERIFY(messageOf([&] { pkg::marianWeightsPath(real); }).contains("has neither model.safetensors nor"));

    auto expect = [&](const std::string& file, const std::string& what, const QString& message, auto&& load) {
        const std::string d = copy();
        replaceWith(d + "/" + file, what);
        const QString m = messageOf([&] { load(d); });
        QVERIFY2(m.startsWith(QString::fromStdString(d + "/" + file) + ": " + message), qPrintable(m));
    };
    auto config = [](const std::string& d) { pkg::readMarianConfig(d); };
    auto weights = [](const std::string& d) { pkg::marianWeightsPath(d); };
    auto codec = [](const std::string& d) { attnlab::marianCodec(d, 54688); };
    expect("model.safetensors", "fifo", "is a FIFO (named pipe), not a regular file", weights);
    expect("pytorch_model.bin", "folder", "is a folder, not a file", weights);
    expect("config.json", "device", "is a character device, not a regular file", config);
    expect("vocab.json", "fifo", "is a FIFO (named pipe), not a regular file", config);
    expect("target.spm", "folder", "is a folder, not a file", codec);
    expect("generation_config.json", "fifo", "is a FIFO (named pipe), not a regular file", config);
    expect("tokenizer_config.json", "folder", "is a folder, not a file", config);

    for (const char* field : {"decoder_layers", "decoder_ffn_dim"}) {
        const std::string d = copy();
        editConfig(d, [&](auto& j) { j[field] = 0; });
        const QString m = messageOf([&] { pkg::readMarianConfig(d); });
        QVERIFY2(m == QString::fromStdString(d + "/config.json: '" + field + "' is 0; it must be at least 1"),
                 qPrintable(m));
    }
    const std::string holes = copy();
    auto vocab = nlohmann::json::parse(attnlab::testing::readFile(holes + "/vocab.json"));
    for (auto it = vocab.begin(); it != vocab.end();)
        it = it.value() == 4646 || it.value() == 9000 ? vocab.erase(it) : std::next(it);
    attnlab::testing::writeFile(holes + "/vocab.json", vocab.dump());
    const QString m = messageOf([&] { pkg::readMarianConfig(holes); });
    QVERIFY2(m == QString::fromStdString(holes + "/vocab.json: has no piece for 2 of the model's 54688 ids "
                                                 "(config.json's vocab_size); the first: 4646, 9000"),
             qPrintable(m));
}

QTEST_APPLESS_MAIN(TestPackage)
#include "tst_package.moc"
