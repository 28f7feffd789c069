#include "views/decoding_view.h"

#include "document/numbering.h"
#include "document/translation_controller.h"
#include "plots/attention_view.h"
#include "plots/bar_plot.h"

#include <qcustomplot.h>

#include <QComboBox>
#include <QEvent>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QScrollBar>
#include <QSignalBlocker>
#include <QSlider>
#include <QSplitter>
#include <QTimer>
#include <QTreeWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace attnlab::ui {

namespace {
const QColor kBar(49, 130, 189);

QString pieceHtml(const std::string& p) { return QString::fromStdString(p).toHtmlEscaped(); }

QString scoreLine(const Hypothesis& h) {
    return QObject::tr("score %1, per token %2")
        .arg(h.score, 0, 'f', 3)
        .arg(h.ids.empty() ? 0.0 : h.score / double(h.ids.size()), 0, 'f', 3);
}
}  // namespace

DecodingView::DecodingView(ViewContext* context, QWidget* parent) : View(context, parent) {
    m_slider = new QSlider(Qt::Horizontal, this);
    m_slider->setPageStep(1);
    m_step_label = new QLabel(this);
    m_prefix = new QLabel(this);
    m_prefix->setWordWrap(true);
    m_prefix->setTextFormat(Qt::RichText);
    m_comparison = new QLabel(this);
    m_comparison->setWordWrap(true);
    m_comparison->setTextFormat(Qt::RichText);
    m_force = new QLineEdit(this);
    m_force->setPlaceholderText(tr("What if the translation began with… (type, then Enter)"));
    auto* force = new QPushButton(tr("Decode from this prefix"), this);
    auto* free = new QPushButton(tr("Free decoding"), this);
    m_score = new QLineEdit(this);
    m_score->setPlaceholderText(tr("Score a translation of your own… (Enter)"));
    m_score->setToolTip(tr("How probable the model finds your translation, piece by piece, beside its own"));
    auto* score = new QPushButton(tr("Score"), this);
    m_candidates = new BarPlot(this);
    m_candidates->setValueAxisTitle(tr("probability"));
    m_tree = new QTreeWidget(this);
    m_tree->setColumnCount(5);
    m_tree->setHeaderLabels({tr("token"), tr("log P"), tr("score"), tr("normalised"), tr("state")});
    m_tree->header()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_cross = new AttentionView(this);
    m_cross->setObjectName("strip");
    m_cross->setAxisTitles(tr("layer, head"), tr("source piece"));
    m_strip_layer = new QComboBox(this);
    m_strip_layer->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    m_strip_layer->setToolTip(tr("The cross-attention strip's rows: every layer's heads, or one layer's"));

    auto* top = new QHBoxLayout;
    top->addWidget(new QLabel(tr("Step"), this));
    top->addWidget(m_slider, 1);
    top->addWidget(m_step_label);
    top->addSpacing(12);
    top->addWidget(new QLabel(tr("Cross-attention of"), this));
    top->addWidget(m_strip_layer);
    auto* what_if = new QHBoxLayout;
    what_if->addWidget(m_force, 1);
    what_if->addWidget(force);
    what_if->addWidget(free);
    what_if->addSpacing(12);
    what_if->addWidget(m_score, 1);
    what_if->addWidget(score);
    auto* upper = new QSplitter(Qt::Horizontal, this);
    upper->addWidget(m_candidates);
    upper->addWidget(m_tree);
    auto* split = new QSplitter(Qt::Vertical, this);
    split->addWidget(upper);
    split->addWidget(m_cross);
    upper->setSizes({1000, 1000});
    // Bars and beams need no more than this; the strip takes the rest, and the pair stays in sight
    // on a projector's 1280 x 720 at 18 pt.
    m_upper = upper;
    fitUpperHeight();
    split->setSizes({1000, 1200});  // the strip: a line of text per row where it can
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(top);
    layout->addWidget(m_prefix);
    layout->addLayout(what_if);
    layout->addWidget(m_comparison);
    layout->addWidget(split, 1);

    connect(m_slider, &QSlider::valueChanged, this, [this] { showStep(); });
    connect(m_strip_layer, &QComboBox::currentIndexChanged, this, [this] { showStep(); });
    connect(m_strip_layer, &QComboBox::activated, this, [this] { m_strip_chosen = true; });
    m_cross->installEventFilter(this);
    m_tree->installEventFilter(this);
    connect(m_candidates, &BarPlot::barClicked, this, [this](int i) {
        if (!m_result) return;
        const int t = step();
        const auto& cands = m_result->steps.at(t).candidates;
        if (i >= int(cands.size())) return;
        std::vector<int> ids(m_result->best.ids.begin(), m_result->best.ids.begin() + t);
        ids.push_back(cands[i].id);
        Q_EMIT forceRequested(ids, QString());
    });
    auto typed = [this] { Q_EMIT forceRequested({}, m_force->text().trimmed()); };
    connect(m_force, &QLineEdit::returnPressed, this, typed);
    connect(force, &QPushButton::clicked, this, typed);
    connect(free, &QPushButton::clicked, this, [this] {
        m_force->clear();
        Q_EMIT forceRequested({}, QString());
    });
    connect(m_score, &QLineEdit::returnPressed, this, &DecodingView::requestScore);
    connect(score, &QPushButton::clicked, this, &DecodingView::requestScore);
    clear(tr("Translate a sentence to step through its decoding."));
    follow(context);
}

