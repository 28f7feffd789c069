// The SentencePiece tokenizer through its dlopen'ed module: training, round trips on German text
// with umlauts, digits, emoji and characters the vocabulary lacks, and LibTorch in the same process.
#include "fixtures.h"

#include <attnlab/errors.h>
#include <attnlab/terminal_text.h>
#include <attnlab/tokenizer.h>

#include "tokenizer/normalizer_check.h"
#include "tokenizer/text_codec.h"
#include "util/text.h"

#include <torch/torch.h>

#include <QtTest/QtTest>

#include <sys/stat.h>

#include <fstream>

using attnlab::Tokenizer;

class TestTokenizer : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void specialIds();
    void roundTrip_data();
    void roundTrip();
    void unknownCharactersWithoutByteFallback();
    void piecesAndSurfaces();
    void nfkcNormalisation();
    void torchAndSentencePieceInOneProcess();
    void missingAndCorruptModel();
    void normalizationTableCheck();
    void trainingErrors();
    void trainedModelNamesNoPath();
    void specialFilesAreNamed();
    void messagesEscapeControlCharacters();
    void terminalTextEscapesControls();
    void argosTextIsMadeAsArgosTranslateMakesIt();
    void vocabularyCoversEveryId();

private:
    QTemporaryDir m_dir;
    std::unique_ptr<Tokenizer> m_tok;    // byte fallback on
    std::unique_ptr<Tokenizer> m_plain;  // byte fallback off
};

void TestTokenizer::initTestCase() {
    QVERIFY(m_dir.isValid());
    const std::string a = m_dir.path().toStdString() + "/fb";
    const std::string b = m_dir.path().toStdString() + "/plain";
    QDir().mkpath(QString::fromStdString(a));
    QDir().mkpath(QString::fromStdString(b));
    m_tok = std::make_unique<Tokenizer>(attnlab::testing::trainTokenizer(a, 400, true));
    m_plain = std::make_unique<Tokenizer>(attnlab::testing::trainTokenizer(b, 200, false));
    QVERIFY(QFileInfo(QString::fromStdString(Tokenizer::modulePath())).isFile());
}

void TestTokenizer::specialIds() {
    QCOMPARE(m_tok->padId(), 0);
    QCOMPARE(m_tok->unkId(), 1);
    QCOMPARE(m_tok->bosId(), 2);
    QCOMPARE(m_tok->eosId(), 3);
    QCOMPARE(m_tok->vocabSize(), 400);
    QCOMPARE(m_tok->idToPiece(3), std::string("</s>"));
    QCOMPARE(m_tok->pieceToId("<s>"), 2);
    QCOMPARE(m_tok->pieceToId("no-such-piece-xyz"), m_tok->unkId());
    QVERIFY(m_tok->isByte(m_tok->pieceToId("<0xF0>")));
}

void TestTokenizer::roundTrip_data() {
    QTest::addColumn<QString>("text");
    QTest::newRow("umlauts") << QString::fromUtf8("Ein Mädchen läuft über die grüne Wiese an der Straße.");
    QTest::newRow("capitals-umlauts") << QString::fromUtf8("ÄRGER, ÖL und ÜBERMUT: Größe zählt.");
    QTest::newRow("digits") << QString::fromUtf8("Zwei Männer arbeiten seit 1998 an 42 Häusern für 3,50 €.");
    QTest::newRow("emoji") << QString::fromUtf8("Der Hund 🐕 spielt mit einem Ball ⚽ 😀!");
    QTest::newRow("outside-vocabulary") << QString::fromUtf8("Ψυχή, 東京, and Ꙭ — “quotes” ‰.");
    QTest::newRow("single-char") << QString::fromUtf8("ß");
}

void TestTokenizer::roundTrip() {
    QFETCH(QString, text);
    const std::string s = text.toStdString();
    const auto e = m_tok->encode(s);
    QVERIFY(!e.ids.empty());
    QCOMPARE(e.ids.size(), e.pieces.size());
    for (size_t i = 0; i < e.ids.size(); ++i) {
        QVERIFY(e.ids[i] >= 0 && e.ids[i] < m_tok->vocabSize());
        QCOMPARE(m_tok->idToPiece(e.ids[i]), e.pieces[i]);
        QVERIFY(e.ids[i] != m_tok->unkId());  // byte fallback: nothing becomes <unk>
    }
    // nmt_nfkc normalisation keeps all these characters, so the round trip is exact.
    QCOMPARE(QString::fromStdString(m_tok->decode(e.ids)), text);
}

