#pragma once
// AttentionGrid: every layer x head of one attention kind at once, as small maps (as bertviz's
// model view), plus a last column with the mean over heads; maps with no heads (one per layer: a
// rollout, ALTI+, value zeroing) are one column, without a mean that would repeat it. A click focuses one map; the
// focused cell is outlined. Cells as large as the widget allows, centred: square, or taller (up to 3:1) where the maps
// are (a long translation's cross-attention) and the rows leave room; captions sized by the font. Where every layer at
// once would leave a map row under kMinMapRowPx (a 12 x 16-head model in a projector's pane), the grid shows a page of
// layers, as many as keep it: the page holds the selected layer, the wheel moves it, a caption in the corner says
// which.

#include "plots/plot_style.h"

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
    // What the head columns stand for when not heads: a rollout has one map per layer, titled so
    // instead of "head 1", and no mean column (empty = heads, and their mean).
    void setColumnTitle(const QString& title);
    // The columns drawn: the heads and their mean, or the one map per layer.
    int columns() const { return heads() + (m_column_title.isEmpty() ? 1 : 0); }
    const LayerHeadMaps& maps() const { return m_maps; }
    void setSelected(int layer, int head);  // head == heads() means the mean column
    std::pair<int, int> selected() const { return {m_sel_layer, m_sel_head}; }
    // Heads switched off in the translation shown ({layer, head}): crossed out, named in the tooltip.
    void setAblated(const std::vector<std::pair<int, int>>& heads);
    bool isAblated(int layer, int head) const;
    int layers() const { return static_cast<int>(m_maps.size()); }
    int heads() const { return m_maps.empty() ? 0 : static_cast<int>(m_maps[0].size()); }
    // The cell under a widget position, {-1, -1} outside.
    std::pair<int, int> cellAt(const QPoint& pos) const;
    // The mean over heads of one layer (what the last column shows).
    static Matrix meanOverHeads(const std::vector<Matrix>& heads);

    QSize sizeHint() const override;
    // One page of one layer with every caption whole: a column title (a method's name) as wide as its cell.
    QSize minimumSizeHint() const override;

    // Paging by layer: the layers drawn (all of them when they fit), the first of them, and the
    // corner's caption ("layers 1–4 of 12", empty when every layer is drawn).
    static constexpr int kMinMapRowPx = 2;
    int shownLayers() const;
    int firstShownLayer() const;
    QString pageText() const;

    void setColorMap(Palette palette);  // re-renders the cells
    // The caption of column c (a head, or the mean) / of layer l, as drawn: the longest of
    // "head 3" / "h3" / "3" that fits the cell at the current size and font; empty when none does
    // (the cell's tooltip names it).
    QString headerText(int column) const;
    QString layerText(int layer) const;
    // Whether every caption fits its cell (what a test at several text sizes checks).
    bool captionsFit() const;
    // Where the map of layer l, column c (a head, or heads() for the mean) is drawn; empty for a column
    // not drawn.
    QRect cellRect(int layer, int column) const;

Q_SIGNALS:
    void cellClicked(int layer, int head);

protected:
    void paintEvent(QPaintEvent*) override;
    void mousePressEvent(QMouseEvent* event) override;
    bool event(QEvent* event) override;            // tooltips: "layer 1, head 3"
    void wheelEvent(QWheelEvent* event) override;  // the next or previous page of layers
    void resizeEvent(QResizeEvent* event) override;
    void changeEvent(QEvent* event) override;  // the app's text size: captions, and so pages, follow it

private:
    double cellAspect() const;               // height / width of a cell: the maps' rows / columns, within 1..3
    QSize cellSize(int layers_shown) const;  // a cell's size with this many layers drawn
    void fitPage();                          // the layers per page for the size, the selected one shown
    void showPageOf(int layer);
    QImage render(const Matrix& m) const;
    void renderAll();
    int labelWidth() const;             // room for the layer captions, from the font
    int headerHeight(int shown) const;  // room for the column captions, `shown` layers drawn
    int titleWidth() const;             // the least cell width for the column title to fit (0: heads)
    Palette m_palette = Palette::Blues;
    LayerHeadMaps m_maps;
    QString m_column_title;
    std::vector<std::vector<QImage>> m_images;  // [layer][head + mean]
    int m_sel_layer = 0, m_sel_head = 0;
    int m_per_page = 0;  // layers drawn at once (0 before the first layout: all)
    int m_first = 0;     // the first of them
    std::vector<std::pair<int, int>> m_ablated;
};

}  // namespace attnlab::ui
