// A whole text translated sentence by sentence (issue 52, item 9): the text read and checked and split
// into sentences (attnlab/sentences.h), translated on the controller's thread with progress and Cancel,
// each sentence's maps shown in the window as if typed, the whole translation copied and saved
// (TextTranslationDialog).
#include "dialogs/text_translation.h"
#include "document/view_context.h"
#include "shell/main_window.h"
#include "shell/translate_panel.h"

#include <attnlab/errors.h>
#include <attnlab/sentences.h>
#include <attnlab/translator.h>

#include <QApplication>
#include <QClipboard>
#include <QElapsedTimer>
#include <QFile>
#include <QLineEdit>
#include <QMenuBar>
#include <QProgressBar>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest/QtTest>

#include <algorithm>
#include <atomic>

#include <random>

#include "support/multi30k.h"

using namespace attnlab;
using namespace attnlab::ui;

namespace {

QStringList corpusLines(const QString& name) { return attnlab::testing::multi30kLines(name); }

QStringList texts(const std::vector<TextSentence>& sentences) {
    QStringList out;
    for (const auto& s : sentences) out << QString::fromStdString(s.text);
    return out;
}

// The sentences' translations as the controller makes them: in batches of up to kTextBatch (padded
// together), so that the comparison is exact. Each sentence alone could differ where two candidates
// are near a tie (a padded batch is equal to single sentences to 1e-5, docs/portability.md).
QStringList batchTranslations(const attnlab::Translator& t, const QStringList& sentences,
                              const DecodingOptions& options) {
    const int most = std::clamp(options.max_batch_size, 1, TranslationController::kTextBatch);
    QStringList out;
    for (int first = 0; first < sentences.size(); first += most) {
        std::vector<std::string> batch;
        for (const QString& s : sentences.mid(first, most)) batch.push_back(s.toStdString());
        for (const auto& r : t.translateBatch(batch, options)) out << QString::fromStdString(r.best.text);
    }
    return out;
}

// The message of the InputError `f` throws, or "" when it throws none.
template <typename F>
QString inputError(F&& f) {
    try {
        f();
    } catch (const InputError& e) {
        return QString::fromUtf8(e.what());
    }
    return {};
}
}  // namespace

class TestTextTranslation : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void splitsRealParagraphsIntoTheirSentences();
    void keepsAbbreviationsInitialsAndNumbers();
    void newlinesAreHardBreaks();
    void anyBytesStayInsideTheText();
    void badTextSaysWhatIsWrong();
    void translatesATextSentenceBySentence();
    void cancelKeepsWhatWasDone();
    void anotherModelStopsTheText();
    void dialogSaysWhatIsWrongWithItsInput();
    void reachableFromTheFileMenuAndTheSentenceRow();
    void multilingualModelTakesTheTextsLanguage();

private:
    // Multi30k's German descriptions from `from` on that end with a stop and that the fixture model takes (it
    // reads at most 64 pieces).
    QStringList acceptedLines(int count, int from = 0) const;
    // Six of them as two paragraphs (the fixture model is de -> en, random weights).
    QString paragraphs() const;
    std::unique_ptr<Translator> m_alone;  // the same package, for the translations expected
    std::unique_ptr<TranslationController> m_controller;
    std::unique_ptr<ViewContext> m_context;
    DecodingOptions m_options;
};

void TestTextTranslation::initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    const QString package = qEnvironmentVariable("ATTNLAB_TEST_PACKAGE");
    QVERIFY2(!package.isEmpty(), "ATTNLAB_TEST_PACKAGE must name the fixture package (set by CTest)");
    m_alone = std::make_unique<Translator>(package.toStdString(), TranslatorOptions{"cpu"});
    m_controller = std::make_unique<TranslationController>();
    m_context = std::make_unique<ViewContext>(m_controller.get());
    QSignalSpy loaded(m_context.get(), &ViewContext::modelChanged);
    m_context->loadModel(package);
    QTRY_VERIFY_WITH_TIMEOUT(loaded.count() > 0, 30000);
    m_options.beam_size = 2;  // small work: a random model writes up to its length cap
    m_options.max_length = 12;
    m_context->setDecodingOptions(m_options);
}

