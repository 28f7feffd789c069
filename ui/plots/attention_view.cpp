#include "plots/attention_view.h"

#include <QMouseEvent>

#include <qcustomplot.h>

#include <QHelpEvent>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace attnlab::ui {

namespace {
// Every `step`-th label (all of them at step 1): where the pieces are denser than the text is
// tall, labels are thinned instead of drawn over each other.
QSharedPointer<QCPAxisTickerText> textTicker(const QStringList& labels, int step) {
    auto t = QSharedPointer<QCPAxisTickerText>::create();
    for (int i = 0; i < labels.size(); i += std::max(step, 1)) t->addTick(i, labels[i]);
    return t;
}

// How many labels to skip so that one of `count` fits every `need` pixels of `room`.
int labelStep(int count, double room, double need) {
    if (count <= 0 || room <= 0) return 1;
    return std::max(1, int(std::ceil(need / (room / count))));
}
// Every key label, at `font`, in a column `column` px wide with half a line to spare on each side.
bool keysFitUpright(const QStringList& keys, const QFont& font, double column) {
    const QFontMetrics fm(font);
    int widest = 0;
    for (const QString& k : keys) widest = std::max(widest, fm.horizontalAdvance(k));
    return widest + fm.height() <= column;
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
    m_colormap->setGradient(paletteGradient(m_palette));
    m_colormap->setInterpolate(false);
    m_plot->yAxis->setRangeReversed(true);  // first query on top, as in a matrix
    m_plot->xAxis->setTickLabelRotation(m_key_rotation);
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
    m_title = makeTitle(m_plot, QString());
    m_plot->plotLayout()->addElement(0, 0, m_title);
    m_plot->installEventFilter(this);
    m_plot->setMouseTracking(true);
    followTextSize(m_plot);
    fitMinimumHeight();
    connect(m_plot, &QCustomPlot::afterReplot, this, &AttentionView::updateTicks);
    clear();
}

// Room for a title, a few rows and the rotated key labels at the text size (8 lines: a map keeps
// its shape at a projector's 18 pt and still fits a 1280 x 720 screen's view).
void AttentionView::fitMinimumHeight() {
    int least = std::max(m_min_lines * 18, m_min_lines * fontMetrics().height());
    if (m_readable_rows && !m_map.empty() && m_plot->axisRect()->height() > 0) {
        const int around = m_plot->height() - m_plot->axisRect()->height();  // title, labels, margins
        least = std::max(least, around + std::min<int>(int(m_map.size()), 24) * readableRowPx());
    }
    m_plot->setMinimumHeight(least);
}

void AttentionView::setReadableRows(bool on) {
    m_readable_rows = on;
    fitMinimumHeight();
}

void AttentionView::setMinimumLines(int lines) {
    m_min_lines = lines;
    fitMinimumHeight();
}

void AttentionView::setKeyLabelRotation(double degrees) {
    m_key_rotation = degrees;
    m_plot->xAxis->setTickLabelRotation(degrees);
    m_col_step = 0;  // the labels' room is checked again with the ticks
}

void AttentionView::changeEvent(QEvent* event) {
    if (event->type() == QEvent::FontChange) fitMinimumHeight();
    QWidget::changeEvent(event);
}

// The tick labels' fonts: the plot's own where one label fits each row (query axis) and each column
// (key axis), else smaller, down to kMinTickPointSize, so that every piece keeps its label (a
// projector's 18 pt put only every other query's label beside a map of 8 rows); below that, labels
// are thinned. Rows and columns each have their own: narrow columns (three maps side by side) no
// longer shrink the rows' labels. A font grows back only with room to spare, so that the margins it
// changes cannot make it flip back and forth.
QFont AttentionView::tickFont(double room, double now) const {
    const double full = m_plot->font().pointSizeF();
    QFont f = m_plot->font();
    for (double points = full; points > kMinTickPointSize; points -= 0.5) {
        f.setPointSizeF(points);
        // Up to the readable size (kReadableLabelShare) a font grows back as soon as it fits: the
        // layout gave the rows that room for it.
        const double need = QFontMetrics(f).height() * (points > now && points > readableLabelPointSize() ? 1.2 : 1.0);
        if (need <= room) return f;
    }
    f.setPointSizeF(std::min(full, kMinTickPointSize));
    return f;
}

void AttentionView::updateTicks() {
    if (m_map.empty()) return;
    const QRect r = m_plot->axisRect()->rect();
    const double row = r.height() / double(std::max<qsizetype>(m_queries.size(), 1));
    const double column = r.width() / double(std::max<qsizetype>(m_keys.size(), 1));
    // Key labels stand upright where each fits its column at the plot's full font (so that no font
    // the rows may give them can make them flip back): slanted labels of short pieces took a strip's
    // bottom lines on a projector, its source pieces cut off under the fold.
    const double rotation = keysFitUpright(m_keys, m_plot->font(), column) ? 0.0 : m_key_rotation;
    if (rotation != m_plot->xAxis->tickLabelRotation()) {
        m_plot->xAxis->setTickLabelRotation(rotation);
        m_col_step = 0;
    }
    // Rotated key labels need about height / sin(angle) apart; upright ones are as wide as they are
    // long, which a smaller font barely helps: only the rows decide then.
    const double col = rotation > 1 ? column * std::sin(rotation * M_PI / 180) : row;
    const QFont row_font = tickFont(row, m_plot->yAxis->tickLabelFont().pointSizeF());
    const QFont key_font = tickFont(col, m_plot->xAxis->tickLabelFont().pointSizeF());
    const bool refont = row_font.pointSizeF() != m_plot->yAxis->tickLabelFont().pointSizeF() ||
                        key_font.pointSizeF() != m_plot->xAxis->tickLabelFont().pointSizeF();
    if (refont) {
        m_plot->xAxis->setTickLabelFont(key_font);
        m_plot->yAxis->setTickLabelFont(row_font);
    }
    const QFontMetrics fm(key_font);
    // Rotated key labels need about height / sin(angle) apart; upright ones their width and a gap.
    int widest = 0;
    for (const QString& k : m_keys) widest = std::max(widest, fm.horizontalAdvance(k));
    const double key_room = rotation > 1 ? fm.height() / std::sin(rotation * M_PI / 180) : widest + fm.height() / 2.0;
    const int rows = labelStep(m_queries.size(), r.height(), QFontMetrics(row_font).height());
    const int cols = labelStep(m_keys.size(), r.width(), key_room);
    // The query title runs along the y axis: where the axis is shorter, only its first word.
    const QString title = QFontMetrics(m_plot->yAxis->labelFont()).horizontalAdvance(m_query_title) <= r.height()
                              ? m_query_title
                              : m_query_title.section(' ', 0, 0);
    if (!refont && rows == m_row_step && cols == m_col_step && title == m_plot->yAxis->label()) return;
    m_plot->yAxis->setLabel(title);
    m_row_step = rows;
    m_col_step = cols;
    m_plot->xAxis->setTicker(textTicker(m_keys, cols));
    m_plot->yAxis->setTicker(textTicker(m_queries, rows));
    m_plot->replot(QCustomPlot::rpQueuedReplot);
}

void AttentionView::showAxes(bool shown) {
    m_plot->axisRect()->setVisible(shown);
    if (m_scale) m_scale->setVisible(shown);
    for (QCPAxis* a : m_plot->axisRect()->axes()) a->setVisible(shown && (a == m_plot->xAxis || a == m_plot->yAxis));
}

void AttentionView::clear(const QString& message) {
    m_map.clear();
    m_queries.clear();
    m_keys.clear();
    m_colormap->data()->clear();
    showAxes(false);
    m_title->setText(message.isEmpty() ? tr("Translate a sentence to see its attention") : message);
    m_plot->replot();
}

QString AttentionView::message() const { return m_map.empty() ? m_title->text() : QString(); }
QString AttentionView::title() const { return m_title->text(); }

void AttentionView::setColorMap(Palette palette) {
    m_palette = palette;
    if (!m_diverging) m_colormap->setGradient(paletteGradient(palette));
    m_plot->replot();
}

void AttentionView::setMap(const Matrix& map, const QStringList& queries, const QStringList& keys,
                           const QString& title) {
    m_map = map;
    m_queries = queries;
    m_keys = keys;
    const int rows = static_cast<int>(map.size()), cols = rows ? static_cast<int>(map[0].size()) : 0;
    m_colormap->data()->setSize(cols, rows);
    // Cell centres 0 .. n - 1; QCPColorMap draws half a cell beyond the first and last centres only when there are
    // two or more (QCPColorMap::draw's halfCellWidth), so a single row or column is given its cell's bounds instead:
    // with a range of (0, 0) it was drawn zero pixels high (the contrast panel's one-row map was blank).
    auto cells = [](int n) { return n == 1 ? QCPRange(-0.5, 0.5) : QCPRange(0, std::max(n - 1, 0)); };
    m_colormap->data()->setRange(cells(cols), cells(rows));
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) m_colormap->data()->setCell(c, r, map[r][c]);
    m_row_step = m_col_step = 0;
    updateTicks();  // from the current layout; checked again after every replot
    m_plot->xAxis->setRange(-0.5, cols - 0.5);
    m_plot->yAxis->setRange(-0.5, rows - 0.5);
    m_plot->yAxis->setRangeReversed(true);
    m_title->setText(title);
    showAxes(true);
    rescale();
    if (m_readable_rows) fitMinimumHeight();  // from the layout this replot gave the labels
}

