#pragma once
// TranslatePanel: the sentence field (Enter translates), example sentences, beam, alpha and
// maximum length; shows the translation with each word shaded by its probability (and a legend),
// a warning in words when the model's confidence is below its calibrated threshold, the pieces,
// the score and the time taken.

#include "document/translation_history.h"
#include "document/view_context.h"

#include <QKeySequence>
#include <QPointer>
#include <QWidget>

#include <optional>

class QCheckBox;
class QDoubleSpinBox;
class QTimer;
class QComboBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QShortcut;
class QSpinBox;
class QToolButton;

namespace attnlab::ui {

class ConfidenceText;
class LanguagePicker;
class PivotRow;
class TranslationHistoryDialog;

// The models the direction switch offers, as (label, canonical directory): the bundled ones
// ("de → en  (multi30k-de-en)"), then the Argos Translate packages argos-translate installed
// ("en → de  (Argos: translate-en_de-1_0)").
QList<QPair<QString, QString>> bundledModelChoices();
// The pairs no model translates but two chained through a middle language do (attnlab/route.h:
// pivotRoutes over the bundled models and the Argos packages), as (label, the legs' directories):
// "de → fr  via en".
QList<QPair<QString, QStringList>> pivotChoices();
QString pivotLabel(const std::string& from, const std::string& middle, const std::string& to);
// Any model as the direction switch names it: its languages (config.json), when they are known
// (attnlab/unknown_languages.h), and its name: a Hugging Face cache's snapshot by its repository
// (ORG/NAME, hubNameOfSnapshot), any other by its folder's name.
QString modelLabel(const ModelInfo& info);

class TranslatePanel : public QWidget {
    Q_OBJECT
public:
    // Follows the context (the model's examples and direction, every result and failure, the
    // decoding options) and hands it what is typed and chosen here.
    TranslatePanel(ViewContext* context, QWidget* parent = nullptr);

    // Translate as you type: this long after the last keystroke (ViewContext::liveTranslation).
    static constexpr int kLiveDelayMs = 250;

    QString sentence() const;
    void setSentence(const QString& s);
    DecodingOptions options() const;
    void setOptions(const DecodingOptions& options);  // beam, alpha and maximum length
    void setExamples(const QStringList& examples);
    // The direction switch beside the sentence: one entry per bundled model ("de → en"), the one
    // at `current` (a package directory) selected, added as `current_label` when it is none of
    // them (modelLabel); hidden when there are no bundled models.
    void setModels(const QList<QPair<QString, QString>>& label_and_dir, const QString& current,
                   const QString& current_label);
    // The switch listed again from what is installed now (an Argos package installed or removed): the models,
    // then the pivots, the loaded model or pivot selected.
    void refreshModels();
    QStringList directions() const;  // the switch's entries, as shown
    QString currentDirection() const;
    QLineEdit* sentenceEdit() const { return m_sentence; }
    PivotRow* pivotRow() const { return m_pivot; }
    const ConfidenceText* translationView() const { return m_translation; }
    // The warning in words: the low confidence, or a translation that is only the end-of-sentence mark;
    // empty when the last translation was neither.
    QString confidenceWarning() const;
    // The shown translation on the clipboard (the Copy button beside it, kCopyKey anywhere in the window).
    void copyTranslation();
    static QKeySequence copyKey() { return QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_C); }  // Cmd on macOS
    QToolButton* copyButton() const { return m_copy; }
    // The sentence row's own keys, as Help › Keyboard shortcuts lists them: (keys, what they do).
    static QList<QPair<QString, QString>> keyList();
    static QKeySequence translateKey() { return QKeySequence(Qt::CTRL | Qt::Key_Return); }  // and the keypad's
    // What was translated here (the History… button opens it); each result this row asked for is added.
    TranslationHistory* history() const { return m_history; }
    TranslationHistoryDialog* showHistory();  // opened (once), raised
    // An entry translated again: its model loaded first when another is (its languages and options
    // applied once it is), then its sentence.
    void reopen(const HistoryEntry& entry);
    LanguagePicker* languages() const { return m_languages; }  // a multilingual model's (hidden otherwise)
    QString device() const;                 // "auto", "cpu" or "cuda" (offered only when LibTorch sees a GPU)
    void setDevice(const QString& device);  // shown only: the context holds the device (ViewContext::setDevice)
    QComboBox* computeTypes() const { return m_compute; }
    void setComputeType(const QString& compute_type);  // shown only, as setDevice

public Q_SLOTS:
    void showResult(attnlab::ui::ResultPtr result);
    void showError(const QString& message);
    void showProgress(int step, int max_steps);
    void setBusy(bool busy);

Q_SIGNALS:
    void translateRequested(const QString& sentence, const attnlab::DecodingOptions& options);
    void deviceChanged(const QString& device);
    void modelChosen(const QString& package_dir);
    void pivotChosen(const QStringList& package_dirs);  // a pivot's legs, in order

protected:
    void changeEvent(QEvent* event) override;
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void request();
    void typed();    // a keystroke: (re)starts the live timer
    void liveDue();  // the pause after typing: translate what is there, once
    void follow(ViewContext* context);
    void addPivotChoices();
    void present(bool on);
    void showWarning();     // the shown translation's low-confidence warning, if any
    void cutWarning();      // its text cut to the label's width
    void fitWarningSlot();  // its room: one line of the current font
    void showNote(const QString& html, const QString& tooltip = {});
    void remember(const ResultPtr& result);  // into the history
    QStringList loadedModels() const;        // as HistoryEntry::models names them
    void resumeReopening();                  // the entry waiting for its model, once it is loaded
    void applyEntry(const HistoryEntry& entry);
    static constexpr int kWarningPadding = 4;
    QString m_warning_text;   // the warning in full (the label shows it cut to its width)
    QWidget* m_warning_slot;  // the warning's room, kept while a translation is shown
    ViewContext* m_context = nullptr;
    bool m_details_before_presenting = true;  // presenter mode: the detail lines fold away, and come back after
    QWidget* m_options_row;                   // beam, alpha, max length, device, Details
    Confidence m_confidence;                  // the shown translation's
    bool m_only_end_mark = false;             // the shown translation is </s> alone
    QLineEdit* m_sentence;
    QPushButton* m_examples;
    QComboBox* m_direction;
    PivotRow* m_pivot;  // the leg switch and the middle sentence (shown for a pivot)
    LanguagePicker* m_languages;
    QPushButton* m_go;
    QCheckBox* m_live;
    QTimer* m_live_timer;
    QString m_last_requested;
    bool m_model_defaults = false;  // the loaded model set the beam / max length (num_beams)  // what was last sent, so
                                    // a pause does not translate it again
    QSpinBox* m_beam;
    QDoubleSpinBox* m_alpha;
    QSpinBox* m_max_len;
    QComboBox* m_device;
    QComboBox* m_compute;  // float32 | int8 | bfloat16 (those this machine cannot run are disabled, with why)
    ConfidenceText* m_translation;
    QLabel* m_legend;
    QLabel* m_warning;
    QLabel* m_details;
    QToolButton* m_show_details;
    QProgressBar* m_progress;
    QToolButton* m_copy;
    QToolButton* m_show_history;
    TranslationHistory* m_history;
    QString m_history_problem;  // the file could not be read or written: said in the history's window
    QPointer<TranslationHistoryDialog> m_history_dialog;
    std::optional<HistoryEntry> m_reopening;  // waiting for its model
};

}  // namespace attnlab::ui
