#include "views/attention_explorer.h"

#include "document/numbering.h"
#include "plots/attention_grid.h"
#include "plots/attention_view.h"
#include "views/whole_model_maps.h"
#include "widgets/head_picker.h"

#include <QAction>
#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QShortcut>
#include <QSignalBlocker>
#include <QSplitter>
#include <QVBoxLayout>

namespace attnlab::ui {

namespace {
// The output pieces as a map's rows: a forced one (a multilingual model's target language, a
// what-if's beginning) marked "▸", as the model did not choose it.
QStringList outputLabels(const TranslationResult& r) {
    QStringList out = toQStringList(r.best.pieces);
    for (int i = 0; i < std::min<int>(r.forced_tokens, int(out.size())); ++i) out[i] = QStringLiteral("▸") + out[i];
    return out;
}
}  // namespace

namespace {
QString noModelMessage() { return QObject::tr("No model loaded: File > Open model… (or drop a package folder here)"); }
// A one-map-per-layer method as the map's title and the grid's column name it: "rollout", "ALTI+", "value zeroing".
QString methodLabel(MapMeasure m) {
    return m == MapMeasure::AltiPlus       ? QObject::tr("ALTI+")
           : m == MapMeasure::ValueZeroing ? QObject::tr("value zeroing")
                                           : QObject::tr("rollout");
}
// Why a one-map-per-layer method has no heads to choose (the note above its grid).
QString whyPerLayer(MapMeasure m) {
    if (m == MapMeasure::AltiPlus)
        return QObject::tr("No heads: ALTI+ follows the whole layer (heads, residual, layer norms), one map a layer.");
    if (m == MapMeasure::ValueZeroing)
        return QObject::tr("No heads: value zeroing zeroes a piece in every head at once, one map a layer.");
    return QObject::tr("No heads: the rollout carries every head of the layers up to it, one map a layer.");
}
}  // namespace

AttentionExplorer::AttentionExplorer(ViewContext* context, QWidget* parent) : View(context, parent) {
    m_picker = new HeadPicker(AttentionKind::Cross, /*with_mean=*/true, this);
    m_fixed = new QCheckBox(tr("Fixed 0–1 colour range"), this);
    // What the maps show (docs/head-lab.md "Beyond raw weights").
    m_measure = new QComboBox(this);
    m_measure->setObjectName("method");
    m_measure->setAccessibleName(tr("Method"));
    for (MapMeasure m : kMapMeasures) m_measure->addItem(mapMeasureTitle(m), int(m));
    m_measure->setToolTip(
        tr("Method. Weights: the softmax. Weight × value norm: each weight times the length of what its key "
           "adds to the output (Kobayashi et al. 2020), rows normalised. Rollout: how much of each "
           "input position reaches a row after this layer, residuals included (Abnar & Zuidema "
           "2020). ALTI+: each input's contribution to the layer's output, residual stream and layer "
           "norms included (Ferrando et al. 2022). Value zeroing: how much a row's output changes when "
           "an input's value vectors are zeroed (Mohebbi et al. 2023). The last three: one map per "
           "layer, all heads together; ALTI+ and value zeroing are computed when chosen."));
    // While the Method's numbers are computed on the worker: a busy bar (Translator::contributions reports no
    // progress) and Stop.
    m_busy = new QWidget(this);
    auto* bar = new QProgressBar(m_busy);
    bar->setRange(0, 0);
    bar->setTextVisible(false);
    bar->setMaximumWidth(8 * fontMetrics().height());
    m_stop = new QPushButton(tr("Stop"), m_busy);
    m_stop->setObjectName("stopMethod");
    m_stop->setToolTip(tr("Stop computing the Method's maps for this translation and show the weights"));
    auto* busy = new QHBoxLayout(m_busy);
    busy->setContentsMargins(0, 0, 0, 0);
    busy->addWidget(bar);
    busy->addWidget(m_stop);
    m_busy->hide();
    m_fixed->setChecked(true);
    m_view = new AttentionView(this);
    m_grid = new AttentionGrid(this);
    m_per_layer = new QLabel(this);
    m_per_layer->setWordWrap(true);
    m_per_layer->hide();
    m_whole = new WholeModelMaps(this);
    m_whole->hide();

    auto* controls = new QHBoxLayout;
    controls->addWidget(m_picker);
    controls->addWidget(m_measure);
    controls->addWidget(m_busy);
    controls->addWidget(m_fixed);
    controls->addStretch();
    // Beside the map, the grid (with why a method has no heads above it) and below it a contribution method's
    // maps through the whole model. In a column of its own the grid could not keep its captions: a focused
    // whole-model step takes its height, the grid paging its layers (or folding away) as its captions need.
    auto* layers = new QWidget(this);
    auto* layers_layout = new QVBoxLayout(layers);
    layers_layout->setContentsMargins(0, 0, 0, 0);
    layers_layout->addWidget(m_per_layer);
    layers_layout->addWidget(m_grid, 1);
    auto* right = new QSplitter(Qt::Vertical, this);
    m_right = right;
    right->addWidget(layers);
    right->addWidget(m_whole);
    right->setStretchFactor(0, 3);
    right->setStretchFactor(1, 2);
    auto* split = new QSplitter(Qt::Horizontal, this);
    split->addWidget(m_view);
    split->addWidget(right);
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 1);
    split->setSizes({1000, 1000});  // half each: the grid's square cells need the width
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(controls);
    layout->addWidget(split, 1);