void AttentionView::removeColorScale() {
    m_colormap->setColorScale(nullptr);
    m_plot->plotLayout()->remove(m_scale);  // deletes it
    m_scale = nullptr;
    m_plot->plotLayout()->simplify();
    m_plot->replot();
}

void AttentionView::setFixedRange(bool fixed) {
    m_fixed_range = fixed;
    rescale();
}

void AttentionView::setDiverging(bool diverging) {
    m_diverging = diverging;
    QCPColorGradient polar;  // blue (negative) - white (0) - red (positive)
    polar.setColorStopAt(0.0, QColor(33, 102, 172));
    polar.setColorStopAt(0.5, Qt::white);
    polar.setColorStopAt(1.0, QColor(178, 24, 43));
    polar.setNanHandling(QCPColorGradient::nhNanColor);  // a cell that does not apply (NaN): grey, not a white 0
    polar.setNanColor(QColor(190, 190, 190));
    m_colormap->setGradient(diverging ? polar : paletteGradient(m_palette));
    rescale();
}

void AttentionView::rescale() {
    if (m_diverging) {
        double m = 1e-6;
        for (const auto& row : m_map)
            for (float v : row) m = std::max(m, double(std::abs(v)));
        m_colormap->setDataRange(QCPRange(-m, m));
    } else if (m_fixed_range || m_map.empty()) {
        m_colormap->setDataRange(QCPRange(0.0, 1.0));
    } else {
        m_colormap->rescaleDataRange(true);
    }
    m_plot->replot();
}

