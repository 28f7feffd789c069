#include "views/logit_lens_view.h"

#include "document/numbering.h"
#include "plots/plot_style.h"

#include <QEvent>
#include <QHeaderView>
#include <QLabel>
#include <QScrollBar>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <vector>

namespace attnlab::ui {

namespace {
QString probabilityText(double p) { return QString::number(p, 'f', 3); }

// The tooltip of layer `layer`'s cell at `position`: its top pieces, and the translation's own piece.
QString cellToolTip(const LogitLens& lens, int layer, int position) {
    const LogitLensCell& cell = lens.layers[size_t(layer)][size_t(position)];
    const QString chosen = QString::fromStdString(lens.pieces[size_t(position)]);
    QStringList lines{QObject::tr("%1 at position %2 (the translation has “%3”):")
                          .arg(layerLabel(layer), shownText(position), chosen)};
    for (size_t i = 0; i < cell.top.size(); ++i)
        lines << QObject::tr("%1. “%2”  %3")
                     .arg(shownText(int(i)), QString::fromStdString(cell.top[i].piece),
                          probabilityText(cell.top[i].probability));
    lines << QObject::tr("“%1”: %2, rank %3")
                 .arg(chosen, probabilityText(cell.chosen_probability), shownText(cell.chosen_rank));
    return lines.join('\n');
}

// Text that stays readable on its cell's colour.
QColor textOn(const QColor& background) { return background.lightnessF() < 0.55 ? Qt::white : Qt::black; }
}  // namespace

LogitLensView::LogitLensView(ViewContext* c, QWidget* parent)
    : View(c, parent), m_shown([this](const ResultPtr& r) { context()->controller()->computeLogitLens(r, kTop); }) {
    m_about = new QLabel(tr("The logit lens: what each decoder layer's output would predict at each position, sent "
                            "through the final layer norm and the output projection. A cell names the layer's most "
                            "probable piece (bold: the piece the translation has there); its colour is the "
                            "probability the layer gives the translation's piece. Hover a cell for its top pieces."),
                         this);
    m_about->setWordWrap(true);
    m_message = new QLabel(this);
    m_message->setWordWrap(true);
    m_table = new QTableWidget(this);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);  // every layer in sight: the table is as tall
    m_table->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);  // the tab's width; rows up to 3 lines
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::Fixed);   // fitCells sizes them
    m_table->verticalHeader()->setSectionResizeMode(QHeaderView::Fixed);
    m_table->installEventFilter(this);
    followFont();
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(m_about);
    layout->addWidget(m_message);
    layout->addWidget(m_table, 1);
    layout->addStretch(0);
    showProblem(tr("Translate a sentence to see what each decoder layer would predict."));

    connect(c, &ViewContext::resultChanged, this, &LogitLensView::setResult);
    // A translation whose lens has not come belongs to the model before: its ids mean nothing to this one.
    connect(c, &ViewContext::modelChanged, this, [this] {
        if (m_shown.dropUnanswered(bool(m_lens)))
            showProblem(tr("The logit lens needs a translation by the model now loaded: translate again."));
    });
    connect(c, &ViewContext::paletteChanged, this, [this] { fillCells(); });
    connect(c->controller(), &TranslationController::logitLensReady, this, &LogitLensView::showLens);
    connect(c, &ViewContext::failed, this, [this](Operation op, const QString& message) {
        if (op == Operation::LogitLens) showProblem(message);
    });
    if (c->result()) setResult(c->result());
}

void LogitLensView::setResult(ResultPtr result) {
    m_lens.reset();
    if (result && result->best.pieces.empty()) {
        showProblem(tr("This translation is empty: no position to look at."));
        result.reset();
    } else {
        showProblem(result ? tr("Computing the logit lens (every decoder layer through the output projection)…")
                           : tr("Translate a sentence to see what each decoder layer would predict."));
    }
    m_shown.set(std::move(result), isVisible());
}

void LogitLensView::showEvent(QShowEvent* event) {
    View::showEvent(event);
    m_shown.shown(true);
}

void LogitLensView::changeEvent(QEvent* event) {
    View::changeEvent(event);
    if (event->type() != QEvent::FontChange) return;
    followFont();
    fillCells();
}

bool LogitLensView::eventFilter(QObject* watched, QEvent* event) {
    if (watched == m_table && event->type() == QEvent::Resize) fitCells();
    return View::eventFilter(watched, event);
}

// Read from the back of a room as the plots' titles are: the pieces and their labels a fifth larger
// than the app's text (plot_style.h's kTitleScale).
void LogitLensView::followFont() {
    QFont f = font();
    f.setPointSizeF(f.pointSizeF() * kTitleScale);
    m_table->setFont(f);
    m_table->horizontalHeader()->setFont(f);
    m_table->verticalHeader()->setFont(f);
}

