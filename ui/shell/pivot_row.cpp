#include "shell/pivot_row.h"

#include <QButtonGroup>
#include <QEvent>
#include <QFontMetrics>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSignalBlocker>
#include <QToolButton>

#include <algorithm>

namespace attnlab::ui {

namespace {
QString legText(int leg, const ModelInfo& m) {
    return QStringLiteral("%1  %2 → %3")
        .arg(leg + 1)
        .arg(QString::fromStdString(m.config.source_lang), QString::fromStdString(m.config.target_lang));
}
}  // namespace

PivotRow::PivotRow(ViewContext* context, QWidget* parent) : QWidget(parent), m_context(context) {
    auto* row = new QHBoxLayout(this);
    row->setContentsMargins(0, 0, 0, 0);
    row->addWidget(new QLabel(tr("Leg"), this));
    auto* group = new QButtonGroup(this);
    for (int leg = 0; leg < 2; ++leg) {
        auto* b = m_legs[size_t(leg)] = new QToolButton(this);
        b->setCheckable(true);
        b->setObjectName(QStringLiteral("pivotLeg%1").arg(leg + 1));
        b->setToolTip(tr("Show this leg's model, translation and maps in every view"));
        group->addButton(b, leg);
        row->addWidget(b);
    }
    group->setExclusive(true);
    connect(group, &QButtonGroup::idClicked, context, &ViewContext::showLeg);
    m_middle_label = new QLabel(this);
    row->addWidget(m_middle_label);
    m_middle = new QLineEdit(this);
    m_middle->setObjectName(QStringLiteral("pivotMiddle"));
    m_middle->setPlaceholderText(tr("the first leg's translation: edit it, then Enter"));
    m_middle->setToolTip(
        tr("The middle sentence: the first leg's translation, the second leg's input. Edit it and press Enter: "
           "the second leg translates what you wrote"));
    row->addWidget(m_middle, 3);
    m_undo = new QToolButton(this);
    m_undo->setObjectName(QStringLiteral("pivotUndoEdit"));
    m_undo->setText(tr("Undo edit"));
    m_undo->setToolTip(tr("The second leg translates the first leg's output again"));
    connect(m_undo, &QToolButton::clicked, context, &ViewContext::useFirstLegOutput);
    row->addWidget(m_undo);
    m_final = new QLabel(this);
    m_final->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);  // elided on a narrow window
    m_final->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_final->installEventFilter(this);
    row->addWidget(m_final, 2);
    connect(m_middle, &QLineEdit::returnPressed, this, [this] {
        m_middle->setModified(false);
        m_context->setMiddleSentence(m_middle->text());
    });
    connect(context, &ViewContext::pivotChanged, this, &PivotRow::follow);
    follow();
}

QString PivotRow::finalTranslation() const { return m_final_text; }

bool PivotRow::eventFilter(QObject* watched, QEvent* event) {
    if (watched == m_final && event->type() == QEvent::Resize) showFinal();
    return QWidget::eventFilter(watched, event);
}

void PivotRow::follow() {
    setVisible(m_context->pivoting());
    if (!m_context->pivoting()) return;
    const auto first = m_context->legModel(0), second = m_context->legModel(1);
    m_legs[0]->setText(legText(0, *first));
    m_legs[1]->setText(legText(1, *second));
    m_legs[size_t(m_context->leg())]->setChecked(true);
    const QString middle = QString::fromStdString(first->config.target_lang);
    m_middle_label->setText(m_context->middleEdited() ? tr("Middle (%1), edited:").arg(middle)
                                                      : tr("Middle (%1), editable:").arg(middle));
    m_undo->setVisible(m_context->middleEdited());
    // What is being typed stays; the middle sentence the context holds replaces anything else.
    if (m_middle->text() != m_context->middleSentence() && !(m_middle->hasFocus() && m_middle->isModified())) {
        const QSignalBlocker block(m_middle);
        m_middle->setText(m_context->middleSentence());
        m_middle->setCursorPosition(0);  // a long sentence shows its beginning
        m_middle->setModified(false);
    }
    const auto result = m_context->legResult(1);
    m_final_text = result ? QString::fromStdString(result->best.text) : QString();
    showFinal();
}

void PivotRow::showFinal() {
    if (!m_context->pivoting() || m_final_text.isEmpty()) {
        m_final->clear();
        m_final->setToolTip({});
        return;
    }
    const QString target = QString::fromStdString(m_context->legModel(1)->config.target_lang);
    const QString whole = tr("→ %1: %2").arg(target, m_final_text);
    m_final->setText(m_final->fontMetrics().elidedText(whole, Qt::ElideRight, std::max(m_final->width(), 1)));
    m_final->setToolTip(whole);
}

}  // namespace attnlab::ui