void DecodingView::clear(const QString& message) {
    m_result.reset();
    m_free.reset();
    m_scored.reset();
    m_slider->setRange(0, 0);
    m_slider->setEnabled(false);
    m_step_label->clear();
    m_prefix->setText(message.toHtmlEscaped());
    m_comparison->clear();
    m_candidates->clear(message);
    m_tree->clear();
    m_cross->clear(message);
}

void DecodingView::setColorMap(Palette palette) { m_cross->setColorMap(palette); }

void DecodingView::setResult(ResultPtr r) {
    if (!r) return clear(tr("Translate a sentence to step through its decoding."));
    const bool same_source = m_free && m_free->source_text == r->source_text;
    // A what-if (a forced beginning) keeps the free translation beside it; a multilingual model's
    // forced target language is no what-if.
    if (r->prefixTokens() == 0 || !same_source) m_free = r->prefixTokens() == 0 ? r : nullptr;
    // The user's own translation was scored against the free one it stood beside.
    if (r->prefixTokens() == 0) m_scored.reset();
    m_result = r;
    const int steps = int(r->best.ids.size());
    const int keep = std::min(step(), steps - 1);
    m_slider->blockSignals(true);
    m_slider->setRange(0, std::max(0, steps - 1));
    m_slider->setValue(r->prefixTokens() > 0 ? std::min(r->forced_tokens, steps - 1) : std::max(0, keep));
    m_slider->blockSignals(false);
    m_slider->setEnabled(steps > 1);
    updateComparison();
    showStep();
}

// The bars and the beams: 11 lines of text at most; the tree indented by a letter's width a level
// (Qt's 20 px cut its last column beside the bars at 1280 x 720).
void DecodingView::fitUpperHeight() {
    m_upper->setMaximumHeight(std::max(200, 11 * fontMetrics().height()));
    m_tree->setIndentation(std::max(8, fontMetrics().horizontalAdvance(QLatin1Char('M'))));
}

void DecodingView::changeEvent(QEvent* event) {
    if (event->type() == QEvent::FontChange) fitUpperHeight();
    View::changeEvent(event);
}

int DecodingView::step() const { return m_slider->value(); }
int DecodingView::stepCount() const { return m_result ? int(m_result->best.ids.size()) : 0; }
void DecodingView::setStep(int s) { m_slider->setValue(s); }
QString DecodingView::prefixText() const { return m_prefix->text(); }
QString DecodingView::comparisonText() const { return m_comparison->text(); }
int DecodingView::stripLayer() const { return m_strip_layer->count() > 0 ? m_strip_layer->currentData().toInt() : -1; }

void DecodingView::setStripLayer(int layer) {
    const int i = m_strip_layer->findData(layer);
    if (i >= 0) m_strip_layer->setCurrentIndex(i);
}

