// Each view alone: built on a ViewContext (no MainWindow), given a translation result made here by
// an in-process Translator of the same package, and checked against that result's numbers. The
// window's wiring is tst_ui's; the lesson controller is tst_lesson_controller's.
#include "ablation_panel.h"
#include "alignment_panel.h"
#include "attention_explorer.h"
#include "attention_grid.h"
#include "attention_view.h"
#include "decoding_view.h"
#include "head_lab_view.h"
#include "head_stats_panel.h"
#include "inputs_view.h"
#include "model_panel.h"
#include "pair_view.h"
#include "positional_view.h"
#include "toy_trainer_dialog.h"
#include "training_view.h"
#include "view_context.h"
#include "view_registry.h"
#include "weight_view.h"

#include <attnlab/attention_history.h>
#include <attnlab/errors.h>
#include <attnlab/lesson.h>
#include <attnlab/package.h>
#include <attnlab/translator.h>

#include <qcustomplot.h>

#include <gif_lib.h>

#include <QAction>
#include <QTextBrowser>
#include <QtTest/QtTest>

#include <cmath>

using namespace attnlab::ui;
using attnlab::AttentionKind;

namespace {
// The worker thread and this test's translator run the same code on the same weights, but LibTorch
// may split the sums over another number of threads there: equal to well within 1e-5.
constexpr double kSameKernelsMargin = 1e-5;

bool near(const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (std::abs(a[i] - b[i]) > kSameKernelsMargin) return false;
    return true;
}

bool near(const attnlab::Matrix& a, const attnlab::Matrix& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (!near(a[i], b[i])) return false;
    return true;
}
}  // namespace

class TestViews : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void registryIsTheOneListOfViews();
    void attentionViewShowsTheChosenMap();
    void attentionViewFollowsRequestsAndStates();
    void decodingViewStepsAndForcesABeginning();
    void weightViewExplainsTheCellAskedFor();
    void inputsViewInspectsOnlyWhenShown();
    void pairViewComparesAStepsPair();
    void positionalAndModelViewsFollowTheModel();
    void headsViewOpensOnItsExamplesComputed();
    void headsViewWithoutExamplesSaysWhatToDo();
    void aNewModelSwitchesEveryHeadOn();
    void trainingViewStepsThroughTheHistory();
    void toyTrainerPausesContinuesAndFinishes();
    void failuresTravelOneSignal();

private:
    attnlab::ui::ResultPtr translate(const std::string& sentence) const;
    std::unique_ptr<attnlab::Translator> m_core;
    std::unique_ptr<TranslationController> m_controller;
    std::unique_ptr<ViewContext> m_context;
    QString m_package;
    QTemporaryDir m_dir;
};

void TestViews::initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    m_package = qEnvironmentVariable("ATTNLAB_TEST_PACKAGE");
    QVERIFY2(!m_package.isEmpty(), "ATTNLAB_TEST_PACKAGE must name the fixture package (set by CTest)");
    m_core = std::make_unique<attnlab::Translator>(m_package.toStdString(), attnlab::TranslatorOptions{"cpu"});
    m_controller = std::make_unique<TranslationController>();
    m_context = std::make_unique<ViewContext>(m_controller.get());
    QSignalSpy loaded(m_context.get(), &ViewContext::modelChanged);
    m_context->loadModel(m_package);
    QTRY_VERIFY_WITH_TIMEOUT(loaded.count() > 0, 30000);
}

attnlab::ui::ResultPtr TestViews::translate(const std::string& sentence) const {
    attnlab::DecodingOptions o;
    o.record_trace = true;
    return std::make_shared<const attnlab::TranslationResult>(m_core->translate(sentence, o));
}

