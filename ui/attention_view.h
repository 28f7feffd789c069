#pragma once
// AttentionView: one attention map as a heatmap, the pieces as tick labels on both axes (rotated
// on the key axis), a colour scale, and a tooltip naming query piece, key piece and weight.

#include <attnlab/translation.h>

#include <QStringList>
#include <QWidget>

class QCustomPlot;
class QCPColorMap;
class QCPColorScale;
class QCPTextElement;

namespace attnlab::ui {

class AttentionView : public QWidget {
    Q_OBJECT
public:
    explicit AttentionView(QWidget* parent = nullptr);

    // rows = queries (y axis, top to bottom), columns = keys (x axis).
    void setMap(const Matrix& map, const QStringList& query_labels, const QStringList& key_labels,
                const QString& title);
    void clear();
    // Axis titles (default "query" / "key").
    void setAxisTitles(const QString& query, const QString& key);
    // Fixed 0-1 colour range (default) or each map's own min-max.
    void setFixedRange(bool fixed);

    // What is shown (tests read it back).
    const Matrix& map() const { return m_map; }
    QString toolTipAt(int row, int column) const;
    QCustomPlot* plot() const { return m_plot; }

    bool savePng(const QString& path, int scale = 2);
    bool savePdf(const QString& path);

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void rescale();
    QCustomPlot* m_plot;
    QCPColorMap* m_colormap;
    QCPColorScale* m_scale;
    QCPTextElement* m_title;
    Matrix m_map;
    QStringList m_queries, m_keys;
    bool m_fixed_range = true;
};

}  // namespace attnlab::ui