    connect(m_picker, &HeadPicker::changed, this, [this] { refresh(); });
    connect(m_measure, &QComboBox::currentIndexChanged, this,
            [this] { this->context()->setMeasure(MapMeasure(m_measure->currentData().toInt())); });
    connect(m_stop, &QPushButton::clicked, this, [this] { this->context()->stopMeasuring(); });
    connect(m_fixed, &QCheckBox::toggled, m_view, &AttentionView::setFixedRange);
    connect(m_fixed, &QCheckBox::toggled, m_whole, &WholeModelMaps::setFixedRange);
    connect(m_grid, &AttentionGrid::cellClicked, this, [this](int l, int h) { select(kind(), l, h); });
    connect(m_view, &AttentionView::cellClicked, this, [this](int row, int column) {
        const auto* maps = currentMaps();
        if (!maps || maps->empty() || head() >= int(maps->front().size())) return;  // the mean: no one head
        if (this->context()->measure() != MapMeasure::Weights) return;              // explain opens weights
        Q_EMIT cellChosen(CellRef{kind(), layer(), head(), row, column});
    });

    auto key = [this](QKeySequence seq, std::function<void()> f) {
        auto* s = new QShortcut(seq, this);
        s->setContext(Qt::WidgetWithChildrenShortcut);
        connect(s, &QShortcut::activated, this, f);
    };
    key(Qt::Key_Up, [this] { stepLayer(-1); });
    key(Qt::Key_Down, [this] { stepLayer(1); });
    key(Qt::Key_Left, [this] { stepHead(-1); });
    key(Qt::Key_Right, [this] { stepHead(1); });
    key(Qt::Key_1, [this] { setKind(AttentionKind::EncoderSelf); });
    key(Qt::Key_2, [this] { setKind(AttentionKind::DecoderSelf); });
    key(Qt::Key_3, [this] { setKind(AttentionKind::Cross); });
    setFocusPolicy(Qt::StrongFocus);
    buildActions();
    follow(context);
    m_empty_message = noModelMessage();
    refresh();
}

void AttentionExplorer::follow(ViewContext* c) {
    connect(c, &ViewContext::resultChanged, this, &AttentionExplorer::setResult);
    connect(c, &ViewContext::measuredMapsChanged, this, [this] {
        m_grid_maps = nullptr;
        refresh();
    });
    connect(c, &ViewContext::measureChanged, this, [this](MapMeasure m) {
        const QSignalBlocker quiet(m_measure);
        m_measure->setCurrentIndex(m_measure->findData(int(m)));
    });
    connect(c, &ViewContext::paletteChanged, this, &AttentionExplorer::setColorMap);
    connect(this, &AttentionExplorer::cellChosen, c, &ViewContext::explainCell);
    connect(c, &ViewContext::modelLoading, this, [this, c] {
        if (!c->model()) setEmptyMessage(tr("Loading the model…"));
    });
    connect(c, &ViewContext::modelChanged, this,
            [this] { setEmptyMessage(tr("Type a sentence above and press Enter (or pick one from Examples)")); });
    connect(c, &ViewContext::failed, this, [this, c](Operation op) {
        if (op == Operation::LoadModel && !c->model()) setEmptyMessage(noModelMessage());
    });
    connect(c, &ViewContext::headRequested, this, [this, c](const HeadRef& h, bool mean) {
        const auto* maps = currentMaps();
        const int heads = maps && !maps->empty() ? int(maps->front().size()) : h.head;
        select(h.kind, h.layer, mean ? heads : h.head);
        c->showView("attention");
    });
    setColorMap(c->palette());  // what the context holds already (a view may come after it was set)
    const QSignalBlocker quiet(m_measure);
    m_measure->setCurrentIndex(m_measure->findData(int(c->measure())));
}

