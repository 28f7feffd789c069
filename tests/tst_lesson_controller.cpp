// The lesson controller alone: a bare QMainWindow as its host, the registered views and a context
// on the fixture package (n_layers 2, n_head 4); no MainWindow, no menus of the app.
#include "document/translation_cache.h"
#include "document/view_context.h"
#include "lessons/lesson_controller.h"
#include "lessons/lesson_editor.h"
#include "lessons/lesson_pane.h"
#include "shell/view_registry.h"
#include "views/attention_explorer.h"
#include "views/decoding_view.h"
#include "views/pair_view.h"
#include "views/training_view.h"
#include "views/weight_view.h"
#include "widgets/head_picker.h"

#include <attnlab/attention_history.h>
#include <attnlab/lesson.h>
#include <attnlab/package.h>

#include <QElapsedTimer>
#include <QMainWindow>
#include <QMenu>
#include <QTextBlock>
#include <QTextBrowser>
#include <QtTest/QtTest>

#include <algorithm>

using namespace attnlab::ui;
using attnlab::AttentionKind;

class TestLessonController : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void aLessonIsCheckedAgainstViewsAndModel();
    void stepsApplyTheirViewsInOrder();
    void sessionRoundTrip();
    void steppingBackTranslatesNothing();
    void aForcedStepShowsTheFreeTranslationBesideIt();
    void aStepsFailureNamesTheFileAndStep();
    void theCacheKeepsTheLastTranslations();
    void presenterModeAndBack();
    void captionCodeFollowsTheTextSize();
    void aLongCaptionIsLaidOutOnce();
    void presenterTextFollowsTheScreen();
    void aCaptionShrinksToFit();
    void aLessonIsWrittenInTheApp();
    void aWrittenStepsFocusIsSavedAndRead();
    void aStepsPointIsCheckedAgainstTheHistory();
    void aStepsPointHoldsWhileItsModelLoads();

private:
    QString packageWithHistory(const QString& name, int points);
    QString write(const QString& name, const QByteArray& json);
    void settle();
    std::unique_ptr<TranslationController> m_controller;
    std::unique_ptr<QMainWindow> m_host;
    ViewContext* m_context = nullptr;
    ViewTabs* m_tabs = nullptr;
    LessonController* m_lessons = nullptr;
    QTemporaryDir m_dir;
};

void TestLessonController::initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    const QString package = qEnvironmentVariable("ATTNLAB_TEST_PACKAGE");
    QVERIFY2(!package.isEmpty(), "ATTNLAB_TEST_PACKAGE must name the fixture package (set by CTest)");
    m_controller = std::make_unique<TranslationController>();
    m_host = std::make_unique<QMainWindow>();
    m_context = new ViewContext(m_controller.get(), m_host.get());
    m_tabs = new ViewTabs(m_context, m_host.get());
    m_host->setCentralWidget(m_tabs);
    m_lessons = new LessonController(m_context, m_tabs, m_host.get());
    m_host->show();
    QSignalSpy loaded(m_context, &ViewContext::modelChanged);
    m_context->loadModel(package);
    QTRY_VERIFY_WITH_TIMEOUT(loaded.count() > 0, 30000);
}

QString TestLessonController::write(const QString& name, const QByteArray& json) {
    const QString path = m_dir.filePath(name);
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly)) return {};
    f.write(json);
    return path;
}

void TestLessonController::settle() {
    QElapsedTimer waited;
    waited.start();
    do {
        m_controller->waitForIdle();
        QCoreApplication::processEvents();
    } while ((m_controller->busy() || m_lessons->pending()) && waited.elapsed() < 60000);
    QVERIFY2(!m_lessons->pending(), "a lesson step still waits after 60 s");
}

