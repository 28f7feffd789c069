#pragma once
// GetModelDialog (File › Get a model…, issue 44): the translation models AttnLab knows by Hugging Face
// name (the shipped catalog, attnlab::parseHubCatalog), searchable by language, pair, family or name,
// each with its size on disk, its licence and whether the shared cache already holds it. "Get and open"
// hands the chosen name to the document (ViewContext::openModel), which downloads it with progress in
// the window (DownloadPanel) and opens it; the dialog closes at once.

#include <attnlab/hub.h>

#include <QDialog>

#include <vector>

class QLabel;
class QLineEdit;
class QPushButton;
class QTableWidget;

namespace attnlab::ui {

class ViewContext;

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
    // The table's columns, in order.
    enum Column { Model, Languages, Family, Size, Licence, InCache, ColumnCount };

    // byteSizeText ("298.0 MB", "2.46 GB"), "≈" before an estimate.
    static QString sizeText(int64_t bytes, bool estimate);

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
};

}  // namespace attnlab::ui
