#include "attention_grid.h"

#include <QMouseEvent>
#include <QPainter>

#include <algorithm>

namespace attnlab::ui {

namespace {
constexpr int kLabel = 56;  // room for row/column captions
constexpr int kGap = 6;
}  // namespace

AttentionGrid::AttentionGrid(QWidget* parent) : QWidget(parent) {
    setMinimumSize(200, 120);
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

QImage AttentionGrid::render(const Matrix& m) {
    const int rows = static_cast<int>(m.size()), cols = rows ? static_cast<int>(m[0].size()) : 0;
    QImage img(std::max(cols, 1), std::max(rows, 1), QImage::Format_RGB32);
    img.fill(Qt::white);
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) {
            const float v = std::clamp(m[r][c], 0.0f, 1.0f);  // the same white -> dark blue as AttentionView
            img.setPixel(c, r, qRgb(int(255 + (8 - 255) * v), int(255 + (48 - 255) * v), int(255 + (107 - 255) * v)));
        }
    return img;
}

void AttentionGrid::setMaps(const LayerHeadMaps& maps) {
    m_maps = maps;
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
    update();
}

QSize AttentionGrid::sizeHint() const { return QSize(kLabel + (heads() + 1) * 90, kLabel / 2 + layers() * 90); }

QRect AttentionGrid::cellRect(int layer, int column) const {
    const int columns = heads() + 1;
    if (columns <= 1 || layers() == 0) return {};
    const int side = std::max(8, std::min((width() - kLabel) / columns, (height() - kLabel / 2) / layers()) - kGap);
    return QRect(kLabel + column * (side + kGap), kLabel / 2 + layer * (side + kGap), side, side);
}

std::pair<int, int> AttentionGrid::cellAt(const QPoint& pos) const {
    for (int l = 0; l < layers(); ++l)
        for (int c = 0; c <= heads(); ++c)
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
    for (int c = 0; c <= heads(); ++c) {
        const QRect r = cellRect(0, c);
        p.drawText(QRect(r.left(), 0, r.width(), kLabel / 2), Qt::AlignCenter,
                   c == heads() ? tr("mean") : tr("head %1").arg(c));
    }
    for (int l = 0; l < layers(); ++l) {
        const QRect r = cellRect(l, 0);
        p.drawText(QRect(0, r.top(), kLabel - 4, r.height()), Qt::AlignRight | Qt::AlignVCenter, tr("layer %1").arg(l));
        for (int c = 0; c <= heads(); ++c) {
            const QRect cell = cellRect(l, c);
            p.drawImage(cell, m_images[l][c]);
            const bool selected = l == m_sel_layer && c == m_sel_head;
            p.setPen(QPen(selected ? QColor(220, 60, 20) : palette().mid().color(), selected ? 3 : 1));
            p.drawRect(cell.adjusted(-1, -1, 0, 0));
            p.setPen(palette().text().color());
        }
    }
}

void AttentionGrid::mousePressEvent(QMouseEvent* event) {
    const auto [layer, column] = cellAt(event->pos());
    if (layer >= 0) Q_EMIT cellClicked(layer, column);
}

}  // namespace attnlab::ui