void TestLessonController::aLessonIsCheckedAgainstViewsAndModel() {
    const QString tab = write("tab.json", R"({"format": "attnlab-lesson", "version": 1, "steps": [
        {"view": {"sentence": "Ein Hund."}}, {"view": {"tab": "maps"}}]})");
    auto problem = m_lessons->openLesson(tab);
    QVERIFY(problem);
    QCOMPARE(*problem,
             tab +
                 ": step 2: tab: 'maps' is not one of attention, saliency, decoding, lens, weight, inputs, pairs, "
                 "heads, training, positional, model");
    QVERIFY(!m_lessons->pane()->hasLesson());  // the window keeps what it had
    const QString layer = write("layer.json", R"({"format": "attnlab-lesson", "version": 1, "steps": [
        {"view": {"layer": 2}}]})");
    problem = m_lessons->openLesson(layer);
    QVERIFY(problem);
    QCOMPARE(*problem, layer + ": step 1: layer: 2 is out of range: the model has 2 layers (0..1)");
    problem = m_lessons->goToStep(0);
    QCOMPARE(*problem, QString("no lesson is open (Lesson > Open lesson…)"));
    problem = m_lessons->openLesson(m_dir.filePath("missing.json"));
    QVERIFY(problem && problem->contains("missing.json"));
    // A lesson of another model with a wrong tab is refused before that model is loaded.
    const QString other = write("other.json", R"({"format": "attnlab-lesson", "version": 1, "model": "en-de",
        "steps": [{"view": {"tab": "maps"}}]})");
    QSignalSpy loading(m_context, &ViewContext::modelLoading);
    problem = m_lessons->openLesson(other);
    QVERIFY2(problem && problem->contains("step 1: tab: 'maps' is not one of"), qPrintable(problem.value_or("")));
    QCOMPARE(loading.count(), 0);
}

void TestLessonController::stepsApplyTheirViewsInOrder() {
    const QString path = write("two.json", R"({"format": "attnlab-lesson", "version": 1, "steps": [
        {"caption": "One.", "view": {"tab": "attention", "sentence": "Ein Hund rennt.", "kind": "encoder",
                                     "layer": 1, "head": 2}},
        {"caption": "Two.", "view": {"tab": "attention", "cell": [0, 1]}}]})");
    QVERIFY(!m_lessons->openLesson(path));
    settle();
    QCOMPARE(m_context->result()->source_text, std::string("Ein Hund rennt."));
    QCOMPARE(m_tabs->currentName(), std::string("attention"));
    auto* explorer = m_tabs->find<AttentionExplorer>();
    QCOMPARE(explorer->kind(), AttentionKind::EncoderSelf);
    QCOMPARE(explorer->layer(), 1);
    QCOMPARE(explorer->head(), 2);
    // Step 2 opens a cell of the head step 1 chose (the Weight view computes it), and then shows the
    // tab it names: the tab is applied last.
    QVERIFY(!m_lessons->goToStep(1));
    settle();
    QCOMPARE(m_tabs->currentName(), std::string("attention"));
    const auto e = m_tabs->find<WeightView>()->explanation();
    QVERIFY(e);
    QCOMPARE(e->cell.kind, AttentionKind::EncoderSelf);
    QCOMPARE(e->cell.layer, 1);
    QCOMPARE(e->cell.head, 2);
    QCOMPARE(e->cell.key, 1);
    const auto problem = m_lessons->goToStep(2);
    QCOMPARE(*problem, path + ": step 3 is beyond the end (the lesson has 2 steps)");
    QCOMPARE(m_lessons->pane()->current(), 1);
}

