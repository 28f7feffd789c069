#pragma once
// ViewStates: reads the window's view as an attnlab::ViewState (File > Save session) and applies
// one (a lesson step, a reopened session): the decoding options and the sentence first — a new
// translation when they differ from what is shown — then kind, layer, head, decoding step, token,
// the opened-up cell and the tab, once that translation has arrived.

#include "translation_controller.h"

#include <attnlab/lesson.h>

#include <QObject>

#include <optional>

namespace attnlab::ui {

class MainWindow;

class ViewStates : public QObject {
    Q_OBJECT
public:
    ViewStates(MainWindow* window, TranslationController* controller);

    ViewState current() const;
    void apply(const ViewState& view);
    bool pending() const { return m_pending.has_value(); }

private:
    void applyDetails(const ViewState& view);
    MainWindow* m_window;
    TranslationController* m_controller;
    std::optional<ViewState> m_pending;  // waiting for its translation
};

}  // namespace attnlab::ui
