// The real MainWindow, offscreen, driven by random actions from a seeded generator: typing random
// text (empty, 300 characters, emoji, right-to-left scripts, control characters, invalid UTF-8),
// Enter while a translation runs, typing bursts translated as they are typed (live), beam/alpha/max
// length at their limits, kind/layer/head keys,
// tabs, grid clicks, valid/missing/corrupt packages, exports to valid and unwritable paths.
// After every action: the GUI thread never blocked for 5 s, and a consistent window (the maps shown belong to the last
// sentence translated; an error is shown where one happened). At the end resident memory has not
// grown by more than 10 % since warm-up.
//   ATTNLAB_SOAK_ACTIONS (default 100, as CI runs it), ATTNLAB_SOAK_SEED (default 1)
#include "document/translation_controller.h"
#include "plots/attention_grid.h"
#include "plots/attention_view.h"
#include "shell/main_window.h"
#include "shell/translate_panel.h"
#include "shell/view_registry.h"
#include "views/attention_explorer.h"

#include <QtTest/QtTest>

#include <QDoubleSpinBox>
#include <QLineEdit>
#include <QSpinBox>

#include <fstream>
#include <random>

using namespace attnlab::ui;

namespace {
long residentKb() {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line))
        if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
    return -1;
}
}  // namespace

class TestSoak : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void randomActions();

private:
    QString randomText();
    void act(int what);
    bool waitIdle();
    void checkConsistent(int action);

    std::mt19937 m_rng;
    std::unique_ptr<TranslationController> m_controller;
    std::unique_ptr<MainWindow> m_window;
    QTemporaryDir m_dir;
    QString m_good, m_corrupt;
    QString m_submitted;  // the last sentence sent with Enter
    bool m_expect_result = false;
    int m_translations = 0, m_errors = 0, m_exports_refused = 0;
    qint64 m_longest_round_ms = 0;
};

void TestSoak::initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    m_good = qEnvironmentVariable("ATTNLAB_TEST_PACKAGE");
    QVERIFY2(!m_good.isEmpty(), "ATTNLAB_TEST_PACKAGE must name the fixture package (set by CTest)");
    m_corrupt = m_dir.filePath("corrupt");
    QDir().mkpath(m_corrupt);
    for (const QString f : {"config.json", "model.safetensors", "tokenizer.model"})
        QFile::copy(m_good + "/" + f, m_corrupt + "/" + f);
    QFile w(m_corrupt + "/model.safetensors");
    QVERIFY(w.open(QIODevice::ReadWrite));
    w.resize(w.size() / 2);
    w.close();
    m_rng.seed(qEnvironmentVariableIntValue("ATTNLAB_SOAK_SEED") ? qEnvironmentVariableIntValue("ATTNLAB_SOAK_SEED")
                                                                 : 1);
    m_controller = std::make_unique<TranslationController>();
    m_window = std::make_unique<MainWindow>(m_controller.get(), /*error_dialogs=*/false);
    m_window->resize(1200, 800);
    m_window->show();
    m_window->context()->loadModel(m_good);
    QVERIFY(waitIdle());
    QVERIFY(m_controller->modelInfo());
}

QString TestSoak::randomText() {
    switch (m_rng() % 8) {
    case 0: return QString();
    case 1: return QString(300, QChar(char16_t(u'a' + m_rng() % 26)));
    case 2: return QString::fromUtf8("Ein Hund 🐕 läuft 😀 über die Wiese.");
    case 3: return QString::fromUtf8("مرحبا بالعالم שלום עולם");
    case 4: return QString::fromUtf8("Ein\tMann\x01\x02\x1b[31m geht.\r\n");
    case 5: {
        QByteArray bytes;
        for (int i = 0; i < 40; ++i) bytes.append(char(m_rng() % 256));  // invalid UTF-8, as pasted
        return QString::fromUtf8(bytes);
    }
    case 6: return QStringLiteral("   ");
    default: return QStringLiteral("Zwei Kinder spielen im Park.");
    }
}

