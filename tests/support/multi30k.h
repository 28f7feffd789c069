#pragma once
// The lines of one of Multi30k's gzip files in ../shared/data/multi30k (real sentences for the ui tests that
// need text: tst_text_translation, tst_language_detection); empty when the file cannot be read.
#include <QByteArray>
#include <QString>
#include <QStringList>

#include <zlib.h>

namespace attnlab::testing {

inline QString sharedDataDir() { return QString(ATTNLAB_SOURCE_DIR) + "/../shared/data/"; }

inline QStringList multi30kLines(const QString& name) {
    gzFile f = gzopen((sharedDataDir() + "multi30k/" + name).toLocal8Bit().constData(), "rb");
    if (!f) return {};
    QByteArray all;
    char buffer[65536];
    int n;
    while ((n = gzread(f, buffer, sizeof buffer)) > 0) all.append(buffer, n);
    gzclose(f);
    return QString::fromUtf8(all).split('\n', Qt::SkipEmptyParts);
}

}  // namespace attnlab::testing
