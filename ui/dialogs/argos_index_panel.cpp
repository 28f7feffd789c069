#include "dialogs/argos_index_panel.h"

#include "dialogs/get_model_dialog.h"

#include <attnlab/errors.h>
#include <attnlab/hub_progress.h>

#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QMetaObject>
#include <QProgressBar>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <filesystem>

namespace attnlab::ui {

namespace {
QString q(const std::string& s) { return QString::fromStdString(s); }

// What the Installed column says: the version on disk, and whether the index has a newer one.
QString installedText(const ArgosPackageEntry& e) {
    if (e.installed_dir.empty()) return {};
    const QString version = e.installed_version.empty() ? QObject::tr("unknown version") : q(e.installed_version);
    if (e.links.empty() && e.package_version.empty()) return QObject::tr("yes, %1 (not in the index)").arg(version);
    return e.installed_version == e.package_version ? QObject::tr("yes") : QObject::tr("yes, %1").arg(version);
}

// The index's entries marked with what is installed now, then the installed packages the index lacks.
std::vector<ArgosPackageEntry> withInstalled(std::vector<ArgosPackageEntry> rows, const ArgosOptions& options) {
    rows.erase(std::remove_if(rows.begin(), rows.end(),
                              [](const ArgosPackageEntry& e) { return e.links.empty() && e.package_version.empty(); }),
               rows.end());  // rows of an earlier pass that came from the folder alone
    const auto installed = installedArgosPackagesList(options);
    for (ArgosPackageEntry& e : rows) {
        e.installed_dir.clear();
        e.installed_version.clear();
        for (const ArgosInstalledPackage& p : installed)
            if (p.from_code == e.from_code && p.to_code == e.to_code)
                e.installed_dir = p.dir, e.installed_version = p.package_version;
    }
    for (const ArgosInstalledPackage& p : installed) {
        const bool listed =
            std::any_of(rows.begin(), rows.end(), [&](const auto& e) { return e.installed_dir == p.dir; });
        if (listed) continue;
        ArgosPackageEntry e;
        e.code = p.folder, e.from_code = p.from_code, e.to_code = p.to_code;
        e.from_name = p.from_name, e.to_name = p.to_name;
        e.installed_dir = p.dir, e.installed_version = p.package_version;
        rows.push_back(e);
    }
    return rows;
}
}  // namespace

ArgosIndexPanel::ArgosIndexPanel(QWidget* parent)
    : QWidget(parent),
      m_where(new QLabel(this)),
      m_filter(new QLineEdit(this)),
      m_table(new QTableWidget(this)),
      m_progress(new QProgressBar(this)),
      m_status(new QLabel(this)) {
    try {
        m_options = argosOptionsFromEnvironment();
    } catch (const Error& e) {
        m_options_problem = QString::fromUtf8(e.what());
    }
    m_where->setWordWrap(true);
    m_where->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_where->setText(tr("Argos Translate's packages from its index <tt>%1</tt> (ARGOS_PACKAGE_INDEX), installed into "
                        "<tt>%2</tt> (ARGOS_PACKAGES_DIR): argos-translate, LibreTranslate and AttnLab see the same "
                        "packages.")
                         .arg(q(m_options.index_url).toHtmlEscaped(), q(m_options.packages_dir).toHtmlEscaped()));
    m_filter->setPlaceholderText(tr("Filter: a language (German, de) or a pair (en-de)"));
    m_filter->setClearButtonEnabled(true);
    m_status->setWordWrap(true);
    m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_progress->setVisible(false);
    m_install = new QPushButton(tr("&Install"), this);
    m_remove = new QPushButton(tr("&Remove"), this);
    m_open = new QPushButton(tr("&Open"), this);
    m_cancel = new QPushButton(tr("Cancel"), this);
    m_refresh = new QPushButton(tr("Ask the index again"), this);
    auto* buttons = new QHBoxLayout;
    for (QPushButton* b : {m_install, m_remove, m_open, m_cancel}) buttons->addWidget(b);
    buttons->addStretch(1);
    buttons->addWidget(m_refresh);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_where);
    layout->addWidget(m_filter);
    layout->addWidget(m_table, 1);
    layout->addWidget(m_progress);
    layout->addWidget(m_status);
    layout->addLayout(buttons);
    setUpTable(m_table, {tr("Pair"), tr("Languages"), tr("Version"), tr("Size"), tr("Licence"), tr("Installed")});
    connect(m_filter, &QLineEdit::textChanged, this, &ArgosIndexPanel::setFilter);
    connect(m_table, &QTableWidget::itemSelectionChanged, this, &ArgosIndexPanel::selectionMoved);
    connect(m_install, &QPushButton::clicked, this, &ArgosIndexPanel::install);
    connect(m_remove, &QPushButton::clicked, this, [this] {
        const ArgosPackageEntry* e = selected();
        if (e && QMessageBox::question(this, tr("Remove an Argos package"),
                                       tr("Remove %1 (%2)? argos-translate and LibreTranslate lose it too.")
                                           .arg(q(e->installed_dir), q(e->pair()))) == QMessageBox::Yes)
            remove();
    });
    connect(m_open, &QPushButton::clicked, this, [this] {
        if (const ArgosPackageEntry* e = selected(); e && !e->installed_dir.empty())
            Q_EMIT openRequested(q(e->installed_dir));
    });
    connect(m_cancel, &QPushButton::clicked, this, &ArgosIndexPanel::cancel);
    connect(m_refresh, &QPushButton::clicked, this, &ArgosIndexPanel::refresh);
    m_rows = withInstalled({}, m_options);
    fill();
    setBusy(false, m_options_problem);
}

