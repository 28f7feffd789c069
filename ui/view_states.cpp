#include "view_states.h"

#include "attention_explorer.h"
#include "decoding_view.h"
#include "inputs_view.h"
#include "main_window.h"
#include "model_panel.h"
#include "pair_view.h"
#include "positional_view.h"
#include "translate_panel.h"
#include "weight_view.h"

#include <QTabWidget>

namespace attnlab::ui {

namespace {
std::string kindKey(AttentionKind k) { return attentionKindName(coreKind(k)); }

AttentionKind kindFromKey(const std::string& key) {
    if (key == "encoder") return AttentionKind::EncoderSelf;
    if (key == "decoder") return AttentionKind::DecoderSelf;
    return AttentionKind::Cross;
}

}  // namespace

ViewStates::ViewStates(MainWindow* window, TranslationController* controller)
    : QObject(window), m_window(window), m_controller(controller) {
    connect(m_controller, &TranslationController::translationFinished, this, [this](ResultPtr) {
        if (!m_pending) return;
        const ViewState v = *m_pending;
        m_pending.reset();
        applyDetails(v);
    });
    connect(m_controller, &TranslationController::translationFailed, this, [this] { m_pending.reset(); });
}

ViewState ViewStates::current() const {
    ViewState v;
    if (const auto name = m_window->tabName(m_window->tabs()->currentWidget()); !name.empty()) v.tab = name;
    const DecodingOptions o = m_window->translatePanel()->options();
    v.beam = o.beam_size;
    v.alpha = o.length_penalty;
    v.max_length = o.max_length;
    const auto r = m_window->lastResult();
    if (r) {
        v.sentence = r->source_text;
        v.force_prefix = r->forced_text;
        v.step = m_window->decodingView()->step();
        v.token_target = m_window->inputsView()->selectedTarget();
        v.token_position = m_window->inputsView()->selectedPosition();
    }
    const auto [a, b] = m_window->pairView()->sentences();
    if (!a.trimmed().isEmpty() && !b.trimmed().isEmpty()) v.pair_a = a.toStdString(), v.pair_b = b.toStdString();
    const AttentionExplorer* ex = m_window->explorer();
    v.kind = kindKey(ex->kind());
    v.layer = ex->layer();
    v.head = ex->head();
    if (const auto e = m_window->weightView()->explanation()) {
        v.cell_query = e->cell.query;
        v.cell_key = e->cell.key;
        v.kind = attentionKindName(e->cell.kind);
        v.layer = e->cell.layer;
        v.head = e->cell.head;
    }
    return v;
}

void ViewStates::apply(const ViewState& v) {
    TranslatePanel* panel = m_window->translatePanel();
    DecodingOptions o = panel->options();
    if (v.beam) o.beam_size = *v.beam;
    if (v.alpha) o.length_penalty = *v.alpha;
    if (v.max_length) o.max_length = *v.max_length;
    panel->setOptions(o);
    const auto r = m_window->lastResult();
    const std::string forced = v.force_prefix ? *v.force_prefix : r ? r->forced_text : std::string();
    o.force_prefix = forced;
    const std::string sentence = v.sentence ? *v.sentence : r ? r->source_text : std::string();
    if (v.sentence) panel->setSentence(QString::fromStdString(*v.sentence));
    const DecodingOptions shown = m_window->resultOptions();
    const bool same = r && r->source_text == sentence && r->forced_text == forced && shown.beam_size == o.beam_size &&
                      shown.length_penalty == o.length_penalty && shown.max_length == o.max_length;
    if (same || sentence.empty()) return applyDetails(v);
    m_pending = v;
    m_window->translateSentence(QString::fromStdString(sentence), o);
}

void ViewStates::applyDetails(const ViewState& v) {
    AttentionExplorer* ex = m_window->explorer();
    ex->select(v.kind ? kindFromKey(*v.kind) : ex->kind(), v.layer ? *v.layer : ex->layer(), v.head ? *v.head : ex->head());
    if (v.step) m_window->decodingView()->setStep(*v.step);
    if (v.token_target && v.token_position) m_window->inputsView()->selectToken(*v.token_target, *v.token_position);
    if (v.pair_a && v.pair_b) {
        PairView* pairs = m_window->pairView();
        pairs->setSentences(QString::fromStdString(*v.pair_a), QString::fromStdString(*v.pair_b));
        pairs->select(v.kind ? kindFromKey(*v.kind) : ex->kind(), ex->layer(), ex->head());
        pairs->requestCompare();
    }
    if (v.cell_query && v.cell_key)
        m_window->explainCell({coreKind(ex->kind()), ex->layer(), ex->head(), *v.cell_query, *v.cell_key});
    if (v.tab)
        if (QWidget* w = m_window->tabNamed(*v.tab)) m_window->tabs()->setCurrentWidget(w);
}

}  // namespace attnlab::ui
