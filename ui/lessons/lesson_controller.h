#pragma once
// LessonController: lessons, sessions and presenter mode (attnlab/lesson.h reads and checks the
// files). It owns the lesson pane and its dock, the lesson editor and its dock, the Lesson menu,
// the view states and the step waiting for its model; a lesson is checked against the app's views,
// the model and its attention history in one place (problemWithLesson). Failures are returned to
// the caller, which reports them.

#include "document/view_context.h"

#include <attnlab/lesson.h>

#include <QAction>
#include <QList>
#include <QObject>
#include <QPointer>
#include <QRect>

#include <functional>
#include <optional>
#include <string>
#include <utility>

class QDockWidget;
class QMainWindow;
class QMenu;

namespace attnlab::ui {

// Presenter mode's text size on a screen of `lines` pixels' height: the same share of it as 18 pt
// of 1080 lines (12 pt at least, 24 at most).
double presenterTextSize(int lines);

class LessonEditor;
class LessonPane;
class ViewStates;
class ViewTabs;

class LessonController : public QObject {
    Q_OBJECT
public:
    // Adds the caption pane as a dock of `window` (hidden until a lesson opens).
    LessonController(ViewContext* context, ViewTabs* tabs, QMainWindow* window);

    // Asks whether to get `name`, a Hugging Face model the cache lacks that the lesson or session
    // `origin` names (a file may come from anyone: nothing is downloaded unasked), and calls
    // answer(true) to get it, answer(false) to leave it; it may answer later (a question in the
    // window). The shell wires it (DownloadQuestion); headless runs answer by their --allow-download.
    // Unwired, such a model is never got.
    using AskToGet =
        std::function<void(const QString& name, const QString& origin, std::function<void(bool get)> answer)>;
    void setAskToGet(AskToGet ask) { m_ask_to_get = std::move(ask); }

    // The Lesson menu: open, bundled lessons, next/previous step, presenter mode, sessions.
    void fillMenu(QMenu* menu);

    // Open a lesson and show its step `first` (0-based); a lesson naming another bundled model loads
    // it first. Errors name the file, the step and the field; the window keeps what it had.
    [[nodiscard]] std::optional<QString> openLesson(const QString& path, int first = 0);
    [[nodiscard]] std::optional<QString> goToStep(int index);
    // File > Save session / Open session: the current view as one lesson step.
    [[nodiscard]] std::optional<QString> saveSession(const QString& path);
    [[nodiscard]] std::optional<QString> openSession(const QString& path);
    // Full screen, text at least 18 pt, the high-contrast colour map, the caption pane shown;
    // off restores what was there.
    void setPresenterMode(bool on);
    bool presenterMode() const { return m_presenter; }

    LessonPane* pane() const { return m_pane; }
    ViewStates* viewStates() const { return m_views; }
    bool pending() const;  // a step waits for its translation
    // Applies a view state outside any lesson (the app's command line).
    void applyView(const ViewState& view);

    // Lesson writing (LessonEditor): the current view, as a session would save it, appended as a
    // step of the lesson being written (a new lesson of the loaded model when there is none).
    [[nodiscard]] std::optional<QString> addViewAsStep();
    // The open lesson to go on writing in the editor.
    [[nodiscard]] std::optional<QString> editOpenLesson();
    // The lesson being written, saved through core's writeLesson (atomic; errors name the file).
    [[nodiscard]] std::optional<QString> saveLesson(const QString& path);
    // The lesson being written, opened from step `first` in presenter mode.
    [[nodiscard]] std::optional<QString> presentWritten(int first);
    LessonEditor* editor() const { return m_editor; }

private:
    [[nodiscard]] std::optional<QString> start(const Lesson& lesson, const QString& origin, int first);
    // Why `lesson` cannot be shown with the loaded model and this app's views, or nothing.
    // with_model: also against the loaded model's shape.
    [[nodiscard]] std::optional<QString> problemWithLesson(const Lesson& lesson, const QString& origin,
                                                           bool with_model) const;
    void showPendingStep();  // once the lesson's model has loaded
    // The lesson's model is not in the cache: got once the person agrees (m_ask_to_get).
    void askToGet(const QString& name, const QString& origin);
    void foldChrome(bool fold);  // presenter mode: the menu, status and tab bars away
    void showStep(int index, const ViewState& view);
    // A failure of the work a step started (its translation, the weight it opens up, its pair)
    // names the lesson's file and the step, as the lesson's own errors do.
    void nameTheStep(Operation op, const QString& message);
    void stepSettled();  // the work the step started is done
    // Runs a menu's request and reports its problem.
    void report(Operation op, const std::optional<QString>& problem);
    // The loaded model as a lesson names it: a bundled model's name, else its folder.
    std::string modelName() const;
    // The points of the loaded model's attention history, once read (0: it has none).
    std::optional<int> historyPoints() const;
    void historyRead(const QString& package_dir, int points);
    void showEditor();

    ViewContext* m_context;
    QMainWindow* m_window;
    LessonPane* m_pane;
    QDockWidget* m_dock;
    ViewTabs* m_tabs;  // the views: their names and parts, for checking a lesson
    ViewStates* m_views;
    int m_pending_step = -1;
    QString m_pending_model;  // the folder or Hugging Face name that step waits for
    QString m_loading;        // the folder being loaded now (asked by anyone), until it loads or fails
    AskToGet m_ask_to_get;
    bool isPendingModel(const std::string& dir) const;
    int m_showing_step = -1;  // the step whose work is under way, for nameTheStep
    std::optional<std::pair<std::string, std::string>> m_showing_focus;  // its tab and focus
    bool m_presenter = false;
    double m_saved_text_size = 0;
    Palette m_saved_palette = Palette::Blues;
    QRect m_saved_geometry;                // the window before presenter mode
    QList<QAction*> m_lent_actions;        // the hidden menus' keys, the window's while presenting
    QPointer<QAction> m_presenter_action;  // the menu's (a menu may go before the controller)
    LessonEditor* m_editor;
    QDockWidget* m_editor_dock;
    bool m_editor_before_presenting = false;           // the editor's dock was shown: shown again after
    std::optional<std::pair<QString, int>> m_history;  // a package's folder and its history's points
};

}  // namespace attnlab::ui
