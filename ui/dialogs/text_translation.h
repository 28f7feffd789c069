#pragma once
// TextTranslationDialog (File › Translate a text…): a whole text, opened from a file or pasted, split into
// sentences (attnlab/sentences.h) and translated on the translation controller's thread in batches
// (ViewContext::translateText), with a progress bar and Cancel (it stops within the decoding step running;
// what was translated stays). Each sentence's row, clicked, shows that sentence in the main window as if it
// had been typed (ViewContext::translateSentence: the translation comes from the controller's cache, every
// view follows). The whole translation is copied or saved (saveBytes; the save dialog asks before it
// replaces a file). For a multilingual model the text's language is detected (attnlab/language_detect.h) and
// chosen as the source, or the note says why not.
#include "document/view_context.h"

#include <QDialog>
#include <QStringList>

#include <optional>
#include <vector>

class QLabel;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QTableWidget;

namespace attnlab::ui {

class TextTranslationDialog : public QDialog {
    Q_OBJECT
public:
    explicit TextTranslationDialog(ViewContext* context, QWidget* parent = nullptr);
    // The window's one such dialog (made on first use), shown and raised: File › Translate a text… and the
    // sentence row's button open the same.
    static TextTranslationDialog* showFor(ViewContext* context, QWidget* window);

    // The text to translate: read from `path` (UTF-8, at most kMaxTextFileBytes), or pasted.
    [[nodiscard]] std::optional<QString> openFile(const QString& path);
    void setText(const QString& text);
    // Splits the text and asks for its translation; the problem (an empty or non-text input, no model), or
    // nothing when asked. More than kMaxTextSentences sentences: the first that many, the note says so.
    [[nodiscard]] std::optional<QString> translate();
    void cancel();
    bool running() const { return m_waiting > 0; }

    int sentenceCount() const { return int(m_sentences.size()); }
    QString sentence(int i) const { return m_sentences.at(size_t(i)); }
    QString translationOf(int i) const { return m_translations.at(size_t(i)); }  // empty until it comes
    // The whole translation: sentences of a line joined by a space, lines and paragraphs kept.
    QString translation() const;
    void copyTranslation() const;
    [[nodiscard]] std::optional<QString> saveTranslation(const QString& path) const;
    // The main window shows sentence `i` as if it had been typed.
    void showSentence(int i);
    QString note() const;
    QTableWidget* table() const { return m_table; }
    QProgressBar* progress() const { return m_progress; }

private:
    void follow();
    void answered(int index, const QString& translation, const QString& tooltip);
    void ended(int translated, int total, bool cancelled, const QString& problem);
    void chooseDetectedSource(const QString& text);
    void setNote(const QString& note);
    void updateButtons();
    ViewContext* m_context;
    QPlainTextEdit* m_text;
    QTableWidget* m_table;
    QProgressBar* m_progress;
    QLabel* m_note;
    QPushButton* m_translate;
    QPushButton* m_cancel;
    QPushButton* m_copy;
    QPushButton* m_save;
    QString m_source_text;          // the text the sentences are of
    QStringList m_sentences;        // as translated, in order
    std::vector<size_t> m_offsets;  // each one's byte offset in m_source_text (UTF-8)
    std::vector<size_t> m_ends;     // and one past its end
    std::vector<QString> m_translations;
    QStringList m_notes;   // the limit, the language, the end
    QString m_stopped_by;  // why the running text stopped when Cancel did not stop it (a model loaded)
    int m_answered = 0;
    int m_waiting = 0;  // requests whose end has not come (a cancelled one ends after a new one may start)
};

}  // namespace attnlab::ui
