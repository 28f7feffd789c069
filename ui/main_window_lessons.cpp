// MainWindow's lessons, sessions and presenter mode: wiring between the Lesson menu, LessonPane
// (captions) and ViewStates (what each step shows). The files are read and checked in core
// (attnlab/lesson.h).
#include "main_window.h"

#include "lesson_pane.h"
#include "view_states.h"

#include <attnlab/errors.h>
#include <attnlab/package.h>

#include <QAction>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QMenuBar>
#include <QStatusBar>

namespace attnlab::ui {

void MainWindow::buildLessonMenu() {
    m_lesson = new LessonPane(this);
    m_lesson_dock = new QDockWidget(tr("Lesson"), this);
    m_lesson_dock->setObjectName("lesson");
    m_lesson_dock->setWidget(m_lesson);
    addDockWidget(Qt::RightDockWidgetArea, m_lesson_dock);
    m_lesson_dock->hide();
    m_views = new ViewStates(this, m_controller);
    connect(m_lesson, &LessonPane::stepShown, this, [this](int, const ViewState& v) { m_views->apply(v); });

    QMenu* menu = menuBar()->addMenu(tr("&Lesson"));
    menu->addAction(tr("&Open lesson…"), QKeySequence(tr("Ctrl+L")), this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Open a lesson"), QString::fromStdString(bundledLessonsDir()),
                                                          tr("Lessons (*.json)"));
        if (path.isEmpty()) return;
        if (const auto error = openLesson(path)) showError(tr("Cannot open the lesson"), *error);
    });
    QMenu* bundled = menu->addMenu(tr("&Bundled lessons"));
    for (const auto& l : bundledLessons()) {
        const QString path = QString::fromStdString(l.path);
        bundled->addAction(QString::fromStdString(l.title), this, [this, path] {
            if (const auto error = openLesson(path)) showError(tr("Cannot open the lesson"), *error);
        });
    }
    bundled->setEnabled(!bundled->isEmpty());
    menu->addSeparator();
    menu->addAction(tr("&Next step"), QKeySequence(Qt::Key_PageDown), this, [this] {
        if (m_lesson->hasLesson()) goToLessonStep(m_lesson->current() + 1);
    });
    menu->addAction(tr("&Previous step"), QKeySequence(Qt::Key_PageUp), this, [this] {
        if (m_lesson->hasLesson()) goToLessonStep(m_lesson->current() - 1);
    });
    m_presenter_action = menu->addAction(tr("P&resenter mode"), this, [this](bool on) { setPresenterMode(on); });
    m_presenter_action->setCheckable(true);
    m_presenter_action->setShortcuts({QKeySequence(Qt::Key_F5)});
    auto* leave = new QAction(tr("Leave presenter mode"), this);
    leave->setShortcut(QKeySequence(Qt::Key_Escape));
    connect(leave, &QAction::triggered, this, [this] {
        if (m_presenter) setPresenterMode(false);
    });
    addAction(leave);
    menu->addSeparator();
    menu->addAction(tr("&Save session…"), QKeySequence::Save, this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, tr("Save the view as a session"), "session.json",
                                                          tr("Sessions (*.json)"));
        if (path.isEmpty()) return;
        if (const auto error = saveSession(path)) showError(tr("Cannot save the session"), *error);
    });
    menu->addAction(tr("Open s&ession…"), QKeySequence(tr("Ctrl+Shift+L")), this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Open a session"), QString(), tr("Sessions (*.json)"));
        if (path.isEmpty()) return;
        if (const auto error = openSession(path)) showError(tr("Cannot open the session"), *error);
    });
}

std::optional<QString> MainWindow::startLesson(const Lesson& lesson, const QString& origin, int first) {
    if (first < 0 || first >= int(lesson.steps.size()))
        return tr("%1: step %2 is beyond the end (the lesson has %3 steps)")
            .arg(origin)
            .arg(first + 1)
            .arg(lesson.steps.size());
    QString model_dir;
    try {
        if (!lesson.model.empty()) model_dir = QString::fromStdString(resolveModelArgument(lesson.model));
    } catch (const Error& e) {
        return tr("%1: model: %2").arg(origin, QString::fromStdString(e.what()));
    }
    const auto info = m_controller->modelInfo();
    const bool other_model =
        !model_dir.isEmpty() &&
        (!info || QFileInfo(QString::fromStdString(info->package_dir)).canonicalFilePath() !=
                      QFileInfo(model_dir).canonicalFilePath());
    if (info && !other_model) {
        try {
            checkLessonFitsModel(lesson, int(info->config.model.n_layers), int(info->config.model.n_head),
                                 origin.toStdString());
        } catch (const Error& e) {
            return QString::fromStdString(e.what());
        }
    }
    m_lesson->setLesson(lesson, origin);
    m_lesson_dock->show();
    m_lesson_dock->raise();
    if (other_model || !info) {
        m_pending_lesson_step = first;  // shown by the model-loaded handler
        if (other_model) openModel(model_dir);
        return std::nullopt;
    }
    m_lesson->show(first);
    return std::nullopt;
}

std::optional<QString> MainWindow::openLesson(const QString& path, int first) {
    try {
        const auto error = startLesson(readLesson(path.toStdString()), path, first);
        if (error) m_last_error = *error;
        return error;
    } catch (const Error& e) {
        m_last_error = QString::fromStdString(e.what());
        return m_last_error;
    }
}

std::optional<QString> MainWindow::goToLessonStep(int index) {
    if (!m_lesson->hasLesson()) return tr("no lesson is open (Lesson > Open lesson…)");
    if (!m_lesson->show(index))
        return tr("%1: step %2 is beyond the end (the lesson has %3 steps)")
            .arg(m_lesson->origin())
            .arg(index + 1)
            .arg(m_lesson->count());
    statusBar()->showMessage(tr("Lesson step %1 of %2").arg(index + 1).arg(m_lesson->count()), 3000);
    return std::nullopt;
}

std::optional<QString> MainWindow::saveSession(const QString& path) {
    LessonStep step;
    step.title = QFileInfo(path).completeBaseName().toStdString();
    step.view = m_views->current();
    std::string model;
    if (const auto info = m_controller->modelInfo()) {
        const QString dir = QFileInfo(QString::fromStdString(info->package_dir)).canonicalFilePath();
        model = dir.toStdString();
        for (const auto& b : bundledModels())
            if (QFileInfo(QString::fromStdString(b.dir)).canonicalFilePath() == dir) model = b.name;
    }
    try {
        writeSession(path.toStdString(), step, model);
        statusBar()->showMessage(tr("Session saved to %1").arg(path), 5000);
        return std::nullopt;
    } catch (const Error& e) {
        return QString::fromStdString(e.what());
    }
}

std::optional<QString> MainWindow::openSession(const QString& path) {
    try {
        const auto error = startLesson(readSession(path.toStdString()), path, 0);
        if (error) m_last_error = *error;
        return error;
    } catch (const Error& e) {
        m_last_error = QString::fromStdString(e.what());
        return m_last_error;
    }
}

void MainWindow::setPresenterMode(bool on) {
    if (on == m_presenter) return;
    m_presenter = on;
    m_presenter_action->setChecked(on);
    if (on) {
        m_saved_text_size = textSize();
        m_saved_palette = m_palette;
        setTextSize(std::max(18.0, textSize()), /*remember=*/false);
        setColorMap(Palette::HighContrast, /*remember=*/false);
        m_lesson_dock->show();
        showFullScreen();
    } else {
        setTextSize(m_saved_text_size, false);
        setColorMap(m_saved_palette, false);
        showNormal();
    }
}

}  // namespace attnlab::ui
