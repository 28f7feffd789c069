#include "views/inputs_view.h"

#include "plots/attention_view.h"
#include "plots/bar_plot.h"

#include <QComboBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QVBoxLayout>

#include <qcustomplot.h>

namespace attnlab::ui {

namespace {
const QColor kEmb(49, 130, 189), kPe(230, 120, 20), kNorm(35, 139, 69);
std::vector<double> doubles(const std::vector<float>& v) { return {v.begin(), v.end()}; }

Matrix toMatrix(const std::vector<std::vector<bool>>& m) {
    Matrix out;
    for (const auto& row : m) out.emplace_back(row.begin(), row.end());
    return out;
}
}  // namespace

InputsView::InputsView(ViewContext* context, QWidget* parent) : View(context, parent) {
    auto* inner = new QWidget;
    m_piece = new QComboBox(inner);
    m_token_text = new QLabel(inner);
    m_token_text->setWordWrap(true);
    m_token_text->setTextFormat(Qt::RichText);
    m_embedding = new BarPlot(inner);
    m_scaled = new BarPlot(inner);
    m_positional = new BarPlot(inner);
    m_normalized = new BarPlot(inner);
    m_second = new QLineEdit(inner);
    m_second->setPlaceholderText(tr("A second sentence of another length, decoded in the same batch"));
    auto* show = new QPushButton(tr("Show the masks"), inner);
    m_mask_panel = new QWidget(inner);
    m_mask_text = new QLabel(m_mask_panel);
    m_mask_text->setWordWrap(true);
    for (auto& row : m_mask_views)
        for (auto*& v : row) {
            v = new AttentionView(m_mask_panel);
            v->removeColorScale();     // 1 = may attend, 0 = masked: the text says so
            v->setMinimumLines(6);     // a few pieces each: four side by side fit a projector's 1280 x 720
            v->setReadableRows(true);  // the page scrolls: a row keeps its 14 px for a longer sentence
            v->clear(tr("The masks appear here (Show the masks)"));
            v->setAxisTitles(tr("query"), tr("key"));
        }

    auto* grid = new QGridLayout(inner);
    auto* pick = new QHBoxLayout;
    pick->addWidget(new QLabel(tr("Inside one token:"), inner));
    pick->addWidget(m_piece, 1);
    grid->addLayout(pick, 0, 0, 1, 2);
    grid->addWidget(m_token_text, 1, 0, 1, 2);
    grid->addWidget(m_embedding, 2, 0);
    grid->addWidget(m_scaled, 2, 1);
    grid->addWidget(m_positional, 3, 0);
    grid->addWidget(m_normalized, 3, 1);
    auto* masks = new QHBoxLayout;
    masks->addWidget(new QLabel(tr("Masks of a batch:"), inner));
    masks->addWidget(m_second, 1);
    masks->addWidget(show);
    grid->addLayout(masks, 4, 0, 1, 2);
    // The text over the four masks in one row: all of them in sight at once on a projector.
    auto* mask_layout = new QGridLayout(m_mask_panel);
    mask_layout->setContentsMargins(0, 0, 0, 0);
    mask_layout->addWidget(m_mask_text, 0, 0, 1, 4);
    for (int s = 0; s < 2; ++s)
        for (int w = 0; w < 2; ++w) mask_layout->addWidget(m_mask_views[s][w], 1, 2 * s + w);
    grid->addWidget(m_mask_panel, 5, 0, 1, 2);
    auto* scroll = new QScrollArea(this);
    scroll->setWidget(inner);
    scroll->setWidgetResizable(true);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(scroll);

    connect(m_piece, &QComboBox::activated, this, [this](int i) {
        const auto code = m_piece->itemData(i).toInt();
        Q_EMIT tokenRequested(code < 0, code < 0 ? -code - 1 : code);
    });
    auto ask = [this] { Q_EMIT masksRequested(m_second->text()); };
    connect(m_second, &QLineEdit::returnPressed, this, ask);
    connect(show, &QPushButton::clicked, this, ask);
    m_token_text->setText(tr("Translate a sentence to look inside its tokens."));
    follow(context);
}

void InputsView::setColorMap(Palette palette) {
    for (auto& row : m_mask_views)
        for (auto* v : row) v->setColorMap(palette);
}

void InputsView::setSecondSentence(const QString& s) { m_second->setText(s); }
QString InputsView::secondSentence() const { return m_second->text(); }

void InputsView::setResult(ResultPtr r) {
    const int previous = m_piece->count() > 0 ? m_piece->currentData().toInt() : 1;  // default: source 1
    m_result = r;
    m_token.reset();
    m_masks.reset();
    m_piece->clear();
    if (!r) return;
    // Item data: source position p as p, decoder input position p as -(p + 1).
    for (size_t p = 0; p < r->source_pieces.size(); ++p)
        m_piece->addItem(tr("source %1: %2").arg(p).arg(QString::fromStdString(r->source_pieces[p])), int(p));
    for (size_t p = 0; p < r->decoder_input_pieces.size(); ++p)
        m_piece->addItem(tr("target %1: %2").arg(p).arg(QString::fromStdString(r->decoder_input_pieces[p])),
                         -int(p) - 1);
    // The same piece position as before when the new sentence has it.
    const int keep = m_piece->findData(previous);
    m_piece->setCurrentIndex(keep >= 0 ? keep : 0);
}

void InputsView::selectToken(bool target, int position) {
    const int i = m_piece->findData(target ? -position - 1 : position);
    if (i < 0) return;
    m_piece->setCurrentIndex(i);
    Q_EMIT tokenRequested(target, position);
}

bool InputsView::selectedTarget() const { return m_piece->currentData().toInt() < 0; }
int InputsView::selectedPosition() const {
    const int code = m_piece->currentData().toInt();
    return code < 0 ? -code - 1 : code;
}

void InputsView::showToken(TokenInsidePtr t) {
    m_token = t;
    if (!t) return;
    const QString piece = QString::fromStdString(t->piece).toHtmlEscaped();
    // Marian has no layer norm after the embedding (emb_layer_norm false): the sum goes in as it is.
    const bool norm = m_emb_layer_norm;
    const QString what = tr("<b>%1</b> (%2 position %3, id %4). ")
                             .arg(piece, t->target ? tr("target") : tr("source"))
                             .arg(t->position)
                             .arg(t->token_id);
    // A model with relative positions only (TokenInside::absolute_positions false) adds nothing for the position.
    const QString positions = t->absolute_positions
                                  ? tr("The encoder and decoder add the position's sinusoid to the scaled embedding")
                                  : tr("No absolute positions: nothing is added to the scaled embedding; relative "
                                       "position terms act inside self-attention (k = %1)")
                                        .arg(t->max_relative_positions);
    m_token_text->setText(
        what + (norm ? tr("%1, then normalise: the sum's mean %2 is subtracted and the result divided by its "
                          "standard deviation %3, then scaled and shifted by the layer norm's weights.")
                           .arg(positions)
                           .arg(t->sum_mean, 0, 'f', 4)
                           .arg(t->sum_std, 0, 'f', 4)
                     : tr("%1. This model has no layer norm after the embedding (emb_layer_norm is false, as in "
                          "Marian): the sum "
                          "is the first layer's input as it is.")
                           .arg(positions)));
    m_embedding->setTitle(tr("1. Embedding row of %1").arg(QString::fromStdString(t->piece)));
    m_embedding->setBars({{tr("embedding"), doubles(t->embedding), kEmb}}, {});
    m_scaled->setTitle(t->scale != 1.0 ? tr("2. × √d_model = %1").arg(t->scale, 0, 'f', 2)
                                       : tr("2. not scaled (this model does not scale its embeddings)"));
    m_scaled->setBars({{tr("scaled"), doubles(t->scaled), kEmb}}, {});
    m_positional->setTitle(t->absolute_positions
                               ? tr("3. + positional encoding of position %1").arg(t->position)
                               : tr("3. no absolute positions: relative position terms act inside self-attention "
                                    "(k = %1)")
                                     .arg(t->max_relative_positions));
    // Nothing added without absolute positions: no bars of zeros, and no empty axes either, only the title.
    for (QCPAxis* axis : {m_positional->plot()->xAxis, m_positional->plot()->yAxis})
        axis->setVisible(t->absolute_positions);
    if (t->absolute_positions)
        m_positional->setBars({{tr("PE"), doubles(t->positional), kPe}}, {});
    else
        m_positional->clear();
    if (norm) {
        m_normalized->setTitle(tr("4. layer norm of the sum: the first layer's input"));
        m_normalized->setBars(
            {{tr("sum"), doubles(t->sum), QColor(150, 150, 150)}, {tr("layer norm"), doubles(t->normalized), kNorm}},
            {});
    } else {
        m_normalized->setTitle(tr("4. the sum, not normalised: the first layer's input"));
        m_normalized->setBars({{tr("sum"), doubles(t->sum), kNorm}}, {});
    }
}

QString InputsView::tokenText() const { return m_token_text->text(); }

void InputsView::showMasks(MasksPtr m) {
    m_masks = m;
    if (!m) return;
    const int n = int(m->encoder.size());
    // One line over the maps (a projector has the room for them, not for a paragraph); the rest on hover.
    m_mask_text->setText(tr("1 = may attend, 0 = masked. Sentence 1: the one translated; 2: the one above."));
    m_mask_text->setToolTip(
        tr("Both sentences go through the model in one batch. Encoder: padded keys are masked for every "
           "query. Decoder: padding, and every future position (look-ahead). Cross-attention: the source "
           "padding, for every target row."));
    for (int s = 0; s < 2; ++s) {
        for (int w = 0; w < 2; ++w) m_mask_views[s][w]->setVisible(s < n);
        if (s >= n) continue;
        const auto src = toQStringList(m->source_pieces[s]), trg = toQStringList(m->target_pieces[s]);
        m_mask_views[s][0]->setMap(toMatrix(m->encoder[s]), src, src, tr("%1 · encoder").arg(s + 1));
        m_mask_views[s][1]->setMap(toMatrix(m->decoder[s]), trg, trg, tr("%1 · decoder").arg(s + 1));
    }
}

void InputsView::follow(ViewContext* c) {
    TranslationController* controller = c->controller();
    connect(c, &ViewContext::resultChanged, this, [this](ResultPtr r) {
        setResult(std::move(r));
        m_stale = true;
        if (isVisible()) refresh();
    });
    connect(c, &ViewContext::paletteChanged, this, &InputsView::setColorMap);
    setColorMap(c->palette());
    connect(c, &ViewContext::modelChanged, this, [this](ModelInfoPtr info) {
        setSecondSentence(info->examples.size() > 1 ? QString::fromStdString(info->examples[1].source) : QString());
        m_emb_layer_norm = info->config.model.emb_layer_norm;
    });
    if (const auto info = c->model()) m_emb_layer_norm = info->config.model.emb_layer_norm;
    connect(this, &InputsView::tokenRequested, this,
            [c, controller](bool target, int position) { controller->inspectToken(c->result(), target, position); });
    connect(this, &InputsView::masksRequested, this, [c, controller](const QString& second) {
        DecodingOptions o = c->resultOptions();
        o.force_prefix.clear();
        o.force_prefix_ids.clear();
        o.record_trace = false;
        controller->inspectMasks(c->result(), second, o);
    });
    connect(controller, &TranslationController::tokenInspected, this, &InputsView::showToken);
    connect(controller, &TranslationController::masksReady, this, &InputsView::showMasks);
}

void InputsView::showEvent(QShowEvent* event) {
    View::showEvent(event);
    if (m_stale) refresh();
}

void InputsView::refresh() {
    if (!m_result) return;
    m_stale = false;
    selectToken(selectedTarget(), selectedPosition());
    Q_EMIT masksRequested(secondSentence());
}

QCustomPlot* InputsView::figure() const { return m_token ? m_normalized->plot() : nullptr; }

QString InputsView::noFigureReason() const { return tr("translate a sentence first: no token is opened up"); }

void InputsView::saveState(ViewState& state) const {
    if (!context()->result()) return;
    state.token_target = selectedTarget();
    state.token_position = selectedPosition();
}

void InputsView::applyState(const ViewState& v) {
    if (v.token_target && v.token_position) selectToken(*v.token_target, *v.token_position);
}

View::Parts InputsView::parts() const {
    return {{"embedding", m_embedding},
            {"scaled", m_scaled},
            {"positional", m_positional},
            {"normalized", m_normalized},
            {"masks", m_mask_panel}};
}

}  // namespace attnlab::ui