void TestLessonController::sessionRoundTrip() {
    m_context->translateSentence("Zwei Hunde spielen.");  // a new translation: no cell is opened up
    settle();
    QVERIFY(!m_tabs->find<WeightView>()->explanation());
    m_tabs->find<AttentionExplorer>()->select(AttentionKind::DecoderSelf, 1, 3);
    auto* pairs = m_tabs->find<PairView>();
    pairs->select(AttentionKind::EncoderSelf, 1, 0);  // each tab its own selection
    m_tabs->showView("decoding");
    const QString path = m_dir.filePath("session.json");
    QVERIFY(!m_lessons->saveSession(path));
    const attnlab::Lesson back = attnlab::readSession(path.toStdString());
    const attnlab::ViewState& v = back.steps.at(0).view;
    QCOMPARE(*v.tab, std::string("decoding"));
    QCOMPARE(*v.sentence, m_context->result()->source_text);
    QCOMPARE(*v.kind, AttentionKind::DecoderSelf);
    QCOMPARE(*v.layer, 1);
    QCOMPARE(*v.head, 3);
    QCOMPARE(v.selections.at("pairs"), (attnlab::HeadSelection{AttentionKind::EncoderSelf, 1, 0}));
    QCOMPARE(v.selections.at("attention"), (attnlab::HeadSelection{AttentionKind::DecoderSelf, 1, 3}));
    // Reopened elsewhere: the same view, every tab with its own selection.
    m_tabs->find<AttentionExplorer>()->select(AttentionKind::Cross, 0, 0);
    pairs->select(AttentionKind::Cross, 1, 3);
    m_tabs->showView("model");
    QVERIFY(!m_lessons->openSession(path));
    settle();
    QCOMPARE(m_tabs->currentName(), std::string("decoding"));
    QCOMPARE(m_tabs->find<AttentionExplorer>()->kind(), AttentionKind::DecoderSelf);
    QCOMPARE(m_tabs->find<AttentionExplorer>()->layer(), 1);
    QCOMPARE(m_tabs->find<AttentionExplorer>()->head(), 3);
    QCOMPARE(pairs->picker()->kind(), AttentionKind::EncoderSelf);
    QCOMPARE(pairs->picker()->layer(), 1);
    QCOMPARE(pairs->picker()->head(), 0);
    QVERIFY(m_lessons->saveSession(m_dir.filePath("no/such/dir/s.json")));  // the problem, not a crash
}

// Going back through a lesson shows the translations already made, from the cache.
void TestLessonController::steppingBackTranslatesNothing() {
    const QString path = write("three.json", R"({"format": "attnlab-lesson", "version": 1, "steps": [
        {"view": {"tab": "attention", "sentence": "Ein Pferd springt.", "beam": 5, "force_prefix": ""}},
        {"view": {"sentence": "Ein Pferd springt.", "force_prefix": "A"}},
        {"view": {"sentence": "Drei Katzen schlafen.", "beam": 2}}]})");
    QVERIFY(!m_lessons->openLesson(path));
    settle();
    for (int step : {1, 2}) {
        QVERIFY(!m_lessons->goToStep(step));
        settle();
    }
    QCOMPARE(m_context->result()->source_text, std::string("Drei Katzen schlafen."));
    QSignalSpy started(m_controller.get(), &TranslationController::translationStarted);
    QSignalSpy finished(m_controller.get(), &TranslationController::translationFinished);
    for (int step : {1, 0, 1, 2}) {
        QVERIFY(!m_lessons->goToStep(step));
        settle();
    }
    QCOMPARE(started.count(), 0);
    QVERIFY(finished.count() >= 4);
    QCOMPARE(m_context->result()->source_text, std::string("Drei Katzen schlafen."));
    QCOMPARE(m_context->resultOptions().beam_size, 2);
    QVERIFY(!m_lessons->goToStep(1));
    settle();
    QCOMPARE(m_context->result()->forced_text, std::string("A"));
    QCOMPARE(started.count(), 0);
}

// A step that forces a beginning onto a sentence not shown before (a lesson opened at its
// "What if?" step) translates the sentence freely first: the Decoding tab sets both side by side,
// as its caption asks ("compare the forced and the free score"), with the forced one shown.
void TestLessonController::aForcedStepShowsTheFreeTranslationBesideIt() {
    const QString path = write("what-if.json", R"({"format": "attnlab-lesson", "version": 1, "steps": [
        {"view": {"tab": "decoding", "sentence": "Zwei Katzen schlafen im Gras.", "force_prefix": "Hund"}}]})");
    QVERIFY(!m_lessons->openLesson(path));
    settle();
    QCOMPARE(m_context->result()->forced_text, std::string("Hund"));
    const QString text = m_tabs->find<DecodingView>()->comparisonText();
    QVERIFY2(text.contains("Free:") && text.contains("Forced"), qPrintable(text));
    // the free line is the model's own beginning, not the forced one
    const QString free = text.section("<b>Free:</b> ", 1).section(" <i>", 0, 0);
    QVERIFY2(!free.isEmpty() && !free.startsWith("Hund"), qPrintable(text));
}

