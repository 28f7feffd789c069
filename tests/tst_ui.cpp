// The desktop app's widgets, offscreen: typing a sentence yields maps whose sizes and values are
// the core's; layer/head selection; PNG/PDF export read back; a corrupt package keeps the old
// model; the positional heatmap equals the formula; a dropped package opens and is remembered.
#include "dialogs/argos_index_panel.h"
#include "dialogs/download_question.h"
#include "dialogs/get_model_dialog.h"
#include "document/file_save.h"
#include "document/recent_models.h"
#include "document/translation_controller.h"
#include "headlab/ablation_panel.h"
#include "headlab/alignment_panel.h"
#include "headlab/head_lab_view.h"
#include "headlab/head_stats_panel.h"
#include "lessons/lesson_controller.h"
#include "lessons/lesson_pane.h"
#include "lessons/view_states.h"
#include "plots/attention_grid.h"
#include "plots/attention_view.h"
#include "plots/bar_plot.h"
#include "shell/main_window.h"
#include "shell/translate_panel.h"
#include "shell/view_registry.h"
#include "views/attention_explorer.h"
#include "views/decoding_view.h"
#include "views/inputs_view.h"
#include "views/model_panel.h"
#include "views/pair_view.h"
#include "views/positional_view.h"
#include "views/weight_view.h"
#include "widgets/confidence_text.h"
#include "widgets/download_panel.h"

#include "fake_hub_server.h"

#include <attnlab/confidence.h>
#include <attnlab/device.h>
#include <attnlab/head_lab.h>
#include <attnlab/head_lab_json.h>
#include <attnlab/hub.h>
#include <attnlab/hub_progress.h>
#include <attnlab/package.h>
#include <attnlab/translator.h>

#include <qcustomplot.h>

#include <QFileDialog>
#include <QStandardItemModel>
#include <QTreeWidget>
#include <QtTest/QtTest>
#include <algorithm>

#include <cmath>
#include <filesystem>
#include <fstream>

using namespace attnlab::ui;
using attnlab::AttentionKind;

class TestUi : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void typingTranslatesAndShowsEveryKind();
    void layerAndHeadSelectTheirMaps();
    void exportsPngAndPdf();
    void corruptPackageKeepsOldModel();
    void positionalHeatmapEqualsFormula();
    void droppedFolderOpensAndIsRemembered();
    void modelPanelShowsCardAndTrainingLog();
    void translationShowsWordProbabilitiesAndWarns();
    void textSizeReachesEveryPlot();
    void shortcutsWorkFromTheSentenceField();
    void palettesReachTheMapsAndExports();
    void emptyWindowSaysWhatToDo();
    void decodingTabStepsThroughTheSearch();
    void decodingTabScoresATypedTranslation();
    void candidateClickForcesAndEveryViewFollows();
    void clickingACellExplainsItsWeight();
    void inputsTabShowsTokenAndMasks();
    void lessonStepsAndSessionRoundTrip();
    void malformedLessonsKeepTheWindow();
    void presenterMode();
    void minimalPairsSideBySide();
    void headStatisticsRunShowsAndExports();
    void togglingAHeadRetranslates();
    void alignmentDrawsGoldAndLinks();
    void liveTypingFollowsTheSentence();
    void typingComputesNoContributions();  // issue 54
    void modelSwitchTranslatesAgain();
    void emptySentenceClearsTheViews();
    void headTogglesRecomputeTheSentenceAsked();
    void warningKeepsTheTabsInPlace();
    void longOutputWrapsAnywhere();
    void exportDialogsOpenInTheLastFolder();
    void getAModelByNameWithProgress();  // loads the fixture again, from a stand-in hub
    void argosTabInstallsAndRemoves();
    void aLessonsModelIsGotOnlyWhenAgreed();  // loads the fixture again, from a stand-in hub
    void aFailedListingIsReported();
    // issue 52 (Engineer B)
    void ablationBeforeIsOfTheSentenceShown();
    void statusMessagesKeepToTheirRoom();
    void computeTypeSwitchReloadsAndIsRemembered();  // last: it reloads the model

private:
    void typeAndWait(const QString& sentence);
    void loadAndWait(const QString& dir);
    std::unique_ptr<TranslationController> m_controller;
    std::unique_ptr<MainWindow> m_window;
    std::unique_ptr<attnlab::Translator> m_core;  // the same package, in-process, for expected values
    QTemporaryDir m_dir;
};

void TestUi::initTestCase() {
    QCoreApplication::setOrganizationName("AttnLab");
    QCoreApplication::setApplicationName("tst_ui");
    QStandardPaths::setTestModeEnabled(true);  // QSettings (recent models) away from the user's own
    QSettings().remove(RecentModels::kSettingsKey);
    QSettings().remove("computeType");  // every model computes in float32 until a test switches it
    const QString pkg = qEnvironmentVariable("ATTNLAB_TEST_PACKAGE");
    QVERIFY2(!pkg.isEmpty(), "ATTNLAB_TEST_PACKAGE must name the fixture package (set by CTest)");
    m_core = std::make_unique<attnlab::Translator>(pkg.toStdString(), attnlab::TranslatorOptions{"cpu"});
    m_controller = std::make_unique<TranslationController>();
    m_window = std::make_unique<MainWindow>(m_controller.get(), /*error_dialogs=*/false);
    m_window->resize(1200, 800);
    m_window->show();
    QSignalSpy loaded(m_controller.get(), &TranslationController::modelLoaded);
    m_window->context()->loadModel(pkg);
    QTRY_VERIFY_WITH_TIMEOUT(loaded.count() > 0, 30000);  // the signal may come before wait() starts
    QVERIFY(m_controller->modelInfo());
}

// Until the context shows the sentence's translation (emptying the field first drops the one shown,
// and a translation of the sentence before, e.g. by a model just loaded, is not taken for it).
void TestUi::typeAndWait(const QString& sentence) {
    QLineEdit* edit = m_window->translatePanel()->sentenceEdit();
    edit->clear();
    QTest::keyClicks(edit, sentence);
    QTest::keyClick(edit, Qt::Key_Return);
    ViewContext* c = m_window->context();
    QTRY_VERIFY_WITH_TIMEOUT(c->result() && c->result()->source_text == sentence.toStdString(), 30000);
    QApplication::processEvents();
}

void TestUi::loadAndWait(const QString& dir) {
    QSignalSpy changed(m_window->context(), &ViewContext::modelChanged);
    m_window->context()->loadModel(dir);
    QTRY_VERIFY_WITH_TIMEOUT(changed.count() > 0, 30000);
}

void TestUi::typingTranslatesAndShowsEveryKind() {
    typeAndWait("Ein Mann geht mit dem Hund auf die Strasse.");  // QTest::keyClicks types ASCII only
    auto result = m_window->context()->result();
    QVERIFY(result);
    auto expected =
        m_core->translate("Ein Mann geht mit dem Hund auf die Strasse.", m_window->translatePanel()->options());
    QCOMPARE(result->best.ids, expected.best.ids);
    const int S = int(expected.source_pieces.size()), T = int(expected.best.pieces.size());
    AttentionExplorer* ex = m_window->views()->find<AttentionExplorer>();
    struct Case {
        AttentionKind kind;
        int rows, cols;
        const attnlab::LayerHeadMaps* maps;
    };
    for (const Case& c : {Case{AttentionKind::EncoderSelf, S, S, &expected.encoder_self},
                          Case{AttentionKind::DecoderSelf, T, T, &expected.decoder_self},
                          Case{AttentionKind::Cross, T, S, &expected.cross}}) {
        ex->select(c.kind, 1, 2);
        const attnlab::Matrix& shown = ex->view()->map();
        QCOMPARE(int(shown.size()), c.rows);
        QCOMPARE(int(shown[0].size()), c.cols);
        QCOMPARE(shown, (*c.maps)[1][2]);
        // The plot's colour map holds the same numbers.
        auto* cm = qobject_cast<QCPColorMap*>(ex->view()->plot()->plottable(0));
        QVERIFY(cm);
        QCOMPARE(cm->data()->keySize(), c.cols);
        QCOMPARE(cm->data()->valueSize(), c.rows);
        QCOMPARE(cm->data()->cell(c.cols - 1, c.rows - 1), double((*c.maps)[1][2][c.rows - 1][c.cols - 1]));
    }
    QVERIFY(ex->view()->toolTipAt(0, 0).contains(QString::fromStdString(expected.best.pieces[0])));
}

void TestUi::layerAndHeadSelectTheirMaps() {
    auto result = m_window->context()->result();
    QVERIFY(result);
    AttentionExplorer* ex = m_window->views()->find<AttentionExplorer>();
    ex->select(AttentionKind::Cross, 0, 0);
    ex->setFocus();
    QTest::keyClick(ex, Qt::Key_Right);  // head 1
    QTest::keyClick(ex, Qt::Key_Down);   // layer 1
    QCOMPARE(ex->layer(), 1);
    QCOMPARE(ex->head(), 1);
    QCOMPARE(ex->view()->map(), result->cross[1][1]);
    QVERIFY(ex->view()->map() != result->cross[0][0]);
    // The last head column is the mean over heads.
    ex->select(AttentionKind::Cross, 0, 4);
    const auto mean = AttentionGrid::meanOverHeads(result->cross[0]);
    QCOMPARE(ex->view()->map(), mean);
    double by_hand = 0;
    for (int h = 0; h < 4; ++h) by_hand += result->cross[0][h][0][0];
    QVERIFY(std::abs(mean[0][0] - by_hand / 4) < 1e-6);
    // A click on a grid cell focuses it.
    const QRect cell = [&] {
        for (int y = 0; y < ex->grid()->height(); y += 4)
            for (int x = 0; x < ex->grid()->width(); x += 4)
                if (ex->grid()->cellAt({x, y}) == std::make_pair(1, 3)) return QRect(x, y, 1, 1);
        return QRect();
    }();
    QVERIFY(cell.isValid());
    QTest::mouseClick(ex->grid(), Qt::LeftButton, {}, cell.center() + QPoint(2, 2));
    QCOMPARE(ex->layer(), 1);
    QCOMPARE(ex->head(), 3);
    QCOMPARE(ex->view()->map(), result->cross[1][3]);
}

void TestUi::exportsPngAndPdf() {
    m_window->views()->showView("attention");
    const QString png = m_dir.filePath("view.png"), pdf = m_dir.filePath("view.pdf"), json = m_dir.filePath("att.json");
    if (const auto error = m_window->exportCurrentView(png)) QFAIL(qPrintable(*error));
    QImage img(png);
    QVERIFY(!img.isNull());
    QVERIFY(img.width() >= 1200 && img.height() >= 900);
    if (const auto error = m_window->exportCurrentView(pdf)) QFAIL(qPrintable(*error));
    QFile f(pdf);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QVERIFY(f.read(5) == "%PDF-");
    QVERIFY(f.size() > 1000);
    if (const auto error = m_window->exportAttentionJson(json)) QFAIL(qPrintable(*error));
    QVERIFY(QFileInfo(json).size() > 100);
}

void TestUi::corruptPackageKeepsOldModel() {
    const auto before = m_controller->modelInfo();
    const QString bad = m_dir.filePath("bad");
    QDir().mkpath(bad);
    QFile cfg(bad + "/config.json");
    QVERIFY(cfg.open(QIODevice::WriteOnly));
    cfg.write("{ not json");
    cfg.close();
    QSignalSpy failed(m_window->context(), &ViewContext::failed);
    m_window->context()->loadModel(bad);
    QTRY_VERIFY_WITH_TIMEOUT(failed.count() > 0, 30000);  // the signal may come before wait() starts
    QCOMPARE(failed.first().at(0).value<Operation>(), Operation::LoadModel);
    QVERIFY2(failed.first().at(1).toString().contains("malformed JSON"), qPrintable(failed.first().at(1).toString()));
    QVERIFY(m_window->context()->lastError().contains("malformed JSON"));
    QCOMPARE(m_controller->modelInfo(), before);
    typeAndWait("Der Hund schlaeft.");  // the old model still translates
    QCOMPARE(QString::fromStdString(m_window->context()->result()->source_text), QString("Der Hund schlaeft."));
    // An empty sentence is an error message, not a crash.
    QSignalSpy err(m_window->context(), &ViewContext::failed);
    m_window->translatePanel()->sentenceEdit()->clear();
    QTest::keyClick(m_window->translatePanel()->sentenceEdit(), Qt::Key_Return);
    QTRY_VERIFY_WITH_TIMEOUT(err.count() > 0, 30000);  // the signal may come before wait() starts
    QCOMPARE(err.first().at(0).value<Operation>(), Operation::Translate);
    QVERIFY(err.first().at(1).toString().contains("empty"));
    QVERIFY(!m_window->context()->result());  // the old maps do not stay under a sentence they do not belong to
}

