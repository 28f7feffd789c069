#include "lesson_pane.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QTextBrowser>
#include <QVBoxLayout>

namespace attnlab::ui {

LessonPane::LessonPane(QWidget* parent) : QWidget(parent) {
    m_title = new QLabel(this);
    m_title->setWordWrap(true);
    m_position = new QLabel(this);
    m_caption = new QTextBrowser(this);
    m_caption->setOpenExternalLinks(false);
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
    const auto& step = m_lesson.steps[i];
    QString md;
    if (!step.title.empty()) md = QStringLiteral("## %1\n\n").arg(QString::fromStdString(step.title));
    m_caption->setMarkdown(md + QString::fromStdString(step.caption));
    m_position->setText(tr("step %1 of %2").arg(i + 1).arg(count()));
    m_prev->setEnabled(i > 0);
    m_next->setEnabled(i + 1 < count());
    Q_EMIT stepShown(i, lessonViewAt(m_lesson, i));
    return true;
}

QString LessonPane::captionText() const { return m_caption->toPlainText(); }

}  // namespace attnlab::ui
