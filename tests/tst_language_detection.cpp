// The source language detected (attnlab/language_detect.h, CLD2) and matched to each model family's codes,
// and the language picker: its "Detect" entry, and names shown whole in the sentence row at 1280 and 1920
// wide (issue 52, items 8 and 9).
#include "document/view_context.h"
#include "shell/main_window.h"
#include "shell/translate_panel.h"
#include "widgets/language_picker.h"

#include <attnlab/language_detect.h>

#include <QComboBox>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLineEdit>
#include <QSettings>
#include <QSignalSpy>
#include <QtTest/QtTest>

#include "support/multi30k.h"

using namespace attnlab;
using namespace attnlab::ui;

namespace {
const QString kShared = attnlab::testing::sharedDataDir();

// A multilingual model's language codes as its tokenizer's files list them (the real files of
// ../shared/data/hf-multilingual): NLLB's and mBART's special_tokens_map.json, M2M100's added_tokens.json.
std::vector<std::string> realCodes(const QString& model) {
    QFile f(kShared + "hf-multilingual/" + model +
            (model.startsWith("m2m100") ? "/added_tokens.json" : "/special_tokens_map.json"));
    if (!f.open(QIODevice::ReadOnly)) return {};
    const QJsonDocument doc = QJsonDocument::fromJson(f.readAll());
    std::vector<std::string> codes;
    if (model.startsWith("m2m100")) {
        for (const QString& k : doc.object().keys())
            if (k.startsWith("__")) codes.push_back(k.toStdString());
    } else {
        for (const auto& v : doc.object().value("additional_special_tokens").toArray())
            codes.push_back(v.toString().toStdString());
    }
    return codes;
}

QStringList corpusLines(const QString& name) { return attnlab::testing::multi30kLines(name); }

PackageConfig configOf(const std::vector<std::string>& codes, const std::string& source, const std::string& target) {
    PackageConfig c;
    for (size_t i = 0; i < codes.size(); ++i) c.languages.push_back({codes[i], codes[i], int64_t(100 + i)});
    c.source_lang = source;
    c.target_lang = target;
    return c;
}
}  // namespace

class TestLanguageDetection : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void detectsTheCorpusLanguage();
    void saysWhyItCannotTell();
    void matchesEachFamilysCodes();
    void pickerDetectsTheSource();
    void sentenceRowFollowsTheDetectedLanguage();
    void typedSentenceIsTranslatedFromItsLanguage();
    void pickerShowsWholeNames_data();
    void pickerShowsWholeNames();
};

void TestLanguageDetection::initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    QSettings().remove("languages");
    QVERIFY2(realCodes("nllb-200-distilled-600M").size() == 202, "../shared/data/hf-multilingual is needed");
}

// Real sentences (Multi30k's validation set, one image description a line): each file's language is
// found for nearly every line. CLD2 takes a few short descriptions for a neighbour ("Ein Skateboarder
// springt.": 2 % of the German lines are called Luxembourgish, Danish, ...), so the bound is 95 %; and
// where it is unsure it says so rather than naming a language.
void TestLanguageDetection::detectsTheCorpusLanguage() {
    for (const auto& [file, code] : {std::pair<QString, std::string>{"val.de.gz", "de"}, {"val.en.gz", "en"}}) {
        const QStringList lines = corpusLines(file);
        QCOMPARE(lines.size(), 1014);
        int right = 0, wrong = 0;
        for (const QString& line : lines) {
            const DetectedLanguage d = detectLanguage(line.toStdString());
            if (d.code == code) ++right;
            if (!d.code.empty() && d.code != code) ++wrong;
            QVERIFY2(d.code.empty() == !d.problem.empty(), qPrintable(line));  // a code, or why not
        }
        QVERIFY2(right >= 0.95 * lines.size(),
                 qPrintable(QString("%1: %2 of %3").arg(file).arg(right).arg(lines.size())));
        QVERIFY2(wrong <= 0.03 * lines.size(), qPrintable(QString("%1: %2 wrong").arg(file).arg(wrong)));
        // A paragraph of ten descriptions: reliable, the whole text in the language.
        const DetectedLanguage p = detectLanguage(lines.mid(100, 10).join(' ').toStdString());
        QCOMPARE(p.code, code);
        QVERIFY(p.reliable);
        QVERIFY2(p.percent >= 90, qPrintable(QString::number(p.percent)));
    }
    QCOMPARE(detectLanguage("Un homme fait du vélo sur un pont au coucher du soleil.").code, std::string("fr"));
    QCOMPARE(detectLanguage("Dos perros juegan en la nieve cerca de un lago.").code, std::string("es"));
    QCOMPARE(detectLanguage("Мальчик играет с мячом в парке.").code, std::string("ru"));
    QCOMPARE(detectLanguage("一个男人在桥上骑自行车，天气很好。").code, std::string("zh"));
    QCOMPARE(detectLanguage("一個男人在橋上騎自行車，天氣很好，他很高興。").code, std::string("zh-Hant"));
    QCOMPARE(detectLanguage("Zwei Hunde spielen im Schnee.").name, std::string("German"));
}

