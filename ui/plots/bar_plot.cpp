#include "plots/bar_plot.h"

#include "plots/plot_style.h"

#include <qcustomplot.h>

#include <QHelpEvent>
#include <QMouseEvent>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace attnlab::ui {

namespace {
const QColor kHighlight(230, 120, 20);
}

BarPlot::BarPlot(QWidget* parent) : QWidget(parent), m_plot(new QCustomPlot(this)) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_plot);
    m_plot->plotLayout()->insertRow(0);
    m_plot->plotLayout()->addElement(0, 0, makeTitle(m_plot, QString()));
    m_plot->legend->setVisible(false);
    m_plot->installEventFilter(this);
    fitMinimumHeight();
    followTextSize(m_plot);
}

// Six lines of text for the title, the bars and the numbers under them, four more for labels
// rotated under the bars: a plot keeps its shape at a projector's text size instead of squashing
// its bars between its labels.
void BarPlot::fitMinimumHeight() {
    const int lines = 6 + (m_plot->xAxis->tickLabelRotation() != 0 ? 4 : 0);
    setMinimumHeight(std::max(200, lines * fontMetrics().height()));
}

void BarPlot::changeEvent(QEvent* event) {
    if (event->type() == QEvent::FontChange) fitMinimumHeight();
    QWidget::changeEvent(event);
}

void BarPlot::setTitle(const QString& title) {
    if (auto* t = qobject_cast<QCPTextElement*>(m_plot->plotLayout()->element(0, 0))) t->setText(title);
    applyTextSize(m_plot);
}

void BarPlot::setValueAxisTitle(const QString& title) { m_plot->yAxis->setLabel(title); }

void BarPlot::clear(const QString& message) {
    setBars({}, {});
    if (!message.isEmpty()) setTitle(message);
    m_plot->replot();
}

void BarPlot::setBars(const std::vector<Series>& series, const QStringList& labels, int highlight) {
    m_series = series;
    m_labels = labels;
    m_count = 0;
    for (const auto& s : series) m_count = std::max(m_count, int(s.values.size()));
    m_plot->clearPlottables();
    const int n_series = std::max<int>(1, int(series.size()));
    const double width = 0.8 / n_series;
    double lo = 0, hi = 0;
    for (int k = 0; k < int(series.size()); ++k) {
        const auto& s = series[k];
        const double offset = (k - (n_series - 1) / 2.0) * width;
        for (bool highlighted : {false, true}) {
            QVector<double> keys, values;
            for (int i = 0; i < int(s.values.size()); ++i) {
                if ((i == highlight) != highlighted) continue;
                keys << i + offset;
                values << s.values[i];
                lo = std::min(lo, s.values[i]);
                hi = std::max(hi, s.values[i]);
            }
            if (keys.isEmpty()) continue;
            auto* bars = new QCPBars(m_plot->xAxis, m_plot->yAxis);
            bars->setName(s.name);
            bars->setWidth(width * 0.9);
            bars->setData(keys, values, true);
            const QColor c = highlighted ? kHighlight : s.color;
            bars->setBrush(c);
            bars->setPen(QPen(c.darker(130)));
        }
    }
    m_plot->legend->setVisible(series.size() > 1);
    if (series.size() > 1) {
        // One legend entry per series, not one per highlighted part.
        for (int i = m_plot->legend->itemCount() - 1; i >= 0; --i)
            if (auto* item = qobject_cast<QCPPlottableLegendItem*>(m_plot->legend->item(i)))
                if (item->plottable()->brush().color() == kHighlight) m_plot->legend->removeItem(i);
    }
    if (!labels.isEmpty()) {
        QSharedPointer<QCPAxisTickerText> ticker(new QCPAxisTickerText);
        for (int i = 0; i < labels.size(); ++i) ticker->addTick(i, labels[i]);
        m_plot->xAxis->setTicker(ticker);
        m_plot->xAxis->setTickLabelRotation(labels.size() > 6 ? 60 : 0);
    } else {
        m_plot->xAxis->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
        m_plot->xAxis->setTickLabelRotation(0);
    }
    fitMinimumHeight();
    for (QCPAxis* axis : {m_plot->xAxis, m_plot->yAxis}) {
        axis->setVisible(m_count > 0);
        axis->grid()->setVisible(m_count > 0);
    }
    m_plot->xAxis->setRange(-0.6, std::max(1, m_count) - 0.4);
    const double pad = std::max(1e-6, (hi - lo) * 0.08);
    m_plot->yAxis->setRange(lo < 0 ? lo - pad : 0, hi + pad);
    m_plot->replot();
}

int BarPlot::positionAt(int x_pixel) const {
    const int i = static_cast<int>(std::lround(m_plot->xAxis->pixelToCoord(x_pixel)));
    return i >= 0 && i < m_count ? i : -1;
}

QString BarPlot::toolTipAt(int position) const {
    if (position < 0 || position >= m_count) return {};
    QString text = m_labels.isEmpty() ? tr("component %1").arg(position) : m_labels.value(position);
    for (const auto& s : m_series)
        if (position < int(s.values.size()))
            text += QStringLiteral("\n%1%2")
                        .arg(s.name.isEmpty() ? QString() : s.name + ": ")
                        .arg(s.values[position], 0, 'g', 5);
    return text;
}

bool BarPlot::eventFilter(QObject* watched, QEvent* event) {
    if (watched == m_plot && event->type() == QEvent::ToolTip) {
        auto* help = static_cast<QHelpEvent*>(event);
        const QString text = toolTipAt(positionAt(help->pos().x()));
        if (text.isEmpty())
            QToolTip::hideText();
        else
            QToolTip::showText(help->globalPos(), text, m_plot);
        return true;
    }
    if (watched == m_plot && event->type() == QEvent::MouseButtonPress) {
        const int i = positionAt(static_cast<QMouseEvent*>(event)->pos().x());
        if (i >= 0) Q_EMIT barClicked(i);
    }
    return QWidget::eventFilter(watched, event);
}

}  // namespace attnlab::ui
