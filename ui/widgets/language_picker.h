#pragma once
// LanguagePicker: a multilingual model's source and target languages (PackageConfig::languages),
// two searchable lists beside the sentence: type "ger", "deu" or "German" and the matching
// languages are offered. Each language shows its code and name (from QLocale: "deu_Latn  German
// (Latin)") and is kept by its code. The source may be "Detect language": the sentence's language, detected
// by CLD2 and matched to the model's codes; the entry itself says what was found ("Detect → German (Latin)"),
// its tooltip why nothing was. Each field
// is as wide as its longest entry (up to a maximum, beyond which the shown text is cut and its tooltip holds it whole).
// The choice is remembered per model; the picker is hidden for a model of one language pair.

#include <attnlab/config.h>

#include <QWidget>

class QComboBox;
class QToolButton;

namespace attnlab::ui {

// A language code as a person reads it: "en" -> "English", "eng_Latn" -> "English (Latin)",
// "de_DE" -> "German (Germany)", "__fr__" -> "French"; the code itself where Qt knows no name.
QString languageName(const QString& code);

class LanguagePicker : public QWidget {
    Q_OBJECT
public:
    explicit LanguagePicker(QWidget* parent = nullptr);

    // The model's languages and its defaults; the choice remembered for `model_dir` wins where it
    // is one of them. Hidden when `config` has no languages.
    void setModel(const PackageConfig& config, const QString& model_dir);
    // The chosen codes ("" for a model of one language pair). With "Detect language" chosen as the source, the
    // language detected in the last text given to detectFrom, or the model's default source when it could not
    // be told (detectionNote says why).
    QString source() const;
    QString target() const;
    // Chooses by code or token (kDetect: "Detect language" as the source); false (and nothing changes) when
    // the model has no such language. Detection stays chosen when `source` is the language it found.
    bool choose(const QString& source, const QString& target);
    static constexpr char kDetect[] = "auto";
    // The widest a field grows: most names fit ("eng_Latn  English (Latin)"), NLLB's longest ("zho_Hant  Chinese
    // (Traditional Han)") are cut, whole in the tooltip, so that the sentence keeps its room at 1280 wide.
    static constexpr int kMaximumCharacters = 30;
    bool detecting() const;
    // The sentence typed: with Detect chosen, its language (attnlab/language_detect.h) becomes the source,
    // `detected` says so when the source changes.
    void detectFrom(const QString& text);
    // What detection found, or why it found nothing and which language is used instead (the note's tooltip).
    QString detectionNote() const { return m_note_text; }
    int count() const;  // the languages offered

Q_SIGNALS:
    void changed();   // a language was chosen (not emitted by setModel or choose)
    void detected();  // the detected source language changed (detectFrom)

protected:
    void changeEvent(QEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;

private:
    static constexpr int kMinimumCharacters = 14;  // before a model's languages are known
    static constexpr int kLineEditPadding = 2;     // QLineEdit's room around its text (qlineedit_p.h)
    void fill(QComboBox* box);
    void fitToEntries(QComboBox* box);
    void showWholeInTip(QComboBox* box);
    void detect();  // m_text's language, shown in the Detect entry
    void showDetection(const QString& shown);
    int rowOf(QComboBox* box, const QString& code_or_token) const;
    void remember();
    QComboBox* m_source;
    QComboBox* m_target;
    QToolButton* m_swap;
    QString m_model_dir;
    QString m_note_text;  // Detect's finding or why it found nothing, in full (the source's tooltip)
    QString m_text;       // the last text given to detectFrom
    QString m_detected;   // its language among the model's, or empty
    QString m_default_source;
    std::vector<LanguageToken> m_languages;
};

}  // namespace attnlab::ui
