// Pivot translation in the app (attnlab/route.h): the direction switch offers a pair that only two
// installed models chained through English translate; a pivot of the fixture's two packages (de -> en,
// en -> de with 3 layers) translates in two legs on the worker, the middle sentence shown and edited in
// the sentence row (the second leg alone translates it again), and the views follow the leg switch
// through ViewContext. Each leg's translation is checked against that leg's model run here alone.
#include "document/view_context.h"
#include "lessons/lesson_controller.h"
#include "shell/main_window.h"
#include "shell/pivot_row.h"
#include "shell/translate_panel.h"

#include <attnlab/lesson.h>
#include <attnlab/translator.h>

#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLineEdit>
#include <QSettings>
#include <QStandardPaths>
#include <QToolButton>
#include <QtTest/QtTest>

#include <filesystem>
#include <fstream>

using namespace attnlab::ui;

class TestPivotUi : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void switchOffersThePivot();
    void twoLegsAndTheMiddleSentence();
    void viewsFollowTheLeg();
    void aTranslationBeforeTheLegSwitchKeepsItsModel();
    void aMiddleSentenceOfTheSentenceBeforeIsNotTaken();
    void aSessionRecordsTheLegShown();
    void switchedOffHeadsLeaveWithTheirLeg();
    void anEditUndoneGoesBackToTheFirstLeg();
    void aLongSentenceInANarrowWindow();
    void aLegFailureNamesTheLeg();
    void showingALegChangesNoOption();
    void aSingleModelLeavesThePivot();

private:
    std::string translatedAlone(const std::string& package, const std::string& sentence) const;
    QTemporaryDir m_dir;
    QString m_first, m_second;  // de -> en (2 layers), en -> de (3 layers)
    std::unique_ptr<TranslationController> m_controller;
    std::unique_ptr<MainWindow> m_window;
};

void TestPivotUi::initTestCase() {
    QCoreApplication::setOrganizationName("AttnLab");
    QCoreApplication::setApplicationName("tst_pivot_ui");
    QStandardPaths::setTestModeEnabled(true);
    QSettings().remove("computeType");
    m_first = qEnvironmentVariable("ATTNLAB_TEST_PACKAGE");
    QVERIFY2(!m_first.isEmpty(), "ATTNLAB_TEST_PACKAGE must name the fixture package (set by CTest)");
    m_second = m_first + "-deep";
    m_controller = std::make_unique<TranslationController>();
    m_window = std::make_unique<MainWindow>(m_controller.get(), /*error_dialogs=*/false);
    m_window->resize(1200, 800);
    m_window->show();
}

// The leg's model alone, in this process, as the app's worker runs it (greedy: the same search either
// way, no tie a beam could break otherwise).
std::string TestPivotUi::translatedAlone(const std::string& package, const std::string& sentence) const {
    attnlab::Translator t(package, attnlab::TranslatorOptions{"cpu"});
    attnlab::DecodingOptions o;
    o.beam_size = 1;
    return t.translate(sentence, o).best.text;
}

void TestPivotUi::switchOffersThePivot() {
    // Two installed Argos packages, xa -> en and en -> xb (folders as argos-translate installs them;
    // listed, not loaded): the switch offers "xa → xb  via en" with both folders, after the models.
    const std::string root = m_dir.path().toStdString() + "/argos";
    for (const auto& [name, from, to] :
         {std::tuple{"translate-xa_en-1_0", "xa", "en"}, std::tuple{"translate-en_xb-1_0", "en", "xb"}}) {
        const std::string dir = root + "/" + name;
        std::filesystem::create_directories(dir + "/model");
        std::ofstream(dir + "/model/model.bin").flush();
        std::ofstream(dir + "/metadata.json") << R"({"from_code": ")" << from << R"(", "to_code": ")" << to << "\"}";
    }
    qputenv("ARGOS_PACKAGES_DIR", QByteArray::fromStdString(root));
    const auto choices = pivotChoices();
    qunsetenv("ARGOS_PACKAGES_DIR");
    const QString label = QString::fromUtf8("xa → xb  via en");
    bool found = false;
    for (const auto& [text, dirs] : choices)
        if (text == label) {
            found = true;
            QCOMPARE(dirs, (QStringList{QDir(QString::fromStdString(root + "/translate-xa_en-1_0")).canonicalPath(),
                                        QDir(QString::fromStdString(root + "/translate-en_xb-1_0")).canonicalPath()}));
        }
    QVERIFY2(found, "the pivot pair is not offered");
}

