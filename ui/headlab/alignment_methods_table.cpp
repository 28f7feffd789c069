#include "headlab/alignment_methods_table.h"

#include "document/numbering.h"
#include "plots/number_item.h"

#include <attnlab/alignment.h>
#include <attnlab/head_lab.h>

#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>

namespace attnlab::ui {

AlignmentMethodsTable::AlignmentMethodsTable(QWidget* parent) : QWidget(parent) {
    m_score = new QPushButton(tr("Score every method on the examples"), this);
    m_score->setToolTip(
        tr("AER, precision and recall of every head, layer, shifted and symmetrised method over the "
           "model's examples that have a gold alignment"));
    m_status = new QLabel(this);
    m_status->setWordWrap(true);
    m_table = new QTableWidget(this);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->verticalHeader()->hide();
    m_table->setMinimumHeight(fontMetrics().height() * 10);  // a header and about eight methods
    m_table->hide();
    connect(m_score, &QPushButton::clicked, this, [this] {
        m_score->setEnabled(false);
        m_status->setText(tr("Scoring every method…"));
        Q_EMIT scoreRequested();
    });
    connect(m_table, &QTableWidget::cellDoubleClicked, this,
            [this](int row, int) { Q_EMIT methodChosen(m_table->item(row, 0)->data(Qt::UserRole).toString()); });
    auto* top = new QHBoxLayout;
    top->addWidget(m_score);
    top->addWidget(m_status, 1);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addLayout(top);
    layout->addWidget(m_table, 1);
    setExampleCount(0);
}

void AlignmentMethodsTable::setExampleCount(int with_gold) {
    m_score->setEnabled(with_gold > 0);
    m_status->setText(with_gold > 0 ? tr("%1 examples with a gold alignment").arg(with_gold)
                                    : tr("The model's examples have no gold alignment to score methods on."));
}

void AlignmentMethodsTable::setReport(AlignmentReportPtr report, const QString& reverse_model) {
    m_score->setEnabled(true);
    fill(*report);
    const int used = report->pairs - int(report->skipped.size());
    QString text = tr("%1 methods over %2 examples").arg(report->methods.size()).arg(used);
    text += reverse_model.isEmpty() ? tr("; no model of the other direction to symmetrise with")
                                    : tr("; symmetrised with %1").arg(QFileInfo(reverse_model).fileName());
    m_status->setText(text + bestText(*report) + tr(". Double-click a method to draw it."));
}

namespace {
// "opus-mt-de-en (de → en)": the package's folder name (a hub name's last part) and its languages.
QString modelLabel(const ModelInfo& model) {
    const QString package = QString::fromStdString(model.package_dir);
    const QString name = QFileInfo(package).fileName();
    return QObject::tr("%1 (%2 → %3)")
        .arg(name.isEmpty() ? package : name, QString::fromStdString(model.config.source_lang),
             QString::fromStdString(model.config.target_lang));
}

// The same package: the same folder once links are resolved (the file may name it otherwise), or the same name.
bool samePackage(const ModelInfo& a, const ModelInfo& b) {
    const QString pa = QString::fromStdString(a.package_dir), pb = QString::fromStdString(b.package_dir);
    const QString ca = QFileInfo(pa).canonicalFilePath(), cb = QFileInfo(pb).canonicalFilePath();
    return !ca.isEmpty() && !cb.isEmpty() ? ca == cb : pa == pb;
}
}  // namespace

void AlignmentMethodsTable::showFile(AlignmentReportPtr report, const QString& path, const ModelInfo& model,
                                     const ModelInfo* loaded) {
    fill(*report);
    const int used = report->pairs - int(report->skipped.size());
    QString text = tr("%1 methods over %2 of %3 pairs of %4, read from %5")
                       .arg(report->methods.size())
                       .arg(used)
                       .arg(report->pairs)
                       .arg(modelLabel(model), path);
    if (report->symmetrised) text += tr("; symmetrised with a model of the other direction");
    text += bestText(*report) + tr(". Double-click a method to draw it.");
    if (!loaded)
        text += tr(" No model is loaded to draw with.");
    else if (!samePackage(model, *loaded))
        text +=
            tr(" Not the loaded model (%1): a double-click draws the loaded model's maps.").arg(modelLabel(*loaded));
    m_status->setText(text);
}

QString AlignmentMethodsTable::bestText(const AlignmentReport& report) const {
    if (report.best < 0) return {};
    return tr("; best: %1, AER %2")
        .arg(alignmentMethodLabel(report.methods[size_t(report.best)].method))
        .arg(report.methods[size_t(report.best)].counts.aer(), 0, 'f', 3);
}

void AlignmentMethodsTable::fill(const AlignmentReport& report) {
    m_table->setSortingEnabled(false);
    m_table->clear();
    m_table->setColumnCount(4);
    m_table->setHorizontalHeaderLabels({tr("method"), tr("AER"), tr("precision"), tr("recall")});
    m_table->setRowCount(int(report.methods.size()));
    for (size_t i = 0; i < report.methods.size(); ++i) {
        const auto& m = report.methods[i];
        const QString name = QString::fromStdString(alignmentMethodName(m.method));
        const QString label = alignmentMethodLabel(m.method);  // layers and heads counted from 1
        const bool best = int(i) == report.best;
        auto* item = new QTableWidgetItem(best ? tr("%1 (best)").arg(label) : label);
        item->setData(Qt::UserRole, name);
        item->setToolTip(tr("attnlab-cli align --method %1 (counted from 0)").arg(name));
        const int row = int(i);
        m_table->setItem(row, 0, item);
        m_table->setItem(row, 1, new NumberItem(m.counts.aer()));
        m_table->setItem(row, 2, new NumberItem(m.counts.precision()));
        m_table->setItem(row, 3, new NumberItem(m.counts.recall()));
        if (!best) continue;
        for (int c = 0; c < 4; ++c) {
            QFont f = m_table->item(row, c)->font();
            f.setBold(true);
            m_table->item(row, c)->setFont(f);
        }
    }
    m_table->setSortingEnabled(true);
    m_table->sortByColumn(1, Qt::AscendingOrder);  // lowest AER first
    m_table->resizeColumnsToContents();
    m_table->show();
}

void AlignmentMethodsTable::showFailure(const QString& message) {
    if (m_score->isEnabled()) return;  // not scoring: the failure is the single pair's, shown above
    m_score->setEnabled(true);
    m_status->setText(tr("Cannot score the methods: %1").arg(message));
}

QString AlignmentMethodsTable::statusText() const { return m_status->text(); }

}  // namespace attnlab::ui