// A cell beyond the sentence is only found when the step's translation has arrived: the failure of
// the weight it opens up still names the file and the step.
void TestLessonController::aStepsFailureNamesTheFileAndStep() {
    const QString path = write("far.json", R"({"format": "attnlab-lesson", "version": 1, "steps": [
        {"view": {"tab": "attention", "sentence": "Ein Hund.", "kind": "encoder", "layer": 0, "head": 1}},
        {"view": {"tab": "weight", "cell": [1, 40]}}]})");
    QVERIFY(!m_lessons->openLesson(path));
    settle();
    QSignalSpy failed(m_context, &ViewContext::failed);
    QVERIFY(!m_lessons->goToStep(1));
    settle();
    QVERIFY2(m_context->lastError().startsWith(path + ": step 2: key 40 is out of range"),
             qPrintable(m_context->lastError()));
    QVERIFY(std::any_of(failed.begin(), failed.end(),
                        [](const QList<QVariant>& f) { return f.at(0).value<Operation>() == Operation::Lesson; }));
    // The next step's own failures only: a translation typed afterwards is not the lesson's.
    m_context->translateSentence("");
    settle();
    QVERIFY2(!m_context->lastError().contains("step 2"), qPrintable(m_context->lastError()));
}

void TestLessonController::theCacheKeepsTheLastTranslations() {
    TranslationCache cache(2);
    attnlab::DecodingOptions o;
    auto result = [] { return std::make_shared<const attnlab::TranslationResult>(); };
    const auto a = result(), b = result(), c = result();
    cache.insert("m", "a", o, a);
    cache.insert("m", "b", o, b);
    QCOMPARE(cache.find("m", "a", o), a);  // now the most recently used
    cache.insert("m", "c", o, c);          // b leaves
    QCOMPARE(cache.size(), 2);
    QVERIFY(!cache.find("m", "b", o));
    QCOMPARE(cache.find("m", "c", o), c);
    QVERIFY(!cache.find("other model", "a", o));
    // Every option is part of the key.
    attnlab::DecodingOptions forced = o, ablated = o, wider = o;
    forced.force_prefix = "A";
    ablated.ablate = {{AttentionKind::Cross, 1, 0}};
    wider.beam_size = 6;
    for (const auto& other : {forced, ablated, wider}) QVERIFY(!cache.find("m", "a", other));
    QCOMPARE(cache.find("m", "a", o), a);
}

void TestLessonController::presenterModeAndBack() {
    QMenu menu;
    m_lessons->fillMenu(&menu);
    QAction* presenter = nullptr;
    for (QAction* a : menu.actions())
        if (a->shortcut() == QKeySequence(Qt::Key_F5)) presenter = a;
    QVERIFY(presenter);
    m_context->setTextSize(11, false);
    m_context->setPalette(Palette::Viridis, false);
    presenter->trigger();  // F5
    QVERIFY(m_lessons->presenterMode());
    QVERIFY(presenter->isChecked());
    QVERIFY(m_host->windowState() & Qt::WindowFullScreen);
    // Text sized to the screen: 18 pt on 1080 lines, the same share of a smaller screen's height.
    const int lines = m_host->screen()->size().height();
    QCOMPARE(m_context->textSize(), std::clamp(18.0 * lines / 1080.0, 12.0, 24.0));
    QCOMPARE(m_context->palette(), Palette::HighContrast);
    m_lessons->setPresenterMode(false);
    QVERIFY(!presenter->isChecked());
    QVERIFY(!(m_host->windowState() & Qt::WindowFullScreen));
    QCOMPARE(m_context->textSize(), 11.0);
    QCOMPARE(m_context->palette(), Palette::Viridis);
}

