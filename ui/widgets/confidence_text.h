#pragma once
// ConfidenceText: a translation in large type, each word shaded by how probable the model found it
// (P(word | what precedes), the product of its pieces' probabilities), the pieces' probabilities
// on hover, and "Copy translation" on the context menu and Ctrl+C.

#include <attnlab/translation.h>

#include <QString>
#include <QVector>
#include <QWidget>

namespace attnlab::ui {

class ConfidenceText : public QWidget {
    Q_OBJECT
public:
    explicit ConfidenceText(QWidget* parent = nullptr);

    void setResult(const TranslationResult& result);
    void clear();
    QString text() const { return m_text; }
    int wordCount() const { return static_cast<int>(m_words.size()); }
    QString toolTipOfWord(int index) const;
    int bandOfWord(int index) const;
    // As laid out at the current width: the boxes drawn (a word broken over lines has several) and
    // the right edge of the rightmost.
    int boxCount() const;
    int textRight() const;

    // The legend's bands, most probable first: a word falls in the first whose lower bound it reaches.
    static constexpr double kBandLower[] = {0.8, 0.5, 0.2, 0.0};
    static int band(double probability);
    static QColor bandColor(int band);
    static QString legendHtml();  // the bands as coloured chips with their ranges

    // The translation is the largest text on screen: this much larger than the widget's font,
    // which follows the app's text size.
    static constexpr double kScale = 1.4;
    QFont displayFont() const;

    bool hasHeightForWidth() const override { return true; }
    int heightForWidth(int width) const override;
    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

protected:
    void paintEvent(QPaintEvent* event) override;
    bool event(QEvent* event) override;
    void contextMenuEvent(QContextMenuEvent* event) override;
    void keyPressEvent(QKeyEvent* event) override;
    void changeEvent(QEvent* event) override;

private:
    struct Word {
        QString text, tooltip;
        double probability = 1.0;
    };
    struct Box {
        QRect rect;
        QString text;  // the word, or the part of it on this line
        int word = 0;
    };
    // The words' boxes at this width (wrapping like text, a word too long for a line broken
    // anywhere), and the height they need.
    QVector<Box> layoutWords(int width, int* height = nullptr) const;
    void copy() const;

    QVector<Word> m_words;
    QString m_text;
};

}  // namespace attnlab::ui
