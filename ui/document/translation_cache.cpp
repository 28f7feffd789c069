#include "document/translation_cache.h"

#include <sstream>

namespace attnlab::ui {

namespace {
// A field of DecodingOptions not in the key would let a cached translation stand in for one made
// with another value: a new option must be added below (and this size updated).
static_assert(sizeof(DecodingOptions) == 216, "DecodingOptions changed: add its new field to TranslationCache::key");

void putText(std::ostringstream& out, const std::string& text) { out << text.size() << ':' << text << '|'; }
}  // namespace

std::string TranslationCache::key(const std::string& model, const std::string& sentence, const DecodingOptions& o) {
    std::ostringstream out;
    out.precision(17);
    putText(out, model);
    putText(out, sentence);
    out << o.beam_size << '|' << o.length_penalty << '|' << o.max_length << '|' << o.max_length_ratio << '|'
        << o.max_length_offset << '|' << o.min_length << '|' << o.nbest << '|' << o.top_k_candidates << '|'
        << o.return_attention << '|' << o.max_batch_size << '|' << o.reference_beam << '|' << o.record_trace << '|';
    putText(out, o.force_prefix);
    for (const int id : o.force_prefix_ids) out << id << ',';
    out << '|';
    for (const auto& h : o.ablate) out << int(h.kind) << ':' << h.layer << ':' << h.head << ',';
    out << '|';
    putText(out, o.source_language);
    putText(out, o.target_language);
    return out.str();
}

TranslationCache::Result TranslationCache::find(const std::string& model, const std::string& sentence,
                                                const DecodingOptions& options) {
    const std::string k = key(model, sentence, options);
    for (auto it = m_entries.begin(); it != m_entries.end(); ++it)
        if (it->first == k) {
            m_entries.splice(m_entries.begin(), m_entries, it);
            return m_entries.front().second;
        }
    return nullptr;
}

void TranslationCache::insert(const std::string& model, const std::string& sentence, const DecodingOptions& options,
                              Result result) {
    if (!result || m_capacity <= 0) return;
    const std::string k = key(model, sentence, options);
    m_entries.remove_if([&k](const auto& e) { return e.first == k; });
    m_entries.emplace_front(k, std::move(result));
    while (int(m_entries.size()) > m_capacity) m_entries.pop_back();
}

}  // namespace attnlab::ui
