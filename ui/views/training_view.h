#pragma once
// TrainingView (view "training", issue 28): a model's attention as it was learned, from the attention
// history its package carries (attnlab/attention_history.h, docs/attention-history.md). A slider
// over the recorded points with play/pause; the chosen probe sentence's map of one head (or the mean)
// large and every layer x head small, both at the point shown; the training loss, validation loss and
// BLEU over the steps with a cursor at that point. A model without a history says how to record one.

#include "document/view.h"

#include <attnlab/head_stats.h>

#include <vector>

class QComboBox;
class QCPItemStraightLine;
class QCustomPlot;
class QLabel;
class QPushButton;
class QSlider;
class QTimer;

namespace attnlab::ui {

class AttentionGrid;
class AttentionView;
class HeadPicker;

class TrainingView : public View {
    Q_OBJECT
public:
    TrainingView(ViewContext* context, QWidget* parent = nullptr);

    void setHistory(HistoryPtr history);  // null: the model has none
    HistoryPtr history() const { return m_history; }
    void showPoint(int index);
    int point() const;
    void setProbe(int index);
    void select(AttentionKind kind, int layer, int head);  // head == n_head: the mean
    void setPlaying(bool playing);
    bool playing() const;
    void setColorMap(Palette palette);

    AttentionView* map() const { return m_map; }
    AttentionGrid* grid() const { return m_grid; }
    QCustomPlot* curves() const { return m_curves; }
    QCustomPlot* headCurve() const { return m_head_curve; }  // the chosen statistic of the chosen head
    QString changeText() const;                              // "… changed most between step a and b"
    QString pointText() const;
    QString message() const;  // why nothing is shown, or empty
    QCustomPlot* figure() const override;
    QString noFigureReason() const override;
    // One frame per recorded point: the large map as shown (probe, kind, layer, head).
    [[nodiscard]] std::optional<QString> exportAnimation(const QString& path) override;
    // The kind, layer and head shown (a lesson's), and the point (1-based, ViewState::point) when
    // this tab is the one shown. A point asked for before the history is read is shown once it is
    // (clamped to the history's points: the lesson controller reports a point beyond them).
    void saveState(ViewState& state) const override;
    void applyState(const ViewState& state) override;
    // map (the chosen head at the point), grid (every layer x head), curves (loss and BLEU over the
    // steps), head-curve (the chosen statistic of the chosen head over the steps).
    Parts parts() const override;

    static constexpr int kPlayIntervalMs = 600;  // one point a frame while playing

private:
    void follow(ViewContext* context);
    void buildCurves();
    void buildHeadCurve();
    void refreshHeadCurve();
    void refresh();
    HistoryPtr m_history;
    QString m_package_dir;  // whose history is shown
    QLabel* m_message;
    QSlider* m_slider;
    QPushButton* m_play;
    QTimer* m_timer;
    QLabel* m_point_text;
    QComboBox* m_probe;
    HeadPicker* m_picker;
    AttentionView* m_map;
    AttentionGrid* m_grid;
    QCustomPlot* m_curves;
    QCPItemStraightLine* m_cursor = nullptr;
    QComboBox* m_statistic;
    QCustomPlot* m_head_curve;
    QCPItemStraightLine* m_head_cursor = nullptr;
    QLabel* m_change;
    std::vector<HeadStatsReport> m_stats;  // one per point
    std::optional<int> m_wanted_point;     // 0-based: a step's point, until the history is read
};

}  // namespace attnlab::ui