void TestPivotUi::twoLegsAndTheMiddleSentence() {
    ViewContext* c = m_window->context();
    TranslatePanel* panel = m_window->translatePanel();
    QSignalSpy changed(c, &ViewContext::modelChanged);
    c->loadPivot({m_first, m_second});
    QTRY_VERIFY_WITH_TIMEOUT(changed.count() > 0 && c->pivoting(), 30000);
    QVERIFY(panel->pivotRow()->isVisible());
    QCOMPARE(panel->currentDirection(), QString::fromUtf8("de → de  via en"));
    QCOMPARE(c->model()->package_dir, m_first.toStdString());  // the first leg's model is shown
    auto o = c->decodingOptions();
    o.beam_size = 1;
    c->setDecodingOptions(o);
    const std::string sentence = "Ein Hund läuft im Park.";
    c->translateSentence(QString::fromStdString(sentence));
    QTRY_VERIFY_WITH_TIMEOUT(c->legResult(0) && c->legResult(1) && c->result(), 30000);
    // Leg 1 is the first model on the sentence; its output is the middle sentence, leg 2's input.
    const auto first = c->legResult(0), second = c->legResult(1);
    QCOMPARE(first->source_text, sentence);
    QCOMPARE(first->best.text, translatedAlone(m_first.toStdString(), sentence));
    QCOMPARE(c->middleSentence().toStdString(), first->best.text);
    QCOMPARE(second->source_text, first->best.text);
    QCOMPARE(second->best.text, translatedAlone(m_second.toStdString(), first->best.text));
    QCOMPARE(c->result(), first);  // the views show leg 1
    QLineEdit* middle = panel->pivotRow()->middleEdit();
    QCOMPARE(middle->text(), c->middleSentence());
    QCOMPARE(panel->pivotRow()->finalTranslation().toStdString(), second->best.text);
    // The middle sentence edited: the second leg alone translates it; leg 1's translation stays.
    const QString edited = "A man reads a book.";
    middle->setFocus();
    middle->selectAll();
    QTest::keyClicks(middle, edited);
    QTest::keyClick(middle, Qt::Key_Return);
    QTRY_VERIFY_WITH_TIMEOUT(c->legResult(1) && c->legResult(1)->source_text == edited.toStdString(), 30000);
    QCOMPARE(c->legResult(0), first);
    QCOMPARE(c->legResult(1)->best.text, translatedAlone(m_second.toStdString(), edited.toStdString()));
    QCOMPARE(panel->pivotRow()->finalTranslation().toStdString(), c->legResult(1)->best.text);
    QCOMPARE(c->middleSentence(), edited);
    const QString shots = qEnvironmentVariable("ATTNLAB_SHOTS");
    QApplication::processEvents();
    if (!shots.isEmpty()) QVERIFY(m_window->grab().save(shots + "/pivot-leg1.png"));
}

void TestPivotUi::viewsFollowTheLeg() {
    ViewContext* c = m_window->context();
    QVERIFY(c->pivoting() && c->legResult(1));
    QSignalSpy models(c, &ViewContext::modelChanged);
    QSignalSpy asked(c, &ViewContext::translationRequested);
    m_window->translatePanel()->pivotRow()->legButton(1)->click();
    QTRY_VERIFY_WITH_TIMEOUT(c->result() == c->legResult(1), 30000);
    QCOMPARE(models.count(), 1);
    QCOMPARE(asked.count(), 0);  // shown, not translated again
    QCOMPARE(c->model()->package_dir, m_second.toStdString());
    QCOMPARE(c->model()->config.model.n_layers, 3);  // the views' model is the second leg's
    QCOMPARE(int(c->result()->cross.size()), 3);
    QVERIFY(m_window->translatePanel()->pivotRow()->legButton(1)->isChecked());
    // The pivot stays chosen in the switch, whichever leg is shown.
    QCOMPARE(m_window->translatePanel()->currentDirection(), QString::fromUtf8("de → de  via en"));
    const QString shots = qEnvironmentVariable("ATTNLAB_SHOTS");
    QApplication::processEvents();  // the layout's pass after the new result
    if (!shots.isEmpty()) QVERIFY(m_window->grab().save(shots + "/pivot-leg2.png"));
    m_window->translatePanel()->pivotRow()->legButton(0)->click();
    QTRY_VERIFY_WITH_TIMEOUT(c->result() == c->legResult(0), 30000);
    QCOMPARE(c->model()->package_dir, m_first.toStdString());
}