void TestUi::translationShowsWordProbabilitiesAndWarns() {
    // Each word's shade and hover text come from the result's word probabilities; a package whose
    // threshold every translation misses (0: no translation has probability 1) shows the warning,
    // the fixture (no confidence.json) none, and the Model tab says which.
    const QString pkg = qEnvironmentVariable("ATTNLAB_TEST_PACKAGE");
    const QString strict = m_dir.filePath("strict");
    std::filesystem::copy(pkg.toStdString(), strict.toStdString(), std::filesystem::copy_options::recursive);
    attnlab::ConfidenceCalibration c;
    c.threshold = 0.0;
    c.sentences = 1;
    attnlab::writeConfidenceCalibration(strict.toStdString(), c);
    for (const QString& dir : {strict, pkg}) {
        QSignalSpy loaded(m_controller.get(), &TranslationController::modelLoaded);
        m_window->context()->loadModel(dir);
        QTRY_VERIFY_WITH_TIMEOUT(loaded.count() > 0, 30000);
        typeAndWait("Ein Kind spielt im Garten.");
        const auto r = m_window->context()->result();
        const ConfidenceText* text = m_window->translatePanel()->translationView();
        QCOMPARE(text->text(), QString::fromStdString(r->best.text));
        QCOMPARE(text->wordCount(), int(r->words.size()));
        QVERIFY(!r->words.empty());
        for (int i = 0; i < text->wordCount(); ++i) {
            const auto& w = r->words[i];
            QCOMPARE(text->bandOfWord(i), ConfidenceText::band(w.probability));
            const QString tip = text->toolTipOfWord(i);
            QVERIFY2(tip.contains(QString::number(w.probability, 'f', 3)), qPrintable(tip));
            const double first = std::exp(r->best.token_log_probs[w.first_piece]);
            QVERIFY2(tip.contains(QString::fromStdString(r->best.pieces[w.first_piece]) + "  " +
                                  QString::number(first, 'f', 3)),
                     qPrintable(tip));
        }
        const QString warning = m_window->translatePanel()->confidenceWarning();
        const QString model = m_window->views()->find<ModelPanel>()->details()->toPlainText();
        if (dir == strict) {
            QVERIFY2(warning.contains("low confidence") && warning.contains("do not trust"), qPrintable(warning));
            QVERIFY2(model.contains("A translation is flagged when its mean probability per piece is below 1.00"),
                     qPrintable(model));
        } else {
            QVERIFY2(warning.isEmpty(), qPrintable(warning));
            QVERIFY2(model.contains("No low-confidence warning: this package has no confidence.json"),
                     qPrintable(model));
        }
    }
    QCOMPARE(ConfidenceText::band(0.95), 0);
    QCOMPARE(ConfidenceText::band(0.8), 0);
    QCOMPARE(ConfidenceText::band(0.79), 1);
    QCOMPARE(ConfidenceText::band(0.2), 2);
    QCOMPARE(ConfidenceText::band(0.01), 3);
}

void TestUi::textSizeReachesEveryPlot() {
    // At each size every plot's tick labels, axis titles and colour-scale numbers are at that size,
    // titles larger, the translation larger still; the grid's captions fit their cells and the
    // heatmap's shown labels have room (rows x line height within the axis).
    typeAndWait("Ein Mann geht mit dem Hund auf die Strasse.");
    m_window->views()->showView("attention");
    const double before = m_window->context()->textSize();
    QList<QCustomPlot*> plots = {m_window->views()->find<AttentionExplorer>()->view()->plot(),
                                 m_window->views()->find<ModelPanel>()->trainingPlot()};
    for (QCustomPlot* p : m_window->views()->find<PositionalEncodingView>()->findChildren<QCustomPlot*>()) plots << p;
    // The attention map, the training curve, the Positions tab's three sinusoid plots and its two
    // relative-position heatmaps (on a page of their own, shown for models that have them; they follow
    // the size all the same).
    QCOMPARE(plots.size(), 7);
    for (double pt : {8.0, 14.0, 20.0, 28.0}) {
        m_window->context()->setTextSize(pt, false);
        QApplication::processEvents();
        const QString at = QString("at %1 pt").arg(pt);
        for (QCustomPlot* p : plots) {
            // An attention map's piece labels shrink (down to 9 pt) where its rows are too short
            // for one at the text size, so that every piece keeps its label; the rest follow it.
            if (p == plots.front())
                QVERIFY2(p->xAxis->tickLabelFont().pointSizeF() <= pt &&
                             p->xAxis->tickLabelFont().pointSizeF() >= std::min(pt, 9.0),
                         qPrintable(at));
            else
                QCOMPARE(p->xAxis->tickLabelFont().pointSizeF(), pt);
            QCOMPARE(p->yAxis->labelFont().pointSizeF(), pt);
            for (int i = 0; i < p->plotLayout()->elementCount(); ++i) {
                if (auto* t = qobject_cast<QCPTextElement*>(p->plotLayout()->elementAt(i)))
                    QVERIFY2(std::abs(t->font().pointSizeF() - pt * kTitleScale) < 1e-9, qPrintable(at));
                if (auto* c = qobject_cast<QCPColorScale*>(p->plotLayout()->elementAt(i)))
                    QCOMPARE(c->axis()->tickLabelFont().pointSizeF(), pt);
            }
        }
        QVERIFY(m_window->translatePanel()->translationView()->displayFont().pointSizeF() > pt * kTitleScale);
        QVERIFY2(m_window->views()->find<AttentionExplorer>()->grid()->captionsFit(), qPrintable(at));
        if (pt <= 14)
            QVERIFY(!m_window->views()->find<AttentionExplorer>()->grid()->headerText(0).isEmpty());  // left out only
                                                                                                      // when cramped
        // Neighbouring labels of the heatmap's query axis are at least a line apart.
        AttentionView* v = m_window->views()->find<AttentionExplorer>()->view();
        v->plot()->replot();
        QApplication::processEvents();
        const auto ticks = v->plot()->yAxis->ticker().dynamicCast<QCPAxisTickerText>()->ticks().keys();
        QVERIFY(!ticks.isEmpty() && v->shownQueryLabels().size() == ticks.size());
        const double row = v->plot()->axisRect()->height() / double(v->map().size());
        const double gap = ticks.size() > 1 ? (ticks[1] - ticks[0]) * row : 1e9;
        QVERIFY2(gap + 1 >= QFontMetrics(v->plot()->yAxis->tickLabelFont()).height(),
                 qPrintable(at + QString(": labels %1 px apart").arg(gap)));
    }
    m_window->context()->setTextSize(before, false);
}

void TestUi::shortcutsWorkFromTheSentenceField() {
    typeAndWait("Ein Hund.");
    QLineEdit* edit = m_window->translatePanel()->sentenceEdit();
    edit->setFocus();
    QApplication::setActiveWindow(m_window.get());
    QVERIFY(QTest::qWaitForWindowActive(m_window.get()));
    AttentionExplorer* ex = m_window->views()->find<AttentionExplorer>();
    ex->select(AttentionKind::Cross, 0, 0);
    QTest::keyClick(edit, Qt::Key_2, Qt::AltModifier);
    QCOMPARE(ex->kind(), AttentionKind::DecoderSelf);
    QTest::keyClick(edit, Qt::Key_Down, Qt::AltModifier);
    QTest::keyClick(edit, Qt::Key_Right, Qt::AltModifier);
    QTest::keyClick(edit, Qt::Key_Right, Qt::AltModifier);
    QCOMPARE(ex->layer(), 1);
    QCOMPARE(ex->head(), 2);
    QTest::keyClick(edit, Qt::Key_3, Qt::ControlModifier);
    QCOMPARE(ex->kind(), AttentionKind::Cross);
    QCOMPARE(edit->text(), QString("Ein Hund."));  // nothing typed into the sentence
    QVERIFY(edit->hasFocus());
    const QString help = m_window->shortcutsHtml();
    for (const char* s : {"Alt+2", "Next layer", "Next head", "Larger text", "Ctrl+E"})
        QVERIFY2(help.contains(s), qPrintable(help));
}

void TestUi::palettesReachTheMapsAndExports() {
    // The grid's cells and the heatmap use the chosen map; an export made with viridis holds its
    // colour for the map's smallest weight, one made with the default white -> blue does not.
    typeAndWait("Ein Mann geht mit dem Hund auf die Strasse.");
    m_window->views()->showView("attention");
    AttentionExplorer* ex = m_window->views()->find<AttentionExplorer>();
    ex->select(AttentionKind::Cross, 0, 0);
    float lo = 1;
    for (const auto& row : ex->view()->map()) lo = std::min(lo, *std::min_element(row.begin(), row.end()));
    const QColor target = paletteColor(Palette::Viridis, lo);
    auto near = [&](const QString& path) {
        const QImage img = QImage(path).convertToFormat(QImage::Format_RGB32);
        int n = 0;
        for (int y = 0; y < img.height(); y += 2)
            for (int x = 0; x < img.width(); x += 2) {
                const QColor c(img.pixel(x, y));
                n += std::abs(c.red() - target.red()) + std::abs(c.green() - target.green()) +
                         std::abs(c.blue() - target.blue()) <=
                     6;
            }
        return n;
    };
    const QString blues = m_dir.filePath("blues.png"), viridis = m_dir.filePath("viridis.png");
    m_window->context()->setPalette(Palette::Blues, false);
    QVERIFY(!m_window->exportCurrentView(blues));
    m_window->context()->setPalette(Palette::Viridis);
    QVERIFY(!m_window->exportCurrentView(viridis));
    QCOMPARE(QSettings().value("colorMap").toString(), QString("viridis"));
    QVERIFY2(near(viridis) > 20, qPrintable(QString::number(near(viridis))));
    QCOMPARE(near(blues), 0);
    auto* cm = qobject_cast<QCPColorMap*>(ex->view()->plot()->plottable(0));
    for (double v : {0.0, 0.3, 1.0}) {
        const QColor a = QColor::fromRgb(cm->gradient().color(v, QCPRange(0, 1))),
                     b = paletteColor(Palette::Viridis, v);
        QVERIFY(std::abs(a.red() - b.red()) + std::abs(a.green() - b.green()) + std::abs(a.blue() - b.blue()) <= 6);
    }
    for (int i = 0; i < kPaletteCount; ++i) QCOMPARE(paletteFromKey(paletteKey(Palette(i))), Palette(i));
    m_window->context()->setPalette(Palette::Blues);
}

void TestUi::emptyWindowSaysWhatToDo() {
    // A window with no model: no axes, no colour scale, a sentence that says what to do, and an
    // export that says why there is nothing to export.
    TranslationController controller;
    MainWindow window(&controller, /*error_dialogs=*/false);
    AttentionView* v = window.views()->find<AttentionExplorer>()->view();
    QVERIFY2(v->message().contains("No model loaded: File > Open model"), qPrintable(v->message()));
    QVERIFY(!v->plot()->axisRect()->visible());
    for (int i = 0; i < v->plot()->plotLayout()->elementCount(); ++i)
        if (auto* c = qobject_cast<QCPColorScale*>(v->plot()->plotLayout()->elementAt(i))) QVERIFY(!c->visible());
    const auto error = window.exportCurrentView(m_dir.filePath("empty.png"));
    QVERIFY(error && error->contains("translate a sentence first"));
    // With a model and nothing translated yet, it says to type a sentence.
    QSignalSpy loaded(&controller, &TranslationController::modelLoaded);
    window.context()->loadModel(qEnvironmentVariable("ATTNLAB_TEST_PACKAGE"));
    QTRY_VERIFY_WITH_TIMEOUT(loaded.count() > 0, 30000);
    // The spy records in the worker thread; the window's own slot runs when the event loop does.
    QTRY_VERIFY2_WITH_TIMEOUT(v->message().contains("Type a sentence"), qPrintable(v->message()), 10000);
    // The direction switch lists the bundled models; this package is none of them.
    const QStringList dirs = window.translatePanel()->directions();
    QCOMPARE(dirs.size(), int(attnlab::bundledModels().size()) + 1);
    QVERIFY2(dirs.first().startsWith("de → en  (multi30k-de-en)"), qPrintable(dirs.join(", ")));
    // It is named by its languages and folder, not "other model".
    QCOMPARE(window.translatePanel()->currentDirection(), QString("de → en  (ui-package)"));
}

void TestUi::positionalHeatmapEqualsFormula() {
    PositionalEncodingView* pe = m_window->views()->find<PositionalEncodingView>();
    pe->setShape(40, 16);
    const auto& t = pe->table();
    QCOMPARE(int(t.size()), 40);
    QCOMPARE(int(t[0].size()), 16);
    auto* cm = qobject_cast<QCPColorMap*>(pe->heatmap()->plottable(0));
    QVERIFY(cm);
    for (auto [pos, dim] : std::vector<std::pair<int, int>>{{0, 0}, {3, 1}, {17, 6}, {39, 15}}) {
        const double angle = pos / std::pow(10000.0, double(dim - dim % 2) / 16);
        const double expected = dim % 2 ? std::cos(angle) : std::sin(angle);
        QVERIFY(std::abs(cm->data()->cell(dim, pos) - expected) < 1e-6);
    }
}