void TestTokenizer::unknownCharactersWithoutByteFallback() {
    const std::string s = "Der Hund 🐕 und 東京 bellt.";
    const auto e = m_plain->encode(s);
    int unk = 0;
    for (int id : e.ids) unk += id == m_plain->unkId();
    QVERIFY2(unk >= 2, "the emoji and the CJK characters must map to <unk>");
    const auto chars = m_plain->unknownCharacters(s);
    QCOMPARE(chars, (std::vector<std::string>{"🐕", "東", "京"}));
    // Known text decodes back unchanged, unknown parts become SentencePiece's ⁇.
    QVERIFY(QString::fromStdString(m_plain->decode(e.ids)).startsWith("Der Hund"));
    QVERIFY(m_plain->unknownCharacters("Der Hund bellt.").empty());
    // With byte fallback the same characters are reported too (they were never seen in training).
    QCOMPARE(m_tok->unknownCharacters(s), (std::vector<std::string>{"🐕", "東", "京"}));
}

void TestTokenizer::nfkcNormalisation() {
    // SentencePiece's default nmt_nfkc normalisation folds compatibility characters: the round
    // trip is exact only up to NFKC, which is what a model trained on such pieces sees.
    QCOMPARE(QString::fromStdString(m_tok->decode(m_tok->encode("ǅ ﬁx").ids)), QString::fromUtf8("Dž fix"));
}

void TestTokenizer::piecesAndSurfaces() {
    const std::string s = "Ein Hund läuft.";
    const auto e = m_tok->encode(s);
    QCOMPARE(e.surfaces.size(), e.pieces.size());
    std::string joined;
    for (const auto& x : e.surfaces) joined += x;
    QCOMPARE(joined, s);                                      // surfaces cover the input
    QVERIFY(e.pieces.front().rfind("\xE2\x96\x81", 0) == 0);  // the first piece starts with ▁
}

void TestTokenizer::torchAndSentencePieceInOneProcess() {
    // Both libraries are live in this process: ids from SentencePiece index a LibTorch embedding.
    const auto e = m_tok->encode("Zwei Katzen schlafen.");
    auto ids = torch::tensor(std::vector<int64_t>(e.ids.begin(), e.ids.end()));
    torch::nn::Embedding emb(m_tok->vocabSize(), 4);
    auto out = emb(ids);
    QCOMPARE(out.size(0), int64_t(e.ids.size()));
    QVERIFY(torch::equal(out[0], emb->weight[e.ids[0]]));
    QCOMPARE(m_tok->decode(std::vector<int>(e.ids.begin(), e.ids.end())), std::string("Zwei Katzen schlafen."));
}

void TestTokenizer::missingAndCorruptModel() {
    try {
        Tokenizer t("/nonexistent/spm.model");
        QFAIL("no exception");
    } catch (const attnlab::TokenizerError& e) {
        QVERIFY2(QString(e.what()).contains("/nonexistent/spm.model: missing file"), e.what());
    }
    const std::string bad = m_dir.path().toStdString() + "/bad.model";
    attnlab::testing::writeFile(bad, "this is not a protobuf");
    try {
        Tokenizer t(bad);
        QFAIL("no exception");
    } catch (const attnlab::TokenizerError& e) {
        QVERIFY2(QString(e.what()).contains("not a usable SentencePiece model"), e.what());
    }
    // Ids outside the vocabulary are an error, not a crash.
    try {
        m_tok->decode({5, 100000});
        QFAIL("no exception");
    } catch (const attnlab::TokenizerError& e) {
        QVERIFY2(QString(e.what()).contains("outside the vocabulary"), e.what());
    }
}

namespace {
std::string fileBytes(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) return {};
    return f.readAll().toStdString();
}

// A protobuf length-delimited field: key (field number, wire type 2), varint length, bytes.
std::string lengthDelimited(int field, const std::string& bytes) {
    std::string out(1, char(field << 3 | 2));
    for (size_t n = bytes.size();; n >>= 7) {
        out += char((n & 0x7F) | (n > 0x7F ? 0x80 : 0));
        if (n <= 0x7F) break;
    }
    return out + bytes;
}
}  // namespace