// Waits for the worker to finish (at most 120 s: beam 32 at the longest length is real work), while
// measuring the GUI thread: the longest time one round of its event loop took. A hang is the GUI
// thread not coming back for 5 s, not a long translation (that runs on the worker).
bool TestSoak::waitIdle() {
    QElapsedTimer t, round;
    t.start();
    do {
        round.start();
        QApplication::processEvents(QEventLoop::AllEvents, 20);
        m_longest_round_ms = std::max<qint64>(m_longest_round_ms, round.elapsed());
        if (!m_controller->busy()) {
            QApplication::processEvents();  // the queued result signals
            if (!m_controller->busy()) return true;
        }
        QThread::msleep(5);
    } while (t.elapsed() < 120000);
    return false;
}

void TestSoak::act(int what) {
    TranslatePanel* panel = m_window->translatePanel();
    AttentionExplorer* ex = m_window->views()->find<AttentionExplorer>();
    switch (what) {
    case 0:
    case 1: {  // type and press Enter (twice in a row: Enter while a translation is running)
        m_submitted = randomText();
        panel->sentenceEdit()->setText(m_submitted);
        QTest::keyClick(panel->sentenceEdit(), Qt::Key_Return);
        if (what == 1) QTest::keyClick(panel->sentenceEdit(), Qt::Key_Return);
        m_submitted = panel->sentenceEdit()->text();
        m_expect_result = true;
        break;
    }
    case 2: {  // decoding options at their limits
        for (auto* box : panel->findChildren<QSpinBox*>()) box->setValue(m_rng() % 2 ? box->minimum() : box->maximum());
        for (auto* box : panel->findChildren<QDoubleSpinBox*>())
            box->setValue(m_rng() % 2 ? box->minimum() : box->maximum());
        break;
    }
    case 3: {  // kind / layer / head keys
        ex->setFocus();
        const int keys[] = {Qt::Key_1, Qt::Key_2, Qt::Key_3, Qt::Key_Left, Qt::Key_Right, Qt::Key_Up, Qt::Key_Down};
        for (int i = 0; i < 3; ++i) QTest::keyClick(ex, Qt::Key(keys[m_rng() % 7]));
        break;
    }
    case 4: m_window->views()->setCurrentIndex(int(m_rng() % 3)); break;
    case 5: {  // a click anywhere on the grid
        AttentionGrid* g = ex->grid();
        QTest::mouseClick(g, Qt::LeftButton, {},
                          QPoint(int(m_rng() % std::max(1, g->width())), int(m_rng() % std::max(1, g->height()))));
        break;
    }
    case 6: {  // open a valid, a missing or a corrupt package
        const int which = int(m_rng() % 3);
        m_window->context()->loadModel(which == 0 ? m_good : which == 1 ? m_dir.filePath("missing") : m_corrupt);
        QVERIFY(waitIdle());
        if (which != 0) QVERIFY2(!m_window->context()->lastError().isEmpty(), "a failed load shows no error");
        QVERIFY2(m_controller->modelInfo(), "a failed load lost the model");
        m_expect_result = false;
        break;
    }
    case 7: {  // a typing burst with live translation: pauses both shorter and longer than its delay
        m_window->context()->setLiveTranslation(true, /*remember=*/false);
        static const char* words[] = {"Ein", "Mann", "Hund", "rennt", "mit", "dem", "Ball", "auf", "der", "Wiese."};
        QLineEdit* edit = panel->sentenceEdit();
        edit->clear();
        const int n = 2 + int(m_rng() % 6);
        for (int w = 0; w < n; ++w) {
            QTest::keyClicks(edit, QString(w ? " " : "") + words[m_rng() % 10]);
            QTest::qWait(int(m_rng() % (2 * TranslatePanel::kLiveDelayMs)));
        }
        QTest::qWait(TranslatePanel::kLiveDelayMs + 50);  // the last pause: what is there is sent
        m_submitted = edit->text();
        m_expect_result = true;
        break;
    }
    default: {  // export to a valid or an unwritable path
        const bool good = m_rng() % 2;
        const QString path = good ? m_dir.filePath("export.png") : QStringLiteral("/nonexistent-dir/x.png");
        const auto error = m_window->exportCurrentView(path);
        if (!good) {
            QVERIFY2(error, "an unwritable export path reported success");
            ++m_exports_refused;
        }
        break;
    }
    }
}

