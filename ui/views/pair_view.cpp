#include "views/pair_view.h"

#include "document/numbering.h"
#include "plots/attention_view.h"
#include "widgets/head_picker.h"

#include <attnlab/explain.h>

#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>

namespace attnlab::ui {

namespace {

// The map of `kind` with its row and column pieces.
struct Shown {
    const Matrix* map = nullptr;
    const std::vector<std::string>* rows = nullptr;
    const std::vector<std::string>* columns = nullptr;
};

const LayerHeadMaps& mapsOf(const TranslationResult& r, AttentionKind kind) {
    return kind == AttentionKind::EncoderSelf   ? r.encoder_self
           : kind == AttentionKind::DecoderSelf ? r.decoder_self
                                                : r.cross;
}

Shown shown(const TranslationResult& r, AttentionKind kind, int layer, int head) {
    const LayerHeadMaps& maps = mapsOf(r, kind);
    if (layer >= int(maps.size()) || head >= int(maps[layer].size())) return {};
    const auto* rows = kind == AttentionKind::EncoderSelf ? &r.source_pieces : &r.best.pieces;
    const auto* cols = kind == AttentionKind::DecoderSelf ? &r.decoder_input_pieces : &r.source_pieces;
    return {&maps[layer][head], rows, cols};
}
}  // namespace

PairView::PairView(ViewContext* context, QWidget* parent) : View(context, parent) {
    m_sa = new QLineEdit(this);
    m_sb = new QLineEdit(this);
    m_sa->setPlaceholderText(tr("Sentence A, e.g. Der Hund beißt den Mann."));
    m_sb->setPlaceholderText(tr("Sentence B, one word changed, e.g. Den Hund beißt der Mann."));
    auto* compare = new QPushButton(tr("Compare"), this);
    m_picker = new HeadPicker(AttentionKind::EncoderSelf, /*with_mean=*/false, this);
    m_summary = new QLabel(this);
    m_summary->setWordWrap(true);
    m_a = new AttentionView(this);
    m_b = new AttentionView(this);
    m_diff = new AttentionView(this);
    m_diff->setDiverging(true);
    for (auto* v : {m_a, m_b, m_diff}) v->clear(tr("Type two sentences and press Compare"));

    // A and B side by side: the maps keep the height (a projector's 1280 x 720 at 18 pt).
    auto* inputs = new QHBoxLayout;
    inputs->addWidget(new QLabel(tr("A"), this));
    inputs->addWidget(m_sa, 1);
    inputs->addWidget(new QLabel(tr("B"), this));
    inputs->addWidget(m_sb, 1);
    inputs->addWidget(compare);
    auto* controls = new QHBoxLayout;
    controls->addWidget(m_picker);
    controls->addStretch();
    m_maps = new QWidget(this);
    auto* maps = new QHBoxLayout(m_maps);
    maps->setContentsMargins(0, 0, 0, 0);
    for (auto* v : {m_a, m_b, m_diff}) maps->addWidget(v, 1);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(inputs);
    layout->addLayout(controls);
    layout->addWidget(m_summary);
    layout->addWidget(m_maps, 1);

    connect(compare, &QPushButton::clicked, this, &PairView::requestCompare);
    connect(m_sb, &QLineEdit::returnPressed, this, &PairView::requestCompare);
    connect(m_sa, &QLineEdit::returnPressed, this, &PairView::requestCompare);
    connect(m_picker, &HeadPicker::changed, this, [this] { refresh(); });
    follow(context);
}

void PairView::follow(ViewContext* c) {
    connect(c, &ViewContext::paletteChanged, this, &PairView::setColorMap);
    setColorMap(c->palette());
    connect(this, &PairView::compareRequested, this,
            [c](const QString& a, const QString& b) { c->controller()->translatePair(a, b, c->decodingOptions()); });
    connect(c->controller(), &TranslationController::pairTranslated, this, &PairView::setPair);
    // A pair shown was the last model's: compared again by the new one, never left under its name.
    connect(c, &ViewContext::modelChanged, this, [this] {
        if (m_ra && m_rb) requestCompare();
    });
    connect(c, &ViewContext::failed, this, [this](Operation op, const QString& m) {
        if (op == Operation::TranslatePair) m_summary->setText(m);
    });
}

void PairView::saveState(ViewState& state) const {
    saveSelection(state, {m_picker->kind(), m_picker->layer(), m_picker->head()});
    const auto [a, b] = sentences();
    if (a.trimmed().isEmpty() || b.trimmed().isEmpty()) return;
    state.pair_a = a.toStdString();
    state.pair_b = b.toStdString();
}

// A step's pair is compared on its own selection (a session's), or on the step's kind and the
// attention view's layer and head.
void PairView::applyState(const ViewState& v) {
    const auto own = ownSelection(v);
    if (own) select(own->kind, own->layer, own->head);
    if (!v.pair_a || !v.pair_b) return;
    const HeadRef focus = context()->focusedHead();
    setSentences(QString::fromStdString(*v.pair_a), QString::fromStdString(*v.pair_b));
    if (!own) select(v.kind.value_or(focus.kind), focus.layer, focus.head);
    requestCompare();
}

void PairView::requestCompare() {
    if (m_sa->text().trimmed().isEmpty() || m_sb->text().trimmed().isEmpty()) {
        m_summary->setText(tr("Type both sentences."));
        return;
    }
    m_summary->setText(tr("Translating both…"));
    Q_EMIT compareRequested(m_sa->text(), m_sb->text());
}

void PairView::setSentences(const QString& a, const QString& b) {
    m_sa->setText(a);
    m_sb->setText(b);
}

std::pair<QString, QString> PairView::sentences() const { return {m_sa->text(), m_sb->text()}; }

void PairView::setColorMap(Palette palette) {
    m_a->setColorMap(palette);
    m_b->setColorMap(palette);
}

void PairView::setPair(ResultPtr a, ResultPtr b) {
    m_ra = std::move(a);
    m_rb = std::move(b);
    refresh();
}

void PairView::select(AttentionKind kind, int layer, int head) {
    m_picker->select(kind, layer, head);
    refresh();
}

QString PairView::summaryText() const { return m_summary->text(); }

void PairView::refresh() {
    if (!m_ra || !m_rb) return;
    const auto kind = m_picker->kind();
    // The kind's own layers: a student's encoder has more than its decoder.
    const LayerHeadMaps& maps = mapsOf(*m_ra, kind);
    m_picker->setShape(int(maps.size()), maps.empty() ? 0 : int(maps[0].size()));
    const int layer = m_picker->layer(), head = m_picker->head();
    const Shown a = shown(*m_ra, kind, layer, head), b = shown(*m_rb, kind, layer, head);
    if (!a.map || !b.map) return;
    const QString where = layerHeadLabel(layer, head, int(maps[0].size()));
    m_a->setMap(*a.map, toQStringList(*a.rows), toQStringList(*a.columns), tr("A: %1").arg(where));
    m_b->setMap(*b.map, toQStringList(*b.rows), toQStringList(*b.columns), tr("B: %1").arg(where));
    const MapDifference d = compareMaps(*a.map, *b.map, *a.rows, *b.rows, *a.columns, *b.columns);
    m_diff->setMap(d.difference, toQStringList(d.rows), toQStringList(d.columns), tr("A − B"));
    // The difference's colours are explained here, not in its title: a title of four lines left
    // the map 50 px tall on a 1280 x 720 projector.
    m_summary->setText(tr("A: %1 → %2\nB: %3 → %4\nA − B: red where A puts more weight, blue where B does.%5")
                           .arg(QString::fromStdString(m_ra->source_text), QString::fromStdString(m_ra->best.text),
                                QString::fromStdString(m_rb->source_text), QString::fromStdString(m_rb->best.text))
                           .arg(d.same_shape ? QString()
                                             : tr("\nThe sentences have different pieces: the difference shows the "
                                                  "rows and columns whose pieces line up (a word split differently "
                                                  "is left out).")));
}

View::Parts PairView::parts() const { return {{"maps", m_maps}}; }

}  // namespace attnlab::ui
