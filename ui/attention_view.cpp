#include "attention_view.h"

#include <qcustomplot.h>

#include <QHelpEvent>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>

namespace attnlab::ui {

namespace {
QSharedPointer<QCPAxisTickerText> textTicker(const QStringList& labels) {
    auto t = QSharedPointer<QCPAxisTickerText>::create();
    for (int i = 0; i < labels.size(); ++i) t->addTick(i, labels[i]);
    return t;
}
}  // namespace

AttentionView::AttentionView(QWidget* parent) : QWidget(parent), m_plot(new QCustomPlot(this)) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_plot);
    m_colormap = new QCPColorMap(m_plot->xAxis, m_plot->yAxis);
    m_scale = new QCPColorScale(m_plot);
    m_plot->plotLayout()->addElement(0, 1, m_scale);
    m_scale->setType(QCPAxis::atRight);
    m_colormap->setColorScale(m_scale);
    QCPColorGradient g(QCPColorGradient::gpGrayscale);
    g.setColorStopAt(0.0, QColor(255, 255, 255));
    g.setColorStopAt(1.0, QColor(8, 48, 107));  // white -> dark blue: weight 0 is blank paper
    m_colormap->setGradient(g);
    m_colormap->setInterpolate(false);
    m_plot->yAxis->setRangeReversed(true);  // first query on top, as in a matrix
    m_plot->xAxis->setTickLabelRotation(60);
    m_plot->xAxis->setSubTicks(false);
    m_plot->yAxis->setSubTicks(false);
    m_plot->xAxis->grid()->setVisible(false);
    m_plot->yAxis->grid()->setVisible(false);
    m_plot->xAxis->setLabel(tr("key"));
    m_plot->yAxis->setLabel(tr("query"));
    auto* margins = new QCPMarginGroup(m_plot);
    m_plot->axisRect()->setMarginGroup(QCP::msBottom | QCP::msTop, margins);
    m_scale->setMarginGroup(QCP::msBottom | QCP::msTop, margins);
    m_plot->plotLayout()->insertRow(0);
    m_title = new QCPTextElement(m_plot, QString(), QFont(font().family(), font().pointSize() + 1, QFont::Bold));
    m_plot->plotLayout()->addElement(0, 0, m_title);
    m_plot->installEventFilter(this);
    m_plot->setMouseTracking(true);
    clear();
}

void AttentionView::clear() {
    m_map.clear();
    m_queries.clear();
    m_keys.clear();
    m_colormap->data()->clear();
    m_plot->replot();
}

void AttentionView::setMap(const Matrix& map, const QStringList& queries, const QStringList& keys,
                           const QString& title) {
    m_map = map;
    m_queries = queries;
    m_keys = keys;
    const int rows = static_cast<int>(map.size()), cols = rows ? static_cast<int>(map[0].size()) : 0;
    m_colormap->data()->setSize(cols, rows);
    m_colormap->data()->setRange(QCPRange(0, std::max(cols - 1, 0)), QCPRange(0, std::max(rows - 1, 0)));
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) m_colormap->data()->setCell(c, r, map[r][c]);
    m_plot->xAxis->setTicker(textTicker(keys));
    m_plot->yAxis->setTicker(textTicker(queries));
    m_plot->xAxis->setRange(-0.5, cols - 0.5);
    m_plot->yAxis->setRange(-0.5, rows - 0.5);
    m_plot->yAxis->setRangeReversed(true);
    m_title->setText(title);
    rescale();
}

void AttentionView::setFixedRange(bool fixed) {
    m_fixed_range = fixed;
    rescale();
}

void AttentionView::rescale() {
    if (m_fixed_range || m_map.empty()) {
        m_colormap->setDataRange(QCPRange(0.0, 1.0));
    } else {
        m_colormap->rescaleDataRange(true);
    }
    m_plot->replot();
}

void AttentionView::setAxisTitles(const QString& query, const QString& key) {
    m_plot->yAxis->setLabel(query);
    m_plot->xAxis->setLabel(key);
}

QString AttentionView::toolTipAt(int row, int column) const {
    if (row < 0 || column < 0 || row >= int(m_map.size()) || column >= int(m_map[row].size())) return {};
    return tr("query %1 → key %2: %3")
        .arg(row < m_queries.size() ? m_queries[row] : QString::number(row))
        .arg(column < m_keys.size() ? m_keys[column] : QString::number(column))
        .arg(double(m_map[row][column]), 0, 'f', 3);
}

bool AttentionView::eventFilter(QObject* watched, QEvent* event) {
    if (watched == m_plot && event->type() == QEvent::ToolTip) {
        auto* help = static_cast<QHelpEvent*>(event);
        const int column = static_cast<int>(std::lround(m_plot->xAxis->pixelToCoord(help->pos().x())));
        const int row = static_cast<int>(std::lround(m_plot->yAxis->pixelToCoord(help->pos().y())));
        const QString text = toolTipAt(row, column);
        if (text.isEmpty())
            QToolTip::hideText();
        else
            QToolTip::showText(help->globalPos(), text, m_plot);
        return true;
    }
    return QWidget::eventFilter(watched, event);
}

bool AttentionView::savePng(const QString& path, int scale) { return m_plot->savePng(path, 0, 0, scale); }
bool AttentionView::savePdf(const QString& path) { return m_plot->savePdf(path); }

}  // namespace attnlab::ui
