// The sentence row as a translator uses it (issue 52): the translation history (kept, read back, bounded,
// searched, a file that cannot be read set aside and said, turned off, cleared, an entry opened again with
// its model and options), the Copy button and key (the clipboard read back), Ctrl+Enter with Live off, a
// translation that is only </s> said in words, and a Hugging Face snapshot named by its repository.
// A TranslatePanel on a ViewContext (no MainWindow), translations checked against an in-process
// Translator of the same package.
#include "dialogs/translation_history_dialog.h"
#include "document/translation_history.h"
#include "document/view_context.h"
#include "shell/translate_panel.h"
#include "views/model_panel.h"
#include "widgets/confidence_text.h"

#include <attnlab/translator.h>
#include <attnlab/unknown_languages.h>

#include <QCheckBox>
#include <QClipboard>
#include <QHeaderView>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLineEdit>
#include <QPushButton>
#include <QSettings>
#include <QSpinBox>
#include <QTextBrowser>
#include <QToolButton>
#include <QTreeWidget>
#include <QtTest/QtTest>

using namespace attnlab::ui;

namespace {
HistoryEntry entry(const QString& sentence, const QString& model = "/models/a", int beam = 2) {
    HistoryEntry e;
    e.when = QDateTime(QDate(2026, 11, 28), QTime(21, 5, 7, 250), Qt::UTC);
    e.sentence = sentence;
    e.translation = "translated: " + sentence;
    e.models = {model};
    e.model_label = "de → en  (a)";
    e.source_language = "deu_Latn";
    e.target_language = "eng_Latn";
    e.beam_size = beam;
    e.length_penalty = 0.6;
    e.max_length = 77;
    return e;
}

QByteArray readAll(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

void writeAll(const QString& path, const QByteArray& bytes) {
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
    QCOMPARE(f.write(bytes), bytes.size());
}
}  // namespace

class TestTranslationHistory : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void init();
    void keptAndReadBack();
    void typingReplacesTheNewestAndSearchFinds();
    void boundedToTheLastEntries();
    void aTextLongerThanASentenceIsNotKept();
    void anUnreadableFileIsSetAsideAndSaid();
    void tooLargeOrNotAFileIsSaid();
    void offKeepsNothingAndClearRemovesTheFile();
    void writtenWhenTheAddingPauses();
    void theWindowKeepsTheTranslationInSight();
    void copyButtonAndKeyFillTheClipboard();
    void ctrlEnterTranslatesWithLiveOff();
    void ablatedOrForcedResultsAreNotKept();
    void anEntryOpensAgainWithItsModelAndOptions();
    void onlyTheEndMarkIsSaidInWords();
    void aHubSnapshotIsNamedByItsRepository();

private:
    void translateAndWait(const QString& sentence);
    QString m_package;
    QTemporaryDir m_dir;
    std::unique_ptr<attnlab::Translator> m_core;
    std::unique_ptr<TranslationController> m_controller;
    std::unique_ptr<ViewContext> m_context;
    std::unique_ptr<TranslatePanel> m_panel;
};

void TestTranslationHistory::initTestCase() {
    QCoreApplication::setOrganizationName("AttnLab");
    QCoreApplication::setApplicationName("tst_translation_history");
    QStandardPaths::setTestModeEnabled(true);  // the data folder and the settings away from the user's own
    QSettings().remove(TranslationHistory::kEnabledKey);
    QFile::remove(TranslationHistory::defaultPath());
    m_package = qEnvironmentVariable("ATTNLAB_TEST_PACKAGE");
    QVERIFY2(!m_package.isEmpty(), "ATTNLAB_TEST_PACKAGE must name the fixture package (set by CTest)");
    m_core = std::make_unique<attnlab::Translator>(m_package.toStdString(), attnlab::TranslatorOptions{"cpu"});
    m_controller = std::make_unique<TranslationController>();
    m_context = std::make_unique<ViewContext>(m_controller.get());
    m_context->setLiveTranslation(false, /*remember=*/false);
    m_panel = std::make_unique<TranslatePanel>(m_context.get());
    m_panel->resize(900, 300);
    m_panel->show();
    QVERIFY(QTest::qWaitForWindowExposed(m_panel.get()));
    QSignalSpy loaded(m_context.get(), &ViewContext::modelChanged);
    m_context->loadModel(QFileInfo(m_package).canonicalFilePath());
    QTRY_VERIFY_WITH_TIMEOUT(loaded.count() > 0, 30000);
}

