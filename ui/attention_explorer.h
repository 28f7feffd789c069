#pragma once
// AttentionExplorer: pick an attention kind, a layer and a head (or the mean over heads); see that
// map large (AttentionView) and all of them small (AttentionGrid). Keyboard, with the focus in the
// explorer: Up/Down change the layer, Left/Right the head, 1/2/3 the kind (MainWindow adds the
// same on Alt+ keys from anywhere).

#include "plot_style.h"
#include "translation_controller.h"

#include <attnlab/explain.h>

#include <QWidget>

class QCheckBox;
class QCustomPlot;
class QComboBox;
class QSpinBox;

namespace attnlab::ui {

class AttentionGrid;
class AttentionView;

enum class AttentionKind { EncoderSelf = 0, DecoderSelf = 1, Cross = 2 };

class AttentionExplorer : public QWidget {
    Q_OBJECT
public:
    explicit AttentionExplorer(QWidget* parent = nullptr);

    void setResult(ResultPtr result);
    void select(AttentionKind kind, int layer, int head);  // head == n_head: mean over heads
    AttentionKind kind() const;
    int layer() const;
    int head() const;

    AttentionView* view() const { return m_view; }
    QCustomPlot* figure() const;  // what File > Export writes; null before a translation
    AttentionGrid* grid() const { return m_grid; }
    const LayerHeadMaps* currentMaps() const;  // null before a result

    // What the keys do (plain keys inside the explorer; Alt+ keys from anywhere, MainWindow).
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
    void refresh();
    ResultPtr m_result;
    QString m_empty_message;
    const LayerHeadMaps* m_grid_maps = nullptr;  // what the grid shows (re-rendered only on change)
    QComboBox* m_kind;
    QSpinBox* m_layer;
    QSpinBox* m_head;
    QCheckBox* m_fixed;
    AttentionView* m_view;
    AttentionGrid* m_grid;
};

QString kindName(AttentionKind kind);
// A combo box listing the three kinds (index = AttentionKind), `initial` selected.
QComboBox* makeKindCombo(QWidget* parent, AttentionKind initial);
// The core's name for the same kind (attnlab::AttentionKind, attnlab/explain.h).
attnlab::AttentionKind coreKind(AttentionKind kind);

}  // namespace attnlab::ui
