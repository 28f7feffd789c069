#include "dialogs/text_translation.h"

#include "document/file_save.h"
#include "widgets/language_picker.h"

#include <attnlab/errors.h>
#include <attnlab/language_detect.h>
#include <attnlab/sentences.h>

#include <QApplication>
#include <QClipboard>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <algorithm>

namespace attnlab::ui {

TextTranslationDialog::TextTranslationDialog(ViewContext* context, QWidget* parent)
    : QDialog(parent), m_context(context) {
    setWindowTitle(tr("Translate a text"));
    m_text = new QPlainTextEdit(this);
    m_text->setPlaceholderText(tr("Paste a text here, or open a file (UTF-8 text, at most %1 KiB; the first %2 "
                                  "sentences are translated)")
                                   .arg(kMaxTextFileBytes / 1024)
                                   .arg(kMaxTextSentences));
    auto* open = new QPushButton(tr("Open file…"), this);
    m_translate = new QPushButton(tr("Translate"), this);
    m_cancel = new QPushButton(tr("Cancel"), this);
    m_progress = new QProgressBar(this);
    m_progress->setFormat(tr("%v of %m sentences"));
    m_note = new QLabel(this);
    m_note->setWordWrap(true);
    m_note->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_table = new QTableWidget(0, 2, this);
    m_table->setHorizontalHeaderLabels({tr("Sentence"), tr("Translation")});
    m_table->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    // Rows as high as their wrapped text at the columns' width now (not at the width they had when filled).
    connect(m_table->horizontalHeader(), &QHeaderView::sectionResized, m_table, &QTableWidget::resizeRowsToContents);
    m_table->setWordWrap(true);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->setToolTip(tr("Click a sentence to see its maps in the main window"));
    m_copy = new QPushButton(tr("Copy translation"), this);
    m_save = new QPushButton(tr("Save translation…"), this);
    auto* close = new QPushButton(tr("Close"), this);

    auto* top = new QHBoxLayout;
    for (QWidget* w : std::initializer_list<QWidget*>{open, m_translate, m_cancel}) top->addWidget(w);
    top->addWidget(m_progress, 1);
    auto* bottom = new QHBoxLayout;
    bottom->addWidget(m_copy);
    bottom->addWidget(m_save);
    bottom->addStretch(1);
    bottom->addWidget(close);
    auto* split = new QSplitter(Qt::Vertical, this);
    split->addWidget(m_text);
    split->addWidget(m_table);
    split->setStretchFactor(1, 3);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(top);
    layout->addWidget(m_note);
    layout->addWidget(split, 1);
    layout->addLayout(bottom);
    resize(900, 640);

    connect(open, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Open a text"), QString(),
                                                          tr("Text files (*.txt *.md);;All files (*)"));
        if (path.isEmpty()) return;
        if (auto problem = openFile(path)) setNote(*problem);
    });
    connect(m_translate, &QPushButton::clicked, this, [this] {
        if (auto problem = translate()) setNote(*problem);
    });
    connect(m_cancel, &QPushButton::clicked, this, &TextTranslationDialog::cancel);
    connect(m_copy, &QPushButton::clicked, this, &TextTranslationDialog::copyTranslation);
    connect(m_save, &QPushButton::clicked, this, [this] {
        const QString path = askExportPath(this, tr("Save the translation"), "translation.txt", tr("Text (*.txt)"));
        if (path.isEmpty()) return;
        if (auto problem = saveTranslation(path)) setNote(*problem);
    });
    connect(close, &QPushButton::clicked, this, &QDialog::close);
    connect(m_table, &QTableWidget::cellClicked, this, [this](int row, int) { showSentence(row); });
    follow();
    updateButtons();
}

TextTranslationDialog* TextTranslationDialog::showFor(ViewContext* context, QWidget* window) {
    auto* dialog = window->findChild<TextTranslationDialog*>(QString(), Qt::FindDirectChildrenOnly);
    if (!dialog) dialog = new TextTranslationDialog(context, window);
    dialog->show();
    dialog->raise();
    dialog->activateWindow();
    return dialog;
}