// `code` in a caption follows the text size (Qt's Markdown reader gave it the fixed font's 9 pt).
void TestLessonController::captionCodeFollowsTheTextSize() {
    LessonPane pane;
    pane.setLesson(attnlab::parseLesson(R"({"format": "attnlab-lesson", "version": 1,
        "steps": [{"caption": "the piece `▁Hunde` is looked up", "view": {}}]})",
                                        "l.json"),
                   "l.json");
    QVERIFY(pane.show(0));
    const auto codeSizes = [&pane] {
        QList<double> sizes;
        const QTextDocument* doc = pane.findChild<QTextBrowser*>()->document();
        for (QTextBlock b = doc->begin(); b.isValid(); b = b.next())
            for (auto it = b.begin(); !it.atEnd(); ++it)
                if (it.fragment().charFormat().font().fixedPitch() || it.fragment().charFormat().fontFixedPitch())
                    sizes << it.fragment().charFormat().font().pointSizeF();
        return sizes;
    };
    for (double points : {11.0, 20.0}) {
        m_context->setTextSize(points, false);
        QCoreApplication::processEvents();
        const QList<double> sizes = codeSizes();
        QCOMPARE(sizes.size(), 1);
        QCOMPARE(sizes.front(), points);
    }
    m_context->setTextSize(11, false);
}

// Issue 39, item 5: Qt's Markdown reader put a caption into the shown document span by span, and
// each code span was then resized by a change of its own; the document was laid out again after
// each change (a 30 KB caption took 57 s to show). The document now changes as many times for a
// caption of 2,000 spans as for one of 2: on showing the step and on a change of the text size.
void TestLessonController::aLongCaptionIsLaidOutOnce() {
    auto changes = [this](int spans) {
        attnlab::Lesson lesson;
        lesson.steps.push_back({"A long step", "", {}});
        for (int i = 0; i < spans; ++i) lesson.steps.back().caption += "the piece `▁Hund` ";
        LessonPane pane;
        pane.resize(500, 400);
        static_cast<QWidget&>(pane).show();  // laid out as in the app: a shown document has a size
        pane.setLesson(lesson, "l.json");
        QSignalSpy changed(pane.findChild<QTextBrowser*>()->document(), &QTextDocument::contentsChange);
        pane.show(0);
        const qsizetype on_show = changed.count();
        [&] { QCOMPARE(int(pane.captionText().count(QString("▁Hund"))), spans); }();  // the whole caption
        m_context->setTextSize(17, false);
        QCoreApplication::processEvents();
        m_context->setTextSize(11, false);
        QCoreApplication::processEvents();
        return std::make_pair(on_show, changed.count() - on_show);
    };
    const auto few = changes(2), many = changes(2000);
    QCOMPARE(many.first, few.first);
    QCOMPARE(many.second, few.second);
    QVERIFY2(many.first <= 2, qPrintable(QString::number(many.first)));  // emptied, then filled at once
}

