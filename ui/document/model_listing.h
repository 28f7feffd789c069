#pragma once
// ModelListing: what getting a model by Hugging Face name would fetch — its files, their size, its
// licence (attnlab/hub.h: hubModelListing, one request, nothing written) — asked of the hub on a thread
// of its own (HubThread), so that the window stays responsive while a question waits for the answer
// (DownloadQuestion). The answer comes back to the GUI thread as a signal; cancel() stops the request
// at once. One listing at a time: start() while one runs cancels that one first.

#include "document/hub_thread.h"

#include <attnlab/hub.h>

#include <QObject>
#include <QString>

namespace attnlab::ui {

class ModelListing : public QObject {
    Q_OBJECT
public:
    explicit ModelListing(QObject* parent = nullptr);
    ~ModelListing() override;  // cancels and waits for a request under way

    // `name` is ORG/NAME[@REVISION]; the environment's HF_* settings apply (hubOptionsFromEnvironment).
    void start(const QString& name);
    void cancel() { m_thread.cancel(); }

Q_SIGNALS:
    void listed(const attnlab::HubModelListing& listing);
    // Why the hub could not say (hubModelListing's message); `cancelled` when cancel() stopped it.
    void failed(const QString& message, bool cancelled);

private:
    void run(const HubModelName& name, const HubThread::Flag& cancelled);
    HubThread m_thread;
};

}  // namespace attnlab::ui

Q_DECLARE_METATYPE(attnlab::HubModelListing)