ArgosIndexPanel::~ArgosIndexPanel() { m_thread.stop(); }

void ArgosIndexPanel::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    if (!m_asked) refresh();
}

void ArgosIndexPanel::refresh() {
    if (m_busy || !m_options_problem.isEmpty()) return;
    m_asked = true;
    setBusy(true, tr("Asking the index %1…").arg(q(m_options.index_url)));
    m_thread.start([this, options = m_options](const HubThread::Flag& cancelled) {
        std::vector<ArgosPackageEntry> index;
        bool was_cancelled = false;
        const QString message = HubThread::failureOf(
            [&] { index = fetchArgosIndex(options, [cancelled] { return !*cancelled; }); }, was_cancelled);
        QMetaObject::invokeMethod(
            this,
            [this, index, message, was_cancelled, cancelled] {
                if (!m_thread.isCurrent(cancelled)) return;
                if (message.isEmpty() && !was_cancelled) m_rows = withInstalled(index, m_options);
                fill();
                finished(message, was_cancelled,
                         index.size() == 1 ? tr("1 package in the index.")
                                           : tr("%1 packages in the index.").arg(index.size()));
            },
            Qt::QueuedConnection);
    });
}

void ArgosIndexPanel::install() {
    const ArgosPackageEntry* e = selected();
    if (!e || m_busy || e->links.empty()) return;
    setBusy(true, tr("Getting %1 %2…").arg(q(e->code), q(e->package_version)));
    m_progress->setRange(0, 0);
    m_thread.start([this, entry = *e](const HubThread::Flag& cancelled) { runInstall(entry, cancelled); });
}

// On the panel's thread: the download's progress and its end are queued to the GUI thread.
void ArgosIndexPanel::runInstall(const ArgosPackageEntry& entry, const HubThread::Flag& cancelled) {
    const auto progress = [this, cancelled](const HubProgress& p) {
        QMetaObject::invokeMethod(
            this,
            [this, p, cancelled] {
                if (!m_thread.isCurrent(cancelled) || !m_busy) return;
                if (p.total > 0) m_progress->setRange(0, 1000), m_progress->setValue(int(1000 * p.done / p.total));
                m_status->setText(p.notice.empty() ? q(describeHubProgress(p)) : q(p.notice));
            },
            Qt::QueuedConnection);
        return !*cancelled;
    };
    std::string dir;
    bool was_cancelled = false;
    const QString message = HubThread::failureOf(
        [&] { dir = installArgosPackage(entry, m_options, progress, !entry.installed_dir.empty()); }, was_cancelled);
    QMetaObject::invokeMethod(
        this,
        [this, dir, message, was_cancelled, cancelled, pair = entry.pair()] {
            if (!m_thread.isCurrent(cancelled)) return;
            m_rows = withInstalled(m_rows, m_options);
            fill();
            finished(message, was_cancelled, tr("Installed %1 into %2.").arg(q(pair), q(dir)));
            if (message.isEmpty() && !was_cancelled) Q_EMIT packagesChanged();
        },
        Qt::QueuedConnection);
}

