// Training survives being killed: attnlab-cli train on a tiny model and corpus, SIGKILLed at random
// moments (checkpoints are written after every step, so many kills land while one is being
// written), resumed each time. Every resume must succeed, the checkpoint's step never goes back
// (at most the work since the last checkpoint is lost), no half-written package or staging
// directory is left, the logs hold each epoch and step once, and the finished run's parameters
// equal those of an uninterrupted run bit for bit.
//   ATTNLAB_KILLS (default 12, as CI runs it), ATTNLAB_KILL_SEED (default 1)
#include "decoding/engine.h"
#include "fixtures.h"

#include <attnlab/run_layout.h>

#include <QtTest/QtTest>

#include <nlohmann/json.hpp>

#include <csignal>
#include <random>

namespace fs = std::filesystem;

class TestKill : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void killedAndResumedEqualsUninterrupted();

private:
    QStringList trainArgs(const QString& out) const;
    QTemporaryDir m_dir;
    QString m_data, m_tok;
};

void TestKill::initTestCase() {
    const std::string dir = m_dir.path().toStdString();
    m_tok = QString::fromStdString(attnlab::testing::trainTokenizer(dir, 400));
    m_data = m_dir.path() + "/data";
    QDir().mkpath(m_data);
    const auto de = attnlab::testing::corpusLines(140, 3), en = attnlab::testing::corpusLines(140, 4);
    auto write = [&](const QString& name, const std::vector<std::string>& lines, int from, int to) {
        std::string text;
        for (int i = from; i < to; ++i) text += lines[i] + "\n";
        attnlab::testing::writeFile((m_data + "/" + name).toStdString(), text);
    };
    write("train.de", de, 0, 120);
    write("train.en", en, 0, 120);
    write("val.de", de, 120, 140);
    write("val.en", en, 120, 140);
}

QStringList TestKill::trainArgs(const QString& out) const {
    // Longer runs for more kills (the run ends when a resumed session outlives its kill).
    const int kills = qEnvironmentVariableIntValue("ATTNLAB_KILLS");
    const QString epochs = QString::number(12 * std::max(1, kills / 8));
    return {"train",   "--data",
            m_data,    "--output",
            out,       "--tokenizer",
            m_tok,     "--epochs",
            epochs,    "--layers",
            "1",       "--heads",
            "2",       "--d-model",
            "32",      "--d-inner",
            "64",      "--d-k",
            "16",      "--d-v",
            "16",      "--batch-tokens",
            "300",     "--threads",
            "1",       "--log-every",
            "3",       "--warmup",
            "10",      "--valid-bleu-sentences",
            "5",       "--save-every-minutes",
            "0.000001"};
}

namespace {
int checkpointStep(const QString& run) {
    const std::string state = (run + "/checkpoints/latest/" + attnlab::run_layout::kTrainerState).toStdString();
    if (!fs::exists(state)) return 0;
    return nlohmann::json::parse(attnlab::testing::readFile(state)).at("step").get<int>();
}

QStringList stagingLeftovers(const QString& run) {
    // QDirIterator, not std::filesystem::recursive_directory_iterator, which pip's LibTorch exports
    // a copy of (util::removeTree's comment). A folder not made yet (killed before) yields nothing.
    QStringList found;
    QDirIterator it(run + "/checkpoints", QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden,
                    QDirIterator::Subdirectories);
    while (it.hasNext()) {
        it.next();
        const QString name = it.fileName();
        if (name.contains(".attnlab-staging-") || name.endsWith(".attnlab-lock") ||
            (name.contains(".attnlab-") && name.endsWith(".tmp")))
            found << it.filePath().mid(run.size() + 1);
    }
    return found;
}
}  // namespace