void DecodingView::updateStripPages(int layers, int heads) {
    if (layers == m_strip_layers && heads == m_strip_heads) return;  // the page chosen stays
    m_strip_layers = layers;
    m_strip_heads = heads;
    const QSignalBlocker block(m_strip_layer);
    m_strip_layer->clear();
    m_strip_layer->addItem(tr("every layer (%1 rows)").arg(layers * heads), -1);
    for (int l = 0; l < layers; ++l) m_strip_layer->addItem(tr("%1 (%2 heads)").arg(layerLabel(l)).arg(heads), l);
    // Every layer while each row has room for its label; a larger model one layer at a time.
    m_strip_chosen = false;
    m_strip_layer->setCurrentIndex(m_strip_layer->findData(layers * heads <= kStripRows ? -1 : 0));
}

void DecodingView::fitStripPage() {
    if (m_strip_chosen || m_strip_layers <= 0 || m_cross->map().empty()) return;
    const int height = m_cross->plot()->axisRect()->height();
    if (height <= 0) return;
    const int all = m_strip_layers * m_strip_heads;
    const bool every = all <= kStripRows && all * m_cross->readableRowPx() <= height;
    const int want = every ? -1 : std::max(0, stripLayer());
    if (want != stripLayer()) setStripLayer(want);
    // One layer's rows readable even where the view must scroll for them (a step that leaves the
    // strip the rest of a 1280 x 720 projector's view had 10 px a row).
    m_cross->setReadableRows(!every);
}

void DecodingView::fitTreeWidth() {
    auto* upper = qobject_cast<QSplitter*>(m_upper);
    const int total = upper->width() - upper->handleWidth();
    const int bars = std::max(m_candidates->minimumSizeHint().width(), m_candidates->minimumWidth());
    const int columns = m_tree->header()->length() + 2 * m_tree->frameWidth() +
                        (m_tree->verticalScrollBar()->isVisible() ? m_tree->verticalScrollBar()->width() : 0);
    const QList<int> sizes = upper->sizes();
    if (total <= 0 || sizes.size() != 2 || sizes[1] >= columns) return;
    // Never wider than the bars: they may be the step's focus.
    const int tree = std::min({columns, total - bars, total / 2});
    if (tree > sizes[1]) upper->setSizes({total - tree, tree});
}

bool DecodingView::eventFilter(QObject* watched, QEvent* event) {
    // Once the layout that resized them is done.
    if (event->type() == QEvent::Resize && watched == m_cross) QTimer::singleShot(0, this, [this] { fitStripPage(); });
    if (event->type() == QEvent::Resize && watched == m_tree) QTimer::singleShot(0, this, [this] { fitTreeWidth(); });
    return View::eventFilter(watched, event);
}

void DecodingView::updateComparison() {
    const auto& r = *m_result;
    QString text;
    if (m_free)
        text += tr("<b>Free:</b> %1 <i>(%2)</i>")
                    .arg(QString::fromStdString(m_free->best.text).toHtmlEscaped(), scoreLine(m_free->best));
    if (r.prefixTokens() > 0)
        text += tr("%1<b>Forced</b> (first %2 pieces): %3 <i>(%4)</i>")
                    .arg(text.isEmpty() ? QString() : QStringLiteral("<br>"))
                    .arg(r.prefixTokens())
                    .arg(QString::fromStdString(r.best.text).toHtmlEscaped(), scoreLine(r.best));
    if (m_scored) text += (text.isEmpty() ? QString() : QStringLiteral("<br>")) + scoredText();
    m_comparison->setText(text);
}

