#pragma once
// AttentionGrid: every layer x head of one attention kind at once, as small maps (as bertviz's
// model view), plus a last column with the mean over heads. A click focuses one map; the focused
// cell is outlined.

#include <attnlab/translation.h>

#include <QImage>
#include <QWidget>

#include <vector>

namespace attnlab::ui {

class AttentionGrid : public QWidget {
    Q_OBJECT
public:
    explicit AttentionGrid(QWidget* parent = nullptr);

    void setMaps(const LayerHeadMaps& maps);  // [layer][head]
    void setSelected(int layer, int head);    // head == heads() means the mean column
    int layers() const { return static_cast<int>(m_maps.size()); }
    int heads() const { return m_maps.empty() ? 0 : static_cast<int>(m_maps[0].size()); }
    // The cell under a widget position, {-1, -1} outside.
    std::pair<int, int> cellAt(const QPoint& pos) const;
    // The mean over heads of one layer (what the last column shows).
    static Matrix meanOverHeads(const std::vector<Matrix>& heads);

    QSize sizeHint() const override;

Q_SIGNALS:
    void cellClicked(int layer, int head);

protected:
    void paintEvent(QPaintEvent*) override;
    void mousePressEvent(QMouseEvent* event) override;

private:
    QRect cellRect(int layer, int column) const;
    static QImage render(const Matrix& m);
    LayerHeadMaps m_maps;
    std::vector<std::vector<QImage>> m_images;  // [layer][head + mean]
    int m_sel_layer = 0, m_sel_head = 0;
};

}  // namespace attnlab::ui
