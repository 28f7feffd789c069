#include "shell/status_bar.h"

#include <QPainter>
#include <QStyleOption>

namespace attnlab::ui {

ElidedLabel::ElidedLabel(QWidget* parent) : QLabel(parent) {
    setTextFormat(Qt::PlainText);
    setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);  // takes what the bar leaves, never more
}

void ElidedLabel::setFullText(const QString& text) {
    m_full = text;
    elide();
}

QSize ElidedLabel::minimumSizeHint() const { return {0, QLabel::minimumSizeHint().height()}; }
QSize ElidedLabel::sizeHint() const { return {0, QLabel::sizeHint().height()}; }

void ElidedLabel::resizeEvent(QResizeEvent* event) {
    QLabel::resizeEvent(event);
    elide();
}

void ElidedLabel::elide() {
    const QString one_line = QString(m_full).replace('\n', ' ');
    const QString shown = fontMetrics().elidedText(one_line, Qt::ElideRight, contentsRect().width());
    setText(shown);
    setToolTip(shown == one_line ? QString() : m_full);
}

StatusBar::StatusBar(QWidget* parent) : QStatusBar(parent) {
    m_message = new ElidedLabel(this);
    m_message->setObjectName("statusMessage");
    // Permanent, so that showMessage does not hide it; stretched, so that it has the bar's free width.
    addPermanentWidget(m_message, 1);
    connect(this, &QStatusBar::messageChanged, m_message, &ElidedLabel::setFullText);
}

void StatusBar::paintEvent(QPaintEvent*) {
    QPainter p(this);
    QStyleOption opt;
    opt.initFrom(this);
    style()->drawPrimitive(QStyle::PE_PanelStatusBar, &opt, &p, this);
}

}  // namespace attnlab::ui
