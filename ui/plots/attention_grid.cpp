#include "plots/attention_grid.h"

#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QToolTip>
#include <QWheelEvent>
#include "document/numbering.h"

#include <algorithm>
#include <cmath>

namespace attnlab::ui {

namespace {
constexpr int kGap = 6;
constexpr double kMaxAspect = 3.0;  // a cell's height at most this many times its width
}  // namespace

AttentionGrid::AttentionGrid(QWidget* parent) : QWidget(parent) {
    resize(minimumSizeHint());  // before any layout: room for its captions (its least size is minimumSizeHint's)
    setMouseTracking(true);
}

Matrix AttentionGrid::meanOverHeads(const std::vector<Matrix>& heads) {
    if (heads.empty()) return {};
    Matrix mean = heads[0];
    for (size_t h = 1; h < heads.size(); ++h)
        for (size_t i = 0; i < mean.size(); ++i)
            for (size_t j = 0; j < mean[i].size(); ++j) mean[i][j] += heads[h][i][j];
    for (auto& row : mean)
        for (auto& v : row) v /= static_cast<float>(heads.size());
    return mean;
}

QImage AttentionGrid::render(const Matrix& m) const {
    const int rows = static_cast<int>(m.size()), cols = rows ? static_cast<int>(m[0].size()) : 0;
    QImage img(std::max(cols, 1), std::max(rows, 1), QImage::Format_RGB32);
    img.fill(Qt::white);
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) {
            img.setPixel(c, r, paletteColor(m_palette, m[r][c]).rgb());  // the same colours as AttentionView
        }
    return img;
}

void AttentionGrid::setMaps(const LayerHeadMaps& maps) {
    m_maps = maps;
    renderAll();
    fitPage();
}

void AttentionGrid::setColorMap(Palette palette) {
    m_palette = palette;
    renderAll();
}

void AttentionGrid::renderAll() {
    m_images.clear();
    for (const auto& layer : m_maps) {
        std::vector<QImage> row;
        for (const auto& head : layer) row.push_back(render(head));
        row.push_back(render(meanOverHeads(layer)));
        m_images.push_back(std::move(row));
    }
    updateGeometry();
    update();
}

void AttentionGrid::setSelected(int layer, int head) {
    m_sel_layer = layer;
    m_sel_head = head;
    showPageOf(layer);
    update();
}

int AttentionGrid::shownLayers() const { return m_per_page > 0 ? std::min(m_per_page, layers()) : layers(); }
int AttentionGrid::firstShownLayer() const { return std::clamp(m_first, 0, std::max(0, layers() - shownLayers())); }

QString AttentionGrid::pageText() const {
    if (shownLayers() >= layers()) return {};
    return tr("layers %1–%2 of %3").arg(firstShownLayer() + 1).arg(firstShownLayer() + shownLayers()).arg(layers());
}

void AttentionGrid::showPageOf(int layer) {
    const int n = shownLayers();
    if (n <= 0 || layer < 0) return;
    if (layer < firstShownLayer() || layer >= firstShownLayer() + n) m_first = layer / n * n;
    m_first = firstShownLayer();
}

// The most layers whose maps keep kMinMapRowPx a row and whose cells keep the column title whole (one layer
// at least).
void AttentionGrid::fitPage() {
    const int rows = m_maps.empty() || m_maps[0].empty() ? 0 : int(m_maps[0][0].size());
    int n = layers();
    while (n > 1 && (cellSize(n).height() < rows * kMinMapRowPx || cellSize(n).width() < titleWidth())) --n;
    m_per_page = n;
    showPageOf(m_sel_layer);
    update();
}

void AttentionGrid::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    fitPage();
}

void AttentionGrid::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    if (event->type() != QEvent::FontChange) return;
    updateGeometry();
    fitPage();
}

void AttentionGrid::wheelEvent(QWheelEvent* event) {
    const int n = shownLayers();
    if (n >= layers() || event->angleDelta().y() == 0) return QWidget::wheelEvent(event);
    m_first = std::clamp(firstShownLayer() + (event->angleDelta().y() < 0 ? n : -n), 0, layers() - n);
    update();
    event->accept();
}

