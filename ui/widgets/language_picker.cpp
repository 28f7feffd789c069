#include "widgets/language_picker.h"

#include <attnlab/language_detect.h>

#include <QComboBox>
#include <QCompleter>
#include <QEvent>
#include <QHBoxLayout>
#include <QLineEdit>
#include <QLocale>
#include <QSettings>
#include <QSignalBlocker>
#include <QStyle>
#include <QStyleOptionComboBox>
#include <QToolButton>

#include <algorithm>

namespace attnlab::ui {

namespace {
constexpr const char* kSettingsGroup = "languages";  // QSettings: model directory -> "source\ttarget"

// The code without M2M100's "__" around it, split into its language and the script or territory
// after "_" ("eng_Latn", "de_DE").
std::pair<QString, QString> splitCode(QString code) {
    if (code.startsWith("__") && code.endsWith("__") && code.size() > 4) code = code.mid(2, code.size() - 4);
    const qsizetype cut = code.indexOf('_');
    return cut < 0 ? std::make_pair(code, QString()) : std::make_pair(code.left(cut), code.mid(cut + 1));
}

QString settingsKey(const QString& model_dir) {
    QString key = model_dir;
    key.replace('/', '|');  // one key, not a path of groups
    return QString::fromLatin1(kSettingsGroup) + "/" + key;
}
}  // namespace

QString languageName(const QString& code) {
    const auto [language, rest] = splitCode(code);
    const QLocale::Language l = QLocale::codeToLanguage(language, QLocale::AnyLanguageCode);
    if (l == QLocale::AnyLanguage || l == QLocale::C) return code;
    QString name = QLocale::languageToString(l);
    if (rest.size() == 4) {  // a script: NLLB's "Latn", "Cyrl"
        const QLocale::Script s = QLocale::codeToScript(rest);
        if (s != QLocale::AnyScript) name += " (" + QLocale::scriptToString(s) + ")";
    } else if (rest.size() == 2 && rest != "XX") {  // a territory: mBART's "DE", "IN"
        const QLocale::Territory t = QLocale::codeToTerritory(rest);
        if (t != QLocale::AnyTerritory) name += " (" + QLocale::territoryToString(t) + ")";
    }
    return name;
}

LanguagePicker::LanguagePicker(QWidget* parent) : QWidget(parent) {
    m_source = new QComboBox(this);
    m_target = new QComboBox(this);
    m_swap = new QToolButton(this);
    m_swap->setText(QStringLiteral("⇄"));
    m_swap->setToolTip(tr("Swap the languages"));
    for (QComboBox* box : {m_source, m_target}) {
        box->setEditable(true);  // searchable: the completer matches any part of "German (deu_Latn)"
        box->setInsertPolicy(QComboBox::NoInsert);
        box->completer()->setFilterMode(Qt::MatchContains);
        box->completer()->setCompletionMode(QCompleter::PopupCompletion);
        // Sized to its longest entry by fitToEntries (not to a number of characters: "English (Lati").
        box->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
        box->setMinimumContentsLength(kMinimumCharacters);
        connect(box, &QComboBox::currentIndexChanged, this, [this, box] {
            box->lineEdit()->setCursorPosition(0);  // the code, not the name's end
            showWholeInTip(box);
            if (box == m_source) detect();
            remember();
            Q_EMIT changed();
        });
    }
    connect(m_swap, &QToolButton::clicked, this, [this] {
        if (choose(target(), source())) {
            remember();
            Q_EMIT changed();
        }
    });
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_source);
    layout->addWidget(m_swap);
    layout->addWidget(m_target);
    setVisible(false);
}

// Wide enough for its longest entry, up to kMaximumCharacters average characters (beyond, the shown text
// is cut and its tooltip holds it whole). The field never shrinks below that in the sentence row.
void LanguagePicker::fitToEntries(QComboBox* box) {
    const QFontMetrics metrics = box->lineEdit()->fontMetrics();
    int longest = 0;
    for (int i = 0; i < box->count(); ++i) longest = std::max(longest, metrics.horizontalAdvance(box->itemText(i)));
    const int most = metrics.averageCharWidth() * kMaximumCharacters;
    const QMargins margins = box->lineEdit()->textMargins();
    // The line edit's own frame and cursor room (2 px each side in Qt's QLineEdit), its text margins.
    const int text = std::min(longest, most) + margins.left() + margins.right() + 2 * kLineEditPadding;
    QStyleOptionComboBox option;
    option.initFrom(box);
    option.editable = true;
    const int width =
        box->style()->sizeFromContents(QStyle::CT_ComboBox, &option, QSize(text, metrics.height()), box).width();
    box->setMinimumWidth(width);
    showWholeInTip(box);
}

// The field's tooltip: what it is for, and its text whole when the field cuts it.
void LanguagePicker::showWholeInTip(QComboBox* box) {
    const QString purpose = box != m_source
                                ? tr("The language to translate into (its token is forced as the first output)")
                            : detecting() ? m_note_text
                                          : tr("The language of the sentence (its token is the source's first)");
    QLineEdit* edit = box->lineEdit();
    const QString text = box->currentText();
    const bool cut = edit->fontMetrics().horizontalAdvance(text) > edit->contentsRect().width() - 2 * kLineEditPadding;
    box->setToolTip(cut && !text.isEmpty() ? text + "\n" + purpose : purpose);
}