void TestTranslationHistory::init() { QSettings().remove(TranslationHistory::kEnabledKey); }

void TestTranslationHistory::translateAndWait(const QString& sentence) {
    m_panel->sentenceEdit()->setText(sentence);
    QTest::keyClick(m_panel->sentenceEdit(), Qt::Key_Return);
    QTRY_VERIFY_WITH_TIMEOUT(
        m_context->result() && QString::fromStdString(m_context->result()->source_text) == sentence, 30000);
}

// Every field of every entry read back from the file, newest first; the file is JSON.
void TestTranslationHistory::keptAndReadBack() {
    const QString path = m_dir.filePath("kept/history.json");  // the folder is made
    TranslationHistory h(path);
    QVERIFY(!h.load());  // no file yet: empty, no problem
    h.add(entry("Der Hund schläft."));
    h.add(entry("Eine Katze.", "ORG/NAME@refs/pr/1", 5));
    QVERIFY(!h.flush());  // written now (else kSaveDelayMs after the last)
    TranslationHistory again(path);
    QVERIFY(!again.load());
    QCOMPARE(again.entries().size(), 2);
    const HistoryEntry& newest = again.entries().at(0);
    const HistoryEntry expected = entry("Eine Katze.", "ORG/NAME@refs/pr/1", 5);
    QCOMPARE(newest.sentence, expected.sentence);
    QCOMPARE(newest.translation, expected.translation);
    QCOMPARE(newest.models, expected.models);
    QCOMPARE(newest.model_label, expected.model_label);
    QCOMPARE(newest.source_language, expected.source_language);
    QCOMPARE(newest.target_language, expected.target_language);
    QCOMPARE(newest.beam_size, 5);
    QCOMPARE(newest.length_penalty, 0.6);
    QCOMPARE(newest.max_length, 77);
    QCOMPARE(newest.when, expected.when);
    QCOMPARE(again.entries().at(1).sentence, QString("Der Hund schläft."));
    const QJsonDocument doc = QJsonDocument::fromJson(readAll(path));
    QVERIFY(doc.isObject());
    QCOMPARE(doc.object().value("entries").toArray().size(), 2);
}

// Live typing: "Der", "Der Hu", "Der Hund" with the same model and options are one entry, the last; the next
// sentence typed, which begins as the newest did ("Der " of "Der Mann liest."), is another entry and never
// replaces it; another setting is another entry; the same sentence again moves to the front. Search ignores case.
void TestTranslationHistory::typingReplacesTheNewestAndSearchFinds() {
    TranslationHistory h(m_dir.filePath("typing.json"));
    for (const QString s : {"Der", "Der Hu", "Der Hund"}) h.add(entry(s));
    QCOMPARE(h.entries().size(), 1);
    QCOMPARE(h.entries().first().sentence, QString("Der Hund"));
    for (const QString s : {"Der ", "Der Mann", "Der Mann liest."}) h.add(entry(s));
    QCOMPARE(h.entries().size(), 2);
    QCOMPARE(h.entries().at(0).sentence, QString("Der Mann liest."));
    QCOMPARE(h.entries().at(1).sentence, QString("Der Hund"));
    h.add(entry("Der Hund", "/models/a", 4));  // another beam: another entry
    h.add(entry("Eine Katze."));
    h.add(entry("Der Hund"));  // again: to the front, not twice
    QCOMPARE(h.entries().size(), 4);
    QCOMPARE(h.entries().first().sentence, QString("Der Hund"));
    QCOMPARE(h.search("KATZE").size(), 1);
    QCOMPARE(h.search("katze").first().sentence, QString("Eine Katze."));
    QCOMPARE(h.search("translated: der").size(), 3);  // in the translations
    QCOMPARE(h.search("eng_latn").size(), 4);         // the languages
    QCOMPARE(h.search("").size(), 4);
    QVERIFY(h.search("Pferd").isEmpty());
}

