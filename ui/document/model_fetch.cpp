#include "document/model_fetch.h"

#include <QMetaObject>

namespace attnlab::ui {

ModelFetch::ModelFetch(QObject* parent) : QObject(parent) {
    qRegisterMetaType<attnlab::HubProgress>("attnlab::HubProgress");
}

ModelFetch::~ModelFetch() { m_thread.stop(); }

void ModelFetch::cancel() { m_thread.cancel(); }

void ModelFetch::start(const QString& name) {
    const auto hub_name = parseHubModelName(name.toStdString());
    if (!hub_name) {
        Q_EMIT failed(name, tr("'%1' is not a Hugging Face model name (ORG/NAME)").arg(name), false);
        return;
    }
    m_thread.start([this, n = *hub_name](const HubThread::Flag& cancelled) { run(n, cancelled); });
    m_name = name;
}

// On the fetch's own thread: results are queued to the GUI thread, where m_name is cleared.
void ModelFetch::run(const HubModelName& name, const HubThread::Flag& cancelled) {
    const QString shown = QString::fromStdString(hubModelNameString(name));
    auto report = [this, cancelled](const HubProgress& p) {
        QMetaObject::invokeMethod(
            this, [this, p] { Q_EMIT progress(p); }, Qt::QueuedConnection);
        return !*cancelled;
    };
    QString dir;
    bool was_cancelled = false;
    const QString message = HubThread::failureOf(
        [&] { dir = QString::fromStdString(hubSnapshot(name, hubOptionsFromEnvironment(), report)); }, was_cancelled);
    QMetaObject::invokeMethod(
        this,
        [this, shown, dir, message, was_cancelled, cancelled] {
            if (!m_thread.isCurrent(cancelled)) return;  // a later start() replaced this fetch
            m_name.clear();
            // Cancelled after hubSnapshot had finished (the result was on its way): it stays cancelled, so
            // that the model opened meanwhile is not replaced (the download is complete in the cache).
            if (!dir.isEmpty() && *cancelled)
                Q_EMIT failed(shown, tr("cancelled"), true);
            else if (!dir.isEmpty())
                Q_EMIT finished(shown, dir);
            else
                Q_EMIT failed(shown, message, was_cancelled);
        },
        Qt::QueuedConnection);
}

}  // namespace attnlab::ui