void TestUi::droppedFolderOpensAndIsRemembered() {
    // A copy of the fixture package under another name; dropping a file inside it opens the folder.
    const QString pkg = qEnvironmentVariable("ATTNLAB_TEST_PACKAGE"), copy = m_dir.filePath("dropped-model");
    QDir().mkpath(copy);
    for (const QString& f : QDir(pkg).entryList(QDir::Files)) QVERIFY(QFile::copy(pkg + "/" + f, copy + "/" + f));
    QMimeData mime;
    mime.setUrls({QUrl::fromLocalFile(copy + "/config.json")});
    QDragEnterEvent enter(QPoint(20, 20), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(m_window.get(), &enter);
    QVERIFY(enter.isAccepted());
    QSignalSpy loaded(m_controller.get(), &TranslationController::modelLoaded);
    QDropEvent drop(QPointF(20, 20), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(m_window.get(), &drop);
    QTRY_VERIFY_WITH_TIMEOUT(loaded.count() > 0, 30000);
    QCOMPARE(QFileInfo(QString::fromStdString(m_controller->modelInfo()->package_dir)).canonicalFilePath(),
             QFileInfo(copy).canonicalFilePath());
    // The spy records in the loading thread; the window hears of it through a queued call.
    QTRY_VERIFY_WITH_TIMEOUT(m_window->windowTitle().contains("dropped-model"), 10000);
    // Remembered, newest first, in QSettings and in File > Open recent.
    const QStringList recent = QSettings().value(RecentModels::kSettingsKey).toStringList();
    QCOMPARE(recent.size(), 2);
    QCOMPARE(QFileInfo(recent[0]).canonicalFilePath(), QFileInfo(copy).canonicalFilePath());
    QCOMPARE(QFileInfo(recent[1]).canonicalFilePath(), QFileInfo(pkg).canonicalFilePath());
    QMenu* menu = nullptr;
    for (QMenu* m : m_window->findChildren<QMenu*>())
        if (m->title() == QObject::tr("&Recent models")) menu = m;
    QVERIFY(menu);
    QCOMPARE(menu->actions().size(), 2);
    QCOMPARE(menu->actions().first()->data().toString(), recent[0]);
    QVERIFY(menu->actions().first()->text().contains("dropped-model"));  // the folder's name, then its path
    QCOMPARE(menu->actions().first()->shortcut(), QKeySequence(QObject::tr("Ctrl+Shift+1")));
    typeAndWait("Der Hund schlaeft.");  // the dropped model translates
    QVERIFY(m_window->context()->result());
    // Ctrl+Shift+2 opens the second: the fixture again.
    QSignalSpy changed(m_window->context(), &ViewContext::modelChanged);
    QTest::keyClick(m_window.get(), Qt::Key_2, Qt::ControlModifier | Qt::ShiftModifier);
    QTRY_VERIFY_WITH_TIMEOUT(changed.count() > 0, 30000);
    QCOMPARE(QFileInfo(QString::fromStdString(m_window->context()->model()->package_dir)).canonicalFilePath(),
             QFileInfo(pkg).canonicalFilePath());
}

void TestUi::modelPanelShowsCardAndTrainingLog() {
    const QString pkg = qEnvironmentVariable("ATTNLAB_TEST_PACKAGE");
    auto copyAs = [&](const QString& name) {
        const QString dir = m_dir.filePath(name);
        QDir().mkpath(dir);
        for (const QString& f : QDir(pkg).entryList(QDir::Files)) QFile::copy(pkg + "/" + f, dir + "/" + f);
        return dir;
    };
    auto write = [](const QString& path, const QByteArray& text) {
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(text);
    };
    auto open = [&](const QString& dir) {
        m_window->context()->loadModel(dir);
        QTRY_VERIFY_WITH_TIMEOUT(m_window->windowTitle().endsWith(QFileInfo(dir).fileName()), 30000);
    };
    ModelPanel* panel = m_window->views()->find<ModelPanel>();

    // The fixture package has neither a card nor a log.
    open(copyAs("plain-model"));
    QCOMPARE(panel->trainingPlot()->graphCount(), 0);
    QVERIFY2(panel->trainingMessage().contains("no training_log.tsv"), qPrintable(panel->trainingMessage()));
    QVERIFY(panel->card()->toPlainText().isEmpty());
    QVERIFY(panel->details()->toPlainText().contains("plain-model"));

    // With both: the card rendered from Markdown, one curve per column, values as written.
    const QString logged = copyAs("logged-model");
    write(logged + "/MODEL_CARD.md", "# Model card: test\n\n| set | BLEU |\n| --- | ---: |\n| test | 12.5 |\n");
    write(logged + "/training_log.tsv",
          "epoch\tstep\ttrain_loss\tvalid_loss\tvalid_bleu\n1\t10\t7.5\t6.25\t0.5\n2\t20\t5.0\t4.75\t3.25\n3\t30\t4."
          "0\t4.5\t6.0\n");
    open(logged);
    QVERIFY(panel->trainingMessage().isEmpty());
    QVERIFY(panel->card()->toPlainText().contains("Model card: test"));
    QVERIFY(panel->card()->toPlainText().contains("12.5"));
    QCustomPlot* plot = panel->trainingPlot();
    QCOMPARE(plot->graphCount(), 3);
    const QList<QVector<double>> expected = {{7.5, 5.0, 4.0}, {6.25, 4.75, 4.5}, {0.5, 3.25, 6.0}};
    for (int g = 0; g < 3; ++g) {
        QCOMPARE(plot->graph(g)->data()->size(), 3);
        for (int i = 0; i < 3; ++i) {
            QCOMPARE(plot->graph(g)->data()->at(i)->key, double(i + 1));
            QCOMPARE(plot->graph(g)->data()->at(i)->value, expected[g][i]);
        }
    }
    QCOMPARE(plot->graph(2)->valueAxis(), plot->yAxis2);  // BLEU on its own axis
    // The Model tab's figure exports like the others.
    m_window->views()->showView("model");
    const QString png = m_dir.filePath("training.png");
    QVERIFY(!m_window->exportCurrentView(png));
    QVERIFY(!QImage(png).isNull());

    // A malformed log is named, and the model still loads.
    const QString broken = copyAs("broken-log-model");
    write(broken + "/training_log.tsv", "epoch\ttrain_loss\n1\t2.0\n2\n");
    open(broken);
    QCOMPARE(plot->graphCount(), 0);
    QVERIFY2(panel->trainingMessage().contains("training_log.tsv: line 3 has 1 fields, the header has 2"),
             qPrintable(panel->trainingMessage()));
    m_window->views()->setCurrentIndex(0);
}

void TestUi::decodingTabStepsThroughTheSearch() {
    typeAndWait("Eine Frau liest ein Buch im Park.");
    const auto r = m_window->context()->result();
    QVERIFY(r && !r->trace.empty());  // the window always records the search
    DecodingView* d = m_window->views()->find<DecodingView>();
    QCOMPARE(d->stepCount(), int(r->best.ids.size()));
    const int t = std::min(2, d->stepCount() - 1);
    d->slider()->setFocus();
    QTest::keyClick(d->slider(), Qt::Key_Home);
    for (int i = 0; i < t; ++i) QTest::keyClick(d->slider(), Qt::Key_Right);  // keys move the step
    QCOMPARE(d->step(), t);
    // The candidates are the result's for that step, with their probabilities on hover.
    const auto& st = r->steps[t];
    QCOMPARE(d->candidates()->count(), int(st.candidates.size()));
    QVERIFY(d->candidates()->toolTipAt(0).contains(QString::fromStdString(st.candidates[0].piece)));
    QVERIFY(d->candidates()->toolTipAt(0).contains(QString::number(st.candidates[0].probability, 'g', 5)));
    // The prefix holds the pieces chosen before this step.
    for (int i = 0; i < t; ++i)
        QVERIFY(d->prefixText().contains(QString::fromStdString(r->best.pieces[i]).toHtmlEscaped()));
    // This step's cross-attention row of every layer and head, layer-major.
    const auto& rows = d->crossRows()->map();
    const int H = int(r->cross[0].size());
    QCOMPARE(int(rows.size()), int(r->cross.size()) * H);
    QCOMPARE(rows[1 * H + 2], r->cross[1][2][t]);
    // The tree: the first step's hypotheses at the top, the next steps under their parents.
    QCOMPARE(d->tree()->topLevelItemCount(), int(r->trace[0].hypotheses.size()));
    QCOMPARE(d->tree()->topLevelItem(0)->text(0), QString::fromStdString(r->trace[0].hypotheses[0].piece));
    int children = 0;
    for (int i = 0; i < d->tree()->topLevelItemCount(); ++i) children += d->tree()->topLevelItem(i)->childCount();
    if (t >= 1) QCOMPARE(children, int(r->trace[1].hypotheses.size()));
    QVERIFY(d->comparisonText().contains(QString::fromStdString(r->best.text).toHtmlEscaped()));
}

void TestUi::decodingTabScoresATypedTranslation() {
    const auto free = m_window->context()->result();
    QVERIFY(free && free->prefixTokens() == 0);
    DecodingView* d = m_window->views()->find<DecodingView>();
    m_window->views()->showView("decoding");
    QSignalSpy scored(m_controller.get(), &TranslationController::pairScored);
    // A translation of one's own: each piece's log-probability and </s>'s, the least likely named.
    d->scoreField()->setText(QStringLiteral("A woman reads a book."));
    QTest::keyClick(d->scoreField(), Qt::Key_Return);
    QTRY_VERIFY_WITH_TIMEOUT(scored.count() > 0, 30000);
    const auto mine = scored.takeFirst().at(0).value<ResultPtr>();
    QCOMPARE(mine->source_text, free->source_text);
    QCOMPARE(mine->best.pieces.back(), std::string("</s>"));
    const auto& lp = mine->best.token_log_probs;
    QCOMPARE(lp.size(), mine->best.pieces.size());
    const size_t weakest = size_t(std::min_element(lp.begin(), lp.end()) - lp.begin());
    QTRY_VERIFY(d->comparisonText().contains("Yours:"));
    QVERIFY(d->comparisonText().contains(QStringLiteral("least likely: <b>%1</b>")
                                             .arg(QString::fromStdString(mine->best.pieces[weakest]).toHtmlEscaped())));
    QVERIFY(d->comparisonText().contains("Free:"));
    // The field has room for a sentence beside the what-if row's (a person types a whole translation).
    QVERIFY2(d->scoreField()->width() >= 12 * d->scoreField()->fontMetrics().averageCharWidth(),
             qPrintable(QString::number(d->scoreField()->width())));
    const QString shot = QDir::temp().filePath("attnlab-decoding-scored.png");
    QVERIFY(m_window->grab().save(shot));
    qInfo("the Decoding tab with a scored translation: %s", qPrintable(shot));
    // Another sentence drops it: the score belonged to the sentence it was typed for.
    typeAndWait("Ein Mann liest.");
    QVERIFY(!d->comparisonText().contains("Yours:"));
    typeAndWait("Eine Frau liest ein Buch im Park.");  // what the next test steps through
}

namespace {
// The fixture package served as a repository of a stand-in for the hub, slowly (40 ms per 16 kB of its
// weights: long enough to see and to cancel); HF_ENDPOINT and HF_HUB_CACHE point the app at it.
std::unique_ptr<attnlab::testing::FakeHub> fixtureOnAHub(const QString& dir, const std::string& repo) {
    attnlab::testing::Files files;
    for (const auto& e :
         std::filesystem::directory_iterator(qEnvironmentVariable("ATTNLAB_TEST_PACKAGE").toStdString())) {
        std::ifstream in(e.path(), std::ios::binary);
        files[e.path().filename().string()] = {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    }
    auto hub = std::make_unique<attnlab::testing::FakeHub>(dir + "/hub");
    hub->addRepo(repo, files);
    hub->setFaults({{"slow", {{"model.safetensors", 40}}}});
    hub->start();
    qputenv("HF_ENDPOINT", QByteArray::fromStdString(hub->endpoint()));
    qputenv("HF_HUB_CACHE", (dir + "/cache").toUtf8());
    qunsetenv("HF_HUB_OFFLINE");
    qunsetenv("HF_TOKEN");
    return hub;
}

attnlab::HubCatalogEntry catalogEntry(std::string repo, std::string languages, std::string source) {
    attnlab::HubCatalogEntry e;
    e.repo = std::move(repo);
    e.family = "OPUS-MT";
    e.source = {std::move(source)};
    e.target = {"en"};
    e.languages = std::move(languages);
    e.size_bytes = 298'000'000;
    e.licence = "CC-BY-4.0";
    return e;
}

// The filter by language name and by pair; nothing a person reads cut: every cell of the row and every
// header fits its column.
void checkCatalogTable(GetModelDialog& dialog, const QString& repo) {
    QCOMPARE(dialog.visibleRows(), 2);
    dialog.setFilter("german");
    QCOMPARE(dialog.visibleRows(), 1);
    dialog.setFilter("de-en");
    QCOMPARE(dialog.visibleRows(), 1);
    QVERIFY(dialog.select(repo));
    QTableWidget* table = dialog.table();
    QCOMPARE(table->item(0, GetModelDialog::InCache)->text(), QObject::tr("no"));
    QCOMPARE(table->item(0, GetModelDialog::Size)->text(), QString("298.0 MB"));
    const QFontMetrics fm(table->font());
    for (int c = 0; c < GetModelDialog::ColumnCount; ++c) {
        QVERIFY2(table->columnWidth(c) >= fm.horizontalAdvance(table->item(0, c)->text()),
                 qPrintable(table->item(0, c)->text()));
        QVERIFY2(table->columnWidth(c) >= fm.horizontalAdvance(table->horizontalHeaderItem(c)->text()),
                 qPrintable(table->horizontalHeaderItem(c)->text()));
    }
}
}  // namespace

// File › Get a model…: the catalog filtered to a language, the chosen model got from a stand-in for the
// hub with its progress in the window (cancelled once, then resumed), opened, named by its hub name in
// the title and File › Recent models, translating as its folder does. ATTNLAB_SHOTS=DIR keeps pictures
// of the dialog and the download panel to look at.
void TestUi::getAModelByNameWithProgress() {
    const std::string repo = "attnlab/fixture-de-en";
    QTemporaryDir dir;
    const auto hub = fixtureOnAHub(dir.path(), repo);
    GetModelDialog dialog(m_window->context(),
                          {catalogEntry(repo, "German → English", "de"),
                           catalogEntry("Helsinki-NLP/opus-mt-fr-en", "French → English", "fr")},
                          m_window.get());
    dialog.show();
    QVERIFY(QTest::qWaitForWindowExposed(&dialog));
    checkCatalogTable(dialog, QString::fromStdString(repo));
    const QString shots = qEnvironmentVariable("ATTNLAB_SHOTS");
    if (!shots.isEmpty()) QVERIFY(dialog.grab().save(shots + "/get-a-model.png"));
    ViewContext* c = m_window->context();
    QSignalSpy ended(c, &ViewContext::fetchEnded);
    QPushButton* get = nullptr;
    for (QPushButton* b : dialog.findChildren<QPushButton*>())
        if (b->text() == QObject::tr("&Get and open")) get = b;
    QVERIFY(get && get->isEnabled());
    get->click();
    QVERIFY(!dialog.isVisible());
    auto* panel = m_window->findChild<DownloadPanel*>();
    QVERIFY(panel && panel->isVisible());
    QTRY_VERIFY_WITH_TIMEOUT(panel->findChild<QProgressBar*>()->value() > 0, 20000);  // bytes arrive, shown
    bool mentions = false;
    for (QLabel* l : panel->findChildren<QLabel*>()) mentions = mentions || l->text().contains(" of ");
    QVERIFY(mentions);
    // a notice (a file of the cache set aside) stays in sight on a line of its own, as plain text
    attnlab::HubProgress notice;
    notice.notice = "<b>blobs/x.incomplete</b> was a FIFO (named pipe): set aside";
    Q_EMIT c->fetchProgress(notice);
    bool noticed = false;
    for (QLabel* l : panel->findChildren<QLabel*>())
        noticed = noticed || (l->isVisible() && l->textFormat() == Qt::PlainText &&
                              l->text() == QString::fromStdString(notice.notice));
    QVERIFY(noticed);
    if (!shots.isEmpty()) QVERIFY(m_window->grab().save(shots + "/downloading.png"));
    panel->findChild<QPushButton*>()->click();  // Cancel
    QTRY_COMPARE_WITH_TIMEOUT(ended.count(), 1, 10000);
    QVERIFY(!panel->isVisible());
    QVERIFY(!attnlab::cachedHubSnapshot(*attnlab::parseHubModelName(repo), attnlab::hubOptionsFromEnvironment()));
    // Again, at full speed: it goes on from what arrived (a Range request) and opens.
    hub->setFaults(nlohmann::json::object());
    QSignalSpy changed(c, &ViewContext::modelChanged);
    c->openModel(QString::fromStdString(repo));
    QTRY_VERIFY_WITH_TIMEOUT(changed.count() > 0, 30000);
    bool resumed = false;
    for (const auto& r : hub->requests()) resumed = resumed || !r["range"].get<std::string>().empty();
    QVERIFY(resumed);
    QTRY_VERIFY_WITH_TIMEOUT(m_window->windowTitle().contains(QString::fromStdString(repo)), 10000);
    // the model's label beside the sentence names it too, not its snapshot's commit
    QVERIFY2(attnlab::ui::modelLabel(*c->model()).contains(QString::fromStdString(repo)),
             qPrintable(attnlab::ui::modelLabel(*c->model())));
    QCOMPARE(RecentModels::entries().first(), QString::fromStdString(repo));
    typeAndWait("Der Hund schlaeft.");
    const auto expected = m_core->translate("Der Hund schlaeft.", m_window->translatePanel()->options());
    QCOMPARE(c->result()->best.ids, expected.best.ids);
    loadAndWait(qEnvironmentVariable("ATTNLAB_TEST_PACKAGE"));  // the snapshot goes with the temporary folder
    qunsetenv("HF_ENDPOINT");
    qunsetenv("HF_HUB_CACHE");
}

// File › Get a model… › Argos Translate against a stand-in index (fake_hub.py's /files/ route): the index listed
// with what is installed, filtered, a package installed with the bar moving and then removed, and after each the
// window's direction switch as the packages folder is (the archive holds metadata.json and model/model.bin as
// bytes: installing reads no model). ATTNLAB_SHOTS=DIR keeps a picture of the tab.
void TestUi::argosTabInstallsAndRemoves() {
    QTemporaryDir dir;
    attnlab::testing::FakeHub hub(dir.filePath("hub"));
    const QString archive = QString::fromStdString(hub.root()) + "/argos/translate-en_xx-1_0.argosmodel";
    QDir().mkpath(QFileInfo(archive).absolutePath());
    QProcess zip;
    zip.start("/usr/bin/python3",
              {"-c",
               "import sys, zipfile\n"
               "z = zipfile.ZipFile(sys.argv[1], 'w')\n"
               "z.writestr('translate-en_xx-1_0/metadata.json', '{\"from_code\": \"en\", \"to_code\": \"xx\", "
               "\"from_name\": \"English\", \"to_name\": \"Xish\", \"package_version\": \"1.0\"}')\n"
               "z.writestr('translate-en_xx-1_0/model/model.bin', b'\\0' * 300000)\n"
               "z.close()\n",
               archive});
    QVERIFY(zip.waitForFinished(30000) && zip.exitCode() == 0);
    hub.start();
    const nlohmann::json index =
        nlohmann::json::array({{{"from_code", "en"},
                                {"from_name", "English"},
                                {"to_code", "xx"},
                                {"to_name", "Xish"},
                                {"package_version", "1.0"},
                                {"size", QFileInfo(archive).size()},
                                {"license", "CC0-1.0"},
                                {"links", {hub.endpoint() + "/files/argos/translate-en_xx-1_0.argosmodel"}}}});
    attnlab::testing::writeInto(hub.root() + "/argos/index.json", index.dump());
    qputenv("ARGOS_PACKAGE_INDEX", QByteArray::fromStdString(hub.endpoint() + "/files/argos/"));
    qputenv("ARGOS_PACKAGES_DIR", dir.filePath("packages").toUtf8());
    qputenv("XDG_CACHE_HOME", dir.filePath("cache").toUtf8());
    qputenv("XDG_CONFIG_HOME", dir.filePath("config").toUtf8());
    GetModelDialog dialog(m_window->context(), {catalogEntry("attnlab/x", "German → English", "de")}, m_window.get());
    connect(&dialog, &GetModelDialog::argosPackagesChanged, m_window.get(), &MainWindow::fillModelsMenu);
    dialog.showArgos();
    dialog.show();
    QVERIFY(QTest::qWaitForWindowExposed(&dialog));
    ArgosIndexPanel* panel = dialog.argosPanel();
    QTRY_VERIFY_WITH_TIMEOUT(!panel->busy() && panel->table()->rowCount() == 1, 20000);
    QCOMPARE(panel->status(), QString("1 package in the index."));
    panel->setFilter("fr");
    QCOMPARE(panel->visibleRows(), 0);
    panel->setFilter("en-xx");
    QVERIFY(panel->select("en-xx"));
    QTableWidget* table = panel->table();
    QCOMPARE(table->item(0, ArgosIndexPanel::Licence)->text(), QString("CC0-1.0"));
    const QFontMetrics fm(table->font());
    for (int c = 0; c < ArgosIndexPanel::ColumnCount; ++c)
        QVERIFY2(table->columnWidth(c) >= fm.horizontalAdvance(table->horizontalHeaderItem(c)->text()),
                 qPrintable(table->horizontalHeaderItem(c)->text()));
    const QString shots = qEnvironmentVariable("ATTNLAB_SHOTS");
    if (!shots.isEmpty()) QVERIFY(dialog.grab().save(shots + "/argos-tab.png"));
    const auto listed = [this] {
        return m_window->translatePanel()->directions().join('\n').contains("en → xx  (Argos: translate-en_xx-1_0)");
    };
    QVERIFY(!listed());
    // slowly, then cancelled: what arrived stays for the next Install, which asks for the rest
    const std::string served = "argos/translate-en_xx-1_0.argosmodel";
    hub.setFaults({{"drip", {{served, {4096, 40}}}}});
    panel->install();
    QVERIFY(panel->busy());
    auto* bar = panel->findChild<QProgressBar*>();
    QTRY_VERIFY_WITH_TIMEOUT(bar->value() > 0, 20000);  // bytes arrive, shown
    QVERIFY2(panel->status().contains(" of "), qPrintable(panel->status()));
    if (!shots.isEmpty()) QVERIFY(dialog.grab().save(shots + "/argos-tab-downloading.png"));
    panel->cancel();
    QTRY_VERIFY_WITH_TIMEOUT(!panel->busy(), 10000);
    QCOMPARE(panel->status(), QObject::tr("Cancelled; what was downloaded is kept, and the next Install resumes it."));
    QVERIFY(QFileInfo(dir.filePath("cache") + "/argos-translate/downloads/translate-en_xx-1.0.argosmodel.incomplete")
                .size() > 0);
    QVERIFY(!listed());
    hub.setFaults(nlohmann::json::object());
    hub.clearLog();
    panel->install();
    QTRY_VERIFY_WITH_TIMEOUT(!panel->busy(), 30000);
    QVERIFY2(hub.requests().back()["range"].get<std::string>().rfind("bytes=", 0) == 0,
             qPrintable(QString::fromStdString(hub.requests().back().dump())));
    const QString installed = dir.filePath("packages") + "/translate-en_xx-1_0";
    QCOMPARE(panel->status(), "Installed en-xx into " + installed + ".");
    QCOMPARE(table->item(0, ArgosIndexPanel::Installed)->text(), QObject::tr("yes"));
    QVERIFY(listed());
    if (!shots.isEmpty()) QVERIFY(dialog.grab().save(shots + "/argos-tab-installed.png"));
    panel->remove();
    QCOMPARE(panel->status(), "Removed " + installed + ".");
    QVERIFY(!QFileInfo::exists(installed));
    QVERIFY(!listed());
    QVERIFY(table->item(0, ArgosIndexPanel::Installed)->text().isEmpty());
    for (const char* v : {"ARGOS_PACKAGE_INDEX", "ARGOS_PACKAGES_DIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME"})
        qunsetenv(v);
}

void TestUi::computeTypeSwitchReloadsAndIsRemembered() {
    QComboBox* types = m_window->translatePanel()->computeTypes();
    QCOMPARE(types->count(), 3);
    const int i8 = types->findData(QStringLiteral("int8"));
    const auto why = attnlab::computeTypeUnavailable("int8");
    // What this machine cannot run is offered disabled, saying why.
    const auto* items = qobject_cast<const QStandardItemModel*>(types->model());
    QVERIFY(items);
    QCOMPARE(items->item(i8)->isEnabled(), !why);
    if (why) {
        QCOMPARE(types->itemData(i8, Qt::ToolTipRole).toString(), QString::fromStdString(*why));
        return;
    }
    auto* c = m_window->context();
    const QString dir = QString::fromStdString(c->model()->package_dir);
    // The context's modelChanged, not the controller's modelLoaded: that one is recorded on the loading
    // thread before the context has taken the model (and remembered its compute type) on this one.
    auto switchTo = [&](const QString& type) {
        QSignalSpy changed(c, &ViewContext::modelChanged);
        c->setComputeType(type);
        QTRY_VERIFY_WITH_TIMEOUT(changed.count() > 0, 30000);
    };
    switchTo(QStringLiteral("int8"));
    QTRY_COMPARE(c->model()->compute_type, std::string("int8"));
    QCOMPARE(types->currentData().toString(), QStringLiteral("int8"));
    // Opened again, the model computes as it did last time.
    QSignalSpy changed(c, &ViewContext::modelChanged);
    c->loadModel(dir);
    QTRY_VERIFY_WITH_TIMEOUT(changed.count() > 0, 30000);
    QTRY_COMPARE(c->model()->compute_type, std::string("int8"));
    switchTo(QStringLiteral("float32"));
    QTRY_COMPARE(c->model()->compute_type, std::string("float32"));
    QSettings().remove("computeType");  // a later run starts from float32 whatever happened here
}

void TestUi::candidateClickForcesAndEveryViewFollows() {
    const auto free = m_window->context()->result();
    QVERIFY(free);
    DecodingView* d = m_window->views()->find<DecodingView>();
    m_window->views()->showView("decoding");
    d->setStep(1);
    const auto& cands = free->steps[1].candidates;
    QVERIFY(cands.size() >= 2);
    int other = cands[0].id == free->best.ids[1] ? 1 : 0;  // a candidate the search did not choose
    QSignalSpy done(m_controller.get(), &TranslationController::translationFinished);
    QCustomPlot* plot = d->candidates()->plot();
    const QPoint at(int(plot->xAxis->coordToPixel(other)), plot->axisRect()->center().y());
    QTest::mouseClick(plot, Qt::LeftButton, {}, at);
    QTRY_VERIFY_WITH_TIMEOUT(done.count() > 0, 30000);
    QTRY_VERIFY(m_window->context()->result() != free);
    const auto forced = m_window->context()->result();
    QCOMPARE(forced->forced_tokens, 2);
    QCOMPARE(forced->best.ids[0], free->best.ids[0]);
    QCOMPARE(forced->best.ids[1], cands[other].id);
    QCOMPARE(forced->source_text, free->source_text);
    // Free and forced side by side; every view follows the forced one.
    QVERIFY(d->comparisonText().contains("Free:") && d->comparisonText().contains("Forced"));
    QVERIFY(d->comparisonText().contains(QString::fromStdString(free->best.text).toHtmlEscaped()));
    QCOMPARE(d->freeResult(), free);
    m_window->views()->find<AttentionExplorer>()->select(AttentionKind::Cross, 0, 1);
    QCOMPARE(m_window->views()->find<AttentionExplorer>()->view()->map(), forced->cross[0][1]);
    QCOMPARE(d->step(), 2);  // the first step after the forced ones
    // A typed prefix: the translation begins with exactly that text.
    done.clear();
    Q_EMIT d->forceRequested({}, QStringLiteral("Der Hund"));
    QTRY_VERIFY_WITH_TIMEOUT(done.count() > 0, 30000);
    QTRY_VERIFY(QString::fromStdString(m_window->context()->result()->best.text).startsWith("Der Hund"));
    // And back to the free decoding.
    done.clear();
    Q_EMIT d->forceRequested({}, QString());
    QTRY_VERIFY_WITH_TIMEOUT(done.count() > 0, 30000);
    QTRY_COMPARE(m_window->context()->result()->forced_tokens, 0);
    QCOMPARE(m_window->context()->result()->best.ids, free->best.ids);
}

void TestUi::clickingACellExplainsItsWeight() {
    const auto r = m_window->context()->result();
    QVERIFY(r);
    m_window->views()->showView("attention");
    AttentionExplorer* ex = m_window->views()->find<AttentionExplorer>();
    ex->select(AttentionKind::Cross, 1, 2);
    QCustomPlot* plot = ex->view()->plot();
    plot->replot();
    const int row = 1, column = 2;
    const QPoint at(int(plot->xAxis->coordToPixel(column)), int(plot->yAxis->coordToPixel(row)));
    QTest::mouseClick(plot, Qt::LeftButton, {}, at);
    WeightView* w = m_window->views()->find<WeightView>();
    QTRY_VERIFY_WITH_TIMEOUT(w->explanation() != nullptr, 30000);
    QCOMPARE(m_window->views()->currentView(), static_cast<View*>(w));
    const auto e = w->explanation();
    QCOMPARE(e->cell.kind, attnlab::AttentionKind::Cross);
    QCOMPARE(e->cell.layer, 1);
    QCOMPARE(e->cell.head, 2);
    QCOMPARE(e->cell.query, row);
    QCOMPARE(e->cell.key, column);
    // The softmax row shown is the map's row (the same forward pass, in the core).
    QCOMPARE(int(e->row_weights.size()), int(r->cross[1][2][row].size()));
    for (size_t j = 0; j < e->row_weights.size(); ++j)
        QVERIFY(std::abs(e->row_weights[j] - r->cross[1][2][row][j]) < 1e-6);
    QCOMPARE(w->weights()->count(), int(e->row_weights.size()));
    QCOMPARE(w->vectors()->count(), int(e->query_vector.size()));
    QVERIFY(w->summaryText().contains(QString::number(e->dot, 'f', 4)));
    QVERIFY(w->summaryText().contains(QString::number(e->temperature, 'f', 4)));
    // The mean over heads is no one head: nothing to explain.
    m_window->views()->showView("attention");
    ex->select(AttentionKind::Cross, 1, int(r->cross[1].size()));
    QSignalSpy asked(m_controller.get(), &TranslationController::explained);
    QTest::mouseClick(plot, Qt::LeftButton, {}, at);
    QTest::qWait(200);
    QCOMPARE(asked.count(), 0);
    QCOMPARE(m_window->views()->currentView(), static_cast<View*>(ex));
}

void TestUi::inputsTabShowsTokenAndMasks() {
    const auto r = m_window->context()->result();
    QVERIFY(r);
    InputsView* in = m_window->views()->find<InputsView>();
    in->setSecondSentence("Ein Hund.");
    QSignalSpy masks(m_controller.get(), &TranslationController::masksReady);
    m_window->views()->showView("inputs");  // asks for its numbers when shown
    QTRY_VERIFY_WITH_TIMEOUT(in->token() && in->masks(), 30000);
    // The token: the core's numbers, shown as they are.
    auto t = in->token();
    QCOMPARE(t->piece, r->source_pieces[1]);
    QCOMPARE(in->embedding()->count(), int(t->embedding.size()));
    QVERIFY(in->normalized()->toolTipAt(3).contains(QString::number(t->normalized[3], 'g', 5)));
    in->selectToken(true, 0);
    QTRY_VERIFY_WITH_TIMEOUT(in->token() && in->token()->target, 30000);
    QCOMPARE(in->token()->piece, std::string("<s>"));
    // The masks of the batch: the short second sentence's padded keys are 0, the decoder's future is 0.
    const auto m = in->masks();
    QCOMPARE(m->encoder.size(), size_t(2));
    const attnlab::Matrix& pad = in->maskView(1, 0)->map();
    const int S = int(m->source_pieces[1].size());
    QCOMPARE(int(pad.size()), S);
    int zeros = 0;
    for (float v : pad[0]) zeros += v == 0.f;
    QVERIFY2(zeros > 0, "the shorter sentence is padded");
    const attnlab::Matrix& dec = in->maskView(0, 1)->map();
    QCOMPARE(dec[0][1], 0.f);  // the first query does not see the second position
    QCOMPARE(dec[1][0], 1.f);
}

namespace {
QString writeText(const QString& path, const QString& text) {
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly)) return {};
    f.write(text.toUtf8());
    return path;
}
}  // namespace

void TestUi::lessonStepsAndSessionRoundTrip() {
    const QString path = writeText(m_dir.filePath("lesson.json"), R"({"format": "attnlab-lesson", "version": 1,
      "title": "Test lesson", "steps": [
       {"title": "One", "caption": "The **first** step.",
        "view": {"tab": "attention", "sentence": "Der Hund spielt im Park.", "beam": 2, "kind": "cross", "layer": 1, "head": 2}},
       {"caption": "Decoding.", "view": {"tab": "decoding", "step": 1}},
       {"caption": "A weight.", "view": {"kind": "encoder", "layer": 0, "head": 1, "cell": [1, 2]}}]})");
    QVERIFY(!path.isEmpty());
    QVERIFY(!m_window->lessons()->openLesson(path));
    LessonPane* pane = m_window->lessons()->pane();
    QCOMPARE(pane->current(), 0);
    QVERIFY(pane->captionText().contains("The first step."));
    QTRY_VERIFY_WITH_TIMEOUT(m_window->context()->result() &&
                                 m_window->context()->result()->source_text == "Der Hund spielt im Park." &&
                                 !m_window->lessons()->viewStates()->pending(),
                             30000);
    QCOMPARE(m_window->translatePanel()->options().beam_size, 2);
    QCOMPARE(m_window->views()->find<AttentionExplorer>()->kind(), AttentionKind::Cross);
    QCOMPARE(m_window->views()->find<AttentionExplorer>()->layer(), 1);
    QCOMPARE(m_window->views()->find<AttentionExplorer>()->head(), 2);
    QCOMPARE(m_window->views()->find<AttentionExplorer>()->view()->map(), m_window->context()->result()->cross[1][2]);
    // PageDown, from wherever the focus is: the next step.
    m_window->translatePanel()->sentenceEdit()->setFocus();
    QTest::keyClick(m_window->translatePanel()->sentenceEdit(), Qt::Key_PageDown);
    QCOMPARE(pane->current(), 1);
    QCOMPARE(m_window->views()->currentView(), static_cast<View*>(m_window->views()->find<DecodingView>()));
    QCOMPARE(m_window->views()->find<DecodingView>()->step(), 1);
    QTest::keyClick(m_window.get(), Qt::Key_PageDown);
    QTRY_VERIFY_WITH_TIMEOUT(m_window->views()->find<WeightView>()->explanation() != nullptr, 30000);
    const auto e = m_window->views()->find<WeightView>()->explanation();
    QCOMPARE(e->cell.kind, attnlab::AttentionKind::EncoderSelf);
    QCOMPARE(e->cell.head, 1);
    QCOMPARE(e->cell.query, 1);
    QCOMPARE(e->cell.key, 2);
    QTest::keyClick(m_window.get(), Qt::Key_PageDown);  // past the end: stays
    QCOMPARE(pane->current(), 2);
    QTest::keyClick(m_window.get(), Qt::Key_PageUp);
    QCOMPARE(pane->current(), 1);
    QVERIFY(m_window->lessons()->goToStep(2) == std::nullopt);
    QTRY_VERIFY_WITH_TIMEOUT(m_window->views()->find<WeightView>()->explanation() != nullptr, 30000);

    // Save the view, change everything, reopen: the same view.
    const QString session = m_dir.filePath("session.json");
    QVERIFY(!m_window->lessons()->saveSession(session));
    const auto saved = m_window->lessons()->viewStates()->current();
    typeAndWait("Eine Katze schlaeft.");
    m_window->views()->find<AttentionExplorer>()->select(AttentionKind::DecoderSelf, 1, 3);
    m_window->views()->showView("model");
    QVERIFY(!m_window->lessons()->openSession(session));
    QTRY_VERIFY_WITH_TIMEOUT(m_window->context()->result()->source_text == "Der Hund spielt im Park." &&
                                 !m_window->lessons()->viewStates()->pending() &&
                                 m_window->views()->find<WeightView>()->explanation(),
                             30000);
    const auto back = m_window->lessons()->viewStates()->current();
    QCOMPARE(*back.sentence, *saved.sentence);
    QCOMPARE(*back.kind, AttentionKind::EncoderSelf);
    QCOMPARE(*back.layer, 0);
    QCOMPARE(*back.head, 1);
    QCOMPARE(*back.cell_query, 1);
    QCOMPARE(*back.cell_key, 2);
    QCOMPARE(*back.tab, *saved.tab);
    QCOMPARE(*back.beam, 2);
    QCOMPARE(attnlab::sessionJson({"", "", back}, ""), attnlab::sessionJson({"", "", saved}, ""));
}

