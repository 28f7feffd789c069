#include "document/file_save.h"

#include <attnlab/errors.h>
#include <attnlab/file_write.h>

#include <qcustomplot.h>
#include <QBuffer>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QImageWriter>
#include <QSettings>
#include <QTemporaryDir>

namespace attnlab::ui {

std::optional<QString> saveBytes(const QString& path, const QByteArray& bytes) {
    try {
        attnlab::saveToFile(QFile::encodeName(path).toStdString(), bytes.toStdString());
        return std::nullopt;
    } catch (const attnlab::Error& e) {
        return QString::fromStdString(e.what());
    }
}

std::optional<QString> saveImage(const QString& path, const QImage& image) {
    QByteArray format = QFileInfo(path).suffix().toLower().toLatin1();
    if (!QImageWriter::supportedImageFormats().contains(format)) format = "png";
    QByteArray bytes;
    QBuffer buffer(&bytes);
    buffer.open(QIODevice::WriteOnly);
    if (!image.save(&buffer, format.constData()))
        return QObject::tr("%1: the image could not be encoded as %2").arg(path, QString::fromLatin1(format));
    return saveBytes(path, bytes);
}

namespace {
// The plot's title (the first text element of its layout): what an exported figure shows, e.g. "Cross-attention
// — layer 2, ALTI+" (the Method), written into the file as well as drawn (issue 54).
QString plotTitle(QCustomPlot* plot) {
    QCPLayoutGrid* layout = plot->plotLayout();
    for (int i = 0; i < layout->elementCount(); ++i)
        if (const auto* title = qobject_cast<QCPTextElement*>(layout->elementAt(i))) return title->text();
    return {};
}
}  // namespace

// The title goes into the file where the format keeps text: a PNG's "Title" text chunk (QImage::text reads it
// back), a PDF's document title.
std::optional<QString> savePlot(QCustomPlot* plot, const QString& path, int width, int height, double scale) {
    const QString title = plotTitle(plot);
    if (!path.endsWith(".pdf", Qt::CaseInsensitive)) {
        QImage image = plot->toPixmap(width, height, scale).toImage();
        if (!title.isEmpty()) image.setText(QStringLiteral("Title"), title);
        return saveImage(path, image);
    }
    // QCustomPlot writes a PDF only to a file name: it goes to a private folder first, then its
    // bytes to the user's path.
    QTemporaryDir dir;
    const QString staged = dir.filePath("figure.pdf");
    QFile file(staged);
    if (!dir.isValid() ||
        !plot->savePdf(staged, width, height, QCP::epAllowCosmetic, QStringLiteral("AttnLab"), title) ||
        !file.open(QIODevice::ReadOnly))
        return QObject::tr("%1: the PDF could not be made (no writable temporary folder?)").arg(path);
    return saveBytes(path, file.readAll());
}

QString exportStartPath(const QString& file_name) {
    const QString folder = QSettings().value(kExportFolderKey).toString();
    if (folder.isEmpty() || !QFileInfo(folder).isDir()) return file_name;  // the working directory
    return QDir(folder).filePath(file_name);
}

void rememberExportFolder(const QString& chosen_path) {
    QSettings().setValue(kExportFolderKey, QFileInfo(chosen_path).absolutePath());
}

QString askExportPath(QWidget* parent, const QString& title, const QString& file_name, const QString& filter) {
    const QString path = QFileDialog::getSaveFileName(parent, title, exportStartPath(file_name), filter);
    if (!path.isEmpty()) rememberExportFolder(path);
    return path;
}

}  // namespace attnlab::ui
