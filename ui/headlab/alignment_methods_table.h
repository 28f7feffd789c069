#pragma once
// AlignmentMethodsTable (Heads tab, Alignment page): every alignment method scored on the model's
// examples with gold (attnlab::alignCorpus) — AER, precision and recall, the best marked — with the
// symmetrised methods when the bundled model of the other direction is there. Sortable; a
// double-click on a method the page can draw chooses it there.
#include "document/translation_controller.h"

#include <QWidget>

class QLabel;
class QPushButton;
class QTableWidget;

namespace attnlab::ui {

class AlignmentMethodsTable : public QWidget {
    Q_OBJECT
public:
    explicit AlignmentMethodsTable(QWidget* parent = nullptr);

    void setExampleCount(int with_gold);  // 0: the button is off and says why
    void setReport(AlignmentReportPtr report, const QString& reverse_model);
    // Scores read from a file (Head lab › Open results…: attnlab-cli align --json, whole or merged), shown as a
    // report of the page's own; the status line names the file and the file's `model`, and says so when it is not
    // the `loaded` one (null: none), whose maps a double-click draws.
    void showFile(AlignmentReportPtr report, const QString& path, const ModelInfo& model, const ModelInfo* loaded);
    void showFailure(const QString& message);
    QTableWidget* table() const { return m_table; }
    QString statusText() const;

Q_SIGNALS:
    void scoreRequested();
    void methodChosen(const QString& name);  // an alignmentMethodName

private:
    void fill(const AlignmentReport& report);  // the table, best first in bold
    QString bestText(const AlignmentReport& report) const;
    QPushButton* m_score;
    QLabel* m_status;
    QTableWidget* m_table;
};

}  // namespace attnlab::ui
