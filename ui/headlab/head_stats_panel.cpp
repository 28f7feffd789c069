#include "headlab/head_stats_panel.h"

#include "document/numbering.h"
#include "document/recent_models.h"
#include "document/view_context.h"
#include "headlab/head_heatmaps.h"
#include "plots/attention_view.h"
#include "plots/number_item.h"
#include "widgets/head_picker.h"

#include <attnlab/errors.h>
#include <attnlab/head_lab_json.h>
#include <attnlab/hub.h>
#include <attnlab/text_io.h>

#include <qcustomplot.h>

#include <cmath>

#include <QAbstractItemView>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
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
    m_maps = new HeadHeatmaps(this);
    m_maps->clear(tr("Choose a corpus (or the model's examples) and press Run"));
    m_table = new QTableWidget(this);
    m_table->setSortingEnabled(true);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setToolTip(tr("Click a column to sort; double-click a head to see the sentence where it is most typical"));
    m_curve = new QCustomPlot(this);
    m_curve->xAxis->setLabel(tr("heads removed (least important first)"));
    m_curve->yAxis->setLabel(tr("BLEU"));
    m_curve->setMinimumHeight(120);
    m_importance_note = new QLabel(this);
    m_importance_note->setWordWrap(true);
    m_importance_note->hide();
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

    // The maps and the table share the width (resizeEvent), and so grow with the window
    // (QCustomPlot's size hint is its least size: by hints alone the maps got ~50 px).
    m_split = new QSplitter(Qt::Horizontal, this);
    m_split->addWidget(m_maps);
    auto* right = new QSplitter(Qt::Vertical, m_split);
    right->addWidget(m_table);
    m_curve_pane = new QWidget(right);  // shown with an importance run
    auto* column = new QVBoxLayout(m_curve_pane);
    column->setContentsMargins(0, 0, 0, 0);
    column->addWidget(m_importance_note);
    column->addWidget(m_curve, 1);
    m_curve_pane->hide();
    right->addWidget(m_curve_pane);
    m_split->addWidget(right);
    m_split->setChildrenCollapsible(false);
    connect(m_split, &QSplitter::splitterMoved, this, [this] { m_split_moved = true; });
    static_cast<QVBoxLayout*>(layout())->addWidget(m_split, 1);
}

// Until the splitter is dragged, the maps get kMapsShare of the width (each map's least size, a
// line of text a cell, still holds) and the table the rest.
void HeadStatsPanel::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    if (m_split_moved) return;
    const int width = m_split->width(), maps = width * kMapsPercent / 100;
    m_split->setSizes({maps, width - maps});
}

