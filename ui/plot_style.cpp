#include "plot_style.h"

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
// Re-applies the text size when the plot's font changes.
class FontFollower : public QObject {
public:
    explicit FontFollower(QCustomPlot* plot) : QObject(plot), m_plot(plot) { plot->installEventFilter(this); }
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
