// Converted Marian / OPUS-MT models: a small random MarianMT folder (scripts/marian_reference.py make over
// the tokenizer files of ../shared/data/opus-mt-en-mg, a real OPUS-MT model without its weights), its <pad>
// row zero as a real folder's, converted as ct2-transformers-converter converts it and, through the Marian
// model.npz it was made from, as ct2-marian-converter does (scripts/ct2_converters.py, written from
// CTranslate2's converters line by line: the decoder's start_from_zero_embedding, the vocabulary without
// the trailing <pad>, </s> appended to the source by the tokenizer or by add_source_eos, the decoder start
// token). AttnLab opens each conversion: source ids, greedy ids, log-probabilities and every attention map
// equal the Hugging Face folder's as AttnLab opens it (float32 within 1e-5), and the ct2-marian-converter
// model equals scripts/ct2_reference.py's float64 CTranslate2. Skipped, with a message, where the OPUS-MT
// files or python3-torch are missing (failed under CI=true).
#include "fixtures.h"
#include "python_probe.h"

#include <attnlab/package.h>
#include <attnlab/translation.h>
#include <attnlab/translator.h>

#include <QtTest/QtTest>

#include <nlohmann/json.hpp>

#include <filesystem>

using nlohmann::json;
namespace fs = std::filesystem;
using attnlab::testing::worstMapDifference;

class TestCt2Conversion : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void transformersConverterEqualsTheFolder();
    void marianConverterEqualsTheFolderAndCTranslate2();
    void int8ConversionAsLocomotiveMakesIt();
    void importedConversionStartsFromZero();
    void padOfARealFolderIsRenormalisedAway();
    void multilingualConversionTakesTheLanguages_data();
    void multilingualConversionTakesTheLanguages();

private:
    QString script(const QString& name, const QStringList& args);
    static attnlab::DecodingOptions greedy();
    // Both translations of each sentence agree: ids, log-probabilities, maps; returns the worst differences.
    static void compare(const std::vector<attnlab::TranslationResult>& converted,
                        const std::vector<attnlab::TranslationResult>& folder);
    // `results` (m_sentences translated by `model`, greedy()) equal scripts/ct2_reference.py's float64
    // CTranslate2 on that model: source and target ids whole, log-probabilities and maps within float32's margins.
    void compareWithReference(const QString& model, const std::vector<attnlab::TranslationResult>& results);

    QTemporaryDir m_dir;
    QString m_python = qEnvironmentVariable("ATTNLAB_PYTHON", "/usr/bin/python3");
    QString m_opus, m_folder;
    const std::vector<std::string> m_sentences = {"Hello world.", "The cat sat on the mat.", "Ünïcödé ✓ 42 times"};
};

void TestCt2Conversion::initTestCase() {
    m_opus = qEnvironmentVariable("ATTNLAB_OPUS_MT_DIR", QString(ATTNLAB_SOURCE_DIR) + "/../shared/data/opus-mt-en-mg");
    if (!QFileInfo(m_opus + "/vocab.json").exists())
        QSKIP(qPrintable("no OPUS-MT tokenizer files at " + m_opus + " (set ATTNLAB_OPUS_MT_DIR): skipped"));
    ATTNLAB_REQUIRE_PYTHON(m_python, (QStringList{"torch", "numpy", "sentencepiece", "yaml"}), "conversion check");
    m_folder = m_dir.path() + "/hf";
    script("marian_reference.py",
           {"make", "--from", m_opus, "--out", m_folder, "--seed", "7", "--final-logits-bias", "--eos-bias", "2"});
    // The folder's softmax has a column for <pad> (logit: its bias, the row being zero) that the converted
    // model's has not (MarianMTLoader._remove_pad_weights). At -30 its share, e^-30, is below float32's
    // resolution, so the two normalisers agree; at a real folder's 0 the converted log-probabilities are the
    // folder's renormalised without <pad> (docs/ctranslate2.md).
    script("ct2_reference.py", {"pad-row", "--dir", m_folder, "--pad-logit", "-30"});
}

QString TestCt2Conversion::script(const QString& name, const QStringList& args) {
    attnlab::testing::runScript(m_python, name, args);
    return {};
}

