// The attnlab executable as a user runs it from a shell: the bundled model without --model, the
// headless --export (PNG, PDF) and --screenshot, and command-line errors that name the problem and
// write nothing; a stranger's lesson gets its model only with --allow-download. Runs offscreen
// (QT_QPA_PLATFORM=offscreen from CTest).
#include "fake_hub_server.h"

#include <QDir>
#include <QtTest/QtTest>

#include <QImage>
#include <QProcess>
#include <QTemporaryDir>

namespace {
struct Run {
    int code = -1;
    QString err;
};

// `extra`: variables set for this run (the stand-in hub's HF_ENDPOINT, a cache of its own).
Run app(const QStringList& args, bool display = true, const QMap<QString, QString>& extra = {}) {
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.remove("ATTNLAB_MODEL_DIR");  // the bundled model, found as a user's would be
    for (auto it = extra.begin(); it != extra.end(); ++it) env.insert(it.key(), it.value());
    if (display) {
        env.insert("QT_QPA_PLATFORM", "offscreen");
    } else {  // a machine without a display: over SSH, in a container
        for (const char* v : {"QT_QPA_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY"}) env.remove(v);
    }
    p.setProcessEnvironment(env);
    p.start(ATTNLAB_APP_PATH, args);
    if (!p.waitForStarted() || !p.waitForFinished(180000)) return {};
    Run r;
    r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.err = QString::fromUtf8(p.readAllStandardError());
    return r;
}

const QString kSentence = QStringLiteral("Zwei Kinder spielen im Sand am Strand.");
}  // namespace

class TestApp : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void exportPngAndPdfWithTheBundledModel();
    void screenshotOfTheWindow();
    void badOptionsAreNamedAndWriteNothing();
    void headsTabPages();
    void noDisplaySaysSoAndHeadlessStillWorks();
    void firstScreenTranslatesTheFirstExample();
    void bundledLessonHeadless();
    void aStrangersLessonGetsItsModelOnlyWhenAllowed();

private:
    QTemporaryDir m_dir;
};

void TestApp::exportPngAndPdfWithTheBundledModel() {
    const QString png = m_dir.filePath("cross.png"), pdf = m_dir.filePath("cross.pdf");
    auto r = app({"--text", kSentence, "--view", "cross", "--layer", "2", "--head", "3", "--export", png});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QImage image(png);
    QVERIFY(!image.isNull());
    QCOMPARE(image.size(), QSize(2400, 1800));  // 1200 x 900 at scale 2, for slides
    // Not a blank page: a heatmap has many distinct colours.
    QSet<QRgb> colours;
    for (int y = 0; y < image.height(); y += 7)
        for (int x = 0; x < image.width(); x += 7) colours.insert(image.pixel(x, y));
    QVERIFY2(colours.size() > 50, qPrintable(QString::number(colours.size())));

    r = app({"--text", kSentence, "--view", "encoder", "--export", pdf});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QFile f(pdf);
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QByteArray bytes = f.readAll();
    QVERIFY(bytes.startsWith("%PDF-"));
    QVERIFY(bytes.trimmed().endsWith("%%EOF"));
    QVERIFY(bytes.size() > 5000);
}

void TestApp::firstScreenTranslatesTheFirstExample() {
    // Without --text the app translates the first example: the attention view has a map to export
    // (an untranslated view has none: "translate a sentence first"). --text-size works headless;
    // at 20 pt the window grows to hold its text.
    const QString png = m_dir.filePath("first.png"), shot = m_dir.filePath("large.png");
    auto r = app({"--export", png});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY(!QImage(png).isNull());
    r = app({"--text-size", "20", "--screenshot", shot});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY(QImage(shot).height() >= 900);
}

void TestApp::bundledLessonHeadless() {
    // attnlab --lesson FILE --lesson-step N --screenshot F: the bundled tour's weight step renders;
    // a step beyond the end is named, and nothing is written.
    const QString lesson = ATTNLAB_SOURCE_DIR "/resources/lessons/transformer-tour.json";
    const QString shot = m_dir.filePath("lesson.png");
    auto r = app({"--lesson", lesson, "--lesson-step", "7", "--screenshot", shot});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QImage image(shot);
    QVERIFY(!image.isNull() && image.width() > 800);
    const QString never = m_dir.filePath("never-lesson.png");
    r = app({"--lesson", lesson, "--lesson-step", "99", "--screenshot", never});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("transformer-tour.json: step 99 is beyond the end (the lesson has 15 steps)"),
             qPrintable(r.err));
    QVERIFY(!QFile::exists(never));
    // --screenshot-steps DIR: one run renders every step from --lesson-step on, as PageDown reaches
    // it (scripts/make_screenshots.sh takes each bundled lesson so); the steps differ.
    const QString steps = m_dir.filePath("steps");
    r = app({"--lesson", lesson, "--lesson-step", "13", "--screenshot-steps", steps});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QCOMPARE(QDir(steps).entryList({"*.png"}, QDir::Files, QDir::Name),
             QStringList({"step-13.png", "step-14.png", "step-15.png"}));
    const QImage beams(steps + "/step-13.png"), what_if(steps + "/step-14.png");
    QVERIFY(!beams.isNull() && beams.size() == what_if.size() && beams != what_if);
    r = app({"--screenshot-steps", steps});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("--screenshot-steps goes with --lesson"), qPrintable(r.err));
}