QString DecodingView::scoredText() const {
    const Hypothesis& h = m_scored->best;
    QString weakest;
    const auto& lp = h.token_log_probs;
    if (!lp.empty() && lp.size() == h.pieces.size()) {
        const size_t i = size_t(std::min_element(lp.begin(), lp.end()) - lp.begin());
        weakest = tr("; least likely: <b>%1</b> (p = %2, piece %3 of %4)")
                      .arg(QString::fromStdString(h.pieces[i]).toHtmlEscaped())
                      .arg(std::exp(lp[i]), 0, 'g', 2)
                      .arg(i + 1)
                      .arg(lp.size());
    }
    double sum = 0;
    for (double x : lp) sum += x;
    return tr("<b>Yours:</b> %1 <i>(score %2, per token %3%4)</i>")
        .arg(QString::fromStdString(h.text).toHtmlEscaped())
        .arg(sum, 0, 'f', 3)
        .arg(lp.empty() ? 0.0 : sum / double(lp.size()), 0, 'f', 3)
        .arg(weakest);
}

void DecodingView::requestScore() {
    const QString typed = m_score->text().trimmed();
    const auto shown = m_free ? m_free : context()->result();
    if (typed.isEmpty() || !shown) return;
    // The options the shown translation was made with (its ablated heads, its languages).
    context()->controller()->scorePair(QString::fromStdString(shown->source_text), typed, context()->decodingOptions());
}

void DecodingView::showStep() {
    if (!m_result) return;
    const auto& r = *m_result;
    const int t = step();
    m_step_label->setText(tr("%1 of %2").arg(t + 1).arg(stepCount()));
    // The prefix the decoder has at this step, then the piece it produced (forced ones in italics).
    // The decoder's start token as the model has it (<s>; Marian: <pad>).
    QString prefix =
        r.decoder_input_pieces.empty() ? QStringLiteral("&lt;s&gt;") : pieceHtml(r.decoder_input_pieces[0]);
    for (int i = 0; i < t; ++i) {
        const QString p = pieceHtml(r.best.pieces[i]);
        prefix += QStringLiteral(" ") + (i < r.forced_tokens ? QStringLiteral("<i>%1</i>").arg(p) : p);
    }
    const auto& st = r.steps.at(t);
    m_prefix->setText(tr("Prefix: %1 &nbsp;→&nbsp; next: <b>%2</b> (p = %3)%4")
                          .arg(prefix, pieceHtml(st.chosen_piece))
                          .arg(st.chosen_probability, 0, 'f', 3)
                          .arg(t < r.forced_tokens ? tr(", forced") : QString()));
    // The top-k next tokens given this prefix; the chosen one highlighted. Click one to force it.
    QStringList labels;
    std::vector<double> probs;
    int chosen = -1;
    for (size_t i = 0; i < st.candidates.size(); ++i) {
        labels << QString::fromStdString(st.candidates[i].piece);
        probs.push_back(st.candidates[i].probability);
        if (st.candidates[i].id == st.chosen_id) chosen = int(i);
    }
    m_candidates->setTitle(tr("Next token at step %1 (click one: what if?)").arg(t + 1));
    m_candidates->setBars({{tr("probability"), probs, kBar}}, labels, chosen);
    buildTree(t);
    showStrip(t);
}

// This step's cross-attention row of every head, of every layer or of the layer chosen, under the
// context's measure (the Attention tab's Method) when it is the context's translation.
void DecodingView::showStrip(int t) {
    const TranslationResult& r = *m_result;
    const MapMeasure measure = m_result == context()->result() ? context()->measure() : MapMeasure::Weights;
    auto maps = measure == MapMeasure::Weights ? std::shared_ptr<const LayerHeadMaps>(m_result, &r.cross)
                                               : context()->measuredMaps(AttentionKind::Cross);
    if (!maps) {
        const QString problem = context()->measureProblem();
        m_cross->clear(problem.isEmpty() ? mapMeasureWaiting(measure) : problem);
        return;
    }
    const int layers = int(maps->size());
    updateStripPages(layers, layers > 0 ? int((*maps)[0].size()) : 0);
    const int page = stripLayer();
    Matrix rows;
    QStringList row_labels, keys;
    const int first = page < 0 ? 0 : page, last = page < 0 ? layers : std::min(page + 1, layers);
    for (int l = first; l < last; ++l)
        for (size_t h = 0; h < (*maps)[size_t(l)].size(); ++h) {
            rows.push_back((*maps)[size_t(l)][h].at(t));
            row_labels << (onePerLayer(measure) ? layerLabel(l) : shortLayerHeadLabel(l, int(h)));
        }
    for (const auto& p : r.source_pieces) keys << QString::fromStdString(p);
    const QString produced = QString::fromStdString(r.steps.at(t).chosen_piece);
    const QString what = measure == MapMeasure::Weights ? tr("Cross-attention")
                                                        : tr("Cross-attention (%1)").arg(mapMeasureTitle(measure));
    const QString rows_are = onePerLayer(measure) ? tr("every layer") : tr("every layer and head");
    if (rows.empty())
        m_cross->clear(tr("No attention maps for this translation."));
    else
        m_cross->setMap(rows, row_labels, keys,
                        page < 0 ? tr("%1 while producing “%2”: %3").arg(what, produced, rows_are)
                                 : tr("%1 while producing “%2”: %3").arg(what, produced, layerLabel(page)));
    QTimer::singleShot(0, this, [this] { fitStripPage(); });
}