void LanguagePicker::changeEvent(QEvent* event) {
    if (event->type() == QEvent::FontChange)
        for (QComboBox* box : {m_source, m_target}) fitToEntries(box);
    QWidget::changeEvent(event);
}

void LanguagePicker::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    for (QComboBox* box : {m_source, m_target}) showWholeInTip(box);
}

void LanguagePicker::fill(QComboBox* box) {
    const QSignalBlocker block(box);
    box->clear();
    if (box == m_source && !m_languages.empty()) box->addItem(tr("Detect language"), QString::fromLatin1(kDetect));
    for (const auto& l : m_languages) {
        const QString code = QString::fromStdString(l.code);
        const QString name = languageName(code);
        // The code first: it is what the field shows when the name does not fit.
        box->addItem(name == code ? code : QStringLiteral("%1  %2").arg(code, name), code);
    }
    fitToEntries(box);
}

void LanguagePicker::setModel(const PackageConfig& config, const QString& model_dir) {
    m_model_dir = model_dir;
    m_languages = config.languages;
    m_default_source = QString::fromStdString(config.source_lang);
    fill(m_source);
    fill(m_target);
    setVisible(!m_languages.empty());
    if (m_languages.empty()) return;
    choose(QString::fromStdString(config.source_lang), QString::fromStdString(config.target_lang));
    const QStringList kept = QSettings().value(settingsKey(model_dir)).toString().split('\t');
    if (kept.size() == 2) choose(kept[0], kept[1]);  // ignored where the model no longer has them
}

int LanguagePicker::rowOf(QComboBox* box, const QString& code_or_token) const {
    if (box == m_source && code_or_token == QLatin1String(kDetect)) return box->findData(code_or_token);
    for (const auto& l : m_languages)
        if (QString::fromStdString(l.code) == code_or_token || QString::fromStdString(l.token) == code_or_token)
            return box->findData(QString::fromStdString(l.code));
    return -1;
}

bool LanguagePicker::choose(const QString& source, const QString& target) {
    const bool keep_detecting = detecting() && !m_detected.isEmpty() && rowOf(m_source, source) >= 0 &&
                                m_source->itemData(rowOf(m_source, source)).toString() == m_detected;
    const int s = keep_detecting ? m_source->currentIndex() : rowOf(m_source, source), t = rowOf(m_target, target);
    if (s < 0 || t < 0) return false;
    const QSignalBlocker a(m_source), b(m_target);
    m_source->setCurrentIndex(s);
    m_target->setCurrentIndex(t);
    for (QComboBox* box : {m_source, m_target}) {
        box->lineEdit()->setCursorPosition(0);
        showWholeInTip(box);
    }
    detect();
    return true;
}

bool LanguagePicker::detecting() const {
    return !m_languages.empty() && m_source->currentData().toString() == QLatin1String(kDetect);
}

void LanguagePicker::detectFrom(const QString& text) {
    m_text = text;
    if (!detecting()) return;
    const QString before = source();
    detect();
    if (source() != before) Q_EMIT detected();
}

// What Detect found, shown as the Detect entry's own text ("Detect → German (Latin)"; "Detect → ? English
// (Latin)" when it cannot tell), the whole finding or the reason in the field's tooltip.
void LanguagePicker::detect() {
    m_detected.clear();
    m_note_text.clear();
    if (!detecting()) {
        showDetection(tr("Detect language"));
        return;
    }
    std::vector<std::string> codes;
    for (const auto& l : m_languages) codes.push_back(l.code);
    const DetectedLanguage found = detectLanguage(m_text.toStdString());
    const LanguageChoice choice = modelLanguageFor(found, codes);
    m_detected = QString::fromStdString(choice.code);
    if (!m_detected.isEmpty()) {
        m_note_text = tr("Detected in the sentence: %1 (%2)").arg(languageName(m_detected), m_detected);
        showDetection(tr("Detect → %1").arg(languageName(m_detected)));
    } else {
        m_note_text =
            tr("Cannot detect the language: %1; translating from %2 (%3), the model's default")
                .arg(QString::fromStdString(choice.problem), languageName(m_default_source), m_default_source);
        showDetection(tr("Detect → ? %1").arg(languageName(m_default_source)));
    }
}

void LanguagePicker::showDetection(const QString& shown) {
    const int row = m_source->findData(QString::fromLatin1(kDetect));
    if (row < 0) return;
    const QSignalBlocker block(m_source);
    m_source->setItemText(row, shown);
    if (m_source->currentIndex() == row) {
        m_source->lineEdit()->setText(shown);
        m_source->lineEdit()->setCursorPosition(0);
    }
    showWholeInTip(m_source);
}

QString LanguagePicker::source() const {
    if (m_languages.empty()) return {};
    const QString chosen = m_source->currentData().toString();
    if (chosen != QLatin1String(kDetect)) return chosen;
    return m_detected.isEmpty() ? m_default_source : m_detected;
}

QString LanguagePicker::target() const { return m_languages.empty() ? QString() : m_target->currentData().toString(); }
int LanguagePicker::count() const { return int(m_languages.size()); }

void LanguagePicker::remember() {
    const QString chosen = detecting() ? QString::fromLatin1(kDetect) : source();
    if (!m_model_dir.isEmpty()) QSettings().setValue(settingsKey(m_model_dir), chosen + "\t" + target());
}

}  // namespace attnlab::ui