void TestViews::registryIsTheOneListOfViews() {
    const std::vector<std::string> names{"attention", "decoding", "weight",     "inputs", "pairs",
                                         "heads",     "training", "positional", "model"};
    QCOMPARE(viewNames(), names);
    ViewTabs tabs(m_context.get());
    QCOMPARE(tabs.count(), int(names.size()));
    for (size_t i = 0; i < names.size(); ++i) {
        QCOMPARE(tabs.widget(int(i)), tabs.view(names[i]));
        QVERIFY(tabs.showView(names[i]));
        QCOMPARE(tabs.currentName(), names[i]);
    }
    QVERIFY(!tabs.showView("maps"));
    QVERIFY(!tabs.view("maps"));
    QVERIFY(tabs.find<WeightView>() == tabs.view("weight"));
    // A view asked for through the context comes to the front.
    m_context->showView("pairs");
    QCOMPARE(tabs.currentName(), std::string("pairs"));
    // Export says why a view has no figure yet.
    QVERIFY(tabs.showView("weight"));
    const auto why = tabs.exportCurrent(m_dir.filePath("w.png"));
    QVERIFY2(why && why->contains("click a cell"), qPrintable(why.value_or("none")));
    // The keys that show views come from the table.
    QStringList keys;
    for (QAction* a : tabs.menuActions()) keys << a->shortcut().toString();
    QVERIFY2(keys.contains("Ctrl+4") && keys.contains("Ctrl+5") && keys.contains("Ctrl+1"), qPrintable(keys.join(' ')));
    // Lessons are checked against the same names.
    attnlab::Lesson lesson = attnlab::parseLesson(
        R"({"format": "attnlab-lesson", "version": 1, "steps": [{"view": {"tab": "maps"}}]})", "l.json");
    try {
        attnlab::checkLessonViews(lesson, viewNames(), "l.json");
        QFAIL("no error");
    } catch (const attnlab::InputError& e) {
        QCOMPARE(QString(e.what()), QString("l.json: step 1: tab: 'maps' is not one of attention, decoding, weight, "
                                            "inputs, pairs, heads, training, positional, model"));
    }
}

void TestViews::attentionViewShowsTheChosenMap() {
    AttentionExplorer view(m_context.get());
    const auto r = translate("Ein Mann geht mit dem Hund.");
    m_context->setResult(r, {});
    view.select(AttentionKind::EncoderSelf, 1, 2);
    QVERIFY(near(view.view()->map(), r->encoder_self[1][2]));
    view.select(AttentionKind::DecoderSelf, 0, 3);
    QVERIFY(near(view.view()->map(), r->decoder_self[0][3]));
    // The mean over heads (head == n_head), computed here.
    const int heads = int(r->cross[1].size());
    view.select(AttentionKind::Cross, 1, heads);
    attnlab::Matrix mean = r->cross[1][0];
    for (size_t i = 0; i < mean.size(); ++i)
        for (size_t j = 0; j < mean[i].size(); ++j) {
            double sum = 0;
            for (int h = 0; h < heads; ++h) sum += r->cross[1][h][i][j];
            mean[i][j] = float(sum / heads);
        }
    QVERIFY(near(view.view()->map(), mean));
    QVERIFY(view.figure());
    // A failed translation empties it: the maps would sit under a sentence they do not belong to.
    m_context->reportFailure(Operation::Translate, "the sentence is empty");
    QVERIFY(view.view()->map().empty());
    QVERIFY(!view.figure());
    QVERIFY(view.noFigureReason().contains("translate a sentence first"));
}

void TestViews::attentionViewFollowsRequestsAndStates() {
    AttentionExplorer view(m_context.get());
    m_context->setResult(translate("Zwei Hunde spielen."), {});
    QSignalSpy shown(m_context.get(), &ViewContext::viewRequested);
    m_context->showHead({AttentionKind::DecoderSelf, 1, 3});
    QCOMPARE(view.kind(), AttentionKind::DecoderSelf);
    QCOMPARE(view.layer(), 1);
    QCOMPARE(view.head(), 3);
    QCOMPARE(shown.count(), 1);
    QCOMPARE(shown.first().first().value<std::string>(), std::string("attention"));
    // Its part of a session, and back.
    attnlab::ViewState saved;
    view.saveState(saved);
    QCOMPARE(*saved.kind, AttentionKind::DecoderSelf);
    QCOMPARE(*saved.layer, 1);
    QCOMPARE(*saved.head, 3);
    attnlab::ViewState step;
    step.kind = AttentionKind::EncoderSelf;
    view.applyState(step);  // layer and head kept
    QCOMPARE(view.kind(), AttentionKind::EncoderSelf);
    QCOMPARE(view.layer(), 1);
    QCOMPARE(view.head(), 3);
    QCOMPARE(m_context->focusedHead(), (attnlab::HeadRef{AttentionKind::EncoderSelf, 1, 3}));
    // The window-wide actions it offers act on it.
    for (QAction* a : view.menuActions())
        if (a->shortcuts().contains(QKeySequence("Ctrl+3"))) a->trigger();
    QCOMPARE(view.kind(), AttentionKind::Cross);
}

