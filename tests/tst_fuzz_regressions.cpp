// Every input a fuzz harness ever found a problem with (tests/fuzz-regressions/<harness>/), fed
// again to the same target (fuzz/targets.cpp) in the normal build: each must now be answered with
// an attnlab::Error or accepted, never another exception, a crash or a broken invariant.
#include "targets.h"

#include <QtTest/QtTest>

#include <functional>
#include <map>

class TestFuzzRegressions : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void replay_data();
    void replay();
};

namespace {
const std::map<QString, std::function<void(const uint8_t*, size_t)>>& targets() {
    static const std::map<QString, std::function<void(const uint8_t*, size_t)>> t = {
        {"fuzz_safetensors", attnlab::fuzz::safetensorsFile},
        {"fuzz_config_json", attnlab::fuzz::configJson},
        {"fuzz_confidence_json", attnlab::fuzz::confidenceJson},
        {"fuzz_lesson", attnlab::fuzz::lessonFile},
        {"fuzz_training_log", attnlab::fuzz::trainingLog},
        {"fuzz_corpus", attnlab::fuzz::corpusFile},
        {"fuzz_examples", attnlab::fuzz::examplesAndGold},
        {"fuzz_tokenizer_model", attnlab::fuzz::tokenizerModel},
        {"fuzz_package", attnlab::fuzz::packageDirectory},
        {"fuzz_attention_history", attnlab::fuzz::attentionHistory},
        {"fuzz_torch_pickle", attnlab::fuzz::torchPickle},
        {"fuzz_torch_bin", attnlab::fuzz::torchBin},
        {"fuzz_marian_config", attnlab::fuzz::marianConfig},
        {"fuzz_marian_dir", attnlab::fuzz::marianDirectory},
        {"fuzz_multilingual_dir", attnlab::fuzz::multilingualDirectory},
        {"fuzz_safetensors_values", attnlab::fuzz::safetensorsValues},
        {"fuzz_lesson_at_size", attnlab::fuzz::lessonAtSize},
        {"fuzz_ctranslate2_bin", attnlab::fuzz::ctranslate2ModelBin},
        {"fuzz_argos_archive", attnlab::fuzz::argosArchive},
        {"fuzz_argos_index", attnlab::fuzz::argosIndex},
        {"fuzz_corpus_results", attnlab::fuzz::corpusResults},
        {"fuzz_text", attnlab::fuzz::textToTranslate},
        {"fuzz_hub_answers", attnlab::fuzz::hubAnswers}};
    return t;
}
}  // namespace

void TestFuzzRegressions::replay_data() {
    QTest::addColumn<QString>("harness");
    QTest::addColumn<QString>("file");
    const QDir root(ATTNLAB_SOURCE_DIR "/tests/fuzz-regressions");
    int n = 0;
    for (const QString& harness : root.entryList(QDir::Dirs | QDir::NoDotAndDotDot)) {
        QVERIFY2(targets().count(harness), qPrintable("no target for " + harness));
        for (const QString& f : QDir(root.filePath(harness)).entryList(QDir::Files)) {
            QTest::newRow(qPrintable(harness + "/" + f)) << harness << root.filePath(harness + "/" + f);
            ++n;
        }
    }
    QVERIFY2(n > 0, "no regression inputs found");
}

void TestFuzzRegressions::replay() {
    QFETCH(QString, harness);
    QFETCH(QString, file);
    QFile f(file);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QByteArray bytes = f.readAll();
    try {
        targets().at(harness)(reinterpret_cast<const uint8_t*>(bytes.constData()), size_t(bytes.size()));
    } catch (const std::exception& e) {
        QFAIL(qPrintable(QString("%1 escaped as %2: %3").arg(file, typeid(e).name(), e.what())));
    }
}

QTEST_GUILESS_MAIN(TestFuzzRegressions)
#include "tst_fuzz_regressions.moc"
