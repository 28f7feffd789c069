// The thread policy (attnlab/device.h): threads chosen by the multiply-adds of a decoding step, checked
// against the table's rule for the bundled model's shape and OPUS-MT base shape; and waiting threads that
// sleep in the programs users run (attnlab-cli, attnlab): libgomp, which reads OMP_WAIT_POLICY once before
// main(), prints what it read with OMP_DISPLAY_ENV=verbose (libgomp/env.c), so the test reads it there.
#include "fixtures.h"

#include <attnlab/config.h>
#include <attnlab/device.h>
#include <attnlab/errors.h>
#include <attnlab/package.h>
#include <attnlab/translator.h>
#include <attnlab/version.h>

#include <QtTest/QtTest>

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <thread>

namespace {
int cores() { return int(std::max(1u, std::thread::hardware_concurrency())); }

// The table's rule (device.h): one thread below secondThreadFrom of a step, else one per multiplyAddsPerThread
// of it, at least 2, at most every core.
int ruleFor(const attnlab::ModelConfig& m, int64_t rows, const std::string& type) {
    const double work = attnlab::stepMultiplyAdds(m, rows);
    if (work < attnlab::secondThreadFrom(type) || cores() < 2) return 1;
    return std::clamp(int(std::floor(work / attnlab::multiplyAddsPerThread(type))), 2, cores());
}

// OPUS-MT base (Helsinki-NLP/opus-mt-*: 6 + 6 layers, d_model 512, 8 heads, FFN 2048, ~55k vocabulary).
attnlab::ModelConfig opusBase() {
    attnlab::ModelConfig m;
    m.n_src_vocab = m.n_trg_vocab = 54688;
    m.d_model = m.d_word_vec = 512;
    m.d_inner = 2048;
    m.n_layers = 6;
    m.n_head = 8;
    m.d_k = m.d_v = 64;
    return m;
}

// What libgomp read at the start of `program` run with `args` (and `env` added), from its
// OMP_DISPLAY_ENV=verbose report on stderr: "OMP_WAIT_POLICY = 'PASSIVE'" and "GOMP_SPINCOUNT = '0'".
QString openMpReport(const QString& program, const QStringList& args, const QMap<QString, QString>& env) {
    auto e = QProcessEnvironment::systemEnvironment();
    e.remove("OMP_WAIT_POLICY");
    e.remove("GOMP_SPINCOUNT");
    e.insert("OMP_DISPLAY_ENV", "verbose");
    e.insert("QT_QPA_PLATFORM", "offscreen");
    for (auto it = env.begin(); it != env.end(); ++it) e.insert(it.key(), it.value());
    const auto run = attnlab::testing::runProgram(program, args, {}, e);
    if (run.code != 0) qWarning().noquote() << program << "exited with" << run.code << run.err.right(2000);
    return run.err;
}

// The launched programs beside attnlab-cli in the build's bin folder.
QString besideCli(const QString& name) { return QFileInfo(ATTNLAB_CLI_PATH).dir().filePath(name); }
}  // namespace