void TestViews::decodingViewStepsAndForcesABeginning() {
    DecodingView view(m_context.get());
    const auto r = translate("Ein Hund rennt.");
    m_context->setResult(r, {});
    QCOMPARE(view.stepCount(), int(r->best.ids.size()));
    view.setStep(1);
    attnlab::ViewState saved;
    view.saveState(saved);
    QCOMPARE(*saved.step, 1);
    QVERIFY(view.figure());
    // What-if: the sentence of the steps shown, translated again with the typed beginning.
    QSignalSpy asked(m_context.get(), &ViewContext::translationRequested);
    QSignalSpy changed(m_context.get(), &ViewContext::resultChanged);
    Q_EMIT view.forceRequested({}, "A");
    QCOMPARE(asked.count(), 1);
    QCOMPARE(asked.first().at(0).toString(), QString::fromStdString(r->source_text));
    QVERIFY(asked.first().at(1).toBool());
    QCOMPARE(m_context->resultOptions().force_prefix, std::string("A"));
    QTRY_VERIFY_WITH_TIMEOUT(changed.count() > 0, 30000);
    QVERIFY(m_context->result());
    QCOMPARE(m_context->result()->forced_text, std::string("A"));
}

void TestViews::weightViewExplainsTheCellAskedFor() {
    WeightView view(m_context.get());
    const auto r = translate("Eine Frau liest ein Buch.");
    m_context->setResult(r, {});
    const attnlab::CellRef cell{AttentionKind::Cross, 1, 2, 0, 1};
    QSignalSpy shown(m_context.get(), &ViewContext::viewRequested);
    m_context->explainCell(cell);
    QCOMPARE(shown.count(), 1);
    QCOMPARE(shown.first().first().value<std::string>(), std::string("weight"));
    QTRY_VERIFY_WITH_TIMEOUT(view.explanation(), 30000);
    const auto expected = m_core->explain(*r, cell);
    QVERIFY(near(view.explanation()->row_weights, expected.row_weights));
    QVERIFY(std::abs(view.explanation()->weight - r->cross[1][2][0][1]) < kSameKernelsMargin);
    attnlab::ViewState saved;
    view.saveState(saved);
    QCOMPARE(*saved.cell_query, 0);
    QCOMPARE(*saved.cell_key, 1);
    QCOMPARE(*saved.kind, AttentionKind::Cross);
    QCOMPARE(*saved.head, 2);
    // A new translation clears it (the cell belonged to the old one).
    m_context->setResult(translate("Ein Hund."), {});
    QVERIFY(!view.explanation());
    QVERIFY(!view.figure());
}

void TestViews::inputsViewInspectsOnlyWhenShown() {
    InputsView view(m_context.get());
    QSignalSpy inspected(m_controller.get(), &TranslationController::tokenInspected);
    const auto r = translate("Ein Kind spielt.");
    m_context->setResult(r, {});
    m_controller->waitForIdle();
    QCOMPARE(inspected.count(), 0);  // hidden: nothing computed
    view.show();
    QTRY_VERIFY_WITH_TIMEOUT(view.token(), 30000);
    const auto expected = m_core->tokenInside(*r, view.selectedTarget(), view.selectedPosition());
    QVERIFY(near(view.token()->normalized, expected.normalized));
    QTRY_VERIFY_WITH_TIMEOUT(view.masks(), 30000);
    attnlab::ViewState saved;
    view.saveState(saved);
    QCOMPARE(*saved.token_position, view.selectedPosition());
}

void TestViews::pairViewComparesAStepsPair() {
    PairView view(m_context.get());
    m_context->setResult(translate("Ein Hund."), {});
    m_context->setFocusedHead({AttentionKind::Cross, 1, 2});
    attnlab::ViewState step;
    step.pair_a = "Der Hund beisst den Mann.";
    step.pair_b = "Den Hund beisst der Mann.";
    step.kind = AttentionKind::EncoderSelf;
    view.applyState(step);  // the step's kind, the focused layer and head
    QTRY_VERIFY_WITH_TIMEOUT(!view.mapA()->map().empty(), 30000);
    const auto a = m_core->translate(*step.pair_a, m_context->decodingOptions());
    const auto b = m_core->translate(*step.pair_b, m_context->decodingOptions());
    QVERIFY(near(view.mapA()->map(), a.encoder_self[1][2]));
    QVERIFY(near(view.mapB()->map(), b.encoder_self[1][2]));
    attnlab::ViewState saved;
    view.saveState(saved);
    QCOMPARE(*saved.pair_a, *step.pair_a);
    QCOMPARE(*saved.pair_b, *step.pair_b);
}