// The tables are checked before SentencePiece sees them (normalizer_check.h): the bundled models
// and the trained ones pass; the two tables the fuzzer found crash SentencePiece, a second
// normalizer_spec after a sound one (protobuf merges them: the last table wins) and a message the
// reader cannot walk are refused, and the tokenizer names the file and the problem.
void TestTokenizer::normalizationTableCheck() {
    using attnlab::spm::normalizationTableProblem;
    const QString root = ATTNLAB_SOURCE_DIR;
    const std::string bundled = fileBytes(root + "/resources/models/multi30k-de-en/tokenizer.model");
    QVERIFY(bundled.size() > 100000);
    QCOMPARE(normalizationTableProblem(bundled), std::string());
    QCOMPARE(normalizationTableProblem(fileBytes(root + "/resources/models/multi30k-en-de/tokenizer.model")),
             std::string());
    QCOMPARE(normalizationTableProblem(fileBytes(QString::fromStdString(m_tok->path()))), std::string());
    const std::string corrupt = "its normalization table is corrupt (an index points outside it)";
    for (const char* name : {"corrupt-normalizer.model", "corrupt-trie-index.model"})
        QCOMPARE(normalizationTableProblem(fileBytes(root + "/tests/fuzz-regressions/fuzz_tokenizer_model/" + name)),
                 corrupt);
    // A one-unit trie: the root's children would be read from units 0..255.
    const std::string one_unit_trie = std::string("\x04\0\0\0", 4) + std::string("\0\0\0\0", 4) + "x";
    const std::string second_spec = lengthDelimited(3, lengthDelimited(2, one_unit_trie));
    QCOMPARE(normalizationTableProblem(bundled + second_spec), corrupt);
    QCOMPARE(normalizationTableProblem(bundled + lengthDelimited(5, lengthDelimited(2, one_unit_trie))), corrupt);
    QCOMPARE(normalizationTableProblem(bundled + lengthDelimited(3, lengthDelimited(2, ""))), std::string());
    const std::string unreadable =
        "not a usable SentencePiece model: not a protobuf message that can be read to its end";
    QCOMPARE(normalizationTableProblem(std::string("\x0b", 1) + bundled), unreadable);  // a group (wire type 3)
    QCOMPARE(normalizationTableProblem(bundled + lengthDelimited(3, "").substr(0, 1)), unreadable);
    QCOMPARE(normalizationTableProblem(bundled.substr(0, bundled.size() - 1)), unreadable);

    const std::string path = m_dir.path().toStdString() + "/second-spec.model";
    attnlab::testing::writeFile(path, bundled + second_spec);
    try {
        Tokenizer t(path);
        QFAIL("no exception");
    } catch (const attnlab::TokenizerError& e) {
        QCOMPARE(std::string(e.what()), path + ": " + corrupt);
    }
}

void TestTokenizer::trainingErrors() {
    attnlab::TokenizerTrainingOptions o;
    o.input_files = {m_dir.path().toStdString() + "/missing.txt"};
    o.model_path = m_dir.path().toStdString() + "/x.model";
    try {
        Tokenizer::train(o);
        QFAIL("no exception");
    } catch (const attnlab::TokenizerError& e) {
        QVERIFY2(QString(e.what()).contains("missing.txt: missing file"), e.what());
    }
    o.input_files = {m_dir.path().toStdString() + "/fb/corpus.txt"};
    o.vocab_size = 2;
    try {
        Tokenizer::train(o);
        QFAIL("no exception");
    } catch (const attnlab::ConfigError& e) {
        QVERIFY2(QString(e.what()).contains("vocab_size"), e.what());
    }
}

