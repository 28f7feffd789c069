#pragma once
// HeadLabView: the Heads tab — Statistics (HeadStatsPanel), Ablation (AblationPanel) and
// Alignment (AlignmentPanel) as pages of one tab (docs/head-lab.md).

#include <QWidget>

class QTabWidget;

namespace attnlab::ui {

class AblationPanel;
class AlignmentPanel;
class HeadStatsPanel;

class HeadLabView : public QWidget {
    Q_OBJECT
public:
    explicit HeadLabView(QWidget* parent = nullptr);
    HeadStatsPanel* statistics() const { return m_stats; }
    AblationPanel* ablation() const { return m_ablation; }
    AlignmentPanel* alignment() const { return m_alignment; }
    QTabWidget* pages() const { return m_pages; }

private:
    QTabWidget* m_pages;
    HeadStatsPanel* m_stats;
    AblationPanel* m_ablation;
    AlignmentPanel* m_alignment;
};

}  // namespace attnlab::ui