void TestUi::malformedLessonsKeepTheWindow() {
    const auto before = m_window->context()->result();
    QVERIFY(before);
    struct Case {
        QString text, message;
    };
    const QList<Case> cases = {
        {R"({"format": "attnlab-lesson", "version": 1, "steps": [{"view": {}}, {"view": {"layer": 5}}]})",
         "bad.json: step 2: layer: 5 is out of range: the model has 2 layers (0..1)"},
        {R"({"format": "attnlab-lesson", "version": 1, "steps": [{"view": {"tab": "slides"}}]})",
         "bad.json: step 1: tab: 'slides' is not one of"},
        {R"({"format": "attnlab-lesson", "version": 1, "steps": [{"view": {"head": 4, "cell": [0, 0]}}]})",
         "bad.json: step 1: cell: a cell belongs to one head"},
        {R"({"format": "attnlab-lesson", "version": 1, "steps": [)", "bad.json: not valid JSON"},
        {R"({"format": "attnlab-lesson", "version": 1, "model": "xx-yy", "steps": [{"view": {}}]})",
         "bad.json: model: --model xx-yy: not a directory"},
    };
    for (const Case& c : cases) {
        const QString path = writeText(m_dir.filePath("bad.json"), c.text);
        const auto error = m_window->lessons()->openLesson(path);
        QVERIFY2(error && error->contains(c.message), qPrintable(error.value_or("no error")));
        QCOMPARE(m_window->context()->result(), before);  // nothing changed
    }
    const QString good = writeText(m_dir.filePath("short.json"),
                                   R"({"format": "attnlab-lesson", "version": 1, "steps": [{"view": {}}]})");
    const auto beyond = m_window->lessons()->openLesson(good, 3);
    QVERIFY2(beyond && beyond->contains("step 4 is beyond the end (the lesson has 1 steps)"),
             qPrintable(beyond.value_or("no error")));
    const auto missing = m_window->lessons()->openSession(m_dir.filePath("none.json"));
    QVERIFY(missing && missing->contains("none.json: missing file"));
}