// A trained model records no path: SentencePiece keeps its --input and --model_prefix flags in the
// model's trainer spec, and a package made on one machine named that machine's folders (found in
// a retrained bundled tokenizer, 2026-11-26). The module reads the input itself, so the file holds
// neither the folders (here with spaces, which the flag string could not carry) nor the files'
// names, and no .vocab file is written beside it. Two input files are read one after the other:
// the pieces and the encoding are those of the same lines trained from one file (initTestCase's).
// A missing model folder is refused before training.
void TestTokenizer::trainedModelNamesNoPath() {
    const std::string in = m_dir.path().toStdString() + "/input folder", out = m_dir.path().toStdString() + "/out put";
    QVERIFY(QDir().mkpath(QString::fromStdString(in)) && QDir().mkpath(QString::fromStdString(out)));
    const auto lines = attnlab::testing::corpusLines(3000);
    for (int part = 0; part < 2; ++part) {
        std::ofstream f(in + "/half-" + std::to_string(part) + ".txt");
        for (size_t i = part ? 1500 : 0; i < (part ? lines.size() : 1500); ++i) f << lines[i] << "\n";
    }
    attnlab::TokenizerTrainingOptions o;
    o.input_files = {in + "/half-0.txt", in + "/half-1.txt"};
    o.model_path = out + "/m.model";
    o.vocab_size = 400;
    o.num_threads = 1;
    Tokenizer::train(o);
    QCOMPARE(QDir(QString::fromStdString(out)).entryList(QDir::Files), QStringList{"m.model"});
    const QByteArray bytes = QByteArray::fromStdString(attnlab::testing::readFile(o.model_path));
    for (const char* name : {"input folder", "out put", "half-0", "m.model", "corpus.txt"})
        QVERIFY2(!bytes.contains(name), name);
    QVERIFY(!bytes.contains(QByteArray::fromStdString(m_dir.path().toStdString())));
    const Tokenizer t(o.model_path);
    QCOMPARE(t.vocabSize(), m_tok->vocabSize());
    for (int id = 0; id < t.vocabSize(); ++id) QCOMPARE(t.idToPiece(id), m_tok->idToPiece(id));
    const std::string s = "Ein Mädchen läuft über die Wiese.";
    QCOMPARE(t.encode(s).ids, m_tok->encode(s).ids);
    o.model_path = out + "/no such folder/m.model";
    try {
        Tokenizer::train(o);
        QFAIL("no exception");
    } catch (const attnlab::TokenizerError& e) {
        QVERIFY2(QString(e.what()).contains("no such folder does not exist"), e.what());
    }
}

using attnlab::testing::messageOf;

// Issue 39, item 8: a tokenizer model that is a folder, a FIFO or a device is named as what it is
// (it was "missing file").
void TestTokenizer::specialFilesAreNamed() {
    const std::string folder = m_dir.path().toStdString() + "/a-folder.model";
    const std::string fifo = m_dir.path().toStdString() + "/a-fifo.model";
    QDir().mkpath(QString::fromStdString(folder));
    QVERIFY(::mkfifo(fifo.c_str(), 0600) == 0);
    QCOMPARE(messageOf([&] { Tokenizer t(folder); }), QString::fromStdString(folder + ": is a folder, not a file"));
    QCOMPARE(messageOf([&] { Tokenizer t(fifo); }),
             QString::fromStdString(fifo + ": is a FIFO (named pipe), not a regular file"));
    QCOMPARE(messageOf([] { Tokenizer t("/dev/null"); }),
             QString("/dev/null: is a character device, not a regular file"));
}

