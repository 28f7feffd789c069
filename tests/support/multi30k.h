#pragma once
// The lines of one of Multi30k's gzip files in ../shared/data/multi30k (real sentences for the ui tests that
// need text: tst_text_translation, tst_language_detection), read by the core's reader of corpus files (plain
// or gzip); a file that cannot be read throws, naming it, so that a test never runs on no text.
#include <attnlab/text_io.h>

#include <QString>
#include <QStringList>

namespace attnlab::testing {

inline QString sharedDataDir() { return QString(ATTNLAB_SOURCE_DIR) + "/../shared/data/"; }

inline QStringList multi30kLines(const QString& name) {
    QStringList out;
    for (const std::string& line : readTextLines((sharedDataDir() + "multi30k/" + name).toStdString()))
        if (!line.empty()) out << QString::fromStdString(line);
    return out;
}

}  // namespace attnlab::testing