void TestUi::presenterMode() {
    const double size = m_window->context()->textSize();
    const Palette palette = m_window->context()->palette();
    m_window->lessons()->setPresenterMode(true);
    QVERIFY(m_window->lessons()->presenterMode());
    // Text sized to the screen: 18 pt on 1080 lines, the same share of a smaller screen's height.
    const int lines = m_window->screen()->size().height();
    QCOMPARE(m_window->context()->textSize(), std::clamp(18.0 * lines / 1080.0, 12.0, 24.0));
    QCOMPARE(m_window->context()->palette(), Palette::HighContrast);
    QVERIFY(m_window->lessons()->pane()->isVisible());
    QTest::keyClick(m_window.get(), Qt::Key_Escape);
    QVERIFY(!m_window->lessons()->presenterMode());
    QCOMPARE(m_window->context()->textSize(), size);
    QCOMPARE(m_window->context()->palette(), palette);
}

void TestUi::minimalPairsSideBySide() {
    PairView* pv = m_window->views()->find<PairView>();
    m_window->views()->showView("pairs");
    pv->setSentences("Der Hund beisst den Mann.", "Den Hund beisst der Mann.");
    pv->select(AttentionKind::EncoderSelf, 1, 2);
    QSignalSpy pair(m_controller.get(), &TranslationController::pairTranslated);
    pv->requestCompare();
    QTRY_VERIFY_WITH_TIMEOUT(!pv->difference()->map().empty(), 30000);
    const auto a = m_core->translate("Der Hund beisst den Mann.", m_window->translatePanel()->options());
    const auto b = m_core->translate("Den Hund beisst der Mann.", m_window->translatePanel()->options());
    QCOMPARE(pv->mapA()->map(), a.encoder_self[1][2]);
    QCOMPARE(pv->mapB()->map(), b.encoder_self[1][2]);
    // The difference shown is the core's comparison of the two maps (tst_explain checks it).
    const auto expected = attnlab::compareMaps(a.encoder_self[1][2], b.encoder_self[1][2], a.source_pieces,
                                               b.source_pieces, a.source_pieces, b.source_pieces);
    QCOMPARE(pv->difference()->map(), expected.difference);
    QVERIFY(!expected.difference.empty());
    QVERIFY(pv->summaryText().contains(QString::fromStdString(a.best.text)));
    // The main translation is untouched by the pair.
    QVERIFY(m_window->context()->result()->source_text != "Der Hund beisst den Mann.");
}

