#include "document/hub_thread.h"

#include <attnlab/errors.h>

#include <QObject>

namespace attnlab::ui {

void HubThread::cancel() {
    if (m_cancelled) *m_cancelled = true;
}

void HubThread::stop() {
    cancel();
    if (m_thread.joinable()) m_thread.join();
}

void HubThread::start(std::function<void(const Flag& cancelled)> work) {
    stop();  // a cancelled call stops within a fraction of a second, in any phase
    m_cancelled = std::make_shared<std::atomic<bool>>(false);
    m_thread = std::thread([work = std::move(work), flag = m_cancelled] { work(flag); });
}

QString HubThread::failureOf(const std::function<void()>& call, bool& cancelled) {
    cancelled = false;
    try {
        call();
        return {};
    } catch (const CancelledError&) {
        cancelled = true;
        return QObject::tr("cancelled");
    } catch (const std::exception& e) {
        return QString::fromUtf8(e.what());
    } catch (...) {
        return QObject::tr("an unknown error");
    }
}

}  // namespace attnlab::ui
