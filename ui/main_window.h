#pragma once
// MainWindow: menus, tabs and status bar around the panels; wiring only. The work happens in
// TranslationController (off the GUI thread) and the panels.

#include "plot_style.h"
#include "translation_controller.h"

#include <attnlab/lesson.h>

#include <QMainWindow>

#include <optional>

class QDockWidget;
class QMenu;
class QTabWidget;
class QLabel;

namespace attnlab::ui {

class AttentionExplorer;
class DecodingView;
class HeadLabView;
class InputsView;
class LessonPane;
class PairView;
class ViewStates;
class ModelPanel;
class WeightView;
class PositionalEncodingView;
class TranslatePanel;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    // error_dialogs: failures open a message box (a desktop session) or only go to the status
    // bar and lastError() (headless runs: --export/--screenshot, tests).
    explicit MainWindow(TranslationController* controller, bool error_dialogs = true, QWidget* parent = nullptr);

    enum class Tab { Attention, Decoding, Weight, Inputs, Pairs, Heads, Positional, Model };
    void showTab(Tab tab);
    // The tab a name of attnlab::lessonTabs() names ("attention", "decoding", ...); null if none.
    QWidget* tabNamed(const std::string& name) const;
    std::string tabName(const QWidget* tab) const;

    void openModel(const QString& dir);  // asynchronous; errors are shown, the old model stays
    // Asynchronous: the Weight tab shows how this weight of the last result came to be (an error
    // goes to lastError() and the tab). Switches to the Weight tab.
    void explainCell(const CellRef& cell);
    // Asynchronous; the result reaches every tab. The search's trace is always recorded.
    void translateSentence(const QString& sentence, const DecodingOptions& options);
    TranslatePanel* translatePanel() const { return m_translate; }
    AttentionExplorer* explorer() const { return m_explorer; }
    PositionalEncodingView* positional() const { return m_positional; }
    ModelPanel* modelPanel() const { return m_model; }
    DecodingView* decodingView() const { return m_decoding; }
    WeightView* weightView() const { return m_weight; }
    InputsView* inputsView() const { return m_inputs; }
    PairView* pairView() const { return m_pairs; }
    HeadLabView* headLab() const { return m_heads; }
    // The Heads tab on one page (asynchronous; what --heads does): "statistics" runs them over the
    // model's examples (teacher-forced through their references), "ablation" switches `ablate`
    // off and translates the sentence again, "alignment" aligns the first example with its gold.
    std::optional<QString> showHeadLab(const QString& page, const std::vector<HeadRef>& ablate);
    QTabWidget* tabs() const { return m_tabs; }
    ResultPtr lastResult() const { return m_result; }
    DecodingOptions resultOptions() const { return m_result_options; }  // of the last request
    QString lastError() const { return m_last_error; }

    // The app's text size in points (8-28): every widget and every plot follows it; the
    // translation is drawn larger still. remember: keep it in the settings for the next start.
    static constexpr double kMinTextSize = 8, kMaxTextSize = 28;
    double textSize() const;
    void setTextSize(double points, bool remember = true);
    void setColorMap(Palette palette, bool remember = true);
    Palette colorMap() const { return m_palette; }
    // Help > Keyboard shortcuts: every menu shortcut and the explorer's own keys, as an HTML table.
    QString shortcutsHtml() const;

    // The UI's error convention: an operation that can fail returns the reason, or nothing.
    // Export the current tab's figure; the format follows the suffix (.png or .pdf).
    std::optional<QString> exportCurrentView(const QString& path);
    std::optional<QString> exportAttentionJson(const QString& path);

    // Lessons (attnlab/lesson.h): open one and show its step `first` (0-based); a lesson naming
    // another bundled model loads it first. Errors name the file, the step and the field; the
    // window keeps what it had.
    std::optional<QString> openLesson(const QString& path, int first = 0);
    std::optional<QString> goToLessonStep(int index);
    // File > Save session / Open session: the current view as one lesson step.
    std::optional<QString> saveSession(const QString& path);
    std::optional<QString> openSession(const QString& path);
    // Full screen, text at least 18 pt, the high-contrast colour map, the caption pane shown;
    // off restores what was there.
    void setPresenterMode(bool on);
    bool presenterMode() const { return m_presenter; }
    LessonPane* lessonPane() const { return m_lesson; }
    ViewStates* viewStates() const { return m_views; }

protected:
    void dragEnterEvent(QDragEnterEvent* e) override;
    void dropEvent(QDropEvent* e) override;

private:
    void buildMenus();
    void wireTeaching();
    void wireInputs();
    void wireHeads();  // main_window_heads.cpp
    void buildLessonMenu();
    std::optional<QString> startLesson(const Lesson& lesson, const QString& origin, int first);
    void refreshInputs();  // asks for the Inputs tab's numbers when it shows a new result
    void rememberRecent(const QString& dir);
    void rebuildRecentMenu();
    void showError(const QString& title, const QString& message);
    void buildViewMenu();
    void restoreAppearance();

    TranslationController* m_controller;
    TranslatePanel* m_translate;
    AttentionExplorer* m_explorer;
    PositionalEncodingView* m_positional;
    ModelPanel* m_model;
    DecodingView* m_decoding;
    WeightView* m_weight;
    InputsView* m_inputs;
    PairView* m_pairs;
    HeadLabView* m_heads;
    bool m_inputs_stale = false;
    LessonPane* m_lesson;
    QDockWidget* m_lesson_dock;
    ViewStates* m_views;
    int m_pending_lesson_step = -1;  // shown once the lesson's model has loaded
    bool m_presenter = false;
    double m_saved_text_size = 0;
    Palette m_saved_palette = Palette::Blues;
    QAction* m_presenter_action = nullptr;
    QTabWidget* m_tabs;
    QMenu* m_recent = nullptr;
    QMenu* m_models_menu = nullptr;
    QLabel* m_status_model;
    ResultPtr m_result;
    DecodingOptions m_result_options;
    QString m_last_error;
    bool m_error_dialogs;
    Palette m_palette = Palette::Blues;
    QList<QAction*> m_palette_actions;
    double m_default_text_size = 0;
};

}  // namespace attnlab::ui
