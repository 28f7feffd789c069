#include "plots/plot_style.h"

#include <qcustomplot.h>

#include <QEvent>

#include <algorithm>
#include <array>
#include <cmath>

namespace attnlab::ui {

QStringList toQStringList(const std::vector<std::string>& v) {
    QStringList out;
    for (const auto& s : v) out << QString::fromStdString(s);
    return out;
}

void applyTextSize(QCustomPlot* plot) {
    const QFont base = plot->font();
    QFont title = base;
    title.setPointSizeF(base.pointSizeF() * kTitleScale);
    title.setBold(true);
    auto styleAxis = [&](QCPAxis* a) {
        a->setTickLabelFont(base);
        a->setSelectedTickLabelFont(base);
        a->setLabelFont(base);
        a->setSelectedLabelFont(base);
    };
    for (QCPAxisRect* r : plot->axisRects())
        for (QCPAxis* a : r->axes()) styleAxis(a);
    for (int i = 0; i < plot->plotLayout()->elementCount(); ++i) {
        QCPLayoutElement* e = plot->plotLayout()->elementAt(i);
        if (auto* t = qobject_cast<QCPTextElement*>(e)) {
            t->setFont(title);
            t->setSelectedFont(title);
        } else if (auto* s = qobject_cast<QCPColorScale*>(e)) {
            styleAxis(s->axis());
        }
    }
    if (plot->legend) {  // wherever it is laid out; QCPLegend passes the font on to its items
        plot->legend->setFont(base);
        plot->legend->setSelectedFont(base);
    }
    plot->replot();
}

namespace {
// A title that wraps to the width it is given. Its minimum width is one line height (the plot, not
// the title, decides the width); its height is what the text needs at the width of the last
// layout, and a layout that changes the number of lines lays out once more.
class WrappedTitle : public QCPTextElement {
public:
    WrappedTitle(QCustomPlot* plot, const QString& text) : QCPTextElement(plot, text) {
        setTextFlags(Qt::AlignCenter | Qt::TextWordWrap);
    }
    QSize minimumOuterSizeHint() const override { return {minimumWidth(), outerHeight()}; }
    QSize maximumOuterSizeHint() const override { return {QWIDGETSIZE_MAX, outerHeight()}; }

protected:
    void draw(QCPPainter* painter) override {
        // Laid out for another number of lines (the width changed): once more, once per width.
        if (outerHeight() != mOuterRect.height() && mRect.width() != m_relaid_at) {
            m_relaid_at = mRect.width();
            mParentPlot->replot(QCustomPlot::rpQueuedReplot);
        }
        QCPTextElement::draw(painter);
    }

private:
    int minimumWidth() const { return QFontMetrics(mainFont()).height() + mMargins.left() + mMargins.right(); }
    int outerHeight() const {
        if (mText.isEmpty()) return mMargins.top() + mMargins.bottom();
        const int width = mRect.width() > 0 ? mRect.width() : QWIDGETSIZE_MAX / 2;
        const QRect r = QFontMetrics(mainFont()).boundingRect(QRect(0, 0, width, 1 << 20), mTextFlags, mText);
        return r.height() + mMargins.top() + mMargins.bottom();
    }
    int m_relaid_at = -1;
};

bool isNumeric(const QCPAxis* axis) {
    const auto ticker = axis->ticker();
    return ticker && !ticker.dynamicCast<QCPAxisTickerText>() && !ticker.dynamicCast<QCPAxisTickerLog>();
}

int ticksThatFit(const QCPAxis* axis) {
    const QFontMetrics fm(axis->tickLabelFont());
    const bool vertical = axis->orientation() == Qt::Vertical;
    const double length = vertical ? axis->axisRect()->height() : axis->axisRect()->width();
    const double need = vertical ? fm.height() * 1.5 : fm.horizontalAdvance(QStringLiteral("−0.000")) * 1.3;
    if (length <= 0) return kMaxTicks;  // not laid out yet
    return std::clamp(int(length / need), 2, kMaxTicks);
}

// Re-applies the text size when the plot's font changes; fits the ticks after every layout.
class FontFollower : public QObject {
public:
    explicit FontFollower(QCustomPlot* plot) : QObject(plot), m_plot(plot) {
        plot->installEventFilter(this);
        connect(plot, &QCustomPlot::afterLayout, this, [plot] {
            if (fitTicks(plot)) plot->replot(QCustomPlot::rpQueuedReplot);
        });
    }
    bool eventFilter(QObject* watched, QEvent* event) override {
        if (watched == m_plot && event->type() == QEvent::FontChange) applyTextSize(m_plot);
        return false;
    }

private:
    QCustomPlot* m_plot;
};

struct Stop {
    double at;
    QColor color;
};

const std::vector<Stop>& stops(Palette p) {
    // Viridis and cividis: matplotlib's maps sampled at 9 points (perceptually uniform; cividis
    // is designed for colour-vision deficiency). High contrast: white to black through saturated
    // orange, for washed-out projectors.
    static const std::array<std::vector<Stop>, kPaletteCount> table = {{
        {{0.0, QColor(255, 255, 255)}, {1.0, QColor(8, 48, 107)}},
        {{0.0, QColor("#440154")},
         {0.125, QColor("#472d7b")},
         {0.25, QColor("#3b528b")},
         {0.375, QColor("#2c728e")},
         {0.5, QColor("#21918c")},
         {0.625, QColor("#28ae80")},
         {0.75, QColor("#5ec962")},
         {0.875, QColor("#addc30")},
         {1.0, QColor("#fde725")}},
        {{0.0, QColor("#00224e")},
         {0.125, QColor("#123570")},
         {0.25, QColor("#3b496c")},
         {0.375, QColor("#575d6d")},
         {0.5, QColor("#707173")},
         {0.625, QColor("#8a8779")},
         {0.75, QColor("#a69d75")},
         {0.875, QColor("#c4b56c")},
         {1.0, QColor("#fee838")}},
        {{0.0, QColor(255, 255, 255)}, {0.5, QColor(230, 85, 13)}, {1.0, QColor(0, 0, 0)}},
    }};
    return table[std::clamp(int(p), 0, kPaletteCount - 1)];
}
}  // namespace

QCPTextElement* makeTitle(QCustomPlot* plot, const QString& text) { return new WrappedTitle(plot, text); }

void showLegendBelow(QCustomPlot* plot) {
    plot->legend->setVisible(true);
    plot->axisRect()->insetLayout()->take(plot->legend);
    const int row = plot->plotLayout()->rowCount();
    plot->plotLayout()->addElement(row, 0, plot->legend);
    plot->plotLayout()->setRowStretchFactor(row, 0.001);
    plot->legend->setFillOrder(QCPLegend::foColumnsFirst);
    plot->legend->setWrap(4);
    plot->legend->setBorderPen(Qt::NoPen);
    plot->legend->setMargins(QMargins(4, 0, 4, 4));
}

bool fitTicks(QCustomPlot* plot) {
    std::vector<QCPAxis*> axes;
    for (QCPAxisRect* r : plot->axisRects())
        for (QCPAxis* a : r->axes()) axes.push_back(a);
    for (int i = 0; i < plot->plotLayout()->elementCount(); ++i)
        if (auto* s = qobject_cast<QCPColorScale*>(plot->plotLayout()->elementAt(i))) axes.push_back(s->axis());
    bool changed = false;
    for (QCPAxis* a : axes) {
        if (!a->visible() || !isNumeric(a)) continue;
        const int n = ticksThatFit(a);
        if (a->ticker()->tickCount() == n) continue;
        a->ticker()->setTickCount(n);
        changed = true;
    }
    return changed;
}

void followTextSize(QCustomPlot* plot) {
    new FontFollower(plot);
    applyTextSize(plot);
}

QString paletteName(Palette p) {
    switch (p) {
    case Palette::Blues: return QObject::tr("White → blue (default)");
    case Palette::Viridis: return QObject::tr("Viridis (perceptually uniform)");
    case Palette::Cividis: return QObject::tr("Cividis (colour-blind safe)");
    case Palette::HighContrast: return QObject::tr("High contrast (white → orange → black)");
    }
    return {};
}

QString paletteKey(Palette p) {
    static const char* keys[] = {"blues", "viridis", "cividis", "high-contrast"};
    return keys[std::clamp(int(p), 0, kPaletteCount - 1)];
}

Palette paletteFromKey(const QString& key) {
    for (int i = 0; i < kPaletteCount; ++i)
        if (paletteKey(Palette(i)) == key) return Palette(i);
    return Palette::Blues;
}

QColor paletteColor(Palette p, double v) {
    const auto& s = stops(p);
    v = std::clamp(std::isfinite(v) ? v : 0.0, 0.0, 1.0);
    size_t i = 1;
    while (i + 1 < s.size() && s[i].at < v) ++i;
    const double t = (v - s[i - 1].at) / (s[i].at - s[i - 1].at);
    auto mix = [t](int a, int b) { return int(std::lround(a + (b - a) * t)); };
    const QColor &a = s[i - 1].color, &b = s[i].color;
    return QColor(mix(a.red(), b.red()), mix(a.green(), b.green()), mix(a.blue(), b.blue()));
}

QCPColorGradient paletteGradient(Palette p) {
    QCPColorGradient g;
    g.clearColorStops();
    for (const Stop& s : stops(p)) g.setColorStopAt(s.at, s.color);
    g.setColorInterpolation(QCPColorGradient::ciRGB);
    return g;
}

}  // namespace attnlab::ui
