#include "headlab/head_lab_view.h"

#include "headlab/ablation_panel.h"
#include "headlab/alignment_methods_table.h"
#include "headlab/alignment_panel.h"
#include "headlab/head_stats_panel.h"

#include <QTabWidget>
#include <QVBoxLayout>

#include <memory>
#include <utility>

namespace attnlab::ui {

HeadLabView::HeadLabView(ViewContext* context, QWidget* parent) : View(context, parent) {
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
    wireStatistics(context);
    wireAblation(context);
    wireAlignment(context);
    connect(context, &ViewContext::modelChanged, this, [this](ModelInfoPtr info) {
        const auto& m = info->config.model;
        const int heads = int(m.n_head);
        m_ablation->setShape(int(m.encoderLayers()), int(m.decoderLayers()), heads);
        m_stats->setExamples(info->examples);
        m_stats->setCompareChoices(*info);
        m_alignment->setModelShape(int(m.decoderLayers()), heads);  // alignments read cross-attention
        m_alignment->setExamples(info->examples);
        m_examples_due = true;
        if (isVisible() && m_pages->currentWidget() == m_stats) showExamples();
    });
    connect(context, &ViewContext::paletteChanged, this, [this](Palette p) {
        m_stats->setColorMap(p);
        m_alignment->setColorMap(p);
    });
    connect(context, &ViewContext::headLabRequested, this,
            [this, context](const QString& page, const std::vector<HeadRef>& ablate) {
                if (const auto problem = showPage(page, ablate)) context->reportFailure(Operation::HeadLab, *problem);
            });
    // Each page's least size counts only while it is shown: the tab widget's least size is otherwise
    // the largest of the three (the Alignment page's, 371 px tall against the Statistics page's 266).
    auto fitPages = [this] {
        for (int i = 0; i < m_pages->count(); ++i) {
            const auto policy = i == m_pages->currentIndex() ? QSizePolicy::Preferred : QSizePolicy::Ignored;
            m_pages->widget(i)->setSizePolicy(policy, policy);
        }
    };
    fitPages();
    connect(m_pages, &QTabWidget::currentChanged, this, [this, fitPages] {
        fitPages();
        if (m_examples_due && m_pages->currentWidget() == m_stats) showExamples();
    });
    m_stats->setColorMap(context->palette());
    m_alignment->setColorMap(context->palette());
}

void HeadLabView::wireStatistics(ViewContext* c) {
    TranslationController* controller = c->controller();
    // The corpus is read in the languages chosen beside the sentence (a multilingual model's).
    connect(m_stats, &HeadStatsPanel::runRequested, controller, [c, controller](HeadLabRequest r) {
        const DecodingOptions shown = c->decodingOptions();
        r.decoding.source_language = shown.source_language;
        r.decoding.target_language = shown.target_language;
        controller->runHeadLab(r);
    });
    connect(m_stats, &HeadStatsPanel::cancelRequested, controller, &TranslationController::cancelHeadLab);
    connect(controller, &TranslationController::headLabProgress, m_stats, &HeadStatsPanel::showProgress);
    connect(controller, &TranslationController::headsCompared, m_stats, &HeadStatsPanel::setComparison);
    // A model chosen to compare with is checked against the languages chosen beside the sentence.
    connect(m_stats, &HeadStatsPanel::compareCheckRequested, controller, [c, controller](const QString& dir) {
        const DecodingOptions shown = c->decodingOptions();
        controller->checkComparison(dir, QString::fromStdString(shown.source_language),
                                    QString::fromStdString(shown.target_language));
    });
    connect(controller, &TranslationController::comparisonChecked, m_stats, &HeadStatsPanel::setComparisonCheck);
    connect(c, &ViewContext::decodingOptionsChanged, this,
            [this, shown = std::make_shared<std::pair<std::string, std::string>>()](const DecodingOptions& o) {
                if (*shown == std::make_pair(o.source_language, o.target_language)) return;
                *shown = {o.source_language, o.target_language};
                m_stats->recheckComparison();  // other languages: the other model's may be others too
            });
    connect(controller, &TranslationController::headLabFinished, this, [this, c](HeadStatsPtr s, ImportancePtr i) {
        // Lines the model cannot read are left out of the run, not a reason to stop it.
        const QString skipped = s && !s->skipped.empty()
                                    ? tr(" — %n line(s) left out; line %1: %2", nullptr, int(s->skipped.size()))
                                          .arg(s->skipped.front().pair)
                                          .arg(QString::fromStdString(s->skipped.front().reason))
                                    : QString();
        m_stats->setReport(std::move(s), std::move(i), c->model());
        c->showStatus(tr("Head statistics ready") + skipped);
    });
    connect(c, &ViewContext::failed, this, [this](Operation op, const QString& m) {
        if (op == Operation::HeadLab) m_stats->showFailure(m);
    });
    // A head's most typical sentence: translate it and show that head's map.
    connect(m_stats, &HeadStatsPanel::sentenceRequested, this, [c](const QString& sentence, const HeadRef& head) {
        c->translateSentence(sentence);
        c->showHead(head);
    });
}

void HeadLabView::wireAblation(ViewContext* c) {
    connect(m_ablation, &AblationPanel::ablationChanged, c, &ViewContext::setAblated);
    connect(c, &ViewContext::resultChanged, this,
            [this, c](ResultPtr r) { m_ablation->setResult(std::move(r), c->resultOptions()); });
    // "Before" of the sentence and options of "after" (another sentence typed with heads off).
    TranslationController* controller = c->controller();
    connect(m_ablation, &AblationPanel::baselineNeeded, controller, &TranslationController::translateBaseline);
    connect(controller, &TranslationController::baselineTranslated, m_ablation, &AblationPanel::setBaseline);
    connect(controller, &TranslationController::baselineFailed, m_ablation, &AblationPanel::setBaselineFailure);
}

void HeadLabView::wireAlignment(ViewContext* c) {
    TranslationController* controller = c->controller();
    connect(m_alignment, &AlignmentPanel::alignRequested, controller, &TranslationController::alignPair);
    connect(controller, &TranslationController::pairAligned, m_alignment, &AlignmentPanel::setForced);
    AlignmentMethodsTable* methods = m_alignment->methods();
    connect(methods, &AlignmentMethodsTable::scoreRequested, this,
            [this, controller] { controller->alignExamples(m_alignment->examplesWithGold()); });
    connect(controller, &TranslationController::examplesAligned, methods, &AlignmentMethodsTable::setReport);
    // Statistics › Open results… of alignment scores: shown here, as a report of the page's own.
    connect(m_stats, &HeadStatsPanel::alignmentOpened, this,
            [this, c](AlignmentReportPtr report, const QString& path, ModelInfoPtr model) {
                m_alignment->methods()->showFile(std::move(report), path, *model, c->model().get());
                m_pages->setCurrentWidget(m_alignment);
            });
    connect(c, &ViewContext::failed, this, [this](Operation op, const QString& m) {
        if (op != Operation::Align) return;
        m_alignment->showFailure(m);
        m_alignment->methods()->showFailure(m);
    });
}

// The statistics of the model's examples are computed when their page is first seen.
void HeadLabView::showEvent(QShowEvent* event) {
    View::showEvent(event);
    if (m_examples_due && m_pages->currentWidget() == m_stats) showExamples();
}

void HeadLabView::showExamples() {
    if (const auto problem = runOnExamples()) context()->showStatus(*problem);
}

QString HeadLabView::noExamples() const {
    return tr("the model has no examples (examples.tsv) to run the statistics on");
}

std::optional<QString> HeadLabView::runOnExamples() {
    const auto info = context()->model();
    if (!info) return tr("no model is loaded");
    m_examples_due = false;
    std::vector<std::string> sources, references;
    for (const auto& e : info->examples) {
        sources.push_back(e.source);
        references.push_back(e.reference);
    }
    if (sources.empty()) {
        m_stats->setEmptyMessage(
            tr("This model has no examples (examples.tsv): choose a corpus with Corpus… and "
               "press Run"));
        return noExamples();
    }
    m_stats->setCorpus(sources, references, tr("the model's %1 examples").arg(sources.size()));
    m_stats->startRun(false);
    return std::nullopt;
}

std::optional<QString> HeadLabView::showPage(const QString& page, const std::vector<HeadRef>& ablate) {
    if (!context()->model()) return tr("no model is loaded");
    if (page == "statistics") {
        m_pages->setCurrentWidget(m_stats);
        context()->showView("heads");                // computes the examples' statistics when due (showEvent)
        if (m_examples_due) return runOnExamples();  // not visible (headless, before show)
        if (context()->model()->examples.empty()) return noExamples();
    } else if (page == "ablation") {
        m_pages->setCurrentWidget(m_ablation);
        context()->showView("heads");
        for (const auto& h : ablate)
            if (!m_ablation->toggle(h))
                return tr("--ablate %1: the model has no such head").arg(QString::fromStdString(headName(h)));
        m_ablation->setAblated(ablate);
    } else if (page == "alignment") {
        m_pages->setCurrentWidget(m_alignment);
        context()->showView("heads");
        m_alignment->chooseExample(0);
    } else {
        return tr("'%1' is not one of statistics, ablation, alignment").arg(page);
    }
    return std::nullopt;
}

QCustomPlot* HeadLabView::figure() const { return m_pages->currentWidget() == m_stats ? m_stats->figure() : nullptr; }

QString HeadLabView::noFigureReason() const {
    return tr("only the Statistics page's heatmap exports: run the statistics first");
}

}  // namespace attnlab::ui
