#include "dialogs/get_model_dialog.h"

#include "document/view_context.h"

#include <attnlab/hub_progress.h>

#include <QDialogButtonBox>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
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
      m_notes(new QLabel(this)) {
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
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(intro);
    layout->addWidget(m_filter);
    layout->addWidget(m_table, 1);
    layout->addWidget(m_notes);
    layout->addWidget(buttons);
    fill();
    connect(m_filter, &QLineEdit::textChanged, this, &GetModelDialog::setFilter);
    connect(m_table, &QTableWidget::itemSelectionChanged, this, &GetModelDialog::selectionMoved);
    connect(m_table, &QTableWidget::cellDoubleClicked, this, &GetModelDialog::getSelected);
    connect(buttons, &QDialogButtonBox::accepted, this, &GetModelDialog::getSelected);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    resize(980, 560);
    selectionMoved();
}

QString GetModelDialog::sizeText(int64_t bytes, bool estimate) {
    const QString s = QString::fromStdString(byteSizeText(bytes));
    return estimate ? QStringLiteral("≈ ") + s : s;
}

void GetModelDialog::fill() {
    const QStringList headers = {tr("Model"), tr("Languages"), tr("Family"), tr("Size"), tr("Licence"), tr("In cache")};
    m_table->setColumnCount(ColumnCount);
    m_table->setHorizontalHeaderLabels(headers);
    m_table->setRowCount(int(m_catalog.size()));
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->verticalHeader()->setVisible(false);
    for (int r = 0; r < int(m_catalog.size()); ++r) {
        const HubCatalogEntry& e = m_catalog[size_t(r)];
        const bool cached = ViewContext::cachedModel(QString::fromStdString(e.repo)).has_value();
        const QStringList cells = {QString::fromStdString(e.repo),    QString::fromStdString(e.languages),
                                   QString::fromStdString(e.family),  sizeText(e.size_bytes, e.size_is_estimate),
                                   QString::fromStdString(e.licence), cached ? tr("yes") : tr("no")};
        for (int c = 0; c < ColumnCount; ++c) {
            auto* item = new QTableWidgetItem(cells[c]);
            if (c == Size) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            m_table->setItem(r, c, item);
        }
    }
    m_table->resizeColumnsToContents();
    m_table->horizontalHeader()->setSectionResizeMode(Languages, QHeaderView::Stretch);
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

int GetModelDialog::visibleRows() const {
    int n = 0;
    for (int r = 0; r < m_table->rowCount(); ++r) n += !m_table->isRowHidden(r);
    return n;
}

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
