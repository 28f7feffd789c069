#pragma once
// PairView: a minimal pair — two sentences that differ in one word — side by side: the chosen
// kind, layer and head's map for each, and their difference (A − B, blue-white-red) where the
// pieces line up (attnlab::compareMaps: common pieces, and changed words of as many pieces; a
// label "x/y" where they differ).

#include "document/view.h"
#include "views/attention_explorer.h"

class QLabel;
class QLineEdit;

namespace attnlab::ui {

class AttentionView;
class HeadPicker;

class PairView : public View {
    Q_OBJECT
public:
    PairView(ViewContext* context, QWidget* parent = nullptr);

    void setSentences(const QString& a, const QString& b);
    std::pair<QString, QString> sentences() const;
    void setPair(ResultPtr a, ResultPtr b);
    void select(AttentionKind kind, int layer, int head);
    void setColorMap(Palette palette);
    void requestCompare();  // emits compareRequested with the two fields

    HeadPicker* picker() const { return m_picker; }
    AttentionView* mapA() const { return m_a; }
    AttentionView* mapB() const { return m_b; }
    AttentionView* difference() const { return m_diff; }
    QString summaryText() const;
    void saveState(ViewState& state) const override;
    void applyState(const ViewState& state) override;
    Parts parts() const override;

Q_SIGNALS:
    void compareRequested(const QString& a, const QString& b);

private:
    void follow(ViewContext* context);
    void refresh();
    ResultPtr m_ra, m_rb;
    QLineEdit* m_sa;
    QLineEdit* m_sb;
    HeadPicker* m_picker;
    QLabel* m_summary;
    AttentionView* m_a;
    AttentionView* m_b;
    AttentionView* m_diff;
    QWidget* m_maps;  // A, B and their difference side by side
};

}  // namespace attnlab::ui