// Window-wide keys (the View menu): each shows this view and acts on it.
void AttentionExplorer::buildActions() {
    auto add = [this](const QString& text, QList<QKeySequence> keys, std::function<void()> f) {
        auto* a = new QAction(text, this);
        a->setShortcuts(keys);
        connect(a, &QAction::triggered, this, [this, f] {
            context()->showView("attention");
            f();
        });
        m_actions << a;
    };
    for (const auto k : attentionKinds()) {
        const int n = int(k) + 1;  // Ctrl+1/2/3 and Alt+1/2/3: from the sentence field too
        add(kindTitle(k), {QKeySequence(tr("Ctrl+%1").arg(n)), QKeySequence(tr("Alt+%1").arg(n))},
            [this, k] { setKind(k); });
    }
    add(tr("Previous layer"), {QKeySequence(tr("Alt+Up"))}, [this] { stepLayer(-1); });
    add(tr("Next layer"), {QKeySequence(tr("Alt+Down"))}, [this] { stepLayer(1); });
    add(tr("Previous head"), {QKeySequence(tr("Alt+Left"))}, [this] { stepHead(-1); });
    add(tr("Next head"), {QKeySequence(tr("Alt+Right"))}, [this] { stepHead(1); });
}

QString AttentionExplorer::noFigureReason() const {
    return tr("translate a sentence first: the attention view is empty");
}

void AttentionExplorer::saveState(ViewState& state) const {
    state.kind = kind();
    state.layer = layer();
    state.head = head();
    saveSelection(state, {kind(), layer(), head()});
}

void AttentionExplorer::applyState(const ViewState& v) {
    if (const auto own = ownSelection(v)) return select(own->kind, own->layer, own->head);
    select(v.kind.value_or(kind()), v.layer.value_or(layer()), v.head.value_or(head()));
}

QCustomPlot* AttentionExplorer::figure() const { return m_view->map().empty() ? nullptr : m_view->plot(); }

void AttentionExplorer::stepLayer(int delta) { m_picker->stepLayer(delta); }
// A rollout or a contribution method has one map per layer: no head to step to.
void AttentionExplorer::stepHead(int delta) {
    if (!onePerLayer(context()->measure())) m_picker->stepHead(delta);
}
void AttentionExplorer::setKind(AttentionKind k) { m_picker->setKind(k); }

void AttentionExplorer::setColorMap(Palette palette) {
    m_view->setColorMap(palette);
    m_grid->setColorMap(palette);
    m_whole->setColorMap(palette);
}

void AttentionExplorer::setEmptyMessage(const QString& message) {
    m_empty_message = message;
    if (!currentMaps()) m_view->clear(message);
}

AttentionKind AttentionExplorer::kind() const { return m_picker->kind(); }
int AttentionExplorer::layer() const { return m_picker->layer(); }
int AttentionExplorer::head() const { return m_picker->head(); }

const LayerHeadMaps* AttentionExplorer::currentMaps() const {
    m_shown = m_result ? context()->measuredMaps(kind()) : nullptr;
    return m_shown.get();
}

void AttentionExplorer::setResult(ResultPtr result) {
    m_result = std::move(result);
    m_grid_maps = nullptr;
    refresh();
}

void AttentionExplorer::select(AttentionKind k, int layer, int head) {
    m_picker->select(k, layer, head);
    refresh();
}

