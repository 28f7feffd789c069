#include "lessons/lesson_editor.h"

#include "lessons/lesson_pane.h"

#include <QComboBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSplitter>
#include <QTextBrowser>
#include <QVBoxLayout>

#include <utility>

namespace attnlab::ui {

namespace {
// "attention · “Ein Hund rennt.”": what a step shows, in a line.
QString viewSummary(const ViewState& v) {
    QStringList parts;
    parts << (v.tab ? QString::fromStdString(*v.tab) : LessonEditor::tr("the tab shown"));
    if (v.sentence) parts << QStringLiteral("“%1”").arg(QString::fromStdString(*v.sentence));
    if (v.point) parts << LessonEditor::tr("point %1").arg(*v.point);
    if (v.focus) parts << LessonEditor::tr("focus: %1").arg(QString::fromStdString(*v.focus));
    return parts.join(QStringLiteral(" · "));
}

// `widget` under its label, for a splitter's pane.
QWidget* labelled(const QString& label, QWidget* widget) {
    auto* pane = new QWidget;
    auto* layout = new QVBoxLayout(pane);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(new QLabel(label, pane));
    layout->addWidget(widget, 1);
    return pane;
}
}  // namespace

LessonEditor::LessonEditor(QWidget* parent) : QWidget(parent) {
    m_title = new QLineEdit(this);
    m_title->setPlaceholderText(tr("The lesson's title"));
    m_steps = new QListWidget(this);
    m_steps->setWordWrap(true);
    m_step_title = new QLineEdit(this);
    m_step_title->setPlaceholderText(tr("The step's title"));
    m_focus = new QComboBox(this);
    m_focus->setToolTip(
        tr("The part of the step's tab its caption is about: presented, it gets the room and stays in "
           "sight"));
    m_caption = new QPlainTextEdit(this);
    m_caption->setPlaceholderText(tr("The caption, in Markdown: **bold**, *italic*, `code`, lists"));
    m_preview = new QTextBrowser(this);
    m_preview->setOpenExternalLinks(false);
    m_up = new QPushButton(tr("Move up"), this);
    m_down = new QPushButton(tr("Move down"), this);
    m_delete = new QPushButton(tr("Delete"), this);
    m_save = new QPushButton(tr("Save lesson…"), this);
    m_present = new QPushButton(tr("Present"), this);
    m_present->setToolTip(tr("Presenter mode from the selected step (F5; Esc leaves it)"));

    auto* order = new QHBoxLayout;
    for (QPushButton* b : {m_up, m_down, m_delete}) order->addWidget(b);
    auto* files = new QHBoxLayout;
    files->addWidget(m_save);
    files->addWidget(m_present);
    auto* step = new QWidget(this);
    auto* step_layout = new QFormLayout(step);
    step_layout->setContentsMargins(0, 0, 0, 0);
    step_layout->addRow(tr("Step"), m_step_title);
    step_layout->addRow(tr("Focus"), m_focus);
    auto* text = new QSplitter(Qt::Vertical, step);
    text->addWidget(labelled(tr("Caption (Markdown)"), m_caption));
    text->addWidget(labelled(tr("As the lesson pane shows it"), m_preview));
    step_layout->addRow(text);
    auto* split = new QSplitter(Qt::Vertical, this);
    split->addWidget(m_steps);
    split->addWidget(step);
    split->setSizes({200, 500});
    auto* layout = new QVBoxLayout(this);
    auto* title = new QFormLayout;
    title->addRow(tr("Title"), m_title);
    layout->addLayout(title);
    layout->addWidget(split, 1);
    layout->addLayout(order);
    layout->addLayout(files);

    connect(m_title, &QLineEdit::textEdited, this, [this](const QString& t) { m_lesson.title = t.toStdString(); });
    connect(m_steps, &QListWidget::currentRowChanged, this, [this] { showSelected(); });
    connect(m_step_title, &QLineEdit::textEdited, this, &LessonEditor::setStepTitle);
    connect(m_focus, &QComboBox::activated, this, [this] { setStepFocus(m_focus->currentData().toString()); });
    connect(m_caption, &QPlainTextEdit::textChanged, this, [this] {
        if (selected() < 0) return;
        m_lesson.steps[size_t(selected())].caption = m_caption->toPlainText().toStdString();
        refreshPreview();
    });
    connect(m_up, &QPushButton::clicked, this, [this] { moveSelected(-1); });
    connect(m_down, &QPushButton::clicked, this, [this] { moveSelected(1); });
    connect(m_delete, &QPushButton::clicked, this, &LessonEditor::deleteSelected);
    connect(m_save, &QPushButton::clicked, this, &LessonEditor::saveRequested);
    connect(m_present, &QPushButton::clicked, this, [this] { Q_EMIT presentRequested(std::max(0, selected())); });
    fillList();
}

void LessonEditor::setLesson(const Lesson& lesson, const QString& path) {
    m_lesson = lesson;
    m_path = path;
    m_title->setText(QString::fromStdString(lesson.title));
    fillList();
    select(0);
}

void LessonEditor::addStep(const LessonStep& step) {
    m_lesson.steps.push_back(step);
    fillList();
    select(int(m_lesson.steps.size()) - 1);
}

int LessonEditor::selected() const {
    const int row = m_steps->currentRow();
    return row >= 0 && row < int(m_lesson.steps.size()) ? row : -1;
}

void LessonEditor::select(int index) {
    if (index >= 0 && index < m_steps->count()) m_steps->setCurrentRow(index);
    showSelected();
}

void LessonEditor::setLessonTitle(const QString& title) {
    m_title->setText(title);
    m_lesson.title = title.toStdString();
}

void LessonEditor::setStepTitle(const QString& title) {
    const int i = selected();
    if (i < 0) return;
    m_lesson.steps[size_t(i)].title = title.toStdString();
    if (m_step_title->text() != title) m_step_title->setText(title);
    m_steps->item(i)->setText(stepText(i));
    refreshPreview();
}

void LessonEditor::setCaption(const QString& markdown) { m_caption->setPlainText(markdown); }

void LessonEditor::setPartNames(std::map<std::string, std::vector<std::string>> parts) {
    m_parts = std::move(parts);
    fillFocus();
}

void LessonEditor::setStepFocus(const QString& part) {
    const int i = selected();
    if (i < 0 || !focusChoices().contains(part)) return;
    auto& focus = m_lesson.steps[size_t(i)].view.focus;
    if (part.isEmpty())
        focus.reset();
    else
        focus = part.toStdString();
    m_steps->item(i)->setText(stepText(i));
    fillFocus();
}

QString LessonEditor::stepFocus() const {
    const int i = selected();
    return i < 0 ? QString() : QString::fromStdString(m_lesson.steps[size_t(i)].view.focus.value_or(""));
}

QStringList LessonEditor::focusChoices() const {
    QStringList out;
    for (int k = 0; k < m_focus->count(); ++k) out << m_focus->itemData(k).toString();
    return out;
}

// A step without a tab keeps the tab shown: no part can be named (core's reader refuses a focus
// without a tab).
void LessonEditor::fillFocus() {
    const QSignalBlocker block(m_focus);
    m_focus->clear();
    const int i = selected();
    if (i < 0) return;
    const ViewState& v = m_lesson.steps[size_t(i)].view;
    m_focus->addItem(tr("(none: the view's first part)"), QString());
    if (const auto it = v.tab ? m_parts.find(*v.tab) : m_parts.end(); it != m_parts.end())
        for (const auto& p : it->second) m_focus->addItem(QString::fromStdString(p), QString::fromStdString(p));
    m_focus->setCurrentIndex(std::max(0, m_focus->findData(QString::fromStdString(v.focus.value_or("")))));
    m_focus->setEnabled(m_focus->count() > 1);
}

void LessonEditor::moveSelected(int delta) {
    const int from = selected(), to = from + delta;
    if (from < 0 || to < 0 || to >= int(m_lesson.steps.size())) return;
    std::swap(m_lesson.steps[size_t(from)], m_lesson.steps[size_t(to)]);
    fillList();
    select(to);
}

void LessonEditor::deleteSelected() {
    const int i = selected();
    if (i < 0) return;
    m_lesson.steps.erase(m_lesson.steps.begin() + i);
    fillList();
    select(std::min(i, int(m_lesson.steps.size()) - 1));
}

QString LessonEditor::stepText(int index) const {
    const LessonStep& s = m_lesson.steps.at(size_t(index));
    const QString title = s.title.empty() ? tr("(no title)") : QString::fromStdString(s.title);
    return QStringLiteral("%1. %2 — %3").arg(index + 1).arg(title, viewSummary(s.view));
}

QString LessonEditor::previewText() const { return m_preview->toPlainText(); }

void LessonEditor::fillList() {
    const QSignalBlocker block(m_steps);
    m_steps->clear();
    for (int i = 0; i < int(m_lesson.steps.size()); ++i) m_steps->addItem(stepText(i));
}

void LessonEditor::showSelected() {
    const int i = selected();
    const bool any = i >= 0;
    for (QWidget* w : std::initializer_list<QWidget*>{m_step_title, m_caption, m_delete, m_save, m_present})
        w->setEnabled(any);
    m_up->setEnabled(i > 0);
    m_down->setEnabled(any && i + 1 < int(m_lesson.steps.size()));
    const QSignalBlocker a(m_step_title), b(m_caption);
    m_step_title->setText(any ? QString::fromStdString(m_lesson.steps[size_t(i)].title) : QString());
    m_caption->setPlainText(any ? QString::fromStdString(m_lesson.steps[size_t(i)].caption) : QString());
    fillFocus();
    refreshPreview();
}

void LessonEditor::refreshPreview() {
    const int i = selected();
    if (i < 0) return m_preview->clear();
    showCaption(m_preview, stepMarkdown(m_lesson.steps[size_t(i)]));
}

}  // namespace attnlab::ui