void HeadStatsPanel::buildControls() {
    auto* files = new QPushButton(tr("Corpus…"), this);
    files->setToolTip(tr("A source file and, optionally, its references (one sentence per line, plain or .gz)"));
    auto* examples = new QPushButton(tr("Use the model's examples"), this);
    auto* open = new QPushButton(tr("Open results…"), this);
    open->setToolTip(
        tr("Head statistics written by attnlab-cli heads --json, merged from the parts of a sharded run "
           "(attnlab-cli merge) or exported here; alignment scores of attnlab-cli align --json (shown on the "
           "Alignment page)"));
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
    for (MapMeasure m : kAttentionMeasures) m_measure->addItem(mapMeasureTitle(m), int(m));
    m_measure->setToolTip(
        tr("What the next run's statistics are taken of: the weights, each weight times its key's "
           "value norm (rows normalised), or the rollout (one map per layer)"));
    m_compare = new QComboBox(this);
    m_compare->setToolTip(
        tr("The next run also takes the statistics of this model on the same corpus, in its languages for "
           "those of the loaded model: its difference, other minus this, gets a column per statistic and a "
           "map of its own"));
    connect(m_compare, &QComboBox::activated, this, &HeadStatsPanel::compareChosen);
    // As wide as 40 characters whatever the models' names (a hub name with its origin can be 80): the
    // row fits a 1280 px window; the list that opens shows them whole.
    m_compare->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_compare->setMinimumContentsLength(40);
    m_kind = new QComboBox(this);
    for (const auto k : attentionKinds()) m_kind->addItem(kindTitle(k));  // index = AttentionKind
    m_kind->setCurrentIndex(int(AttentionKind::Cross));

    connect(files, &QPushButton::clicked, this, &HeadStatsPanel::chooseFiles);
    connect(open, &QPushButton::clicked, this, [this] {
        const QString path =
            QFileDialog::getOpenFileName(this, tr("Open head lab results"), QString(), tr("JSON (*.json)"));
        if (path.isEmpty()) return;
        if (auto why = openResults(path)) m_status->setText(*why);
    });
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

    // Three rows, so that they fit a 1280 px wide window: the corpus and the run, what the run
    // takes, what is shown.
    auto* top = new QHBoxLayout;
    top->addWidget(files);
    top->addWidget(examples);
    top->addWidget(m_corpus, 1);
    top->addWidget(open);
    top->addWidget(m_run);
    top->addWidget(m_cancel);
    auto* run = new QHBoxLayout;
    run->addWidget(new QLabel(tr("Of:"), this));
    run->addWidget(m_measure);
    run->addWidget(new QLabel(tr("Compare with:"), this));
    run->addWidget(m_compare);
    run->addWidget(m_importance_box);
    run->addStretch(1);
    auto* view = new QHBoxLayout;
    view->addWidget(new QLabel(tr("Statistic:"), this));
    view->addWidget(m_statistic);
    view->addWidget(new QLabel(tr("Kind:"), this));
    view->addWidget(m_kind);
    view->addWidget(m_progress, 1);
    view->addStretch();  // the combo boxes keep their size while the progress bar is hidden
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
    layout->addLayout(run);
    layout->addLayout(view);
    layout->addWidget(m_status);
}

void HeadStatsPanel::setExamples(const std::vector<Example>& examples) { m_examples = examples; }

namespace {
const QString kOtherFolder = QStringLiteral("\x01other");  // the data of "Other folder…"

// The Hugging Face cache's complete snapshots, as (name, folder).
QList<QPair<QString, QString>> cachedHubModels() {
    QList<QPair<QString, QString>> out;
    try {
        const HubOptions options = hubOptionsFromEnvironment();
        const QDir cache(QString::fromStdString(options.cache_dir));
        for (const QString& folder : cache.entryList({"models--*"}, QDir::Dirs)) {
            const QString name = folder.mid(8).replace("--", "/");
            const auto hub = parseHubModelName(name.toStdString());
            if (!hub) continue;
            if (const auto dir = cachedHubSnapshot(*hub, options)) out.append({name, QString::fromStdString(*dir)});
        }
    } catch (const std::exception&) {
        // settings the hub cannot work with (ConfigError): no cached models to offer
    }
    return out;
}
}  // namespace

QList<QPair<QString, QString>> HeadStatsPanel::knownModels() {
    QList<QPair<QString, QString>> out;
    QStringList seen;
    const auto add = [&](const QString& label, const QString& dir) {
        const QString canonical = QFileInfo(dir).canonicalFilePath();
        if (canonical.isEmpty() || seen.contains(canonical)) return;
        seen << canonical;
        out.append({label, canonical});
    };
    const auto pair = [](const BundledModel& m) {
        return QStringLiteral("%1 → %2").arg(QString::fromStdString(m.source_lang),
                                             QString::fromStdString(m.target_lang));
    };
    for (const auto& m : bundledModels())
        add(tr("%1 (%2)").arg(QString::fromStdString(m.name), pair(m)), QString::fromStdString(m.dir));
    for (const auto& m : installedArgosModels())
        add(tr("Argos: %1 (%2)").arg(QString::fromStdString(m.name), pair(m)), QString::fromStdString(m.dir));
    try {
        // A hub name: its snapshot in the cache (none: not offered).
        for (const QString& entry : RecentModels::entries()) {
            const QString folder = ViewContext::cachedModel(entry).value_or(entry);
            add(tr("%1 (recent)").arg(RecentModels::displayName(folder)), folder);
        }
    } catch (const std::exception&) {
        // settings the hub cannot work with (ConfigError: ATTNLAB_HUB_MIN_RATE=abc): no recent models to offer,
        // rather than an exception out of a model's load
    }
    for (const auto& [name, dir] : cachedHubModels()) add(tr("%1 (Hugging Face cache)").arg(name), dir);
    return out;
}