void ArgosIndexPanel::remove() {
    const ArgosPackageEntry* e = selected();
    if (!e || m_busy || e->installed_dir.empty()) return;
    const QString folder = q(std::filesystem::path(e->installed_dir).filename().string());
    QString message;
    QString removed;
    try {
        removed = q(removeArgosPackage(folder.toStdString(), m_options));
    } catch (const Error& error) {
        message = QString::fromUtf8(error.what());
    }
    m_rows = withInstalled(m_rows, m_options);
    fill();
    finished(message, false, tr("Removed %1.").arg(removed));
    if (message.isEmpty()) Q_EMIT packagesChanged();
}

void ArgosIndexPanel::cancel() { m_thread.cancel(); }

void ArgosIndexPanel::finished(const QString& failure, bool cancelled, const QString& done) {
    setBusy(false, cancelled           ? tr("Cancelled; what was downloaded is kept, and the next Install resumes it.")
                   : failure.isEmpty() ? done
                                       : failure);
    Q_EMIT idle();
}

void ArgosIndexPanel::setBusy(bool busy, const QString& text) {
    m_busy = busy;
    m_progress->setVisible(busy);
    if (busy) m_progress->setRange(0, 0);
    m_cancel->setEnabled(busy);
    m_refresh->setEnabled(!busy && m_options_problem.isEmpty());
    m_status->setText(text);
    selectionMoved();
}

QString ArgosIndexPanel::status() const { return m_status->text(); }

void ArgosIndexPanel::fill() {
    const QString keep = selected() ? q(selected()->pair()) : QString();
    m_table->setRowCount(int(m_rows.size()));
    for (int r = 0; r < int(m_rows.size()); ++r) {
        const ArgosPackageEntry& e = m_rows[size_t(r)];
        const QStringList cells = {q(e.pair()),
                                   tr("%1 → %2").arg(q(e.from_name.empty() ? e.from_code : e.from_name),
                                                     q(e.to_name.empty() ? e.to_code : e.to_name)),
                                   q(e.package_version),
                                   e.size >= 0 ? q(byteSizeText(e.size)) : tr("not said"),
                                   e.licence.empty() ? tr("not said") : q(e.licence),
                                   installedText(e)};
        setTableRow(m_table, r, cells, Size);
    }
    fitColumns(m_table, Languages);
    setFilter(m_filter->text());
    if (!keep.isEmpty()) select(keep);
}

void ArgosIndexPanel::setFilter(const QString& text) {
    if (m_filter->text() != text) m_filter->setText(text);  // (from a test or a caller)
    const QStringList words = text.split(QLatin1Char(' '), Qt::SkipEmptyParts);
    for (int r = 0; r < int(m_rows.size()); ++r) {
        bool match = true;
        for (const QString& w : words) match = match && argosEntryMatches(m_rows[size_t(r)], w.toStdString());
        m_table->setRowHidden(r, !match);
    }
    selectionMoved();
}

int ArgosIndexPanel::visibleRows() const { return visibleRowsOf(m_table); }

bool ArgosIndexPanel::select(const QString& pair) {
    const QList<QTableWidgetItem*> found = m_table->findItems(pair, Qt::MatchExactly);
    const auto it = std::find_if(found.begin(), found.end(), [this](const QTableWidgetItem* item) {
        return item->column() == Pair && !m_table->isRowHidden(item->row());
    });
    if (it != found.end()) m_table->selectRow((*it)->row());
    return it != found.end();
}

const ArgosPackageEntry* ArgosIndexPanel::selected() const {
    const auto rows = m_table->selectionModel()->selectedRows();
    if (rows.isEmpty() || m_table->isRowHidden(rows.first().row()) || rows.first().row() >= int(m_rows.size()))
        return nullptr;
    return &m_rows[size_t(rows.first().row())];
}

void ArgosIndexPanel::selectionMoved() {
    const ArgosPackageEntry* e = selected();
    const bool installed = e && !e->installed_dir.empty();
    m_install->setText(installed ? tr("Re&install") : tr("&Install"));
    m_install->setEnabled(e && !m_busy && !e->links.empty());
    m_remove->setEnabled(installed && !m_busy);
    m_open->setEnabled(installed && !m_busy);
}

}  // namespace attnlab::ui
