#include "attention_explorer.h"

#include "attention_grid.h"
#include "attention_view.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QShortcut>
#include <QSpinBox>
#include <QSplitter>
#include <QVBoxLayout>

namespace attnlab::ui {

QString kindName(AttentionKind kind) {
    switch (kind) {
    case AttentionKind::EncoderSelf: return QObject::tr("Encoder self-attention");
    case AttentionKind::DecoderSelf: return QObject::tr("Masked decoder self-attention");
    case AttentionKind::Cross: return QObject::tr("Decoder → encoder cross-attention");
    }
    return {};
}

QComboBox* makeKindCombo(QWidget* parent, AttentionKind initial) {
    auto* combo = new QComboBox(parent);
    for (auto k : {AttentionKind::EncoderSelf, AttentionKind::DecoderSelf, AttentionKind::Cross})
        combo->addItem(kindName(k));
    combo->setCurrentIndex(int(initial));
    return combo;
}

attnlab::AttentionKind coreKind(AttentionKind kind) {
    switch (kind) {
    case AttentionKind::EncoderSelf: return attnlab::AttentionKind::EncoderSelf;
    case AttentionKind::DecoderSelf: return attnlab::AttentionKind::DecoderSelf;
    case AttentionKind::Cross: return attnlab::AttentionKind::Cross;
    }
    return attnlab::AttentionKind::Cross;
}

AttentionExplorer::AttentionExplorer(QWidget* parent) : QWidget(parent) {
    m_kind = makeKindCombo(this, AttentionKind::Cross);
    m_layer = new QSpinBox(this);
    m_head = new QSpinBox(this);
    m_head->setSpecialValueText(QString());
    m_fixed = new QCheckBox(tr("Fixed 0–1 colour range"), this);
    m_fixed->setChecked(true);
    m_view = new AttentionView(this);
    m_grid = new AttentionGrid(this);

    auto* controls = new QHBoxLayout;
    controls->addWidget(m_kind);
    controls->addWidget(new QLabel(tr("Layer"), this));
    controls->addWidget(m_layer);
    controls->addWidget(new QLabel(tr("Head"), this));
    controls->addWidget(m_head);
    controls->addWidget(m_fixed);
    controls->addStretch();
    auto* split = new QSplitter(Qt::Horizontal, this);
    split->addWidget(m_view);
    split->addWidget(m_grid);
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 1);
    split->setSizes({1000, 1000});  // half each: the grid's square cells need the width
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(controls);
    layout->addWidget(split, 1);

    connect(m_kind, &QComboBox::currentIndexChanged, this, [this] { refresh(); });
    connect(m_layer, &QSpinBox::valueChanged, this, [this] { refresh(); });
    connect(m_head, &QSpinBox::valueChanged, this, [this] { refresh(); });
    connect(m_fixed, &QCheckBox::toggled, m_view, &AttentionView::setFixedRange);
    connect(m_grid, &AttentionGrid::cellClicked, this, [this](int l, int h) { select(kind(), l, h); });
    connect(m_view, &AttentionView::cellClicked, this, [this](int row, int column) {
        const auto* maps = currentMaps();
        if (!maps || maps->empty() || head() >= int(maps->front().size())) return;  // the mean: no one head
        Q_EMIT cellChosen(CellRef{coreKind(kind()), layer(), head(), row, column});
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
    refresh();
}

QCustomPlot* AttentionExplorer::figure() const { return m_view->map().empty() ? nullptr : m_view->plot(); }

void AttentionExplorer::stepLayer(int delta) { m_layer->setValue(m_layer->value() + delta); }
void AttentionExplorer::stepHead(int delta) { m_head->setValue(m_head->value() + delta); }
void AttentionExplorer::setKind(AttentionKind k) { m_kind->setCurrentIndex(int(k)); }

void AttentionExplorer::setColorMap(Palette palette) {
    m_view->setColorMap(palette);
    m_grid->setColorMap(palette);
}

void AttentionExplorer::setEmptyMessage(const QString& message) {
    m_empty_message = message;
    if (!currentMaps()) m_view->clear(message);
}

AttentionKind AttentionExplorer::kind() const { return static_cast<AttentionKind>(m_kind->currentIndex()); }
int AttentionExplorer::layer() const { return m_layer->value(); }
int AttentionExplorer::head() const { return m_head->value(); }

const LayerHeadMaps* AttentionExplorer::currentMaps() const {
    if (!m_result) return nullptr;
    switch (kind()) {
    case AttentionKind::EncoderSelf: return &m_result->encoder_self;
    case AttentionKind::DecoderSelf: return &m_result->decoder_self;
    case AttentionKind::Cross: return &m_result->cross;
    }
    return nullptr;
}

void AttentionExplorer::setResult(ResultPtr result) {
    m_result = std::move(result);
    m_grid_maps = nullptr;
    refresh();
}

void AttentionExplorer::select(AttentionKind k, int layer, int head) {
    const QSignalBlocker a(m_kind), b(m_layer), c(m_head);
    m_kind->setCurrentIndex(int(k));
    m_layer->setValue(layer);
    m_head->setValue(head);
    refresh();
}

void AttentionExplorer::refresh() {
    const LayerHeadMaps* maps = currentMaps();
    if (!maps || maps->empty() || maps->front().empty()) {
        m_view->clear(m_empty_message);
        m_grid->setMaps({});
        m_grid_maps = nullptr;
        return;
    }
    const int layers = int(maps->size()), heads = int(maps->front().size());
    {
        const QSignalBlocker a(m_layer), b(m_head);
        m_layer->setRange(0, layers - 1);
        m_head->setRange(0, heads);  // heads == the mean
        m_head->setSuffix(m_head->value() == heads ? tr(" (mean)") : QString());
    }
    const int l = m_layer->value(), h = m_head->value();
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
        rows = toQStringList(m_result->best.pieces);
        cols = toQStringList(m_result->decoder_input_pieces);
        m_view->setAxisTitles(tr("query (step: its output piece)"), tr("key (decoder input piece)"));
        break;
    case AttentionKind::Cross:
        rows = toQStringList(m_result->best.pieces);
        cols = toQStringList(m_result->source_pieces);
        m_view->setAxisTitles(tr("query (step: its output piece)"), tr("key (source piece)"));
        break;
    }
    const QString what = h == heads ? tr("mean over heads") : tr("head %1").arg(h);
    m_view->setMap(map, rows, cols, tr("%1 — layer %2, %3").arg(kindName(kind())).arg(l).arg(what));
    if (m_grid_maps != maps) {
        m_grid->setMaps(*maps);
        m_grid_maps = maps;
    }
    std::vector<std::pair<int, int>> off;
    for (const auto& a : m_result->ablated)
        if (a.kind == coreKind(kind())) off.emplace_back(a.layer, a.head);
    m_grid->setAblated(off);
    m_grid->setSelected(l, h);
}

}  // namespace attnlab::ui
