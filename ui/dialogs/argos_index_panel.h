#pragma once
// ArgosIndexPanel: the Argos tab of File › Get a model… (attnlab/argos_index.h): the packages of the Argos
// Translate index (ARGOS_PACKAGE_INDEX) and the installed ones, searchable by language, with size, version and
// licence where known; Install downloads one into argos-translate's packages folder with progress and Cancel,
// Remove deletes an installed one, Open loads it. The index is asked on a thread of its own (HubThread) when
// the panel is first shown (or refresh()); packagesChanged() follows every install and remove, so that the
// window's direction switch lists what is installed now.

#include "document/hub_thread.h"

#include <attnlab/argos_index.h>

#include <QWidget>

#include <vector>

class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QTableWidget;

namespace attnlab::ui {

class ArgosIndexPanel : public QWidget {
    Q_OBJECT
public:
    explicit ArgosIndexPanel(QWidget* parent = nullptr);
    ~ArgosIndexPanel() override;

    // Asks the index again (on the panel's thread); the table shows the installed packages meanwhile.
    void refresh();
    // Rows whose pair, languages or codes match `text` (argosEntryMatches, every word).
    void setFilter(const QString& text);
    int visibleRows() const;
    bool select(const QString& pair);  // "en-de"; false when no visible row has it
    void install();                    // the selected package
    void remove();                     // the selected package, when installed
    void cancel();
    bool busy() const { return m_busy; }
    QTableWidget* table() const { return m_table; }
    QString status() const;  // the line under the table (what happened last, or the download's progress)
    enum Column { Pair, Languages, Version, Size, Licence, Installed, ColumnCount };

Q_SIGNALS:
    void packagesChanged();
    void openRequested(const QString& dir);
    void idle();  // the index arrived, or an install or remove ended (tests wait for it)

protected:
    void showEvent(QShowEvent* event) override;

private:
    void fill();
    void selectionMoved();
    void setBusy(bool busy, const QString& text);
    void finished(const QString& failure, bool cancelled, const QString& done);
    const ArgosPackageEntry* selected() const;
    void runInstall(const ArgosPackageEntry& entry, const HubThread::Flag& cancelled);
    ArgosOptions m_options;
    QString m_options_problem;
    std::vector<ArgosPackageEntry> m_rows;  // the index's entries, then installed packages it lacks
    bool m_asked = false, m_busy = false;
    HubThread m_thread;
    QLabel* m_where;
    QLineEdit* m_filter;
    QTableWidget* m_table;
    QProgressBar* m_progress;
    QLabel* m_status;
    QPushButton *m_install, *m_remove, *m_open, *m_cancel, *m_refresh;
};

}  // namespace attnlab::ui
