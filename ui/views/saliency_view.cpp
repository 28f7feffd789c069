#include "views/saliency_view.h"

#include "plots/attention_view.h"
#include "views/contrast_panel.h"

#include <attnlab/attention_flow.h>

#include <QHBoxLayout>
#include <QLabel>
#include <QVBoxLayout>

namespace attnlab::ui {

namespace {
// The decoder's input pieces: <s>, then every produced piece but the last.
QStringList decoderInputLabels(const TranslationResult& r) {
    QStringList labels{QStringLiteral("<s>")};
    for (size_t i = 0; i + 1 < r.best.pieces.size(); ++i) labels << QString::fromStdString(r.best.pieces[i]);
    return labels;
}
}  // namespace

SaliencyView::SaliencyView(ViewContext* c, QWidget* parent)
    : View(c, parent), m_shown([this](const ResultPtr& r) { context()->controller()->computeSaliency(r); }) {
    m_about = new QLabel(tr("Gradient × input: for each produced piece (a row), how much each input piece's embedding "
                            "raises (red) or lowers (blue) the log-probability of that piece, summed over the "
                            "embedding's dimensions. One map for the whole model; beside it, what attention says: "
                            "the cross-attention rollout through the last layer."),
                         this);
    m_about->setWordWrap(true);
    m_source = new AttentionView(this);
    m_target = new AttentionView(this);
    m_rollout = new AttentionView(this);
    for (AttentionView* v : {m_source, m_target}) {
        v->setDiverging(true);
        v->setAxisTitles(tr("produced piece"), tr("input piece"));
    }
    m_rollout->setAxisTitles(tr("produced piece"), tr("source piece"));
    auto* row = new QHBoxLayout;
    row->addWidget(m_source, 1);
    row->addWidget(m_rollout, 1);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(m_about);
    layout->addLayout(row, 1);
    layout->addWidget(m_target, 1);
    m_contrast = new ContrastPanel(c, this);
    layout->addWidget(m_contrast, 1);
    showProblem(tr("Translate a sentence to see what moves each produced piece."));

    connect(c, &ViewContext::resultChanged, this, &SaliencyView::setResult);
    // A translation not yet explained belongs to the model before: its ids mean nothing to this one.
    connect(c, &ViewContext::modelChanged, this, [this] {
        if (!m_shown.dropUnanswered(bool(m_saliency))) return;
        showProblem(tr("The saliency needs a translation by the model now loaded: translate again."));
        m_contrast->setResult(nullptr);
    });
    connect(c, &ViewContext::paletteChanged, m_rollout, &AttentionView::setColorMap);
    m_rollout->setColorMap(c->palette());
    connect(c->controller(), &TranslationController::saliencyReady, this, &SaliencyView::showSaliency);
    connect(c, &ViewContext::failed, this, [this](Operation op, const QString& message) {
        if (op == Operation::Saliency) showProblem(message);
    });
    if (c->result()) setResult(c->result());
}

void SaliencyView::setResult(ResultPtr result) {
    m_saliency.reset();
    showProblem(result ? tr("Computing the gradients…")
                       : tr("Translate a sentence to see what moves each produced piece."));
    m_contrast->setResult(result);
    m_shown.set(std::move(result), isVisible());
}

void SaliencyView::showEvent(QShowEvent* event) {
    View::showEvent(event);
    m_shown.shown(true);
}

void SaliencyView::showSaliency(ResultPtr result, SaliencyPtr saliency) {
    if (result != m_shown.get()) return;  // a later translation took its place
    m_saliency = std::move(saliency);
    const TranslationResult& r = *result;
    const auto produced = toQStringList(r.best.pieces);
    m_source->setMap(m_saliency->source, produced, toQStringList(r.source_pieces), tr("Saliency of the source pieces"));
    m_target->setMap(m_saliency->target, produced, decoderInputLabels(r),
                     tr("Saliency of the previous target pieces (the decoder's input)"));
    const auto rollout = measuredMaps(r, AttentionKind::Cross, MapMeasure::Rollout, nullptr);
    if (rollout.empty())
        m_rollout->clear(tr("This translation has no attention maps."));
    else
        m_rollout->setMap(rollout.back().front(), produced, toQStringList(r.source_pieces),
                          tr("Cross-attention rollout, layer %1").arg(rollout.size()));
}

void SaliencyView::showProblem(const QString& message) {
    for (AttentionView* v : {m_source, m_target, m_rollout}) v->clear(message);
}

QCustomPlot* SaliencyView::figure() const { return m_saliency ? m_source->plot() : nullptr; }

QString SaliencyView::noFigureReason() const {
    return tr("translate a sentence first: there is no saliency to export");
}

View::Parts SaliencyView::parts() const {
    return {{"source", m_source}, {"rollout", m_rollout}, {"target", m_target}, {"contrast", m_contrast}};
}

}  // namespace attnlab::ui