// Lesson > Add this view as a step, three times; a caption edited in place (its Markdown
// rendered beside it), a step moved up twice and one deleted; saved, read back with core's reader,
// opened and presented: each step shows its view.
void TestLessonController::aLessonIsWrittenInTheApp() {
    LessonEditor* editor = m_lessons->editor();
    QVERIFY(editor->lesson().steps.empty());
    const auto add = [this](const char* tab, const char* sentence) {
        attnlab::ViewState v;
        v.tab = tab;
        v.sentence = sentence;
        m_lessons->applyView(v);
        settle();
        return m_lessons->addViewAsStep();
    };
    QVERIFY(!add("attention", "Ein Hund rennt."));
    QVERIFY(!add("decoding", "Zwei Hunde spielen."));
    QVERIFY(!add("inputs", "Eine Katze schläft."));
    QCOMPARE(editor->lesson().steps.size(), size_t(3));
    QCOMPARE(editor->selected(), 2);  // the step just added
    QVERIFY2(editor->stepText(1).contains("decoding") && editor->stepText(1).contains("Zwei Hunde spielen."),
             qPrintable(editor->stepText(1)));
    editor->select(1);
    editor->setStepTitle("Beams");
    editor->setCaption("The **beam** keeps `5` hypotheses.");
    QCOMPARE(editor->lesson().steps[1].caption, std::string("The **beam** keeps `5` hypotheses."));
    QVERIFY2(editor->previewText().contains("The beam keeps 5 hypotheses."), qPrintable(editor->previewText()));
    QVERIFY(editor->previewText().startsWith("Beams"));  // the title as the pane shows it
    editor->select(2);
    editor->moveSelected(-1);
    editor->moveSelected(-1);  // inputs, attention, decoding
    QCOMPARE(editor->selected(), 0);
    editor->moveSelected(-1);  // already first: nothing moves
    editor->select(1);
    editor->deleteSelected();  // inputs, decoding
    QCOMPARE(editor->lesson().steps.size(), size_t(2));
    editor->setLessonTitle("Written here");

    const QString path = m_dir.filePath("written.json");
    QVERIFY(!m_lessons->saveLesson(path));
    const attnlab::Lesson back = attnlab::readLesson(path.toStdString());
    QCOMPARE(back.title, std::string("Written here"));
    QVERIFY(!back.model.empty());  // the fixture's folder: the model the views were taken from
    QCOMPARE(back.steps.size(), size_t(2));
    QCOMPARE(*back.steps[0].view.tab, std::string("inputs"));
    QCOMPARE(*back.steps[0].view.sentence, std::string("Eine Katze schläft."));
    QCOMPARE(*back.steps[1].view.tab, std::string("decoding"));
    QCOMPARE(*back.steps[1].view.sentence, std::string("Zwei Hunde spielen."));
    QCOMPARE(back.steps[1].title, std::string("Beams"));
    QCOMPARE(back.steps[1].caption, std::string("The **beam** keeps `5` hypotheses."));
    const auto problem = m_lessons->saveLesson(m_dir.filePath("no/such/dir/l.json"));
    QVERIFY2(problem && problem->contains("no/such/dir/l.json"), qPrintable(problem.value_or("")));

    QVERIFY(!m_lessons->openLesson(path));
    settle();
    QCOMPARE(m_tabs->currentName(), std::string("inputs"));
    QCOMPARE(m_context->result()->source_text, std::string("Eine Katze schläft."));
    QVERIFY(!m_lessons->presentWritten(1));  // Present, from the selected step
    settle();
    QVERIFY(m_lessons->presenterMode());
    QCOMPARE(m_lessons->pane()->current(), 1);
    QCOMPARE(m_tabs->currentName(), std::string("decoding"));
    QCOMPARE(m_context->result()->source_text, std::string("Zwei Hunde spielen."));
    QVERIFY(m_lessons->pane()->captionText().contains("The beam keeps 5 hypotheses."));
    m_lessons->setPresenterMode(false);
}

// Issue 52: a step written in the app names its focus, one of the parts its tab has (none: the
// view's first part), saved with the lesson and offered again when the lesson is read back.
void TestLessonController::aWrittenStepsFocusIsSavedAndRead() {
    LessonEditor* editor = m_lessons->editor();
    editor->setLesson({}, {});
    attnlab::ViewState v;
    v.tab = "decoding";
    v.sentence = "Zwei Hunde spielen.";
    m_lessons->applyView(v);
    settle();
    QVERIFY(!m_lessons->addViewAsStep());
    QCOMPARE(editor->selected(), 0);
    QCOMPARE(editor->focusChoices(), QStringList({"", "candidates", "beams", "strip"}));
    QCOMPARE(editor->stepFocus(), QString());
    QVERIFY(!editor->lesson().steps[0].view.focus);
    editor->setStepFocus("strip");
    QCOMPARE(*editor->lesson().steps[0].view.focus, std::string("strip"));
    QVERIFY2(editor->stepText(0).contains("strip"), qPrintable(editor->stepText(0)));
    v.tab = "inputs";
    m_lessons->applyView(v);
    settle();
    QVERIFY(!m_lessons->addViewAsStep());  // another tab: its own parts offered
    QCOMPARE(editor->focusChoices().mid(1), QStringList({"embedding", "scaled", "positional", "normalized", "masks"}));
    editor->setStepFocus("masks");
    editor->setStepFocus("");  // back to none
    QVERIFY(!editor->lesson().steps[1].view.focus);
    const QString path = m_dir.filePath("focus.json");
    QVERIFY(!m_lessons->saveLesson(path));
    const attnlab::Lesson back = attnlab::readLesson(path.toStdString());
    QCOMPARE(back.steps.size(), size_t(2));
    QCOMPARE(back.steps[0].view.focus.value_or(""), std::string("strip"));
    QVERIFY(!back.steps[1].view.focus);
    QVERIFY(!m_lessons->openLesson(path));
    settle();
    QVERIFY(!m_lessons->editOpenLesson());
    QCOMPARE(editor->selected(), 0);
    QCOMPARE(editor->stepFocus(), QString("strip"));
    editor->select(1);
    QCOMPARE(editor->stepFocus(), QString());
    editor->setLesson({}, {});
}