// At most kMaxEntries: a full file read, one more added, the oldest dropped, in the file too.
void TestTranslationHistory::boundedToTheLastEntries() {
    const QString path = m_dir.filePath("bounded.json");
    {
        TranslationHistory one(path);
        one.add(entry("sentence 0"));
    }
    QJsonObject root = QJsonDocument::fromJson(readAll(path)).object();
    const QJsonObject first = root.value("entries").toArray().at(0).toObject();
    QJsonArray full;
    for (int i = 0; i < TranslationHistory::kMaxEntries + 3; ++i) {  // more than kept: read as the first 1000
        QJsonObject e = first;
        e["sentence"] = QString("sentence %1").arg(i);
        full.append(e);
    }
    root["entries"] = full;
    writeAll(path, QJsonDocument(root).toJson());
    TranslationHistory h(path);
    QVERIFY(!h.load());
    QCOMPARE(h.entries().size(), TranslationHistory::kMaxEntries);
    h.add(entry("the newest"));
    QVERIFY(!h.flush());
    QCOMPARE(h.entries().size(), TranslationHistory::kMaxEntries);
    TranslationHistory again(path);
    QVERIFY(!again.load());
    QCOMPARE(again.entries().size(), TranslationHistory::kMaxEntries);
    QCOMPARE(again.entries().first().sentence, QString("the newest"));
    QCOMPARE(again.entries().last().sentence, QString("sentence %1").arg(TranslationHistory::kMaxEntries - 2));
}

// A sentence or translation longer than kMaxTextChars (a pasted text in the sentence field) is not kept: a
// thousand of them would make a file larger than the reader takes (kMaxFileBytes), set aside at the next start.
void TestTranslationHistory::aTextLongerThanASentenceIsNotKept() {
    TranslationHistory h(m_dir.filePath("long-text.json"));
    h.add(entry(QString(TranslationHistory::kMaxTextChars + 1, QChar(0x00FC))));
    HistoryEntry long_translation = entry("Ein Hund.");
    long_translation.translation = QString(TranslationHistory::kMaxTextChars + 1, 'a');
    h.add(long_translation);
    QVERIFY(h.entries().isEmpty());
    HistoryEntry largest = entry(QString(TranslationHistory::kMaxTextChars, QChar(0x00FC)));
    largest.translation = QString(TranslationHistory::kMaxTextChars, 'a');
    h.add(largest);
    QCOMPARE(h.entries().size(), 1);
    // the largest entries, as many as are kept, stay within what is read back: UTF-8 of up to 3 bytes a
    // character (kMaxTextChars each), the rest of an entry well under 16 KiB
    QVERIFY(qint64(TranslationHistory::kMaxEntries) * (2 * 3 * TranslationHistory::kMaxTextChars + 16384) <
            TranslationHistory::kMaxFileBytes);
}

// A file larger than the reader takes (a sparse one: no 64 MiB written) is set aside unread past the
// limit; a folder at the history's path is not the app's to move: it stays, and no history is kept.
void TestTranslationHistory::tooLargeOrNotAFileIsSaid() {
    const QString big = m_dir.filePath("big.json");
    {
        QFile f(big);
        QVERIFY(f.open(QIODevice::WriteOnly) && f.resize(TranslationHistory::kMaxFileBytes + 1));
    }
    TranslationHistory large(big);
    const auto too_large = large.load();
    QVERIFY2(too_large && too_large->contains("more than") && too_large->contains(big + ".corrupt"),
             qPrintable(too_large.value_or("nothing said")));
    QCOMPARE(QFileInfo(big + ".corrupt").size(), TranslationHistory::kMaxFileBytes + 1);
    const QString folder = m_dir.filePath("folder.json");
    QVERIFY(QDir().mkpath(folder + "/inside"));
    TranslationHistory h(folder);
    const auto not_a_file = h.load();
    QVERIFY2(not_a_file && not_a_file->contains("is not a file"), qPrintable(not_a_file.value_or("nothing said")));
    QVERIFY(QFileInfo(folder + "/inside").isDir());
    QVERIFY(!QFileInfo::exists(folder + ".corrupt"));
    h.add(entry("Neu."));
    QVERIFY(QFileInfo(folder).isDir());
}

