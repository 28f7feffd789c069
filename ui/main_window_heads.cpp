// MainWindow: the Heads tab's wiring (statistics runs, head toggles, alignment).
#include "ablation_panel.h"
#include "alignment_panel.h"
#include "attention_explorer.h"
#include "head_lab_view.h"
#include "head_stats_panel.h"
#include "main_window.h"
#include "translate_panel.h"

#include <QTabWidget>

#include <QStatusBar>

namespace attnlab::ui {

void MainWindow::wireHeads() {
    HeadStatsPanel* stats = m_heads->statistics();
    connect(stats, &HeadStatsPanel::runRequested, this, [this](const HeadLabRequest& r) { m_controller->runHeadLab(r); });
    connect(stats, &HeadStatsPanel::cancelRequested, m_controller, &TranslationController::cancelHeadLab);
    connect(m_controller, &TranslationController::headLabProgress, stats, &HeadStatsPanel::showProgress);
    connect(m_controller, &TranslationController::headLabFinished, this, [this](HeadStatsPtr s, ImportancePtr i) {
        m_heads->statistics()->setReport(std::move(s), std::move(i), m_controller->modelInfo());
        statusBar()->showMessage(tr("Head statistics ready"), 5000);
    });
    connect(m_controller, &TranslationController::headLabFailed, this, [this](const QString& m) {
        m_last_error = m;
        m_heads->statistics()->showFailure(m);
    });
    // A head's most typical sentence: translate it and show that head's map.
    connect(stats, &HeadStatsPanel::sentenceRequested, this, [this](const QString& sentence, const HeadRef& head) {
        m_translate->setSentence(sentence);
        translateSentence(sentence, m_translate->options());
        m_explorer->select(static_cast<AttentionKind>(static_cast<int>(head.kind)), head.layer, head.head);
        showTab(Tab::Attention);
    });

    AblationPanel* ablation = m_heads->ablation();
    connect(ablation, &AblationPanel::ablationChanged, this, [this] {
        const auto shown = m_result;
        if (!shown) return;
        DecodingOptions o = m_result_options;
        translateSentence(QString::fromStdString(shown->source_text), o);
    });
    connect(m_controller, &TranslationController::translationFinished, ablation, &AblationPanel::setResult);

    AlignmentPanel* alignment = m_heads->alignment();
    connect(alignment, &AlignmentPanel::alignRequested, m_controller, &TranslationController::alignPair);
    connect(m_controller, &TranslationController::pairAligned, alignment, &AlignmentPanel::setForced);
    connect(m_controller, &TranslationController::alignFailed, this, [this](const QString& m) {
        m_last_error = m;
        m_heads->alignment()->showFailure(m);
    });
    connect(m_controller, &TranslationController::modelLoaded, this, [this](ModelInfoPtr info) {
        const int layers = int(info->config.model.n_layers), heads = int(info->config.model.n_head);
        m_heads->ablation()->setShape(layers, heads);
        m_heads->statistics()->setExamples(info->examples);
        m_heads->alignment()->setModelShape(layers, heads);
        m_heads->alignment()->setExamples(info->examples);
    });
}

std::optional<QString> MainWindow::showHeadLab(const QString& page, const std::vector<HeadRef>& ablate) {
    const auto info = m_controller->modelInfo();
    if (!info) return tr("no model is loaded");
    showTab(Tab::Heads);
    if (page == "statistics") {
        m_heads->pages()->setCurrentWidget(m_heads->statistics());
        std::vector<std::string> sources, references;
        for (const auto& e : info->examples) {
            sources.push_back(e.source);
            references.push_back(e.reference);
        }
        if (sources.empty()) return tr("the model has no examples (examples.tsv) to run the statistics on");
        m_heads->statistics()->setCorpus(sources, references, tr("the model's %1 examples").arg(sources.size()));
        m_heads->statistics()->startRun(false);
    } else if (page == "ablation") {
        m_heads->pages()->setCurrentWidget(m_heads->ablation());
        for (const auto& h : ablate)
            if (!m_heads->ablation()->toggle(h))
                return tr("--ablate %1: the model has no such head").arg(QString::fromStdString(headName(h)));
        m_heads->ablation()->setAblated(ablate);
    } else if (page == "alignment") {
        m_heads->pages()->setCurrentWidget(m_heads->alignment());
        m_heads->alignment()->chooseExample(0);
    } else {
        return tr("'%1' is not one of statistics, ablation, alignment").arg(page);
    }
    return std::nullopt;
}

}  // namespace attnlab::ui