void TextTranslationDialog::follow() {
    TranslationController* c = m_context->controller();
    connect(c, &TranslationController::textSentenceTranslated, this, [this](int i, ResultPtr r) {
        // Only this request's: a cancelled one's last batch may still come after a new one started.
        if (m_waiting != 1 || i >= sentenceCount() || QString::fromStdString(r->source_text) != m_sentences[i]) return;
        answered(i, QString::fromStdString(r->best.text), {});
    });
    connect(c, &TranslationController::textSentenceFailed, this, [this](int i, const QString& why) {
        if (m_waiting != 1 || i >= sentenceCount()) return;
        answered(i, tr("— not translated: %1").arg(why), why);
    });
    connect(c, &TranslationController::textTranslationEnded, this, &TextTranslationDialog::ended);
    // A model loaded (another, or this one on another device or compute type) stops the text
    // (TranslationController::loadModel): the note says why.
    connect(m_context, &ViewContext::modelLoading, this, [this] {
        if (running()) m_stopped_by = tr("a model was loaded meanwhile");
    });
}

std::optional<QString> TextTranslationDialog::openFile(const QString& path) {
    try {
        setText(QString::fromStdString(readTextToTranslate(path.toStdString())));
    } catch (const Error& e) {
        return QString::fromStdString(e.what());
    }
    return std::nullopt;
}

void TextTranslationDialog::setText(const QString& text) { m_text->setPlainText(text); }

std::optional<QString> TextTranslationDialog::translate() {
    if (running()) return tr("A translation is running: cancel it first");
    if (!m_context->model()) return tr("No model is loaded (File › Open model…)");
    const std::string text = m_text->toPlainText().toStdString();
    if (text.size() > kMaxTextFileBytes)  // a pasted text is held to a file's limit
        return tr("The text has %1 bytes, more than the %2 (1 MiB) translated as one text: split it into parts")
            .arg(text.size())
            .arg(kMaxTextFileBytes);
    if (auto problem = textProblem(text, tr("the text").toStdString())) return QString::fromStdString(*problem);
    m_notes.clear();
    m_stopped_by.clear();
    auto sentences = splitSentences(text);
    if (sentences.size() > kMaxTextSentences) {
        m_notes << tr("The text has %1 sentences: the first %2 are translated (the most at once; split the text "
                      "for the rest).")
                       .arg(sentences.size())
                       .arg(kMaxTextSentences);
        sentences.resize(kMaxTextSentences);
    }
    m_source_text = QString::fromStdString(text);
    m_sentences.clear();
    m_offsets.clear();
    m_ends.clear();
    for (const auto& s : sentences) {
        m_sentences << QString::fromStdString(s.text);
        m_offsets.push_back(s.offset);
        m_ends.push_back(s.offset + s.text.size());
    }
    m_translations.assign(sentences.size(), QString());
    m_table->setRowCount(0);
    m_table->setRowCount(sentenceCount());
    for (int i = 0; i < sentenceCount(); ++i) m_table->setItem(i, 0, new QTableWidgetItem(m_sentences[i]));
    m_table->resizeRowsToContents();
    m_answered = 0;
    m_progress->setRange(0, sentenceCount());
    m_progress->setValue(0);
    chooseDetectedSource(m_source_text);
    setNote(m_notes.join(' '));
    ++m_waiting;
    m_context->translateText(m_sentences);
    updateButtons();
    return std::nullopt;
}