void TestKill::killedAndResumedEqualsUninterrupted() {
    const QString straight = m_dir.path() + "/straight", killed = m_dir.path() + "/killed";
    QProcess p;
    QElapsedTimer clock;
    clock.start();
    p.start(ATTNLAB_CLI_PATH, trainArgs(straight));
    QVERIFY(p.waitForFinished(300000));
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
    const int duration_ms = int(clock.elapsed());

    std::mt19937 rng(
        qEnvironmentVariableIntValue("ATTNLAB_KILL_SEED") ? qEnvironmentVariableIntValue("ATTNLAB_KILL_SEED") : 1);
    const int kills =
        qEnvironmentVariableIntValue("ATTNLAB_KILLS") > 0 ? qEnvironmentVariableIntValue("ATTNLAB_KILLS") : 12;
    int done = 0, killed_runs = 0, mid_write = 0, last_step = 0, runs = 0;
    while (!done) {
        QProcess t;
        QStringList args = trainArgs(killed);
        // As a user would: --resume once a checkpoint exists (a run killed before its first one
        // starts again from scratch, and its partial logs are reset).
        if (QFile::exists(killed + "/checkpoints/latest/" + attnlab::run_layout::kTrainerState)) args << "--resume";
        ++runs;
        t.start(ATTNLAB_CLI_PATH, args);
        QVERIFY(t.waitForStarted());
        if (killed_runs < kills) {
            // 0.1-2 s: start-up (~0.6 s), training steps, validation, checkpoint writes.
            const int delay = 100 + int(rng() % 1900);
            if (!t.waitForFinished(delay)) {
                ::kill(pid_t(t.processId()), SIGKILL);
                ++killed_runs;
            }
        }
        if (t.state() != QProcess::NotRunning) QVERIFY(t.waitForFinished(300000));
        const QString err = QString::fromUtf8(t.readAllStandardError());
        if (t.exitStatus() == QProcess::NormalExit) {
            QVERIFY2(t.exitCode() == 0, qPrintable("a resume failed: " + err));
            done = 1;
        }
        mid_write += !stagingLeftovers(killed).isEmpty();
        int step = 0;
        try {
            step = checkpointStep(killed);
        } catch (const std::exception& e) {
            QFAIL(qPrintable(QString("after run %1 the checkpoint state is unreadable: %2").arg(runs).arg(e.what())));
        }
        QVERIFY2(step >= last_step,
                 qPrintable(QString("the checkpoint went back from step %1 to %2").arg(last_step).arg(step)));
        last_step = step;
        QVERIFY2(runs < kills + 5, "training never finished");
    }
    qInfo(
        "uninterrupted run %d ms; %d runs, %d SIGKILLs, %d of them left a checkpoint half-written (cleaned up by the "
        "next save)",
        duration_ms, runs, killed_runs, mid_write);
    const QStringList left = stagingLeftovers(killed);
    QVERIFY2(left.isEmpty(), qPrintable("left behind: " + left.join(", ")));

    QVERIFY2(QFile::exists(killed + "/model/model.safetensors"), "the final package is missing");
    attnlab::decoding::Engine a((straight + "/model").toStdString(), {"cpu"}),
        b((killed + "/model").toStdString(), {"cpu"});
    auto pa = a.model()->named_parameters(), pb = b.model()->named_parameters();
    for (const auto& x : pa) QVERIFY2(torch::equal(x.value(), pb[x.key()]), x.key().c_str());
    // Each epoch once, as in the uninterrupted run; each logged step once, in order (rows a killed
    // session wrote after its last checkpoint were dropped on resume).
    auto firstColumn = [](const QString& file) {
        QList<double> out;
        const auto text = QString::fromStdString(attnlab::testing::readFile(file.toStdString()));
        for (const QString& line : text.split('\n', Qt::SkipEmptyParts).mid(1))
            out << line.section('\t', 0, 0).toDouble();
        return out;
    };
    QCOMPARE(firstColumn(killed + "/log.tsv"), firstColumn(straight + "/log.tsv"));
    const auto steps = firstColumn(killed + "/steps.tsv");
    for (int i = 1; i < steps.size(); ++i) QVERIFY2(steps[i] > steps[i - 1], "steps.tsv repeats or reorders a step");
}

QTEST_GUILESS_MAIN(TestKill)
#include "tst_kill.moc"