void TestLanguageDetection::saysWhyItCannotTell() {
    const DetectedLanguage shortText = detectLanguage("Hund");
    QVERIFY(shortText.code.empty());
    QVERIFY2(QString::fromStdString(shortText.problem)
                 .startsWith("too short to tell its language (4 letters; at least 12 are needed)"),
             shortText.problem.c_str());
    QVERIFY(detectLanguage("").code.empty());
    const DetectedLanguage digits = detectLanguage("1234567890 1234567890 1234567890 !!!");
    QVERIFY(digits.code.empty());
    QVERIFY2(!digits.problem.empty(), "digits have no language");
    QCOMPARE(detectLanguage("Zwei Hunde \xff\xfe spielen im Schnee.").problem, std::string("not UTF-8 text"));
    // UTF-8 with control characters a text file may hold (a form feed, an escape, a C1 control): read as text
    // (CLD2 itself stops at the first one).
    const DetectedLanguage controls = detectLanguage(
        "Zwei Hunde spielen im Schnee.\f\x1b Ein Mann f\xc3\xa4hrt mit dem Fahrrad \xc2\x85\xc2\x9f\x7f\x01.");
    QVERIFY2(controls.code == "de", controls.problem.c_str());
    // A language the model lacks, in words.
    DetectedLanguage german;
    german.code = "de";
    german.name = "German";
    const LanguageChoice none = modelLanguageFor(german, {"en", "fr"});
    QVERIFY(none.code.empty());
    QCOMPARE(none.problem, std::string("German (de), which is not one of the model's languages"));
    // Two scripts of one language: the person chooses.
    DetectedLanguage kashmiri;
    kashmiri.code = "ks";
    kashmiri.name = "Kashmiri";
    const LanguageChoice two = modelLanguageFor(kashmiri, realCodes("nllb-200-distilled-600M"));
    QVERIFY(two.code.empty());
    QCOMPARE(two.problem, std::string("Kashmiri, which the model has in 2 forms (kas_Arab, kas_Deva): choose one"));
    // The detection's own problem passes through.
    QCOMPARE(modelLanguageFor(detectLanguage("Hund"), {"de"}).problem, detectLanguage("Hund").problem);
}

// Each family's codes, from the real models' tokenizer files: NLLB's ISO 639-3 with a script (and its
// individual languages for a macrolanguage), M2M100's "__de__", mBART's "de_DE"; Argos's two-letter codes.
void TestLanguageDetection::matchesEachFamilysCodes() {
    const auto nllb = realCodes("nllb-200-distilled-600M"), m2m = realCodes("m2m100_418M"),
               mbart = realCodes("mbart-large-50-many-to-many-mmt");
    QCOMPARE(m2m.size(), size_t(100));
    QCOMPARE(mbart.size(), size_t(52));
    const std::vector<std::string> argos{"ar", "de", "en", "fr", "zh", "zt"};
    struct Case {
        const char* text;
        std::string nllb, m2m, mbart, argos;
    };
    const Case cases[] = {
        {"Zwei Hunde spielen im Schnee neben einem zugefrorenen See.", "deu_Latn", "__de__", "de_DE", "de"},
        {"A man rides a bicycle across a bridge in the evening.", "eng_Latn", "__en__", "en_XX", "en"},
        {"رجل يركب دراجة عبر جسر في المساء الجميل.", "arb_Arab", "__ar__", "ar_AR", "ar"},
        {"一个男人在桥上骑自行车，天气很好。", "zho_Hans", "__zh__", "zh_CN", "zh"},
        {"一個男人在橋上騎自行車，天氣很好，他很高興。", "zho_Hant", "__zh__", "zh_CN", "zt"},
        {"Seorang lelaki sedang menunggang basikal di atas jambatan pada waktu petang.", "zsm_Latn", "__ms__", "", ""},
    };
    for (const Case& c : cases) {
        const DetectedLanguage d = detectLanguage(c.text);
        QVERIFY2(!d.code.empty(), (std::string(c.text) + ": " + d.problem).c_str());
        for (const auto& [codes, expected] :
             {std::pair{&nllb, c.nllb}, {&m2m, c.m2m}, {&mbart, c.mbart}, {&argos, c.argos}}) {
            const LanguageChoice choice = modelLanguageFor(d, *codes);
            QVERIFY2(choice.code == expected,
                     (std::string(c.text) + " -> " + choice.code + " / " + choice.problem).c_str());
            QCOMPARE(choice.problem.empty(), !expected.empty());
        }
    }
}

