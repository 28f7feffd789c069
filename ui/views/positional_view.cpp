#include "views/positional_view.h"

#include "plots/plot_style.h"

#include <attnlab/positional.h>

#include <qcustomplot.h>

#include <QComboBox>
#include <QFormLayout>
#include <QGridLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSpinBox>

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
    m_length = new QSpinBox(this);
    m_length->setRange(2, 2048);
    m_length->setValue(100);
    m_dmodel = new QSpinBox(this);
    m_dmodel->setRange(2, 4096);
    m_dmodel->setSingleStep(2);
    m_dmodel->setValue(256);
    m_layout = new QComboBox(this);
    m_layout->addItem(tr("interleaved (sin, cos, sin, …: the paper)"));
    m_layout->addItem(tr("half (sines, then cosines: Marian)"));
    m_layout->setToolTip(tr("How the dimensions are laid out; follows the model's pos_encoding"));
    m_dims = new QLineEdit(defaultCurves(false, 256), this);
    m_dims->setToolTip(tr("Dimensions to plot as curves, separated by commas"));
    m_heat = new QCustomPlot(this);
    m_curves = new QCustomPlot(this);
    m_dots = new QCustomPlot(this);
    m_heat_map = makeMap(m_heat, tr("dimension"), tr("position"), tr("PE(pos, i)"));
    m_dot_map = makeMap(m_dots, tr("position"), tr("position"), tr("PE(p) · PE(q)"));
    m_curves->xAxis->setLabel(tr("position"));
    m_curves->yAxis->setLabel(tr("PE"));
    showLegendBelow(m_curves);
    for (QCustomPlot* plot : {m_heat, m_curves, m_dots}) followTextSize(plot);

    auto* form = new QHBoxLayout;
    form->addWidget(new QLabel(tr("Positions"), this));
    form->addWidget(m_length);
    form->addWidget(new QLabel(tr("d_model"), this));
    form->addWidget(m_dmodel);
    form->addWidget(new QLabel(tr("Layout"), this));
    form->addWidget(m_layout);
    form->addWidget(new QLabel(tr("Curves of dimensions"), this));
    form->addWidget(m_dims, 1);
    auto* grid = new QGridLayout;
    grid->addWidget(m_heat, 0, 0, 2, 1);
    grid->addWidget(m_curves, 0, 1);
    grid->addWidget(m_dots, 1, 1);
    grid->setColumnStretch(0, 1);
    grid->setColumnStretch(1, 1);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addLayout(grid, 1);

    connect(m_length, &QSpinBox::editingFinished, this, [this] { rebuild(); });
    connect(m_dmodel, &QSpinBox::editingFinished, this, [this] { rebuild(); });
    connect(m_dims, &QLineEdit::editingFinished, this, [this] { rebuildCurves(); });
    connect(m_layout, &QComboBox::activated, this, [this](int i) { setHalfSplit(i == 1); });
    rebuild();
    auto follow = [this](ModelInfoPtr info) {
        const auto& m = info->config.model;
        m_length->setValue(static_cast<int>(m.n_position));
        m_dmodel->setValue(static_cast<int>(m.d_model));
        setHalfSplit(m.pos_encoding == "half");  // rebuilds
    };
    connect(context, &ViewContext::modelChanged, this, follow);
    if (const auto info = context->model()) follow(info);
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

View::Parts PositionalEncodingView::parts() const {
    return {{"table", m_heat}, {"curves", m_curves}, {"dots", m_dots}};
}

}  // namespace attnlab::ui