// Not JSON, or an entry without its fields: renamed .corrupt (.corrupt.2 the next time), never written
// over, the message names both files and the problem; a new history begins beside it. The panel says it
// in the status bar.
void TestTranslationHistory::anUnreadableFileIsSetAsideAndSaid() {
    const QString path = m_dir.filePath("corrupt.json");
    const QByteArray broken = "{\"format\": \"attnlab-translation-history\", \"entries\": [{\"sent";
    writeAll(path, broken);
    TranslationHistory h(path);
    const auto problem = h.load();
    QVERIFY(problem);
    QVERIFY2(problem->contains(path) && problem->contains(path + ".corrupt") && problem->contains("not JSON"),
             qPrintable(*problem));
    QVERIFY(!QFileInfo::exists(path));
    QCOMPARE(readAll(path + ".corrupt"), broken);
    QVERIFY(h.entries().isEmpty());
    h.add(entry("Neu."));
    QVERIFY(!h.flush());
    QCOMPARE(readAll(path + ".corrupt"), broken);  // kept as it was
    // an entry missing a field: set aside too, beside the first
    QByteArray missing = readAll(path).replace("\"max_length\"", "\"max_lengthx\"");
    writeAll(path, missing);
    const auto second = h.load();
    QVERIFY(second && second->contains("entry 1") && second->contains("max_length"));
    QCOMPARE(readAll(path + ".corrupt.2"), missing);
    QCOMPARE(readAll(path + ".corrupt"), broken);

    // the app's own file, unreadable when the sentence row starts: the status bar says so
    QVERIFY(QDir().mkpath(QFileInfo(TranslationHistory::defaultPath()).absolutePath()));
    writeAll(TranslationHistory::defaultPath(), "not a history");
    QSignalSpy status(m_context.get(), &ViewContext::status);
    TranslatePanel panel(m_context.get());
    QTRY_VERIFY(!status.isEmpty());
    const QString said = status.first().first().toString();
    QVERIFY2(said.contains(".corrupt") && said.contains("a new history begins"), qPrintable(said));
    QCOMPARE(readAll(TranslationHistory::defaultPath() + ".corrupt"), QByteArray("not a history"));
    QVERIFY(panel.history()->entries().isEmpty());
    QFile::remove(TranslationHistory::defaultPath() + ".corrupt");
}

// Off (remembered in the settings): nothing added, nothing written. Clear: no entry, no file.
void TestTranslationHistory::offKeepsNothingAndClearRemovesTheFile() {
    const QString path = m_dir.filePath("off.json");
    TranslationHistory h(path);
    h.setEnabled(false);
    QCOMPARE(QSettings().value(TranslationHistory::kEnabledKey).toBool(), false);
    QVERIFY(!TranslationHistory::enabled());
    h.add(entry("Geheim."));
    QVERIFY(!h.flush());
    QVERIFY(h.entries().isEmpty());
    QVERIFY(!QFileInfo::exists(path));
    h.setEnabled(true);
    h.add(entry("Offen."));
    QVERIFY(!h.flush());
    QVERIFY(QFileInfo::exists(path));
    QVERIFY(!h.clear());
    QVERIFY(h.entries().isEmpty());
    QVERIFY(!QFileInfo::exists(path));
}

// Typing with Live on adds an entry at every pause: the file is written once the additions stop (kSaveDelayMs
// later, the GUI thread's timer), not at each of them, and at the latest when the history ends (the app closing).
void TestTranslationHistory::writtenWhenTheAddingPauses() {
    const QString path = m_dir.filePath("pause.json");
    {
        TranslationHistory h(path);
        for (const QString s : {"Ein", "Ein Mann", "Ein Mann liest."}) h.add(entry(s));
        QVERIFY(!QFileInfo::exists(path));  // not yet
        QTRY_VERIFY_WITH_TIMEOUT(QFileInfo::exists(path), 10 * TranslationHistory::kSaveDelayMs);
        QVERIFY(readAll(path).contains("Ein Mann liest."));
        h.add(entry("Eine Frau."));
        QVERIFY(!readAll(path).contains("Eine Frau."));
    }  // ended before its timer: written all the same
    TranslationHistory again(path);
    QVERIFY(!again.load());
    QCOMPARE(again.entries().size(), 2);
    QCOMPARE(again.entries().first().sentence, QString("Eine Frau."));
}

// A long sentence in the history's window: its column is cut (the sentence whole in its tooltip) and the
// Translation column stays in sight, at least 20 characters of it.
void TestTranslationHistory::theWindowKeepsTheTranslationInSight() {
    TranslationHistory h(m_dir.filePath("long.json"));
    QString sentence;
    while (sentence.size() < 400) sentence += "Ein Hund läuft über die Wiese und bellt laut. ";
    sentence = sentence.trimmed();
    h.add(entry("Eine Katze."));
    h.add(entry(sentence));
    TranslationHistoryDialog dialog(&h);
    dialog.show();
    QVERIFY(QTest::qWaitForWindowExposed(&dialog));
    const QTreeWidget* list = dialog.list();
    const int room = list->viewport()->width() - list->header()->sectionViewportPosition(3);
    QVERIFY2(room >= 20 * list->fontMetrics().averageCharWidth(),
             qPrintable(QString("the Translation column begins %1 px from the list's right edge (%2 px wide)")
                            .arg(room)
                            .arg(list->viewport()->width())));
    QCOMPARE(list->topLevelItem(0)->toolTip(2), sentence);
    // the languages by name, as the pickers show them (the codes are searched too)
    QCOMPARE(list->topLevelItem(0)->text(1), QString("de → en  (a)  German (Latin) → English (Latin)"));
    QVERIFY(dialog.grab().save(QDir::temp().filePath("attnlab-translation-history-long.png")));
}

