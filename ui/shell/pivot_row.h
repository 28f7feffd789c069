#pragma once
// PivotRow: the sentence row's line for a pivot translation (ViewContext::pivoting; attnlab/route.h):
// the leg switch (the views show one leg's model and maps at a time: "1  de → en", "2  en → fr"),
// the middle sentence, editable (Enter translates the second leg from it; "Undo edit" goes back to the
// first leg's output), and the final translation (elided on a narrow window, whole in its tooltip).
// Follows the context like a view; hidden without a pivot.

#include "document/view_context.h"

#include <QWidget>

#include <array>

class QLabel;
class QLineEdit;
class QToolButton;

namespace attnlab::ui {

class PivotRow : public QWidget {
    Q_OBJECT
public:
    explicit PivotRow(ViewContext* context, QWidget* parent = nullptr);

    QLineEdit* middleEdit() const { return m_middle; }
    QToolButton* legButton(int leg) const { return m_legs.at(size_t(leg)); }
    QToolButton* undoEditButton() const { return m_undo; }
    QLabel* middleLabel() const { return m_middle_label; }
    QString finalTranslation() const;  // the second leg's, whole (the label may show it elided)

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;  // the final translation's label resized

private:
    void follow();     // the context's pivot, its legs and translations
    void showFinal();  // the final translation, elided to the label's width
    ViewContext* m_context;
    std::array<QToolButton*, 2> m_legs{};
    QLabel* m_middle_label;
    QLineEdit* m_middle;
    QToolButton* m_undo;
    QLabel* m_final;
    QString m_final_text;
};

}  // namespace attnlab::ui
