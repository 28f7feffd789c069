#include "views/positional_view.h"

#include "document/numbering.h"
#include "plots/plot_style.h"

#include <attnlab/positional.h>

#include <qcustomplot.h>

#include <QComboBox>
#include <QFormLayout>
#include <QGridLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QStackedWidget>

#include <tuple>

namespace attnlab::ui {

namespace {
QCPColorGradient blueWhiteRed() {
    QCPColorGradient g;
    g.clearColorStops();
    g.setColorStopAt(0.0, QColor(33, 102, 172));
    g.setColorStopAt(0.5, QColor(247, 247, 247));
    g.setColorStopAt(1.0, QColor(178, 24, 43));
    return g;
}

QCPColorMap* makeMap(QCustomPlot* plot, const QString& x, const QString& y, const QString& title) {
    auto* map = new QCPColorMap(plot->xAxis, plot->yAxis);
    auto* scale = new QCPColorScale(plot);
    plot->plotLayout()->addElement(0, 1, scale);
    map->setColorScale(scale);
    map->setGradient(blueWhiteRed());
    map->setInterpolate(false);
    plot->xAxis->setLabel(x);
    plot->yAxis->setLabel(y);
    plot->yAxis->setRangeReversed(true);
    plot->plotLayout()->insertRow(0);
    plot->plotLayout()->addElement(0, 0, makeTitle(plot, title));
    return map;
}

QString defaultCurves(bool half, int d_model) {
    if (!half) return QStringLiteral("0, 1, 32, 64, 128");
    return QStringLiteral("0, %1, %2, %3").arg(d_model / 2).arg(d_model / 4).arg(d_model / 2 + d_model / 4);
}

void fill(QCPColorMap* map, const Matrix& m, double lo, double hi) {
    const int rows = int(m.size()), cols = rows ? int(m[0].size()) : 0;
    map->data()->setSize(cols, rows);
    map->data()->setRange(QCPRange(0, std::max(cols - 1, 0)), QCPRange(0, std::max(rows - 1, 0)));
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) map->data()->setCell(c, r, m[r][c]);
    map->setDataRange(QCPRange(lo, hi));
    map->parentPlot()->rescaleAxes();
    map->parentPlot()->replot();
}
}  // namespace

PositionalEncodingView::PositionalEncodingView(ViewContext* context, QWidget* parent) : View(context, parent) {
    m_pages = new QStackedWidget(this);
    m_pages->addWidget(buildSinusoidPage());
    m_pages->addWidget(buildRelativePage());
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(m_pages, 1);
    rebuild();
    connect(context, &ViewContext::modelChanged, this, [this](ModelInfoPtr info) { followModel(*info); });
    if (const auto info = context->model()) followModel(*info);
}

QWidget* PositionalEncodingView::buildSinusoidPage() {
    auto* page = new QWidget(this);
    m_length = new QSpinBox(page);
    m_length->setRange(2, 2048);
    m_length->setValue(100);
    m_dmodel = new QSpinBox(page);
    m_dmodel->setRange(2, 4096);
    m_dmodel->setSingleStep(2);
    m_dmodel->setValue(256);
    m_layout = new QComboBox(page);
    m_layout->addItem(tr("interleaved (sin, cos, sin, …: the paper)"));
    m_layout->addItem(tr("half (sines, then cosines: Marian)"));
    m_layout->setToolTip(tr("How the dimensions are laid out; follows the model's pos_encoding"));
    m_dims = new QLineEdit(defaultCurves(false, 256), page);
    m_dims->setToolTip(tr("Dimensions to plot as curves, separated by commas"));
    m_heat = new QCustomPlot(page);
    m_curves = new QCustomPlot(page);
    m_dots = new QCustomPlot(page);
    m_heat_map = makeMap(m_heat, tr("dimension"), tr("position"), tr("PE(pos, i)"));
    m_dot_map = makeMap(m_dots, tr("position"), tr("position"), tr("PE(p) · PE(q)"));
    m_curves->xAxis->setLabel(tr("position"));
    m_curves->yAxis->setLabel(tr("PE"));
    showLegendBelow(m_curves);
    for (QCustomPlot* plot : {m_heat, m_curves, m_dots}) followTextSize(plot);

    auto* form = new QHBoxLayout;
    form->addWidget(new QLabel(tr("Positions"), page));
    form->addWidget(m_length);
    form->addWidget(new QLabel(tr("d_model"), page));
    form->addWidget(m_dmodel);
    form->addWidget(new QLabel(tr("Layout"), page));
    form->addWidget(m_layout);
    form->addWidget(new QLabel(tr("Curves of dimensions"), page));
    form->addWidget(m_dims, 1);
    auto* grid = new QGridLayout;
    grid->addWidget(m_heat, 0, 0, 2, 1);
    grid->addWidget(m_curves, 0, 1);
    grid->addWidget(m_dots, 1, 1);
    grid->setColumnStretch(0, 1);
    grid->setColumnStretch(1, 1);
    auto* layout = new QVBoxLayout(page);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addLayout(form);
    layout->addLayout(grid, 1);

    connect(m_length, &QSpinBox::editingFinished, this, [this] { rebuild(); });
    connect(m_dmodel, &QSpinBox::editingFinished, this, [this] { rebuild(); });
    connect(m_dims, &QLineEdit::editingFinished, this, [this] { rebuildCurves(); });
    connect(m_layout, &QComboBox::activated, this, [this](int i) { setHalfSplit(i == 1); });
    return page;
}