void HeadStatsPanel::setCompareChoices(const ModelInfo& current) {
    const QSignalBlocker block(m_compare);
    m_compare->clear();
    m_compare->addItem(tr("nothing"), QString());
    const QString loaded = QFileInfo(QString::fromStdString(current.package_dir)).canonicalFilePath();
    for (const auto& [label, dir] : knownModels()) {
        if (dir == loaded) continue;  // not itself
        m_compare->addItem(label, dir);
        m_compare->setItemData(m_compare->count() - 1, dir, Qt::ToolTipRole);
    }
    m_compare->addItem(tr("Other folder…"), kOtherFolder);
    fitCompareList();
    m_compare_problem.clear();
    m_compare_text.clear();
}

// The list that opens is as wide as its longest name (the box itself is 40 characters wide).
void HeadStatsPanel::fitCompareList() {
    QAbstractItemView* list = m_compare->view();
    list->setMinimumWidth(list->sizeHintForColumn(0) + 2 * list->frameWidth() + 24);
}

void HeadStatsPanel::compareChosen(int index) {
    const QString dir = m_compare->itemData(index).toString();
    m_compare_problem.clear();
    m_compare_text.clear();
    if (dir == kOtherFolder) {
        const QString chosen = QFileDialog::getExistingDirectory(this, tr("A model to compare with"));
        if (chosen.isEmpty()) {
            m_compare->setCurrentIndex(0);
            return;
        }
        chooseCompareModel(chosen);
        return;
    }
    if (dir.isEmpty()) return;
    m_status->setText(tr("Checking %1…").arg(m_compare->itemText(index)));
    Q_EMIT compareCheckRequested(dir);
}

void HeadStatsPanel::recheckComparison() {
    const QString dir = m_compare->currentData().toString();
    if (!dir.isEmpty() && dir != kOtherFolder) compareChosen(m_compare->currentIndex());
}

void HeadStatsPanel::chooseCompareModel(const QString& dir) {
    const QString canonical = QFileInfo(dir).canonicalFilePath();
    const QString key = canonical.isEmpty() ? dir : canonical;
    int i = m_compare->findData(key);
    if (i < 0) {
        i = m_compare->count() - 1;  // before "Other folder…"
        m_compare->insertItem(i, tr("%1 (folder)").arg(RecentModels::displayName(key)), key);
        m_compare->setItemData(i, key, Qt::ToolTipRole);
        fitCompareList();
    }
    {
        const QSignalBlocker block(m_compare);
        m_compare->setCurrentIndex(i);
    }
    compareChosen(i);
}

void HeadStatsPanel::setComparisonCheck(const QString& dir, bool reversed, const QString& source, const QString& target,
                                        const QString& problem) {
    if (m_compare->currentData().toString() != dir) return;  // another was chosen since
    m_compare_problem = problem;
    const QString name = m_compare->currentText();
    m_compare_text = !problem.isEmpty() ? tr("Cannot compare with %1: %2").arg(name, problem)
                     : reversed ? tr("%1 will be compared in %2 → %3, the other way round (it reads the references)")
                                      .arg(name, source, target)
                                : tr("%1 will be compared in %2 → %3").arg(name, source, target);
    m_status->setText(m_compare_text);
}

