#include "lessons/lesson_controller.h"

#include "lessons/lesson_editor.h"
#include "lessons/lesson_pane.h"
#include "lessons/view_states.h"
#include "shell/view_registry.h"

#include <attnlab/errors.h>
#include <attnlab/hub.h>
#include <attnlab/package.h>

#include <QAction>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QMainWindow>
#include <QMenu>
#include <QMenuBar>
#include <QScreen>
#include <QStatusBar>
#include <QTabBar>
#include <QTimer>

#include <algorithm>
#include <utility>

namespace attnlab::ui {

namespace {
QString canonical(const std::string& dir) { return QFileInfo(QString::fromStdString(dir)).canonicalFilePath(); }

QString beyondTheEnd(const QString& origin, int index, int count) {
    return LessonController::tr("%1: step %2 is beyond the end (the lesson has %3 steps)")
        .arg(origin)
        .arg(index + 1)
        .arg(count);
}
}  // namespace

LessonController::LessonController(ViewContext* context, ViewTabs* tabs, QMainWindow* window)
    : QObject(window), m_context(context), m_window(window), m_tabs(tabs) {
    m_pane = new LessonPane(window);
    m_dock = new QDockWidget(tr("Lesson"), window);
    m_dock->setObjectName("lesson");
    m_dock->setWidget(m_pane);
    window->addDockWidget(Qt::RightDockWidgetArea, m_dock);
    m_dock->hide();
    m_views = new ViewStates(context, tabs, this);
    connect(m_pane, &LessonPane::stepShown, this, &LessonController::showStep);
    connect(context, &ViewContext::failed, this, &LessonController::nameTheStep);
    connect(context->controller(), &TranslationController::busyChanged, this, [this](bool busy) {
        if (!busy) stepSettled();
    });
    // A model on its way (the command line's, opened before the lesson): a lesson naming it waits
    // for that load rather than asking for a second one, which would reset the views its first step
    // had set once the first load had arrived.
    connect(context, &ViewContext::modelLoading, this, [this](const QString& dir) { m_loading = dir; });
    connect(context, &ViewContext::modelChanged, this, [this] {
        m_loading.clear();
        showPendingStep();
    });
    connect(context, &ViewContext::failed, this, [this](Operation op) {
        // the lesson's model did not load (or could not be got): no step waits
        if (op == Operation::LoadModel || op == Operation::GetModel) {
            m_pending_step = -1;
            m_loading.clear();
        }
    });
    connect(context, &ViewContext::fetchEnded, this, [this](const QString& name, bool got) {
        if (!got && name == m_pending_model) m_pending_step = -1;  // the lesson's model was not got
    });
    connect(context->controller(), &TranslationController::historyLoaded, this,
            [this](const QString& dir, HistoryPtr h) { historyRead(dir, h ? int(h->points.size()) : 0); });
    m_editor = new LessonEditor(window);
    m_editor->setPartNames(tabs->partNames());
    m_editor_dock = new QDockWidget(tr("Lesson editor"), window);
    m_editor_dock->setObjectName("lesson-editor");
    m_editor_dock->setWidget(m_editor);
    window->addDockWidget(Qt::RightDockWidgetArea, m_editor_dock);
    m_editor_dock->hide();
    connect(m_editor, &LessonEditor::saveRequested, this, [this] {
        const QString path = QFileDialog::getSaveFileName(m_window, tr("Save the lesson"),
                                                          m_editor->path().isEmpty() ? "lesson.json" : m_editor->path(),
                                                          tr("Lessons (*.json)"));
        if (!path.isEmpty()) report(Operation::SaveLesson, saveLesson(path));
    });
    connect(m_editor, &LessonEditor::presentRequested, this,
            [this](int first) { report(Operation::Lesson, presentWritten(first)); });
}

void LessonController::fillMenu(QMenu* menu) {
    menu->addAction(tr("&Open lesson…"), QKeySequence(tr("Ctrl+L")), this, [this] {
        const QString path = QFileDialog::getOpenFileName(
            m_window, tr("Open a lesson"), QString::fromStdString(bundledLessonsDir()), tr("Lessons (*.json)"));
        if (!path.isEmpty()) report(Operation::Lesson, openLesson(path));
    });
    QMenu* bundled = menu->addMenu(tr("&Bundled lessons"));
    for (const auto& l : bundledLessons()) {
        const QString path = QString::fromStdString(l.path);
        bundled->addAction(QString::fromStdString(l.title), this,
                           [this, path] { report(Operation::Lesson, openLesson(path)); });
    }
    bundled->setEnabled(!bundled->isEmpty());
    menu->addSeparator();
    // Past either end the keys only say so in the status bar (no box in front of a class).
    auto step = [this](int delta) {
        if (!m_pane->hasLesson()) return;
        if (const auto problem = goToStep(m_pane->current() + delta)) m_context->showStatus(*problem);
    };
    menu->addAction(tr("&Next step"), QKeySequence(Qt::Key_PageDown), this, [step] { step(1); });
    menu->addAction(tr("&Previous step"), QKeySequence(Qt::Key_PageUp), this, [step] { step(-1); });
    m_presenter_action = menu->addAction(tr("P&resenter mode"), this, [this](bool on) { setPresenterMode(on); });
    m_presenter_action->setCheckable(true);
    m_presenter_action->setShortcuts({QKeySequence(Qt::Key_F5)});
    auto* leave = new QAction(tr("Leave presenter mode"), m_window);
    leave->setShortcut(QKeySequence(Qt::Key_Escape));
    connect(leave, &QAction::triggered, this, [this] {
        if (m_presenter) setPresenterMode(false);
    });
    m_window->addAction(leave);
    menu->addSeparator();
    menu->addAction(tr("&Add this view as a step"), QKeySequence(tr("Ctrl+Shift+A")), this,
                    [this] { report(Operation::Lesson, addViewAsStep()); });
    menu->addAction(tr("&Write this lesson"), this, [this] { report(Operation::Lesson, editOpenLesson()); });
    menu->addAction(tr("Lesson &editor"), this, &LessonController::showEditor);
    menu->addSeparator();
    menu->addAction(tr("&Save session…"), QKeySequence::Save, this, [this] {
        const QString path = QFileDialog::getSaveFileName(m_window, tr("Save the view as a session"), "session.json",
                                                          tr("Sessions (*.json)"));
        if (!path.isEmpty()) report(Operation::SaveSession, saveSession(path));
    });
    menu->addAction(tr("Open s&ession…"), QKeySequence(tr("Ctrl+Shift+L")), this, [this] {
        const QString path =
            QFileDialog::getOpenFileName(m_window, tr("Open a session"), QString(), tr("Sessions (*.json)"));
        if (!path.isEmpty()) report(Operation::Lesson, openSession(path));
    });
}

void LessonController::report(Operation op, const std::optional<QString>& problem) {
    if (problem) m_context->reportFailure(op, *problem);
}

std::optional<QString> LessonController::problemWithLesson(const Lesson& lesson, const QString& origin,
                                                           bool with_model) const {
    try {
        checkLessonViews(lesson, viewNames(), origin.toStdString(), m_tabs->partNames());
        const auto info = m_context->model();
        if (with_model && info)
            checkLessonFitsModel(lesson, int(info->config.model.encoderLayers()), int(info->config.model.n_head),
                                 origin.toStdString(), int(info->config.model.decoderLayers()), historyPoints());
        return std::nullopt;
    } catch (const Error& e) {
        return QString::fromStdString(e.what());
    }
}

std::optional<QString> LessonController::start(const Lesson& lesson, const QString& origin, int first) {
    if (first < 0 || first >= int(lesson.steps.size())) return beyondTheEnd(origin, first, int(lesson.steps.size()));
    QString model_dir, to_get;
    try {
        const QString named = QString::fromStdString(lesson.model);
        // A Hugging Face name the cache lacks is got by the window (progress, cancel), then loaded.
        if (ViewContext::needsFetch(named))
            to_get = named;
        else if (!named.isEmpty())
            model_dir = QString::fromStdString(resolveModelArgument(lesson.model));
    } catch (const Error& e) {
        return tr("%1: model: %2").arg(origin, QString::fromStdString(e.what()));
    }
    const auto info = m_context->model();
    const bool other_model =
        !to_get.isEmpty() ||
        (!model_dir.isEmpty() && (!info || canonical(info->package_dir) != canonical(model_dir.toStdString())));
    // The views always; the model now when it is the lesson's, else once the lesson's has loaded.
    if (auto problem = problemWithLesson(lesson, origin, !other_model)) return problem;
    m_pane->setLesson(lesson, origin);
    m_dock->show();
    m_dock->raise();
    if (other_model || !info) {
        m_pending_step = first;  // shown once the model has loaded (showPendingStep)
        m_pending_model = !to_get.isEmpty() ? to_get : model_dir;
        const bool on_its_way =
            !m_loading.isEmpty() && canonical(m_loading.toStdString()) == canonical(model_dir.toStdString());
        if (!to_get.isEmpty())
            askToGet(to_get, origin);
        else if (other_model && !on_its_way)
            m_context->loadModel(model_dir);
        return std::nullopt;
    }
    m_pane->show(first);
    return std::nullopt;
}

// A lesson's model is the file's choice, not the person's: asked before a byte is fetched. Cancel
// leaves the lesson waiting for it, saying so in the pane; opening the lesson again asks again.
void LessonController::askToGet(const QString& name, const QString& origin) {
    auto answer = [this, self = QPointer<LessonController>(this), name](bool get) {
        // The window went, or another lesson (or a failure) took the step's place meanwhile.
        if (!self || m_pending_step < 0 || m_pending_model != name) return;
        if (get) return m_context->openModel(name);
        m_pending_step = -1;
        m_pane->showNotice(tr("This lesson uses the model `%1`, which is not on this computer, and it was not "
                              "got: the lesson waits for it. Open the lesson again to be asked again.")
                               .arg(name));
        m_context->showStatus(tr("%1 was not got: the lesson waits for its model").arg(name), 8000);
    };
    if (!m_ask_to_get) return answer(false);
    m_ask_to_get(name, origin, answer);
}

// Whether the model loaded from `dir` is the one a step waits for: its folder, or its Hugging Face name.
bool LessonController::isPendingModel(const std::string& dir) const {
    if (m_pending_model.isEmpty()) return true;  // (a step waiting for any model: none was loaded)
    const QString loaded = canonical(dir), wanted_dir = canonical(m_pending_model.toStdString());
    if (!loaded.isEmpty() && loaded == wanted_dir) return true;
    const auto got = hubNameOfSnapshot(dir);
    const auto wanted = parseHubModelName(m_pending_model.toStdString());
    return got && wanted && got->repo == wanted->repo;
}

void LessonController::showPendingStep() {
    if (m_pending_step < 0) return;
    // Another model loaded meanwhile (a compute-type switch while the lesson's model downloads): still waiting.
    if (const auto info = m_context->model(); info && !isPendingModel(info->package_dir)) return;
    const int step = std::exchange(m_pending_step, -1);
    if (const auto problem = problemWithLesson(m_pane->lesson(), m_pane->origin(), true))
        return m_context->reportFailure(Operation::Lesson, *problem);
    m_pane->show(step);
}

std::optional<QString> LessonController::openLesson(const QString& path, int first) {
    try {
        return start(readLesson(path.toStdString()), path, first);
    } catch (const Error& e) {
        return QString::fromStdString(e.what());
    }
}

std::optional<QString> LessonController::openSession(const QString& path) {
    try {
        return start(readSession(path.toStdString()), path, 0);
    } catch (const Error& e) {
        return QString::fromStdString(e.what());
    }
}

std::optional<QString> LessonController::goToStep(int index) {
    if (!m_pane->hasLesson()) return tr("no lesson is open (Lesson > Open lesson…)");
    if (!m_pane->show(index)) return beyondTheEnd(m_pane->origin(), index, m_pane->count());
    m_context->showStatus(tr("Lesson step %1 of %2").arg(index + 1).arg(m_pane->count()), 3000);
    return std::nullopt;
}

std::string LessonController::modelName() const {
    const auto info = m_context->model();
    if (!info) return {};
    const QString dir = canonical(info->package_dir);
    for (const auto& b : bundledModels())
        if (canonical(b.dir) == dir) return b.name;
    return dir.toStdString();
}

std::optional<QString> LessonController::saveSession(const QString& path) {
    LessonStep step;
    step.title = QFileInfo(path).completeBaseName().toStdString();
    step.view = m_views->current();
    const std::string model = modelName();
    try {
        writeSession(path.toStdString(), step, model);
        m_context->showStatus(tr("Session saved to %1").arg(path));
        return std::nullopt;
    } catch (const Error& e) {
        return QString::fromStdString(e.what());
    }
}

void LessonController::applyView(const ViewState& view) { m_views->apply(view); }

std::optional<int> LessonController::historyPoints() const {
    const auto info = m_context->model();
    if (!info || !m_history || m_history->first != canonical(info->package_dir)) return std::nullopt;
    return m_history->second;
}

// The history arrives after the model (read on the worker): an open lesson's points are checked
// against it then.
void LessonController::historyRead(const QString& package_dir, int points) {
    m_history = std::make_pair(QFileInfo(package_dir).canonicalFilePath(), points);
    if (!m_pane->hasLesson() || !historyPoints()) return;
    if (const auto problem = problemWithLesson(m_pane->lesson(), m_pane->origin(), true))
        m_context->reportFailure(Operation::Lesson, *problem);
}

void LessonController::showEditor() {
    m_editor_dock->show();
    m_editor_dock->raise();
}

std::optional<QString> LessonController::addViewAsStep() {
    if (!m_context->model()) return tr("no model is loaded: a step shows a model's view (File > Open model…)");
    if (m_editor->lesson().steps.size() >= kMaxLessonSteps)
        return tr("the lesson has %1 steps, the most a lesson may have").arg(kMaxLessonSteps);
    if (m_editor->lesson().steps.empty()) {
        Lesson fresh;
        fresh.title = m_editor->lesson().title;
        fresh.model = modelName();
        m_editor->setLesson(fresh, m_editor->path());
    }
    LessonStep step;
    step.view = m_views->current();
    for (const auto& e : viewEntries())
        if (step.view.tab && e.name == *step.view.tab) step.title = QString(e.title).remove('&').toStdString();
    m_editor->addStep(step);
    showEditor();
    m_context->showStatus(tr("Step %1 added to the lesson").arg(m_editor->lesson().steps.size()), 3000);
    return std::nullopt;
}

std::optional<QString> LessonController::editOpenLesson() {
    if (!m_pane->hasLesson()) return tr("no lesson is open (Lesson > Open lesson…)");
    m_editor->setLesson(m_pane->lesson(), m_pane->origin());
    showEditor();
    return std::nullopt;
}

std::optional<QString> LessonController::saveLesson(const QString& path) {
    try {
        writeLesson(path.toStdString(), m_editor->lesson());
    } catch (const Error& e) {
        return QString::fromStdString(e.what());
    }
    m_editor->setPath(path);
    m_context->showStatus(tr("Lesson saved to %1").arg(path));
    return std::nullopt;
}

std::optional<QString> LessonController::presentWritten(int first) {
    if (m_editor->lesson().steps.empty()) return tr("the lesson has no steps yet (Lesson > Add this view as a step)");
    const QString origin = m_editor->path().isEmpty() ? tr("the lesson being written") : m_editor->path();
    if (auto problem = start(m_editor->lesson(), origin, first)) return problem;
    setPresenterMode(true);
    return std::nullopt;
}

void LessonController::showStep(int index, const ViewState& view) {
    m_showing_step = index;
    m_showing_focus.reset();
    // Without a focus, the view's first part (as ViewTabs lays the step out).
    if (const auto focus = m_tabs->focusOf(view)) m_showing_focus = std::make_pair(*view.tab, *focus);
    m_views->apply(view);
    stepSettled();
}

void LessonController::stepSettled() {
    if (m_showing_step < 0 || m_context->controller()->unanswered() || m_views->pending()) return;
    m_showing_step = -1;
    // What the step's work drew (a translation, a weight opened up) is laid out once the events
    // now queued have run: then its focus is brought into view once more.
    if (const auto focus = std::exchange(m_showing_focus, std::nullopt))
        QTimer::singleShot(0, this, [this, focus] {
            if (QWidget* part = m_tabs->part(focus->first, focus->second)) ViewTabs::bringIntoView(part);
        });
}

void LessonController::nameTheStep(Operation op, const QString& message) {
    if (m_showing_step < 0 || op == Operation::Lesson || op == Operation::LoadModel) return;
    const int step = std::exchange(m_showing_step, -1);
    m_context->reportFailure(Operation::Lesson, tr("%1: step %2: %3").arg(m_pane->origin()).arg(step + 1).arg(message));
}

bool LessonController::pending() const { return m_views->pending() || m_pending_step >= 0; }

// Presenter mode gives the room to the view and the caption: the menu bar, the status bar and the
// tab bar fold away (the lesson chooses the tab; PageUp / PageDown, F5 and Escape still work: the
// menus' actions are the window's while their bar is hidden, as a hidden menu bar's shortcuts are
// not).
void LessonController::foldChrome(bool fold) {
    QMenuBar* bar = m_window->menuBar();
    if (fold) {
        for (QAction* menu : bar->actions())
            if (const QMenu* m = menu->menu())
                for (QAction* a : m->actions())
                    if (!a->shortcut().isEmpty() && !m_window->actions().contains(a)) m_lent_actions << a;
        m_window->addActions(m_lent_actions);
    } else {
        for (QAction* a : std::as_const(m_lent_actions)) m_window->removeAction(a);
        m_lent_actions.clear();
    }
    bar->setVisible(!fold);
    m_window->statusBar()->setVisible(!fold);
    m_tabs->tabBar()->setVisible(!fold);
}

// A projected picture has one size on the wall whatever its pixels: 18 pt on a 1080-line screen
// is read from the back of a room, and a 720-line one needs the same share of its height (12 pt,
// whose 16 px there are as tall on the wall as 24 px on 1080 lines). Capped at 24 pt for
// screens of more lines than that.
double presenterTextSize(int lines) { return std::clamp(18.0 * lines / 1080.0, 12.0, 24.0); }

void LessonController::setPresenterMode(bool on) {
    if (on == m_presenter) return;
    m_presenter = on;
    if (m_presenter_action) m_presenter_action->setChecked(on);
    if (on) {
        m_saved_text_size = m_context->textSize();
        m_saved_palette = m_context->palette();
        const QScreen* screen = m_window->screen();
        m_context->setTextSize(presenterTextSize(screen ? screen->size().height() : 1080), /*remember=*/false);
        m_context->setPalette(Palette::HighContrast, /*remember=*/false);
        m_dock->show();
        m_editor_before_presenting = m_editor_dock->isVisible();  // the class sees the lesson, not its making
        m_editor_dock->hide();
        m_context->setPresenting(true);
        foldChrome(true);
        m_saved_geometry = m_window->geometry();
        // The whole screen even where no window manager grants the full-screen state (a bare X
        // server, a projector's kiosk session): the state is asked for, and the size set too.
        if (screen) m_window->setGeometry(screen->geometry());
        m_window->showFullScreen();
    } else {
        m_context->setTextSize(m_saved_text_size, false);
        m_context->setPalette(m_saved_palette, false);
        m_context->setPresenting(false);
        foldChrome(false);
        if (std::exchange(m_editor_before_presenting, false)) m_editor_dock->show();
        m_window->showNormal();
        if (m_saved_geometry.isValid()) m_window->setGeometry(m_saved_geometry);
    }
}

}  // namespace attnlab::ui