void TestUi::headStatisticsRunShowsAndExports() {
    HeadStatsPanel* p = m_window->views()->find<HeadLabView>()->statistics();
    m_window->views()->showView("heads");
    const std::vector<std::string> src{"Ein Hund läuft.", "Zwei Kinder spielen im Park.", "Eine Frau liest."};
    const std::vector<std::string> ref{"A dog runs.", "Two children play in the park.", "A woman reads."};
    p->setCorpus(src, ref, "three pairs");
    QSignalSpy progress(m_controller.get(), &TranslationController::headLabProgress);
    QSignalSpy done(m_controller.get(), &TranslationController::headLabFinished);
    HeadLabRequest r;
    r.sources = src;
    r.references = ref;
    p->startRun(false);  // the Run button
    QTRY_VERIFY_WITH_TIMEOUT(done.count() > 0, 60000);
    QTRY_VERIFY(p->stats());
    QVERIFY(progress.count() > 0);
    // The numbers are the core's for the same corpus (teacher-forced through the references).
    const auto expect = attnlab::corpusHeadStatistics(*m_core, src, &ref, r.decoding);
    const int heads = int(expect.heads.size());
    QCOMPARE(p->table()->rowCount(), heads);
    QCOMPARE(p->stats()->heads.size(), expect.heads.size());
    p->select(int(attnlab::HeadStatistic::Entropy), attnlab::AttentionKind::Cross);
    const auto* c11 = expect.find({attnlab::AttentionKind::Cross, 1, 1});
    QVERIFY(std::abs(p->heatmap()->map()[1][1] - c11->value(attnlab::HeadStatistic::Entropy)) < 1e-5);
    QVERIFY(p->statusText().contains("teacher-forced"));
    // Sorting by a statistic orders the rows by its number.
    const int col = 2 + int(attnlab::HeadStatistic::MeanAbsOffset);
    p->table()->sortItems(col, Qt::DescendingOrder);
    for (int row = 1; row < heads; ++row)
        QVERIFY(p->table()->item(row - 1, col)->data(Qt::UserRole).toDouble() >=
                p->table()->item(row, col)->data(Qt::UserRole).toDouble());
    // Exports read back equal the core's writers.
    const QString csv = m_dir.filePath("heads.csv"), json = m_dir.filePath("heads.json");
    QVERIFY(!p->exportCsv(csv));
    QVERIFY(!p->exportJson(json));
    QFile f(csv);
    QVERIFY(f.open(QIODevice::ReadOnly));
    QCOMPARE(f.readAll().toStdString(), attnlab::headStatsCsv(*p->stats()));
    // Double-clicking a head: its most typical sentence (for the statistic shown) is translated,
    // the Attention tab shows that head.
    p->select(int(attnlab::HeadStatistic::Entropy), attnlab::AttentionKind::Cross);
    QSignalSpy typical(p, &HeadStatsPanel::sentenceRequested);
    QSignalSpy translated(m_controller.get(), &TranslationController::translationFinished);
    const int index = p->table()->item(3, 0)->data(Qt::UserRole).toInt();
    const auto& head = p->stats()->heads[size_t(index)];
    Q_EMIT p->table()->cellDoubleClicked(3, 0);
    QCOMPARE(typical.count(), 1);
    const int sentence = head.typical_sentence[size_t(attnlab::HeadStatistic::Entropy)];
    QCOMPARE(typical.at(0).at(0).toString(), QString::fromStdString(src[size_t(sentence)]));
    QTRY_VERIFY_WITH_TIMEOUT(translated.count() > 0, 30000);
    QApplication::processEvents();
    QCOMPARE(m_window->context()->result()->source_text, src[size_t(sentence)]);
    QCOMPARE(m_window->views()->currentView(), static_cast<View*>(m_window->views()->find<AttentionExplorer>()));
    QCOMPARE(int(m_window->views()->find<AttentionExplorer>()->kind()), int(head.head.kind));
    m_window->views()->showView("heads");
    QCOMPARE(p->exportCsv("/nonexistent/dir/x.csv").value_or(""),
             QString("/nonexistent/dir/x.csv: cannot be written: the folder /nonexistent/dir does not exist"));
    // Cancel: the run stops with "cancelled", the previous results stay.
    QSignalSpy failed(m_window->context(), &ViewContext::failed);
    r.importance = true;
    m_controller->runHeadLab(r);
    m_controller->cancelHeadLab();
    QTRY_VERIFY_WITH_TIMEOUT(failed.count() > 0, 60000);
    const auto cancelled = failed.takeFirst();
    QCOMPARE(cancelled.at(0).value<Operation>(), Operation::HeadLab);
    QCOMPARE(cancelled.at(1).toString(), QString("cancelled"));
    QTRY_VERIFY(p->statusText().startsWith("Cancelled"));
    QCOMPARE(p->table()->rowCount(), heads);
}

void TestUi::togglingAHeadRetranslates() {
    AblationPanel* a = m_window->views()->find<HeadLabView>()->ablation();
    typeAndWait("Ein Kind springt in einen See.");
    const auto before = m_window->context()->result();
    QVERIFY(before->ablated.empty());
    QToolButton* t = a->toggle({attnlab::AttentionKind::Cross, 1, 2});
    QVERIFY(t);
    QVERIFY(!a->toggle({attnlab::AttentionKind::Cross, 9, 0}));
    QSignalSpy done(m_controller.get(), &TranslationController::translationFinished);
    t->click();
    QTRY_VERIFY_WITH_TIMEOUT(done.count() > 0, 30000);
    QApplication::processEvents();
    const auto after = m_window->context()->result();
    QCOMPARE(after->source_text, before->source_text);
    QCOMPARE(after->ablated.size(), size_t(1));
    QVERIFY(after->ablated[0] == (attnlab::HeadRef{attnlab::AttentionKind::Cross, 1, 2}));
    // The same as the core with that head ablated; before and after both shown.
    auto o = m_window->context()->resultOptions();
    const auto core = m_core->translate(before->source_text, o);
    QCOMPARE(after->best.ids, core.best.ids);
    // The Attention tab's grid crosses the head out (cross-attention shown), and only that one.
    m_window->views()->find<AttentionExplorer>()->select(AttentionKind::Cross, 0, 0);
    QVERIFY(m_window->views()->find<AttentionExplorer>()->grid()->isAblated(1, 2));
    QVERIFY(!m_window->views()->find<AttentionExplorer>()->grid()->isAblated(1, 1));
    m_window->views()->find<AttentionExplorer>()->select(AttentionKind::EncoderSelf, 0, 0);
    QVERIFY(!m_window->views()->find<AttentionExplorer>()->grid()->isAblated(1, 2));
    QVERIFY(a->beforeText().contains(QString::fromStdString(before->best.text).toHtmlEscaped()));
    QVERIFY(a->afterText().contains("score"));
    // All heads on again: the plain translation comes back.
    QSignalSpy again(m_controller.get(), &TranslationController::translationFinished);
    a->setAblated({});
    QTRY_VERIFY_WITH_TIMEOUT(again.count() > 0, 30000);
    QApplication::processEvents();
    QVERIFY(m_window->context()->result()->ablated.empty());
    QCOMPARE(m_window->context()->result()->best.ids, before->best.ids);
    // The changed words of "after", by hand: "a big dog runs" vs "a dog runs fast" -> big? no: "fast".
    QCOMPARE(AblationPanel::changedWords({"a", "big", "dog", "runs"}, {"a", "dog", "runs", "fast"}),
             (std::vector<bool>{false, false, false, true}));
    QCOMPARE(AblationPanel::changedWords({}, {"x"}), (std::vector<bool>{true}));
}

void TestUi::alignmentDrawsGoldAndLinks() {
    AlignmentPanel* al = m_window->views()->find<HeadLabView>()->alignment();
    m_window->views()->showView("heads");
    m_window->views()->find<HeadLabView>()->pages()->setCurrentWidget(al);
    al->setPair("Ein Hund läuft im Park.", "A dog runs in the park.", "0-0 1-1 2-2 3p3 3-4 4-5");
    al->setMethod("head:1:0");
    QSignalSpy aligned(m_controller.get(), &TranslationController::pairAligned);
    al->requestAlign();
    QTRY_VERIFY_WITH_TIMEOUT(aligned.count() > 0, 30000);
    QApplication::processEvents();
    const auto forced = m_core->teacherForce({"Ein Hund läuft im Park."}, {"A dog runs in the park."}).front();
    const auto expect = attnlab::alignWords(forced, attnlab::parseAlignmentMethod("head:1:0"));
    QCOMPARE(al->alignment().links, expect.links);
    QCOMPARE(al->map()->map().size(), size_t(6));     // target words
    QCOMPARE(al->map()->map()[0].size(), size_t(5));  // source words
    for (size_t i = 0; i < expect.map.size(); ++i)
        for (size_t j = 0; j < expect.map[i].size(); ++j)
            QVERIFY(std::abs(al->map()->map()[i][j] - expect.map[i][j]) < 1e-6);
    QCOMPARE(al->overlayCount(), 6 + int(expect.links.size()));  // 6 gold frames + one dot per link
    attnlab::AlignmentCounts c;
    c.add(expect.links, attnlab::parseGoldLine("0-0 1-1 2-2 3p3 3-4 4-5", {}, "g"));
    QVERIFY2(al->summaryText().contains(QString("AER %1").arg(c.aer(), 0, 'f', 3)), qPrintable(al->summaryText()));
    // A gold link beyond the words is named, the map stays.
    al->setPair("Ein Hund läuft im Park.", "A dog runs in the park.", "0-0 7-1");
    al->setMethod("all");
    QVERIFY2(al->summaryText().contains("link 7-1 (0-based source-target) is beyond"), qPrintable(al->summaryText()));
}

// Translate as you type: a pause translates what is there; a burst of typing while a translation
// runs never lets an older result replace a newer one; the Live box switches it off.
void TestUi::liveTypingFollowsTheSentence() {
    ViewContext* c = m_window->context();
    c->setLiveTranslation(true, /*remember=*/false);
    QLineEdit* edit = m_window->translatePanel()->sentenceEdit();
    auto shownSource = [c] { return c->result() ? QString::fromStdString(c->result()->source_text) : QString(); };

    edit->clear();
    QTest::keyClicks(edit, "Ein Hund");  // no Enter
    QTRY_COMPARE_WITH_TIMEOUT(shownSource(), QString("Ein Hund"), 20000);

    // A burst: more keystrokes while the first pause's translation may still run.
    QStringList shown;
    auto conn = connect(c, &ViewContext::resultChanged, this,
                        [&](ResultPtr r) { shown << QString::fromStdString(r ? r->source_text : std::string()); });
    QTest::keyClicks(edit, " rennt");
    QTest::qWait(TranslatePanel::kLiveDelayMs + 30);  // the pause fires: "Ein Hund rennt" is sent
    QTest::keyClicks(edit, " schnell.");              // typed on at once: supersedes it
    QTRY_COMPARE_WITH_TIMEOUT(shownSource(), QString("Ein Hund rennt schnell."), 20000);
    QTest::qWait(2 * TranslatePanel::kLiveDelayMs);  // anything still in flight would land now
    disconnect(conn);
    QCOMPARE(shownSource(), QString("Ein Hund rennt schnell."));
    QVERIFY2(!shown.isEmpty() && shown.last() == "Ein Hund rennt schnell.", qPrintable(shown.join(" | ")));
    // The result equals a translation of the final text.
    const auto expected = m_core->translate("Ein Hund rennt schnell.", m_window->translatePanel()->options());
    QCOMPARE(c->result()->best.ids, expected.best.ids);

    // Off: typing alone translates nothing; Enter still does.
    c->setLiveTranslation(false, /*remember=*/false);
    QSignalSpy started(m_controller.get(), &TranslationController::translationStarted);
    QTest::keyClicks(edit, " Ja");
    QTest::qWait(3 * TranslatePanel::kLiveDelayMs);
    QCOMPARE(started.count(), 0);
    QTest::keyClick(edit, Qt::Key_Return);
    QTRY_COMPARE_WITH_TIMEOUT(shownSource(), QString("Ein Hund rennt schnell. Ja"), 20000);
    c->setLiveTranslation(true, /*remember=*/false);
}