namespace {
// The nodes of the best hypothesis's path through the trace, per step (-1 past its end).
std::vector<int> bestPath(const TranslationResult& r) {
    std::vector<int> path(r.trace.size(), -1);
    const int end = int(r.best.ids.size()) - 1;
    if (end < 0 || end >= int(r.trace.size())) return path;
    int node = -1;
    const auto& last = r.trace[end].hypotheses;
    for (size_t k = 0; k < last.size() && node < 0; ++k)
        if (last[k].token_id == r.best.ids.back() && last[k].score == r.best.score && !last[k].pruned) node = int(k);
    for (int t = end; t >= 0 && node >= 0; --t) {
        path[t] = node;
        node = r.trace[t].hypotheses[node].parent;
    }
    return path;
}
}  // namespace

namespace {
// An item's rows from the top: its top-level row, then each child row down to it (empty for none).
std::vector<int> rowPath(QTreeWidgetItem* item) {
    std::vector<int> rows;
    for (; item; item = item->parent())
        rows.insert(rows.begin(), item->parent() ? item->parent()->indexOfChild(item)
                                                 : item->treeWidget()->indexOfTopLevelItem(item));
    return rows;
}

QTreeWidgetItem* itemAt(QTreeWidget* tree, const std::vector<int>& rows) {
    if (rows.empty() || rows[0] < 0 || rows[0] >= tree->topLevelItemCount()) return nullptr;
    QTreeWidgetItem* item = tree->topLevelItem(rows[0]);
    for (size_t i = 1; i < rows.size() && item; ++i)
        item = rows[i] >= 0 && rows[i] < item->childCount() ? item->child(rows[i]) : nullptr;
    return item;
}
}  // namespace

