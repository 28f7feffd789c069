#pragma once
// AttentionExplorer (view "attention"): pick an attention kind, a layer and a head (or the mean over
// heads); see that map large (AttentionView) and all of them small (AttentionGrid). Keyboard, with
// the focus in the explorer: Up/Down change the layer, Left/Right the head, 1/2/3 the kind; its
// menu actions do the same on Alt+ keys (and Ctrl+1/2/3) from anywhere.

#include "document/view.h"

#include <attnlab/explain.h>

class QCheckBox;
class QComboBox;
class QCustomPlot;
class QLabel;
class QPushButton;
class QSplitter;

namespace attnlab::ui {

class AttentionGrid;
class AttentionView;
class HeadPicker;
class WholeModelMaps;

class AttentionExplorer : public View {
    Q_OBJECT
public:
    AttentionExplorer(ViewContext* context, QWidget* parent = nullptr);

    void setResult(ResultPtr result);
    void select(AttentionKind kind, int layer, int head);  // head == n_head: mean over heads
    AttentionKind kind() const;
    int layer() const;
    int head() const;

    AttentionView* view() const { return m_view; }
    QCustomPlot* figure() const override;  // null before a translation
    QString noFigureReason() const override;
    void saveState(ViewState& state) const override;
    void applyState(const ViewState& state) override;
    Parts parts() const override;
    QList<QAction*> menuActions() const override { return m_actions; }
    AttentionGrid* grid() const { return m_grid; }
    // Below the grid while ALTI+ or value zeroing is the Method and computed: its maps through the whole
    // model (Contributions::source and ::target side by side); hidden otherwise.
    WholeModelMaps* wholeModel() const { return m_whole; }
    // Above the grid for a Method with one map per layer: why there are no heads to choose.
    QString perLayerNote() const;
    // Beside the Method while what it needs is computed (ViewContext::measuring): a busy bar and Stop
    // (ViewContext::stopMeasuring).
    QWidget* busy() const { return m_busy; }
    QPushButton* stopButton() const { return m_stop; }
    // The maps shown: the kind's under the context's measure; null before a result, or while the
    // value norms are computed.
    const LayerHeadMaps* currentMaps() const;

    void stepLayer(int delta);
    void stepHead(int delta);
    void setKind(AttentionKind kind);
    void setColorMap(Palette palette);
    // What the heatmap says while there is no result (no model, loading, nothing translated yet).
    void setEmptyMessage(const QString& message);

Q_SIGNALS:
    // A cell of one head's map was clicked (not of the mean over heads): what to explain.
    void cellChosen(attnlab::CellRef cell);

private:
    void follow(ViewContext* context);
    void buildActions();
    void refresh();
    void showWholeModel();  // the contribution method's maps through the model, or nothing
    ResultPtr m_result;
    QString m_empty_message;
    const LayerHeadMaps* m_grid_maps = nullptr;            // what the grid shows (re-rendered only on change)
    mutable std::shared_ptr<const LayerHeadMaps> m_shown;  // keeps currentMaps() alive
    HeadPicker* m_picker;
    QComboBox* m_measure;
    QCheckBox* m_fixed;
    AttentionView* m_view;
    AttentionGrid* m_grid;
    QLabel* m_per_layer;
    QWidget* m_busy;
    QPushButton* m_stop;
    WholeModelMaps* m_whole;
    QSplitter* m_right;  // the grid above the whole-model maps
    QList<QAction*> m_actions;
};

}  // namespace attnlab::ui
