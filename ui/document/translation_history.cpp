#include "document/translation_history.h"

#include "document/file_save.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSettings>
#include <QStandardPaths>
#include <QTimer>

#include <variant>

namespace attnlab::ui {

namespace {
// The file's keys: the one owner, for the reader and the writer.
namespace keys {
constexpr char kFormat[] = "format";
constexpr char kVersion[] = "version";
constexpr char kEntries[] = "entries";
constexpr char kWhen[] = "when";
constexpr char kSentence[] = "sentence";
constexpr char kTranslation[] = "translation";
constexpr char kModels[] = "models";
constexpr char kModelLabel[] = "model_label";
constexpr char kSourceLanguage[] = "source_language";
constexpr char kTargetLanguage[] = "target_language";
constexpr char kBeamSize[] = "beam_size";
constexpr char kLengthPenalty[] = "length_penalty";
constexpr char kMaxLength[] = "max_length";
}  // namespace keys
constexpr char kFormatName[] = "attnlab-translation-history";
constexpr int kVersion = 1;

QJsonObject toJson(const HistoryEntry& e) {
    return {{keys::kWhen, e.when.toUTC().toString(Qt::ISODateWithMs)},
            {keys::kSentence, e.sentence},
            {keys::kTranslation, e.translation},
            {keys::kModels, QJsonArray::fromStringList(e.models)},
            {keys::kModelLabel, e.model_label},
            {keys::kSourceLanguage, e.source_language},
            {keys::kTargetLanguage, e.target_language},
            {keys::kBeamSize, e.beam_size},
            {keys::kLengthPenalty, e.length_penalty},
            {keys::kMaxLength, e.max_length}};
}

// An entry, or what is wrong with it.
std::variant<HistoryEntry, QString> fromJson(const QJsonValue& value) {
    if (!value.isObject()) return QObject::tr("not an object");
    const QJsonObject o = value.toObject();
    for (const char* key : {keys::kWhen, keys::kSentence, keys::kTranslation, keys::kModelLabel, keys::kSourceLanguage,
                            keys::kTargetLanguage})
        if (!o.value(key).isString()) return QObject::tr("\"%1\" is not text").arg(QLatin1String(key));
    for (const char* key : {keys::kBeamSize, keys::kLengthPenalty, keys::kMaxLength})
        if (!o.value(key).isDouble()) return QObject::tr("\"%1\" is not a number").arg(QLatin1String(key));
    HistoryEntry e;
    e.when = QDateTime::fromString(o.value(keys::kWhen).toString(), Qt::ISODateWithMs);
    if (!e.when.isValid()) return QObject::tr("\"%1\" is not a date and time").arg(QLatin1String(keys::kWhen));
    const QJsonArray models = o.value(keys::kModels).toArray();
    for (const QJsonValue& m : models)
        if (m.isString()) e.models << m.toString();
    if (e.models.isEmpty() || e.models.size() != models.size())
        return QObject::tr("\"%1\" is not a list of model names").arg(QLatin1String(keys::kModels));
    e.sentence = o.value(keys::kSentence).toString();
    e.translation = o.value(keys::kTranslation).toString();
    e.model_label = o.value(keys::kModelLabel).toString();
    e.source_language = o.value(keys::kSourceLanguage).toString();
    e.target_language = o.value(keys::kTargetLanguage).toString();
    e.beam_size = o.value(keys::kBeamSize).toInt();
    e.length_penalty = o.value(keys::kLengthPenalty).toDouble();
    e.max_length = o.value(keys::kMaxLength).toInt();
    return e;
}

// The entries of a file's bytes, or what is wrong with them.
std::variant<QList<HistoryEntry>, QString> parse(const QByteArray& bytes) {
    QJsonParseError error;
    const QJsonDocument doc = QJsonDocument::fromJson(bytes, &error);
    if (error.error != QJsonParseError::NoError)
        return QObject::tr("not JSON (%1 at byte %2)").arg(error.errorString()).arg(error.offset);
    const QJsonObject root = doc.object();
    if (root.value(keys::kFormat).toString() != QLatin1String(kFormatName))
        return QObject::tr("\"%1\" is not \"%2\"").arg(QLatin1String(keys::kFormat), QLatin1String(kFormatName));
    if (root.value(keys::kVersion).toInt() != kVersion)
        return QObject::tr("version %1 is not %2").arg(root.value(keys::kVersion).toVariant().toString()).arg(kVersion);
    if (!root.value(keys::kEntries).isArray())
        return QObject::tr("\"%1\" is not a list").arg(QLatin1String(keys::kEntries));
    QList<HistoryEntry> out;
    const QJsonArray entries = root.value(keys::kEntries).toArray();
    for (int i = 0; i < entries.size() && out.size() < TranslationHistory::kMaxEntries; ++i) {
        auto e = fromJson(entries.at(i));
        if (auto* problem = std::get_if<QString>(&e)) return QObject::tr("entry %1: %2").arg(i + 1).arg(*problem);
        out << std::get<HistoryEntry>(std::move(e));
    }
    return out;
}

// A name beside `path` that nothing holds: path.corrupt, else path.corrupt.2, .3, …
QString setAsideName(const QString& path) {
    QString name = path + TranslationHistory::kCorruptSuffix;
    for (int n = 2; QFileInfo::exists(name); ++n)
        name = path + TranslationHistory::kCorruptSuffix + QString(".%1").arg(n);
    return name;
}
}  // namespace

bool HistoryEntry::sameSetting(const HistoryEntry& o) const {
    return models == o.models && source_language == o.source_language && target_language == o.target_language &&
           beam_size == o.beam_size && length_penalty == o.length_penalty && max_length == o.max_length;
}

bool HistoryEntry::matches(const QString& text) const {
    for (const QString& field : {sentence, translation, model_label, source_language, target_language})
        if (field.contains(text, Qt::CaseInsensitive)) return true;
    return false;
}

QString TranslationHistory::defaultPath() {
    return QDir(QStandardPaths::writableLocation(QStandardPaths::AppDataLocation)).filePath(kFileName);
}

TranslationHistory::TranslationHistory(const QString& path, QObject* parent)
    : QObject(parent), m_path(path), m_save_timer(new QTimer(this)) {
    m_save_timer->setSingleShot(true);
    m_save_timer->setInterval(kSaveDelayMs);
    connect(m_save_timer, &QTimer::timeout, this, [this] {
        if (const auto problem = save()) Q_EMIT saveFailed(*problem);
    });
}

TranslationHistory::~TranslationHistory() {
    if (const auto problem = flush())
        qWarning("%s", qPrintable(tr("The translation history could not be written: %1").arg(*problem)));
}

std::optional<QString> TranslationHistory::flush() {
    if (!m_save_timer->isActive()) return std::nullopt;
    m_save_timer->stop();
    return save();
}

std::optional<QString> TranslationHistory::load() {
    m_entries.clear();
    m_blocked = false;
    QFile file(m_path);
    if (!file.exists()) return std::nullopt;
    QString problem;
    QByteArray bytes;
    // Bounded by what is read, not by the size first seen (the file may grow meanwhile); what is not a
    // file (a folder, a pipe) is neither opened nor set aside.
    if (!QFileInfo(m_path).isFile()) {  // not ours to move: left as it is, and no history is kept
        m_blocked = true;
        return tr("The translation history %1 is not a file: no history is kept until it is moved away")
            .arg(QDir::toNativeSeparators(m_path));
    }
    if (!file.open(QIODevice::ReadOnly))
        problem = file.errorString();
    else if ((bytes = file.read(kMaxFileBytes + 1)).size() > kMaxFileBytes)
        problem = tr("more than %1 bytes, more than a history of %2 entries holds").arg(kMaxFileBytes).arg(kMaxEntries);
    else {
        auto parsed = parse(bytes);
        file.close();
        if (auto* entries = std::get_if<QList<HistoryEntry>>(&parsed)) {
            m_entries = std::move(*entries);
            Q_EMIT changed();
            return std::nullopt;
        }
        problem = std::get<QString>(parsed);
    }
    const QString aside = setAsideName(m_path);
    m_blocked = !QFile::rename(m_path, aside);
    if (m_blocked)
        return tr("The translation history %1 could not be read (%2), nor set aside: no history is kept until it "
                  "is moved away")
            .arg(QDir::toNativeSeparators(m_path), problem);
    Q_EMIT changed();
    return tr("The translation history %1 could not be read (%2): it was kept as %3, and a new history begins")
        .arg(QDir::toNativeSeparators(m_path), problem, QDir::toNativeSeparators(aside));
}

QList<HistoryEntry> TranslationHistory::search(const QString& text) const {
    QList<HistoryEntry> out;
    const QString wanted = text.trimmed();
    for (const HistoryEntry& e : m_entries)
        if (wanted.isEmpty() || e.matches(wanted)) out << e;
    return out;
}

void TranslationHistory::add(const HistoryEntry& entry) {
    if (!enabled() || m_blocked || entry.sentence.trimmed().isEmpty()) return;
    if (entry.sentence.size() > kMaxTextChars || entry.translation.size() > kMaxTextChars) return;  // a text
    if (!m_entries.isEmpty()) {
        const HistoryEntry& newest = m_entries.first();
        // Only a sentence that grew: one that shrank may begin the next sentence ("A " of "A woman reads." typed
        // after "A man rides."), and replacing the newest then would lose a finished sentence.
        const bool typing = newest.sameSetting(entry) && entry.sentence.startsWith(newest.sentence);
        if (typing) m_entries.removeFirst();
    }
    m_entries.removeIf([&](const HistoryEntry& e) { return e.sentence == entry.sentence && e.sameSetting(entry); });
    m_entries.prepend(entry);
    while (m_entries.size() > kMaxEntries) m_entries.removeLast();
    Q_EMIT changed();
    m_save_timer->start();  // (again): written once the additions pause
}

std::optional<QString> TranslationHistory::clear() {
    m_save_timer->stop();
    m_entries.clear();
    Q_EMIT changed();
    if (QFile::exists(m_path) && !QFile::remove(m_path))
        return tr("The translation history %1 could not be removed").arg(QDir::toNativeSeparators(m_path));
    m_blocked = false;  // asked for: an unreadable file is gone with the rest
    return std::nullopt;
}

bool TranslationHistory::enabled() { return QSettings().value(kEnabledKey, true).toBool(); }

void TranslationHistory::setEnabled(bool on) {
    if (const auto problem = on ? std::nullopt : flush()) Q_EMIT saveFailed(*problem);
    QSettings().setValue(kEnabledKey, on);
    Q_EMIT changed();
}

std::optional<QString> TranslationHistory::save() const {
    QJsonArray entries;
    for (const HistoryEntry& e : m_entries) entries.append(toJson(e));
    const QJsonObject root{{keys::kFormat, kFormatName}, {keys::kVersion, kVersion}, {keys::kEntries, entries}};
    if (!QDir().mkpath(QFileInfo(m_path).absolutePath()))
        return tr("The translation history's folder %1 could not be made")
            .arg(QDir::toNativeSeparators(QFileInfo(m_path).absolutePath()));
    return saveBytes(m_path, QJsonDocument(root).toJson(QJsonDocument::Indented));
}

}  // namespace attnlab::ui