void TestViews::positionalAndModelViewsFollowTheModel() {
    PositionalEncodingView positional(m_context.get());
    ModelPanel model(m_context.get());
    const auto info = m_controller->modelInfo();
    m_context->setModel(info);
    QCOMPARE(positional.length(), int(info->config.model.n_position));
    QCOMPARE(positional.dModel(), int(info->config.model.d_model));
    QVERIFY(positional.figure());
    QVERIFY(model.details()->toPlainText().contains(QFileInfo(m_package).fileName()));
    QVERIFY(!model.figure());  // the fixture has no training log: the reason is given
    QVERIFY(!model.noFigureReason().isEmpty());
}

void TestViews::headsViewOpensOnItsExamplesComputed() {
    // The fixture with three examples.
    const QString dir = m_dir.filePath("with-examples");
    QVERIFY(QDir().mkpath(dir));
    for (const char* f : {"config.json", "model.safetensors", "tokenizer.model"})
        QVERIFY(QFile::copy(m_package + "/" + f, dir + "/" + f));
    QFile examples(dir + "/" + QString::fromUtf8(attnlab::package_files::kExamples));
    QVERIFY(examples.open(QIODevice::WriteOnly));
    examples.write(
        "Ein Hund rennt.\tA dog runs.\nZwei Kinder spielen.\tTwo children play.\nEin Mann liest.\tA man reads.\n");
    examples.close();
    TranslationController controller;
    ViewContext context(&controller);
    HeadLabView view(&context);
    QSignalSpy progress(&controller, &TranslationController::headLabProgress);
    QSignalSpy runs(view.statistics(), &HeadStatsPanel::runRequested);
    QSignalSpy loaded(&context, &ViewContext::modelChanged);
    context.loadModel(dir);
    QTRY_VERIFY_WITH_TIMEOUT(loaded.count() > 0, 30000);
    controller.waitForIdle();
    QCOMPARE(progress.count(), 0);  // not shown: nothing run yet
    QVERIFY(!view.statistics()->stats());
    view.show();  // the first screen: the examples' statistics, without pressing Run
    QTRY_VERIFY_WITH_TIMEOUT(view.statistics()->stats(), 60000);
    QCOMPARE(view.statistics()->stats()->sentences, 3);
    QCOMPARE(runs.count(), 1);
    QVERIFY(view.figure());
    QVERIFY(!view.showPage("statistics"));  // already computed for this model: not again
    QVERIFY(!view.showPage("alignment"));
    QVERIFY(!view.showPage("statistics"));
    QCOMPARE(runs.count(), 1);
    // Another model: computed again, once, when the page is seen.
    QSignalSpy reloaded(&context, &ViewContext::modelChanged);
    view.pages()->setCurrentWidget(view.ablation());
    context.loadModel(dir);
    QTRY_VERIFY_WITH_TIMEOUT(reloaded.count() > 0, 30000);
    controller.waitForIdle();
    QCOMPARE(runs.count(), 1);  // the Ablation page is shown
    QVERIFY(!view.showPage("statistics"));
    QCOMPARE(runs.count(), 2);
    controller.waitForIdle();
    QCOMPARE(*view.showPage("maps"), QString("'maps' is not one of statistics, ablation, alignment"));
}

void TestViews::headsViewWithoutExamplesSaysWhatToDo() {
    HeadLabView view(m_context.get());
    view.show();
    m_context->setModel(m_controller->modelInfo());  // the fixture has no examples.tsv
    QVERIFY2(view.statistics()->heatmap()->message().contains("choose a corpus"),
             qPrintable(view.statistics()->heatmap()->message()));
    const auto problem = view.showPage("statistics");
    QVERIFY(problem && problem->contains("no examples"));
    QVERIFY(!view.figure());
}

void TestViews::aNewModelSwitchesEveryHeadOn() {
    m_context->setAblated({{AttentionKind::Cross, 1, 2}});
    QCOMPARE(m_context->ablated().size(), size_t(1));
    m_context->setModel(m_controller->modelInfo());
    QVERIFY(m_context->ablated().empty());
    m_controller->waitForIdle();
}

