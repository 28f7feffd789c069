#include "lessons/lesson_pane.h"

#include <QEvent>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QResizeEvent>
#include <QTextBlock>
#include <QTextBrowser>
#include <QTextCursor>
#include <QTextDocument>
#include <QVBoxLayout>

#include <memory>

namespace attnlab::ui {

LessonPane::LessonPane(QWidget* parent) : QWidget(parent) {
    m_title = new QLabel(this);
    m_title->setWordWrap(true);
    m_position = new QLabel(this);
    m_caption = new QTextBrowser(this);
    m_caption->setOpenExternalLinks(false);
    m_caption->setUndoRedoEnabled(false);
    // Short labels keep the pane narrow at the presenter text size; the keys are in the tooltips.
    m_prev = new QPushButton(tr("◀ Previous"), this);
    m_prev->setToolTip(tr("Previous step (PageUp)"));
    m_next = new QPushButton(tr("Next ▶"), this);
    m_next->setToolTip(tr("Next step (PageDown)"));
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(m_prev);
    buttons->addWidget(m_next);
    // "step 3 of 15" on a row of its own, for the same reason.
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(m_title);
    layout->addWidget(m_caption, 1);
    layout->addWidget(m_position, 0, Qt::AlignCenter);
    layout->addLayout(buttons);
    // Buttons only: the keys are the window's (PageUp / PageDown work from anywhere).
    for (auto* b : {m_prev, m_next}) b->setFocusPolicy(Qt::NoFocus);
    connect(m_prev, &QPushButton::clicked, this, [this] { show(m_current - 1); });
    connect(m_next, &QPushButton::clicked, this, [this] { show(m_current + 1); });
}

void LessonPane::setLesson(const Lesson& lesson, const QString& origin) {
    m_lesson = lesson;
    m_origin = origin;
    m_current = -1;
    m_title->setText(QStringLiteral("<b>%1</b>").arg(QString::fromStdString(lesson.title).toHtmlEscaped()));
    m_caption->clear();
}

bool LessonPane::show(int i) {
    if (i < 0 || i >= count()) return false;
    m_current = i;
    showCaption(m_caption, stepMarkdown(m_lesson.steps[size_t(i)]));
    fitCaption();
    m_position->setText(tr("step %1 of %2").arg(i + 1).arg(count()));
    m_prev->setEnabled(i > 0);
    m_next->setEnabled(i + 1 < count());
    Q_EMIT stepShown(i, lessonViewAt(m_lesson, i));
    return true;
}

void LessonPane::showNotice(const QString& markdown) {
    m_current = -1;
    showCaption(m_caption, markdown);
    m_position->clear();
    m_prev->setEnabled(false);
    m_next->setEnabled(false);
}

QString stepMarkdown(const LessonStep& step) {
    QString md;
    if (!step.title.empty()) md = QStringLiteral("## %1\n\n").arg(QString::fromStdString(step.title));
    return md + QString::fromStdString(step.caption);
}

// The caption in one edit of the shown document, laid out once at its end. Qt 6.4's Markdown
// reader inserts span by span, and outside an edit block the document was laid out again after
// each insertion (and after each code span's resize): quadratic, a 30 KB caption took 57 s.
void showCaption(QTextBrowser* browser, const QString& markdown) {
    QTextDocument* doc = browser->document();
    QTextCursor edit(doc);
    edit.beginEditBlock();
    doc->setMarkdown(markdown);
    fitCodeSize(browser);
    edit.endEditBlock();
    browser->moveCursor(QTextCursor::Start);  // a new step is read from its top
}

// Qt's Markdown reader gives `code` the system's fixed font at that font's own size, which stayed
// at 9 pt beside an 18 pt caption: code takes the caption's size. One edit block for all spans,
// so that a change of the text size lays the caption out once, not once per span.
void fitCodeSize(QTextBrowser* browser) {
    QTextDocument* doc = browser->document();
    QTextCursor cursor(doc);
    QTextCharFormat size;
    size.setFontPointSize(browser->font().pointSizeF());
    cursor.beginEditBlock();
    for (QTextBlock b = doc->begin(); b.isValid(); b = b.next())
        for (auto it = b.begin(); !it.atEnd(); ++it) {
            const QTextFragment f = it.fragment();
            if (!f.charFormat().fontFixedPitch() && !f.charFormat().font().fixedPitch()) continue;
            cursor.setPosition(f.position());
            cursor.setPosition(f.position() + f.length(), QTextCursor::KeepAnchor);
            cursor.mergeCharFormat(size);
        }
    cursor.endEditBlock();
}

void LessonPane::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    // The code spans follow a new text size even where the caption's own size was already right.
    if (event->type() == QEvent::FontChange && m_current >= 0 && !fitCaption()) fitCodeSize(m_caption);
}

void LessonPane::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    if (m_current >= 0) fitCaption();
}

// A caption a little longer than its pane is read whole rather than scrolled in front of a class:
// its text shrinks in half-point steps to what fits, down to 80 % of the window's text size (10 pt
// at least); one that does not fit even then keeps the full size and scrolls. The sizes are tried
// on a copy of the document, so the shown one changes once at most (a long caption is laid out
// once: aLongCaptionIsLaidOutOnce). The pane's own size is untouched: fitting never moves the view.
double LessonPane::fittingCaptionSize() const {
    const double base = font().pointSizeF();
    const double floor = std::max(10.0, 0.8 * base);
    const QWidget* room = m_caption->viewport();
    const auto scrolls = [&](double points) {
        std::unique_ptr<QTextDocument> probe(m_caption->document()->clone());
        QFont f = probe->defaultFont();
        f.setPointSizeF(points);
        probe->setDefaultFont(f);
        probe->setTextWidth(room->width());
        return probe->size().height() > room->height();
    };
    if (!scrolls(base) || scrolls(floor)) return base;
    double size = base;
    while (size - 0.5 >= floor && scrolls(size)) size -= 0.5;
    return size;
}

bool LessonPane::fitCaption() {
    const double size = fittingCaptionSize();
    if (m_caption->font().pointSizeF() == size && m_caption->document()->defaultFont().pointSizeF() == size)
        return false;
    QFont f = m_caption->font();
    f.setPointSizeF(size);
    m_caption->setFont(f);
    fitCodeSize(m_caption);
    return true;
}

double LessonPane::captionTextSize() const { return m_caption->font().pointSizeF(); }

bool LessonPane::captionScrolls() const {
    const QTextDocument* doc = m_caption->document();
    return doc->size().height() > m_caption->viewport()->height();
}

QString LessonPane::captionText() const { return m_caption->toPlainText(); }

}  // namespace attnlab::ui
