#pragma once
// SaliencyView: what moves each produced piece, by gradient rather than attention (issue 27,
// docs/head-lab.md "Saliency"): gradient x input of every source piece and of every previous target
// piece for each produced piece, one map for the whole model (Translator::saliency), beside the
// cross-attention rollout through the last layer, the attention's own answer to the same question.
// Computed on the worker when the view is shown (at once when it is). Below, "why this piece and not
// that one?" (ContrastPanel, issue 54).

#include "document/view.h"
#include "views/shown_result.h"

class QLabel;

namespace attnlab::ui {

class AttentionView;
class ContrastPanel;

class SaliencyView : public View {
    Q_OBJECT
public:
    SaliencyView(ViewContext* context, QWidget* parent = nullptr);

    AttentionView* sourceMap() const { return m_source; }  // [produced piece][source piece]
    AttentionView* targetMap() const { return m_target; }  // [produced piece][decoder input piece]
    AttentionView* rolloutMap() const { return m_rollout; }
    ContrastPanel* contrast() const { return m_contrast; }
    SaliencyPtr saliency() const { return m_saliency; }
    QCustomPlot* figure() const override;
    QString noFigureReason() const override;
    Parts parts() const override;

protected:
    void showEvent(QShowEvent* event) override;

private:
    void setResult(ResultPtr result);
    void showSaliency(ResultPtr result, SaliencyPtr saliency);
    void showProblem(const QString& message);
    ShownResult m_shown;  // the translation whose saliency is asked for when the view is shown
    SaliencyPtr m_saliency;
    QLabel* m_about;
    AttentionView* m_source;
    AttentionView* m_target;
    AttentionView* m_rollout;
    ContrastPanel* m_contrast;
};

}  // namespace attnlab::ui