void HeadStatsPanel::setComparison(HeadStatsPtr other, const QString& model_dir, bool reversed,
                                   const QString& left_out) {
    m_other = std::move(other);
    m_other_name = QFileInfo(model_dir).fileName() + (reversed ? tr(", the other direction") : QString());
    m_left_out = left_out.isEmpty()
                     ? QString()
                     : tr("the comparison with %1 was left out: %2").arg(QFileInfo(model_dir).fileName(), left_out);
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
    const QString compare = m_compare->currentData().toString();
    const bool refused = !m_compare_problem.isEmpty();  // said when it was chosen; the run goes without it
    if (compare != kOtherFolder && !refused) r.compare_model = compare.toStdString();
    r.decoding.beam_size = 1;  // greedy: the importance runs translate the corpus once per head
    r.decoding.max_batch_size = 128;
    m_run->setEnabled(false);
    m_cancel->setEnabled(true);
    m_progress->setRange(0, 0);
    m_progress->show();
    m_status->setText(refused ? tr("Running… (no comparison: %1)").arg(m_compare_problem) : tr("Running…"));
    Q_EMIT runRequested(r);
}

void HeadStatsPanel::showProgress(const QString& stage, int done, int total) {
    m_progress->setRange(0, std::max(total, 1));
    m_progress->setValue(done);
    m_progress->setFormat(tr("%1: %2 / %3").arg(stage).arg(done).arg(total));
}

QCustomPlot* HeadStatsPanel::figure() const { return m_stats ? heatmap()->plot() : nullptr; }
AttentionView* HeadStatsPanel::heatmap() const { return m_maps->statistic(); }
AttentionView* HeadStatsPanel::differenceMap() const { return m_maps->difference(); }

void HeadStatsPanel::setEmptyMessage(const QString& message) {
    if (!m_stats) m_maps->clear(message);
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
    m_differences = m_stats && m_other ? compareHeadStatistics(*m_stats, *m_other) : std::vector<HeadStatsDifference>{};
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
    if (!m_differences.empty())
        m_status->setText(m_status->text() + tr("; compared with %1: the Δ columns and the lower map are %1 minus "
                                                "this model")
                                                 .arg(m_other_name));
    if (!m_left_out.isEmpty()) m_status->setText(m_status->text() + "; " + m_left_out);
    refreshHeatmap();
    refreshTable();
    refreshCurve();
    refreshImportanceNote();
}

// Few sentences, wide intervals: the paired bootstrap resamples the corpus's sentences, so with 8 of
// them a curve point's interval spans several BLEU and hardly any loss is "significant".
void HeadStatsPanel::refreshImportanceNote() {
    const bool few = m_importance && m_importance->sentences < kFewSentences;
    m_importance_note->setVisible(few);
    if (!few) {
        m_importance_note->clear();
        return;
    }
    double half = 0;
    int points = 0;
    for (const auto& p : m_importance->curve)
        if (p.interval.resamples > 0) half += (p.interval.high - p.interval.low) / 2, ++points;
    const QString width = points > 0 ? tr(" (±%1 BLEU on average)").arg(half / points, 0, 'f', 1) : QString();
    m_importance_note->setText(
        tr("<b>Only %1 sentences:</b> the intervals are wide%2, so \"no significant loss\" and the heads "
           "counted removable say little — a few sentences cannot tell a small loss from chance. More "
           "sentences narrow the intervals (about as 1/√n): choose a corpus file with its references "
           "(Corpus…), %3 sentences or more.")
            .arg(m_importance->sentences)
            .arg(width)
            .arg(kFewSentences));
}

QString HeadStatsPanel::importanceNote() const {
    return m_importance_note->isHidden() ? QString() : m_importance_note->text();
}

QString HeadStatsPanel::statusText() const { return m_status->text(); }

void HeadStatsPanel::select(int statistic, attnlab::AttentionKind kind) {
    m_kind->setCurrentIndex(static_cast<int>(kind));
    m_statistic->setCurrentIndex(statistic);
}

void HeadStatsPanel::setColorMap(Palette palette) { m_maps->setColorMap(palette); }