// A lesson naming a Hugging Face model the cache lacks (issue 50): headless, nobody can be asked, so
// the run refuses, naming --allow-download, before any request; with the flag the model is got from the
// stand-in hub (the bundled model served as a repository) and the step renders.
void TestApp::aStrangersLessonGetsItsModelOnlyWhenAllowed() {
    QTemporaryDir dir;
    attnlab::testing::FakeHub hub(dir.filePath("hub"));
    attnlab::testing::Files files;
    const QDir bundled(ATTNLAB_SOURCE_DIR "/resources/models/multi30k-de-en");
    for (const char* f : {"config.json", "model.safetensors", "tokenizer.model", "examples.tsv"}) {
        QFile in(bundled.filePath(f));
        QVERIFY(in.open(QIODevice::ReadOnly));
        files[f] = in.readAll().toStdString();
    }
    hub.addRepo("stranger-org/evil-model", files);
    hub.start();
    const QString lesson = dir.filePath("stranger.json");
    QFile out(lesson);
    QVERIFY(out.open(QIODevice::WriteOnly));
    out.write(R"({"format": "attnlab-lesson", "version": 1, "model": "stranger-org/evil-model",
      "steps": [{"caption": "Got.", "view": {"tab": "positional"}}]})");
    out.close();
    const QMap<QString, QString> env = {{"HF_ENDPOINT", QString::fromStdString(hub.endpoint())},
                                        {"HF_HUB_CACHE", dir.filePath("cache")},
                                        {"HF_HUB_OFFLINE", "0"},
                                        {"HF_TOKEN", ""}};
    const QString shot = dir.filePath("lesson.png");
    auto r = app({"--lesson", lesson, "--screenshot", shot}, true, env);
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("stranger-org/evil-model is not in the cache") && r.err.contains("--allow-download"),
             qPrintable(r.err));
    QVERIFY(!QFile::exists(shot));
    QCOMPARE(hub.requests().size(), size_t(0));  // refused before a single request
    QVERIFY(!QDir(dir.filePath("cache/models--stranger-org--evil-model")).exists());
    r = app({"--lesson", lesson, "--screenshot", shot, "--allow-download"}, true, env);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY(!QImage(shot).isNull());
    QVERIFY(!QDir(dir.filePath("cache/models--stranger-org--evil-model/snapshots"))
                 .entryList(QDir::Dirs | QDir::NoDotAndDotDot)
                 .isEmpty());
}

void TestApp::screenshotOfTheWindow() {
    const QString png = m_dir.filePath("window.png");
    auto r = app({"--text", kSentence, "--tab", "positional", "--screenshot", png});
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QImage image(png);
    QVERIFY(!image.isNull());
    QVERIFY2(image.width() >= 1400 && image.height() >= 900,
             qPrintable(QString("%1x%2").arg(image.width()).arg(image.height())));
}

void TestApp::headsTabPages() {
    // Each page of the Heads tab, driven from the command line as the README's screenshots are.
    for (const QStringList& args : {QStringList{"--heads", "statistics"}, QStringList{"--heads", "alignment"},
                                    QStringList{"--heads", "ablation", "--ablate", "cross:2:0,cross:2:1"}}) {
        const QString png = m_dir.filePath(args[1] + ".png");
        auto r = app(QStringList{"--text", kSentence, "--screenshot", png} + args);
        QVERIFY2(r.code == 0, qPrintable(args.join(' ') + ": " + r.err));
        QVERIFY(!QImage(png).isNull());
    }
}

