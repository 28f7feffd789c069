#pragma once
// The translation history's window (the sentence row's History… button): a search field, the entries
// newest first (when, model and languages, sentence, translation), Open (or a double click, or Enter)
// to translate an entry again with its model, languages and options, Clear history, and the switch
// that keeps it or not (TranslationHistory::kEnabledKey), with where it is kept.

#include "document/translation_history.h"

#include <QDialog>

class QCheckBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QTreeWidget;

namespace attnlab::ui {

class TranslationHistoryDialog : public QDialog {
    Q_OBJECT
public:
    TranslationHistoryDialog(TranslationHistory* history, QWidget* parent = nullptr);

    QLineEdit* searchField() const { return m_search; }
    QTreeWidget* list() const { return m_list; }
    QPushButton* openButton() const { return m_open; }
    QPushButton* clearButton() const { return m_clear; }
    QCheckBox* keepBox() const { return m_keep; }
    void setNotice(const QString& text);  // a problem with the file, in words (shown above the list)
    // The widest the When and Sentence columns (and the Model column, with its languages) grow, in average
    // characters (a longer entry is cut, whole in its tooltip), so that the translation stays in sight.
    static constexpr int kMostColumnCharacters = 36;
    static constexpr int kMostModelCharacters = 60;

Q_SIGNALS:
    void reopen(const attnlab::ui::HistoryEntry& entry);

protected:
    void showEvent(QShowEvent* event) override;

private:
    void fill();
    bool m_stale = false;  // the history changed while the window was closed
    void openCurrent();
    TranslationHistory* m_history;
    QList<HistoryEntry> m_shown;  // the list's rows, in order
    QLabel* m_notice;
    QLineEdit* m_search;
    QTreeWidget* m_list;
    QPushButton* m_open;
    QPushButton* m_clear;
    QCheckBox* m_keep;
};

}  // namespace attnlab::ui