// The Copy button and the key (named in the button's tooltip) put the translation on the clipboard.
void TestTranslationHistory::copyButtonAndKeyFillTheClipboard() {
    QClipboard* clipboard = QGuiApplication::clipboard();
    clipboard->setText("before");
    QVERIFY(!m_panel->copyButton()->isEnabled() || m_context->result());
    const QString sentence = "Ein Hund spielt im Park.";
    translateAndWait(sentence);
    const QString expected =
        QString::fromStdString(m_core->translate(sentence.toStdString(), m_panel->options()).best.text);
    QVERIFY(!expected.isEmpty());
    QVERIFY(m_panel->copyButton()->isEnabled());
    QVERIFY2(m_panel->copyButton()->toolTip().contains(TranslatePanel::copyKey().toString(QKeySequence::NativeText)),
             qPrintable(m_panel->copyButton()->toolTip()));
    QVERIFY(m_panel->grab().save(QDir::temp().filePath("attnlab-sentence-row.png")));
    m_panel->copyButton()->click();
    QCOMPARE(clipboard->text(), expected);
    clipboard->setText("before");
    m_panel->activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(m_panel.get()));
    QTest::keyClick(m_panel->sentenceEdit(), Qt::Key_C, Qt::ControlModifier | Qt::ShiftModifier);
    QCOMPARE(clipboard->text(), expected);
    // no translation: nothing to copy, the clipboard keeps what it had
    m_panel->sentenceEdit()->clear();
    QTRY_VERIFY(!m_context->result());
    QVERIFY(!m_panel->copyButton()->isEnabled());
    // beside the translation, it never makes the line taller (the maps below keep their room), at the
    // smallest and the largest text size
    const double text_size = m_context->textSize();
    for (const double points : {ViewContext::kMinTextSize, ViewContext::kMaxTextSize}) {
        m_context->setTextSize(points, /*remember=*/false);
        QApplication::processEvents();
        m_panel->resize(1400, std::max(300, m_panel->sizeHint().height()));  // room for all of it at 28 pt
        QApplication::processEvents();
        QVERIFY2(m_panel->copyButton()->height() <= m_panel->translationView()->height(),
                 qPrintable(QString("%1 pt: Copy %2 px high, the empty translation's line %3 px")
                                .arg(points)
                                .arg(m_panel->copyButton()->height())
                                .arg(m_panel->translationView()->height())));
        QVERIFY2(m_panel->copyButton()->height() >= m_panel->copyButton()->fontMetrics().height(),  // text in sight
                 qPrintable(QString("%1 pt: Copy %2 px high for %3 px text")
                                .arg(points)
                                .arg(m_panel->copyButton()->height())
                                .arg(m_panel->copyButton()->fontMetrics().height())));
    }
    m_context->setTextSize(text_size, /*remember=*/false);
    m_panel->resize(900, 300);
    clipboard->setText("kept");
    QTest::keyClick(m_panel->sentenceEdit(), Qt::Key_C, Qt::ControlModifier | Qt::ShiftModifier);
    QCOMPARE(clipboard->text(), QString("kept"));
}

