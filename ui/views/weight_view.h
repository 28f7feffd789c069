#pragma once
// WeightView: one attention weight opened up, in the reference implementation's order: the query
// row q_i and the key row k_j of the head, their element-wise products and their sum, the division
// by the temperature sqrt(d_k), the mask (and why), the whole row of scaled scores and its softmax
// with this cell highlighted, and the head's output as the weighted sum of the value rows. With relative
// positions (Shaw et al.) the score's second part, q . a^K of the clipped offset over sqrt(d_k), is named. Every
// number comes from the core (Translator::explain); this widget only shows them.

#include "document/view.h"

class QLabel;

namespace attnlab::ui {

class BarPlot;

class WeightView : public View {
    Q_OBJECT
public:
    // Follows the context: a cell asked for with ViewContext::explainCell is computed and shown here
    // (the view comes to the front); a new translation clears it.
    WeightView(ViewContext* context, QWidget* parent = nullptr);
    void explainCell(const CellRef& cell);

    void setExplanation(ExplanationPtr explanation);
    void clear(const QString& message);
    ExplanationPtr explanation() const { return m_e; }
    QCustomPlot* figure() const override;  // the softmax row
    QString noFigureReason() const override;
    void saveState(ViewState& state) const override;
    void applyState(const ViewState& state) override;
    Parts parts() const override;

    QString summaryText() const;  // the worked arithmetic, as shown (tests read it)
    // The relative position term of a score (q · a^K / sqrt(d_k)) in words; empty without relative positions.
    static QString relativeTermText(const AttentionExplanation& e);
    QString headingText() const;  // the line above it: which weight, or why there is none
    BarPlot* vectors() const { return m_vectors; }
    BarPlot* products() const { return m_products; }
    BarPlot* scores() const { return m_scores; }
    BarPlot* weights() const { return m_weights; }
    BarPlot* output() const { return m_output; }

private:
    void follow(ViewContext* context);
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