double HeadStatsPanel::valueOf(const HeadStats& h, int statistic) const {
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
    const int statistic = m_statistic->currentIndex();
    if (statistic < 0) return;
    int layers = 0, heads = 0;
    for (const auto& h : m_stats->heads)
        if (h.head.kind == kind) {
            layers = std::max(layers, h.head.layer + 1);
            heads = std::max(heads, h.head.head + 1);
        }
    Matrix m(static_cast<size_t>(layers), std::vector<float>(static_cast<size_t>(heads), 0.f));
    Matrix difference = m;  // other minus this; 0 where the other model lacks the head
    for (const auto& h : m_stats->heads)
        if (h.head.kind == kind) m[size_t(h.head.layer)][size_t(h.head.head)] = float(valueOf(h, statistic));
    const bool compared = !m_differences.empty() && statistic < kHeadStatisticCount;
    for (const auto& d : m_differences)
        if (compared && d.head.kind == kind)
            difference[size_t(d.head.layer)][size_t(d.head.head)] = float(d.difference(HeadStatistic(statistic)));
    const QString title = tr("%1 — %2").arg(m_statistic->currentText(), m_kind->currentText());
    m_maps->setMaps(
        m, title, compared ? &difference : nullptr,
        tr("%1 — %2: %3 minus this model").arg(m_statistic->currentText(), m_kind->currentText(), m_other_name));
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
    const int first_difference = static_cast<int>(header.size());
    if (!m_differences.empty())
        for (const auto& info : headStatisticInfos()) header << tr("Δ %1").arg(tr(info.label));
    m_table->setColumnCount(header.size());
    m_table->setHorizontalHeaderLabels(header);
    for (int c = first_difference; c < header.size(); ++c)
        m_table->horizontalHeaderItem(c)->setToolTip(tr("%1 minus this model").arg(m_other_name));
    m_table->setRowCount(static_cast<int>(m_stats->heads.size()));
    for (size_t i = 0; i < m_stats->heads.size(); ++i) {
        const auto& h = m_stats->heads[i];
        auto* name = new QTableWidgetItem(headRefLabel(h.head));
        name->setData(Qt::UserRole, static_cast<int>(i));
        const int row = static_cast<int>(i);
        m_table->setItem(row, 0, name);
        m_table->setItem(row, 1, new NumberItem(double(h.rows), 0));
        for (int s = 0; s < kHeadStatisticCount; ++s) m_table->setItem(row, 2 + s, new NumberItem(h.values[size_t(s)]));
        fillDifferenceColumns(row, h.head, first_difference);
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

// The compared model's statistics minus this model's, as the CLI's "comparison" (empty where the
// other model has no such head).
void HeadStatsPanel::fillDifferenceColumns(int row, const HeadRef& head, int first_column) {
    for (const auto& d : m_differences)
        if (d.head == head)
            for (const auto& info : headStatisticInfos())
                m_table->setItem(row, first_column + int(info.id), new NumberItem(d.difference(info.id)));
}

void HeadStatsPanel::refreshCurve() {
    m_curve->clearPlottables();  // graphs and error bars
    m_curve_pane->setVisible(m_importance != nullptr);
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

std::optional<QString> HeadStatsPanel::openResults(const QString& path) {
    HeadLabResults read;
    try {
        read = readHeadLabResults(path.toStdString());
    } catch (const std::exception& e) {
        return QString::fromStdString(e.what());
    }
    if (read.alignment) {
        m_status->setText(tr("%1: alignment scores, shown on the Alignment page").arg(path));
        Q_EMIT alignmentOpened(std::make_shared<const AlignmentReport>(std::move(read.alignment->report)), path,
                               std::make_shared<const ModelInfo>(std::move(read.alignment->model)));
        return std::nullopt;
    }
    HeadsFile file = std::move(*read.heads);
    m_pending_sources.clear();  // the file names its typical sentences by line, not their text
    m_other.reset();
    m_other_name.clear();
    m_left_out.clear();
    setReport(std::make_shared<const HeadStatsReport>(std::move(file.stats)),
              file.importance ? std::make_shared<const ImportanceReport>(std::move(*file.importance)) : nullptr,
              std::make_shared<const ModelInfo>(std::move(file.model)));
    m_status->setText(tr("%1 (read from %2)").arg(m_status->text(), path));
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