// Live off: Ctrl+Enter translates from wherever the focus is in the window (here the Beam box, where a
// plain Enter does not).
void TestTranslationHistory::ctrlEnterTranslatesWithLiveOff() {
    QVERIFY(!m_context->liveTranslation());
    m_panel->activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(m_panel.get()));
    const QString sentence = "Zwei Hunde spielen im Schnee.";
    m_panel->sentenceEdit()->setText(sentence);
    QSpinBox* beam = nullptr;
    for (QSpinBox* box : m_panel->findChildren<QSpinBox*>())
        if (box->toolTip().startsWith("Beam")) beam = box;
    QVERIFY(beam);
    beam->setFocus();
    QTRY_VERIFY(beam->hasFocus());
    QTest::keyClick(beam, Qt::Key_Return);
    QTest::qWait(300);
    QVERIFY(!m_context->result() || QString::fromStdString(m_context->result()->source_text) != sentence);
    // the keys are named where a person looks: Help › Keyboard shortcuts (and the buttons' tooltips)
    QStringList listed;
    for (const auto& [keys, what] : TranslatePanel::keyList()) listed << keys;
    QVERIFY2(listed.contains(TranslatePanel::translateKey().toString(QKeySequence::NativeText)),
             qPrintable(listed.join(", ")));
    QVERIFY(listed.contains(TranslatePanel::copyKey().toString(QKeySequence::NativeText)));
    QTest::keyClick(beam, Qt::Key_Return, Qt::ControlModifier);
    QTRY_VERIFY_WITH_TIMEOUT(
        m_context->result() && QString::fromStdString(m_context->result()->source_text) == sentence, 30000);
    QCOMPARE(QString::fromStdString(m_context->result()->best.text),
             QString::fromStdString(m_core->translate(sentence.toStdString(), m_panel->options()).best.text));
}

// A result with heads switched off (the Heads tab's ablation translates the sentence again) or with a forced
// beginning is not what the row's model and options give: not kept, and the sentence's entry stays as it was
// (the same sentence and setting would have replaced it).
void TestTranslationHistory::ablatedOrForcedResultsAreNotKept() {
    QVERIFY(!m_panel->history()->clear());
    const QString sentence = "Ein Hund rennt über eine Wiese.";
    translateAndWait(sentence);
    QCOMPARE(m_panel->history()->entries().size(), 1);
    const HistoryEntry kept = m_panel->history()->entries().first();
    QCOMPARE(kept.translation, QString::fromStdString(m_context->result()->best.text));
    QSignalSpy changed(m_panel->history(), &TranslationHistory::changed);
    QSignalSpy results(m_context.get(), &ViewContext::resultChanged);
    m_context->setAblated({attnlab::HeadRef{attnlab::AttentionKind::Cross, 0, 0}});
    QTRY_VERIFY_WITH_TIMEOUT(!results.isEmpty() && m_context->result() && !m_context->resultOptions().ablate.empty(),
                             30000);
    QCOMPARE(changed.count(), 0);
    m_context->setAblated({});
    QTRY_VERIFY_WITH_TIMEOUT(m_context->result() && m_context->resultOptions().ablate.empty(), 30000);
    changed.clear();
    results.clear();
    attnlab::DecodingOptions forced = m_context->resultOptions();
    forced.force_prefix = "Two";
    m_context->translate(sentence, forced);
    QTRY_VERIFY_WITH_TIMEOUT(
        !results.isEmpty() && m_context->result() && !m_context->resultOptions().force_prefix.empty(), 30000);
    QCOMPARE(changed.count(), 0);
    QCOMPARE(m_panel->history()->entries().size(), 1);
    QCOMPARE(m_panel->history()->entries().first().translation, kept.translation);
    QCOMPARE(m_panel->history()->entries().first().when, kept.when);
}

