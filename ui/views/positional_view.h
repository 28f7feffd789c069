#pragma once
// PositionalEncodingView: the sinusoid table as a heatmap (positions x dimensions, diverging
// blue-white-red), curves of chosen dimensions over positions, and the matrix of dot products
// between positions. Length, d_model and the layout of the dimensions follow the loaded model
// (config pos_encoding: interleaved = sin on even, cos on odd dimensions, as the paper; half =
// the sines in the first half, the cosines in the second, as Marian) and can be changed.

#include "document/view.h"

#include <attnlab/translation.h>

class QComboBox;
class QCustomPlot;
class QCPColorMap;
class QLineEdit;
class QSpinBox;

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
    QCustomPlot* figure() const override { return m_heat; }
    Parts parts() const override;

private:
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
};

}  // namespace attnlab::ui