// A translation the worker finishes before it switches to the leg asked for (asked first, then the
// leg) is shown under the model the views have (the leg shown until then), never the new leg's maps
// under the old leg's model; then the leg switch comes with its own.
void TestPivotUi::aTranslationBeforeTheLegSwitchKeepsItsModel() {
    ViewContext* c = m_window->context();
    QVERIFY(c->pivoting() && c->leg() == 0 && c->legResult(1));
    int layers = c->model()->config.model.n_layers;  // the views' model, as modelChanged told them
    QStringList mismatches;
    auto m =
        connect(c, &ViewContext::modelChanged, this, [&](ModelInfoPtr info) { layers = info->config.model.n_layers; });
    auto r = connect(c, &ViewContext::resultChanged, this, [&](ResultPtr result) {
        if (result && int(result->cross.size()) != layers)
            mismatches << QString("%1 layers shown under a %2-layer model").arg(result->cross.size()).arg(layers);
    });
    c->translateSentence(c->sentence());  // the same sentence: both legs from the cache
    m_window->translatePanel()->pivotRow()->legButton(1)->click();
    QTRY_VERIFY_WITH_TIMEOUT(c->result() && c->result() == c->legResult(1), 30000);
    QCOMPARE(c->model()->package_dir, m_second.toStdString());
    m_window->translatePanel()->pivotRow()->legButton(0)->click();
    QTRY_VERIFY_WITH_TIMEOUT(c->result() && c->result() == c->legResult(0), 30000);
    disconnect(m);
    disconnect(r);
    QVERIFY2(mismatches.isEmpty(), qPrintable(mismatches.join("; ")));
}

// Another sentence asked for: the row no longer shows the sentence before's middle sentence and final
// translation, and a middle sentence entered before this sentence's first leg has come belongs to the
// sentence before: it is not taken (its second leg never pairs with this sentence's first).
void TestPivotUi::aMiddleSentenceOfTheSentenceBeforeIsNotTaken() {
    ViewContext* c = m_window->context();
    QVERIFY(c->pivoting() && c->legResult(0));
    const std::string sentence = "Die Katze schläft.";
    c->translateSentence(QString::fromStdString(sentence));
    QVERIFY(!c->legResult(0) && !c->legResult(1));  // no event processed yet: nothing of this sentence came
    QVERIFY(c->middleSentence().isEmpty());
    QVERIFY(m_window->translatePanel()->pivotRow()->finalTranslation().isEmpty());
    c->setMiddleSentence("A man reads a book.");
    QTRY_VERIFY_WITH_TIMEOUT(c->legResult(0) && c->legResult(1), 30000);
    const std::string middle = translatedAlone(m_first.toStdString(), sentence);
    QCOMPARE(c->legResult(0)->best.text, middle);
    QCOMPARE(c->legResult(1)->source_text, middle);
    QCOMPARE(c->middleSentence().toStdString(), middle);
}

// A session saved with a pivot records the leg shown, as every view shows it: that leg's model and its
// input (for the second leg, the middle sentence). Reopening it shows that leg's model alone on that
// sentence, the same maps, not the pivot (docs/ctranslate2.md, "Pivot translation").
void TestPivotUi::aSessionRecordsTheLegShown() {
    ViewContext* c = m_window->context();
    PivotRow* row = m_window->translatePanel()->pivotRow();
    row->legButton(1)->click();
    QTRY_VERIFY_WITH_TIMEOUT(c->legResult(1) && c->result() == c->legResult(1), 30000);
    const QString path = m_dir.path() + "/pivot-session.json";
    const auto problem = m_window->lessons()->saveSession(path);
    QVERIFY2(!problem, qPrintable(problem.value_or(QString())));
    const auto session = attnlab::readSession(path.toStdString());
    QCOMPARE(QString::fromStdString(session.model), QFileInfo(m_second).canonicalFilePath());
    QCOMPARE(session.steps.size(), size_t(1));
    QCOMPARE(session.steps[0].view.sentence.value_or(""), c->middleSentence().toStdString());
    row->legButton(0)->click();
    QTRY_VERIFY_WITH_TIMEOUT(c->result() == c->legResult(0), 30000);
}

