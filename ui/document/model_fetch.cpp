#include "document/model_fetch.h"

#include <attnlab/errors.h>

#include <QMetaObject>

namespace attnlab::ui {

ModelFetch::ModelFetch(QObject* parent) : QObject(parent) {
    qRegisterMetaType<attnlab::HubProgress>("attnlab::HubProgress");
}

ModelFetch::~ModelFetch() {
    cancel();
    join();
}

void ModelFetch::join() {
    if (m_thread.joinable()) m_thread.join();
}

void ModelFetch::cancel() {
    if (m_cancelled) *m_cancelled = true;
}

void ModelFetch::start(const QString& name) {
    const auto hub_name = parseHubModelName(name.toStdString());
    if (!hub_name) {
        Q_EMIT failed(name, tr("'%1' is not a Hugging Face model name (ORG/NAME)").arg(name), false);
        return;
    }
    cancel();
    join();  // a cancelled fetch stops within a fraction of a second, in any phase (hubSnapshot's ticks)
    m_name = name;
    m_cancelled = std::make_shared<std::atomic<bool>>(false);
    m_thread = std::thread([this, n = *hub_name, c = m_cancelled] { run(n, c); });
}

// On the fetch's own thread: results are queued to the GUI thread, where m_name is cleared.
void ModelFetch::run(const HubModelName& name, std::shared_ptr<std::atomic<bool>> cancelled) {
    const QString shown = QString::fromStdString(hubModelNameString(name));
    auto report = [this, cancelled](const HubProgress& p) {
        QMetaObject::invokeMethod(
            this, [this, p] { Q_EMIT progress(p); }, Qt::QueuedConnection);
        return !*cancelled;
    };
    QString dir, message;
    bool was_cancelled = false;
    try {
        dir = QString::fromStdString(hubSnapshot(name, hubOptionsFromEnvironment(), report));
    } catch (const CancelledError&) {
        was_cancelled = true;
    } catch (const std::exception& e) {
        message = QString::fromUtf8(e.what());
    } catch (...) {  // nothing may leave this thread (std::terminate)
        message = tr("an unknown error");
    }
    QMetaObject::invokeMethod(
        this,
        [this, shown, dir, message, was_cancelled, cancelled] {
            if (cancelled != m_cancelled) return;  // a later start() replaced this fetch
            m_name.clear();
            // Cancelled after hubSnapshot had finished (the result was on its way): it stays cancelled, so
            // that the model opened meanwhile is not replaced (the download is complete in the cache).
            if (!dir.isEmpty() && *cancelled)
                Q_EMIT failed(shown, tr("cancelled"), true);
            else if (!dir.isEmpty())
                Q_EMIT finished(shown, dir);
            else
                Q_EMIT failed(shown, was_cancelled ? tr("cancelled") : message, was_cancelled);
        },
        Qt::QueuedConnection);
}

}  // namespace attnlab::ui
