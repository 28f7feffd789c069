#include "headlab/head_stats_panel.h"

#include "document/numbering.h"
#include "document/view_context.h"
#include "plots/number_item.h"
#include "widgets/head_picker.h"

#include "plots/attention_view.h"

#include <attnlab/errors.h>
#include <attnlab/head_lab_json.h>
#include <attnlab/text_io.h>

#include <qcustomplot.h>

#include <cmath>

#include <QCheckBox>
#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

namespace attnlab::ui {

HeadStatsPanel::HeadStatsPanel(QWidget* parent) : QWidget(parent) {
    buildControls();
    m_heatmap = new AttentionView(this);
    m_heatmap->setFixedRange(false);
    m_heatmap->setAxisTitles(tr("layer"), tr("head"));
    m_heatmap->clear(tr("Choose a corpus (or the model's examples) and press Run"));
    m_table = new QTableWidget(this);
    m_table->setSortingEnabled(true);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setToolTip(tr("Click a column to sort; double-click a head to see the sentence where it is most typical"));
    m_curve = new QCustomPlot(this);
    m_curve->xAxis->setLabel(tr("heads removed (least important first)"));
    m_curve->yAxis->setLabel(tr("BLEU"));
    m_curve->setMinimumHeight(120);
    m_curve->hide();
    followTextSize(m_curve);
    connect(m_table, &QTableWidget::cellDoubleClicked, this, [this](int row, int) {
        if (!m_stats) return;
        const int index = m_table->item(row, 0)->data(Qt::UserRole).toInt();
        const auto& h = m_stats->heads.at(static_cast<size_t>(index));
        const int stat = std::min(m_statistic->currentIndex(), kHeadStatisticCount - 1);
        const int sentence = h.typical_sentence[static_cast<size_t>(stat)];
        if (sentence >= 0 && sentence < int(m_run_sources.size()))
            Q_EMIT sentenceRequested(QString::fromStdString(m_run_sources[size_t(sentence)]), h.head);
    });

    auto* split = new QSplitter(Qt::Horizontal, this);
    split->addWidget(m_heatmap);
    auto* right = new QSplitter(Qt::Vertical, split);
    right->addWidget(m_table);
    right->addWidget(m_curve);
    split->addWidget(right);
    split->setStretchFactor(1, 2);
    static_cast<QVBoxLayout*>(layout())->addWidget(split, 1);
}

void HeadStatsPanel::buildControls() {
    auto* files = new QPushButton(tr("Corpus…"), this);
    files->setToolTip(tr("A source file and, optionally, its references (one sentence per line, plain or .gz)"));
    auto* examples = new QPushButton(tr("Use the model's examples"), this);
    m_corpus = new QLabel(tr("no corpus chosen"), this);
    m_importance_box = new QCheckBox(tr("Importance (one translation per head; needs references)"), this);
    m_run = new QPushButton(tr("Run"), this);
    m_cancel = new QPushButton(tr("Cancel"), this);
    m_cancel->setEnabled(false);
    m_run->setEnabled(false);
    m_progress = new QProgressBar(this);
    m_progress->setTextVisible(true);
    m_progress->hide();
    m_status = new QLabel(this);
    m_status->setWordWrap(true);
    m_statistic = new QComboBox(this);
    for (const auto& info : headStatisticInfos()) {
        m_statistic->addItem(tr(info.label));
        m_statistic->setItemData(m_statistic->count() - 1, tr(info.meaning), Qt::ToolTipRole);
    }
    m_measure = new QComboBox(this);
    for (MapMeasure m : kMapMeasures) m_measure->addItem(mapMeasureTitle(m), int(m));
    m_measure->setToolTip(
        tr("What the next run's statistics are taken of: the weights, each weight times its key's "
           "value norm (rows normalised), or the rollout (one map per layer)"));
    m_compare = new QComboBox(this);
    m_compare->setToolTip(tr("The next run also takes the statistics of this model on the same corpus"));
    m_difference = new QCheckBox(tr("Difference"), this);
    m_difference->setToolTip(tr("Show the compared model's statistic minus this model's"));
    m_difference->setEnabled(false);
    m_kind = new QComboBox(this);
    for (const auto k : attentionKinds()) m_kind->addItem(kindTitle(k));  // index = AttentionKind
    m_kind->setCurrentIndex(int(AttentionKind::Cross));

    connect(files, &QPushButton::clicked, this, &HeadStatsPanel::chooseFiles);
    connect(examples, &QPushButton::clicked, this, [this] {
        std::vector<std::string> s, r;
        for (const auto& e : m_examples) {
            s.push_back(e.source);
            r.push_back(e.reference);
        }
        setCorpus(s, r, tr("the model's %1 examples").arg(s.size()));
    });
    connect(m_run, &QPushButton::clicked, this, [this] { startRun(m_importance_box->isChecked()); });
    connect(m_cancel, &QPushButton::clicked, this, [this] {
        m_status->setText(tr("Cancelling…"));
        Q_EMIT cancelRequested();
    });
    connect(m_statistic, &QComboBox::currentIndexChanged, this, [this] { refreshHeatmap(); });
    connect(m_kind, &QComboBox::currentIndexChanged, this, [this] { refreshHeatmap(); });
    connect(m_difference, &QCheckBox::toggled, this, [this] { refreshHeatmap(); });

    auto* top = new QHBoxLayout;
    top->addWidget(files);
    top->addWidget(examples);
    top->addWidget(m_corpus, 1);
    top->addWidget(new QLabel(tr("Of:"), this));
    top->addWidget(m_measure);
    top->addWidget(new QLabel(tr("Compare with:"), this));
    top->addWidget(m_compare);
    top->addWidget(m_importance_box);
    top->addWidget(m_run);
    top->addWidget(m_cancel);
    auto* view = new QHBoxLayout;
    view->addWidget(new QLabel(tr("Statistic:"), this));
    view->addWidget(m_statistic);
    view->addWidget(new QLabel(tr("Kind:"), this));
    view->addWidget(m_kind);
    view->addWidget(m_difference);
    view->addWidget(m_progress, 1);
    auto* save_json = new QPushButton(tr("Export JSON…"), this);
    auto* save_csv = new QPushButton(tr("Export CSV…"), this);
    view->addWidget(save_json);
    view->addWidget(save_csv);
    auto exporter = [this](const QString& filter, auto method) {
        const QString path = QFileDialog::getSaveFileName(this, tr("Export head statistics"), QString(), filter);
        if (path.isEmpty()) return;
        if (auto why = (this->*method)(path))
            m_status->setText(*why);
        else
            m_status->setText(tr("Wrote %1").arg(path));
    };
    connect(save_json, &QPushButton::clicked, this,
            [=] { exporter(tr("JSON (*.json)"), &HeadStatsPanel::exportJson); });
    connect(save_csv, &QPushButton::clicked, this, [=] { exporter(tr("CSV (*.csv)"), &HeadStatsPanel::exportCsv); });
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(top);
    layout->addLayout(view);
    layout->addWidget(m_status);
}

void HeadStatsPanel::setExamples(const std::vector<Example>& examples) { m_examples = examples; }

void HeadStatsPanel::setCompareChoices(const std::vector<BundledModel>& models, const ModelInfo& current) {
    m_compare->clear();
    m_compare->addItem(tr("nothing"), QString());
    const QString loaded = QFileInfo(QString::fromStdString(current.package_dir)).canonicalFilePath();
    for (const auto& m : models) {
        if (QFileInfo(QString::fromStdString(m.dir)).canonicalFilePath() == loaded) continue;  // itself
        const auto& c = current.config;
        const bool reversed = m.source_lang == c.target_lang && m.target_lang == c.source_lang;
        m_compare->addItem(reversed
                               ? tr("%1 (the other direction of the same pairs)").arg(QString::fromStdString(m.name))
                               : QString::fromStdString(m.name),
                           QString::fromStdString(m.dir));
        m_compare->setItemData(m_compare->count() - 1, reversed, Qt::UserRole + 1);
    }
}

void HeadStatsPanel::setComparison(HeadStatsPtr other, const QString& model_dir, bool reversed) {
    m_other = std::move(other);
    m_other_name = QFileInfo(model_dir).fileName() + (reversed ? tr(", the other direction") : QString());
    m_difference->setEnabled(m_other != nullptr);
    if (!m_other) m_difference->setChecked(false);
}

void HeadStatsPanel::chooseFiles() {
    const QString src = QFileDialog::getOpenFileName(this, tr("Source sentences"));
    if (src.isEmpty()) return;
    const QString ref = QFileDialog::getOpenFileName(this, tr("References (Cancel: the model's own translations)"));
    try {
        const auto s = readTextLines(src.toStdString());
        const auto r = ref.isEmpty() ? std::vector<std::string>{} : readTextLines(ref.toStdString());
        if (!r.empty() && r.size() != s.size())
            throw InputError("mismatched files: " + src.toStdString() + " has " + std::to_string(s.size()) +
                             " lines but " + ref.toStdString() + " has " + std::to_string(r.size()));
        setCorpus(
            s, r,
            ref.isEmpty() ? QFileInfo(src).fileName() : QFileInfo(src).fileName() + " + " + QFileInfo(ref).fileName());
    } catch (const std::exception& e) {
        m_status->setText(QString::fromStdString(e.what()));
    }
}

void HeadStatsPanel::setCorpus(const std::vector<std::string>& sources, const std::vector<std::string>& references,
                               const QString& description) {
    m_sources = sources;
    m_refs = references;
    m_corpus->setText(tr("%1: %2 sentences%3")
                          .arg(description)
                          .arg(sources.size())
                          .arg(references.empty() ? tr(", the model's own translations") : tr(", with references")));
    m_importance_box->setEnabled(!references.empty());
    if (references.empty()) m_importance_box->setChecked(false);
    m_run->setEnabled(!sources.empty());
}

void HeadStatsPanel::startRun(bool importance) {
    if (m_sources.empty()) return;
    HeadLabRequest r;
    r.sources = m_sources;
    r.references = m_refs;
    r.importance = importance && !m_refs.empty();
    m_importance_box->setChecked(r.importance);
    m_pending_sources = m_sources;
    r.measure = MapMeasure(m_measure->currentData().toInt());
    r.compare_model = m_compare->currentData().toString().toStdString();
    r.compare_reversed = m_compare->currentData(Qt::UserRole + 1).toBool();
    const bool dropped = r.compare_reversed && m_refs.empty();  // the other direction reads the references
    if (dropped) r.compare_model.clear();
    r.decoding.beam_size = 1;  // greedy: the importance runs translate the corpus once per head
    r.decoding.max_batch_size = 128;
    m_run->setEnabled(false);
    m_cancel->setEnabled(true);
    m_progress->setRange(0, 0);
    m_progress->show();
    m_status->setText(dropped ? tr("Running… (no comparison: the other direction needs references)") : tr("Running…"));
    Q_EMIT runRequested(r);
}

void HeadStatsPanel::showProgress(const QString& stage, int done, int total) {
    m_progress->setRange(0, std::max(total, 1));
    m_progress->setValue(done);
    m_progress->setFormat(tr("%1: %2 / %3").arg(stage).arg(done).arg(total));
}

QCustomPlot* HeadStatsPanel::figure() const { return m_stats ? m_heatmap->plot() : nullptr; }

void HeadStatsPanel::setEmptyMessage(const QString& message) {
    if (!m_stats) m_heatmap->clear(message);
}

void HeadStatsPanel::showFailure(const QString& message) {
    m_progress->hide();
    m_run->setEnabled(!m_sources.empty());
    m_cancel->setEnabled(false);
    m_status->setText(message == "cancelled" ? tr("Cancelled; the previous results stay.")
                                             : tr("The run failed: %1").arg(message));
}

void HeadStatsPanel::setReport(HeadStatsPtr stats, ImportancePtr importance, ModelInfoPtr model) {
    m_stats = std::move(stats);
    m_importance = std::move(importance);
    m_run_sources = std::move(m_pending_sources);
    m_model = std::move(model);
    m_progress->hide();
    m_run->setEnabled(!m_sources.empty());
    m_cancel->setEnabled(false);
    while (m_statistic->count() > kHeadStatisticCount) m_statistic->removeItem(kHeadStatisticCount);
    if (m_importance) m_statistic->addItem(tr("BLEU drop when ablated"));
    if (m_importance && m_importance->gradient) m_statistic->addItem(tr("Gradient importance (per layer)"));
    const bool weights = !m_stats || m_stats->measure == MapMeasure::Weights;
    m_status->setText(m_stats ? tr("%1%2 heads over %3 sentences%4")
                                    .arg(weights ? QString() : tr("%1: ").arg(mapMeasureTitle(m_stats->measure)))
                                    .arg(m_stats->heads.size())
                                    .arg(m_stats->sentences)
                                    .arg(m_stats->teacher_forced ? tr(", decoder teacher-forced through the references")
                                                                 : tr(", the model's own (greedy) translations"))
                              : QString());
    if (m_importance)
        m_status->setText(m_status->text() + tr("; BLEU %1 with every head, chrF %2")
                                                 .arg(m_importance->baseline_bleu, 0, 'f', 2)
                                                 .arg(m_importance->baseline_chrf, 0, 'f', 2));
    if (m_importance && m_importance->removable_heads >= 0)
        m_status->setText(m_status->text() + tr("; %1 of %2 heads removable with no significant loss (95 %)")
                                                 .arg(m_importance->removable_heads)
                                                 .arg(m_importance->heads.size()));
    if (m_importance && m_importance->gradient && std::isfinite(m_importance->rank_correlation))
        m_status->setText(m_status->text() + tr("; ablation and gradient orders agree with Spearman's ρ = %1")
                                                 .arg(m_importance->rank_correlation, 0, 'f', 2));
    refreshHeatmap();
    refreshTable();
    refreshCurve();
}

QString HeadStatsPanel::statusText() const { return m_status->text(); }

void HeadStatsPanel::select(int statistic, attnlab::AttentionKind kind) {
    m_kind->setCurrentIndex(static_cast<int>(kind));
    m_statistic->setCurrentIndex(statistic);
}

void HeadStatsPanel::setColorMap(Palette palette) { m_heatmap->setColorMap(palette); }

double HeadStatsPanel::valueOf(const HeadStats& h, int statistic) const {
    if (statistic < kHeadStatisticCount && m_other && m_difference->isChecked()) {
        const HeadStats* o = m_other->find(h.head);
        return o ? o->values[size_t(statistic)] - h.values[size_t(statistic)] : 0.0;
    }
    if (statistic < kHeadStatisticCount) return h.values[static_cast<size_t>(statistic)];
    if (statistic == kGradientColumn && m_importance && m_importance->gradient)
        if (const auto* g = m_importance->gradient->find(h.head)) return g->normalized;
    if (statistic == kImportanceColumn && m_importance)
        for (const auto& i : m_importance->heads)
            if (i.head == h.head) return i.bleu_drop;
    return 0.0;
}

void HeadStatsPanel::refreshHeatmap() {
    if (!m_stats || m_stats->heads.empty()) return;
    const auto kind = static_cast<attnlab::AttentionKind>(m_kind->currentIndex());
    int layers = 0, heads = 0;
    for (const auto& h : m_stats->heads)
        if (h.head.kind == kind) {
            layers = std::max(layers, h.head.layer + 1);
            heads = std::max(heads, h.head.head + 1);
        }
    Matrix m(static_cast<size_t>(layers), std::vector<float>(static_cast<size_t>(heads), 0.f));
    for (const auto& h : m_stats->heads)
        if (h.head.kind == kind)
            m[size_t(h.head.layer)][size_t(h.head.head)] = float(valueOf(h, m_statistic->currentIndex()));
    QStringList rows, cols;
    for (int l = 0; l < layers; ++l) rows << layerLabel(l);
    for (int h = 0; h < heads; ++h) cols << tr("h%1").arg(shownText(h));
    const bool difference = m_other && m_difference->isChecked() && m_statistic->currentIndex() < kHeadStatisticCount;
    m_heatmap->setDiverging(difference);
    m_heatmap->setMap(
        m, rows, cols,
        difference
            ? tr("%1 — %2: %3 minus this model").arg(m_statistic->currentText(), m_kind->currentText(), m_other_name)
            : tr("%1 — %2").arg(m_statistic->currentText(), m_kind->currentText()));
}

void HeadStatsPanel::refreshTable() {
    m_table->setSortingEnabled(false);
    m_table->clear();
    if (!m_stats) return;
    QStringList header{tr("head"), tr("rows")};
    for (const auto& info : headStatisticInfos()) header << tr(info.label);
    if (m_importance) header << tr("BLEU without") << tr("BLEU drop");
    const bool gradient = m_importance && m_importance->gradient;
    if (gradient) header << tr("gradient importance");
    m_table->setColumnCount(header.size());
    m_table->setHorizontalHeaderLabels(header);
    m_table->setRowCount(static_cast<int>(m_stats->heads.size()));
    for (size_t i = 0; i < m_stats->heads.size(); ++i) {
        const auto& h = m_stats->heads[i];
        auto* name = new QTableWidgetItem(headRefLabel(h.head));
        name->setData(Qt::UserRole, static_cast<int>(i));
        const int row = static_cast<int>(i);
        m_table->setItem(row, 0, name);
        m_table->setItem(row, 1, new NumberItem(double(h.rows), 0));
        for (int s = 0; s < kHeadStatisticCount; ++s) m_table->setItem(row, 2 + s, new NumberItem(h.values[size_t(s)]));
        if (!m_importance) continue;
        for (const auto& imp : m_importance->heads)
            if (imp.head == h.head) {
                m_table->setItem(row, 2 + kHeadStatisticCount, new NumberItem(imp.bleu, 2));
                m_table->setItem(row, 3 + kHeadStatisticCount, new NumberItem(imp.bleu_drop, 2));
            }
        if (gradient)
            if (const auto* g = m_importance->gradient->find(h.head))
                m_table->setItem(row, 4 + kHeadStatisticCount, new NumberItem(g->normalized, 3));
    }
    m_table->setSortingEnabled(true);
    m_table->resizeColumnsToContents();
}

void HeadStatsPanel::refreshCurve() {
    m_curve->clearPlottables();  // graphs and error bars
    m_curve->setVisible(m_importance != nullptr);
    if (!m_importance) return;
    QVector<double> x, y, below, above, sx, sy;
    for (const auto& p : m_importance->curve) {
        x << p.heads_removed;
        y << p.bleu;
        // A percentile interval need not hold the point itself: no bar below 0 (zero-length without intervals).
        below << std::max(0.0, p.bleu - p.interval.low);
        above << std::max(0.0, p.interval.high - p.bleu);
        if (p.significantLoss()) sx << p.heads_removed, sy << p.bleu;
    }
    auto* g = m_curve->addGraph();
    g->setData(x, y);
    g->setName(tr("BLEU"));
    g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 6));
    if (m_importance->bootstrap_resamples > 0) {
        auto* bars = new QCPErrorBars(m_curve->xAxis, m_curve->yAxis);
        bars->setDataPlottable(g);
        bars->setData(below, above);
        bars->setName(tr("95 % interval (paired bootstrap)"));
        auto* loss = m_curve->addGraph();
        loss->setData(sx, sy);
        loss->setLineStyle(QCPGraph::lsNone);
        loss->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, QColor(200, 40, 40), 7));
        loss->setName(tr("significantly below every head"));
    }
    m_curve->legend->setVisible(m_importance->bootstrap_resamples > 0);
    // Top right: the curve falls from the top left, so that corner stays empty.
    m_curve->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignRight);
    m_curve->rescaleAxes();
    m_curve->yAxis->setRangeLower(0);
    m_curve->replot();
}

std::optional<QString> HeadStatsPanel::exportJson(const QString& path) const {
    if (!m_stats || !m_model) return tr("nothing to export: run the statistics first");
    try {
        writeHeadLabFile(path.toStdString(), headsJson(*m_stats, m_importance.get(), *m_model));
    } catch (const std::exception& e) {
        return QString::fromStdString(e.what());
    }
    return std::nullopt;
}

std::optional<QString> HeadStatsPanel::exportCsv(const QString& path) const {
    if (!m_stats) return tr("nothing to export: run the statistics first");
    try {
        writeHeadLabFile(path.toStdString(), headStatsCsv(*m_stats));
    } catch (const std::exception& e) {
        return QString::fromStdString(e.what());
    }
    return std::nullopt;
}

}  // namespace attnlab::ui