// Heads switched off in the leg shown go when another leg is shown (the Heads tab lists that leg's
// model): both legs are translated again with every head on, so that coming back to the first leg shows
// its translation without the heads, the one the cache kept from before.
void TestPivotUi::switchedOffHeadsLeaveWithTheirLeg() {
    ViewContext* c = m_window->context();
    QVERIFY(c->pivoting() && c->leg() == 0 && c->legResult(0));
    const auto free = c->legResult(0);
    c->setAblated({attnlab::HeadRef{attnlab::AttentionKind::Cross, 0, 0}});
    QTRY_VERIFY_WITH_TIMEOUT(c->legResult(0) && c->legResult(0) != free, 30000);
    QCOMPARE(c->resultOptions().ablate.size(), size_t(1));
    PivotRow* row = m_window->translatePanel()->pivotRow();
    row->legButton(1)->click();
    QVERIFY(c->ablated().empty());
    QTRY_VERIFY_WITH_TIMEOUT(c->legResult(0) == free && c->result() == c->legResult(1), 30000);
    QVERIFY(c->resultOptions().ablate.empty());
    row->legButton(0)->click();
    QTRY_VERIFY_WITH_TIMEOUT(c->result() == free, 30000);
}

// "Undo edit" (shown only while the middle sentence is the user's): the second leg translates the
// first leg's output again.
void TestPivotUi::anEditUndoneGoesBackToTheFirstLeg() {
    ViewContext* c = m_window->context();
    PivotRow* row = m_window->translatePanel()->pivotRow();
    QVERIFY(c->pivoting() && c->legResult(0) && !c->middleEdited());
    QVERIFY(row->undoEditButton()->isHidden());
    QVERIFY2(row->middleLabel()->text().endsWith("editable:"), qPrintable(row->middleLabel()->text()));
    const std::string output = c->legResult(0)->best.text;
    const QString edited = "A man reads a book.";
    c->setMiddleSentence(edited);
    QTRY_VERIFY_WITH_TIMEOUT(c->legResult(1) && c->legResult(1)->source_text == edited.toStdString(), 30000);
    QVERIFY(c->middleEdited() && !row->undoEditButton()->isHidden());
    QVERIFY2(row->middleLabel()->text().endsWith("edited:"), qPrintable(row->middleLabel()->text()));
    row->undoEditButton()->click();
    QTRY_VERIFY_WITH_TIMEOUT(c->legResult(1) && c->legResult(1)->source_text == output, 30000);
    QVERIFY(!c->middleEdited() && row->undoEditButton()->isHidden());
    QCOMPARE(c->middleSentence().toStdString(), output);
    QCOMPARE(row->middleEdit()->text().toStdString(), output);
}

// A long sentence in a narrow window: the leg switch and the middle sentence's label are shown whole,
// the middle sentence keeps room to be edited, and the final translation is elided (whole in its
// tooltip) rather than cut. A picture under ATTNLAB_SHOTS.
void TestPivotUi::aLongSentenceInANarrowWindow() {
    ViewContext* c = m_window->context();
    PivotRow* row = m_window->translatePanel()->pivotRow();
    const QSize before = m_window->size();
    m_window->resize(760, 600);
    auto o = c->decodingOptions();
    o.max_length = 50;
    c->setDecodingOptions(o);
    // Long for the row, within the fixture's 64 positions (its pieces are characters and bytes).
    const QString sentence = "Ein Mann mit rotem Hut geht durch den Park.";
    c->translateSentence(sentence);
    QTRY_VERIFY_WITH_TIMEOUT(c->legResult(0) && c->legResult(1), 30000);
    QApplication::processEvents();
    for (QWidget* w : std::initializer_list<QWidget*>{row->legButton(0), row->legButton(1), row->middleLabel()})
        QVERIFY2(w->width() >= w->sizeHint().width(), qPrintable(w->objectName() + " is cut"));
    QVERIFY2(row->middleEdit()->width() >= 120, "no room left to edit the middle sentence");
    QVERIFY(row->geometry().right() <= m_window->width());
    const auto* final_label = row->findChildren<QLabel*>().last();
    const QString whole = final_label->toolTip();
    QVERIFY2(whole.endsWith(row->finalTranslation()) && !row->finalTranslation().isEmpty(), qPrintable(whole));
    QVERIFY(final_label->fontMetrics().horizontalAdvance(final_label->text()) <= final_label->width());
    if (final_label->text() != whole) QVERIFY(final_label->text().endsWith(QChar(0x2026)));  // "…"
    const QString shots = qEnvironmentVariable("ATTNLAB_SHOTS");
    if (!shots.isEmpty()) QVERIFY(m_window->grab().save(shots + "/pivot-narrow.png"));
    m_window->resize(before);
}