// A copy of the fixture package whose attention history has `points` points of one-piece maps (what
// matters in these tests is their number); empty when it could not be made.
QString TestLessonController::packageWithHistory(const QString& name, int points) {
    const QString package = qEnvironmentVariable("ATTNLAB_TEST_PACKAGE");
    const QString dir = m_dir.filePath(name);
    if (!QDir().mkpath(dir)) return {};
    for (const char* f : {"config.json", "model.safetensors", "tokenizer.model"})
        if (!QFile::copy(package + "/" + f, dir + "/" + f)) return {};
    attnlab::AttentionHistory h;
    h.n_layers = 2;
    h.n_head = 4;
    h.probes.push_back({"a", "b", {"</s>"}, {"</s>"}, {"<s>"}});
    const attnlab::LayerHeadMaps one(2, std::vector<attnlab::Matrix>(4, attnlab::Matrix{{1.0f}}));
    for (int i = 0; i < points; ++i) {
        attnlab::HistoryPoint p;
        p.step = 10 * i;
        p.maps.push_back({one, one, one});
        h.points.push_back(p);
    }
    attnlab::writeAttentionHistory((dir + "/").toStdString() + attnlab::package_files::kAttentionHistory, h);
    return dir;
}

// A step's point is checked against the model's attention history once the history has been read
// (after the model: the lesson was shown by then), and when the lesson is opened once it is known.
void TestLessonController::aStepsPointIsCheckedAgainstTheHistory() {
    const QString package = qEnvironmentVariable("ATTNLAB_TEST_PACKAGE");
    const QString dir = packageWithHistory("with-history", 2);
    QVERIFY(!dir.isEmpty());
    const QString path = write("far.json", QStringLiteral(R"({"format": "attnlab-lesson", "version": 1,
        "model": "%1", "steps": [{"view": {"tab": "training", "point": 5}}]})")
                                               .arg(dir)
                                               .toUtf8());
    QSignalSpy failed(m_context, &ViewContext::failed);
    QVERIFY(!m_lessons->openLesson(path));  // the model is loaded first
    const QString why = path + ": step 1: point: 5 is out of range: the model's attention history has 2 points (1..2)";
    QTRY_VERIFY_WITH_TIMEOUT(
        std::any_of(failed.begin(), failed.end(), [&](const QList<QVariant>& f) { return f.at(1).toString() == why; }),
        30000);
    settle();
    QCOMPARE(m_lessons->openLesson(path).value_or(""), why);  // the history known: refused at once
    QSignalSpy loaded(m_context, &ViewContext::modelChanged);
    m_context->loadModel(package);  // the fixture again, for what follows
    QTRY_VERIFY_WITH_TIMEOUT(loaded.count() > 0, 30000);
    settle();
}

