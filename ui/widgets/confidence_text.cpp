#include "widgets/confidence_text.h"

#include <QApplication>
#include <QClipboard>
#include <QContextMenuEvent>
#include <QHelpEvent>
#include <QKeyEvent>
#include <QMenu>
#include <QPainter>
#include <QToolTip>

#include <algorithm>
#include <cmath>

namespace attnlab::ui {

ConfidenceText::ConfidenceText(QWidget* parent) : QWidget(parent) {
    setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Preferred);
    setFocusPolicy(Qt::ClickFocus);
    setMouseTracking(true);
}

void ConfidenceText::changeEvent(QEvent* e) {
    if (e->type() == QEvent::FontChange) updateGeometry();
    QWidget::changeEvent(e);
}

int ConfidenceText::band(double p) {
    for (int b = 0; b < 4; ++b)
        if (p >= kBandLower[b]) return b;
    return 3;
}

QColor ConfidenceText::bandColor(int band) {
    // A sequential palette that stays readable in greyscale: no shade for sure words, then
    // light to strong orange-red for the doubtful ones.
    static const QColor colors[] = {QColor(0, 0, 0, 0), QColor("#fee8c8"), QColor("#fdbb84"), QColor("#e34a33")};
    return colors[std::clamp(band, 0, 3)];
}

QString ConfidenceText::legendHtml() {
    QString html = tr("Word probability: ");
    const QString ranges[] = {tr("≥ 0.8"), tr("0.5–0.8"), tr("0.2–0.5"), tr("< 0.2")};
    for (int b = 0; b < 4; ++b) {
        const QColor c = bandColor(b);
        const QString bg = c.alpha() == 0 ? QStringLiteral("transparent") : c.name();
        html += QStringLiteral("<span style='background:%1; border:1px solid #999'>&nbsp;%2&nbsp;</span> ")
                    .arg(bg, ranges[b].toHtmlEscaped());
    }
    return html + tr("(hover a word for its pieces)");
}

void ConfidenceText::setResult(const TranslationResult& r) {
    m_words.clear();
    m_text = QString::fromStdString(r.best.text);
    for (const auto& w : r.words) {
        Word word;
        word.text = QString::fromStdString(w.text);
        word.probability = w.probability;
        QStringList pieces;
        for (int i = w.first_piece; i < w.first_piece + w.piece_count; ++i)
            pieces << QStringLiteral("%1  %2")
                          .arg(QString::fromStdString(r.best.pieces.at(i)))
                          .arg(std::exp(r.best.token_log_probs.at(i)), 0, 'f', 3);
        word.tooltip =
            tr("“%1”: probability %2\n%3").arg(word.text).arg(w.probability, 0, 'f', 3).arg(pieces.join('\n'));
        m_words.push_back(word);
    }
    updateGeometry();
    update();
}

void ConfidenceText::clear() {
    m_words.clear();
    m_text.clear();
    updateGeometry();
    update();
}

QString ConfidenceText::toolTipOfWord(int i) const {
    return i >= 0 && i < m_words.size() ? m_words[i].tooltip : QString();
}
int ConfidenceText::bandOfWord(int i) const { return i >= 0 && i < m_words.size() ? band(m_words[i].probability) : -1; }

// Words wrap like text; a word wider than the whole width (a long output with no spaces) is broken
// anywhere, into as many boxes as lines it needs, so nothing runs off the widget.
QVector<ConfidenceText::Box> ConfidenceText::layoutWords(int width, int* height) const {
    const QFontMetrics fm(displayFont());
    const int pad = fm.height() / 6, space = fm.horizontalAdvance(' '), line = fm.height() + 2 * pad + pad;
    const int room = std::max(width - 2 * pad, fm.horizontalAdvance(QStringLiteral("W")));  // text per line
    QVector<Box> boxes;
    int x = 0, y = 0;
    for (int i = 0; i < m_words.size(); ++i) {
        QString rest = m_words[i].text;
        while (!rest.isEmpty()) {
            int n = int(rest.size());
            if (fm.horizontalAdvance(rest) > room) {  // the longest beginning that fits a line
                n = 1;
                while (n < rest.size() && fm.horizontalAdvance(rest.left(n + 1)) <= room) ++n;
            }
            const QString part = rest.left(n);
            const int ww = fm.horizontalAdvance(part) + 2 * pad;
            if (x > 0 && x + ww > width) x = 0, y += line;
            boxes.push_back({QRect(x, y, ww, fm.height() + 2 * pad), part, i});
            x += ww + space;
            rest = rest.mid(n);
        }
    }
    if (height) *height = m_words.isEmpty() ? fm.height() + 2 * pad : y + fm.height() + 2 * pad;
    return boxes;
}

int ConfidenceText::boxCount() const { return int(layoutWords(width()).size()); }

int ConfidenceText::textRight() const {
    int right = 0;
    for (const Box& b : layoutWords(width())) right = std::max(right, b.rect.right() + 1);
    return right;
}

int ConfidenceText::heightForWidth(int width) const {
    int h = 0;
    layoutWords(width, &h);
    return h;
}

QSize ConfidenceText::sizeHint() const {
    const int w = std::max(200, width());
    return {w, heightForWidth(w)};
}

QSize ConfidenceText::minimumSizeHint() const { return {100, heightForWidth(std::max(100, width()))}; }

QFont ConfidenceText::displayFont() const {
    QFont f = font();
    f.setPointSizeF(f.pointSizeF() * kScale);
    return f;
}

void ConfidenceText::paintEvent(QPaintEvent*) {
    QPainter p(this);
    p.setFont(displayFont());
    p.setRenderHint(QPainter::Antialiasing);
    const QFontMetrics fm(displayFont());
    const int pad = fm.height() / 6;
    for (const Box& b : layoutWords(width())) {
        const QColor bg = bandColor(band(m_words[b.word].probability));
        if (bg.alpha() > 0) {
            p.setPen(Qt::NoPen);
            p.setBrush(bg);
            p.drawRoundedRect(b.rect, pad, pad);
        }
        p.setPen(palette().color(QPalette::WindowText));
        p.drawText(b.rect.adjusted(pad, pad, -pad, -pad), Qt::AlignLeft | Qt::AlignVCenter, b.text);
    }
    if (m_words.isEmpty() && !m_text.isEmpty()) p.drawText(rect(), Qt::AlignLeft | Qt::AlignTop, m_text);
}

bool ConfidenceText::event(QEvent* e) {
    if (e->type() == QEvent::ToolTip) {
        auto* help = static_cast<QHelpEvent*>(e);
        for (const Box& b : layoutWords(width()))
            if (b.rect.contains(help->pos())) {
                QToolTip::showText(help->globalPos(), m_words[b.word].tooltip, this, b.rect);
                return true;
            }
        QToolTip::hideText();
        e->ignore();
        return true;
    }
    return QWidget::event(e);
}

void ConfidenceText::copy() const { QApplication::clipboard()->setText(m_text); }

void ConfidenceText::contextMenuEvent(QContextMenuEvent* e) {
    QMenu menu(this);
    menu.addAction(tr("Copy translation"), this, [this] { copy(); })->setEnabled(!m_text.isEmpty());
    menu.exec(e->globalPos());
}

void ConfidenceText::keyPressEvent(QKeyEvent* e) {
    if (e->matches(QKeySequence::Copy)) return copy();
    QWidget::keyPressEvent(e);
}

}  // namespace attnlab::ui