int AttentionGrid::labelWidth() const { return QFontMetrics(font()).horizontalAdvance(tr("layer %1").arg(88)) + 6; }
// A page of layers says which above its captions: a line more.
int AttentionGrid::headerHeight(int shown) const {
    return (shown < layers() ? 2 : 1) * QFontMetrics(font()).height() + 6;
}

int AttentionGrid::titleWidth() const {
    return m_column_title.isEmpty() ? 0 : QFontMetrics(font()).horizontalAdvance(m_column_title) + 2 - kGap;
}

QSize AttentionGrid::minimumSizeHint() const {
    const QSize least(200, 120);
    if (m_column_title.isEmpty() || layers() == 0) return least;
    const int side = std::max(titleWidth(), QFontMetrics(font()).height());
    return least.expandedTo(QSize(labelWidth() + side + 2 * kGap, headerHeight(1) + side + 2 * kGap));
}

QSize AttentionGrid::sizeHint() const {
    return QSize(labelWidth() + columns() * 90, headerHeight(layers()) + layers() * 90);
}

double AttentionGrid::cellAspect() const {
    if (m_maps.empty() || m_maps[0].empty() || m_maps[0][0].empty() || m_maps[0][0][0].empty()) return 1.0;
    const double rows = double(m_maps[0][0].size()), cols = double(m_maps[0][0][0].size());
    return std::clamp(rows / cols, 1.0, kMaxAspect);
}

// The largest squares that fit; then, for a map taller than wide, as tall as its shape asks where
// the rows leave room (16 heads and the mean make narrow columns: a long translation's rows are not
// squeezed into them).
QSize AttentionGrid::cellSize(int shown) const {
    const int room_w = (width() - labelWidth()) / std::max(1, columns()) - kGap,
              room_h = (height() - headerHeight(shown)) / std::max(1, shown) - kGap;
    const int w = std::max(8, std::min(room_w, room_h));
    // Narrow columns (16 heads and the mean) still give each map row kMinMapRowPx where the rows
    // leave room: the cell is taller than its map's shape.
    const int rows = m_maps.empty() || m_maps[0].empty() ? 0 : int(m_maps[0][0].size());
    const int tall = std::max(int(std::lround(w * cellAspect())), rows * kMinMapRowPx);
    return {w, std::max(w, std::min(room_h, tall))};
}

QRect AttentionGrid::cellRect(int layer, int column) const {
    const int shown = shownLayers(), first = firstShownLayer();
    if (heads() == 0 || column < 0 || column >= columns() || layer < first || layer >= first + shown) return {};
    const int label = labelWidth(), header = headerHeight(shown);
    const QSize cell = cellSize(shown);
    const int w = cell.width(), h = cell.height();
    // The block of cells centred in the room left by the captions.
    const int x0 = label + std::max(0, (width() - label - columns() * (w + kGap)) / 2);
    const int y0 = header + std::max(0, (height() - header - shown * (h + kGap)) / 2);
    return QRect(x0 + column * (w + kGap), y0 + (layer - first) * (h + kGap), w, h);
}

namespace {
// The longest candidate that fits `room` pixels in `fm`; none when even the shortest does not
// (the cells' tooltips still name them).
QString fitting(const QFontMetrics& fm, const QStringList& candidates, int room) {
    for (const QString& c : candidates)
        if (fm.horizontalAdvance(c) <= room) return c;
    return {};
}
}  // namespace

void AttentionGrid::setColumnTitle(const QString& title) {
    m_column_title = title;
    updateGeometry();  // its least size follows the title
    fitPage();
}

QString AttentionGrid::headerText(int c) const {
    const QRect first = cellRect(firstShownLayer(), c);
    const QStringList full = c == heads() ? QStringList{tr("mean"), tr("μ")}
                             : !m_column_title.isEmpty()
                                 ? QStringList{m_column_title}
                                 : QStringList{headLabel(c), tr("h%1").arg(shownText(c)), shownText(c)};
    return fitting(QFontMetrics(font()), full, first.width() + kGap - 2);
}

QString AttentionGrid::layerText(int l) const {
    if (QFontMetrics(font()).height() > cellRect(l, 0).height() + kGap) return {};  // rows closer than a line
    return fitting(QFontMetrics(font()), {layerLabel(l), tr("L%1").arg(shownText(l)), shownText(l)},
                   cellRect(l, 0).left() - 4);
}

