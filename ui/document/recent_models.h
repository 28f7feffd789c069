#pragma once
// RecentModels: the models opened last (File › Recent models), newest first, at most kMax, kept in the
// settings under kSettingsKey. A model from the Hugging Face cache is remembered by its name
// (ORG/NAME[@REVISION], opened again through the cache), any other by its path. Entries whose folder
// or file is gone, or whose name the cache no longer holds, are dropped when the list is read.

#include <QString>
#include <QStringList>

namespace attnlab::ui {

class RecentModels {
public:
    static constexpr int kMax = 9;
    static constexpr const char* kSettingsKey = "recentModels";

    // The list, pruned (and saved pruned).
    static QStringList entries();
    // A model loaded from `dir` goes first.
    static void remember(const QString& dir);
    // How a model loaded from `dir` is opened again (ViewContext::openModel): its hub name for a snapshot
    // of the Hugging Face cache, else `dir` (what is remembered here and in the translation history).
    static QString entryFor(const QString& dir);
    // For a menu: the name as it is for a hub model, "FOLDER — PATH" for a path.
    static QString label(const QString& entry);
    // How the window names a model loaded from `dir`: its hub name (ORG/NAME[@REVISION]) for a snapshot of
    // the Hugging Face cache (whose folder is a commit), else the folder's name.
    static QString displayName(const QString& dir);
};

}  // namespace attnlab::ui
