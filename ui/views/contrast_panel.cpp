#include "views/contrast_panel.h"

#include "document/numbering.h"
#include "plots/attention_view.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>

#include <limits>

namespace attnlab::ui {

ContrastPanel::ContrastPanel(ViewContext* c, QWidget* parent) : QWidget(parent), m_context(c) {
    m_step = new QComboBox(this);
    m_step->setSizeAdjustPolicy(QComboBox::AdjustToContents);  // each produced piece read whole
    m_alternative = new QComboBox(this);
    m_alternative->setEditable(true);  // any piece of the vocabulary, typed
    m_alternative->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    m_alternative->setMinimumContentsLength(12);
    m_alternative->setToolTip(
        tr("Another piece for that step: one of its candidates, or typed as the "
           "vocabulary writes it (▁ for a space)"));
    m_why = new QPushButton(tr("Why?"), this);
    m_map = new AttentionView(this);
    m_map->setDiverging(true);
    m_map->setMinimumLines(6);
    m_map->setAxisTitles(tr("difference"), tr("source piece, then the decoder's input (›)"));
    m_zeroing = new AttentionView(this);
    m_zeroing->setDiverging(true);
    m_zeroing->setMinimumLines(6);
    m_zeroing->setAxisTitles(tr("layer"), tr("source piece, then the decoder's input (›)"));
    clearMaps(tr("Pick a produced piece and another one, then Why?"));
    auto* row = new QHBoxLayout;
    row->addWidget(new QLabel(tr("Why"), this));
    row->addWidget(m_step);
    row->addWidget(new QLabel(tr("and not"), this));
    row->addWidget(m_alternative);
    row->addWidget(m_why);
    row->addStretch(1);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addLayout(row);
    auto* maps = new QHBoxLayout;
    maps->addWidget(m_map, 1);
    maps->addWidget(m_zeroing, 1);
    layout->addLayout(maps, 1);
    setEnabled(false);
    connect(m_step, &QComboBox::currentIndexChanged, this, [this] { fillAlternatives(); });
    connect(m_why, &QPushButton::clicked, this,
            [this] { ask(m_step->currentIndex(), m_alternative->currentText().trimmed()); });
    connect(c->controller(), &TranslationController::contrastiveReady, this, &ContrastPanel::show);
    connect(c->controller(), &TranslationController::contrastiveFailed, this, &ContrastPanel::failedFor);
}

void ContrastPanel::setResult(ResultPtr result) {
    m_result = std::move(result);
    m_contrastive.reset();
    m_step->clear();
    m_why->setEnabled(true);  // a question about the translation before is answered to nobody
    setEnabled(m_result && !m_result->best.pieces.empty());
    if (!m_result) return clearMaps(tr("Pick a produced piece and another one, then Why?"));
    for (size_t i = 0; i < m_result->best.pieces.size(); ++i)
        m_step->addItem(tr("“%1” (step %2)").arg(QString::fromStdString(m_result->best.pieces[i]), shownText(int(i))));
    clearMaps(tr("Pick a produced piece and another one, then Why?"));
}

void ContrastPanel::fillAlternatives() {
    m_alternative->clear();
    const int t = m_step->currentIndex();
    if (!m_result || t < 0 || t >= int(m_result->steps.size())) return;
    const DecodingStep& step = m_result->steps[size_t(t)];
    for (const auto& c : step.candidates)
        if (c.id != step.chosen_id) m_alternative->addItem(QString::fromStdString(c.piece));
}

void ContrastPanel::ask(int step, const QString& alternative) {
    if (!m_result || alternative.isEmpty()) return;
    m_contrastive.reset();
    m_map->clear(tr("Computing the gradient of the difference…"));
    m_zeroing->clear(tr("Zeroing each piece in each layer…"));
    m_why->setEnabled(false);  // one question at a time: each costs several translations on the worker
    m_context->controller()->computeContrastive(m_result, ContrastiveQuery{step, alternative.toStdString()});
}

void ContrastPanel::show(ResultPtr result, ContrastivePtr contrastive) {
    if (result != m_result) return;  // a later translation took its place
    m_why->setEnabled(true);
    m_contrastive = std::move(contrastive);
    const Contrastive& c = *m_contrastive;
    const int step = c.query.step;
    std::vector<float> row = c.saliency_source;
    QStringList columns = toQStringList(m_result->source_pieces);
    for (int j = 0; j <= step && j < int(c.saliency_target.size()); ++j) {  // 0 after the step: left out
        row.push_back(c.saliency_target[size_t(j)]);
        columns << QStringLiteral("›") + QString::fromStdString(m_result->decoder_input_pieces.at(size_t(j)));
    }
    const QString chosen = QString::fromStdString(c.chosen),
                  other = QString::fromStdString(c.alternative);  // as read, not as typed
    m_map->setMap({row}, {tr("%1 − %2").arg(chosen, other)}, columns,
                  tr("Why “%1” and not “%2” at step %3: log p %4 against %5 (red pushes towards “%1”)")
                      .arg(chosen, other, shownText(step))
                      .arg(c.chosen_log_probability, 0, 'f', 2)
                      .arg(c.alternative_log_probability, 0, 'f', 2));
    showZeroing(columns);
}

// A failure about a translation no longer shown is dropped: it would clear this one's panel with another's error.
void ContrastPanel::failedFor(ResultPtr result, const QString& message) {
    if (result != m_result) return;
    m_why->setEnabled(true);
    clearMaps(message);
}

void ContrastPanel::clearMaps(const QString& message) {
    m_map->clear(message);
    m_zeroing->clear(message);
}

// A row per layer of each attention (AttentionKind's order), over the saliency row's columns: the source pieces,
// then the decoder's input up to the step; NaN (not applicable: drawn grey, not the white of "contributes nothing")
// where that attention does not read the piece (the encoder's and the cross-attention read the source, the
// decoder's self-attention its input).
void ContrastPanel::showZeroing(const QStringList& columns) {
    const Contrastive& c = *m_contrastive;
    const size_t sources = m_result->source_pieces.size(), width = size_t(columns.size());
    Matrix rows;
    QStringList labels;
    auto add = [&](const QString& kind, const std::vector<std::vector<float>>& layers, size_t first) {
        for (size_t l = 0; l < layers.size(); ++l) {
            std::vector<float> row(width, std::numeric_limits<float>::quiet_NaN());
            for (size_t j = 0; j < layers[l].size() && first + j < width; ++j) row[first + j] = layers[l][j];
            rows.push_back(std::move(row));
            labels << tr("%1 L%2").arg(kind, shownText(int(l)));
        }
    };
    add(tr("encoder"), c.zeroing_encoder_self, 0);
    add(tr("decoder"), c.zeroing_decoder_self, sources);
    add(tr("cross"), c.zeroing_cross, 0);
    const QString chosen = QString::fromStdString(c.chosen), other = QString::fromStdString(c.alternative);
    m_zeroing->setMap(rows, labels, columns,
                      tr("Value zeroing: what each piece, through each layer, adds to log p(“%1”) − log p(“%2”) "
                         "(red: towards “%1”, blue: towards “%2”; grey: not read by that attention)")
                          .arg(chosen, other));
}

}  // namespace attnlab::ui
