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
    QString captionText() const;  // as rendered (plain text; tests read it)
    // The caption's text size now: the pane's own, or less, down to kMinCaptionPointSize, where the
    // caption would not fit without scrolling at the pane's size (fitCaption).
    double captionPointSize() const;
    // Whether the whole caption is in sight, no scrolling needed (tst_presenter).
    bool captionFits() const;
    // The smallest text a caption shrinks to (a projector's back row still reads 12 pt).
    static constexpr double kMinCaptionPointSize = 12.0;

Q_SIGNALS:
    void stepShown(int index, const attnlab::ViewState& view);

protected:
    // The caption's font and its viewport's size: the caption is fitted again (once, afterwards).
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void setCaption(const QString& markdown);
    void fitCaption();  // the largest size, up to the pane's, at which it fits
    bool m_fit_pending = false;
    void setCaptionSize(double points);  // the caption and its code spans at `points`
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
