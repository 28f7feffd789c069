#pragma once
// An animated GIF from frames (Qt writes no GIF; Debian's giflib does): each frame quantized to its
// own 256-colour map (giflib's median cut), looping for ever, written atomically.

#include <QImage>
#include <QList>
#include <QString>

#include <optional>

namespace attnlab::ui {

// Frames of any size are scaled to the first's. The problem, or nothing.
[[nodiscard]] std::optional<QString> writeAnimatedGif(const QString& path, const QList<QImage>& frames, int delay_ms);

}  // namespace attnlab::ui
