#pragma once
// HeadHeatmaps (Heads › Statistics): one statistic of every head of one kind as a layer × head
// heatmap and, while another model is compared, its own map of other minus this on a diverging
// scale centred on 0, below it. Each map takes the room the panel gives it and grows with the
// window; it never gets less than minimumCell() a cell, so that every layer and every head keeps its
// label (1-based, document/numbering.h) and the colour scale stays beside it.

#include "plots/plot_style.h"

#include <attnlab/translation.h>

#include <QWidget>

namespace attnlab::ui {

class AttentionView;

class HeadHeatmaps : public QWidget {
    Q_OBJECT
public:
    explicit HeadHeatmaps(QWidget* parent = nullptr);

    // `values`: layers x heads. `difference` (same shape) or nullptr: no comparison, its map hidden.
    void setMaps(const Matrix& values, const QString& title, const Matrix* difference = nullptr,
                 const QString& difference_title = QString());
    void clear(const QString& message);
    void setColorMap(Palette palette);

    AttentionView* statistic() const { return m_statistic; }
    AttentionView* difference() const { return m_difference; }
    bool showsDifference() const;
    // The least side of a cell in pixels: a line of the text size (a label per row and column),
    // and never below kMinimumCell.
    int minimumCell() const;
    static constexpr int kMinimumCell = 16;

protected:
    void changeEvent(QEvent* event) override;

private:
    void fitMinimumSize();
    AttentionView* m_statistic;
    AttentionView* m_difference;
    int m_layers = 0, m_heads = 0;
};

}  // namespace attnlab::ui