// Pieces and text from files reach messages escaped: nothing in them acts on a terminal.
void TestTokenizer::messagesEscapeControlCharacters() {
    using attnlab::util::forMessage;
    QCOMPARE(forMessage("▁Hunde"), std::string("▁Hunde"));  // printable UTF-8 as it is
    QCOMPARE(forMessage("a\nb\tc\rd"), std::string("a\\nb\\tc\\rd"));
    QCOMPARE(forMessage("\x1b[2J\x07\x7f"), std::string("\\x1B[2J\\x07\\x7F"));
    QCOMPARE(forMessage(std::string("a\0b", 3)), std::string("a\\x00b"));
    QCOMPARE(forMessage("back\\slash"), std::string("back\\\\slash"));
    QCOMPARE(forMessage("\xC2\x85|\xC2\x9B"), std::string("\\u{0085}|\\u{009B}"));  // C1: NEL, CSI
    QCOMPARE(forMessage("abc\xE2\x80\xAE"
                        "cba"),
             std::string("abc\\u{202E}cba"));                                         // right-to-left override
    QCOMPARE(forMessage("\xFF\xC3(\xE2\x82"), std::string("\\xFF\\xC3(\\xE2\\x82"));  // not UTF-8
    QCOMPARE(forMessage(std::string(300, 'x')), std::string(200, 'x') + "...");

    // In a message: vocab.json's piece, an id outside the model's vocabulary.
    const std::string path = m_dir.path().toStdString() + "/escape-vocab.json";
    attnlab::testing::writeFile(path, R"({"</s>": 0, "<unk>": 1, "<pad>": 2, "\u001b[2J\n": 9})");
    QCOMPARE(
        messageOf([&] { attnlab::readMarianVocab(path, 3); }),
        QString::fromStdString(path + ": '\\x1B[2J\\n' has id 9, outside the model's vocabulary of 3 (config.json)"));
}

// vocab.json must give every id of the model its piece (a missing one showed as "<unused N>" in a
// translation); the real OPUS-MT vocabulary does (Hugging Face's conversion refuses one whose
// size is not the model's).
// What the CLI prints of a file's or the command line's text (attnlab/terminal_text.h): the controls
// forMessage escapes, backslashes left as they are (a message escaped by forMessage reads the same).
void TestTokenizer::terminalTextEscapesControls() {
    using attnlab::escapedForTerminal;
    QCOMPARE(escapedForTerminal("de\x1b]0;owned\x07"), std::string("de\\x1B]0;owned\\x07"));  // ESC, BEL
    QCOMPARE(escapedForTerminal("no\nsuch\r\t"), std::string("no\\nsuch\\r\\t"));
    QCOMPARE(escapedForTerminal("\xC2\x9B"
                                "31m\xC2\x85"),
             std::string("\\u{009B}31m\\u{0085}"));  // C1: CSI, NEL
    QCOMPARE(escapedForTerminal(std::string("a\0b\x7f", 4)), std::string("a\\x00b\\x7F"));
    QCOMPARE(escapedForTerminal("\x9B"
                                "2J"),
             std::string("\\x9B2J"));  // a lone C1 byte: not UTF-8
    QCOMPARE(escapedForTerminal("C:\\x1B is text ▁Hunde"), std::string("C:\\x1B is text ▁Hunde"));
    QCOMPARE(escapedForTerminal(attnlab::util::forMessage("a\x1b")), std::string("a\\x1B"));  // escaped once
    QCOMPARE(escapedForTerminal(std::string(300, 'x')), std::string(300, 'x'));               // never cut
}

void TestTokenizer::vocabularyCoversEveryId() {
    const std::string path = m_dir.path().toStdString() + "/holes-vocab.json";
    attnlab::testing::writeFile(path, R"({"</s>": 0, "<unk>": 1, "<pad>": 9, "a": 3})");
    QCOMPARE(messageOf([&] { attnlab::readMarianVocab(path, 10); }),
             QString::fromStdString(path + ": has no piece for 6 of the model's 10 ids (config.json's vocab_size); the "
                                           "first: 2, 4, 5, 6, 7, ..."));
    const QString opus =
        qEnvironmentVariable("ATTNLAB_OPUS_MT_DIR", QString(ATTNLAB_SOURCE_DIR) + "/../shared/data/opus-mt-en-mg");
    if (!QFileInfo(opus + "/vocab.json").exists())
        QSKIP(qPrintable("no OPUS-MT vocab.json at " + opus + " (set ATTNLAB_OPUS_MT_DIR): the real one not read"));
    QCOMPARE(attnlab::readMarianVocab((opus + "/vocab.json").toStdString(), 54688).size(), size_t(54688));
}

void TestTokenizer::argosTextIsMadeAsArgosTranslateMakesIt() {
    // argos-translate's text (translate.py apply_packaged_translation): "".join(tokens), every "▁" a space, one
    // leading space dropped. A piece the SentencePiece model lacks ("▁läuft▁weg": an OPUS-MT package's
    // sentencepiece.model is the source side's, so a target piece need not be in it) keeps its "▁" in
    // SentencePiece's own decoding, which a CTranslate2 model that is not an Argos package still uses.
    attnlab::TokenVocabularies v;
    v.spm_path = std::string(ATTNLAB_SOURCE_DIR) + "/resources/models/multi30k-de-en/tokenizer.model";
    v.source =
        v.target = {"<unk>", "</s>", "\u2581Ein", "\u2581Hund", "\u2581l\u00e4uft\u2581weg", ".", "\u2581\u2581"};
    v.special = {1};
    v.join_pieces = true;
    const auto argos = attnlab::tokenVocabularyCodec(v);
    QCOMPARE(argos->decode({2, 3, 4, 5, 1}), std::string("Ein Hund l\u00e4uft weg."));
    QCOMPARE(argos->decode({6, 2}),
             std::string("  Ein"));  // three spaces, of which only one goes, as in argos-translate
    QCOMPARE(argos->decode({1}), std::string());
    v.join_pieces = false;
    const auto spm = attnlab::tokenVocabularyCodec(v);
    const std::string spm_text = spm->decode({2, 3, 4, 5, 1});
    QVERIFY2(spm_text.find("\u2581") != std::string::npos, spm_text.c_str());
}

QTEST_APPLESS_MAIN(TestTokenizer)
#include "tst_tokenizer.moc"
