#include "dialogs/get_model_dialog.h"

#include "dialogs/argos_index_panel.h"
#include "document/view_context.h"

#include <attnlab/hub_progress.h>

#include <QDialogButtonBox>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QTabWidget>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>

namespace attnlab::ui {

namespace {
QString joined(const std::vector<std::string>& codes) {
    QStringList out;
    for (const auto& c : codes) out << QString::fromStdString(c);
    return out.join(QLatin1Char(' '));
}

// What a filter word is matched against: the name, family, languages and codes of both sides.
QString searchable(const HubCatalogEntry& e) {
    return QStringLiteral("%1 %2 %3 %4-%5 %4 %5")
        .arg(QString::fromStdString(e.repo), QString::fromStdString(e.family), QString::fromStdString(e.languages),
             joined(e.source), joined(e.target))
        .toLower();
}
}  // namespace

GetModelDialog::GetModelDialog(ViewContext* context, std::vector<HubCatalogEntry> catalog, QWidget* parent)
    : QDialog(parent),
      m_context(context),
      m_catalog(std::move(catalog)),
      m_filter(new QLineEdit(this)),
      m_table(new QTableWidget(this)),
      m_notes(new QLabel(this)),
      m_tabs(new QTabWidget(this)),
      m_argos(new ArgosIndexPanel(this)) {
    setWindowTitle(tr("Get a model"));
    m_filter->setPlaceholderText(tr("Filter: a language (German, de), a pair (de-en), a family (NLLB) or a name"));
    m_filter->setClearButtonEnabled(true);
    m_notes->setWordWrap(true);
    m_notes->setTextInteractionFlags(Qt::TextSelectableByMouse);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    m_get = buttons->addButton(tr("&Get and open"), QDialogButtonBox::AcceptRole);
    m_get->setDefault(true);
    auto* intro = new QLabel(tr("Translation models on Hugging Face that AttnLab opens. They are kept in the cache "
                                "transformers and the other tools share, so a model got once opens without the "
                                "network, here and there."),
                             this);
    intro->setWordWrap(true);
    auto* hub = new QWidget(this);
    auto* hub_layout = new QVBoxLayout(hub);
    hub_layout->setContentsMargins(0, 0, 0, 0);
    hub_layout->addWidget(intro);
    hub_layout->addWidget(m_filter);
    hub_layout->addWidget(m_table, 1);
    hub_layout->addWidget(m_notes);
    m_tabs->addTab(hub, tr("&Hugging Face"));
    m_tabs->addTab(m_argos, tr("&Argos Translate"));
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(m_tabs, 1);
    layout->addWidget(buttons);
    connect(m_tabs, &QTabWidget::currentChanged, this, [this](int tab) { m_get->setVisible(tab == 0); });
    connect(m_argos, &ArgosIndexPanel::packagesChanged, this, &GetModelDialog::argosPackagesChanged);
    connect(m_argos, &ArgosIndexPanel::openRequested, this, [this](const QString& dir) {
        accept();
        m_context->loadModel(dir);
    });
    fill();
    connect(m_filter, &QLineEdit::textChanged, this, &GetModelDialog::setFilter);
    connect(m_table, &QTableWidget::itemSelectionChanged, this, &GetModelDialog::selectionMoved);
    connect(m_table, &QTableWidget::cellDoubleClicked, this, &GetModelDialog::getSelected);
    connect(buttons, &QDialogButtonBox::accepted, this, &GetModelDialog::getSelected);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    resize(980, 560);
    selectionMoved();
}

void GetModelDialog::showArgos() { m_tabs->setCurrentWidget(m_argos); }

QString GetModelDialog::sizeText(int64_t bytes, bool estimate) {
    const QString s = QString::fromStdString(byteSizeText(bytes));
    return estimate ? QStringLiteral("≈ ") + s : s;
}

void GetModelDialog::fill() {
    setUpTable(m_table, {tr("Model"), tr("Languages"), tr("Family"), tr("Size"), tr("Licence"), tr("In cache")});
    m_table->setRowCount(int(m_catalog.size()));
    for (int r = 0; r < int(m_catalog.size()); ++r) {
        const HubCatalogEntry& e = m_catalog[size_t(r)];
        const bool cached = ViewContext::cachedModel(QString::fromStdString(e.repo)).has_value();
        const QStringList cells = {QString::fromStdString(e.repo),    QString::fromStdString(e.languages),
                                   QString::fromStdString(e.family),  sizeText(e.size_bytes, e.size_is_estimate),
                                   QString::fromStdString(e.licence), cached ? tr("yes") : tr("no")};
        setTableRow(m_table, r, cells, Size);
    }
    fitColumns(m_table, Languages);
}

void GetModelDialog::setFilter(const QString& text) {
    if (m_filter->text() != text) m_filter->setText(text);  // (from a test or a caller)
    const QStringList words = text.toLower().split(QLatin1Char(' '), Qt::SkipEmptyParts);
    for (int r = 0; r < int(m_catalog.size()); ++r) {
        const QString hay = searchable(m_catalog[size_t(r)]);
        bool match = true;
        for (const QString& w : words) match = match && hay.contains(w);
        m_table->setRowHidden(r, !match);
    }
    selectionMoved();
}

void setUpTable(QTableWidget* table, const QStringList& headers) {
    table->setColumnCount(int(headers.size()));
    table->setHorizontalHeaderLabels(headers);
    table->setSelectionBehavior(QAbstractItemView::SelectRows);
    table->setSelectionMode(QAbstractItemView::SingleSelection);
    table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table->verticalHeader()->setVisible(false);
}

void setTableRow(QTableWidget* table, int row, const QStringList& cells, int size_column) {
    for (int c = 0; c < int(cells.size()); ++c) {
        auto* item = new QTableWidgetItem(cells[c]);
        if (c == size_column) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        table->setItem(row, c, item);
    }
}

void fitColumns(QTableWidget* table, int stretched) {
    table->resizeColumnsToContents();
    table->horizontalHeader()->setSectionResizeMode(stretched, QHeaderView::Stretch);
}

int visibleRowsOf(const QTableWidget* table) {
    int n = 0;
    for (int r = 0; r < table->rowCount(); ++r) n += !table->isRowHidden(r);
    return n;
}

int GetModelDialog::visibleRows() const { return visibleRowsOf(m_table); }

bool GetModelDialog::select(const QString& repo) {
    for (int r = 0; r < int(m_catalog.size()); ++r)
        if (QString::fromStdString(m_catalog[size_t(r)].repo) == repo && !m_table->isRowHidden(r)) {
            m_table->selectRow(r);
            return true;
        }
    return false;
}

QString GetModelDialog::selectedRepo() const {
    const auto rows = m_table->selectionModel()->selectedRows();
    if (rows.isEmpty() || m_table->isRowHidden(rows.first().row())) return {};
    return QString::fromStdString(m_catalog[size_t(rows.first().row())].repo);
}

void GetModelDialog::selectionMoved() {
    const QString repo = selectedRepo();
    m_get->setEnabled(!repo.isEmpty() && !m_context->fetching());
    if (repo.isEmpty()) {
        m_notes->setText(visibleRows() == 0 ? tr("No model matches the filter.") : tr("Choose a model."));
        return;
    }
    const auto it = std::find_if(m_catalog.begin(), m_catalog.end(),
                                 [&](const HubCatalogEntry& e) { return QString::fromStdString(e.repo) == repo; });
    m_notes->setText(tr("<b>%1</b> — %2, licence %3. %4")
                         .arg(repo.toHtmlEscaped(), sizeText(it->size_bytes, it->size_is_estimate),
                              QString::fromStdString(it->licence).toHtmlEscaped(),
                              QString::fromStdString(it->notes).toHtmlEscaped()));
}

void GetModelDialog::getSelected() {
    const QString repo = selectedRepo();
    if (repo.isEmpty() || m_context->fetching()) return;
    accept();
    m_context->openModel(repo);
}

}  // namespace attnlab::ui
