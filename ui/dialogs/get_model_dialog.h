#pragma once
// GetModelDialog (File › Get a model…, issue 44): the translation models AttnLab knows by Hugging Face
// name (the shipped catalog, attnlab::parseHubCatalog), searchable by language, pair, family or name,
// each with its size on disk, its licence and whether the shared cache already holds it. "Get and open"
// hands the chosen name to the document (ViewContext::openModel), which downloads it with progress in
// the window (DownloadPanel) and opens it; the dialog closes at once. Its second tab is the Argos Translate
// index (ArgosIndexPanel): packages installed into argos-translate's folder, removed, opened.

#include <attnlab/hub.h>

#include <QDialog>
#include <QStringList>

#include <vector>

class QLabel;
class QLineEdit;
class QPushButton;
class QTableWidget;
class QTabWidget;

namespace attnlab::ui {

class ArgosIndexPanel;
class ViewContext;

// What both tabs' tables share: read-only, one whole row chosen at a time, no row numbers (setUpTable); a row of
// plain cells, the size column to the right (setTableRow); the columns fitted to their text, `stretched` taking
// what is left (fitColumns); the rows a filter left in sight (visibleRowsOf).
void setUpTable(QTableWidget* table, const QStringList& headers);
void setTableRow(QTableWidget* table, int row, const QStringList& cells, int size_column);
void fitColumns(QTableWidget* table, int stretched);
int visibleRowsOf(const QTableWidget* table);

class GetModelDialog : public QDialog {
    Q_OBJECT
public:
    GetModelDialog(ViewContext* context, std::vector<HubCatalogEntry> catalog, QWidget* parent = nullptr);

    // Rows whose name, family, languages or language codes hold every word of `text` (any case).
    void setFilter(const QString& text);
    int visibleRows() const;
    // Selects the row of `repo` (false when the catalog has none or it is filtered out).
    bool select(const QString& repo);
    QString selectedRepo() const;
    QTableWidget* table() const { return m_table; }
    ArgosIndexPanel* argosPanel() const { return m_argos; }
    void showArgos();  // the Argos tab in front
    // The table's columns, in order.
    enum Column { Model, Languages, Family, Size, Licence, InCache, ColumnCount };

    // byteSizeText ("298.0 MB", "2.46 GB"), "≈" before an estimate.
    static QString sizeText(int64_t bytes, bool estimate);

Q_SIGNALS:
    void argosPackagesChanged();  // a package installed or removed: the window's lists follow

private:
    void fill();
    void selectionMoved();
    void getSelected();
    ViewContext* m_context;
    std::vector<HubCatalogEntry> m_catalog;
    QLineEdit* m_filter;
    QTableWidget* m_table;
    QLabel* m_notes;
    QPushButton* m_get;
    QTabWidget* m_tabs;
    ArgosIndexPanel* m_argos;
};

}  // namespace attnlab::ui
