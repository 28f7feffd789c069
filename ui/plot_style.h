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

namespace attnlab::ui {

// Pieces, words, labels: std strings (UTF-8) as a QStringList.
QStringList toQStringList(const std::vector<std::string>& v);

// Sets every text of `plot` from plot->font(): tick labels, axis titles and the colour scales'
// numbers at the font's size, legends too, titles (QCPTextElement) 20 % larger and bold; then
// replots. followTextSize() does it now and again whenever the plot's font changes (the app's text
// size, set with QApplication::setFont, reaches the plot as a FontChange).
void applyTextSize(QCustomPlot* plot);
void followTextSize(QCustomPlot* plot);
inline constexpr double kTitleScale = 1.2;

// Colour maps for weights in [0, 1].
enum class Palette { Blues = 0, Viridis = 1, Cividis = 2, HighContrast = 3 };
inline constexpr int kPaletteCount = 4;
QString paletteName(Palette palette);                // shown in the View menu
QString paletteKey(Palette palette);                 // saved in the settings: "blues", "viridis", ...
Palette paletteFromKey(const QString& key);          // unknown keys give Blues
QColor paletteColor(Palette palette, double value);  // value clamped to [0, 1]
QCPColorGradient paletteGradient(Palette palette);

}  // namespace attnlab::ui