void TestApp::badOptionsAreNamedAndWriteNothing() {
    const QString out = m_dir.filePath("never.png");
    struct Case {
        QStringList args;
        QString message;
    };
    const QList<Case> cases = {
        {{"--model", m_dir.filePath("no-such-model"), "--text", kSentence},
         "no-such-model: no such folder or file here (a path: not looked up on the Hugging Face hub)"},
        {{"--text", kSentence, "--view", "sideways"}, "--view: 'sideways' is not one of encoder, decoder, cross"},
        {{"--text", kSentence, "--tab", "nope"},
         "--tab 'nope' is not one of attention, saliency, decoding, lens, weight, inputs, pairs, heads, training, "
         "positional, model"},
        {{"--text", kSentence, "--method", "saliency"},
         "--method 'saliency' is not one of weights, value-norm, rollout, alti+, value-zeroing"},
        {{"--text", kSentence, "--layer", "x"}, "--layer 'x' is not a layer number"},
        {{"--text", kSentence, "--layer", "3"}, "--layer 3 is out of range: the model has 3 layers (0-2)"},
        {{"--text", kSentence, "--head", "9"}, "--head 9 is out of range: the model has 8 heads"},
        {{"--text", kSentence, "--text-size", "40"}, "--text-size '40' is not a size in points from 8 to 28"},
        {{"--text", kSentence, "--text-size", "big"}, "--text-size 'big' is not a size in points"},
        {{"--text", "   "}, "empty"},
        {{"--text", kSentence, "--cell", "2"}, "--cell '2' is not row,column"},
        {{"--text", kSentence, "--step", "-1"}, "--step '-1' is not a step number"},
        {{"--text", kSentence, "--cell", "0,99", "--tab", "weight"}, "key 99 is out of range: there are"},
        {{"--text", kSentence, "--cell", "0,0", "--head", "8"}, "--cell needs one head"},
        {{"--text", kSentence, "--heads", "lab"}, "--heads 'lab' is not one of statistics, ablation, alignment"},
        {{"--text", kSentence, "--heads", "ablation", "--ablate", "cross:1"},
         "--ablate: 'cross:1' is not kind:layer:head"},
        {{"--text", kSentence, "--ablate", "cross:1:1"}, "--ablate goes with --heads ablation"},
        {{"--text", kSentence, "--heads", "ablation", "--ablate", "cross:7:0"},
         "--ablate cross:7:0: the model has no such head"},
    };
    for (const Case& c : cases) {
        auto r = app(c.args + QStringList{"--export", out});
        QVERIFY2(r.code == 2, qPrintable(c.args.join(' ') + " -> " + QString::number(r.code) + ": " + r.err));
        QVERIFY2(r.err.contains(c.message), qPrintable(c.args.join(' ') + ": " + r.err));
        QVERIFY(!QFile::exists(out));
    }
    auto r = app({"--text", kSentence, "--export", m_dir.filePath("no/such/dir/x.png")});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(m_dir.filePath("no/such/dir/x.png") + ": cannot be written: the folder " +
                            m_dir.filePath("no/such/dir") + " does not exist"),
             qPrintable(r.err));
    // A screenshot onto a device that refuses it is an error, not success.
    r = app({"--text", kSentence, "--screenshot", "/dev/full"});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("/dev/full: write failed: No space left on device"), qPrintable(r.err));
    // An animation needs a view that has one, and a model with a history for the Training tab.
    const QString gif = m_dir.filePath("never.gif");
    r = app({"--text", kSentence, "--export-animation", gif}, /*display=*/false);
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("this tab has no animation to export"), qPrintable(r.err));
    // The bundled de-en model carries a history: a copy of it without one.
    const QString bare = m_dir.filePath("no-history");
    QDir().mkpath(bare);
    const QDir bundled(ATTNLAB_SOURCE_DIR "/resources/models/multi30k-de-en");
    for (const QString& f : bundled.entryList(QDir::Files))
        if (f != "attention_history.bin") QVERIFY(QFile::copy(bundled.filePath(f), bare + "/" + f));
    r = app({"--model", bare, "--text", kSentence, "--tab", "training", "--export-animation", gif},
            /*display=*/false);
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains("this model carries no attention history"), qPrintable(r.err));
    QVERIFY(!QFile::exists(gif));
}

void TestApp::noDisplaySaysSoAndHeadlessStillWorks() {
    // The window: one clear line and status 3, not Qt's abort (134).
    auto r = app({}, /*display=*/false);
    QCOMPARE(r.code, 3);
    QVERIFY2(
        r.err.contains("no display to open a window on") && r.err.contains("xvfb-run") && r.err.contains("--export"),
        qPrintable(r.err));
    QCOMPARE(r.err.count('\n'), 1);
    // A figure needs no display.
    const QString png = m_dir.filePath("nodisplay.png");
    r = app({"--text", kSentence, "--export", png}, /*display=*/false);
    QVERIFY2(r.code == 0, qPrintable(r.err));
    QVERIFY(!QImage(png).isNull());
    r = app({"--help"}, /*display=*/false);
    QCOMPARE(r.code, 0);
}

QTEST_GUILESS_MAIN(TestApp)
#include "tst_app.moc"
