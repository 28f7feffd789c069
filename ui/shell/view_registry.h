#pragma once
// The views of the window, in one table (view_registry.cpp): each with its name (what lessons,
// sessions and --tab say), its tab title, its key and its factory. The tab widget, the names a
// lesson may use, --tab, File > Export of the current view and the View menu's keys all come from
// it: a new view is one entry.

#include "document/view.h"

#include <QKeySequence>
#include <QPointer>
#include <QTabWidget>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace attnlab::ui {

struct ViewEntry {
    std::string name;  // "attention": lesson and session files, --tab
    QString title;     // "&Attention": the tab, with its mnemonic
    QKeySequence key;  // shows the view from anywhere; empty = none
    std::function<View*(ViewContext*, QWidget*)> make;
};

const std::vector<ViewEntry>& viewEntries();
std::vector<std::string> viewNames();  // in the window's order

// The tab widget of every registered view.
class ViewTabs : public QTabWidget {
    Q_OBJECT
public:
    ViewTabs(ViewContext* context, QWidget* parent = nullptr);

    View* view(const std::string& name) const;  // null for an unknown name
    template <typename T>
    T* find() const {
        for (View* v : m_views)
            if (auto* t = qobject_cast<T*>(v)) return t;
        return nullptr;
    }
    View* currentView() const;  // the shown view (each tab holds its view in a scroll area)
    std::string currentName() const;
    // Shows the named view; false for a name that is not registered.
    bool showView(const std::string& name);
    // File > Export: the current view's figure as PNG or PDF (by suffix); the problem, or nothing.
    [[nodiscard]] std::optional<QString> exportCurrent(const QString& path) const;
    [[nodiscard]] std::optional<QString> exportCurrentAnimation(const QString& path);  // View::exportAnimation
    // What a session saves: the current tab and every view's part.
    void saveState(ViewState& state) const;
    // Every view's part of a step, in the table's order, then the step's tab, then its focus.
    void applyState(const ViewState& state);
    // Every view's part names (View::parts), by view name: what a lesson's focus may name.
    std::map<std::string, std::vector<std::string>> partNames() const;
    // A view's part by name; null for an unknown view or part.
    QWidget* part(const std::string& view, const std::string& name) const;
    // The part a step is laid out around: its focus, or without one its tab's first part (a step written
    // in the app before it could name one); nothing without a tab, or for a view of no parts.
    std::optional<std::string> focusOf(const ViewState& state) const;
    // Gives the part the largest width in every side-by-side splitter it sits in, then scrolls every scroll
    // area around it so that it is in sight (all of it, where it fits).
    static void bringIntoView(QWidget* part);
    // bringIntoView, and again (scrolling only) whenever the part changes size until another part
    // is kept or its tab is left: a lesson step's focus whose content arrives later (the masks,
    // a longer translation's maps) stays in sight. Null: none is kept.
    void keepInView(QWidget* part);
    // Every view's own actions, then the keys that show views.
    QList<QAction*> menuActions() const;

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    static void scrollTo(QWidget* part);
    std::vector<View*> m_views;  // in the table's order
    QPointer<QWidget> m_kept;    // keepInView's part
    QList<QAction*> m_show_actions;
};

}  // namespace attnlab::ui
