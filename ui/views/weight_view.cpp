#include "views/weight_view.h"

#include "document/numbering.h"
#include "plots/bar_plot.h"
#include "widgets/head_picker.h"

#include <QGridLayout>
#include <QLabel>
#include <QScrollArea>
#include <QVBoxLayout>

namespace attnlab::ui {

namespace {
const QColor kQuery(49, 130, 189), kKey(107, 174, 214), kNeutral(120, 120, 120);

QString piece(const std::string& p) { return QString::fromStdString(p).toHtmlEscaped(); }

std::vector<double> toDoubles(const std::vector<float>& v) { return {v.begin(), v.end()}; }

QLabel* wrapped(QWidget* parent) {
    auto* l = new QLabel(parent);
    l->setWordWrap(true);
    l->setTextFormat(Qt::RichText);
    return l;
}

}  // namespace

WeightView::WeightView(ViewContext* context, QWidget* parent) : View(context, parent) {
    auto* inner = new QWidget;
    m_heading = wrapped(inner);
    m_arithmetic = wrapped(inner);
    m_mask = wrapped(inner);
    m_output_text = wrapped(inner);
    m_vectors = new BarPlot(inner);
    m_products = new BarPlot(inner);
    m_scores = new BarPlot(inner);
    m_weights = new BarPlot(inner);
    m_output = new BarPlot(inner);
    auto* grid = new QGridLayout(inner);
    grid->addWidget(m_heading, 0, 0, 1, 2);
    grid->addWidget(m_vectors, 1, 0);
    grid->addWidget(m_products, 1, 1);
    grid->addWidget(m_arithmetic, 2, 0);
    grid->addWidget(m_mask, 2, 1);
    grid->addWidget(m_scores, 3, 0);
    grid->addWidget(m_weights, 3, 1);
    grid->addWidget(m_output_text, 4, 0);
    grid->addWidget(m_output, 4, 1);
    for (int r : {1, 3, 4}) grid->setRowStretch(r, 1);
    auto* scroll = new QScrollArea(this);
    scroll->setWidget(inner);
    scroll->setWidgetResizable(true);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(scroll);
    clear(
        tr("Click a cell of a map in the Attention tab (one head, not the mean) to see how its weight is "
           "computed."));
    follow(context);
}

void WeightView::clear(const QString& message) {
    m_e.reset();
    m_heading->setText(message.toHtmlEscaped());
    for (auto* l : {m_arithmetic, m_mask, m_output_text}) l->clear();
    for (auto* p : {m_vectors, m_products, m_scores, m_weights, m_output}) {
        p->clear();
        p->setVisible(false);
    }
}

QString WeightView::summaryText() const { return m_arithmetic->text() + "\n" + m_mask->text(); }
QString WeightView::headingText() const { return m_heading->text(); }

// A self-attention with relative positions: the score's second part, q · a^K of the clipped offset, named.
QString WeightView::relativeTermText(const AttentionExplanation& e) {
    if (!e.relative) return {};
    const QString clipped = e.relative_clipped == e.relative_offset ? tr("within ±%1").arg(e.max_relative_positions)
                                                                    : tr("clipped to %1").arg(e.relative_clipped);
    const QString where = e.relative_offset == 0 ? tr("the key is the query's own position")
                                                 : tr("the key is %1 position(s) %2 the query")
                                                       .arg(std::abs(e.relative_offset))
                                                       .arg(e.relative_offset > 0 ? tr("after") : tr("before"));
    return tr("<p><b>3b. Relative position term</b>: %1 (offset j − i = %2, %3), whose learned key vector "
              "a<sup>K</sup> this layer adds:<br>q · a<sup>K</sup> = <b>%4</b> ÷ √d<sub>k</sub> = relative score "
              "<b>%5</b><br>score = content q·k/√d<sub>k</sub> %6 + relative q·a<sup>K</sup>/√d<sub>k</sub> %5 = "
              "<b>%7</b> (what the softmax sees)</p>")
        .arg(where)
        .arg(e.relative_offset)
        .arg(clipped)
        .arg(e.relative_dot, 0, 'f', 4)
        .arg(e.relative_scaled, 0, 'f', 4)
        .arg(e.scaled, 0, 'f', 4)
        .arg(e.score, 0, 'f', 4);
}

void WeightView::setExplanation(ExplanationPtr e) {
    if (!e) return clear(tr("Nothing to explain."));
    m_e = e;
    const auto& c = e->cell;
    const int dk = int(e->query_vector.size());
    m_heading->setText(tr("<b>%1, %2</b>: how much query <b>%3</b> (row %4) attends to key "
                          "<b>%5</b> (column %6)")
                           .arg(kindTitle(c.kind), layerHeadLabel(c.layer, c.head))
                           .arg(piece(e->query_piece))
                           .arg(shownText(c.query))  // rows and columns count from 1, as people read them
                           .arg(piece(e->key_piece))
                           .arg(shownText(c.key)));
    for (auto* p : {m_vectors, m_products, m_scores, m_weights, m_output}) p->setVisible(true);
    m_vectors->setTitle(tr("1. q (query row) and k (key row) of this head: %1 values each").arg(dk));
    m_vectors->setBars({{tr("q"), toDoubles(e->query_vector), kQuery}, {tr("k"), toDoubles(e->key_vector), kKey}}, {});
    m_products->setTitle(tr("2. q × k, component by component"));
    m_products->setBars({{tr("q×k"), e->products, kNeutral}}, {});
    m_arithmetic->setText(tr("<p><b>3.</b> q · k = sum of the products = <b>%1</b><br>÷ temperature √d<sub>k</sub> "
                             "= √%2 = %3<br>= scaled score <b>%4</b></p>")
                              .arg(e->dot, 0, 'f', 4)
                              .arg(dk)
                              .arg(e->temperature, 0, 'f', 4)
                              .arg(e->scaled, 0, 'f', 4) +
                          relativeTermText(*e));
    m_mask->setText(e->masked ? tr("<p><b>4. Masked</b> (%1): the score is replaced by −10<sup>9</sup> before the "
                                   "softmax, so the weight is 0.</p>")
                                    .arg(e->mask_reason == "future position"
                                             ? tr("the key is a future position: the decoder may not look ahead")
                                             : tr("the key is padding"))
                              : tr("<p><b>4. Not masked</b>: this key may be attended to.</p>"));
    QStringList keys;
    std::vector<double> scaled;
    for (size_t j = 0; j < e->row_scaled.size(); ++j) {
        keys << QString::fromStdString(e->row_pieces.at(j));
        scaled.push_back(e->row_masked[j] ? 0.0 : double(e->row_scaled[j]));
    }
    m_scores->setTitle(e->relative ? tr("5. The whole row of scores, content + relative (masked keys shown as 0)")
                                   : tr("5. The whole row of scaled scores (masked keys shown as 0)"));
    m_scores->setBars({{e->relative ? tr("score (content + relative)") : tr("scaled score"), scaled, kNeutral}}, keys,
                      c.key);
    m_weights->setTitle(tr("6. softmax → the map's row (this cell %1)").arg(e->weight, 0, 'f', 4));
    m_weights->setBars({{tr("weight"), toDoubles(e->row_weights), kQuery}}, keys, c.key);
    m_output_text->setText(
        (e->relative ? tr("<p><b>7.</b> The head's output for this query is the sum over keys of weight × (value "
                          "row v + the learned value vector a<sup>V</sup> of the key's clipped offset) (%1 values), "
                          "before the heads are joined and projected.</p>")
                     : tr("<p><b>7.</b> The head's output for this query is the sum over keys of weight × value row "
                          "(%1 values), before the heads are joined and projected.</p>"))
            .arg(e->head_output.size()));
    m_output->setTitle(e->relative ? tr("7. Head output = Σ weight × (v + a^V)") : tr("7. Head output = Σ weight × v"));
    m_output->setBars({{tr("output"), toDoubles(e->head_output), kKey}}, {});
}

void WeightView::follow(ViewContext* c) {
    connect(c, &ViewContext::explainRequested, this, &WeightView::explainCell);
    connect(c->controller(), &TranslationController::explained, this, &WeightView::setExplanation);
    connect(c, &ViewContext::failed, this, [this](Operation op, const QString& m) {
        if (op == Operation::Explain) clear(tr("Cannot explain this weight: %1").arg(m));
    });
    connect(c, &ViewContext::resultChanged, this, [this] {
        if (m_e) clear(tr("The translation changed: click a cell of a map again."));
    });
}

void WeightView::explainCell(const CellRef& cell) {
    context()->showView("weight");
    const auto result = context()->result();
    if (!result) {
        clear(tr("Translate a sentence first."));
        return;
    }
    clear(tr("Computing…"));
    context()->controller()->explain(result, cell);
}

QCustomPlot* WeightView::figure() const { return m_e ? m_weights->plot() : nullptr; }

QString WeightView::noFigureReason() const { return tr("click a cell of a map first: no weight is opened up"); }

// The opened-up cell names its own head: it wins over the attention view's.
void WeightView::saveState(ViewState& state) const {
    if (!m_e) return;
    state.cell_query = m_e->cell.query;
    state.cell_key = m_e->cell.key;
    state.kind = m_e->cell.kind;
    state.layer = m_e->cell.layer;
    state.head = m_e->cell.head;
}

void WeightView::applyState(const ViewState& v) {
    if (!v.cell_query || !v.cell_key) return;
    const HeadRef focus = context()->focusedHead();
    explainCell({v.kind.value_or(focus.kind), v.layer.value_or(focus.layer), v.head.value_or(focus.head), *v.cell_query,
                 *v.cell_key});
}

View::Parts WeightView::parts() const {
    return {{"q-k", m_vectors},   {"products", m_products}, {"sum", m_arithmetic}, {"mask", m_mask},
            {"scores", m_scores}, {"softmax", m_weights},   {"output", m_output}};
}

}  // namespace attnlab::ui