// A package with a history of three points (the in-process translator's maps at the last, uniform
// rows before): the view shows each point's maps as the file holds them.
void TestViews::trainingViewStepsThroughTheHistory() {
    QSignalSpy none(m_controller.get(), &TranslationController::historyLoaded);
    TrainingView plain(m_context.get());  // the fixture has no history
    QTRY_VERIFY_WITH_TIMEOUT(none.count() > 0, 30000);
    QVERIFY(!none.first().at(1).value<HistoryPtr>());
    QVERIFY(plain.message().contains("--record-attention"));
    QVERIFY(!plain.figure());

    const QString dir = m_dir.filePath("with-history");
    QVERIFY(QDir().mkpath(dir));
    for (const char* f : {"config.json", "model.safetensors", "tokenizer.model"})
        QVERIFY(QFile::copy(m_package + "/" + f, dir + "/" + f));
    const auto forced = m_core->teacherForce({"Ein Hund rennt."}, {"A dog runs."});
    attnlab::AttentionHistory h;
    h.n_layers = int(forced[0].cross.size());
    h.n_head = int(forced[0].cross[0].size());
    h.probes.push_back({"Ein Hund rennt.", "A dog runs.", forced[0].source_pieces, forced[0].best.pieces,
                        forced[0].decoder_input_pieces});
    auto uniform = [](const attnlab::LayerHeadMaps& like) {
        attnlab::LayerHeadMaps m = like;
        for (auto& layer : m)
            for (auto& head : layer)
                for (auto& row : head)
                    for (float& w : row) w = 1.0f / float(row.size());
        return m;
    };
    for (int i = 0; i < 3; ++i) {
        attnlab::HistoryPoint p;
        p.step = 10 * i;
        p.epoch = i;
        p.train_loss = i == 0 ? -1 : 5.0 - i;
        p.valid_bleu = i == 2 ? 12.5 : -1;
        p.maps.push_back(i == 2 ? attnlab::ProbeMaps{forced[0].encoder_self, forced[0].decoder_self, forced[0].cross}
                                : attnlab::ProbeMaps{uniform(forced[0].encoder_self), uniform(forced[0].decoder_self),
                                                     uniform(forced[0].cross)});
        h.points.push_back(p);
    }
    const std::string file = (dir + "/").toStdString() + attnlab::package_files::kAttentionHistory;
    attnlab::writeAttentionHistory(file, h);
    const auto stored = attnlab::readAttentionHistory(file);

    TranslationController controller;
    ViewContext context(&controller);
    TrainingView view(&context);
    QSignalSpy loaded(&controller, &TranslationController::historyLoaded);
    context.loadModel(dir);
    QTRY_VERIFY_WITH_TIMEOUT(loaded.count() > 0 && view.history(), 30000);
    QVERIFY(view.message().isEmpty());
    QCOMPARE(view.point(), 2);  // the finished model first
    view.select(AttentionKind::Cross, 1, 2);
    QCOMPARE(view.map()->map(), stored.points[2].maps[0].cross[1][2]);
    // ... which is the translator's map within half a quantization step.
    for (size_t r = 0; r < view.map()->map().size(); ++r)
        for (size_t c = 0; c < view.map()->map()[r].size(); ++c)
            QVERIFY(std::abs(view.map()->map()[r][c] - forced[0].cross[1][2][r][c]) <=
                    attnlab::kHistoryQuantizationStep / 2 + 1e-7);
    QVERIFY(view.pointText().contains("step 20") && view.pointText().contains("12.50"));
    // The head's statistic over the points (the core's head statistics of each point), and where it
    // moved most: from the uniform points to the translator's maps, between steps 10 and 20.
    QCOMPARE(view.headCurve()->graph(0)->dataCount(), 3);
    const auto reports = attnlab::historyHeadStatistics(stored);
    QCOMPARE(view.headCurve()->graph(0)->data()->at(2)->value,
             reports[2].find({AttentionKind::Cross, 1, 2})->value(attnlab::HeadStatistic::Entropy));
    QVERIFY2(view.changeText().contains("between step 10 and step 20"), qPrintable(view.changeText()));
    view.showPoint(0);
    QCOMPARE(view.map()->map(), stored.points[0].maps[0].cross[1][2]);
    QVERIFY(view.pointText().contains("point 1 of 3"));
    QCOMPARE(view.grid()->layers(), h.n_layers);
    // Play runs from the start to the end and stops.
    view.setPlaying(true);
    QVERIFY(view.playing());
    QTRY_VERIFY_WITH_TIMEOUT(!view.playing(), 10000);
    QCOMPARE(view.point(), 2);
    QVERIFY(view.figure());
    // The animation for slides: an animated GIF of one frame per point, read back with giflib, and a
    // PNG series.
    const QString gif = m_dir.filePath("history.gif");
    QVERIFY(!view.exportAnimation(gif));
    int error = 0;
    GifFileType* read = DGifOpenFileName(QFile::encodeName(gif).constData(), &error);
    QVERIFY(read);
    QCOMPARE(DGifSlurp(read), GIF_OK);
    QCOMPARE(read->ImageCount, 3);
    QVERIFY(read->SWidth > 100 && read->SHeight > 100);
    DGifCloseFile(read, &error);
    QVERIFY(!view.exportAnimation(m_dir.filePath("frames.png")));
    for (const char* f : {"frames-001.png", "frames-002.png", "frames-003.png"})
        QVERIFY(QFileInfo::exists(m_dir.filePath(f)));
    QVERIFY(view.exportAnimation(m_dir.filePath("x.mp4"))->contains(".gif"));
    QCOMPARE(view.point(), 2);  // the point shown is kept
    controller.waitForIdle();
}

