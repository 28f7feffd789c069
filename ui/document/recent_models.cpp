#include "document/recent_models.h"

#include "document/view_context.h"

#include <attnlab/hub.h>

#include <QDir>
#include <QFileInfo>
#include <QSettings>

namespace attnlab::ui {

namespace {
bool stillThere(const QString& entry) {
    if (QFileInfo::exists(entry)) return true;
    return parseHubModelName(entry.toStdString()) && ViewContext::cachedModel(entry).has_value();
}
}  // namespace

QString RecentModels::entryFor(const QString& dir) {
    if (const auto name = hubNameOfSnapshot(dir.toStdString()))
        return QString::fromStdString(hubModelNameString(*name));
    return dir;
}

QStringList RecentModels::entries() {
    QSettings s;
    const QStringList stored = s.value(kSettingsKey).toStringList();
    QStringList kept;
    for (const QString& e : stored)
        if (kept.size() < kMax && !kept.contains(e) && stillThere(e)) kept << e;
    if (kept != stored) s.setValue(kSettingsKey, kept);
    return kept;
}

void RecentModels::remember(const QString& dir) {
    const QString entry = entryFor(dir);
    QStringList recent = entries();
    recent.removeAll(entry);
    recent.prepend(entry);
    while (recent.size() > kMax) recent.removeLast();
    QSettings().setValue(kSettingsKey, recent);
}

QString RecentModels::displayName(const QString& dir) {
    if (const auto name = hubNameOfSnapshot(dir.toStdString()))
        return QString::fromStdString(hubModelNameString(*name));
    return QFileInfo(dir).fileName();
}

QString RecentModels::label(const QString& entry) {
    if (!QFileInfo::exists(entry)) return entry;  // a hub name
    return QStringLiteral("%1 — %2").arg(QFileInfo(entry).fileName(), QDir::toNativeSeparators(entry));
}

}  // namespace attnlab::ui
