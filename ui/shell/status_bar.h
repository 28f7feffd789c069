#pragma once
// StatusBar: the window's status bar, whose messages (QStatusBar::showMessage, as every part of the
// app sends them) have a room of their own, left of the permanent widgets (the model label): a label
// that takes the width they leave, cuts a longer message with an ellipsis and shows all of it in its
// tooltip. QStatusBar itself paints a message over the whole bar up to the first permanent widget,
// with no ellipsis and nothing to read the rest with (a 404's address ran into the model label).

#include <QLabel>
#include <QStatusBar>

namespace attnlab::ui {

// A one-line label that elides its text at the right to its width; the whole text in the tooltip
// when it is cut.
class ElidedLabel : public QLabel {
    Q_OBJECT
public:
    explicit ElidedLabel(QWidget* parent = nullptr);
    void setFullText(const QString& text);
    QString fullText() const { return m_full; }
    QSize minimumSizeHint() const override;
    QSize sizeHint() const override;

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    void elide();
    QString m_full;
};

class StatusBar : public QStatusBar {
    Q_OBJECT
public:
    explicit StatusBar(QWidget* parent = nullptr);
    ElidedLabel* messageLabel() const { return m_message; }

protected:
    void paintEvent(QPaintEvent* event) override;  // the bar, without QStatusBar's own message text

private:
    ElidedLabel* m_message;
};

}  // namespace attnlab::ui
