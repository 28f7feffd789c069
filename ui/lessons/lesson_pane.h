#pragma once
// LessonPane: the caption pane of a lesson (attnlab/lesson.h): its title, "step 3 of 15", the
// step's title and its caption rendered from Markdown, Previous / Next. It holds the lesson and
// says which step to show; MainWindow applies the step's view.

#include <attnlab/lesson.h>

#include <QWidget>

class QLabel;
class QPushButton;
class QTextBrowser;

namespace attnlab::ui {

// A caption's Markdown in `browser`, as the lesson pane shows it (its code at the caption's text
// size), laid out once, read from its top: the pane and the lesson editor's preview.
void showCaption(QTextBrowser* browser, const QString& markdown);
// What the pane shows of a step: its title as a heading, then its caption.
QString stepMarkdown(const LessonStep& step);
// Code spans at the browser's text size (again after a change of the text size).
void fitCodeSize(QTextBrowser* browser);

class LessonPane : public QWidget {
    Q_OBJECT
public:
    explicit LessonPane(QWidget* parent = nullptr);

    void setLesson(const Lesson& lesson, const QString& origin);
    const Lesson& lesson() const { return m_lesson; }
    QString origin() const { return m_origin; }
    bool hasLesson() const { return !m_lesson.steps.empty(); }
    int current() const { return m_current; }  // 0-based; -1 before the first step
    int count() const { return int(m_lesson.steps.size()); }
    // Shows step i's caption and emits stepShown; false when i is outside the lesson.
    bool show(int i);
    // A word about the lesson instead of a step's caption (Markdown): why no step is shown.
    void showNotice(const QString& markdown);
    QString captionText() const;  // as rendered (plain text; tests read it)
    // The caption's text size now: the window's, or less where the caption would otherwise scroll
    // (down to 80 % of it, 10 pt at least; a caption too long for that keeps the window's).
    double captionTextSize() const;
    bool captionScrolls() const;  // what is left to scroll once the caption is fitted

Q_SIGNALS:
    void stepShown(int index, const attnlab::ViewState& view);

protected:
    void changeEvent(QEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;

private:
    double fittingCaptionSize() const;
    bool fitCaption();  // true where the caption's size changed

    Lesson m_lesson;
    QString m_origin;
    int m_current = -1;
    QLabel* m_title;
    QLabel* m_position;
    QTextBrowser* m_caption;
    QPushButton* m_prev;
    QPushButton* m_next;
};

}  // namespace attnlab::ui