attnlab::DecodingOptions TestCt2Conversion::greedy() {
    attnlab::DecodingOptions o;
    o.beam_size = 1;
    o.max_length = 10;
    o.max_length_ratio = 0;
    o.min_length = 1;  // the folder's default is 0, CTranslate2's 1: one rule for both
    o.top_k_candidates = 0;
    return o;
}

void TestCt2Conversion::compare(const std::vector<attnlab::TranslationResult>& converted,
                                const std::vector<attnlab::TranslationResult>& folder) {
    QCOMPARE(converted.size(), folder.size());
    double worst_map = 0, worst_logp = 0;
    for (size_t i = 0; i < converted.size(); ++i) {
        const auto &c = converted[i], &f = folder[i];
        QCOMPARE(c.source_ids, f.source_ids);
        QCOMPARE(c.best.ids, f.best.ids);
        QVERIFY(c.decoder_starts_from_zero);
        QCOMPARE(c.decoder_input_pieces.at(0), std::string(attnlab::kZeroStartPiece));
        for (size_t t = 0; t < f.best.token_log_probs.size(); ++t)
            worst_logp = std::max(worst_logp, std::abs(c.best.token_log_probs.at(t) - f.best.token_log_probs[t]));
        worst_map =
            std::max({worst_map, worstMapDifference(c.encoder_self, f.encoder_self),
                      worstMapDifference(c.decoder_self, f.decoder_self), worstMapDifference(c.cross, f.cross)});
    }
    qInfo("converted vs folder: largest difference attention %.2e, log-probability %.2e", worst_map, worst_logp);
    // Measured 0: AttnLab splits the fused q|k|v rows back into the folder's matrices and the stored position table
    // holds the folder's float32 sinusoids, so both run the same float32 products; the margin (the issue's 1e-5)
    // is for a device whose kernels sum in another order for another layout.
    QVERIFY2(worst_map < 1e-5, qPrintable(QString::number(worst_map)));
    QVERIFY2(worst_logp < 1e-5, qPrintable(QString::number(worst_logp)));
}

void TestCt2Conversion::transformersConverterEqualsTheFolder() {
    const QString out = m_dir.path() + "/ct2-transformers";
    script("ct2_reference.py", {"convert-transformers", "--from", m_folder, "--out", out});
    const auto device = attnlab::testing::testDevice();
    attnlab::Translator folder(m_folder.toStdString(), {device}), converted(out.toStdString(), {device});
    // 54,687 tokens (no <pad>), the <pad> AttnLab adds for its masks after them.
    const auto& config = converted.info().config;
    QVERIFY(config.model.start_from_zero_embedding);
    QCOMPARE(config.model.n_trg_vocab, folder.info().config.model.n_trg_vocab);
    QCOMPARE(config.model.trg_pad_idx, config.model.n_trg_vocab - 1);
    const auto from_folder = folder.translateBatch(m_sentences, greedy());
    // No SentencePiece model beside this conversion: CTranslate2 takes MarianTokenizer's pieces, </s> included.
    std::vector<std::string> pieces;
    for (const auto& r : from_folder) {
        std::string joined;
        for (const auto& p : r.source_pieces) joined += (joined.empty() ? "" : " ") + p;
        QCOMPARE(r.source_pieces.back(), std::string("</s>"));
        pieces.push_back(joined);
    }
    compare(converted.translateBatch(pieces, greedy()), from_folder);
}

void TestCt2Conversion::marianConverterEqualsTheFolderAndCTranslate2() {
    const QString npz = m_dir.path() + "/marian", out = m_dir.path() + "/ct2-marian";
    script("ct2_reference.py", {"marian-npz", "--from", m_folder, "--out", npz});
    script("ct2_reference.py", {"convert-marian", "--model-path", npz + "/model.npz", "--vocab-paths",
                                npz + "/vocab.yml", "--out", out, "--copy-spm", npz + "/source.spm"});
    const auto device = attnlab::testing::testDevice();
    attnlab::Translator folder(m_folder.toStdString(), {device}), converted(out.toStdString(), {device});
    QVERIFY(converted.info().config.source_eos);  // add_source_eos: text in, </s> appended
    const auto results = converted.translateBatch(m_sentences, greedy());
    compare(results, folder.translateBatch(m_sentences, greedy()));
    // Packed as LibreTranslate's Locomotive opus_mt_convert.py packs it for Argos: metadata.json, the source
    // SentencePiece model as sentencepiece.model beside model/ (the converter's output).
    const fs::path argos = fs::path(m_dir.path().toStdString()) / "translate-en_mg-1_0";
    fs::create_directories(argos);
    fs::copy(out.toStdString(), argos / "model", fs::copy_options::recursive);
    fs::rename(argos / "model" / "sentencepiece.model", argos / "sentencepiece.model");
    attnlab::testing::writeFile((argos / "metadata.json").string(),
                                R"({"package_version": "1.0", "argos_version": "1.9.0", "from_code": "en", )"
                                R"("from_name": "English", "to_code": "mg", "to_name": "Malagasy"})");
    attnlab::Translator packed(argos.string(), {device});
    QCOMPARE(packed.info().config.target_lang, std::string("mg"));
    compare(packed.translateBatch(m_sentences, greedy()), folder.translateBatch(m_sentences, greedy()));
    // And as CTranslate2 computes it (ct2_reference.py: float64, its vocabulary without a <pad>).
    compareWithReference(out, results);
}