// Two sentences with two models (the package and a copy of it in another folder) and two beams; the
// window searches them; the older opened again loads its model back, with its beam, and translates it.
// Off, nothing more is kept; Clear empties the window and removes the file.
void TestTranslationHistory::anEntryOpensAgainWithItsModelAndOptions() {
    QVERIFY(!m_panel->history()->clear());
    const QString first_model = QFileInfo(m_package).canonicalFilePath();
    QCOMPARE(QString::fromStdString(m_context->model()->package_dir), first_model);
    // the second: a copy made multilingual (three language tokens; fra_Latn -> deu_Latn when none is chosen)
    QDir().mkpath(m_dir.filePath("copy"));
    for (const QFileInfo& f : QDir(m_package).entryInfoList(QDir::Files))
        QVERIFY(QFile::copy(f.filePath(), m_dir.filePath("copy/" + f.fileName())));
    const QString second_model = QFileInfo(m_dir.filePath("copy")).canonicalFilePath();
    QString config = QString::fromUtf8(readAll(second_model + "/config.json"));
    for (const auto& [from, to] : QList<QPair<QString, QString>>{
             {"\"languages\": []",
              "\"languages\": [{\"code\": \"deu_Latn\", \"id\": 390, \"token\": \"deu_Latn\"}, "
              "{\"code\": \"eng_Latn\", \"id\": 391, \"token\": \"eng_Latn\"}, "
              "{\"code\": \"fra_Latn\", \"id\": 392, \"token\": \"fra_Latn\"}]"},
             {"\"source_lang\": \"de\"", "\"source_lang\": \"fra_Latn\""},
             {"\"target_lang\": \"en\"", "\"target_lang\": \"deu_Latn\""}}) {
        QVERIFY2(config.contains(from), qPrintable(from));
        config.replace(from, to);
    }
    writeAll(second_model + "/config.json", config.toUtf8());
    attnlab::DecodingOptions o = m_panel->options();
    o.beam_size = 2;
    m_panel->setOptions(o);
    translateAndWait("Ein Mann fährt Fahrrad.");
    QSignalSpy loaded(m_context.get(), &ViewContext::modelChanged);
    m_context->loadModel(second_model);
    QTRY_VERIFY_WITH_TIMEOUT(loaded.count() > 0, 30000);
    m_panel->sentenceEdit()->clear();  // another language chosen translates what the field holds
    o = m_panel->options();
    o.beam_size = 3;
    o.source_language = "eng_Latn";
    o.target_language = "fra_Latn";
    m_panel->setOptions(o);
    translateAndWait("Eine Frau liest ein Buch.");
    QCOMPARE(m_context->resultOptions().target_language, std::string("fra_Latn"));
    QCOMPARE(m_panel->history()->entries().size(), 2);
    // another pair chosen afterwards (the picker remembers it for this model): the entry keeps its own
    m_panel->sentenceEdit()->clear();
    o.source_language = "deu_Latn";
    o.target_language = "eng_Latn";
    m_panel->setOptions(o);
    TranslationHistoryDialog* dialog = m_panel->showHistory();
    QVERIFY(QTest::qWaitForWindowExposed(dialog));
    QCOMPARE(dialog->list()->topLevelItemCount(), 2);
    QVERIFY(dialog->grab().save(QDir::temp().filePath("attnlab-translation-history.png")));
    QCOMPARE(dialog->list()->topLevelItem(0)->text(2), QString("Eine Frau liest ein Buch."));
    // on disk too
    QVERIFY(!m_panel->history()->flush());
    QVERIFY(readAll(TranslationHistory::defaultPath()).contains("Eine Frau liest ein Buch."));
    dialog->searchField()->setText("fahrrad");
    QCOMPARE(dialog->list()->topLevelItemCount(), 1);
    QCOMPARE(dialog->list()->topLevelItem(0)->text(2), QString("Ein Mann fährt Fahrrad."));
    loaded.clear();
    dialog->openButton()->click();
    QTRY_VERIFY_WITH_TIMEOUT(loaded.count() > 0, 30000);
    QCOMPARE(QString::fromStdString(m_context->model()->package_dir), first_model);
    QTRY_VERIFY_WITH_TIMEOUT(
        m_context->result() && QString::fromStdString(m_context->result()->source_text) == "Ein Mann fährt Fahrrad.",
        30000);
    QCOMPARE(m_panel->options().beam_size, 2);
    QCOMPARE(m_context->resultOptions().beam_size, 2);
    QCOMPARE(m_panel->sentence(), QString("Ein Mann fährt Fahrrad."));
    // the multilingual one: its model again, in its languages (not the ones chosen since), with its beam
    dialog->searchField()->setText("FRAU");
    QCOMPARE(dialog->list()->topLevelItemCount(), 1);
    loaded.clear();
    dialog->openButton()->click();
    QTRY_VERIFY_WITH_TIMEOUT(loaded.count() > 0, 30000);
    QCOMPARE(QString::fromStdString(m_context->model()->package_dir), second_model);
    QTRY_VERIFY_WITH_TIMEOUT(
        m_context->result() && QString::fromStdString(m_context->result()->source_text) == "Eine Frau liest ein Buch.",
        30000);
    QCOMPARE(m_context->resultOptions().source_language, std::string("eng_Latn"));
    QCOMPARE(m_context->resultOptions().target_language, std::string("fra_Latn"));
    QCOMPARE(m_context->resultOptions().beam_size, 3);
    QCOMPARE(m_panel->options().target_language, std::string("fra_Latn"));
    // Off: the next translation is not kept (the switch is in the window, remembered in the settings).
    dialog->searchField()->clear();
    dialog->keepBox()->setChecked(false);
    QCOMPARE(QSettings().value(TranslationHistory::kEnabledKey).toBool(), false);
    const QByteArray before = readAll(TranslationHistory::defaultPath());
    translateAndWait("Ein Kind isst einen Apfel.");
    QCOMPARE(m_panel->history()->entries().size(), 2);
    QCOMPARE(readAll(TranslationHistory::defaultPath()), before);
    dialog->keepBox()->setChecked(true);
    dialog->clearButton()->click();
    QCOMPARE(dialog->list()->topLevelItemCount(), 0);
    QVERIFY(!QFileInfo::exists(TranslationHistory::defaultPath()));
    dialog->close();
    // Closed, the window is not refilled at every translation, and shows what came meanwhile when opened again.
    translateAndWait("Zwei Hunde spielen im Schnee.");
    QCOMPARE(m_panel->history()->entries().size(), 1);
    QCOMPARE(dialog->list()->topLevelItemCount(), 0);
    QCOMPARE(m_panel->showHistory(), dialog);
    QCOMPARE(dialog->list()->topLevelItemCount(), 1);
    QCOMPARE(dialog->list()->topLevelItem(0)->text(2), QString("Zwei Hunde spielen im Schnee."));
    dialog->close();
}

