#include "shell/view_registry.h"

#include "document/file_save.h"
#include "headlab/head_lab_view.h"
#include "plots/attention_view.h"
#include "views/attention_explorer.h"
#include "views/decoding_view.h"
#include "views/inputs_view.h"
#include "views/logit_lens_view.h"
#include "views/model_panel.h"
#include "views/pair_view.h"
#include "views/positional_view.h"
#include "views/saliency_view.h"
#include "views/training_view.h"
#include "views/weight_view.h"

#include <qcustomplot.h>

#include <QAction>
#include <QApplication>
#include <QScrollArea>
#include <QSplitter>
#include <QTimer>

#include <algorithm>

namespace attnlab::ui {

namespace {
template <typename T>
std::function<View*(ViewContext*, QWidget*)> factory() {
    return [](ViewContext* c, QWidget* parent) -> View* { return new T(c, parent); };
}

// A view in a scroll area: a view wider or taller than the room it has (a large text size on a
// small screen) scrolls instead of widening the window past its screen.
QWidget* scrolling(View* v) {
    auto* area = new QScrollArea;
    area->setWidgetResizable(true);
    area->setFrameShape(QFrame::NoFrame);
    area->setWidget(v);
    return area;
}
}  // namespace

// The one table of views. Order: the tabs' order, and the order in which a step's parts apply
// (the attention view first: it sets the head other views fall back on).
const std::vector<ViewEntry>& viewEntries() {
    static const std::vector<ViewEntry> entries{
        {"attention", QObject::tr("&Attention"), {}, factory<AttentionExplorer>()},
        {"saliency", QObject::tr("&Saliency"), {}, factory<SaliencyView>()},
        {"decoding", QObject::tr("&Decoding"), {}, factory<DecodingView>()},
        {"lens", QObject::tr("Lo&git lens"), {}, factory<LogitLensView>()},
        {"weight", QObject::tr("&Weight"), {}, factory<WeightView>()},
        {"inputs", QObject::tr("&Inputs"), {}, factory<InputsView>()},
        {"pairs", QObject::tr("Minimal pai&rs"), {}, factory<PairView>()},
        {"heads", QObject::tr("&Heads"), {}, factory<HeadLabView>()},
        {"training", QObject::tr("&Training"), {}, factory<TrainingView>()},
        {"positional", QObject::tr("&Positional encoding"), QKeySequence(QObject::tr("Ctrl+4")),
         factory<PositionalEncodingView>()},
        {"model", QObject::tr("&Model"), QKeySequence(QObject::tr("Ctrl+5")), factory<ModelPanel>()},
    };
    return entries;
}

std::vector<std::string> viewNames() {
    std::vector<std::string> names;
    for (const auto& e : viewEntries()) names.push_back(e.name);
    return names;
}

ViewTabs::ViewTabs(ViewContext* context, QWidget* parent) : QTabWidget(parent) {
    for (const auto& e : viewEntries()) {
        View* v = e.make(context, this);
        v->setObjectName(QString::fromStdString(e.name));
        m_views.push_back(v);
        addTab(scrolling(v), e.title);
        if (e.key.isEmpty()) continue;
        auto* show = new QAction(QString(e.title).remove('&'), this);
        show->setShortcut(e.key);
        connect(show, &QAction::triggered, this, [this, i = count() - 1] { setCurrentIndex(i); });
        m_show_actions << show;
    }
    connect(context, &ViewContext::viewRequested, this, [this](const std::string& name) { showView(name); });
}

View* ViewTabs::currentView() const {
    const int i = currentIndex();
    return i >= 0 && i < int(m_views.size()) ? m_views[i] : nullptr;
}

View* ViewTabs::view(const std::string& name) const {
    const auto& entries = viewEntries();
    for (size_t i = 0; i < entries.size(); ++i)
        if (entries[i].name == name) return m_views[i];
    return nullptr;
}

std::string ViewTabs::currentName() const {
    const int i = currentIndex();
    return i >= 0 && i < int(m_views.size()) ? viewEntries()[i].name : std::string();
}

bool ViewTabs::showView(const std::string& name) {
    const auto& entries = viewEntries();
    for (size_t i = 0; i < entries.size(); ++i) {
        if (entries[i].name != name) continue;
        if (currentIndex() != int(i)) keepInView(nullptr);  // its part is on the tab left
        setCurrentIndex(int(i));                            // tab i holds m_views[i]
        return true;
    }
    return false;
}

std::optional<QString> ViewTabs::exportCurrent(const QString& path) const {
    const View* v = currentView();
    QCustomPlot* plot = v ? v->figure() : nullptr;
    if (!plot) return v ? v->noFigureReason() : tr("no view is shown");
    return savePlot(plot, path, 1200, 900, 2.0);
}

std::optional<QString> ViewTabs::exportCurrentAnimation(const QString& path) {
    View* v = currentView();
    return v ? v->exportAnimation(path) : tr("no view is shown");
}

void ViewTabs::saveState(ViewState& state) const {
    if (const auto name = currentName(); !name.empty()) state.tab = name;
    for (const View* v : m_views) v->saveState(state);
}

void ViewTabs::applyState(const ViewState& state) {
    for (View* v : m_views) v->applyState(state);
    if (state.tab) showView(*state.tab);
    // Without a focus, the view's first part: the step is laid out around it all the same (a
    // Decoding step written in the app had shown its strip at 4 px a row).
    const auto focus = focusOf(state);
    QWidget* p = focus ? part(*state.tab, *focus) : nullptr;
    keepInView(p);
    // Again once what the step changed is laid out (a new translation's plots resize).
    if (p) QTimer::singleShot(0, p, [p] { bringIntoView(p); });
}

std::map<std::string, std::vector<std::string>> ViewTabs::partNames() const {
    std::map<std::string, std::vector<std::string>> out;
    const auto& entries = viewEntries();
    for (size_t i = 0; i < entries.size(); ++i)
        for (const auto& [name, widget] : m_views[i]->parts()) out[entries[i].name].push_back(name);
    return out;
}

std::optional<std::string> ViewTabs::focusOf(const ViewState& state) const {
    const View* v = state.tab ? view(*state.tab) : nullptr;
    if (!v || (!state.focus && v->parts().empty())) return std::nullopt;
    return state.focus ? *state.focus : v->parts().front().first;
}

QWidget* ViewTabs::part(const std::string& view_name, const std::string& name) const {
    const View* v = view(view_name);
    if (!v) return nullptr;
    for (const auto& [n, widget] : v->parts())
        if (n == name) return widget;
    return nullptr;
}

namespace {
// The height the maps in `part` lack for readable rows (AttentionView::kReadableRowPx).
int missingHeight(const QWidget* part) {
    int missing = 0;
    if (const auto* map = qobject_cast<const AttentionView*>(part)) missing = map->missingHeight();
    for (const AttentionView* map : part->findChildren<AttentionView*>())
        if (map->isVisible()) missing = std::max(missing, map->missingHeight());
    return missing;
}

// A column (vertical splitter) gives the pane at `at` the height it lacks, `missing`: the other
// panes give theirs down to their minimum first and fold away (to their handle, from which they
// are dragged back) only where that is not enough.
void heightenPane(QSplitter* splitter, int at, int missing) {
    QList<int> sizes = splitter->sizes();
    for (int i = 0; i < sizes.size() && missing > 0; ++i) {
        if (i == at) continue;
        const QWidget* w = splitter->widget(i);
        const int spare = sizes[i] - std::max(w->minimumSizeHint().height(), w->minimumHeight());
        const int give = std::clamp(missing, 0, std::max(spare, 0));
        sizes[i] -= give;
        sizes[at] += give;
        missing -= give;
    }
    for (int i = 0; i < sizes.size() && missing > 0; ++i)
        if (i != at && splitter->isCollapsible(i)) {
            sizes[at] += sizes[i];
            missing -= sizes[i];
            sizes[i] = 0;
        }
    splitter->setSizes(sizes);
}

// A pane of maps beside the focus in a column (the Training tab's map above its curves) keeps the
// height its rows need where the column's other panes can give it down to their minimum, the focus
// last and down to a third of the column at most (its caption is about the focus): nothing is
// folded.
void heightenMapsBeside(QSplitter* splitter, int focus) {
    for (int at = 0; at < splitter->count(); ++at) {
        if (at == focus || !splitter->widget(at)->isVisible()) continue;
        int missing = missingHeight(splitter->widget(at));
        QList<int> sizes = splitter->sizes();
        int total = 0;
        for (int size : sizes) total += size;
        if (missing <= 0 || sizes[at] == 0) continue;
        // The focus gives last.
        for (int pass = 0; pass < 2 && missing > 0; ++pass)
            for (int i = 0; i < sizes.size() && missing > 0; ++i) {
                if (i == at || (i == focus) != (pass == 1) || missingHeight(splitter->widget(i)) > 0) continue;
                const QWidget* w = splitter->widget(i);
                const int keep =
                    std::max({w->minimumSizeHint().height(), w->minimumHeight(), i == focus ? total / 3 : 0});
                const int give = std::clamp(missing, 0, std::max(sizes[i] - keep, 0));
                sizes[i] -= give;
                sizes[at] += give;
                missing -= give;
            }
        splitter->setSizes(sizes);
    }
}

// Every splitter `part` sits in gives the pane that holds it the room: 60 % of a row's width (the
// other panes keeping their proportions in the rest), and in a column the height its maps need
// for readable rows (heightenPane). On a 1280 x 720 projector the Training tab's map had been a
// quarter of its row, its title wrapped over eight lines above a heatmap one pixel high, and then
// part of a column that the curves below it shared: 6 px a row. The splitter's own size is
// untouched, so nothing grows past the scroll area that must show all of it.
void widenPanesAround(QWidget* part) {
    for (QWidget* pane = part; pane; pane = pane->parentWidget()) {
        auto* splitter = qobject_cast<QSplitter*>(pane->parentWidget());
        if (!splitter) continue;
        const int at = splitter->indexOf(pane);
        if (at < 0 || splitter->count() < 2) continue;
        if (splitter->orientation() == Qt::Vertical) {
            // A pane folded for an earlier step's map gets half the column back.
            int total = 0;
            for (int s : splitter->sizes()) total += s;
            const int now = splitter->sizes()[at];
            const int folded =
                now < std::max(pane->minimumSizeHint().height(), pane->minimumHeight()) ? total / 2 - now : 0;
            heightenPane(splitter, at, std::max(missingHeight(part), folded));
            heightenMapsBeside(splitter, at);
            continue;
        }
        QList<int> sizes = splitter->sizes();
        int total = 0;
        for (int s : sizes) total += s;
        const int want = std::max(sizes[at], total * 6 / 10), others = total - sizes[at];
        for (int i = 0; i < sizes.size(); ++i)
            if (i != at) sizes[i] = others > 0 ? int(qint64(sizes[i]) * (total - want) / others) : 0;
        sizes[at] = want;
        splitter->setSizes(sizes);
    }
}
}  // namespace

void ViewTabs::bringIntoView(QWidget* part) {
    widenPanesAround(part);
    QApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
    scrollTo(part);
}

// Innermost first: a view with a scroll area of its own sits in the tab's.
void ViewTabs::scrollTo(QWidget* part) {
    for (QWidget* w = part->parentWidget(); w; w = w->parentWidget())
        if (auto* area = qobject_cast<QScrollArea*>(w)) area->ensureWidgetVisible(part, 0, 0);
}

void ViewTabs::keepInView(QWidget* part) {
    if (m_kept) m_kept->removeEventFilter(this);
    m_kept = part;
    if (!part) return;
    part->installEventFilter(this);
    bringIntoView(part);
}

bool ViewTabs::eventFilter(QObject* watched, QEvent* event) {
    // A part shown only once its numbers come (ALTI+ through the whole model, computed after the step's
    // translation) gets its room when it appears: hidden, it had none.
    if (watched == m_kept && event->type() == QEvent::Show)
        QTimer::singleShot(0, m_kept, [part = m_kept] {
            if (part) bringIntoView(part);
        });
    if (watched == m_kept && event->type() == QEvent::Resize) {
        // Once the layout that resized it is done (a scroll area's range follows it).
        QTimer::singleShot(0, m_kept, [part = m_kept] {
            if (part) scrollTo(part);
        });
    }
    return QTabWidget::eventFilter(watched, event);
}

QList<QAction*> ViewTabs::menuActions() const {
    QList<QAction*> out;
    for (const View* v : m_views) out << v->menuActions();
    return out << m_show_actions;
}

}  // namespace attnlab::ui
