#pragma once
// What a view computes on the worker for the translation shown (the Saliency and Logit lens tabs): that
// translation, asked for once, when the view is shown (at once when it is already), never while it is
// hidden; a translation whose answer has not come when another model loads is dropped (its ids mean
// nothing to that model).

#include "document/translation_controller.h"

#include <functional>
#include <utility>

namespace attnlab::ui {

class ShownResult {
public:
    explicit ShownResult(std::function<void(const ResultPtr&)> ask) : m_ask(std::move(ask)) {}
    const ResultPtr& get() const { return m_result; }
    // A new translation (null: none), asked for at once when the view is `visible`.
    void set(ResultPtr result, bool visible) {
        m_result = std::move(result);
        m_waiting = bool(m_result);
        shown(visible);
    }
    // The view shown: its translation asked for, if it has not been.
    void shown(bool visible) {
        if (!m_waiting || !visible) return;
        m_waiting = false;
        m_ask(m_result);
    }
    // Another model loaded: the translation dropped unless its answer has come; true when it was dropped.
    bool dropUnanswered(bool answered) {
        if (!m_result || answered) return false;
        m_waiting = false;
        m_result.reset();
        return true;
    }

private:
    std::function<void(const ResultPtr&)> m_ask;
    ResultPtr m_result;
    bool m_waiting = false;  // not yet asked for
};

}  // namespace attnlab::ui