QStringList TestTextTranslation::acceptedLines(int count, int from) const {
    QStringList out;
    const QStringList lines = corpusLines("val.de.gz");
    for (int i = from; i < lines.size() && out.size() < count; ++i)
        if (lines[i].endsWith('.') && !m_alone->inputProblem(lines[i].toStdString())) out << lines[i];
    return out;
}

QString TestTextTranslation::paragraphs() const {
    const QStringList lines = acceptedLines(6);
    return lines.mid(0, 3).join(' ') + "\n\n" + lines.mid(3, 3).join(' ');
}

// Multi30k's validation descriptions (one sentence a line, German and English, with "usw.", "bzw.",
// "ca.", "J.P." and "..." inside) joined five at a time into paragraphs: each paragraph comes back as its
// lines wherever a line ends with . ! ? (closing quotes may follow) and the next begins with a capital or a digit (the
// corpus's own boundaries, the only ones a reader could see); a line without a final stop runs on into the next.
void TestTextTranslation::splitsRealParagraphsIntoTheirSentences() {
    static const QRegularExpression ends("[.!?…][\"'”’“»)]*$");  // a stop, closing quotes after it
    for (const QString& file : {QString("val.de.gz"), QString("val.en.gz")}) {
        const QStringList lines = corpusLines(file);
        QCOMPARE(lines.size(), 1014);
        int paragraphs = 0, checked = 0;
        for (int i = 0; i + 5 <= lines.size(); i += 5) {
            QStringList group = lines.mid(i, 5), expected;
            for (int k = 0; k < group.size(); ++k) {
                group[k] = group[k].trimmed();
                const bool boundary =
                    k + 1 == group.size() ||
                    (ends.match(group[k]).hasMatch() && (group[k + 1][0].isUpper() || group[k + 1][0].isDigit()));
                if (expected.isEmpty() || expected.last().endsWith('\x1f'))
                    expected << group[k];
                else
                    expected.last() += ' ' + group[k];
                if (boundary) expected.last() += '\x1f';
            }
            for (QString& e : expected) e.chop(1);
            const auto got = splitSentences(group.join(' ').toStdString());
            QCOMPARE(texts(got), expected);
            ++paragraphs;
            checked += int(expected.size());
        }
        QVERIFY(paragraphs == 202 && checked > 900);  // most lines end with a stop: nearly every boundary seen
    }
}

void TestTextTranslation::keepsAbbreviationsInitialsAndNumbers() {
    const auto s = [](const char* text) { return texts(splitSentences(text)); };
    QCOMPARE(s("Das ist z. B. ein Hund. Er spielt."), QStringList({"Das ist z. B. ein Hund.", "Er spielt."}));
    QCOMPARE(s("Dr. Smith met Mr. Jones. They spoke."), QStringList({"Dr. Smith met Mr. Jones.", "They spoke."}));
    QCOMPARE(s("Fruit, e.g. Apples and pears. Then bread."),
             QStringList({"Fruit, e.g. Apples and pears.", "Then bread."}));
    QCOMPARE(s("J. R. R. Tolkien wrote it. Am 3. Mai kam er."),
             QStringList({"J. R. R. Tolkien wrote it.", "Am 3. Mai kam er."}));
    QCOMPARE(s("Wait... what? Yes! \"Go.\" He went."), QStringList({"Wait... what?", "Yes!", "\"Go.\"", "He went."}));
    QCOMPARE(s("Er sagte: „Komm.“ „Nein!“ rief sie."), QStringList({"Er sagte: „Komm.“", "„Nein!“ rief sie."}));
    QCOMPARE(s("It costs 3.50 euros. 12 people came."), QStringList({"It costs 3.50 euros.", "12 people came."}));
    QCOMPARE(s("他来了。她走了！好吗？"), QStringList({"他来了。", "她走了！", "好吗？"}));
    QCOMPARE(s("Одна собака. Другая кошка."), QStringList({"Одна собака.", "Другая кошка."}));
    QCOMPARE(s("Éric est là. Élise aussi."), QStringList({"Éric est là.", "Élise aussi."}));
    QCOMPARE(s("no capital. here"), QStringList({"no capital. here"}));
}

