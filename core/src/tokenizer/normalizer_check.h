#pragma once
// The check of a SentencePiece model's normalization tables, done before SentencePiece is given
// the model: SentencePiece trusts them, and a corrupt one makes it read out of bounds and crash
// while it normalizes text (found by fuzzing; docs/reliability.md). No SentencePiece inside: it
// reads the serialized ModelProto itself. Used by the tokenizer (in the app's process, before the
// model is loaded), by attnlab-spm-check and by the fuzz harness of tokenizer models.
#include <string>
#include <string_view>

namespace attnlab::spm {

// What is wrong with the normalization tables of a serialized ModelProto (a tokenizer.model
// file's bytes), or "" when there is nothing wrong with them (a model without tables included).
// Every occurrence of normalizer_spec / denormalizer_spec and of their precompiled_charsmap is
// checked (protobuf merges repeated occurrences of a message field: the last one wins), and a
// top-level message this reader cannot walk is refused, so that no table goes unseen.
std::string normalizationTableProblem(std::string_view model_proto);

}  // namespace attnlab::spm
