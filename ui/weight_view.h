#pragma once
// WeightView: one attention weight opened up, in the reference implementation's order: the query
// row q_i and the key row k_j of the head, their element-wise products and their sum, the division
// by the temperature sqrt(d_k), the mask (and why), the whole row of scaled scores and its softmax
// with this cell highlighted, and the head's output as the weighted sum of the value rows. Every
// number comes from the core (Translator::explain); this widget only shows them.

#include "translation_controller.h"

#include <QWidget>

class QLabel;

namespace attnlab::ui {

class BarPlot;

class WeightView : public QWidget {
    Q_OBJECT
public:
    explicit WeightView(QWidget* parent = nullptr);

    void setExplanation(ExplanationPtr explanation);
    void clear(const QString& message);
    ExplanationPtr explanation() const { return m_e; }

    QString summaryText() const;  // the worked arithmetic, as shown (tests read it)
    BarPlot* vectors() const { return m_vectors; }
    BarPlot* products() const { return m_products; }
    BarPlot* scores() const { return m_scores; }
    BarPlot* weights() const { return m_weights; }
    BarPlot* output() const { return m_output; }

private:
    ExplanationPtr m_e;
    QLabel* m_heading;
    QLabel* m_arithmetic;
    QLabel* m_mask;
    QLabel* m_output_text;
    BarPlot* m_vectors;
    BarPlot* m_products;
    BarPlot* m_scores;
    BarPlot* m_weights;
    BarPlot* m_output;
};

}  // namespace attnlab::ui
