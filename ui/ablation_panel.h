#pragma once
// AblationPanel (Heads tab, "Ablation"): switch heads off in a layer x head grid of toggles, one
// grid per kind; every change asks for the sentence again with those heads ablated, and the
// translation and score before (no head off) and after are shown side by side, the words of
// "after" that are not in "before" marked.

#include "translation_controller.h"

#include <attnlab/attention_kind.h>

#include <QWidget>

#include <vector>

class QGridLayout;
class QLabel;
class QToolButton;
class QVBoxLayout;

namespace attnlab::ui {

class AblationPanel : public QWidget {
    Q_OBJECT
public:
    explicit AblationPanel(QWidget* parent = nullptr);

    void setShape(int layers, int heads);  // rebuilds the grids, every head on
    // Every translation result: one with no head ablated becomes "before", one with heads
    // ablated "after" (when it is the same sentence).
    void setResult(ResultPtr result);
    void setAblated(const std::vector<HeadRef>& heads);  // toggles the buttons; emits ablationChanged
    std::vector<HeadRef> ablated() const;
    QToolButton* toggle(const HeadRef& head) const;  // nullptr when out of range

    QString beforeText() const;
    QString afterText() const;  // rich text: changed words in <b>
    // The words of `after` that are not in the longest common subsequence with `before`.
    static std::vector<bool> changedWords(const QStringList& before, const QStringList& after);

Q_SIGNALS:
    void ablationChanged(const std::vector<attnlab::HeadRef>& heads);

private:
    void emitChange();
    void showComparison();
    std::vector<std::vector<std::vector<QToolButton*>>> m_toggles;  // [kind][layer][head]
    QWidget* m_grid_host = nullptr;                                 // recreated by setShape
    QVBoxLayout* m_layout;
    QLabel* m_summary;
    QLabel* m_before;
    QLabel* m_after;
    ResultPtr m_r_before, m_r_after;
    bool m_quiet = false;
};

}  // namespace attnlab::ui
