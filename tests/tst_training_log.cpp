// readTrainingLog: the trainer's own log.tsv read back value for value, and every malformed file
// rejected with the file, the line and the problem in the message.
#include "fixtures.h"

#include <attnlab/errors.h>
#include <attnlab/training_log.h>

#include <QtTest/QtTest>

#include <algorithm>
#include <cmath>

class TestTrainingLog : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void readsColumnsAndRows();
    void readsTheBundledModelsLog();
    void malformedFilesAreNamed_data();
    void malformedFilesAreNamed();
    void missingFileIsNamed();

private:
    QTemporaryDir m_dir;
};

void TestTrainingLog::readsColumnsAndRows() {
    const std::string path = m_dir.filePath("log.tsv").toStdString();
    attnlab::testing::writeFile(path,
                                "epoch\tstep\tvalid_bleu\tlr\n1\t133\t0.13\t0.0003325\n\n2\t266\tnan\t6.65e-4\r\n");
    const auto log = attnlab::readTrainingLog(path);
    QCOMPARE(log.columns, (std::vector<std::string>{"epoch", "step", "valid_bleu", "lr"}));
    QCOMPARE(log.rows.size(), size_t(2));
    QCOMPARE(log.column("step"), (std::vector<double>{133, 266}));
    QCOMPARE(log.column("lr"), (std::vector<double>{0.0003325, 6.65e-4}));
    QCOMPARE(log.column("valid_bleu")[0], 0.13);
    QVERIFY(std::isnan(log.column("valid_bleu")[1]));
    QVERIFY(log.has("epoch"));
    QVERIFY(!log.has("bleu"));
    try {
        log.column("bleu");
        QFAIL("no exception");
    } catch (const attnlab::InputError& e) {
        QCOMPARE(std::string(e.what()), path + ": no column 'bleu'");
    }
}

void TestTrainingLog::readsTheBundledModelsLog() {
    // The committed package's log (its second stage: 6 annealing epochs of 133 batches) against
    // what its model card says (written separately, by scripts/package_model.sh): the best greedy
    // validation BLEU 40.36, at the last epoch (step 798), and the stage's length.
    const std::string dir = ATTNLAB_SOURCE_DIR "/resources/models/multi30k-de-en/";
    const std::string card = attnlab::testing::readFile(dir + "MODEL_CARD.md");
    QVERIFY(card.find("- steps: 798, epochs completed: 6") != std::string::npos);
    QVERIFY(card.find("smooth:exp): 40.36") != std::string::npos);
    const auto log = attnlab::readTrainingLog(dir + "training_log.tsv");
    const auto epochs = log.column(attnlab::epoch_log::kEpoch), steps = log.column(attnlab::epoch_log::kStep);
    const auto bleu = log.column(attnlab::epoch_log::kValidBleu), loss = log.column(attnlab::epoch_log::kTrainLoss);
    QCOMPARE(epochs.size(), size_t(6));
    for (size_t i = 0; i < epochs.size(); ++i) {
        QCOMPARE(epochs[i], double(i + 1));
        QCOMPARE(steps[i], 133.0 * double(i + 1));
        QVERIFY(std::isfinite(loss[i]));
    }
    const auto best = std::max_element(bleu.begin(), bleu.end()) - bleu.begin();
    QCOMPARE(bleu[best], 40.36);
    QCOMPARE(epochs[best], 6.0);
    QCOMPARE(steps[best], 798.0);
}

void TestTrainingLog::malformedFilesAreNamed_data() {
    QTest::addColumn<QString>("content");
    QTest::addColumn<QString>("message");
    QTest::newRow("empty") << ""
                           << ": empty (no header line)";
    QTest::newRow("ragged") << "a\tb\n1\t2\n3\n"
                            << ": line 3 has 1 fields, the header has 2";
    QTest::newRow("text") << "a\tb\n1\tfast\n"
                          << ": line 2, column 'b': 'fast' is not a number";
    QTest::newRow("trailing") << "a\tb\n1\t2x\n"
                              << ": line 2, column 'b': '2x' is not a number";
    QTest::newRow("blank field") << "a\tb\n\t2\n"
                                 << ": line 2, column 'a': '' is not a number";
    QTest::newRow("header") << "a\t\tc\n"
                            << ": line 1: an empty column name in the header";
}

void TestTrainingLog::malformedFilesAreNamed() {
    QFETCH(QString, content);
    QFETCH(QString, message);
    const std::string path = m_dir.filePath(QString("bad-%1.tsv").arg(QTest::currentDataTag())).toStdString();
    attnlab::testing::writeFile(path, content.toStdString());
    try {
        attnlab::readTrainingLog(path);
        QFAIL("no exception");
    } catch (const attnlab::InputError& e) {
        QCOMPARE(QString(e.what()), QString::fromStdString(path) + message);
    }
}

void TestTrainingLog::missingFileIsNamed() {
    const std::string path = m_dir.filePath("missing.tsv").toStdString();
    try {
        attnlab::readTrainingLog(path);
        QFAIL("no exception");
    } catch (const attnlab::InputError& e) {
        QCOMPARE(std::string(e.what()), path + ": cannot be opened");
    }
}

QTEST_GUILESS_MAIN(TestTrainingLog)
#include "tst_training_log.moc"
