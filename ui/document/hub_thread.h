#pragma once
// HubThread: work with the Hugging Face hub (attnlab/hub.h) on a thread of its own, one piece at a time,
// cancellable at once (hub calls check the flag several times a second, in every phase): what ModelFetch
// (a download) and ModelListing (a listing) run on. The owner queues its results to the GUI thread itself.

#include <QString>

#include <atomic>
#include <functional>
#include <memory>
#include <thread>

namespace attnlab::ui {

class HubThread {
public:
    using Flag = std::shared_ptr<std::atomic<bool>>;  // set: cancelled
    HubThread() = default;
    HubThread(const HubThread&) = delete;
    HubThread& operator=(const HubThread&) = delete;
    ~HubThread() { stop(); }

    // Cancels the work under way and waits for it, then runs work(flag) on a new thread.
    void start(std::function<void(const Flag& cancelled)> work);
    void cancel();
    void stop();  // cancels and waits: call it first in the owner's destructor
    // Whether `flag` is the latest start()'s (a result of work replaced since is dropped).
    bool isCurrent(const Flag& flag) const { return flag == m_cancelled; }

    // Runs `call` on the calling thread, turning what it throws into words: empty when it returned;
    // `cancelled` set for a CancelledError. Nothing leaves it (an exception leaving a thread terminates).
    static QString failureOf(const std::function<void()>& call, bool& cancelled);

private:
    Flag m_cancelled;
    std::thread m_thread;
};

}  // namespace attnlab::ui