void DecodingView::buildTree(int up_to) {
    m_tree->clear();
    const auto& trace = m_result->trace;
    const auto path = bestPath(*m_result);
    if (trace.empty()) {
        m_tree->addTopLevelItem(new QTreeWidgetItem({tr("(no trace recorded)")}));
        return;
    }
    std::vector<QTreeWidgetItem*> previous;
    QTreeWidgetItem* path_start = nullptr;  // the best path's first piece
    for (int t = 0; t <= up_to && t < int(trace.size()); ++t) {
        std::vector<QTreeWidgetItem*> current;
        for (int k = 0; k < int(trace[t].hypotheses.size()); ++k) {
            const auto& h = trace[t].hypotheses[k];
            // The best path is told by its colour (and its tooltip): the column stays narrow enough to
            // be read beside the bars on a 1280 x 720 projector.
            const QString state = h.finished ? tr("finished") : h.pruned ? tr("pruned") : tr("kept");
            // Two decimals: the comparisons a class makes, in columns that fit beside the bars.
            auto* item = new QTreeWidgetItem({QString::fromStdString(h.piece), QString::number(h.log_prob, 'f', 2),
                                              QString::number(h.score, 'f', 2),
                                              QString::number(h.normalized_score, 'f', 2), state});
            item->setToolTip(1, QString::number(h.log_prob, 'g', 6));
            if (h.pruned)
                for (int c = 0; c < 5; ++c) item->setForeground(c, QColor(150, 150, 150));
            if (path[t] == k)
                for (int c = 0; c < 5; ++c) {
                    item->setForeground(c, QColor(8, 81, 156));
                    item->setToolTip(c, tr("%1, on the best path").arg(state));
                }
            if (path[t] == k && !path_start) path_start = item;
            if (t == up_to) {
                QFont f = item->font(0);
                f.setBold(true);
                for (int c = 0; c < 5; ++c) item->setFont(c, f);
            }
            if (h.parent >= 0 && h.parent < int(previous.size()) && previous[h.parent])
                previous[h.parent]->addChild(item);
            else
                m_tree->addTopLevelItem(item);
            current.push_back(item);
        }
        previous = std::move(current);
    }
    m_tree->expandAll();
    // The best path from its start where the step's pieces fit below it (the caption follows that
    // path), else the step's first piece in sight.
    // Once the tree has its size (a lesson step lays the view out after it is filled).
    // The items are found again by their rows (the view may clear the tree before then): nothing
    // is scrolled to where the rows no longer lead.
    const int built = ++m_tree_builds;
    QTimer::singleShot(
        0, m_tree,
        [this, built, path = rowPath(path_start), step = rowPath(previous.empty() ? nullptr : previous.front())] {
            if (built != m_tree_builds) return;
            if (QTreeWidgetItem* item = itemAt(m_tree, path))
                m_tree->scrollToItem(item, QAbstractItemView::PositionAtTop);
            if (QTreeWidgetItem* item = itemAt(m_tree, step))
                m_tree->scrollToItem(item, QAbstractItemView::EnsureVisible);
            fitTreeWidth();
        });
}

void DecodingView::follow(ViewContext* c) {
    // Null (no sentence, a new model, a failure, which says why next): cleared.
    connect(c, &ViewContext::resultChanged, this, &DecodingView::setResult);
    connect(c, &ViewContext::failed, this, [this](Operation op, const QString& m) {
        if (op == Operation::Translate) clear(m);
    });
    connect(c, &ViewContext::paletteChanged, this, &DecodingView::setColorMap);
    setColorMap(c->palette());
    // The strip follows the Attention tab's Method (and what it waits for: value norms, contributions).
    connect(c, &ViewContext::measuredMapsChanged, this, [this] {
        if (m_result && stepCount() > 0) showStrip(step());
    });
    // A scored translation belongs to the sentence it was scored with: another sentence drops it.
    connect(c->controller(), &TranslationController::pairScored, this, [this](ResultPtr scored) {
        const auto shown = m_free ? m_free : context()->result();
        if (!shown || scored->source_text != shown->source_text) return;
        m_scored = std::move(scored);
        if (m_result) updateComparison();
    });
    connect(c, &ViewContext::failed, this, [this](Operation op, const QString& m) {
        if (op != Operation::Score || !m_result) return;
        m_scored.reset();
        updateComparison();
        m_comparison->setText(m_comparison->text() + "<br>" + tr("<b>Yours:</b> %1").arg(m.toHtmlEscaped()));
    });
    // What-if: the sentence the steps belong to, even when the field has been edited since.
    connect(this, &DecodingView::forceRequested, this, [this, c](const std::vector<int>& ids, const QString& text) {
        DecodingOptions o = c->decodingOptions();
        o.force_prefix = text.toStdString();
        o.force_prefix_ids = ids;
        const auto shown = m_free ? m_free : c->result();
        if (!shown) return clear(tr("Translate a sentence first: the beginning is forced onto its translation."));
        c->translate(QString::fromStdString(shown->source_text), o);
    });
}

QCustomPlot* DecodingView::figure() const { return stepCount() > 0 ? m_candidates->plot() : nullptr; }

QString DecodingView::noFigureReason() const { return tr("translate a sentence first: there are no steps to export"); }

void DecodingView::saveState(ViewState& state) const {
    if (context()->result()) state.step = step();
}

void DecodingView::applyState(const ViewState& state) {
    if (state.step) setStep(*state.step);
}

View::Parts DecodingView::parts() const {
    return {{"candidates", m_candidates}, {"beams", m_tree}, {"strip", m_cross}};
}

}  // namespace attnlab::ui