// "Detect language" as the source: the language of the text given, among the model's; when it cannot be told,
// the model's default source with the reason in the note; remembered per model like any choice.
void TestLanguageDetection::pickerDetectsTheSource() {
    QSettings().remove("languages");
    LanguagePicker picker;
    const PackageConfig nllb = configOf(realCodes("nllb-200-distilled-600M"), "eng_Latn", "fra_Latn");
    picker.setModel(nllb, "/models/nllb");
    QVERIFY(!picker.detecting());
    QSignalSpy detected(&picker, &LanguagePicker::detected);
    QSignalSpy changed(&picker, &LanguagePicker::changed);
    picker.detectFrom("Zwei Hunde spielen im Schnee.");
    QCOMPARE(picker.source(), QString("eng_Latn"));  // not detecting: nothing changes
    QCOMPARE(detected.count(), 0);
    QVERIFY(picker.choose(LanguagePicker::kDetect, "fra_Latn"));
    QVERIFY(picker.detecting());
    QCOMPARE(picker.source(), QString("deu_Latn"));  // the text given before
    QCOMPARE(picker.detectionNote(), QString("Detected in the sentence: German (Latin) (deu_Latn)"));
    auto* source_box = picker.findChildren<QComboBox*>().at(0);
    QCOMPARE(source_box->currentText(), QString("Detect → German (Latin)"));  // the entry says what it found
    QCOMPARE(source_box->toolTip(), picker.detectionNote());
    picker.detectFrom("一個男人在橋上騎自行車，天氣很好，他很高興。");
    QCOMPARE(picker.source(), QString("zho_Hant"));
    QCOMPARE(detected.count(), 1);
    picker.detectFrom("Hund");
    QCOMPARE(picker.source(), QString("eng_Latn"));
    QCOMPARE(picker.detectionNote(),
             QString("Cannot detect the language: too short to tell its language (4 letters; at least 12 are needed); "
                     "translating from English (Latin) (eng_Latn), the model's default"));
    QCOMPARE(detected.count(), 2);
    QCOMPARE(changed.count(), 0);  // detection is not a person's choice: no translation asked by it
    // The sentence's language chosen elsewhere (the text dialog) while it is the one detected: Detect stays.
    picker.detectFrom("Zwei Hunde spielen im Schnee.");
    QVERIFY(picker.choose("deu_Latn", "fra_Latn"));
    QVERIFY(picker.detecting());
    // A language the model lacks, in words.
    LanguagePicker small;
    small.setModel(configOf({"eng_Latn", "fra_Latn"}, "eng_Latn", "fra_Latn"), "/models/small");
    QVERIFY(small.choose(LanguagePicker::kDetect, "fra_Latn"));
    small.detectFrom("Zwei Hunde spielen im Schnee neben einem See.");
    QCOMPARE(small.source(), QString("eng_Latn"));
    QVERIFY2(small.detectionNote().startsWith(
                 "Cannot detect the language: German (de), which is not one of the model's languages; translating "
                 "from English (Latin)"),
             qPrintable(small.detectionNote()));
    // Chosen by a person: remembered for the model.
    auto* source = picker.findChildren<QComboBox*>().at(0);
    source->setCurrentIndex(source->findData("spa_Latn"));
    source->setCurrentIndex(source->findData(QString(LanguagePicker::kDetect)));
    LanguagePicker again;
    again.setModel(nllb, "/models/nllb");
    QVERIFY(again.detecting());
}

// The sentence row: what is typed is detected, and the options the row hands on carry its language.
void TestLanguageDetection::sentenceRowFollowsTheDetectedLanguage() {
    QSettings().remove("languages");
    TranslationController controller;
    MainWindow window(&controller, false);
    TranslatePanel* panel = window.translatePanel();
    panel->languages()->setModel(configOf(realCodes("m2m100_418M"), "__en__", "__fr__"), "/models/m2m");
    QVERIFY(panel->languages()->choose(LanguagePicker::kDetect, "__fr__"));
    panel->sentenceEdit()->setText("Ein Mann fährt mit dem Fahrrad über eine Brücke.");
    QCOMPARE(panel->options().source_language, std::string("__de__"));
    QCOMPARE(window.context()->decodingOptions().source_language, std::string("__de__"));
    panel->sentenceEdit()->setText("Un homme traverse un pont à vélo ce soir.");
    QCOMPARE(window.context()->decodingOptions().source_language, std::string("__fr__"));
}

