#pragma once
// PositionalEncodingView: the sinusoid table as a heatmap (positions x dimensions, diverging
// blue-white-red), curves of chosen dimensions over positions, and the matrix of dot products
// between positions. Length and d_model follow the loaded model and can be changed.

#include "view.h"

#include <attnlab/translation.h>

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
    const Matrix& table() const { return m_table; }  // [position][dimension] as shown
    QCustomPlot* heatmap() const { return m_heat; }
    QCustomPlot* figure() const override { return m_heat; }

private:
    void rebuild();
    void rebuildCurves();
    QSpinBox* m_length;
    QSpinBox* m_dmodel;
    QLineEdit* m_dims;
    QCustomPlot* m_heat;
    QCustomPlot* m_curves;
    QCustomPlot* m_dots;
    QCPColorMap* m_heat_map;
    QCPColorMap* m_dot_map;
    Matrix m_table;
};

}  // namespace attnlab::ui
