#pragma once
// PairView: a minimal pair — two sentences that differ in one word — side by side: the chosen
// kind, layer and head's map for each, and their difference (A − B, blue-white-red) where the
// pieces line up (attnlab::compareMaps: common pieces, and changed words of as many pieces; a
// label "x/y" where they differ).

#include "attention_explorer.h"
#include "plot_style.h"
#include "translation_controller.h"

#include <QWidget>

class QComboBox;
class QLabel;
class QLineEdit;
class QSpinBox;

namespace attnlab::ui {

class AttentionView;

class PairView : public QWidget {
    Q_OBJECT
public:
    explicit PairView(QWidget* parent = nullptr);

    void setSentences(const QString& a, const QString& b);
    std::pair<QString, QString> sentences() const;
    void setPair(ResultPtr a, ResultPtr b);
    void select(AttentionKind kind, int layer, int head);
    void setColorMap(Palette palette);
    void requestCompare();  // emits compareRequested with the two fields

    AttentionView* mapA() const { return m_a; }
    AttentionView* mapB() const { return m_b; }
    AttentionView* difference() const { return m_diff; }
    QString summaryText() const;

Q_SIGNALS:
    void compareRequested(const QString& a, const QString& b);

private:
    void refresh();
    ResultPtr m_ra, m_rb;
    QLineEdit* m_sa;
    QLineEdit* m_sb;
    QComboBox* m_kind;
    QSpinBox* m_layer;
    QSpinBox* m_head;
    QLabel* m_summary;
    AttentionView* m_a;
    AttentionView* m_b;
    AttentionView* m_diff;
};

}  // namespace attnlab::ui
