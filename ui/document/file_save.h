#pragma once
// The app's exports written the one way AttnLab writes a file a user named (attnlab::saveToFile:
// a regular file replaced atomically, a link written through, a device or FIFO written directly).
#include <QByteArray>
#include <QImage>
#include <QString>

#include <optional>

class QCustomPlot;
class QWidget;

namespace attnlab::ui {

// Each returns the problem in words (naming the path and the cause), or nothing when written.
[[nodiscard]] std::optional<QString> saveBytes(const QString& path, const QByteArray& bytes);
// In the format the path's suffix names (.png, .jpg, .bmp, …; PNG for any other).
[[nodiscard]] std::optional<QString> saveImage(const QString& path, const QImage& image);
// A plot as PNG (at `scale`) or, for a path ending in .pdf, as PDF; width and height 0 = as shown.
[[nodiscard]] std::optional<QString> savePlot(QCustomPlot* plot, const QString& path, int width = 0, int height = 0,
                                              double scale = 1.0);

// Where export dialogs open: the folder of the last file exported (remembered in QSettings under
// kExportFolderKey, so also in the next run), the working directory before the first.
inline constexpr char kExportFolderKey[] = "exportFolder";
QString exportStartPath(const QString& file_name);  // that folder / file_name
void rememberExportFolder(const QString& chosen_path);
// A save dialog opened there; the folder of the file chosen is remembered. Empty when cancelled.
QString askExportPath(QWidget* parent, const QString& title, const QString& file_name, const QString& filter);

}  // namespace attnlab::ui
