#pragma once
// AttentionView: one attention map as a heatmap, the pieces as tick labels on both axes (rotated
// on the key axis), a colour scale, and a tooltip naming query piece, key piece and weight.

#include "plots/plot_style.h"

#include <attnlab/translation.h>

#include <QFont>
#include <QRect>
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
    // No map: the axes and the colour scale are hidden and `message` says why (what to do).
    void clear(const QString& message = QString());
    QString message() const;  // shown while there is no map
    QString title() const;    // the map's title (or the message)
    // Axis titles (default "query" / "key").
    void setAxisTitles(const QString& query, const QString& key);
    // Fixed 0-1 colour range (default) or each map's own min-max.
    void setFixedRange(bool fixed);
    void setColorMap(Palette palette);
    Palette colorMap() const { return m_palette; }
    // Signed values (a difference of two maps): blue-white-red, symmetric around 0.
    void setDiverging(bool diverging);
    // For maps of 0 and 1 (masks) whose text says what the colours mean: no colour scale, and the
    // room it took goes to the map.
    void removeColorScale();
    // Its least height in lines of text (default 8: a title, a few rows, the rotated key labels).
    void setMinimumLines(int lines);
    // For a map on a page that scrolls: its least height also gives each row (up to 24 of them)
    // kReadableRowPx, besides its title and labels as they were last laid out.
    void setReadableRows(bool on);
    // The key labels' rotation in degrees (default 60, for pieces; 0 for short labels such as numbers).
    void setKeyLabelRotation(double degrees);

    // What is shown (tests read it back).
    const Matrix& map() const { return m_map; }
    QString toolTipAt(int row, int column) const;
    // The labels drawn on the query (y) and key (x) axes; fewer than the pieces when they are
    // denser than the text is tall (the tooltip still names every cell).
    QStringList shownQueryLabels() const;
    QStringList shownKeyLabels() const;
    QCustomPlot* plot() const { return m_plot; }
    // The pixels of height a row needs to be read from the back of a room (presenter mode's
    // criterion), and how many more this view needs for that at its present layout (0 when it
    // has them, or shows no map).
    static constexpr int kReadableRowPx = 14;
    // Labels read from where the caption is read: at least this share of the text size (the
    // smallest a caption itself shrinks to, LessonPane), and a row is as tall as such a label's
    // line: 14 px on a 1280 x 720 projector (12 pt), 21 px on 1920 x 1080 (18 pt), never under
    // kReadableRowPx.
    static constexpr double kReadableLabelShare = 0.8;
    int readableRowPx() const;
    double readableLabelPointSize() const;
    int missingHeight() const;

Q_SIGNALS:
    // A click on a cell of the map: row = query, column = key.
    void cellClicked(int row, int column);

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;
    void changeEvent(QEvent* event) override;

private:
    void fitMinimumHeight();
    void rescale();
    void showAxes(bool shown);
    void updateTicks();  // after each replot: the labels thinned to what the axes have room for
    QCustomPlot* m_plot;
    QCPColorMap* m_colormap;
    QCPColorScale* m_scale;
    QCPTextElement* m_title;
    Matrix m_map;
    QStringList m_queries, m_keys;
    bool m_fixed_range = true;
    bool m_diverging = false;
    Palette m_palette = Palette::Blues;
    QString m_query_title = QStringLiteral("query");
    int m_min_lines = 8;
    bool m_readable_rows = false;
    double m_key_rotation = 60;
    int m_row_step = 0, m_col_step = 0;  // every n-th piece labelled (0 = not laid out yet)
    // The largest tick font whose line fits `room` px (the plot's own at most), growing back from
    // `now` only with room to spare.
    QFont tickFont(double room, double now) const;
    static constexpr double kMinTickPointSize = 9.0;
};

}  // namespace attnlab::ui
