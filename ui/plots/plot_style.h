#pragma once
// What every plot shares: text that follows the widget's font (the app's text size), and the
// colour maps offered for the attention heatmaps. The one place these are decided.

#include <QColor>
#include <QString>
#include <QStringList>

#include <string>
#include <vector>

class QCustomPlot;
class QCPColorGradient;
class QCPTextElement;

namespace attnlab::ui {

// Pieces, words, labels: std strings (UTF-8) as a QStringList.
QStringList toQStringList(const std::vector<std::string>& v);

// Sets every text of `plot` from plot->font(): tick labels, axis titles and the colour scales'
// numbers at the font's size, legends too, titles (QCPTextElement) 20 % larger and bold; then
// replots. followTextSize() does it now and again whenever the plot's font changes (the app's text
// size, set with QApplication::setFont, reaches the plot as a FontChange), and after every layout
// thins the numeric axes' ticks (colour scales' too) to the room they have (fitTicks).
void applyTextSize(QCustomPlot* plot);
void followTextSize(QCustomPlot* plot);
inline constexpr double kTitleScale = 1.2;

// A plot's title: wrapped onto as many lines as the plot's width needs (never clipped at both
// sides when the text is large), and never widening the plot. Every plot's title is made here.
QCPTextElement* makeTitle(QCustomPlot* plot, const QString& text);

// Shows the legend in a row of its own under the axes (entries side by side, wrapping), where no
// curve runs beneath it; call once the plot's other rows are laid out.
void showLegendBelow(QCustomPlot* plot);

// Sets each numeric axis's tick count to what its length has room for at its tick label font: a
// label height and a half apart on a vertical axis, the width of a label and a gap apart on a
// horizontal one; between 2 and QCustomPlot's default 5. True when a count changed (replot).
bool fitTicks(QCustomPlot* plot);
inline constexpr int kMaxTicks = 5;

// Colour maps for weights in [0, 1].
enum class Palette { Blues = 0, Viridis = 1, Cividis = 2, HighContrast = 3 };
inline constexpr int kPaletteCount = 4;
QString paletteName(Palette palette);                // shown in the View menu
QString paletteKey(Palette palette);                 // saved in the settings: "blues", "viridis", ...
Palette paletteFromKey(const QString& key);          // unknown keys give Blues
QColor paletteColor(Palette palette, double value);  // value clamped to [0, 1]
QCPColorGradient paletteGradient(Palette palette);

}  // namespace attnlab::ui
