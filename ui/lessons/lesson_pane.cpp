#include "lessons/lesson_pane.h"

#include <QEvent>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QTextBlock>
#include <QTextBrowser>
#include <QTextCursor>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>

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
    m_caption->installEventFilter(this);
    m_caption->viewport()->installEventFilter(this);
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
    const auto& step = m_lesson.steps[i];
    QString md;
    if (!step.title.empty()) md = QStringLiteral("## %1\n\n").arg(QString::fromStdString(step.title));
    setCaption(md + QString::fromStdString(step.caption));
    m_position->setText(tr("step %1 of %2").arg(i + 1).arg(count()));
    m_prev->setEnabled(i > 0);
    m_next->setEnabled(i + 1 < count());
    Q_EMIT stepShown(i, lessonViewAt(m_lesson, i));
    return true;
}

// The caption in one edit of the shown document, laid out once at its end. Qt 6.4's Markdown
// reader inserts span by span, and outside an edit block the document was laid out again after
// each insertion (and after each code span's resize): quadratic, a 30 KB caption took 57 s.
void LessonPane::setCaption(const QString& markdown) {
    QTextDocument* doc = m_caption->document();
    QTextCursor edit(doc);
    edit.beginEditBlock();
    doc->setMarkdown(markdown);
    setCaptionSize(font().pointSizeF());
    edit.endEditBlock();
    fitCaption();
    m_caption->moveCursor(QTextCursor::Start);  // a new step is read from its top
}

// A caption is read without scrolling (a class cannot scroll): where it does not fit at the pane's
// text size, its text shrinks a point at a time down to kMinCaptionPointSize, the point where
// scrolling is the lesser evil. A caption is at most 16 KiB (core's lesson reader), so the few
// layouts this takes are cheap.
void LessonPane::fitCaption() {
    const double full = font().pointSizeF();
    const QSize room = m_caption->viewport()->size();
    if (full <= 0 || room.isEmpty()) return;
    QTextDocument* doc = m_caption->document();
    for (double points = full;; points = std::max(kMinCaptionPointSize, points - 1)) {
        setCaptionSize(points);
        doc->setTextWidth(room.width());
        if (doc->size().height() <= room.height() || points <= kMinCaptionPointSize) return;
    }
}

double LessonPane::captionPointSize() const { return m_caption->document()->defaultFont().pointSizeF(); }

bool LessonPane::captionFits() const {
    return m_caption->document()->size().height() <= m_caption->viewport()->height();
}

bool LessonPane::eventFilter(QObject* watched, QEvent* event) {
    const bool font = watched == m_caption && event->type() == QEvent::FontChange;
    const bool size = watched == m_caption->viewport() && event->type() == QEvent::Resize;
    if ((font || size) && !m_fit_pending) {
        m_fit_pending = true;  // after the browser has taken its new font or size
        QTimer::singleShot(0, this, [this] {
            m_fit_pending = false;
            fitCaption();
        });
    }
    return QWidget::eventFilter(watched, event);
}

// The caption's text at `points`. Qt's Markdown reader gives `code` the system's fixed font at that
// font's own size, which stayed at 9 pt beside an 18 pt caption: code takes the caption's size. One
// edit block for all spans, so that a change of the text size lays the caption out once, not once
// per span.
void LessonPane::setCaptionSize(double points) {
    QTextDocument* doc = m_caption->document();
    QFont base = m_caption->font();
    base.setPointSizeF(points);
    doc->setDefaultFont(base);
    QTextCursor cursor(doc);
    QTextCharFormat size;
    size.setFontPointSize(points);
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

QString LessonPane::captionText() const { return m_caption->toPlainText(); }

}  // namespace attnlab::ui