int LogitLensView::minimumRowHeight() const { return 2 * QFontMetrics(m_table->font()).height(); }
int LogitLensView::maximumRowHeight() const { return 3 * QFontMetrics(m_table->font()).height(); }

// Each column as wide as its widest text (the position's piece, each layer's top piece, bold where it
// is the translation's) and a line's height of margin, the room left shared out so that the strip
// fills the table's width; a row between two and three lines, as the table's height allows. The table
// is as tall as its rows need: every layer in sight, no empty band below them.
void LogitLensView::fitCells() {
    const int layers = m_table->rowCount(), positions = m_table->columnCount();
    if (!m_lens || layers == 0 || positions == 0) return;
    QFont bold = m_table->font();
    bold.setBold(true);
    const QFontMetrics plain(m_table->font()), strong(bold), header(m_table->horizontalHeader()->font());
    const int margin = plain.height();
    std::vector<int> need(size_t(positions), 0);
    int total = 0;
    for (int p = 0; p < positions; ++p) {
        int widest = header.horizontalAdvance(m_table->horizontalHeaderItem(p)->text());
        for (int l = 0; l < layers; ++l) {
            const QTableWidgetItem* item = m_table->item(l, p);
            widest = std::max(widest, (item->font().bold() ? strong : plain).horizontalAdvance(item->text()));
        }
        need[size_t(p)] = widest + margin;
        total += need[size_t(p)];
    }
    // The table's own width (its viewport follows only after this resize event).
    const int room = m_table->width() - 2 * m_table->frameWidth() - m_table->verticalHeader()->sizeHint().width();
    const int spare = std::max(0, room - total);
    for (int p = 0; p < positions; ++p)
        m_table->setColumnWidth(p, need[size_t(p)] + spare / positions + (p < spare % positions ? 1 : 0));
    const int frame = 2 * m_table->frameWidth() + m_table->horizontalHeader()->height() +
                      (m_table->horizontalScrollBar()->isVisible() ? m_table->horizontalScrollBar()->height() : 0);
    const int row = std::clamp((m_table->height() - frame) / layers, minimumRowHeight(), maximumRowHeight());
    for (int l = 0; l < layers; ++l) m_table->setRowHeight(l, row);
    m_table->setMinimumHeight(frame + layers * minimumRowHeight());
    m_table->setMaximumHeight(frame + layers * maximumRowHeight());
}

void LogitLensView::showLens(ResultPtr result, LogitLensPtr lens) {
    if (result != m_shown.get()) return;  // a later translation took its place
    const int layers = int(lens->layers.size()), positions = int(lens->pieces.size());
    if (layers == 0 || positions == 0) return showProblem(tr("This model has no decoder layer to look into."));
    for (const auto& layer : lens->layers)
        if (int(layer.size()) != positions)
            return showProblem(tr("The logit lens has %1 positions in a layer for a translation of %2 pieces.")
                                   .arg(layer.size())
                                   .arg(positions));
    m_lens = std::move(lens);
    m_table->clear();
    m_table->setRowCount(layers);
    m_table->setColumnCount(positions);
    m_table->setHorizontalHeaderLabels(toQStringList(m_lens->pieces));
    QStringList rows;
    for (int l = 0; l < layers; ++l) rows << layerLabel(l);
    m_table->setVerticalHeaderLabels(rows);
    fillCells();
    m_message->hide();
    m_table->show();
    fitCells();
}

void LogitLensView::fillCells() {
    if (!m_lens) return;
    const Palette palette = context()->palette();
    QFont bold = m_table->font();
    bold.setBold(true);
    for (int l = 0; l < m_table->rowCount(); ++l)
        for (int p = 0; p < m_table->columnCount(); ++p) {
            const LogitLensCell& cell = m_lens->layers[size_t(l)][size_t(p)];
            const QString top = cell.top.empty() ? QString() : QString::fromStdString(cell.top.front().piece);
            auto* item = new QTableWidgetItem(top);
            const QColor colour = paletteColor(palette, cell.chosen_probability);
            item->setBackground(colour);
            item->setForeground(textOn(colour));
            if (cell.chosen_rank == 0) item->setFont(bold);
            item->setTextAlignment(Qt::AlignCenter);
            item->setToolTip(cellToolTip(*m_lens, l, p));
            m_table->setItem(l, p, item);
        }
    fitCells();
}

void LogitLensView::showProblem(const QString& message) {
    m_message->setText(message);
    m_message->show();
    m_table->hide();
}

QString LogitLensView::message() const { return m_table->isHidden() ? m_message->text() : QString(); }

QString LogitLensView::noFigureReason() const {
    return tr(
        "the logit lens is a table, not a plot: attnlab-cli translate --logit-lens --attention OUT.json writes "
        "its numbers");
}

View::Parts LogitLensView::parts() const { return {{"strip", m_table}}; }

}  // namespace attnlab::ui