// File > Train a small model…: a short copy run, paused at its first progress and continued, ends
// with a package (and its history) and its accuracy; the window's thread stays free throughout.
void TestViews::toyTrainerPausesContinuesAndFinishes() {
    ToyTrainerDialog dialog(m_context.get(), m_dir.filePath("toy-work"));
    QSignalSpy finished(&dialog, &ToyTrainerDialog::finished);
    dialog.setTask(attnlab::ToyTask::Copy);
    dialog.setSteps(150);
    dialog.start();
    QVERIFY(dialog.running());
    QTRY_VERIFY_WITH_TIMEOUT(dialog.curve()->graph(0)->dataCount() > 0, 60000);
    dialog.pause();
    QTRY_VERIFY_WITH_TIMEOUT(!dialog.running(), 60000);
    QVERIFY2(dialog.statusText().startsWith("Paused"), qPrintable(dialog.statusText()));
    QCOMPARE(finished.count(), 0);
    dialog.start();  // continue from the checkpoint
    QTRY_VERIFY_WITH_TIMEOUT(finished.count() == 1, 120000);
    QVERIFY(!dialog.packageDir().isEmpty());
    QVERIFY(QFileInfo::exists(dialog.packageDir() + "/config.json"));
    QVERIFY(QFileInfo::exists(dialog.packageDir() + "/" + attnlab::package_files::kAttentionHistory));
    QVERIFY(dialog.accuracy() >= 0 && dialog.accuracy() <= 1);
    QVERIFY(!dialog.map()->map().empty());  // the newest recorded cross-attention
    const auto h = attnlab::readAttentionHistory(
        (dialog.packageDir() + "/" + attnlab::package_files::kAttentionHistory).toStdString());
    // Paused and continued: one run, each scheduled point once (every 50 steps, 25 below that).
    std::vector<int64_t> steps;
    for (const auto& p : h.points) steps.push_back(p.step);
    QCOMPARE(steps, (std::vector<int64_t>{0, 25, 50, 100, 150}));
}

void TestViews::failuresTravelOneSignal() {
    WeightView weight(m_context.get());
    QSignalSpy failed(m_context.get(), &ViewContext::failed);
    m_context->setResult(translate("Ein Hund."), {});
    m_context->explainCell({AttentionKind::Cross, 0, 0, 99, 0});  // no such query row
    QTRY_VERIFY_WITH_TIMEOUT(failed.count() > 0, 30000);
    QCOMPARE(failed.first().at(0).value<Operation>(), Operation::Explain);
    QVERIFY2(failed.first().at(1).toString().contains("out of range"), qPrintable(failed.first().at(1).toString()));
    QCOMPARE(m_context->lastError(), failed.first().at(1).toString());
    QVERIFY(!weight.explanation());
    QVERIFY2(weight.headingText().startsWith("Cannot explain this weight: "), qPrintable(weight.headingText()));
    failed.clear();
    QSignalSpy changed(m_context.get(), &ViewContext::resultChanged);
    m_context->translate("   ", {});
    QTRY_VERIFY_WITH_TIMEOUT(failed.count() > 0, 30000);
    QCOMPARE(failed.first().at(0).value<Operation>(), Operation::Translate);
    QVERIFY(!m_context->result());
    QVERIFY(!changed.isEmpty() && !changed.last().first().value<ResultPtr>());
}

QTEST_MAIN(TestViews)
#include "tst_views.moc"