void TestCt2Conversion::int8ConversionAsLocomotiveMakesIt() {
    // Locomotive's opus_mt_convert.py runs ct2-marian-converter with --quantization int8 unless told otherwise
    // (its -q default): the Argos packages made from OPUS-MT hold int8 weights with a scale per output row.
    // AttnLab and ct2_reference.py dequantize the same stored bytes, so they agree as in float32; the folder
    // does not (the rounding of the weights moves every number), so it is not compared here.
    const QString npz = m_dir.path() + "/marian-int8", out = m_dir.path() + "/ct2-marian-int8";
    script("ct2_reference.py", {"marian-npz", "--from", m_folder, "--out", npz});
    script("ct2_reference.py",
           {"convert-marian", "--model-path", npz + "/model.npz", "--vocab-paths", npz + "/vocab.yml", "--out", out,
            "--copy-spm", npz + "/source.spm", "--quantization", "int8"});
    attnlab::Translator converted(out.toStdString(), {attnlab::testing::testDevice()});
    QCOMPARE(converted.info().stored_dtype, std::string("float32+int8"));
    compareWithReference(out, converted.translateBatch(m_sentences, greedy()));
}

void TestCt2Conversion::compareWithReference(const QString& model,
                                             const std::vector<attnlab::TranslationResult>& results) {
    const QString in = m_dir.path() + "/sentences.txt", ref_out = model + ".reference.json";
    std::string text;
    for (const auto& s : m_sentences) text += s + "\n";
    attnlab::testing::writeFile(in.toStdString(), text);
    script("ct2_reference.py", {"run", "--model", model, "--sentences", in, "--out", ref_out, "--max-length", "10"});
    const json ref = json::parse(attnlab::testing::readFile(ref_out.toStdString()));
    QCOMPARE(ref["sentences"].size(), results.size());
    double worst_logp = 0, worst_map = 0;
    for (size_t i = 0; i < results.size(); ++i) {
        const json& e = ref["sentences"][i];
        QCOMPARE(results[i].source_ids, e["source_ids"].get<std::vector<int>>());
        // Whole: the same greedy rule and length cap (10 tokens, </s> included where reached).
        const auto ids = e["target_ids"].get<std::vector<int>>();
        QCOMPARE(results[i].best.ids, ids);
        const auto logp = e["step_log_probs"].get<std::vector<double>>();
        for (size_t t = 0; t < ids.size(); ++t)
            worst_logp = std::max(worst_logp, std::abs(results[i].best.token_log_probs.at(t) - logp.at(t)));
        worst_map =
            std::max({worst_map, worstMapDifference(results[i].decoder_self, e["attentions"]["decoder"], ids.size()),
                      worstMapDifference(results[i].cross, e["attentions"]["cross"], ids.size())});
    }
    qInfo("%s vs ct2_reference.py (float64): log-probability %.2e, attention %.2e",
          qPrintable(QFileInfo(model).fileName()), worst_logp, worst_map);
    // float32 against float64 (measured 2.2e-6 and 6.2e-6): the project's margins for that comparison, as
    // tst_ctranslate2's (a log-softmax over 54,687 tokens in float32).
    QVERIFY2(worst_logp < 1e-4, qPrintable(QString::number(worst_logp)));
    QVERIFY2(worst_map < 1e-5, qPrintable(QString::number(worst_map)));
}