QWidget* PositionalEncodingView::buildRelativePage() {
    auto* page = new QWidget(this);
    m_rel_stack = new QComboBox(page);
    m_rel_stack->addItem(tr("encoder self-attention"));
    m_rel_stack->addItem(tr("decoder self-attention"));
    m_rel_layer = new QSpinBox(page);  // shown 1-based (document/numbering.h)
    m_rel_layer->setRange(shownNumber(0), shownNumber(0));
    m_rel_text = new QLabel(page);
    m_rel_text->setWordWrap(true);
    m_rel_text->setTextFormat(Qt::RichText);
    m_rel_keys_plot = new QCustomPlot(page);
    m_rel_values_plot = new QCustomPlot(page);
    m_rel_keys_map = makeMap(m_rel_keys_plot, tr("dimension"), tr("offset j − i"), tr("relative keys aᴷ"));
    m_rel_values_map = makeMap(m_rel_values_plot, tr("dimension"), tr("offset j − i"), tr("relative values aⱽ"));
    for (QCustomPlot* plot : {m_rel_keys_plot, m_rel_values_plot}) followTextSize(plot);
    auto* form = new QHBoxLayout;
    form->addWidget(new QLabel(tr("Relative positions of the"), page));
    form->addWidget(m_rel_stack);
    form->addWidget(new QLabel(tr("layer"), page));
    form->addWidget(m_rel_layer);
    form->addStretch(1);
    auto* plots = new QHBoxLayout;
    plots->addWidget(m_rel_keys_plot, 1);
    plots->addWidget(m_rel_values_plot, 1);
    auto* layout = new QVBoxLayout(page);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addLayout(form);
    layout->addWidget(m_rel_text);
    layout->addLayout(plots, 1);
    connect(m_rel_stack, &QComboBox::activated, this, [this] { rebuildRelative(); });
    connect(m_rel_layer, &QSpinBox::valueChanged, this, [this] { rebuildRelative(); });
    return page;
}

void PositionalEncodingView::followModel(const ModelInfo& info) {
    const auto& m = info.config.model;
    m_length->setValue(static_cast<int>(m.n_position));
    m_dmodel->setValue(static_cast<int>(m.d_model));
    setHalfSplit(m.pos_encoding == "half");  // rebuilds
    m_relative = info.relative_positions;
    m_pages->setCurrentIndex(m_relative.empty() ? 0 : 1);
    if (!m_relative.empty()) rebuildRelative();
}

bool PositionalEncodingView::showsRelative() const { return m_pages->currentIndex() == 1; }

void PositionalEncodingView::setRelativeLayer(bool decoder, int layer) {
    m_rel_stack->setCurrentIndex(decoder ? 1 : 0);
    rebuildRelative();  // sets the layer range of the stack
    m_rel_layer->setValue(shownNumber(layer));
    rebuildRelative();
}

QString PositionalEncodingView::relativeText() const { return m_rel_text->text(); }