// `attnlab --lesson F` (issue 52): the app starts loading its model, and the lesson, opened before
// that model has arrived, names the same one. Its first step's point 1 was shown, then the model's
// second load read the history again and showed the last point. The step holds whichever way the
// lesson was opened, and its model is loaded once.
void TestLessonController::aStepsPointHoldsWhileItsModelLoads() {
    const QString package = qEnvironmentVariable("ATTNLAB_TEST_PACKAGE");
    const QString dir = packageWithHistory("three-points", 3);
    QVERIFY(!dir.isEmpty());
    const QString path = write("first-point.json", QStringLiteral(R"({"format": "attnlab-lesson", "version": 1,
        "model": "%1", "steps": [{"view": {"tab": "training", "point": 1}}]})")
                                                       .arg(dir)
                                                       .toUtf8());
    QSignalSpy loading(m_context, &ViewContext::modelLoading);
    m_context->loadModel(dir);  // the command line's model, still loading
    QVERIFY(!m_lessons->openLesson(path));
    settle();
    QTRY_VERIFY_WITH_TIMEOUT(!m_controller->busy(), 30000);
    settle();
    auto* training = qobject_cast<TrainingView*>(m_tabs->view("training"));
    QVERIFY(training && training->history());
    QCOMPARE(training->history()->points.size(), size_t(3));
    QCOMPARE(m_tabs->currentName(), std::string("training"));
    QVERIFY2(training->pointText().startsWith("point 1 of 3"), qPrintable(training->pointText()));
    QCOMPARE(loading.count(), 1);
    // A reload of the same model (another compute type) keeps the point shown.
    training->showPoint(1);
    QSignalSpy loaded(m_context, &ViewContext::modelChanged);
    m_context->loadModel(dir);
    QTRY_VERIFY_WITH_TIMEOUT(loaded.count() > 0, 30000);
    settle();
    QTRY_VERIFY_WITH_TIMEOUT(training->history(), 30000);
    QVERIFY2(training->pointText().startsWith("point 2 of 3"), qPrintable(training->pointText()));
    loaded.clear();
    m_context->loadModel(package);  // the fixture again, for what follows
    QTRY_VERIFY_WITH_TIMEOUT(loaded.count() > 0, 30000);
    settle();
}

// 18 pt on 1080 lines is read from the back of a room; a projected picture has one size on the
// wall, so a screen of other lines needs the same share of its height.
void TestLessonController::presenterTextFollowsTheScreen() {
    QCOMPARE(presenterTextSize(1080), 18.0);
    QCOMPARE(presenterTextSize(720), 12.0);
    QCOMPARE(presenterTextSize(900), 15.0);
    QCOMPARE(presenterTextSize(600), 12.0);   // no smaller than 12 pt
    QCOMPARE(presenterTextSize(2160), 24.0);  // nor larger than 24
}

// A caption a few lines too long for its pane shrinks until it fits (not below 80 % of the text
// size); one far too long keeps the full size and scrolls.
void TestLessonController::aCaptionShrinksToFit() {
    m_context->setTextSize(15, false);
    LessonPane pane;
    pane.resize(400, 300);
    static_cast<QWidget&>(pane).show();
    QCoreApplication::processEvents();
    const auto* browser = pane.findChild<QTextBrowser*>();
    // Lines of text until the caption just overflows at 15 pt.
    attnlab::Lesson lesson;
    lesson.steps.push_back({"", "", {}});
    pane.setLesson(lesson, "l.json");
    int words = 0;
    do {
        lesson.steps[0].caption += "word word word word ";
        words += 4;
        pane.setLesson(lesson, "l.json");
        pane.show(0);
        QCoreApplication::processEvents();
    } while (pane.captionTextSize() == 15.0 && words < 4000);
    QVERIFY2(words < 4000, "the caption never shrank");
    QVERIFY(pane.captionTextSize() >= 12.0 && pane.captionTextSize() < 15.0);
    QVERIFY(!pane.captionScrolls());
    QVERIFY(browser->document()->size().height() <= browser->viewport()->height());
    // Three times as long: it cannot fit at 12 pt, so it is read at 15 pt and scrolls.
    const std::string once = lesson.steps[0].caption;
    lesson.steps[0].caption = once + once + once;
    pane.setLesson(lesson, "l.json");
    pane.show(0);
    QCoreApplication::processEvents();
    QCOMPARE(pane.captionTextSize(), 15.0);
    QVERIFY(pane.captionScrolls());
    m_context->setTextSize(11, false);
}

QTEST_MAIN(TestLessonController)
#include "tst_lesson_controller.moc"
