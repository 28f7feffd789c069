#pragma once
// Hugging Face's multilingual encoder-decoders, as downloaded: M2M100ForConditionalGeneration
// (model_type "m2m_100": M2M100 and NLLB-200) and MBartForConditionalGeneration (model_type
// "mbart": mBART-50 many-to-many). docs/multilingual.md describes what is read and how.
//
// The architecture becomes data (ModelConfig): layer norm before each sub-layer, a final layer norm
// after each stack, mBART's layer norm on the embeddings, fairseq's sinusoids from pad + 1 (M2M100)
// or learned positions with an offset of 2 (mBART), sqrt(d_model) embedding scale, ReLU or GELU, the
// output projection tied to the embeddings without a bias (mBART adds final_logits_bias).
//
// The tokenizers become a piece vocabulary (id -> piece) over the SentencePiece model:
//   M2M100Tokenizer  — vocab.json's ids; the "__xx__" language tokens after it (added_tokens.json's
//                      ids where present, else special_tokens_map.json's order), then 8 unused ids;
//   NllbTokenizer    — fairseq's ids: <s> 0, <pad> 1, </s> 2, <unk> 3, SentencePiece's id + 1 for
//                      the rest; the language codes of special_tokens_map.json after the
//                      SentencePiece vocabulary, then <mask> (tokenizer_config.json's
//                      added_tokens_decoder moves them where it says); legacy_behaviour puts the
//                      source language after </s>;
//   MBart50Tokenizer — the same layout, the language codes of special_tokens_map.json.

#include "model/transformer.h"

#include <attnlab/config.h>

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

namespace attnlab::package {

// Whether config.json's model_type is one of these ("m2m_100", "mbart").
bool isMultilingualDirectory(const std::string& dir);

struct MultilingualTokenizer {
    std::string spm_path;             // sentencepiece.bpe.model
    std::vector<std::string> pieces;  // id -> piece for every id of the model ("<unused N>" where none)
    std::vector<int> special;         // ids left out of decoded text: specials, languages, <mask>, unused
    std::string tokenizer_class;      // M2M100Tokenizer | NllbTokenizer | MBart50Tokenizer
};

struct MultilingualModel {
    PackageConfig config;
    MultilingualTokenizer tokenizer;
    std::string family;  // "M2M100ForConditionalGeneration" | "MBartForConditionalGeneration"
};

// config.json, generation_config.json, tokenizer_config.json, special_tokens_map.json,
// added_tokens.json, vocab.json and the SentencePiece model -> the package config and the
// vocabulary. Throws PackageError naming the file and the problem (a model type or option AttnLab
// does not implement, a tokenizer whose ids do not fit config.json's vocab_size, ...).
MultilingualModel readMultilingualModel(const std::string& dir);

// The part of it config.json alone decides (the fuzz target): no languages yet.
PackageConfig multilingualConfigFromJson(const std::string& json_text, const std::string& origin);

// A few lines for the model card of an imported package.
std::string multilingualModelCard(const std::string& dir, const MultilingualModel& m);

// source_lang and target_lang of a model with languages: tokenizer_config.json's src_lang / tgt_lang (an
// empty object: none), else English into German where the model has both, else its first two languages.
void defaultLanguages(PackageConfig& pc, const nlohmann::json& tokenizer_config);

}  // namespace attnlab::package
