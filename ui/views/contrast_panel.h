#pragma once
// ContrastPanel (in the Saliency tab): "why this piece and not that one?" (issue 54, item 4). A produced
// piece (its step) and another piece — one of the step's candidates, or typed — and, from the worker
// (Translator::contrastive), gradient x input of log p(chosen) - log p(alternative) at that step: one row
// over the source pieces, then the decoder's input up to the step (marked ›), red where an input pushes
// towards the chosen piece; beside it, over the same columns, the value zeroing of that difference: a row
// per layer of each attention, what zeroing a piece's values there takes away from it (red: the piece
// pushes towards the chosen piece through that layer).

#include "document/view_context.h"

#include <QWidget>

class QComboBox;
class QPushButton;

namespace attnlab::ui {

class AttentionView;

class ContrastPanel : public QWidget {
    Q_OBJECT
public:
    ContrastPanel(ViewContext* context, QWidget* parent = nullptr);

    void setResult(ResultPtr result);  // the translation shown (null: none)
    // Asks why the piece at `step` and not `alternative` (what the Why? button does).
    void ask(int step, const QString& alternative);
    AttentionView* map() const { return m_map; }
    AttentionView* zeroingMap() const { return m_zeroing; }
    ContrastivePtr contrastive() const { return m_contrastive; }
    QComboBox* stepBox() const { return m_step; }
    QComboBox* alternativeBox() const { return m_alternative; }
    QPushButton* whyButton() const { return m_why; }  // disabled while a question is in flight

private:
    void fillAlternatives();  // the chosen step's candidates but the chosen piece
    void show(ResultPtr result, ContrastivePtr contrastive);
    void showZeroing(const QStringList& columns);
    void clearMaps(const QString& message);
    void failedFor(ResultPtr result, const QString& message);
    ViewContext* m_context;
    ResultPtr m_result;
    ContrastivePtr m_contrastive;
    QComboBox* m_step;
    QComboBox* m_alternative;
    QPushButton* m_why;
    AttentionView* m_map;
    AttentionView* m_zeroing;
};

}  // namespace attnlab::ui
