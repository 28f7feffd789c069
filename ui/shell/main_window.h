#pragma once
// MainWindow: the shell. It builds the context, the sentence row, the registered views (ViewTabs)
// and the lesson controller, fills the menus and the status bar, and reports failures — the one
// place they are handled. It holds no logic of its own: views follow the context themselves.

#include "document/view_context.h"

#include <QMainWindow>

#include <optional>

class QLabel;
class QMenu;

namespace attnlab::ui {

class DownloadPanel;
class LessonController;
class ToyTrainerDialog;
class TranslatePanel;
class ViewTabs;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    // error_dialogs: failures the user asked for in a menu also open a message box (a desktop
    // session); without, they go to the status bar and context()->lastError() only (headless runs).
    explicit MainWindow(TranslationController* controller, bool error_dialogs = true, QWidget* parent = nullptr);

    ViewContext* context() const { return m_context; }
    ViewTabs* views() const { return m_views; }
    TranslatePanel* translatePanel() const { return m_translate; }
    // File › Models and the direction switch listed again: the bundled models and the installed Argos packages
    // (after File › Get a model… installed or removed one).
    void fillModelsMenu();
    LessonController* lessons() const { return m_lessons; }

    // File > Export: the current view's figure (.png or .pdf), the attention as JSON.
    [[nodiscard]] std::optional<QString> exportCurrentView(const QString& path) const;
    [[nodiscard]] std::optional<QString> exportAttentionJson(const QString& path) const;
    [[nodiscard]] std::optional<QString> exportCurrentAnimation(const QString& path);  // .gif or a .png series
    // Help > Keyboard shortcuts: every menu shortcut and the explorer's own keys, as an HTML table.
    QString shortcutsHtml() const;

protected:
    void dragEnterEvent(QDragEnterEvent* e) override;
    void dropEvent(QDropEvent* e) override;

private:
    void buildFileMenu();
    void buildViewMenu();
    void buildHelpMenu();
    void follow();  // status bar, title, recent models
    void restoreAppearance();
    void rebuildRecentMenu();
    void showGetModelDialog();  // File › Get a model…
    void report(Operation op, const QString& message);
    void exportTo(const QString& title, const QString& name, const QString& filter,
                  std::optional<QString> (MainWindow::*write)(const QString&) const);

    ViewContext* m_context;
    DownloadPanel* m_download;
    TranslatePanel* m_translate;
    ViewTabs* m_views;
    LessonController* m_lessons;
    QMenu* m_recent = nullptr;
    QMenu* m_models_menu = nullptr;
    QLabel* m_status_model;
    ToyTrainerDialog* m_toy = nullptr;  // File > Train a small model…, made when first asked for
    QList<QAction*> m_palette_actions;
    double m_default_text_size = 0;
    bool m_error_dialogs;
};

}  // namespace attnlab::ui
