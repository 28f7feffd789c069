#pragma once
// LessonEditor: a lesson written in the app (Lesson > Add this view as a step). The lesson's title,
// its steps listed (number, title, view), and the selected step's title, focus and caption edited in
// place beside a live preview rendered as the lesson pane renders it; Move up / Move down / Delete,
// Save lesson…, Present. It holds the lesson being written; the lesson controller captures the
// views, saves (core's writeLesson) and presents it.

#include <attnlab/lesson.h>

#include <QWidget>

#include <map>
#include <string>
#include <vector>

class QComboBox;
class QLineEdit;
class QListWidget;
class QPlainTextEdit;
class QPushButton;
class QTextBrowser;

namespace attnlab::ui {

class LessonEditor : public QWidget {
    Q_OBJECT
public:
    explicit LessonEditor(QWidget* parent = nullptr);

    const Lesson& lesson() const { return m_lesson; }
    // A lesson to go on writing (an opened one), `path` where it was read ("" for a new one).
    void setLesson(const Lesson& lesson, const QString& path);
    QString path() const { return m_path; }
    void setPath(const QString& path) { m_path = path; }
    // Appends a step after the last and selects it.
    void addStep(const LessonStep& step);
    int selected() const;  // 0-based; -1 when there are no steps
    void select(int index);
    // The selected step's title and caption, as if typed into their fields.
    void setStepTitle(const QString& title);
    void setCaption(const QString& markdown);
    void setLessonTitle(const QString& title);
    // The parts each view names (ViewTabs::partNames): what a step of that tab may focus on.
    void setPartNames(std::map<std::string, std::vector<std::string>> parts);
    // The selected step's focus, as if chosen in its list: a part of the step's tab, "" for none
    // (the view's first part); the choices offered, "" first.
    void setStepFocus(const QString& part);
    QString stepFocus() const;
    QStringList focusChoices() const;
    // The selected step moved by `delta` places (stays within the lesson), or deleted.
    void moveSelected(int delta);
    void deleteSelected();
    QString stepText(int index) const;  // the list's line for step `index`
    QString previewText() const;        // the preview as rendered (plain text)

Q_SIGNALS:
    void saveRequested();
    void presentRequested(int first);  // 0-based: the selected step

private:
    void fillList();
    void showSelected();  // the selected step in the fields and the preview
    void refreshPreview();
    void fillFocus();  // the selected step's tab's parts, its focus chosen
    Lesson m_lesson;
    std::map<std::string, std::vector<std::string>> m_parts;
    QString m_path;
    QLineEdit* m_title;
    QListWidget* m_steps;
    QLineEdit* m_step_title;
    QComboBox* m_focus;
    QPlainTextEdit* m_caption;
    QTextBrowser* m_preview;
    QPushButton* m_up;
    QPushButton* m_down;
    QPushButton* m_delete;
    QPushButton* m_save;
    QPushButton* m_present;
};

}  // namespace attnlab::ui