void TestTextTranslation::newlinesAreHardBreaks() {
    const auto got = splitSentences("Title without stop\nA line. Another one\r\n\n  \nNew paragraph.\n");
    QCOMPARE(texts(got), QStringList({"Title without stop", "A line.", "Another one", "New paragraph."}));
    QCOMPARE(got[0].paragraph, size_t(0));
    QCOMPARE(got[2].paragraph, size_t(0));
    QCOMPARE(got[3].paragraph, size_t(1));
    const std::string text = "One. Two.";
    QCOMPARE(splitSentences(text)[1].offset, size_t(5));
    QVERIFY(splitSentences(" \n\t\n").empty());
}

// Any bytes (a file's, pasted): every sentence is the text at its offset, nothing read outside the text. The
// first input read one byte before the buffer (AddressSanitizer: heap-buffer-overflow in codePointBefore,
// found by random inputs): "？" then a stray continuation byte before "J.P.".
void TestTextTranslation::anyBytesStayInsideTheText() {
    std::vector<std::string> inputs{std::string("\xef\xbc\x9f\xa9J.P. \xe2\x80\x9eZ\xe3\x80\x82\te.g\xe4\xb8\xadZ")};
    const char* pieces[] = {".", "!", "?", "…",    "。",   " ",    "\n", "A",  "a",   "1",        "\"",
                            "„", "“", "(", "\xff", "\xc3", "\xa9", "É",  "Dr", "e.g", "\xe2\x80", "J.P."};
    std::mt19937 random(52);
    for (int i = 0; i < 20000; ++i) {
        std::string s;
        for (int k = int(random() % 40); k > 0; --k) s += pieces[random() % std::size(pieces)];
        inputs.push_back(s);
    }
    for (const std::string& text : inputs) {
        size_t end = 0;  // sentences in order, none overlapping the one before
        for (const TextSentence& sentence : splitSentences(text)) {
            QVERIFY(sentence.offset >= end && sentence.offset + sentence.text.size() <= text.size());
            QVERIFY(text.compare(sentence.offset, sentence.text.size(), sentence.text) == 0);
            QVERIFY(!sentence.text.empty());
            end = sentence.offset + sentence.text.size();
        }
    }
}