// The window with a multilingual model (the ui fixture's three-language package), Detect chosen: a German
// sentence typed (and Enter) is translated from deu_Latn, a French one from fra_Latn, a word too short from the
// model's default with the reason in the picker's tooltip.
void TestLanguageDetection::typedSentenceIsTranslatedFromItsLanguage() {
    QSettings().remove("languages");
    TranslationController controller;
    MainWindow window(&controller, false);
    QSignalSpy loaded(window.context(), &ViewContext::modelChanged);
    window.context()->loadModel(qEnvironmentVariable("ATTNLAB_TEST_PACKAGE") + "-multilingual");
    QTRY_VERIFY_WITH_TIMEOUT(loaded.count() > 0, 30000);
    TranslatePanel* panel = window.translatePanel();
    QVERIFY(panel->languages()->choose(LanguagePicker::kDetect, "eng_Latn"));
    for (const auto& [text, language] : {std::pair<QString, std::string>{"Zwei Hunde spielen im Schnee.", "deu_Latn"},
                                         {"Deux chiens jouent dans la neige.", "fra_Latn"},
                                         {"Hund", "eng_Latn"}}) {
        panel->sentenceEdit()->clear();
        QTest::keyClicks(panel->sentenceEdit(), text);
        QTest::keyClick(panel->sentenceEdit(), Qt::Key_Return);
        QTRY_VERIFY_WITH_TIMEOUT(
            window.context()->result() && window.context()->result()->source_text == text.toStdString(), 30000);
        QCOMPARE(window.context()->resultOptions().source_language, language);
    }
    QVERIFY2(panel->languages()->detectionNote().contains("too short to tell its language"),
             qPrintable(panel->languages()->detectionNote()));
}

void TestLanguageDetection::pickerShowsWholeNames_data() {
    QTest::addColumn<int>("width");
    QTest::newRow("1280") << 1280;
    QTest::newRow("1920") << 1920;
}

// The sentence row of a window 1280 or 1920 wide with NLLB's 202 languages: each language's text shows
// whole in its field (not "English (Lati"); a name beyond the picker's sane maximum is elided with the
// whole name in the tooltip.
void TestLanguageDetection::pickerShowsWholeNames() {
    QFETCH(int, width);
    TranslationController controller;
    MainWindow window(&controller, false);
    window.resize(width, 720);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    // A model loaded: the direction switch is in the row too (the fixture package; NLLB's languages given after).
    QSignalSpy loaded(window.context(), &ViewContext::modelChanged);
    window.context()->loadModel(qEnvironmentVariable("ATTNLAB_TEST_PACKAGE"));
    QTRY_VERIFY_WITH_TIMEOUT(loaded.count() > 0, 30000);
    LanguagePicker* picker = window.translatePanel()->languages();
    picker->setModel(configOf(realCodes("nllb-200-distilled-600M"), "eng_Latn", "deu_Latn"), "/models/nllb");
    QVERIFY(picker->isVisible());
    const auto boxes = picker->findChildren<QComboBox*>();
    QCOMPARE(boxes.size(), 2);
    for (const auto& [source, target] : {std::pair<QString, QString>{"eng_Latn", "deu_Latn"},
                                         {"zho_Hant", "kas_Deva"},
                                         {"ace_Latn", "bjn_Arab"},
                                         {LanguagePicker::kDetect, "zho_Hant"}}) {  // Detect's note beside it
        QVERIFY(picker->choose(source, target));
        window.translatePanel()->sentenceEdit()->setText("Ein Mann mit einer orangefarbenen Mütze starrt auf etwas.");
        QApplication::processEvents();
        QCOMPARE(window.width(), width);  // the row never widens the window
        // and the sentence keeps its room: 40 average characters at least
        const QLineEdit* sentence = window.translatePanel()->sentenceEdit();
        QVERIFY2(sentence->width() >= 40 * sentence->fontMetrics().averageCharWidth(),
                 qPrintable(QString("%1 wide: the sentence field is %2 px").arg(width).arg(sentence->width())));
        for (QComboBox* box : boxes) {
            const QString text = box->currentText();
            QLineEdit* edit = box->lineEdit();
            const int room =
                edit->contentsRect().width() - edit->textMargins().left() - edit->textMargins().right() - 4;
            const int needed = edit->fontMetrics().horizontalAdvance(text);
            // Within the picker's maximum: whole; beyond it: cut, and whole in the tooltip.
            const bool long_name = needed > edit->fontMetrics().averageCharWidth() * LanguagePicker::kMaximumCharacters;
            if (long_name) {
                QVERIFY2(box->toolTip().startsWith(text + "\n"), qPrintable(box->toolTip()));
                continue;
            }
            QVERIFY2(needed <= room, qPrintable(QString("%1 wide: \"%2\" needs %3 px, its field shows %4 px")
                                                    .arg(width)
                                                    .arg(text)
                                                    .arg(needed)
                                                    .arg(room)));
        }
    }
}

QTEST_MAIN(TestLanguageDetection)
#include "tst_language_detection.moc"
