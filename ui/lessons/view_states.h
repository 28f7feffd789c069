#pragma once
// ViewStates: reads the window's view as an attnlab::ViewState (File > Save session) and applies
// one (a lesson step, a reopened session, the app's --tab/--view/--layer/... options): the decoding
// options and the sentence first — a new translation when they differ from what is shown — then,
// once that translation has arrived, every view's part through the registry (ViewTabs). A forced
// beginning is translated after the same sentence's free translation, unless that is what is shown.

#include "document/view_context.h"

#include <attnlab/lesson.h>

#include <QObject>

#include <optional>
#include <utility>

namespace attnlab::ui {

class ViewTabs;

class ViewStates : public QObject {
    Q_OBJECT
public:
    ViewStates(ViewContext* context, ViewTabs* tabs, QObject* parent = nullptr);

    ViewState current() const;
    void apply(const ViewState& view);
    bool pending() const { return m_pending.has_value(); }

private:
    ViewContext* m_context;
    ViewTabs* m_tabs;
    std::optional<ViewState> m_pending;  // waiting for its translation
    // A forced beginning waits for its sentence's free translation first, so that the Decoding
    // tab has both to set side by side: the sentence and options to translate next.
    std::optional<std::pair<QString, DecodingOptions>> m_then;
};

}  // namespace attnlab::ui
