#include "headlab/head_heatmaps.h"

#include "document/numbering.h"
#include "plots/attention_view.h"

#include <QEvent>
#include <QVBoxLayout>

#include <algorithm>

namespace attnlab::ui {

namespace {
// Besides its cells a map needs, in lines of text: across, the layer title and numbers, the colour
// scale with its numbers and the margins; down, the title (larger, bold), the head numbers and
// title and the margins.
constexpr int kLinesBesideCells = 8;
constexpr int kLinesAboveAndBelow = 6;

void labelAxes(AttentionView* view) {
    view->setAxisTitles(HeadHeatmaps::tr("layer"), HeadHeatmaps::tr("head"));
    view->setKeyLabelRotation(0);  // numbers, upright
}
}  // namespace

HeadHeatmaps::HeadHeatmaps(QWidget* parent)
    : QWidget(parent), m_statistic(new AttentionView(this)), m_difference(new AttentionView(this)) {
    m_statistic->setFixedRange(false);
    labelAxes(m_statistic);
    labelAxes(m_difference);
    m_difference->setDiverging(true);
    m_difference->hide();
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_statistic, 1);
    layout->addWidget(m_difference, 1);
}

int HeadHeatmaps::minimumCell() const { return std::max(kMinimumCell, fontMetrics().height()); }

bool HeadHeatmaps::showsDifference() const { return !m_difference->isHidden(); }

void HeadHeatmaps::fitMinimumSize() {
    const int cell = minimumCell(), line = fontMetrics().height();
    for (AttentionView* v : {m_statistic, m_difference}) {
        v->setMinimumWidth(m_heads * cell + kLinesBesideCells * line);
        // AttentionView counts its least height in lines of at least 18 px (kMinimumCell's ≤ 18).
        v->setMinimumLines(m_layers + kLinesAboveAndBelow);
    }
}

void HeadHeatmaps::changeEvent(QEvent* event) {
    if (event->type() == QEvent::FontChange) fitMinimumSize();
    QWidget::changeEvent(event);
}

void HeadHeatmaps::setMaps(const Matrix& values, const QString& title, const Matrix* difference,
                           const QString& difference_title) {
    m_layers = static_cast<int>(values.size());
    m_heads = values.empty() ? 0 : static_cast<int>(values[0].size());
    QStringList rows, cols;
    for (int l = 0; l < m_layers; ++l) rows << shownText(l);
    for (int h = 0; h < m_heads; ++h) cols << shownText(h);
    fitMinimumSize();
    m_statistic->setMap(values, rows, cols, title);
    m_difference->setVisible(difference != nullptr);
    if (difference) m_difference->setMap(*difference, rows, cols, difference_title);
}

void HeadHeatmaps::clear(const QString& message) {
    m_layers = m_heads = 0;
    m_statistic->clear(message);
    m_difference->hide();
}

void HeadHeatmaps::setColorMap(Palette palette) {
    m_statistic->setColorMap(palette);  // the difference keeps its diverging colours
}

}  // namespace attnlab::ui
