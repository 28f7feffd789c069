#pragma once
// BarPlot: one or more series of bars over the same positions (vector components, candidate
// tokens, a row of scores), with optional labels under the bars, one highlighted position, the
// value of every bar on hover, and a click signal. Text follows the app's size (plot_style.h).

#include <QColor>
#include <QStringList>
#include <QWidget>

#include <vector>

class QCustomPlot;

namespace attnlab::ui {

class BarPlot : public QWidget {
    Q_OBJECT
public:
    explicit BarPlot(QWidget* parent = nullptr);

    struct Series {
        QString name;
        std::vector<double> values;
        QColor color;
    };
    // labels: one per position (empty = the positions are numbered from 0, as vector components).
    // highlight: a position drawn in the highlight colour (-1 = none).
    void setBars(const std::vector<Series>& series, const QStringList& labels, int highlight = -1);
    void setTitle(const QString& title);
    void setValueAxisTitle(const QString& title);
    // No bars: no axes either (an empty plot's range is meaningless), and `message` where the title
    // goes, saying what will be there; without one the title stays (it may say why there are no bars:
    // the Inputs tab's "3. no absolute positions: …").
    void clear(const QString& message = {});

    int count() const { return m_count; }
    QString toolTipAt(int position) const;  // what hovering over a position shows
    QCustomPlot* plot() const { return m_plot; }

Q_SIGNALS:
    void barClicked(int position);

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;
    void changeEvent(QEvent* event) override;

private:
    int positionAt(int x_pixel) const;
    void fitMinimumHeight();  // room for the bars and their labels at the current text size
    QCustomPlot* m_plot;
    std::vector<Series> m_series;
    QStringList m_labels;
    int m_count = 0;
};

}  // namespace attnlab::ui