void TestCt2Conversion::importedConversionStartsFromZero() {
    const QString out = m_dir.path() + "/ct2-transformers-2";
    script("ct2_reference.py", {"convert-transformers", "--from", m_folder, "--out", out});
    const std::string pkg = m_dir.path().toStdString() + "/imported";
    const auto config = attnlab::importMarianModel(out.toStdString(), pkg);
    QVERIFY(config.model.start_from_zero_embedding);
    attnlab::Translator original(out.toStdString(), {attnlab::testing::testDevice()}),
        imported(pkg, {attnlab::testing::testDevice()});
    const std::vector<std::string> tokens = {"▁Hello ▁world . </s>"};
    const auto a = original.translateBatch(tokens, greedy()), b = imported.translateBatch(tokens, greedy());
    QCOMPARE(b[0].best.ids, a[0].best.ids);
    QCOMPARE(b[0].best.token_log_probs, a[0].best.token_log_probs);
    QCOMPARE(b[0].decoder_input_pieces.at(0), std::string(attnlab::kZeroStartPiece));
}

void TestCt2Conversion::padOfARealFolderIsRenormalisedAway() {
    // A real OPUS-MT folder's <pad> logit is 0 (a zero row, a zero bias): its softmax gives <pad> a share that
    // the converted model's, without the row, spreads over the other tokens. At each step every token's
    // probability is then the folder's divided by 1 - p(<pad>): one factor, above 1, for all of them. The <pad>
    // logit here is 12, not 0, so that its share (tiny at 0 against these random logits) is large enough to see.
    const QString dir = m_dir.path() + "/hf-pad0", out = m_dir.path() + "/ct2-pad0";
    script("marian_reference.py", {"make", "--from", m_opus, "--out", dir, "--seed", "8", "--final-logits-bias"});
    script("ct2_reference.py", {"pad-row", "--dir", dir, "--pad-logit", "12"});
    script("ct2_reference.py", {"convert-transformers", "--from", dir, "--out", out});
    const auto device = attnlab::testing::testDevice();
    attnlab::Translator folder(dir.toStdString(), {device}), converted(out.toStdString(), {device});
    attnlab::DecodingOptions o = greedy();
    o.top_k_candidates = 4;
    const auto f = folder.translate("The cat sat on the mat.", o);
    std::string pieces;
    for (const auto& p : f.source_pieces) pieces += (pieces.empty() ? "" : " ") + p;
    const auto c = converted.translate(pieces, o);
    QCOMPARE(c.best.ids, f.best.ids);  // one factor per step: the same argmax
    QVERIFY(worstMapDifference(c.cross, f.cross) < 1e-6);
    double worst = 0, largest = 1;
    int compared = 0;
    for (size_t t = 0; t < f.steps.size(); ++t) {
        const double factor = c.steps[t].chosen_probability / f.steps[t].chosen_probability;
        largest = std::max(largest, factor);
        QVERIFY2(factor > 1.0, qPrintable(QString::number(factor)));
        for (const auto& theirs : f.steps[t].candidates)  // the folder's may hold <pad> itself
            for (const auto& mine : c.steps[t].candidates)
                if (mine.id == theirs.id) {
                    worst = std::max(worst, std::abs(mine.probability / theirs.probability / factor - 1));
                    ++compared;
                }
    }
    qInfo("factors 1/(1 - p(<pad>)) up to %.4f; the candidates' ratios differ from their step's by at most %.2e",
          largest, worst);
    QVERIFY2(worst < 1e-5, qPrintable(QString::number(worst)));      // float32 probabilities
    QVERIFY2(largest > 1.05, qPrintable(QString::number(largest)));  // a share large enough to tell
    QVERIFY(compared >= int(2 * f.steps.size()));
}

void TestCt2Conversion::multilingualConversionTakesTheLanguages_data() {
    QTest::addColumn<QString>("family");
    QTest::addColumn<QString>("real");  // the real model's tokenizer files (../shared/data/hf-multilingual)
    QTest::addColumn<QString>("source");
    QTest::addColumn<QString>("target");
    QTest::newRow("M2M100") << "m2m100"
                            << "m2m100_418M"
                            << "en"
                            << "de";
    QTest::newRow("NLLB") << "nllb"
                          << "nllb-200-distilled-600M"
                          << "eng_Latn"
                          << "fra_Latn";
    QTest::newRow("mBART-50") << "mbart50"
                              << "mbart-large-50-many-to-many-mmt"
                              << "en_XX"
                              << "de_DE";
}