// A leg that fails says which one, its languages and that its input was the middle sentence; the
// translations go, the middle sentence as written stays.
void TestPivotUi::aLegFailureNamesTheLeg() {
    ViewContext* c = m_window->context();
    QVERIFY(c->pivoting() && c->legResult(0));
    QSignalSpy failed(c, &ViewContext::failed);
    const QString middle = QString(70 * 1024, QLatin1Char('a'));  // over the 64 KiB a sentence may have
    c->setMiddleSentence(middle);
    QTRY_VERIFY_WITH_TIMEOUT(failed.count() == 1, 30000);
    const QString message = failed.at(0).at(1).toString();
    const auto second = c->legModel(1)->config;
    const QString leg = QStringLiteral("leg 2 (%1 → %2) on the middle sentence: the sentence is %3 bytes long")
                            .arg(QString::fromStdString(second.source_lang), QString::fromStdString(second.target_lang))
                            .arg(middle.size());
    QVERIFY2(message.startsWith(leg), qPrintable(message));
    QVERIFY(!c->legResult(0) && !c->legResult(1) && !c->result());
    QCOMPARE(c->middleSentence(), middle);
}

// A pivot's decoding defaults are its first leg's: showing a second leg with a beam of its own
// (config.json num_beams, as CTranslate2 conversions carry) changes no option, as its translation was
// made with the options shown, and translates nothing again.
void TestPivotUi::showingALegChangesNoOption() {
    ViewContext* c = m_window->context();
    const QString second = m_dir.path() + "/second-with-beam";
    std::filesystem::copy(m_second.toStdString(), second.toStdString(), std::filesystem::copy_options::recursive);
    QFile file(second + "/config.json");
    QVERIFY(file.open(QIODevice::ReadOnly));
    QJsonObject config = QJsonDocument::fromJson(file.readAll()).object();
    file.close();
    config["num_beams"] = 3;
    QVERIFY(file.open(QIODevice::WriteOnly | QIODevice::Truncate));
    file.write(QJsonDocument(config).toJson());
    file.close();
    QSignalSpy loaded(c, &ViewContext::pivotChanged);
    c->loadPivot({m_first, second});
    QTRY_VERIFY_WITH_TIMEOUT(c->pivoting() && c->legModel(1)->config.num_beams == 3, 30000);
    auto o = c->decodingOptions();
    o.beam_size = 1;
    c->setDecodingOptions(o);
    c->translateSentence("Ein Hund läuft im Park.");
    QTRY_VERIFY_WITH_TIMEOUT(c->legResult(0) && c->legResult(1) && c->result(), 30000);
    QSignalSpy asked(c, &ViewContext::translationRequested);
    m_window->translatePanel()->pivotRow()->legButton(1)->click();
    QTRY_VERIFY_WITH_TIMEOUT(c->result() == c->legResult(1), 30000);
    QCOMPARE(c->model()->config.num_beams, 3);
    QCOMPARE(c->decodingOptions().beam_size, 1);
    QCOMPARE(c->resultOptions().beam_size, 1);
    QCOMPARE(asked.count(), 0);
}

void TestPivotUi::aSingleModelLeavesThePivot() {
    ViewContext* c = m_window->context();
    QSignalSpy changed(c, &ViewContext::modelChanged);
    c->loadModel(m_second);
    QTRY_VERIFY_WITH_TIMEOUT(changed.count() > 0, 30000);
    QVERIFY(!c->pivoting());
    QVERIFY(!m_window->translatePanel()->pivotRow()->isVisible());
    QVERIFY(!c->legResult(0) && !c->legResult(1));
}

QTEST_MAIN(TestPivotUi)
#include "tst_pivot_ui.moc"