// A translation that is only </s>: the warning line says so in words (it left a blank line).
void TestTranslationHistory::onlyTheEndMarkIsSaidInWords() {
    attnlab::TranslationResult r;
    r.source_text = "Hallo.";
    r.source_pieces = {"▁Hallo", ".", "</s>"};
    r.best.ids = {3};
    r.best.pieces = {"</s>"};
    r.best.token_log_probs = {-0.1};
    r.best.finished = true;
    m_panel->showResult(std::make_shared<const attnlab::TranslationResult>(r));
    QVERIFY2(m_panel->confidenceWarning().contains("only the end-of-sentence mark"),
             qPrintable(m_panel->confidenceWarning()));
    QVERIFY(!m_panel->copyButton()->isEnabled());
    // a translation with words: no such line
    r.best.ids = {10, 3};
    r.best.pieces = {"▁Hello", "</s>"};
    r.best.token_log_probs = {-0.1, -0.1};
    r.best.text = "Hello";
    m_panel->showResult(std::make_shared<const attnlab::TranslationResult>(r));
    QVERIFY(!m_panel->confidenceWarning().contains("end-of-sentence"));
    // a multilingual model's: its forced target-language token, then </s> and nothing else
    r.best.ids = {391, 3};
    r.best.pieces = {"eng_Latn", "</s>"};
    r.best.text.clear();
    r.forced_tokens = r.forced_by_model = 1;
    m_panel->showResult(std::make_shared<const attnlab::TranslationResult>(r));
    QVERIFY2(m_panel->confidenceWarning().contains("only the end-of-sentence mark"),
             qPrintable(m_panel->confidenceWarning()));
}

// A snapshot of the Hugging Face cache is named ORG/NAME (not by its commit); "src → tgt" is not
// shown as a direction when nothing names the languages.
void TestTranslationHistory::aHubSnapshotIsNamedByItsRepository() {
    const QString repo = m_dir.filePath("hub/models--some-org--plain-model"), commit(40, 'b');
    const QString snapshot = repo + "/snapshots/" + commit;
    QVERIFY(QDir().mkpath(snapshot));
    QVERIFY(QDir().mkpath(repo + "/refs"));
    writeAll(repo + "/refs/main", commit.toLatin1());  // as huggingface_hub leaves it: main is that commit
    attnlab::ModelInfo info;
    info.package_dir = snapshot.toStdString();
    info.config.source_lang = attnlab::unknown_language::kSource;
    info.config.target_lang = attnlab::unknown_language::kTarget;
    QCOMPARE(modelLabel(info), QString("some-org/plain-model"));
    ModelPanel model_tab(m_context.get());  // the Model tab's heading, the same way
    model_tab.showModel(info);
    QString shown = model_tab.details()->toPlainText();
    QVERIFY2(shown.contains("some-org/plain-model") && !shown.contains("src → tgt") && !shown.contains(commit),
             qPrintable(shown.left(200)));
    info.config.source_lang = "de";
    info.config.target_lang = "en";
    QCOMPARE(modelLabel(info), QString("de → en  (some-org/plain-model)"));
    model_tab.showModel(info);
    shown = model_tab.details()->toPlainText();
    QVERIFY2(shown.contains("de → en") && shown.contains("some-org/plain-model"), qPrintable(shown.left(200)));
    info.package_dir = m_dir.filePath("my-model").toStdString();
    info.config.target_lang = attnlab::unknown_language::kTarget;
    QCOMPARE(modelLabel(info), QString("my-model"));
}

QTEST_MAIN(TestTranslationHistory)
#include "tst_translation_history.moc"
