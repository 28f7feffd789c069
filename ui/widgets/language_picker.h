#pragma once
// LanguagePicker: a multilingual model's source and target languages (PackageConfig::languages),
// two searchable lists beside the sentence: type "ger", "deu" or "German" and the matching
// languages are offered. Each language shows its code and name (from QLocale: "deu_Latn  German
// (Latin)") and is kept by its code. Each field is as wide as its longest entry (up to a maximum, beyond which
// the shown text is cut and its tooltip holds it whole). The choice is remembered per model; the picker is hidden
// for a model of one language pair.

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
    // The chosen codes ("" for a model of one language pair).
    QString source() const;
    QString target() const;
    // Chooses by code or token; false (and nothing changes) when the model has no such language.
    bool choose(const QString& source, const QString& target);
    int count() const;  // the languages offered

Q_SIGNALS:
    void changed();  // a language was chosen (not emitted by setModel or choose)

protected:
    void changeEvent(QEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;

private:
    static constexpr int kMinimumCharacters = 14;  // before a model's languages are known
    static constexpr int kMaximumCharacters = 40;  // the widest a field grows (NLLB's longest names fit)
    static constexpr int kLineEditPadding = 2;     // QLineEdit's room around its text (qlineedit_p.h)
    void fill(QComboBox* box);
    void fitToEntries(QComboBox* box);
    void showWholeInTip(QComboBox* box);
    void remember();
    QComboBox* m_source;
    QComboBox* m_target;
    QToolButton* m_swap;
    QString m_model_dir;
    std::vector<LanguageToken> m_languages;
};

}  // namespace attnlab::ui
