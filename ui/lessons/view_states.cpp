#include "lessons/view_states.h"

#include "shell/view_registry.h"

namespace attnlab::ui {

ViewStates::ViewStates(ViewContext* context, ViewTabs* tabs, QObject* parent)
    : QObject(parent), m_context(context), m_tabs(tabs) {
    connect(context, &ViewContext::resultChanged, this, [this](ResultPtr r) {
        if (!m_pending) return;
        if (m_then && r) {  // the free translation is in: now the forced one
            const auto [sentence, options] = *m_then;
            m_then.reset();
            return m_context->translate(sentence, options);
        }
        m_then.reset();
        const ViewState v = *m_pending;
        m_pending.reset();
        if (r) m_tabs->applyState(v);  // a failed translation: the failure is reported, the step stops
    });
}

ViewState ViewStates::current() const {
    ViewState v;
    const DecodingOptions o = m_context->decodingOptions();
    v.beam = o.beam_size;
    v.alpha = o.length_penalty;
    v.max_length = o.max_length;
    if (!o.source_language.empty()) v.source_language = o.source_language;
    if (!o.target_language.empty()) v.target_language = o.target_language;
    v.measure = m_context->measure();
    if (const auto r = m_context->result()) {
        v.sentence = r->source_text;
        v.force_prefix = r->forced_text;
    }
    m_tabs->saveState(v);
    return v;
}

void ViewStates::apply(const ViewState& v) {
    DecodingOptions o = m_context->decodingOptions();
    if (v.beam) o.beam_size = *v.beam;
    if (v.alpha) o.length_penalty = *v.alpha;
    if (v.max_length) o.max_length = *v.max_length;
    if (v.source_language) o.source_language = *v.source_language;
    if (v.target_language) o.target_language = *v.target_language;
    m_context->setDecodingOptions(o);
    if (v.measure) m_context->setMeasure(*v.measure);
    const auto r = m_context->result();
    const std::string forced = v.force_prefix ? *v.force_prefix : r ? r->forced_text : std::string();
    o.force_prefix = forced;
    const std::string sentence = v.sentence ? *v.sentence : r ? r->source_text : std::string();
    const DecodingOptions shown = m_context->resultOptions();
    const bool shown_here = r && r->source_text == sentence && shown.beam_size == o.beam_size &&
                            shown.length_penalty == o.length_penalty && shown.max_length == o.max_length &&
                            shown.source_language == o.source_language && shown.target_language == o.target_language;
    const bool same = shown_here && r->forced_text == forced;
    if (v.sentence) m_context->showSentence(QString::fromStdString(*v.sentence));
    if (same || sentence.empty()) return m_tabs->applyState(v);
    m_pending = v;
    if (!forced.empty() && !(shown_here && r->prefixTokens() == 0)) {
        DecodingOptions free = o;
        free.force_prefix.clear();
        m_then = {QString::fromStdString(sentence), o};
        return m_context->translate(QString::fromStdString(sentence), free);
    }
    m_then.reset();
    m_context->translate(QString::fromStdString(sentence), o);
}

}  // namespace attnlab::ui
