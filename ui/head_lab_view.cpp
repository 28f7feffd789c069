#include "head_lab_view.h"

#include "ablation_panel.h"
#include "alignment_panel.h"
#include "head_stats_panel.h"

#include <QTabWidget>
#include <QVBoxLayout>

namespace attnlab::ui {

HeadLabView::HeadLabView(QWidget* parent) : QWidget(parent) {
    m_pages = new QTabWidget(this);
    m_stats = new HeadStatsPanel(this);
    m_ablation = new AblationPanel(this);
    m_alignment = new AlignmentPanel(this);
    m_pages->addTab(m_stats, tr("Statistics"));
    m_pages->addTab(m_ablation, tr("Ablation"));
    m_pages->addTab(m_alignment, tr("Alignment"));
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_pages);
}

}  // namespace attnlab::ui
