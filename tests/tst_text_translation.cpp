// A whole text translated sentence by sentence (issue 52, item 9): the text read and checked and split
// into sentences (attnlab/sentences.h).
#include <attnlab/errors.h>
#include <attnlab/sentences.h>

#include <QFile>
#include <QTemporaryDir>
#include <QtTest/QtTest>

#include <zlib.h>

using namespace attnlab;

namespace {
const QString kShared = QString(ATTNLAB_SOURCE_DIR) + "/../shared/data/";

QStringList corpusLines(const QString& name) {
    gzFile f = gzopen((kShared + "multi30k/" + name).toLocal8Bit().constData(), "rb");
    if (!f) return {};
    QByteArray all;
    char buffer[65536];
    int n;
    while ((n = gzread(f, buffer, sizeof buffer)) > 0) all.append(buffer, n);
    gzclose(f);
    return QString::fromUtf8(all).split('\n', Qt::SkipEmptyParts);
}

QStringList texts(const std::vector<TextSentence>& sentences) {
    QStringList out;
    for (const auto& s : sentences) out << QString::fromStdString(s.text);
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
    void badTextSaysWhatIsWrong();
};

void TestTextTranslation::initTestCase() { QStandardPaths::setTestModeEnabled(true); }

// Multi30k's validation descriptions (one sentence a line, German and English, with "usw.", "bzw.",
// "ca.", "J.P." and "..." inside) joined five at a time into paragraphs: each paragraph comes back as its
// lines wherever a line ends with . ! ? (closing quotes may follow) and the next begins with a capital or a digit (the corpus's own
// boundaries, the only ones a reader could see); a line without a final stop runs on into the next.
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

QTEST_MAIN(TestTextTranslation)
#include "tst_text_translation.moc"