void PositionalEncodingView::rebuildRelative() {
    const bool decoder = m_rel_stack->currentIndex() == 1;
    const auto& keys = decoder ? m_relative.decoder_keys : m_relative.encoder_keys;
    const auto& values = decoder ? m_relative.decoder_values : m_relative.encoder_values;
    if (keys.empty()) return;
    const QSignalBlocker block(m_rel_layer);
    m_rel_layer->setRange(shownNumber(0), shownNumber(int(keys.size()) - 1));
    const int layer = indexOfShown(m_rel_layer->value());
    m_rel_keys = keys.at(size_t(layer));
    m_rel_values = values.at(size_t(layer));
    const int k = m_relative.max_distance;
    m_rel_text->setText(
        tr("<p>This model has no absolute positions. Each self-attention learns a <b>key vector a<sup>K</sup></b> "
           "and a <b>value vector a<sup>V</sup></b> for every offset <i>j − i</i> of key <i>j</i> from query "
           "<i>i</i>, <b>clipped to ±%1</b> (a key further away uses the row of ±%1; Shaw et al. 2018, OpenNMT-py's "
           "max_relative_positions). The score of a weight is q·k/√d<sub>k</sub> + q·a<sup>K</sup>/√d<sub>k</sub>; "
           "the head's output is Σ weight × (v + a<sup>V</sup>). One table per layer, shared by its heads.</p>")
            .arg(k));
    const QString where = (decoder ? tr("decoder") : tr("encoder")) + ", " + layerLabel(layer);
    for (auto [plot, map, table, name] :
         {std::tuple{m_rel_keys_plot, m_rel_keys_map, &m_rel_keys, tr("Relative keys aᴷ")},
          std::tuple{m_rel_values_plot, m_rel_values_map, &m_rel_values, tr("Relative values aⱽ")}}) {
        double top = 1e-12;
        for (const auto& row : *table)
            for (float v : row) top = std::max(top, double(std::abs(v)));
        if (auto* title = qobject_cast<QCPTextElement*>(plot->plotLayout()->element(0, 0)))
            title->setText(tr("%1 — %2").arg(name, where));  // one line at half width; k goes on the axis
        plot->yAxis->setLabel(tr("offset j − i (clipped at ±%1)").arg(k));
        fill(map, *table, -top, top);
        const int cols = table->empty() ? 0 : int(table->front().size());
        map->data()->setRange(QCPRange(0, std::max(cols - 1, 0)), QCPRange(-k, k));  // row r is offset r − k
        plot->xAxis->setRange(-0.5, cols - 0.5);                                     // whole cells at the edges
        plot->yAxis->setRange(-k - 0.5, k + 0.5);
        plot->replot();
    }
}

void PositionalEncodingView::setShape(int length, int d_model) {
    m_length->setValue(length);
    m_dmodel->setValue(d_model);
    rebuild();
}

void PositionalEncodingView::setHalfSplit(bool half) {
    if (half != halfSplit()) m_dims->setText(defaultCurves(half, dModel()));
    m_layout->setCurrentIndex(half ? 1 : 0);
    rebuild();
}

bool PositionalEncodingView::halfSplit() const { return m_layout->currentIndex() == 1; }
int PositionalEncodingView::length() const { return m_length->value(); }
int PositionalEncodingView::dModel() const { return m_dmodel->value(); }

void PositionalEncodingView::rebuild() {
    m_table = halfSplit() ? halfSinusoidTable(length(), dModel()) : sinusoidTable(length(), dModel());
    fill(m_heat_map, m_table, -1.0, 1.0);
    // The same in either layout: a dot product does not depend on the order of the dimensions.
    const Matrix dots = positionalDotProducts(length(), dModel());
    fill(m_dot_map, dots, -double(dModel()) / 2, double(dModel()) / 2);
    rebuildCurves();
}

void PositionalEncodingView::rebuildCurves() {
    m_curves->clearGraphs();
    static const QColor colours[] = {QColor(31, 119, 180), QColor(255, 127, 14),  QColor(44, 160, 44),
                                     QColor(214, 39, 40),  QColor(148, 103, 189), QColor(140, 86, 75)};
    int n = 0;
    for (const QString& part : m_dims->text().split(',', Qt::SkipEmptyParts)) {
        bool ok = false;
        const int dim = part.trimmed().toInt(&ok);
        if (!ok || dim < 0 || dim >= dModel()) continue;
        auto* g = m_curves->addGraph();
        const bool cosine = halfSplit() ? dim >= (dModel() + 1) / 2 : dim % 2 == 1;
        g->setName(tr("dim %1 (%2)").arg(dim).arg(cosine ? "cos" : "sin"));
        g->setPen(QPen(colours[n++ % 6], 2));
        for (int p = 0; p < length(); ++p) g->addData(p, m_table[p][dim]);
    }
    m_curves->xAxis->setRange(0, length() - 1);
    m_curves->yAxis->setRange(-1.1, 1.1);
    m_curves->replot();
}

QCustomPlot* PositionalEncodingView::figure() const { return showsRelative() ? m_rel_keys_plot : m_heat; }

View::Parts PositionalEncodingView::parts() const {
    return {{"table", m_heat},
            {"curves", m_curves},
            {"dots", m_dots},
            {"relative-keys", m_rel_keys_plot},
            {"relative-values", m_rel_values_plot}};
}

}  // namespace attnlab::ui
