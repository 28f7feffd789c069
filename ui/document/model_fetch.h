#pragma once
// ModelFetch: gets a model by Hugging Face name into the shared cache (attnlab/hub.h: hubSnapshot) on a
// thread of its own, so that the window stays responsive; progress comes back to the GUI thread as
// signals, and cancel() stops the transfer at once (what arrived stays for the next try to resume).
// One fetch at a time: start() while one runs cancels that one first.

#include "document/hub_thread.h"

#include <attnlab/hub.h>

#include <QObject>
#include <QString>

namespace attnlab::ui {

class ModelFetch : public QObject {
    Q_OBJECT
public:
    explicit ModelFetch(QObject* parent = nullptr);
    ~ModelFetch() override;  // cancels and waits for a fetch under way

    // `name` is ORG/NAME[@REVISION]; the environment's HF_* settings apply (hubOptionsFromEnvironment).
    void start(const QString& name);
    void cancel();
    bool running() const { return !m_name.isEmpty(); }
    QString name() const { return m_name; }  // the model being got; empty when none

Q_SIGNALS:
    void progress(const attnlab::HubProgress& p);
    // The snapshot folder, complete: ready to load.
    void finished(const QString& name, const QString& snapshot_dir);
    // Why it could not be got (hubSnapshot's message); `cancelled` when cancel() stopped it.
    void failed(const QString& name, const QString& message, bool cancelled);

private:
    void run(const HubModelName& name, const HubThread::Flag& cancelled);
    QString m_name;
    HubThread m_thread;
};

}  // namespace attnlab::ui

Q_DECLARE_METATYPE(attnlab::HubProgress)