// Issue 54: contributions are computed on demand, never on the typing path. With the weights shown, sentences
// typed (live) are translated and no contribution is computed; with ALTI+ chosen, the translation shown gets
// its ALTI+, and a sentence typed on supersedes it: what is drawn at the end is the final sentence's ALTI+,
// never the one before.
void TestUi::typingComputesNoContributions() {
    ViewContext* c = m_window->context();
    c->setLiveTranslation(true, /*remember=*/false);
    c->setMeasure(attnlab::MapMeasure::Weights);
    QLineEdit* edit = m_window->translatePanel()->sentenceEdit();
    auto shownSource = [c] { return c->result() ? QString::fromStdString(c->result()->source_text) : QString(); };
    QSignalSpy started(m_controller.get(), &TranslationController::contributionsStarted);
    edit->clear();
    QTest::keyClicks(edit, "Eine Katze");  // no Enter: each pause translates
    QTRY_COMPARE_WITH_TIMEOUT(shownSource(), QString("Eine Katze"), 20000);
    QTest::keyClicks(edit, " schlaeft.");
    QTRY_COMPARE_WITH_TIMEOUT(shownSource(), QString("Eine Katze schlaeft."), 20000);
    m_controller->waitForIdle();
    QCOMPARE(started.count(), 0);
    // ALTI+ chosen: the sentence shown is computed, once.
    auto* explorer = m_window->views()->find<AttentionExplorer>();
    c->setMeasure(attnlab::MapMeasure::AltiPlus);
    QTRY_VERIFY_WITH_TIMEOUT(c->contributions(attnlab::ContributionMethod::AltiPlus), 60000);
    QCOMPARE(started.count(), 1);
    // Typed on: the stale ALTI+ is not drawn once the new sentence is shown, the new one is.
    QTest::keyClicks(edit, " Ja.");
    QTRY_COMPARE_WITH_TIMEOUT(shownSource(), QString("Eine Katze schlaeft. Ja."), 20000);
    QTRY_VERIFY_WITH_TIMEOUT(c->contributions(attnlab::ContributionMethod::AltiPlus), 60000);
    m_controller->waitForIdle();
    QApplication::processEvents();
    const auto expected = m_core->contributions(*c->result(), attnlab::ContributionMethod::AltiPlus);
    const attnlab::Matrix& shown = explorer->view()->map();
    const attnlab::Matrix& want =
        explorer->kind() == attnlab::AttentionKind::Cross         ? expected.cross[size_t(explorer->layer())]
        : explorer->kind() == attnlab::AttentionKind::DecoderSelf ? expected.decoder_self[size_t(explorer->layer())]
                                                                  : expected.encoder_self[size_t(explorer->layer())];
    QCOMPARE(shown.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i)
        for (size_t j = 0; j < want[i].size(); ++j)
            QVERIFY(std::abs(shown[i][j] - want[i][j]) <= 1e-5);  // the same kernels, another thread
    QVERIFY(!explorer->busy()->isVisible());
    // A session saved now keeps the Method: reopened after the weights were chosen, ALTI+ is drawn again.
    const QString session = m_dir.filePath("alti-session.json");
    QVERIFY(!m_window->lessons()->saveSession(session));
    c->setMeasure(attnlab::MapMeasure::Weights);
    QVERIFY(!explorer->view()->title().contains("ALTI+"));
    QVERIFY(!m_window->lessons()->openSession(session));
    QTRY_VERIFY_WITH_TIMEOUT(!m_window->lessons()->viewStates()->pending(), 30000);
    QCOMPARE(c->measure(), attnlab::MapMeasure::AltiPlus);
    QTRY_VERIFY_WITH_TIMEOUT(explorer->view()->title().contains("ALTI+"), 30000);
    QCOMPARE(explorer->grid()->headerText(0), QString("ALTI+"));
    c->setMeasure(attnlab::MapMeasure::Weights);
}

// A new model never shows what the last one computed: the result is dropped when it loads, the
// sentence is translated again by it (live), the maps have its layers; without live translation the
// sentence row says to translate, and Enter does.
void TestUi::modelSwitchTranslatesAgain() {
    ViewContext* c = m_window->context();
    c->setLiveTranslation(true, /*remember=*/false);
    const QString pkg = qEnvironmentVariable("ATTNLAB_TEST_PACKAGE"), deep = pkg + "-deep";
    typeAndWait("Ein Hund rennt.");
    AttentionExplorer* ex = m_window->views()->find<AttentionExplorer>();
    ex->select(AttentionKind::Cross, 0, 0);
    QCOMPARE(ex->grid()->layers(), 2);
    bool stale_at_switch = true;
    auto conn = connect(c, &ViewContext::modelChanged, this, [&] { stale_at_switch = bool(c->result()); });
    QSignalSpy results(c, &ViewContext::resultChanged);
    loadAndWait(deep);
    disconnect(conn);
    QVERIFY(!stale_at_switch);  // the old maps were gone before anything showed the new model
    QTRY_VERIFY_WITH_TIMEOUT(c->result(), 30000);
    const auto r = c->result();
    QCOMPARE(QString::fromStdString(r->source_text), QString("Ein Hund rennt."));
    QCOMPARE(int(r->encoder_self.size()), 3);
    attnlab::Translator deep_core(deep.toStdString(), attnlab::TranslatorOptions{"cpu"});
    QCOMPARE(r->best.ids, deep_core.translate("Ein Hund rennt.", m_window->translatePanel()->options()).best.ids);
    QCOMPARE(ex->grid()->layers(), 3);  // the grid shows the new model's layers
    QCOMPARE(m_window->translatePanel()->currentDirection(), QString("en → de  (ui-package-deep)"));
    QCOMPARE(m_window->translatePanel()->translationView()->text(), QString::fromStdString(r->best.text));

    // Not live: the old translation goes, nothing is translated until asked.
    c->setLiveTranslation(false, /*remember=*/false);
    QSignalSpy started(m_controller.get(), &TranslationController::translationStarted);
    loadAndWait(pkg);
    m_controller->waitForIdle();
    QCOMPARE(started.count(), 0);
    QVERIFY(!c->result());
    QCOMPARE(ex->grid()->layers(), 0);
    QVERIFY(ex->view()->map().empty());
    QCOMPARE(m_window->translatePanel()->translationView()->wordCount(), 0);
    QCOMPARE(m_window->translatePanel()->sentence(), QString("Ein Hund rennt."));
    QTest::keyClick(m_window->translatePanel()->sentenceEdit(), Qt::Key_Return);
    QTRY_VERIFY_WITH_TIMEOUT(c->result(), 30000);
    QCOMPARE(c->result()->best.ids,
             m_core->translate("Ein Hund rennt.", m_window->translatePanel()->options()).best.ids);
    QCOMPARE(ex->grid()->layers(), 2);
    c->setLiveTranslation(true, /*remember=*/false);
}

// An emptied sentence has no translation: every view clears itself, and one still on its way is not
// shown when it comes.
void TestUi::emptySentenceClearsTheViews() {
    ViewContext* c = m_window->context();
    typeAndWait("Ein Kind spielt.");
    QVERIFY(c->result());
    QLineEdit* edit = m_window->translatePanel()->sentenceEdit();
    edit->selectAll();
    QTest::keyClick(edit, Qt::Key_Delete);
    QVERIFY(!c->result());
    QCOMPARE(m_window->translatePanel()->translationView()->wordCount(), 0);
    QVERIFY(m_window->translatePanel()->confidenceWarning().isEmpty());
    AttentionExplorer* ex = m_window->views()->find<AttentionExplorer>();
    QVERIFY(ex->view()->map().empty());
    QCOMPARE(ex->grid()->layers(), 0);
    // Asked for, then emptied before it came.
    QTest::keyClicks(edit, "Ein Mann liest.");
    QTest::keyClick(edit, Qt::Key_Return);
    edit->clear();
    m_controller->waitForIdle();
    QTest::qWait(50);
    QVERIFY(!c->result());
    QCOMPARE(m_window->translatePanel()->translationView()->wordCount(), 0);
}

// A head switched off while a new sentence is still being translated switches it off in that
// sentence, not in the one shown before; "All heads on" brings back its plain translation.
void TestUi::headTogglesRecomputeTheSentenceAsked() {
    ViewContext* c = m_window->context();
    c->setLiveTranslation(false, /*remember=*/false);
    typeAndWait("Ein Kind springt.");
    QLineEdit* edit = m_window->translatePanel()->sentenceEdit();
    edit->clear();
    QTest::keyClicks(edit, "Eine Frau singt.");
    QTest::keyClick(edit, Qt::Key_Return);  // its result has not come in: no event has been handled
    AblationPanel* a = m_window->views()->find<HeadLabView>()->ablation();
    a->toggle({AttentionKind::Cross, 1, 2})->click();
    m_controller->waitForIdle();
    QTRY_VERIFY_WITH_TIMEOUT(c->result() && !c->result()->ablated.empty(), 30000);
    QCOMPARE(QString::fromStdString(c->result()->source_text), QString("Eine Frau singt."));
    QVERIFY(!a->afterText().isEmpty());
    a->setAblated({});
    m_controller->waitForIdle();
    QTRY_VERIFY_WITH_TIMEOUT(c->result()->ablated.empty(), 30000);
    QApplication::processEvents();
    // The Heads page no longer shows the ablated translation beside "every head is on".
    QCOMPARE(a->afterText(), QString("(no head switched off yet)"));
    QCOMPARE(QString::fromStdString(c->result()->source_text), QString("Eine Frau singt."));
    QCOMPARE(c->result()->best.ids,
             m_core->translate("Eine Frau singt.", m_window->translatePanel()->options()).best.ids);
    c->setLiveTranslation(true, /*remember=*/false);
}

// Issue 52: heads switched off, Live on, another sentence typed: "Before (every head on)" is never the
// sentence before's; while that sentence's own plain translation is on its way the line says so, then
// it is the core's translation of the sentence with the same options, every head on, and the words of
// "After" it lacks are marked. (It read "A man rides a bicycle…" 11 s after another sentence.)
void TestUi::ablationBeforeIsOfTheSentenceShown() {
    ViewContext* c = m_window->context();
    HeadLabView* heads = m_window->views()->find<HeadLabView>();
    AblationPanel* a = heads->ablation();
    m_window->views()->showView("heads");
    heads->pages()->setCurrentWidget(a);
    QVERIFY(c->liveTranslation());
    const QString first = "Ein Kind springt in einen See.", second = "Zwei Hunde spielen im Schnee.";
    typeAndWait(first);
    std::vector<attnlab::HeadRef> off;
    for (int l = 0; l < 2; ++l)
        for (int h = 0; h < 4; ++h) off.push_back({AttentionKind::Cross, l, h});
    a->setAblated(off);
    m_controller->waitForIdle();
    QTRY_VERIFY_WITH_TIMEOUT(c->result() && c->result()->ablated.size() == off.size(), 30000);
    attnlab::DecodingOptions plain = c->resultOptions();
    plain.ablate.clear();
    const QString old_before = QString::fromStdString(m_core->translate(first.toStdString(), plain).best.text);
    QTRY_VERIFY_WITH_TIMEOUT(a->beforeResult() && a->beforeResult()->source_text == first.toStdString(), 30000);
    QVERIFY(a->beforeText().contains(old_before.toHtmlEscaped()));
    // What "Before" shows at the moment the new sentence's ablated translation is shown: that sentence's
    // plain translation, or nothing yet and a line that says so.
    QStringList seen;
    QMetaObject::Connection watch = connect(c, &ViewContext::resultChanged, this, [&](ResultPtr r) {
        if (!r || r->source_text != second.toStdString() || r->ablated.empty()) return;
        const auto shown = a->beforeResult();
        seen << (!shown ? a->beforeText() : QString::fromStdString(shown->source_text));
    });
    QLineEdit* edit = m_window->translatePanel()->sentenceEdit();
    edit->clear();
    QTest::keyClicks(edit, second);  // Live: no Return
    QTRY_VERIFY_WITH_TIMEOUT(!seen.isEmpty(), 30000);
    disconnect(watch);
    for (const QString& s : seen) QVERIFY2(s == second || s.contains("translating this sentence"), qPrintable(s));
    const auto expected_after = m_core->translate(second.toStdString(), c->resultOptions());
    const auto expected_before = m_core->translate(second.toStdString(), plain);
    QVERIFY2(expected_before.best.text != expected_after.best.text, "the heads off change this sentence");
    QTRY_VERIFY_WITH_TIMEOUT(a->beforeResult() && a->beforeResult()->source_text == second.toStdString(), 30000);
    QCOMPARE(a->beforeResult()->best.ids, expected_before.best.ids);
    QVERIFY(a->beforeText().contains(QString::fromStdString(expected_before.best.text).toHtmlEscaped()));
    // The changed words, counted against the sentence's own "Before".
    const QStringList b = QString::fromStdString(expected_before.best.text).split(' ', Qt::SkipEmptyParts);
    const QStringList af = QString::fromStdString(expected_after.best.text).split(' ', Qt::SkipEmptyParts);
    const auto changed = AblationPanel::changedWords(b, af);
    const auto n = std::count(changed.begin(), changed.end(), true);
    QVERIFY(n > 0);
    QVERIFY2(a->afterText().contains(QString("%1 of %2 words changed").arg(n).arg(af.size())),
             qPrintable(a->afterText()));
    QCOMPARE(a->afterText().count("<b style"), int(n));
    a->setAblated({});
    m_controller->waitForIdle();
    QTRY_VERIFY_WITH_TIMEOUT(c->result()->ablated.empty(), 30000);
}

// Issue 52: a long message (a 404 and its address) has a room of its own in the status bar at 1280 wide:
// a label left of the model label, not over it, cut with an ellipsis, the whole message in its tooltip;
// the model label stays whole.
void TestUi::statusMessagesKeepToTheirRoom() {
    const QSize size = m_window->size();
    m_window->resize(1280, 720);
    QApplication::processEvents();
    const QString message =
        "Get a model: HTTP 404 Not Found for https://huggingface.co/api/models/Helsinki-NLP/"
        "opus-mt-de-en-a-name-that-is-not-there/revision/main/resolve/main/config.json — the repository "
        "or its revision is not on the hub; check the name and the revision and try again";
    QStatusBar* bar = m_window->statusBar();
    bar->showMessage(message, 0);
    QApplication::processEvents();
    QLabel *model = nullptr, *shown = nullptr;
    for (QLabel* l : bar->findChildren<QLabel*>()) {
        if (!l->isVisible()) continue;
        if (l->text().contains("loaded in")) model = l;
        if (l->toolTip() == message) shown = l;
    }
    QVERIFY(model);
    QVERIFY2(shown, "no label in the status bar shows the message, with all of it in its tooltip");
    const QRect m_at(shown->mapTo(bar, QPoint(0, 0)), shown->size());
    const QRect model_at(model->mapTo(bar, QPoint(0, 0)), model->size());
    QVERIFY2(m_at.right() < model_at.left(),
             qPrintable(QString("message to x %1, model label from x %2").arg(m_at.right()).arg(model_at.left())));
    QVERIFY(m_at.width() > 300);  // most of the bar is the message's
    QVERIFY2(shown->text().endsWith(QChar(0x2026)), qPrintable(shown->text()));
    QVERIFY(shown->fontMetrics().horizontalAdvance(shown->text()) <= shown->contentsRect().width());
    QVERIFY(model->width() >= model->sizeHint().width());  // the model's name is not cut
    QVERIFY(model_at.right() <= bar->width());
    bar->clearMessage();
    m_window->resize(size);
}

