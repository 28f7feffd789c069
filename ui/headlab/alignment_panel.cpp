#include "headlab/alignment_panel.h"

#include "document/numbering.h"
#include "headlab/alignment_methods_table.h"
#include "plots/attention_view.h"

#include <attnlab/errors.h>

#include <qcustomplot.h>

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFontMetricsF>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QVBoxLayout>

namespace attnlab::ui {

namespace {
// Why the page does not draw `name`, a method of the methods table (scored by the page's own run over the examples,
// or read from an opened results file) that is not among the page's methods.
QString notDrawnReason(const QString& name) {
    AlignmentMethod method;
    try {
        method = parseAlignmentMethod(name.toStdString());
    } catch (const Error&) {
        return QObject::tr("%1 is scored in the table only: this page does not draw it.").arg(name);
    }
    const QString label = alignmentMethodLabel(method);
    if (method.sym != Symmetrization::None)
        return QObject::tr(
                   "%1 (%2) is scored in the table only: its links combine this model's with those of the "
                   "model of the other direction, and this page draws one model's maps.")
            .arg(name, label);
    if (const auto contributions = contributionMethodOf(method))
        return QObject::tr(
                   "%1 (%2) is scored in the table only: it reads the model's %3 contributions, not a "
                   "cross-attention map, and this page draws the attention maps (the Attention tab's "
                   "Method shows %3 for a sentence).")
            .arg(name, label,
                 *contributions == ContributionMethod::AltiPlus ? QStringLiteral("ALTI+")
                                                                : QObject::tr("value zeroing"));
    return QObject::tr("%1 (%2) is scored in the table only: this page does not draw it.").arg(name, label);
}
}  // namespace

AlignmentPanel::AlignmentPanel(QWidget* parent) : QWidget(parent) {
    m_example = new QComboBox(this);
    m_example->addItem(tr("(type a pair)"));
    m_source = new QLineEdit(this);
    m_target = new QLineEdit(this);
    m_gold = new QLineEdit(this);
    m_source->setPlaceholderText(tr("Source sentence, words separated by spaces"));
    m_target->setPlaceholderText(tr("Its translation (the decoder is fed this, not its own output)"));
    m_gold->setPlaceholderText(tr("Gold links (optional): 0-0 1-1 2p3 … source-target, 0-based; p or ? = possible"));
    m_method = new QComboBox(this);
    m_threshold = new QDoubleSpinBox(this);
    m_threshold->setRange(0, 1);
    m_threshold->setSingleStep(0.05);
    m_threshold->setToolTip(
        tr("Besides each target word's largest weight, link every source word reaching this (0 = off)"));
    auto* align = new QPushButton(tr("Align"), this);
    m_summary = new QLabel(this);
    m_summary->setWordWrap(true);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_map = new AttentionView(this);
    m_map->setAxisTitles(tr("target word"), tr("source word"));
    m_map->clear(tr("Choose an example or type a pair, then press Align"));
    auto* legend =
        new QLabel(tr("Solid frame: sure gold link · dashed frame: possible gold link · dot: the model's link "
                      "(largest weight per target word)"),
                   this);
    legend->setWordWrap(true);
    m_methods = new AlignmentMethodsTable(this);
    connect(m_methods, &AlignmentMethodsTable::methodChosen, this, [this](const QString& name) {
        if (m_method->findData(name) >= 0)
            setMethod(name);
        else
            m_summary->setText(notDrawnReason(name));
    });

    connect(m_example, &QComboBox::activated, this, [this](int i) { chooseExample(i - 1); });
    connect(align, &QPushButton::clicked, this, &AlignmentPanel::requestAlign);
    for (auto* e : {m_source, m_target}) connect(e, &QLineEdit::returnPressed, this, &AlignmentPanel::requestAlign);
    connect(m_gold, &QLineEdit::editingFinished, this, &AlignmentPanel::refresh);
    connect(m_method, &QComboBox::currentIndexChanged, this, &AlignmentPanel::refresh);
    connect(m_threshold, &QDoubleSpinBox::valueChanged, this, &AlignmentPanel::refresh);

    auto* form = new QGridLayout;
    form->addWidget(new QLabel(tr("Example:"), this), 0, 0);
    form->addWidget(m_example, 0, 1);
    form->addWidget(new QLabel(tr("Source:"), this), 1, 0);
    form->addWidget(m_source, 1, 1);
    form->addWidget(new QLabel(tr("Translation:"), this), 2, 0);
    form->addWidget(m_target, 2, 1);
    form->addWidget(new QLabel(tr("Gold:"), this), 3, 0);
    form->addWidget(m_gold, 3, 1);
    auto* row = new QHBoxLayout;
    row->addWidget(new QLabel(tr("Links from:"), this));
    row->addWidget(m_method);
    row->addWidget(new QLabel(tr("Threshold:"), this));
    row->addWidget(m_threshold);
    row->addWidget(align);
    row->addStretch(1);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addLayout(row);
    layout->addWidget(m_summary);
    layout->addWidget(m_map, 1);
    layout->addWidget(legend);
    layout->addWidget(m_methods);  // its table, once shown, takes the height it asks for
}

void AlignmentPanel::setModelShape(int layers, int heads) {
    const QString current = m_method->currentData().toString();
    m_method->blockSignals(true);
    m_method->clear();
    for (const auto& m : allAlignmentMethods(layers, heads))
        m_method->addItem(alignmentMethodLabel(m), QString::fromStdString(alignmentMethodName(m)));
    m_method->blockSignals(false);
    setMethod(current.isEmpty() ? QStringLiteral("all") : current);
}

void AlignmentPanel::setExamples(const std::vector<Example>& examples) {
    m_examples.clear();
    while (m_example->count() > 1) m_example->removeItem(1);
    for (const auto& e : examples)
        if (!e.alignment.empty()) {
            m_examples.push_back(e);
            m_example->addItem(QString::fromStdString(e.source));
        }
    m_methods->setExampleCount(int(m_examples.size()));
}

void AlignmentPanel::chooseExample(int index) {
    if (index < 0 || index >= int(m_examples.size())) return;
    m_example->setCurrentIndex(index + 1);
    const auto& e = m_examples[size_t(index)];
    setPair(QString::fromStdString(e.source), QString::fromStdString(e.reference), QString::fromStdString(e.alignment));
    requestAlign();
}

void AlignmentPanel::setPair(const QString& source, const QString& target, const QString& gold) {
    m_source->setText(source);
    m_target->setText(target);
    m_gold->setText(gold);
}

void AlignmentPanel::setMethod(const QString& name) {
    const int i = m_method->findData(name);
    if (i >= 0) m_method->setCurrentIndex(i);
}

void AlignmentPanel::requestAlign() {
    if (m_source->text().trimmed().isEmpty() || m_target->text().trimmed().isEmpty()) {
        m_summary->setText(tr("Type a source sentence and its translation."));
        return;
    }
    m_summary->setText(tr("Aligning…"));
    Q_EMIT alignRequested(m_source->text(), m_target->text());
}

void AlignmentPanel::setForced(ResultPtr forced) {
    m_forced = std::move(forced);
    refresh();
}

void AlignmentPanel::showFailure(const QString& message) { m_summary->setText(tr("Cannot align: %1").arg(message)); }

void AlignmentPanel::setColorMap(Palette palette) { m_map->setColorMap(palette); }

QString AlignmentPanel::summaryText() const { return m_summary->text(); }

void AlignmentPanel::refresh() {
    if (!m_forced || m_method->count() == 0) return;
    try {
        const auto method = parseAlignmentMethod(m_method->currentData().toString().toStdString());
        m_alignment = alignWords(*m_forced, method, m_threshold->value());
        m_map->setMap(m_alignment.map, toQStringList(m_alignment.target_words), toQStringList(m_alignment.source_words),
                      tr("%1, word level").arg(m_method->currentText()));
        const QString gold_text = m_gold->text().trimmed();
        if (gold_text.isEmpty()) {
            drawOverlays(nullptr);
            m_summary->setText(tr("%1 links; type gold links to score them.").arg(m_alignment.links.size()));
            return;
        }
        const auto gold = parseGoldLine(gold_text.toStdString(), {}, "gold");
        checkGoldIndices(gold, int(m_alignment.source_words.size()), int(m_alignment.target_words.size()), "gold");
        drawOverlays(&gold);
        AlignmentCounts c;
        c.add(m_alignment.links, gold);
        // The best head of this pair, for comparison.
        QString best;
        double best_aer = 2;
        const auto methods = allAlignmentMethods(int(m_forced->cross.size()), int(m_forced->cross.front().size()));
        const auto maps = wordMapsOfAllMethods(*m_forced);  // every method's word map, merged once
        for (size_t i = 0; i < methods.size(); ++i) {
            if (methods[i].kind != AlignmentMethod::Kind::Head) continue;
            AlignmentCounts h;
            h.add(extractLinks(maps[i], m_threshold->value()), gold);
            if (h.aer() < best_aer) {
                best_aer = h.aer();
                best = alignmentMethodLabel(methods[i]);
            }
        }
        m_summary->setText(tr("%1: AER %2, precision %3, recall %4 (%5 links; gold %6 sure, %7 possible). "
                              "Best head of this pair: %8 (AER %9).")
                               .arg(m_method->currentText())
                               .arg(c.aer(), 0, 'f', 3)
                               .arg(c.precision(), 0, 'f', 3)
                               .arg(c.recall(), 0, 'f', 3)
                               .arg(m_alignment.links.size())
                               .arg(gold.sure.size())
                               .arg(gold.possible.size() - gold.sure.size())
                               .arg(best)
                               .arg(best_aer, 0, 'f', 3));
    } catch (const std::exception& e) {
        m_summary->setText(QString::fromStdString(e.what()));
    }
}

void AlignmentPanel::drawOverlays(const GoldAlignment* gold) {
    QCustomPlot* plot = m_map->plot();
    plot->clearItems();
    m_overlays = 0;
    auto frame = [&](const AlignmentLink& l, Qt::PenStyle style) {
        auto* r = new QCPItemRect(plot);
        r->topLeft->setCoords(l.first - 0.45, l.second - 0.45);
        r->bottomRight->setCoords(l.first + 0.45, l.second + 0.45);
        r->setPen(QPen(QColor("#e67e22"), 2.5, style));
        ++m_overlays;
    };
    if (gold) {
        for (const auto& l : gold->possible)
            frame(l, std::binary_search(gold->sure.begin(), gold->sure.end(), l) ? Qt::SolidLine : Qt::DashLine);
    }
    // The model's links: round dots, their size in pixels (half a line of the plot's text), whatever
    // the cells' aspect (an ellipse in plot coordinates was stretched with them).
    const double diameter = 0.6 * QFontMetricsF(plot->font()).height();
    for (const auto& l : m_alignment.links) {
        auto* dot = new QCPItemTracer(plot);
        dot->setStyle(QCPItemTracer::tsCircle);
        dot->setSize(diameter);
        dot->position->setCoords(l.first, l.second);
        dot->setPen(QPen(Qt::black));
        dot->setBrush(QBrush(QColor("#e74c3c")));
        ++m_overlays;
    }
    plot->replot();
}

}  // namespace attnlab::ui
