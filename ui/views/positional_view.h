#pragma once
// PositionalEncodingView: the sinusoid table as a heatmap (positions x dimensions, diverging
// blue-white-red), curves of chosen dimensions over positions, and the matrix of dot products
// between positions. Length, d_model and the layout of the dimensions follow the loaded model
// (config pos_encoding: interleaved = sin on even, cos on odd dimensions, as the paper; half =
// the sines in the first half, the cosines in the second, as Marian) and can be changed.
// A model with relative position representations (ModelConfig::max_relative_positions = k, Shaw et al.)
// is shown instead by its learned tables: for a chosen stack and layer, the key vectors a^K and the value
// vectors a^V of each offset j - i in -k..k as heatmaps offset x dimension, the clipping distance stated.

#include "document/view.h"

#include <attnlab/positional.h>
#include <attnlab/translation.h>

class QComboBox;
class QCustomPlot;
class QCPColorMap;
class QLabel;
class QLineEdit;
class QSpinBox;
class QStackedWidget;

namespace attnlab::ui {

class PositionalEncodingView : public View {
    Q_OBJECT
public:
    PositionalEncodingView(ViewContext* context, QWidget* parent = nullptr);  // follows the model's shape

    void setShape(int length, int d_model);  // as the loaded model
    int length() const;
    int dModel() const;
    // The half-split layout (Marian) or the paper's interleaved one. A change of layout also sets
    // the curves to the layout's sin/cos pairs (half: 0 and d/2, ...).
    void setHalfSplit(bool half);
    bool halfSplit() const;
    QCustomPlot* curves() const { return m_curves; }
    const Matrix& table() const { return m_table; }  // [position][dimension] as shown
    QCustomPlot* heatmap() const { return m_heat; }
    QCustomPlot* figure() const override;
    Parts parts() const override;

    // The relative position tables of the model (shown instead of the sinusoids when it has them).
    bool showsRelative() const;
    void setRelativeLayer(bool decoder, int layer);            // 0-based layer of the encoder's or the decoder's stack
    QString relativeText() const;                              // what the page says about k and the tables
    const Matrix& relativeKeys() const { return m_rel_keys; }  // [offset + k][dimension] as shown
    const Matrix& relativeValues() const { return m_rel_values; }
    QCustomPlot* relativeKeysPlot() const { return m_rel_keys_plot; }

private:
    QWidget* buildSinusoidPage();
    QWidget* buildRelativePage();
    void followModel(const ModelInfo& info);
    void rebuildRelative();
    void rebuild();
    void rebuildCurves();
    QSpinBox* m_length;
    QSpinBox* m_dmodel;
    QComboBox* m_layout;
    QLineEdit* m_dims;
    QCustomPlot* m_heat;
    QCustomPlot* m_curves;
    QCustomPlot* m_dots;
    QCPColorMap* m_heat_map;
    QCPColorMap* m_dot_map;
    Matrix m_table;
    QStackedWidget* m_pages;
    QComboBox* m_rel_stack;
    QSpinBox* m_rel_layer;
    QLabel* m_rel_text;
    QCustomPlot* m_rel_keys_plot;
    QCustomPlot* m_rel_values_plot;
    QCPColorMap* m_rel_keys_map;
    QCPColorMap* m_rel_values_map;
    RelativePositionTables m_relative;
    Matrix m_rel_keys, m_rel_values;
};

}  // namespace attnlab::ui
