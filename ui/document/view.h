#pragma once
// View: one page of the window (a tab), registered once in view_registry.cpp. A view follows the
// ViewContext by itself (it connects to the context's signals in its constructor), exports its
// figure through figure(), and reads and applies its part of a lesson step or session.

#include "document/view_context.h"

#include <attnlab/lesson.h>

#include <QList>
#include <QWidget>

#include <optional>
#include <string>
#include <utility>
#include <vector>

class QAction;
class QCustomPlot;

namespace attnlab::ui {

class View : public QWidget {
    Q_OBJECT
public:
    View(ViewContext* context, QWidget* parent);
    // Disconnects the view's own controls from it: QWidget deletes them after every destructor of the
    // view has run, and a control that loses focus then (a spin box's editingFinished) would call the
    // view's handlers on a half-destroyed object.
    ~View() override;

    ViewContext* context() const { return m_context; }
    // What File > Export writes; null when there is nothing to export now (noFigureReason says why).
    virtual QCustomPlot* figure() const { return nullptr; }
    virtual QString noFigureReason() const;
    // Its figure over time (one frame per step of what it shows) as an animated .gif or a .png series
    // (NAME-001.png, …); the problem, or nothing. Most views have none.
    [[nodiscard]] virtual std::optional<QString> exportAnimation(const QString& path);
    // Its part of what a session saves (tab and decoding options are the registry's).
    virtual void saveState(ViewState& state) const;
    // Its part of a lesson step, once the step's translation is shown.
    virtual void applyState(const ViewState& state);
    // The plots and panels a lesson step may bring into view (its `focus`), by name, in the order
    // shown (docs/lessons.md lists them); the first is what a step without a focus shows first.
    using Parts = std::vector<std::pair<std::string, QWidget*>>;
    virtual Parts parts() const { return {}; }
    // Window-wide actions with their keys, listed in the View menu (Help > Keyboard shortcuts).
    virtual QList<QAction*> menuActions() const { return {}; }

protected:
    // A view with a head picker of its own keeps its choice in ViewState::selections under its name
    // in the registry (its objectName; a view without one saves none).
    std::optional<HeadSelection> ownSelection(const ViewState& state) const;
    void saveSelection(ViewState& state, const HeadSelection& selection) const;

private:
    ViewContext* m_context;
};

}  // namespace attnlab::ui