void AttentionExplorer::refresh() {
    const LayerHeadMaps* maps = currentMaps();
    const MapMeasure measure = context()->measure();
    m_busy->setVisible(m_result && context()->measuring());
    m_busy->setToolTip(mapMeasureWaiting(measure));
    if (!maps || maps->empty() || maps->front().empty()) {
        const bool measuring = m_result && measure != MapMeasure::Weights;
        const QString problem = context()->measureProblem();
        const QString none = tr("%1 gives no %2 maps for this model.").arg(mapMeasureTitle(measure), kindTitle(kind()));
        m_view->clear(!measuring           ? m_empty_message
                      : !problem.isEmpty() ? problem
                      : maps               ? none
                                           : mapMeasureWaiting(measure));
        m_grid->setMaps({});
        m_grid_maps = nullptr;
        m_per_layer->hide();
        m_whole->hide();
        return;
    }
    const int layers = int(maps->size()), heads = int(maps->front().size());
    m_picker->setShape(layers, heads);  // heads == the mean
    // A rollout or a contribution method: one map per layer, whatever head the picker kept for the weights.
    const bool per_layer = onePerLayer(measure);
    m_picker->setHeadsShown(!per_layer);
    m_per_layer->setText(per_layer ? whyPerLayer(measure) : QString());
    m_per_layer->setVisible(per_layer);
    const int l = m_picker->layer(), h = per_layer ? 0 : m_picker->head();
    if (!per_layer) context()->setFocusedHead({kind(), l, std::min(h, heads - 1)});
    const Matrix map = h == heads ? AttentionGrid::meanOverHeads((*maps)[l]) : (*maps)[l][h];
    QStringList rows, cols;
    switch (kind()) {
    case AttentionKind::EncoderSelf:
        rows = cols = toQStringList(m_result->source_pieces);
        m_view->setAxisTitles(tr("query (source piece)"), tr("key (source piece)"));
        break;
    // A decoder row is the step whose output is that target piece; its own input is the
    // previous piece (<s> first), which is what the decoder self-attention keys show.
    case AttentionKind::DecoderSelf:
        rows = outputLabels(*m_result);
        cols = toQStringList(m_result->decoder_input_pieces);
        m_view->setAxisTitles(tr("query (step: its output piece)"), tr("key (decoder input piece)"));
        break;
    case AttentionKind::Cross:
        rows = outputLabels(*m_result);
        cols = toQStringList(m_result->source_pieces);
        m_view->setAxisTitles(tr("query (step: its output piece)"), tr("key (source piece)"));
        break;
    }
    const QString which =
        per_layer ? tr("%1, %2").arg(layerLabel(l), methodLabel(measure)) : layerHeadLabel(l, h, heads);
    m_view->setMap(map, rows, cols,
                   measure == MapMeasure::ValueNorm ? tr("%1 — %2 (weight × value norm)").arg(kindTitle(kind()), which)
                                                    : tr("%1 — %2").arg(kindTitle(kind()), which));
    if (m_grid_maps != maps) {
        m_grid->setColumnTitle(per_layer ? methodLabel(measure) : QString());
        m_grid->setMaps(*maps);
        m_grid_maps = maps;
    }
    std::vector<std::pair<int, int>> off;
    for (const auto& a : m_result->ablated)
        if (a.kind == kind()) off.emplace_back(a.layer, a.head);
    m_grid->setAblated(off);
    m_grid->setSelected(l, h);
    showWholeModel();
}

void AttentionExplorer::showWholeModel() {
    const auto method = contributionMethodOf(context()->measure());
    const ContributionsPtr c = method && m_result ? context()->contributions(*method) : nullptr;
    if (!c || c->source.empty()) {
        m_whole->hide();
        return;
    }
    m_whole->setContributions(*c, outputLabels(*m_result), toQStringList(m_result->source_pieces),
                              toQStringList(m_result->decoder_input_pieces));
    if (!m_whole->isHidden()) return;
    // Appearing: three fifths of the column stay the grid's (a lesson step about it takes more, ViewTabs).
    const int height = m_right->height();
    m_whole->show();
    m_right->setSizes({height * 3 / 5, height - height * 3 / 5});
}

QString AttentionExplorer::perLayerNote() const { return m_per_layer->isHidden() ? QString() : m_per_layer->text(); }

View::Parts AttentionExplorer::parts() const { return {{"map", m_view}, {"grid", m_grid}, {"whole", m_whole}}; }

}  // namespace attnlab::ui