class TestThreads : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // A step's multiply-adds follow the model's own weights: the decoder's parameters (counted from its
    // tensors by the engine) less cross-attention's keys and values (computed once per sentence, not per
    // step), plus the output projection; biases and layer norms are in the count but multiply nothing,
    // under 1 % of it.
    void stepWorkIsTheDecodersWeights() {
        const attnlab::Translator t(attnlab::defaultModelDir(), {});
        const auto& m = t.info().config.model;
        const auto& p = t.info().parameters;
        const double cross_kv = double(m.decoderLayers() * m.d_model * m.n_head * (m.d_k + m.d_v));
        const double expected = double(p.decoder_layers) - cross_kv + double(m.n_trg_vocab * m.d_model);
        const double got = attnlab::stepMultiplyAdds(m, 1);
        QVERIFY2(std::abs(got - expected) < 0.01 * expected,
                 qPrintable(QString("%1 multiply-adds a row, the weights say %2").arg(got).arg(expected)));
        QCOMPARE(attnlab::stepMultiplyAdds(m, 5), 5 * got);  // per row
    }

    // The bundled model's sentence and its batches of 32 at beam 5 (768 M a step: two threads were 1.57-1.82x
    // slower, docs/benchmarks.md) stay on one thread in every compute type.
    void bundledSentenceGetsOneThread() {
        const auto m = attnlab::readPackageConfig(attnlab::defaultModelDir()).model;
        for (const char* type : {"float32", "int8", "bfloat16"}) {
            for (const int64_t rows : {5, 32 * 5}) {
                const int threads = attnlab::threadsFor(0, m, rows, type);
                QCOMPARE(threads, ruleFor(m, rows, type));
                QCOMPARE(threads, 1);
            }
        }
    }

    // OPUS-MT base's typed sentence (250 M a step) and its batch of 4 (1 G), where two threads were 1.11-1.71x
    // slower idle, stay on one thread; the second thread comes only with the step's size.
    void opusBaseSentenceGetsOneThread() {
        const auto m = opusBase();
        for (const char* type : {"float32", "int8", "bfloat16"}) {
            for (const int64_t rows : {5, 4 * 5}) QCOMPARE(attnlab::threadsFor(0, m, rows, type), 1);
            const double second = attnlab::secondThreadFrom(type);
            int64_t rows = 1;
            while (attnlab::stepMultiplyAdds(m, rows) < second) ++rows;
            QCOMPARE(attnlab::threadsFor(0, m, rows - 1, type), 1);
            QCOMPARE(attnlab::threadsFor(0, m, rows, type), ruleFor(m, rows, type));
            QVERIFY(attnlab::threadsFor(0, m, rows, type) >= std::min(2, cores()));
        }
    }

    void opusBaseBatchGetsEveryCore() {
        const auto m = opusBase();
        const int64_t rows = 32 * 5;  // a batch of 32, beam 5
        for (const char* type : {"float32", "int8", "bfloat16"}) {
            QCOMPARE(attnlab::threadsFor(0, m, rows, type), ruleFor(m, rows, type));
            // every core of any machine up to 16
            QVERIFY(attnlab::stepMultiplyAdds(m, rows) >= 16 * attnlab::multiplyAddsPerThread(type));
            if (cores() <= 16) QCOMPARE(attnlab::threadsFor(0, m, rows, type), cores());
        }
    }

    void neverMoreThanTheCores() {
        auto m = opusBase();
        m.d_model = m.d_word_vec = 4096;
        m.n_trg_vocab = 256000;
        QCOMPARE(attnlab::threadsFor(0, m, 1024, "float32"), cores());
        QCOMPARE(attnlab::threadsFor(0, m, 0, "int8"), ruleFor(m, 1, "int8"));  // no rows: counted as one
    }

    void requestedWins() {
        const auto m = attnlab::readPackageConfig(attnlab::defaultModelDir()).model;
        QCOMPARE(attnlab::threadsFor(2, m, 5, "float32"), 2);
        QCOMPARE(attnlab::threadsFor(1, opusBase(), 160, "float32"), 1);
        const QByteArray attnlab_threads = qgetenv("ATTNLAB_THREADS"), omp_threads = qgetenv("OMP_NUM_THREADS");
        const auto restore = qScopeGuard([&] {  // as the run had them, also when a check fails
            auto put = [](const char* name, const QByteArray& value) {
                if (value.isNull())
                    qunsetenv(name);
                else
                    qputenv(name, value);
            };
            put("ATTNLAB_THREADS", attnlab_threads);
            put("OMP_NUM_THREADS", omp_threads);
        });
        qputenv("ATTNLAB_THREADS", "3");
        qputenv("OMP_NUM_THREADS", "5");
        QCOMPARE(attnlab::requestedThreads(2), 2);  // --threads
        QCOMPARE(attnlab::requestedThreads(0), 3);  // then $ATTNLAB_THREADS
        qunsetenv("ATTNLAB_THREADS");
        QCOMPARE(attnlab::requestedThreads(0), 5);  // then $OMP_NUM_THREADS
        qunsetenv("OMP_NUM_THREADS");
        QCOMPARE(attnlab::requestedThreads(0), 0);  // then the policy
    }

    // A call runs on the threads of the rows its steps carry, read inside the call (its step callback): a
    // batch's sentences x the beam; with the reference's search (reference_beam), which takes one
    // sentence at a time, the beam alone (it was counted as the batch: two threads for steps of 6 rows).
    void translateRunsOnTheThreadsOfItsSteps() {
        if (cores() < 2) QSKIP("one core: every call runs on one thread");
        if (attnlab::requestedThreads(0) != 0) QSKIP("ATTNLAB_THREADS or OMP_NUM_THREADS is set: it wins");
        const attnlab::Translator t(attnlab::defaultModelDir(), {});
        const auto& m = t.info().config.model;
        const std::string type = t.info().compute_type;
        attnlab::DecodingOptions o;
        // The smallest batch and beam that take the bundled model's steps to two threads (a batch of 128 at
        // beam 16 at most: ~10 G a step, seconds for 4 steps on a busy machine).
        int64_t batch = 32;
        o.beam_size = 1;
        while (attnlab::threadsFor(0, m, batch * o.beam_size, type) < 2 && batch <= 128) {
            if (++o.beam_size > 16) o.beam_size = 1, batch *= 2;
        }
        QVERIFY2(batch <= 128, "the bundled model never gets a second thread within 128 sentences x beam 16");
        o.max_batch_size = int(batch);
        o.max_length = 4;
        o.max_length_ratio = 0;
        o.return_attention = false;
        const std::vector<std::string> sentences(size_t(batch), "Ein Hund läuft über die Wiese.");
        // the threads seen at the call's first step (the call is cancelled there: one step of 128 sentences is
        // what this needs, and the reference's search would otherwise decode all of them one after another)
        auto threadsSeen = [&](const attnlab::DecodingOptions& options) {
            int seen = 0;
            try {
                t.translateBatch(sentences, options, [&](const attnlab::StepProgress&) {
                    seen = at::get_num_threads();
                    return false;
                });
            } catch (const attnlab::CancelledError&) {
            }
            return seen;
        };
        QCOMPARE(threadsSeen(o), attnlab::threadsFor(0, m, batch * o.beam_size, type));
        o.reference_beam = true;
        QCOMPARE(attnlab::threadsFor(0, m, o.beam_size, type), 1);
        QCOMPARE(threadsSeen(o), 1);
    }

    // The launcher (app/launcher) runs NAME.real beside the file it is: called through a link from another
    // folder, and started through the dynamic loader, whose /proc/self/exe is the loader (it failed there:
    // "cannot run .../ld-linux-x86-64.so.2.real"). Copied without it, it names the file it misses and says
    // the two go together, with a shell's status for a program not found.
    void launcherFindsItsProgram() {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString version = QString("attnlab-cli ") + attnlab::version();
        const QString linked = dir.filePath("al");
        QVERIFY(QFile::link(ATTNLAB_CLI_PATH, linked));
        auto run = attnlab::testing::runProgram(linked, {"--version"});
        QVERIFY2(run.code == 0 && run.out.startsWith(version), qPrintable(run.out + run.err));
        const QString loader = "/lib64/ld-linux-x86-64.so.2";  // the x86-64 ABI's path of the loader
        if (QFileInfo(loader).isExecutable()) {
            run = attnlab::testing::runProgram(loader, {ATTNLAB_CLI_PATH, "--version"});
            QVERIFY2(run.code == 0 && run.out.startsWith(version), qPrintable(run.out + run.err));
        }
        const QString alone = dir.filePath("attnlab-cli");
        QVERIFY(QFile::copy(ATTNLAB_CLI_PATH, alone));
        run = attnlab::testing::runProgram(alone, {"--version"});
        QCOMPARE(run.code, 127);
        QVERIFY2(run.err.contains("attnlab-cli.real: No such file or directory") &&
                     run.err.contains("copy or install the two together"),
                 qPrintable(run.err));
        if (!QFileInfo(loader).isExecutable()) QSKIP("no /lib64/ld-linux-x86-64.so.2: the loader's case not run");
    }

    // Without a policy of the user's, the programs' OpenMP threads sleep while they wait (libgomp's spin
    // count 0); without the launcher libgomp reports its default, spinning 300000 times (and still prints
    // "PASSIVE", which is why the spin count is what is asserted).
    void cliAndAppThreadsSleep() {
        const QString app = besideCli("attnlab");
        QStringList programs{ATTNLAB_CLI_PATH};
        if (QFileInfo(app).isExecutable()) programs << app;
        for (const auto& program : programs) {
            const QString report = openMpReport(program, {"--version"}, {});
            QVERIFY2(report.contains("OMP_WAIT_POLICY = 'PASSIVE'"), qPrintable(program + ": " + report));
            QVERIFY2(report.contains("GOMP_SPINCOUNT = '0'"), qPrintable(program + ": " + report));
        }
        if (programs.size() == 1) QSKIP("attnlab (the desktop app) is not built here: only attnlab-cli checked");
    }

    void usersPolicyIsKept() {
        const QString app = besideCli("attnlab");
        QStringList programs{ATTNLAB_CLI_PATH};
        if (QFileInfo(app).isExecutable()) programs << app;
        for (const auto& program : programs) {
            const QString report = openMpReport(program, {"--version"}, {{"OMP_WAIT_POLICY", "active"}});
            QVERIFY2(report.contains("OMP_WAIT_POLICY = 'ACTIVE'"), qPrintable(program + ": " + report));
            QVERIFY2(!report.contains("GOMP_SPINCOUNT = '0'"), qPrintable(program + ": " + report));
        }
    }
};

QTEST_GUILESS_MAIN(TestThreads)
#include "tst_threads.moc"
