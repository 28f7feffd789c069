#pragma once
// TranslationHistory: what was translated in the sentence row, newest first, kept on this computer only
// (the app's data folder, QStandardPaths::AppDataLocation, translation_history.json): searchable, each
// entry reopened with its model, languages and decoding options, clearable, at most kMaxEntries, the
// file replaced atomically (saveBytes, attnlab::saveToFile). Turned off in the settings (kEnabledKey):
// nothing more is kept or written. A file that cannot be read is never overwritten: it is set aside
// beside itself (kCorruptSuffix) and a new history begins, which load() says in words.
// The file's keys have their one owner in translation_history.cpp.

#include <QDateTime>
#include <QList>
#include <QObject>
#include <QString>
#include <QStringList>

#include <optional>

class QTimer;

namespace attnlab::ui {

struct HistoryEntry {
    QDateTime when;
    QString sentence;
    QString translation;
    // How the model is opened again (RecentModels::entryFor: a folder, or a Hugging Face name); a
    // pivot's legs, in order.
    QStringList models;
    QString model_label;  // as the direction switch named it (modelLabel)
    // A multilingual model's languages (empty for a model of one pair), and the decoding options.
    QString source_language, target_language;
    int beam_size = 0;
    double length_penalty = 0.0;
    int max_length = 0;

    // The same model, languages and options (what would translate it the same way).
    bool sameSetting(const HistoryEntry& other) const;
    bool matches(const QString& text) const;  // `text` in the sentence, translation, model or languages
};

class TranslationHistory : public QObject {
    Q_OBJECT
public:
    static constexpr int kMaxEntries = 1000;
    static constexpr const char* kEnabledKey = "translationHistory/enabled";  // QSettings; on by default
    static constexpr const char* kFileName = "translation_history.json";
    static constexpr const char* kCorruptSuffix = ".corrupt";
    // A sentence or a translation longer than this is not kept (a text pasted into the sentence field): so
    // that kMaxEntries of the largest kept stay under kMaxFileBytes, which the reader takes.
    static constexpr int kMaxTextChars = 4096;
    static constexpr qint64 kMaxFileBytes = 64 << 20;  // above kMaxEntries entries of kMaxTextChars
    static constexpr int kSaveDelayMs = 1500;          // the file is written this long after the last addition

    // The app's data folder / kFileName.
    static QString defaultPath();
    explicit TranslationHistory(const QString& path, QObject* parent = nullptr);
    ~TranslationHistory() override;  // what is still to be written is written (the app closing)
    QString path() const { return m_path; }

    // Reads the file (none yet: an empty history). One that cannot be read is renamed to
    // path + kCorruptSuffix (a number added when that is taken) and the history starts empty; the
    // message says so, naming both files and the problem.
    [[nodiscard]] std::optional<QString> load();
    const QList<HistoryEntry>& entries() const { return m_entries; }
    QList<HistoryEntry> search(const QString& text) const;  // newest first; every entry for ""
    // A translation, newest first (nothing when the history is off, nor for a sentence or translation longer
    // than kMaxTextChars). The same setting
    // with a sentence that only grew at its end (typing, Live on) replaces the newest entry (one that
    // shrank is another entry: it may begin the next sentence); the same sentence translated again the
    // same way moves to the front. The file is written kSaveDelayMs after the last addition, or by flush():
    // typing with Live on adds one at every pause, and each would rewrite the whole file (and wait for the
    // disk) on the GUI thread. A write that fails is told by saveFailed.
    void add(const HistoryEntry& entry);
    // What was added and not yet written, written now; the problem, when the file could not be written.
    [[nodiscard]] std::optional<QString> flush();
    [[nodiscard]] std::optional<QString> clear();  // every entry, and the file
    static bool enabled();
    void setEnabled(bool on);  // off: what was added before is written (flush), nothing more is kept

Q_SIGNALS:
    void changed();
    void saveFailed(const QString& problem);  // a write after add() failed: the problem in words

private:
    [[nodiscard]] std::optional<QString> save() const;
    QString m_path;
    QTimer* m_save_timer;  // runs while an addition waits to be written
    QList<HistoryEntry> m_entries;
    bool m_blocked = false;  // an unreadable file that could not be set aside: nothing written over it
};

}  // namespace attnlab::ui