// The low-confidence warning has its room while a translation is shown: the tabs stay where they
// are when it comes and goes.
void TestUi::warningKeepsTheTabsInPlace() {
    const QString pkg = qEnvironmentVariable("ATTNLAB_TEST_PACKAGE");
    const QString strict = m_dir.filePath("strict-banner");
    std::filesystem::copy(pkg.toStdString(), strict.toStdString(), std::filesystem::copy_options::recursive);
    attnlab::ConfidenceCalibration cal;
    cal.threshold = 0.0;  // no translation reaches probability 1: every one is flagged
    cal.sentences = 1;
    attnlab::writeConfidenceCalibration(strict.toStdString(), cal);
    ViewContext* c = m_window->context();
    c->setLiveTranslation(true, /*remember=*/false);
    typeAndWait("Ein Kind spielt im Garten.");
    QVERIFY(m_window->translatePanel()->confidenceWarning().isEmpty());
    const QRect tabs = m_window->views()->geometry();
    loadAndWait(strict);  // translated again by it (live): flagged
    QTRY_VERIFY_WITH_TIMEOUT(!m_window->translatePanel()->confidenceWarning().isEmpty(), 30000);
    QApplication::processEvents();
    QCOMPARE(m_window->views()->geometry(), tabs);
    loadAndWait(pkg);
    QTRY_VERIFY_WITH_TIMEOUT(c->result() && m_window->translatePanel()->confidenceWarning().isEmpty(), 30000);
    QApplication::processEvents();
    QCOMPARE(m_window->views()->geometry(), tabs);
}

// A long output without spaces is broken anywhere: nothing is drawn beyond the widget's width.
void TestUi::longOutputWrapsAnywhere() {
    attnlab::TranslationResult r;
    r.best.text = std::string(300, 'x');
    r.best.pieces = {r.best.text};
    r.best.token_log_probs = {-0.1f};
    r.words = {{r.best.text, 0, 1, 0.9}};
    ConfidenceText text;
    text.resize(400, 100);
    text.setResult(r);
    QVERIFY2(text.boxCount() > 1, "the word is broken over lines");
    QVERIFY2(text.textRight() <= text.width(), qPrintable(QString::number(text.textRight())));
    QVERIFY(text.heightForWidth(400) > text.heightForWidth(4000));
}

// Export dialogs open in the folder of the last export (this run and, through QSettings, the next),
// not in the working directory.
void TestUi::exportDialogsOpenInTheLastFolder() {
    typeAndWait("Ein Hund rennt.");
    m_window->views()->showView("attention");
    const QString folder = m_dir.filePath("exports");
    QVERIFY(QDir().mkpath(folder));
    QAction* png = nullptr;
    for (QAction* a : m_window->findChildren<QAction*>())
        if (a->text() == "Export view as &PNG…") png = a;
    QVERIFY(png);
    QStringList opened;  // the folder each dialog opened in
    auto answer = [&](const QString& file) {
        QTimer::singleShot(0, this, [&, file] {
            QTRY_VERIFY(qobject_cast<QFileDialog*>(QApplication::activeModalWidget()));
            auto* d = qobject_cast<QFileDialog*>(QApplication::activeModalWidget());
            opened << QDir(d->directory()).absolutePath();
            d->selectFile(file);
            static_cast<QDialog*>(d)->accept();  // QFileDialog::accept, public in QDialog
        });
    };
    answer(QDir(folder).filePath("first.png"));
    png->trigger();
    QVERIFY(QFileInfo::exists(QDir(folder).filePath("first.png")));
    answer(QDir(folder).filePath("second.png"));
    png->trigger();
    QCOMPARE(opened.size(), 2);
    QCOMPARE(opened[1], QDir(folder).absolutePath());
    QCOMPARE(QSettings().value(kExportFolderKey).toString(), QDir(folder).absolutePath());
}

namespace {
// The question open on the window, once the hub's answer is shown in it.
DownloadQuestion* listedQuestion(QWidget* window) {
    DownloadQuestion* question = nullptr;
    QElapsedTimer waited;
    waited.start();
    while (waited.elapsed() < 20000 && !(question && question->isVisible() && question->listed())) {
        QTest::qWait(20);
        question = window->findChild<DownloadQuestion*>();
    }
    return question && question->listed() ? question : nullptr;
}

// Nothing a person reads is cut: every label shows its whole text (wrapped where it wraps), every
// button its caption.
void checkNothingCut(QWidget* dialog) {
    for (QLabel* l : dialog->findChildren<QLabel*>()) {
        if (!l->isVisible()) continue;
        const bool fits = l->wordWrap() ? l->heightForWidth(l->width()) <= l->height()
                                        : l->sizeHint().width() <= l->width() && l->sizeHint().height() <= l->height();
        QVERIFY2(fits, qPrintable(QString("%1: %2x%3").arg(l->text()).arg(l->width()).arg(l->height())));
    }
    for (QPushButton* b : dialog->findChildren<QPushButton*>())
        QVERIFY2(b->sizeHint().width() <= b->width(), qPrintable(b->text()));
}

QString labelsText(QWidget* dialog) {
    QStringList texts;
    for (QLabel* l : dialog->findChildren<QLabel*>())
        if (l->isVisible()) texts << l->text();
    return texts.join('\n');
}

// Whether the stand-in hub was asked for a file's bytes (or its headers): a download began.
bool anyFileAsked(const attnlab::testing::FakeHub& hub) {
    for (const auto& r : hub.requests()) {
        const auto path = r["path"].get<std::string>();
        if (path.find("/resolve/") != std::string::npos || path.rfind("/cdn/", 0) == 0) return true;
    }
    return false;
}
}  // namespace

// A stranger's lesson names a model the cache lacks (issue 50): a question opens in the window with the
// model's name, its size and licence from the hub's listing, and nothing is downloaded before Get. Cancel
// leaves the cache without it and the lesson says it waits; a session asks the same; Get downloads it and
// shows the lesson's step. The question's text is not cut (a picture of it: /tmp/attnlab-download-question.png).
void TestUi::aLessonsModelIsGotOnlyWhenAgreed() {
    const std::string repo = "stranger-org/evil-model";
    const QString name = QString::fromStdString(repo);
    QTemporaryDir dir;
    const auto hub = fixtureOnAHub(dir.path(), repo);
    hub->setFaults({{"licence", "apache-2.0"}});  // the model card's, as the listing gives it
    hub->clearLog();
    const QString lesson = writeText(dir.filePath("stranger.json"), R"({"format": "attnlab-lesson", "version": 1,
      "title": "A stranger's lesson", "model": "stranger-org/evil-model", "steps": [
      {"title": "Got", "caption": "The stranger's step.", "view": {"tab": "positional"}}]})");
    ViewContext* c = m_window->context();
    const std::string before = c->model()->package_dir;
    LessonController* lessons = m_window->lessons();
    QVERIFY(!lessons->openLesson(lesson));
    // Open at once, saying what it waits for, Get disabled until the hub has answered.
    DownloadQuestion* question = m_window->findChild<DownloadQuestion*>();
    QVERIFY(question && question->isVisible() && !question->listed());
    QVERIFY2(labelsText(question).contains("Asking the hub about stranger-org/evil-model…"),
             qPrintable(labelsText(question)));
    checkNothingCut(question);
    QVERIFY(question->grab().save(QDir::temp().filePath("attnlab-download-question-asking.png")));
    question = listedQuestion(m_window.get());
    QVERIFY(question);
    QCOMPARE(question->name(), name);
    QVERIFY(question->isModal());  // window-modal: the window behind waits for the answer
    const auto listing =
        attnlab::hubModelListing(*attnlab::parseHubModelName(repo), attnlab::hubOptionsFromEnvironment());
    QVERIFY(listing.total_bytes > 0);
    const QString shown = labelsText(question);
    QVERIFY2(shown.contains(name), qPrintable(shown));
    QVERIFY2(shown.contains(QString::fromStdString(attnlab::byteSizeText(listing.total_bytes))), qPrintable(shown));
    QCOMPARE(listing.licence, std::string("apache-2.0"));
    QVERIFY2(shown.contains("apache-2.0"), qPrintable(shown));
    QVERIFY2(shown.contains("stranger.json"), qPrintable(shown));
    QVERIFY(!anyFileAsked(*hub));  // only the listing was asked for
    checkNothingCut(question);
    QVERIFY(question->grab().save(QDir::temp().filePath("attnlab-download-question.png")));
    // Cancel: nothing got, the lesson waits and says so, the model shown stays.
    question->cancelButton()->click();
    QTRY_VERIFY(!m_window->findChild<DownloadQuestion*>());
    QVERIFY(!lessons->pending());
    QTRY_VERIFY(lessons->pane()->captionText().contains("was not got"));
    QVERIFY(!attnlab::cachedHubSnapshot(*attnlab::parseHubModelName(repo), attnlab::hubOptionsFromEnvironment()));
    QVERIFY(!anyFileAsked(*hub));
    QVERIFY(!c->fetching());
    QCOMPARE(c->model()->package_dir, before);
    // A session naming it asks the same.
    const QString session = writeText(dir.filePath("session.json"), R"({"format": "attnlab-session", "version": 1,
      "model": "stranger-org/evil-model", "title": "s", "caption": "", "view": {"tab": "positional"}})");
    const double text_size = c->textSize();
    c->setTextSize(20, /*remember=*/false);  // projector-size text: the question still shows all of it
    QVERIFY(!lessons->openSession(session));
    question = listedQuestion(m_window.get());
    QVERIFY(question);
    QVERIFY(labelsText(question).contains("session.json"));
    checkNothingCut(question);
    QVERIFY(question->grab().save(QDir::temp().filePath("attnlab-download-question-20pt.png")));
    question->reject();
    c->setTextSize(text_size, false);
    QTRY_VERIFY(!m_window->findChild<DownloadQuestion*>());
    QVERIFY(!anyFileAsked(*hub));
    // Get: downloaded, opened, the lesson's step shown.
    QVERIFY(!lessons->openLesson(lesson));
    question = listedQuestion(m_window.get());
    QVERIFY(question);
    QSignalSpy changed(c, &ViewContext::modelChanged);
    question->getButton()->click();
    QTRY_VERIFY_WITH_TIMEOUT(changed.count() > 0, 30000);
    QVERIFY(attnlab::hubNameOfSnapshot(c->model()->package_dir));
    QCOMPARE(attnlab::hubNameOfSnapshot(c->model()->package_dir)->repo, repo);
    QVERIFY(anyFileAsked(*hub));
    QTRY_COMPARE(lessons->pane()->current(), 0);
    QVERIFY(lessons->pane()->captionText().contains("The stranger's step."));
    QVERIFY(attnlab::cachedHubSnapshot(*attnlab::parseHubModelName(repo), attnlab::hubOptionsFromEnvironment()));
    // Opened again, the model is in the cache: no question.
    QVERIFY(!lessons->openLesson(lesson));
    QTest::qWait(100);
    QVERIFY(!m_window->findChild<DownloadQuestion*>());
    loadAndWait(qEnvironmentVariable("ATTNLAB_TEST_PACKAGE"));  // the snapshot goes with the temporary folder
    qunsetenv("HF_ENDPOINT");
    qunsetenv("HF_HUB_CACHE");
}

// The hub cannot list the model (no such repository): reported as any failure is, the question closes,
// no step waits.
void TestUi::aFailedListingIsReported() {
    QTemporaryDir dir;
    const auto hub = fixtureOnAHub(dir.path(), "attnlab/fixture-de-en");
    const QString lesson = writeText(dir.filePath("missing.json"), R"({"format": "attnlab-lesson", "version": 1,
      "model": "stranger-org/no-such-model", "steps": [{"view": {"tab": "positional"}}]})");
    ViewContext* c = m_window->context();
    QSignalSpy failed(c, &ViewContext::failed);
    QVERIFY(!m_window->lessons()->openLesson(lesson));
    QTRY_VERIFY_WITH_TIMEOUT(failed.count() > 0, 20000);
    QCOMPARE(failed.first().at(0).value<Operation>(), Operation::GetModel);
    const QString message = failed.first().at(1).toString();
    QVERIFY2(message.startsWith("stranger-org/no-such-model: "), qPrintable(message));
    qInfo("the listing's failure: %s", qPrintable(message));
    QTRY_VERIFY(!m_window->findChild<DownloadQuestion*>());
    QVERIFY(!m_window->lessons()->pending());
    QVERIFY(!anyFileAsked(*hub));
    qunsetenv("HF_ENDPOINT");
    qunsetenv("HF_HUB_CACHE");
}

QTEST_MAIN(TestUi)
#include "tst_ui.moc"
