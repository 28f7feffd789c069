#include "document/model_listing.h"

#include <QMetaObject>

namespace attnlab::ui {

ModelListing::ModelListing(QObject* parent) : QObject(parent) {
    qRegisterMetaType<attnlab::HubModelListing>("attnlab::HubModelListing");
}

ModelListing::~ModelListing() { m_thread.stop(); }

void ModelListing::start(const QString& name) {
    const auto hub_name = parseHubModelName(name.toStdString());
    if (!hub_name) {
        Q_EMIT failed(tr("'%1' is not a Hugging Face model name (ORG/NAME)").arg(name), false);
        return;
    }
    m_thread.start([this, n = *hub_name](const HubThread::Flag& cancelled) { run(n, cancelled); });
}

// On the listing's own thread: the answer is queued to the GUI thread.
void ModelListing::run(const HubModelName& name, const HubThread::Flag& cancelled) {
    HubModelListing listing;
    bool was_cancelled = false;
    const QString message = HubThread::failureOf(
        [&] { listing = hubModelListing(name, hubOptionsFromEnvironment(), [cancelled] { return !*cancelled; }); },
        was_cancelled);
    QMetaObject::invokeMethod(
        this,
        [this, listing, message, was_cancelled, cancelled] {
            if (!m_thread.isCurrent(cancelled)) return;  // a later start() replaced this request
            if (message.isEmpty() && !*cancelled)
                Q_EMIT listed(listing);
            else
                Q_EMIT failed(message.isEmpty() ? tr("cancelled") : message, was_cancelled || *cancelled);
        },
        Qt::QueuedConnection);
}

}  // namespace attnlab::ui
