#pragma once
// HeadLabView (view "heads"): the head lab's three pages — Statistics, Ablation, Alignment — wired
// to the context and the controller here. Statistics opens on the model's examples, computed when
// the tab is first shown for a model (a model without examples says how to choose a corpus).

#include "document/view.h"

#include <optional>

class QTabWidget;

namespace attnlab::ui {

class AblationPanel;
class AlignmentPanel;
class HeadStatsPanel;

class HeadLabView : public View {
    Q_OBJECT
public:
    HeadLabView(ViewContext* context, QWidget* parent = nullptr);
    HeadStatsPanel* statistics() const { return m_stats; }
    AblationPanel* ablation() const { return m_ablation; }
    AlignmentPanel* alignment() const { return m_alignment; }
    QTabWidget* pages() const { return m_pages; }
    QCustomPlot* figure() const override;  // the statistics heatmap, once computed
    QString noFigureReason() const override;

    // One page, as --heads does (asynchronous): "statistics" over the model's examples, "ablation"
    // with `ablate` switched off (the sentence translated again), "alignment" of the first example
    // with its gold. The problem, or nothing.
    [[nodiscard]] std::optional<QString> showPage(const QString& page, const std::vector<HeadRef>& ablate = {});

protected:
    void showEvent(QShowEvent* event) override;

private:
    void wireStatistics(ViewContext* context);
    void wireAblation(ViewContext* context);
    void wireAlignment(ViewContext* context);
    void showExamples();
    QString noExamples() const;  // runOnExamples, its problem in the status bar
    // Statistics over the model's examples, once per model.
    [[nodiscard]] std::optional<QString> runOnExamples();

    QTabWidget* m_pages;
    HeadStatsPanel* m_stats;
    AblationPanel* m_ablation;
    AlignmentPanel* m_alignment;
    bool m_examples_due = false;  // a model came whose examples have not been run
};

}  // namespace attnlab::ui