void TestCt2Conversion::multilingualConversionTakesTheLanguages() {
    QFETCH(QString, family);
    QFETCH(QString, real);
    QFETCH(QString, source);
    QFETCH(QString, target);
    const QString real_dir = QString(ATTNLAB_SOURCE_DIR) + "/../shared/data/hf-multilingual/" + real;
    if (!QFileInfo(real_dir + "/config.json").exists()) QSKIP(qPrintable("no tokenizer files at " + real_dir));
    const QString dir = m_dir.path() + "/" + family, out = dir + "-ct2";
    script("hf_multilingual_reference.py",
           {"make", "--family", family, "--from", real_dir, "--out", dir, "--seed", "5"});
    script("ct2_reference.py", {"convert-transformers", "--from", dir, "--out", out});
    const auto device = attnlab::testing::testDevice();
    attnlab::Translator folder(dir.toStdString(), {device}), converted(out.toStdString(), {device});
    // The languages read from the converted vocabulary's tokens, as the folder's tokenizer lists them.
    const auto &mine = converted.info().config.languages, &theirs = folder.info().config.languages;
    QCOMPARE(mine.size(), theirs.size());
    for (size_t i = 0; i < mine.size(); ++i) {
        QCOMPARE(mine[i].code, theirs[i].code);
        QCOMPARE(mine[i].id, theirs[i].id);
    }
    attnlab::DecodingOptions o = greedy();
    o.source_language = source.toStdString();
    o.target_language = target.toStdString();
    const std::vector<std::string> text = {"The weather is nice today.", "Die Kinder spielen im Garten."};
    const auto from_folder = folder.translateBatch(text, o);
    // No SentencePiece model beside the conversion: its pieces, without the language token and </s>, which
    // AttnLab places as the tokenizer does.
    std::vector<std::string> pieces;
    for (const auto& r : from_folder) {
        std::string joined;
        for (size_t k = 1; k + 1 < r.source_pieces.size(); ++k)
            joined += (joined.empty() ? "" : " ") + r.source_pieces[k];
        pieces.push_back(joined);
    }
    // The folder's search never generates its <pad> (id 1: AttnLab blocks padding), the conversion's may, as
    // CTranslate2's does; these random models never choose it, so the ids agree whole.
    const auto results = converted.translateBatch(pieces, o);
    double worst_map = 0, worst_logp = 0;
    for (size_t i = 0; i < results.size(); ++i) {
        const auto &c = results[i], &f = from_folder[i];
        QCOMPARE(c.source_ids, f.source_ids);
        QCOMPARE(c.best.ids, f.best.ids);
        QCOMPARE(c.forced_by_model, 1);  // the target language's token, forced first
        for (size_t t = 0; t < f.best.token_log_probs.size(); ++t)
            worst_logp = std::max(worst_logp, std::abs(c.best.token_log_probs.at(t) - f.best.token_log_probs[t]));
        worst_map =
            std::max({worst_map, worstMapDifference(c.encoder_self, f.encoder_self),
                      worstMapDifference(c.decoder_self, f.decoder_self), worstMapDifference(c.cross, f.cross)});
    }
    qInfo("%s converted vs folder: attention %.2e, log-probability %.2e", qPrintable(family), worst_map, worst_logp);
    QVERIFY2(worst_map < 1e-5, qPrintable(QString::number(worst_map)));
    QVERIFY2(worst_logp < 1e-5, qPrintable(QString::number(worst_logp)));
    // The same vocabulary with another start token (<s>, as an OpenNMT model's) is not read as a multilingual
    // conversion: every converter of these families starts the decoder with </s>.
    json config = json::parse(attnlab::testing::readFile(out.toStdString() + "/config.json"));
    config["decoder_start_token"] = "<s>";
    attnlab::testing::writeFile(out.toStdString() + "/config.json", config.dump(2));
    QVERIFY(attnlab::Translator(out.toStdString(), {device}).info().config.languages.empty());
}

QTEST_GUILESS_MAIN(TestCt2Conversion)
#include "tst_ct2_conversion.moc"