// A multilingual model: the text's language, when it can be told and the model has it, becomes the source
// language (the sentence row follows, so a sentence clicked is translated from it too); else the note says
// why and the sentence row's choice stays.
void TextTranslationDialog::chooseDetectedSource(const QString& text) {
    const ModelInfoPtr model = m_context->model();
    if (!model || model->config.languages.empty()) return;
    std::vector<std::string> codes;
    for (const auto& l : model->config.languages) codes.push_back(l.code);
    const DetectedLanguage detected = detectLanguage(text.toStdString());
    const LanguageChoice choice = modelLanguageFor(detected, codes);
    DecodingOptions options = m_context->decodingOptions();
    const QString current =
        QString::fromStdString(options.source_language.empty() ? model->config.source_lang : options.source_language);
    if (choice.code.empty()) {
        m_notes << tr("The text's language: %1; translating from %2, the sentence row's choice.")
                       .arg(QString::fromStdString(choice.problem), languageName(current));
        return;
    }
    m_notes << tr("The text is in %1: translating from %2.")
                   .arg(QString::fromStdString(detected.name), QString::fromStdString(choice.code));
    if (options.source_language == choice.code) return;
    options.source_language = choice.code;
    m_context->setDecodingOptions(options);
}

void TextTranslationDialog::answered(int index, const QString& translation, const QString& tooltip) {
    m_translations[size_t(index)] = tooltip.isEmpty() ? translation : QString();
    auto* item = new QTableWidgetItem(translation);
    if (!tooltip.isEmpty()) {
        item->setToolTip(tooltip);
        item->setForeground(palette().brush(QPalette::Disabled, QPalette::Text));
    }
    m_table->setItem(index, 1, item);
    m_table->resizeRowToContents(index);
    m_progress->setValue(++m_answered);
    updateButtons();
}

void TextTranslationDialog::ended(int translated, int total, bool cancelled, const QString& problem) {
    if (m_waiting == 0) return;   // not asked by this dialog
    if (--m_waiting > 0) return;  // a cancelled request's end: the newer one runs on
    if (!problem.isEmpty())
        m_notes << tr("Stopped: %1").arg(problem);
    else if (cancelled && !m_stopped_by.isEmpty())
        m_notes
            << tr("Stopped (%3): %1 of %2 sentences translated (kept).").arg(translated).arg(total).arg(m_stopped_by);
    else if (cancelled)
        m_notes << tr("Cancelled: %1 of %2 sentences translated (kept).").arg(translated).arg(total);
    else if (translated < total)
        m_notes << tr("%1 of %2 sentences could not be translated (greyed: hover one to see why).")
                       .arg(total - translated)
                       .arg(total);
    setNote(m_notes.join(' '));
    updateButtons();
}

void TextTranslationDialog::cancel() {
    if (!running()) return;
    m_context->controller()->cancelText();
    m_cancel->setEnabled(false);
}

QString TextTranslationDialog::translation() const {
    const std::string source = m_source_text.toStdString();
    QString out;
    for (int i = 0; i < sentenceCount(); ++i) {
        if (i > 0) {  // the original's separator: a space, a line's end or a paragraph's
            const std::string gap = source.substr(m_ends[size_t(i - 1)], m_offsets[size_t(i)] - m_ends[size_t(i - 1)]);
            const auto lines = std::count(gap.begin(), gap.end(), '\n');
            out += lines == 0 ? QStringLiteral(" ") : lines == 1 ? QStringLiteral("\n") : QStringLiteral("\n\n");
        }
        out += m_translations[size_t(i)];
    }
    return out;
}

void TextTranslationDialog::copyTranslation() const { QApplication::clipboard()->setText(translation()); }

std::optional<QString> TextTranslationDialog::saveTranslation(const QString& path) const {
    return saveBytes(path, (translation() + "\n").toUtf8());
}

void TextTranslationDialog::showSentence(int i) {
    if (i < 0 || i >= sentenceCount()) return;
    m_context->translateSentence(m_sentences[i]);
}

QString TextTranslationDialog::note() const { return m_note->text(); }

void TextTranslationDialog::setNote(const QString& note) {
    m_note->setText(note);
    m_note->setVisible(!note.isEmpty());
}

void TextTranslationDialog::updateButtons() {
    m_translate->setEnabled(!running());
    m_cancel->setEnabled(running());
    const bool any = m_answered > 0;
    m_copy->setEnabled(any);
    m_save->setEnabled(any);
}

}  // namespace attnlab::ui
