#pragma once
// TranslationCache: the last translations made, so that going back to a sentence already
// translated with the same model and options (a lesson stepped back and forth, a minimal pair shown
// again) costs nothing. Keyed by the model, the sentence and every decoding option — the forced
// prefix and the heads switched off included; the least recently used entry leaves first. Not
// thread-safe: the controller uses it on its worker thread only.

#include <attnlab/decoding_options.h>
#include <attnlab/translation.h>

#include <list>
#include <memory>
#include <string>
#include <utility>

namespace attnlab::ui {

class TranslationCache {
public:
    using Result = std::shared_ptr<const TranslationResult>;
    static constexpr int kCapacity = 32;

    explicit TranslationCache(int capacity = kCapacity) : m_capacity(capacity) {}

    // The result made for exactly this request (now the most recently used), or null.
    Result find(const std::string& model, const std::string& sentence, const DecodingOptions& options);
    void insert(const std::string& model, const std::string& sentence, const DecodingOptions& options, Result result);
    void clear() { m_entries.clear(); }
    int size() const { return int(m_entries.size()); }

    // The key: every field of the request, one after another.
    static std::string key(const std::string& model, const std::string& sentence, const DecodingOptions& options);

private:
    int m_capacity;
    std::list<std::pair<std::string, Result>> m_entries;  // most recently used first
};

}  // namespace attnlab::ui
