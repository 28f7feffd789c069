#pragma once
// ModelPanel: configuration, parameter counts, vocabulary size, device and load time of the
// loaded model; its MODEL_CARD.md; and, when the package carries its training log
// (training_log.tsv), the validation BLEU and the losses per epoch; its confidence threshold.
#include "document/view.h"

#include <optional>

class QCustomPlot;
class QLabel;
class QTextBrowser;

namespace attnlab::ui {

class ModelPanel : public View {
    Q_OBJECT
public:
    ModelPanel(ViewContext* context, QWidget* parent = nullptr);  // shows every model loaded
    void showModel(const ModelInfo& info);

    QTextBrowser* details() const { return m_details; }
    QTextBrowser* card() const { return m_card; }
    // Graphs, in order: training loss, validation loss (left axis), validation BLEU (right axis),
    // x = epoch. Empty when the package has no training log.
    QCustomPlot* trainingPlot() const { return m_plot; }
    QCustomPlot* figure() const override;  // the training curves; null when there are none
    QString noFigureReason() const override;
    QString trainingMessage() const;  // why there is no plot, or empty

    // The Confidence paragraph: the package's threshold, or why there is none.
    static QString confidenceText(const std::optional<ConfidenceCalibration>& calibration, bool imported);

private:
    void showTrainingLog(const QString& package_dir);

    QTextBrowser* m_details;
    QTextBrowser* m_card;
    QCustomPlot* m_plot;
    QLabel* m_plot_message;
};

}  // namespace attnlab::ui