void TestSoak::checkConsistent(int action) {
    const auto result = m_window->context()->result();
    const QString context = QString("action %1").arg(action);
    if (m_expect_result) {
        if (result) {
            QVERIFY2(QString::fromStdString(result->source_text) == m_submitted,
                     qPrintable(context + ": the maps shown are of another sentence"));
            ++m_translations;
        } else {
            QVERIFY2(!m_window->context()->lastError().isEmpty(), qPrintable(context + ": no result and no error"));
            ++m_errors;
        }
        m_expect_result = false;
    }
    if (result) {
        const auto& shown = m_window->views()->find<AttentionExplorer>()->view()->map();
        const size_t T = result->best.pieces.size(), S = result->source_pieces.size();
        const bool fits = shown.empty() || (shown.size() == T && (shown[0].size() == S || shown[0].size() == T)) ||
                          (shown.size() == S && shown[0].size() == S);
        QVERIFY2(fits, qPrintable(context + ": the map's shape is not the result's"));
    } else {
        QVERIFY2(m_window->views()->find<AttentionExplorer>()->view()->map().empty(),
                 qPrintable(context + ": a map without a result"));
    }
}

void TestSoak::randomActions() {
    const int n = qEnvironmentVariableIntValue("ATTNLAB_SOAK_ACTIONS") > 0
                      ? qEnvironmentVariableIntValue("ATTNLAB_SOAK_ACTIONS")
                      : 100;
    // The heap reaches its working size once the largest requests have come (beam 32 at the
    // longest length among them): measured, 100 actions grew +12 % from action 20 and 300 actions
    // +1.9 % from action 60, then stayed flat. A leak keeps growing through the second half.
    const int warm_up = n / 2;
    long rss_warm = -1;
    QElapsedTimer total;
    total.start();
    for (int i = 0; i < n; ++i) {
        act(int(m_rng() % 9));
        QVERIFY2(waitIdle(), qPrintable(QString("action %1: still busy after 120 s").arg(i)));
        QVERIFY2(m_longest_round_ms < 5000,
                 qPrintable(QString("action %1: the GUI thread hung for %2 ms").arg(i).arg(m_longest_round_ms)));
        checkConsistent(i);
        if (i == warm_up) rss_warm = residentKb();
    }
    const long rss_end = residentKb();
    qInfo(
        "%d actions in %.1f s: %d translations, %d translation errors, %d exports refused; longest GUI event-loop "
        "round %lld ms; RSS %ld kB after warm-up, %ld kB at the end (%+.1f %%)",
        n, total.elapsed() / 1000.0, m_translations, m_errors, m_exports_refused, m_longest_round_ms, rss_warm, rss_end,
        100.0 * double(rss_end - rss_warm) / double(rss_warm));
    // Under AddressSanitizer (scripts/sanitize.sh) freed memory stays resident in its quarantine,
    // up to 256 MB by default, before it is reused: measured +11.9 % over 100 actions there, +2.0 %
    // over 1,000 in a normal build. The bound allows for that quarantine; leaks are LeakSanitizer's.
#if defined(__SANITIZE_ADDRESS__)
    const long quarantine_kb = 256 * 1024;
#else
    const long quarantine_kb = 0;
#endif
    QVERIFY2(rss_end < rss_warm * 1.10 + quarantine_kb, "resident memory grew by more than 10 % after warm-up");
}

QTEST_MAIN(TestSoak)
#include "tst_soak.moc"