// Bad input, each with a message naming the file and the problem.
void TestTextTranslation::badTextSaysWhatIsWrong() {
    QTemporaryDir dir;
    const auto write = [&dir](const QString& name, const QByteArray& bytes) {
        QFile f(dir.filePath(name));
        f.open(QIODevice::WriteOnly);
        f.write(bytes);
        return dir.filePath(name).toStdString();
    };
    const std::string empty = write("empty.txt", "  \n\n");
    QCOMPARE(inputError([&] { readTextToTranslate(empty); }), QString::fromStdString(empty + ": the text is empty"));
    const std::string binary = write("image.png", QByteArray("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16));
    QCOMPARE(inputError([&] { readTextToTranslate(binary); }),
             QString::fromStdString(binary + ": it holds a NUL byte at byte 9: a binary file, not text"));
    const std::string latin1 = write("latin1.txt", "Gr\xfc\xdf Gott.\nZwei M\xe4nner.");
    QVERIFY2(inputError([&] {
                 readTextToTranslate(latin1);
             }).startsWith(QString::fromStdString(latin1 + ": it is not UTF-8 text: byte 3 (line 1) is \\xFC")),
             qPrintable(inputError([&] { readTextToTranslate(latin1); })));
    const std::string huge = write("huge.txt", QByteArray(int(kMaxTextFileBytes) + 1, 'a'));
    QCOMPARE(
        inputError([&] { readTextToTranslate(huge); }),
        QString::fromStdString(huge + ": 1048577 bytes, more than the 1048576 (1 MiB) AttnLab translates as one text "
                                      "(split it into parts)"));
    const std::string missing = dir.filePath("none.txt").toStdString();
    QVERIFY(inputError([&] { readTextToTranslate(missing); }).startsWith(QString::fromStdString(missing)));
    QVERIFY(!inputError([&] { readTextToTranslate(dir.path().toStdString()); }).isEmpty());  // a folder
    const std::string bom = write("bom.txt", "\xEF\xBB\xBFZwei Hunde. Ein Mann.");
    QCOMPARE(QString::fromStdString(readTextToTranslate(bom)), QString("Zwei Hunde. Ein Mann."));
    QCOMPARE(QString::fromStdString(*textProblem("", "the pasted text")),
             QString("the pasted text: the text is empty"));
}

// Each sentence translated on the worker (the window's event loop runs meanwhile: progress comes sentence by
// sentence), its translation the one the model gives the sentence alone (a Translator of the same package,
// the context's options), kept in the controller's cache: clicking the sentence shows it in every view as if
// typed, without translating again. The whole translation keeps the paragraphs; copied and saved.
void TestTextTranslation::translatesATextSentenceBySentence() {
    TextTranslationDialog dialog(m_context.get());
    dialog.setText(paragraphs());
    QSignalSpy sentences(m_controller.get(), &TranslationController::textSentenceTranslated);
    QSignalSpy ended(m_controller.get(), &TranslationController::textTranslationEnded);
    QCOMPARE(dialog.translate().value_or(""), QString());
    QCOMPARE(dialog.sentenceCount(), 6);
    QVERIFY(dialog.running());
    QCOMPARE(dialog.progress()->maximum(), 6);
    QTRY_VERIFY_WITH_TIMEOUT(ended.count() == 1 && !dialog.running(), 60000);  // the spy hears it first
    QVERIFY(!dialog.running());
    QCOMPARE(sentences.count(), 6);
    QCOMPARE(dialog.progress()->value(), 6);
    const Translator& alone = *m_alone;
    const DecodingOptions options = m_context->translationOptions(m_context->decodingOptions());
    const QStringList expected = batchTranslations(alone, acceptedLines(6), options);
    for (int i = 0; i < 6; ++i) {
        QCOMPARE(dialog.sentence(i), acceptedLines(6)[i]);
        QCOMPARE(dialog.translationOf(i), expected[i]);
        QCOMPARE(dialog.table()->item(i, 1)->text(), expected[i]);
    }
    QCOMPARE(dialog.translation(), expected.mid(0, 3).join(' ') + "\n\n" + expected.mid(3, 3).join(' '));
    dialog.show();
    QVERIFY(QTest::qWaitForWindowExposed(&dialog));
    QVERIFY(dialog.grab().save(QDir::temp().filePath("attnlab-text-translation.png")));  // to look at
    // A sentence clicked: the window shows its result as if it had been typed, from the cache.
    QSignalSpy started(m_controller.get(), &TranslationController::translationStarted);
    QSignalSpy shown(m_context.get(), &ViewContext::sentenceShown);
    dialog.showSentence(4);
    QTRY_VERIFY_WITH_TIMEOUT(
        m_context->result() && m_context->result()->source_text == dialog.sentence(4).toStdString(), 30000);
    QCOMPARE(QString::fromStdString(m_context->result()->best.text), expected[4]);
    QCOMPARE(m_context->sentence(), dialog.sentence(4));
    QCOMPARE(shown.count(), 1);
    QCOMPARE(started.count(), 0);                                                         // not translated again
    QVERIFY(!m_context->result()->cross.empty() && !m_context->result()->trace.empty());  // maps and the search
    dialog.copyTranslation();
    QCOMPARE(QApplication::clipboard()->text(), dialog.translation());
    QTemporaryDir dir;
    const QString path = dir.filePath("translation.txt");
    QVERIFY(!dialog.saveTranslation(path));
    QFile saved(path);
    QVERIFY(saved.open(QIODevice::ReadOnly));
    QCOMPARE(QString::fromUtf8(saved.readAll()), dialog.translation() + "\n");
    QVERIFY(dialog.saveTranslation(dir.path()).value_or("").contains(dir.path()));  // a folder: refused, named
}

// Cancel stops the text within the batch running: the sentences answered by then stay, no later ones come,
// and the note says how many were done. Another text can be translated at once.
void TestTextTranslation::cancelKeepsWhatWasDone() {
    TextTranslationDialog dialog(m_context.get());
    const QStringList many = acceptedLines(12 * TranslationController::kTextBatch, 100);
    dialog.setText(many.join('\n'));
    QSignalSpy sentences(m_controller.get(), &TranslationController::textSentenceTranslated);
    QSignalSpy ended(m_controller.get(), &TranslationController::textTranslationEnded);
    int at_cancel = -1;  // cancelled as the first batch's first answer comes (polling would let more batches run)
    connect(m_controller.get(), &TranslationController::textSentenceTranslated, &dialog, [&] {
        if (at_cancel >= 0) return;
        dialog.cancel();
        at_cancel = sentences.count();
    });
    QCOMPARE(dialog.translate().value_or(""), QString());
    QTRY_VERIFY_WITH_TIMEOUT(ended.count() == 1 && !dialog.running(), 60000);     // the spy hears it first
    QVERIFY(ended.first().at(2).toBool());                                        // cancelled
    QVERIFY(sentences.count() <= at_cancel + TranslationController::kTextBatch);  // at most the batch then done
    QVERIFY(sentences.count() < dialog.sentenceCount());
    QCOMPARE(ended.first().at(0).toInt(), sentences.count());
    QVERIFY2(dialog.note().contains(QString("Cancelled: %1 of %2 sentences translated (kept).")
                                        .arg(sentences.count())
                                        .arg(dialog.sentenceCount())),
             qPrintable(dialog.note()));
    for (int i = 0; i < dialog.sentenceCount(); ++i) {
        const bool answered = std::any_of(sentences.begin(), sentences.end(),
                                          [i](const QList<QVariant>& s) { return s.at(0).toInt() == i; });
        QCOMPARE(!dialog.translationOf(i).isEmpty(), answered);
    }
    dialog.setText(many[3]);
    QCOMPARE(dialog.translate().value_or(""), QString());
    QTRY_VERIFY_WITH_TIMEOUT(!dialog.running(), 60000);
    QVERIFY(!dialog.translationOf(0).isEmpty());
}

// Another model opened while a text is translated: the text stops (the model does not wait for the rest of it),
// what was translated stays, and the note says why. The controller's end (the window closing) stops it too,
// rather than translating every sentence first.
void TestTextTranslation::anotherModelStopsTheText() {
    const QString package = qEnvironmentVariable("ATTNLAB_TEST_PACKAGE");
    const QStringList many = acceptedLines(12 * TranslationController::kTextBatch, 100);
    TextTranslationDialog dialog(m_context.get());
    dialog.setText(many.join('\n'));
    QSignalSpy ended(m_controller.get(), &TranslationController::textTranslationEnded);
    QSignalSpy loaded(m_context.get(), &ViewContext::modelChanged);
    QCOMPARE(dialog.translate().value_or(""), QString());
    m_context->loadModel(package);  // the same package again: opened all the same
    QTRY_VERIFY_WITH_TIMEOUT(ended.count() == 1 && loaded.count() == 1 && !dialog.running(), 60000);
    QVERIFY(ended.first().at(2).toBool());  // stopped
    const int done = ended.first().at(0).toInt();
    QVERIFY2(done < dialog.sentenceCount(), qPrintable(QString::number(done)));
    QVERIFY2(
        dialog.note().contains(QString("Stopped (a model was loaded meanwhile): %1 of %2 sentences translated (kept).")
                                   .arg(done)
                                   .arg(dialog.sentenceCount())),
        qPrintable(dialog.note()));
    std::atomic<int> answered{0};
    {
        TranslationController controller;
        ViewContext context(&controller);
        QSignalSpy loaded_here(&context, &ViewContext::modelChanged);
        context.loadModel(package);
        QTRY_VERIFY_WITH_TIMEOUT(loaded_here.count() > 0, 30000);
        context.setDecodingOptions(m_options);
        connect(
            &controller, &TranslationController::textSentenceTranslated, &controller, [&answered] { ++answered; },
            Qt::DirectConnection);  // counted on the worker as each comes
        context.translateText(many);
        QElapsedTimer waited;
        waited.start();
        while (answered.load() == 0 && waited.elapsed() < 60000) QThread::msleep(1);  // the text is running
        QVERIFY(answered.load() > 0);
    }  // the controller ends here
    QVERIFY2(
        answered.load() <= 2 * TranslationController::kTextBatch,
        qPrintable(QString("%1 of %2 translated before the controller ended").arg(answered.load()).arg(many.size())));
}

// Bad input in the dialog: each a clear message naming the file and the problem; too many sentences: the
// first kMaxTextSentences, said in the note; a sentence the model cannot take: greyed with why.
void TestTextTranslation::dialogSaysWhatIsWrongWithItsInput() {
    TextTranslationDialog dialog(m_context.get());
    QTemporaryDir dir;
    QFile latin1(dir.filePath("latin1.txt"));
    QVERIFY(latin1.open(QIODevice::WriteOnly));
    latin1.write("Gr\xfc\xdf Gott.");
    latin1.close();
    QVERIFY(dialog.openFile(latin1.fileName()).value_or("").startsWith(latin1.fileName() + ": it is not UTF-8 text"));
    QVERIFY(dialog.openFile(dir.filePath("none.txt")).value_or("").startsWith(dir.filePath("none.txt")));
    dialog.setText(" \n ");
    QCOMPARE(dialog.translate().value_or(""), QString("the text: the text is empty"));
    QStringList many;
    for (size_t i = 0; i < kMaxTextSentences + 20; ++i) many << QString("Hund Nummer %1 spielt.").arg(i);
    dialog.setText(many.join(' '));
    QSignalSpy ended(m_controller.get(), &TranslationController::textTranslationEnded);
    QCOMPARE(dialog.translate().value_or(""), QString());
    dialog.cancel();
    QCOMPARE(dialog.sentenceCount(), int(kMaxTextSentences));
    QVERIFY2(dialog.note().contains("The text has 520 sentences: the first 500 are translated"),
             qPrintable(dialog.note()));
    QTRY_VERIFY_WITH_TIMEOUT(ended.count() == 1 && !dialog.running(), 60000);  // the spy hears it first
    // A sentence longer than the model accepts: not translated, and why; the others are.
    const Translator& alone = *m_alone;
    QString longest = "Ein Hund";
    while (!alone.inputProblem(longest.toStdString())) longest += " und ein Hund";
    dialog.setText("Ein Mann. " + longest + ". Eine Frau.");
    QCOMPARE(dialog.translate().value_or(""), QString());
    QTRY_VERIFY_WITH_TIMEOUT(!dialog.running(), 60000);
    QCOMPARE(dialog.sentenceCount(), 3);
    QVERIFY(dialog.translationOf(1).isEmpty());
    QVERIFY(!dialog.translationOf(0).isEmpty() && !dialog.translationOf(2).isEmpty());
    const QString why = QString::fromStdString(*alone.inputProblem((longest + ".").toStdString()));
    QCOMPARE(dialog.table()->item(1, 1)->toolTip(), why);
    QVERIFY2(dialog.note().contains("1 of 3 sentences could not be translated"), qPrintable(dialog.note()));
}

// File › Translate a text… and the sentence field's own button open the window's one text dialog.
void TestTextTranslation::reachableFromTheFileMenuAndTheSentenceRow() {
    TranslationController controller;
    MainWindow window(&controller, false);
    QAction* menu_item = nullptr;
    for (QAction* a : window.menuBar()->actions().first()->menu()->actions())
        if (a->text().remove('&') == "Translate a text…") menu_item = a;
    QVERIFY(menu_item);
    QVERIFY(!window.findChild<TextTranslationDialog*>());
    menu_item->trigger();
    auto* dialog = window.findChild<TextTranslationDialog*>();
    QVERIFY(dialog && dialog->isVisible());
    dialog->close();
    const QList<QAction*> field = window.translatePanel()->sentenceEdit()->actions();
    const auto button = std::find_if(field.begin(), field.end(),
                                     [](QAction* a) { return a->toolTip().startsWith("Translate a whole text"); });
    QVERIFY(button != field.end());
    (*button)->trigger();
    QCOMPARE(window.findChildren<TextTranslationDialog*>().size(), 1);  // the same one, shown again
    QVERIFY(dialog->isVisible());
}

// A multilingual model (the fixture's three-language package): the text's language, detected, becomes the source
// of the text and of the sentence row, and a sentence clicked comes from the cache in it; a language the model
// lacks leaves the row's choice, the note says why.
void TestTextTranslation::multilingualModelTakesTheTextsLanguage() {
    const QString package = qEnvironmentVariable("ATTNLAB_TEST_PACKAGE") + "-multilingual";
    TranslationController controller;
    ViewContext context(&controller);
    QSignalSpy loaded(&context, &ViewContext::modelChanged);
    context.loadModel(package);
    QTRY_VERIFY_WITH_TIMEOUT(loaded.count() > 0, 30000);
    QCOMPARE(context.model()->config.languages.size(), size_t(3));
    DecodingOptions o = m_options;
    o.source_language = "eng_Latn";
    o.target_language = "fra_Latn";
    context.setDecodingOptions(o);
    TextTranslationDialog dialog(&context);
    dialog.setText("Dos perros juegan en la nieve cerca de un lago. Una mujer camina por la calle.");
    QCOMPARE(dialog.translate().value_or(""), QString());
    QTRY_VERIFY_WITH_TIMEOUT(!dialog.running(), 60000);
    QCOMPARE(dialog.note(), QString("The text's language: Spanish (es), which is not one of the model's languages; "
                                    "translating from English (Latin), the sentence row's choice."));
    QCOMPARE(context.decodingOptions().source_language, std::string("eng_Latn"));
    dialog.setText(acceptedLines(2).join(' '));
    QCOMPARE(dialog.translate().value_or(""), QString());
    QCOMPARE(dialog.note(), QString("The text is in German: translating from deu_Latn."));
    QCOMPARE(context.decodingOptions().source_language, std::string("deu_Latn"));
    QTRY_VERIFY_WITH_TIMEOUT(!dialog.running(), 60000);
    const Translator alone(package.toStdString(), TranslatorOptions{"cpu"});
    const DecodingOptions options = context.translationOptions(context.decodingOptions());
    const QStringList expected = batchTranslations(alone, {dialog.sentence(0), dialog.sentence(1)}, options);
    for (int i = 0; i < 2; ++i) QCOMPARE(dialog.translationOf(i), expected[i]);
    QSignalSpy started(&controller, &TranslationController::translationStarted);
    dialog.showSentence(1);
    QTRY_VERIFY_WITH_TIMEOUT(context.result() && context.result()->source_text == dialog.sentence(1).toStdString(),
                             30000);
    QCOMPARE(started.count(), 0);
    QCOMPARE(context.resultOptions().source_language, std::string("deu_Latn"));
}

QTEST_MAIN(TestTextTranslation)
#include "tst_text_translation.moc"
