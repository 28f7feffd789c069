#include "plots/gif_writer.h"

#include <gif_lib.h>

#include "document/file_save.h"

#include <QByteArray>
#include <QObject>

#include <vector>

namespace attnlab::ui {

namespace {
QString gifError(int code) {
    const char* s = GifErrorString(code);
    return s ? QString::fromUtf8(s) : QStringLiteral("giflib error %1").arg(code);
}

// One frame: its local colour map and the palette index of every pixel.
bool putFrame(GifFileType* gif, const QImage& rgb, int delay_cs) {
    const int w = rgb.width(), h = rgb.height();
    std::vector<GifByteType> r(size_t(w) * h), g(r.size()), b(r.size()), indices(r.size());
    for (int y = 0; y < h; ++y) {
        const uchar* line = rgb.constScanLine(y);
        for (int x = 0; x < w; ++x) {
            const size_t i = size_t(y) * w + x;
            r[i] = line[3 * x];
            g[i] = line[3 * x + 1];
            b[i] = line[3 * x + 2];
        }
    }
    int colours = 256;
    std::vector<GifColorType> palette(256);
    if (GifQuantizeBuffer(unsigned(w), unsigned(h), &colours, r.data(), g.data(), b.data(), indices.data(),
                          palette.data()) != GIF_OK)
        return false;
    ColorMapObject* map = GifMakeMapObject(256, palette.data());
    if (!map) return false;
    GraphicsControlBlock gcb{DISPOSE_DO_NOT, false, delay_cs, NO_TRANSPARENT_COLOR};
    GifByteType extension[4];
    const size_t length = EGifGCBToExtension(&gcb, extension);
    bool ok = EGifPutExtension(gif, GRAPHICS_EXT_FUNC_CODE, int(length), extension) == GIF_OK &&
              EGifPutImageDesc(gif, 0, 0, w, h, false, map) == GIF_OK;
    for (int y = 0; ok && y < h; ++y) ok = EGifPutLine(gif, indices.data() + size_t(y) * w, w) == GIF_OK;
    GifFreeMapObject(map);
    return ok;
}

// giflib's output function: appends to the QByteArray behind the file's UserData.
int appendBytes(GifFileType* gif, const GifByteType* data, int length) {
    static_cast<QByteArray*>(gif->UserData)->append(reinterpret_cast<const char*>(data), length);
    return length;
}
}  // namespace

std::optional<QString> writeAnimatedGif(const QString& path, const QList<QImage>& frames, int delay_ms) {
    if (frames.isEmpty()) return QObject::tr("no frames to write");
    const QSize size = frames.first().size();
    // Encoded in memory, then written the one way a user's file is written (saveBytes).
    QByteArray bytes;
    int error = 0;
    GifFileType* gif = EGifOpen(&bytes, appendBytes, &error);
    if (!gif) return QObject::tr("cannot write %1: %2").arg(path, gifError(error));
    EGifSetGifVersion(gif, true);
    bool ok = EGifPutScreenDesc(gif, size.width(), size.height(), 8, 0, nullptr) == GIF_OK;
    // Loop for ever (the NETSCAPE2.0 application extension).
    const GifByteType app[] = {'N', 'E', 'T', 'S', 'C', 'A', 'P', 'E', '2', '.', '0'};
    const GifByteType loop[] = {1, 0, 0};
    ok = ok && EGifPutExtensionLeader(gif, APPLICATION_EXT_FUNC_CODE) == GIF_OK &&
         EGifPutExtensionBlock(gif, sizeof app, app) == GIF_OK &&
         EGifPutExtensionBlock(gif, sizeof loop, loop) == GIF_OK && EGifPutExtensionTrailer(gif) == GIF_OK;
    for (const QImage& frame : frames) {
        if (!ok) break;
        const QImage rgb = frame.scaled(size).convertToFormat(QImage::Format_RGB888);
        ok = putFrame(gif, rgb, std::max(1, delay_ms / 10));
    }
    const int last_error = gif->Error;
    if (EGifCloseFile(gif, &error) != GIF_OK) ok = false;
    if (!ok) return QObject::tr("cannot write %1: %2").arg(path, gifError(last_error ? last_error : error));
    return saveBytes(path, bytes);
}

}  // namespace attnlab::ui