bool AttentionGrid::captionsFit() const {
    const QFontMetrics fm(font());
    const int first = firstShownLayer();
    for (int c = 0; c < columns(); ++c)
        if (fm.horizontalAdvance(headerText(c)) > cellRect(first, c).width() + kGap - 2) return false;
    for (int l = first; l < first + shownLayers(); ++l)
        if (!layerText(l).isEmpty() && (fm.horizontalAdvance(layerText(l)) > cellRect(l, 0).left() - 4 ||
                                        fm.height() > cellRect(l, 0).height() + kGap))
            return false;
    return cellRect(first, 0).top() >= fm.height();
}

std::pair<int, int> AttentionGrid::cellAt(const QPoint& pos) const {
    for (int l = 0; l < layers(); ++l)
        for (int c = 0; c < columns(); ++c)
            if (cellRect(l, c).contains(pos)) return {l, c};
    return {-1, -1};
}

void AttentionGrid::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.fillRect(rect(), palette().base());
    if (m_images.empty()) {
        p.drawText(rect(), Qt::AlignCenter, tr("Translate a sentence to see every head"));
        return;
    }
    p.setPen(palette().text().color());
    const int header = QFontMetrics(font()).height();
    const int first = firstShownLayer();
    for (int c = 0; c < columns(); ++c) {
        const QRect r = cellRect(first, c);
        p.drawText(QRect(r.left() - kGap / 2, r.top() - header - 2, r.width() + kGap, header), Qt::AlignCenter,
                   headerText(c));
    }
    // Which layers a page shows, in the corner above their captions (the tooltip says how to move).
    if (const QString page = pageText(); !page.isEmpty())
        p.drawText(QRect(0, 0, width(), cellRect(first, 0).top() - header - 2), Qt::AlignLeft | Qt::AlignTop,
                   page + tr(" (scroll for more)"));
    for (int l = first; l < first + shownLayers(); ++l) {
        const QRect r = cellRect(l, 0);
        p.drawText(QRect(0, r.top(), r.left() - 4, r.height()), Qt::AlignRight | Qt::AlignVCenter, layerText(l));
        for (int c = 0; c < columns(); ++c) {
            const QRect cell = cellRect(l, c);
            p.drawImage(cell, m_images[l][c]);
            if (isAblated(l, c)) {  // switched off: its weights are shown, its output was zeroed
                p.setPen(QPen(QColor(192, 57, 43), 2));
                p.drawLine(cell.topLeft(), cell.bottomRight());
                p.drawLine(cell.topRight(), cell.bottomLeft());
            }
            const bool selected = l == m_sel_layer && c == m_sel_head;
            p.setPen(QPen(selected ? QColor(220, 60, 20) : palette().mid().color(), selected ? 3 : 1));
            p.drawRect(cell.adjusted(-1, -1, 0, 0));
            p.setPen(palette().text().color());
        }
    }
}

void AttentionGrid::setAblated(const std::vector<std::pair<int, int>>& heads) {
    m_ablated = heads;
    update();
}

bool AttentionGrid::isAblated(int layer, int head) const {
    return std::find(m_ablated.begin(), m_ablated.end(), std::make_pair(layer, head)) != m_ablated.end();
}

bool AttentionGrid::event(QEvent* e) {
    if (e->type() == QEvent::ToolTip) {
        const auto [layer, column] = cellAt(static_cast<QHelpEvent*>(e)->pos());
        if (layer < 0) {
            QToolTip::hideText();
        } else {
            const QString off =
                isAblated(layer, column) ? tr(" (switched off: its output did not reach the layer)") : QString();
            const QString what = m_column_title.isEmpty() ? layerHeadLabel(layer, column, heads())
                                                          : tr("%1, %2").arg(layerLabel(layer), m_column_title);
            QToolTip::showText(static_cast<QHelpEvent*>(e)->globalPos(), what + off, this);
        }
        return true;
    }
    return QWidget::event(e);
}

void AttentionGrid::mousePressEvent(QMouseEvent* event) {
    const auto [layer, column] = cellAt(event->pos());
    if (layer >= 0) Q_EMIT cellClicked(layer, column);
}

}  // namespace attnlab::ui
