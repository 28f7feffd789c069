#pragma once
// The three kinds of attention and a reference to one head, by the names the CLI, the lesson
// files and the JSON use ("encoder", "decoder", "cross").

#include <optional>
#include <string>
#include <vector>

namespace attnlab {

enum class AttentionKind { EncoderSelf, DecoderSelf, Cross };

// The one vocabulary of kinds: "encoder" | "decoder" | "cross", in this order everywhere (CLI, lesson and
// session files, JSON, the app's options and views).
const std::vector<AttentionKind>& attentionKinds();
std::string attentionKindName(AttentionKind kind);
std::string attentionKindNames();  // "encoder, decoder, cross"
std::optional<AttentionKind> attentionKindFromName(const std::string& name);
// The one parser of a kind's name: throws InputError "<where>: 'x' is not one of encoder, decoder, cross".
AttentionKind parseAttentionKind(const std::string& name, const std::string& where);

// One head of one layer (0-based).
struct HeadRef {
    AttentionKind kind = AttentionKind::Cross;
    int layer = 0;
    int head = 0;
    bool operator==(const HeadRef& o) const { return kind == o.kind && layer == o.layer && head == o.head; }
};

// "cross:2:5,encoder:0:3" -> heads; an empty text -> none. Throws ConfigError naming the entry that
// is not kind:layer:head (ranges are checked against a model by the translator).
std::vector<HeadRef> parseHeadList(const std::string& text);
std::string headName(const HeadRef& head);  // "cross:2:5"

}  // namespace attnlab
