#include <attnlab/attention_kind.h>
#include <attnlab/errors.h>

#include "util/text.h"

#include <sstream>

namespace attnlab {

std::string attentionKindName(AttentionKind kind) {
    switch (kind) {
    case AttentionKind::EncoderSelf: return "encoder";
    case AttentionKind::DecoderSelf: return "decoder";
    case AttentionKind::Cross: return "cross";
    }
    return "cross";
}

const std::vector<AttentionKind>& attentionKinds() {
    static const std::vector<AttentionKind> kinds{AttentionKind::EncoderSelf, AttentionKind::DecoderSelf,
                                                  AttentionKind::Cross};
    return kinds;
}

std::string attentionKindNames() {
    std::string out;
    for (const auto k : attentionKinds()) out += (out.empty() ? "" : ", ") + attentionKindName(k);
    return out;
}

std::optional<AttentionKind> attentionKindFromName(const std::string& name) {
    for (const auto k : attentionKinds())
        if (attentionKindName(k) == name) return k;
    return std::nullopt;
}

AttentionKind parseAttentionKind(const std::string& name, const std::string& where) {
    if (const auto k = attentionKindFromName(name)) return *k;
    throw InputError(where + ": '" + util::forMessage(name) + "' is not one of " + attentionKindNames());
}

std::string headName(const HeadRef& h) {
    return attentionKindName(h.kind) + ":" + std::to_string(h.layer) + ":" + std::to_string(h.head);
}

namespace {
bool wholeNumber(const std::string& s, int& out) {
    if (s.empty() || s.size() > 6 || s.find_first_not_of("0123456789") != std::string::npos) return false;
    out = std::stoi(s);
    return true;
}
}  // namespace

std::vector<HeadRef> parseHeadList(const std::string& text) {
    std::vector<HeadRef> heads;
    std::stringstream list(text);
    std::string entry;
    while (std::getline(list, entry, ',')) {
        const auto first = entry.find_first_not_of(" \t"), last = entry.find_last_not_of(" \t");
        entry = first == std::string::npos ? std::string() : entry.substr(first, last - first + 1);
        if (entry.empty()) continue;
        const auto a = entry.find(':'), b = a == std::string::npos ? a : entry.find(':', a + 1);
        HeadRef h;
        const auto kind = a == std::string::npos ? std::nullopt : attentionKindFromName(entry.substr(0, a));
        if (!kind || b == std::string::npos || !wholeNumber(entry.substr(a + 1, b - a - 1), h.layer) ||
            !wholeNumber(entry.substr(b + 1), h.head))
            throw ConfigError("'" + util::forMessage(entry) + "' is not kind:layer:head (kind one of " +
                              attentionKindNames() + "; layer and head 0-based numbers), e.g. cross:2:5");
        h.kind = *kind;
        heads.push_back(h);
    }
    return heads;
}

}  // namespace attnlab