void AttentionView::setAxisTitles(const QString& query, const QString& key) {
    m_query_title = query;
    m_plot->yAxis->setLabel(query);
    m_plot->xAxis->setLabel(key);
    m_row_step = 0;  // the title's fit is checked with the ticks
}

namespace {
QStringList tickLabels(QCPAxis* axis) {
    QStringList out;
    if (auto t = axis->ticker().dynamicCast<QCPAxisTickerText>())
        for (auto it = t->ticks().constBegin(); it != t->ticks().constEnd(); ++it) out << it.value();
    return out;
}
}  // namespace

QStringList AttentionView::shownQueryLabels() const { return tickLabels(m_plot->yAxis); }
QStringList AttentionView::shownKeyLabels() const { return tickLabels(m_plot->xAxis); }

QString AttentionView::toolTipAt(int row, int column) const {
    if (row < 0 || column < 0 || row >= int(m_map.size()) || column >= int(m_map[row].size())) return {};
    const float v = m_map[row][column];
    return tr("query %1 → key %2: %3")
        .arg(row < m_queries.size() ? m_queries[row] : QString::number(row))
        .arg(column < m_keys.size() ? m_keys[column] : QString::number(column))
        .arg(std::isnan(v) ? tr("not applicable") : QString::number(double(v), 'f', 3));
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
    if (watched == m_plot && event->type() == QEvent::MouseButtonPress && !m_map.empty()) {
        auto* mouse = static_cast<QMouseEvent*>(event);
        const int column = static_cast<int>(std::lround(m_plot->xAxis->pixelToCoord(mouse->pos().x())));
        const int row = static_cast<int>(std::lround(m_plot->yAxis->pixelToCoord(mouse->pos().y())));
        if (row >= 0 && row < int(m_map.size()) && column >= 0 && column < int(m_map[row].size()))
            Q_EMIT cellClicked(row, column);
    }
    return QWidget::eventFilter(watched, event);
}

double AttentionView::readableLabelPointSize() const { return kReadableLabelShare * m_plot->font().pointSizeF(); }

int AttentionView::readableRowPx() const {
    QFont f = m_plot->font();
    f.setPointSizeF(readableLabelPointSize());
    return std::max(kReadableRowPx, QFontMetrics(f).height());
}

int AttentionView::missingHeight() const {
    const int rows = int(m_map.size());
    if (rows == 0 || !m_plot->axisRect()->visible()) return 0;
    // A pixel a row to spare: the labels' font settles after the layout this asks for.
    return std::max(0, rows * (readableRowPx() + 1) - m_plot->axisRect()->height());
}

}  // namespace attnlab::ui
