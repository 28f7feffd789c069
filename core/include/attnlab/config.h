#pragma once
// ModelConfig: the arguments of the reference implementation's Transformer constructor
// (jadore801120/attention-is-all-you-need-pytorch, transformer/Models.py), under their own names,
// so a config.json written for one reads in the other.

#include <attnlab/attention_kind.h>

#include <cstdint>
#include <string>
#include <vector>

namespace attnlab {

// The most entries (n_position x d_word_vec) a sinusoid table may have: config.json and the GUI's
// positional lab allocate tables from user-given sizes, so both are bounded by this one limit.
inline constexpr int64_t kMaxPositionalTableEntries = int64_t(1) << 25;

// The special ids AttnLab's tokenizers and packages use (SentencePiece trained with these ids).
namespace special_ids {
inline constexpr int64_t kPad = 0;
inline constexpr int64_t kUnk = 1;
inline constexpr int64_t kBos = 2;
inline constexpr int64_t kEos = 3;
}  // namespace special_ids

struct ModelConfig {
    int64_t n_src_vocab = 0;                 // source vocabulary size (required)
    int64_t n_trg_vocab = 0;                 // target vocabulary size (required)
    int64_t src_pad_idx = 0;                 // padding id of the source side
    int64_t trg_pad_idx = 0;                 // padding id of the target side
    int64_t d_word_vec = 512;                // embedding width; must equal d_model
    int64_t d_model = 512;                   // model width
    int64_t d_inner = 2048;                  // hidden width of the position-wise feed-forward layer
    int64_t n_layers = 6;                    // encoder layers (and decoder layers unless n_dec_layers is set)
    int64_t n_head = 8;                      // attention heads
    int64_t d_k = 64;                        // query/key width per head
    int64_t d_v = 64;                        // value width per head
    double dropout = 0.1;                    // dropout probability (training only)
    int64_t n_position = 200;                // rows of the sinusoid table: the longest sequence accepted
    bool trg_emb_prj_weight_sharing = true;  // target embedding <-> output projection share weights
    bool emb_src_trg_weight_sharing = true;  // source embedding <-> target embedding share weights
    std::string scale_emb_or_prj = "prj";    // "emb": x sqrt(d_model) after embedding; "prj":
                                             // logits x d_model^-0.5; "none". Only applies when
                                             // trg_emb_prj_weight_sharing is on, as in the reference.

    // Architecture fields beyond the reference's constructor (package format_version 2). Each
    // default is the reference's behaviour; the Marian family (OPUS-MT) differs only in these.
    // docs/marian.md and the README's package table describe each one.
    int64_t n_dec_layers = 0;                  // decoder layers; 0 = n_layers (Marian students: 6 + 2)
    int64_t d_dec_inner = 0;                   // decoder feed-forward width; 0 = d_inner
    std::string ffn_activation = "relu";       // relu | swish (SiLU, x sigmoid(x)) | gelu (erf form) |
                                               // gelu_tanh (the tanh approximation; format 4)
    bool attn_bias = false;                    // biases on the attention projections q, k, v and out
    double layer_norm_eps = 1e-6;              // every layer norm's epsilon (1e-5 in Hugging Face)
    bool emb_layer_norm = true;                // a layer norm after embedding + positional encoding
    std::string emb_scale = "auto";            // auto: as scale_emb_or_prj says; sqrt_d_model: x sqrt(d_model)
                                               // whatever else is set; none: no embedding scale
    std::string pos_encoding = "interleaved";  // interleaved: sin on even, cos on odd dimensions (the
                                               // paper); half: sines in the first half, cosines in the
                                               // second, timescale ln(10000)/(d/2) (Marian); fairseq: the
                                               // same halves, timescale ln(10000)/(d/2 - 1) (M2M100,
                                               // NLLB); learned: a table stored with the weights (mBART);
                                               // none: no absolute positions (format 5: relative ones)
    int64_t pos_offset = 0;                    // the position of the first token
    bool logits_bias = false;                  // a bias vector added to the logits (final_logits_bias)
    // Format 3: the pre-layer-norm Transformers (M2M100, NLLB-200, mBART).
    std::string norm_position = "post";  // post: x = norm(x + sublayer(x)) (the paper, the reference);
                                         // pre: x = x + sublayer(norm(x))
    bool final_layer_norm = false;       // a layer norm after the last encoder and the last decoder layer
    // Format 5: relative position representations (Shaw et al. 2018; OpenNMT-py's max_relative_positions,
    // CTranslate2's relative_position_keys / _values) in every self-attention of both stacks: the offset
    // j - i of key j from query i, clipped to [-k, k], selects a learned key vector (added to k_j in the
    // score) and a learned value vector (added to v_j in the output), per layer, shared by the heads.
    // 0 = none. docs/ctranslate2.md "Relative positions".
    int64_t max_relative_positions = 0;
    // Format 5: the decoder's first input is a zero vector, not a token's embedding (Marian's models, as
    // CTranslate2 runs them: src/layers/transformer.cc TransformerDecoder::decode zeroes step 0's
    // embedding, leaves it unscaled and adds its position as any step's). docs/ctranslate2.md.
    bool start_from_zero_embedding = false;

    int64_t encoderLayers() const { return n_layers; }
    int64_t decoderLayers() const { return n_dec_layers > 0 ? n_dec_layers : n_layers; }
    int64_t decoderInner() const { return d_dec_inner > 0 ? d_dec_inner : d_inner; }
    // Layers of the stack a kind of attention lives in (encoder self: the encoder; decoder self
    // and cross: the decoder).
    int64_t layers(AttentionKind kind) const {
        return kind == AttentionKind::EncoderSelf ? encoderLayers() : decoderLayers();
    }

    // Throws ConfigError naming the first field that is out of range.
    void validate() const;

    // What the reference derives from scale_emb_or_prj.
    bool scaleEmb() const {
        return emb_scale == "sqrt_d_model" ||
               (emb_scale == "auto" && trg_emb_prj_weight_sharing && scale_emb_or_prj == "emb");
    }
    bool scalePrj() const { return trg_emb_prj_weight_sharing && scale_emb_or_prj == "prj"; }
    bool preNorm() const { return norm_position == "pre"; }
    bool relativePositions() const { return max_relative_positions > 0; }
};

// A multilingual model's language: the code a user names it by ("en", "eng_Latn", "en_XX"), the
// token that stands for it ("__en__", "eng_Latn", "en_XX") and that token's id.
struct LanguageToken {
    std::string code;
    std::string token;
    int64_t id = 0;
};

// Everything config.json of a model package holds: the model's constructor arguments plus what
// the translator needs to turn text into ids and back.
struct PackageConfig {
    // 2 added the architecture fields of ModelConfig above, `tokenizer`, `num_beams` and
    // `max_length`; 3 added norm_position, final_layer_norm, the positions fairseq and learned, and
    // the languages of multilingual models. An older file reads with their defaults.
    // 4 added the "ctranslate2" tokenizer layout, source_bos_idx / source_eos_idx and gelu_tanh.
    // 5 added max_relative_positions (its tables in model.safetensors), pos_encoding "none" and
    // start_from_zero_embedding.
    static constexpr int kFormatVersion = 5;
    static constexpr int kOldestFormatVersion = 1;

    int format_version = kFormatVersion;
    std::string source_lang;  // e.g. "de"
    std::string target_lang;  // e.g. "en"
    ModelConfig model;
    int64_t bos_idx = special_ids::kBos;  // <s>: the decoder's start token (Marian: the pad id)
    int64_t eos_idx = special_ids::kEos;
    int64_t unk_idx = special_ids::kUnk;
    // How a source sentence becomes ids: pieces, then </s> (as the seed documents show);
    // models converted from the reference's torchtext pipeline also put <s> first.
    bool source_bos = false;
    bool source_eos = true;
    // The ids put there when the source vocabulary is not the target's (a CTranslate2 model with
    // separate vocabularies); -1: bos_idx and eos_idx.
    int64_t source_bos_idx = -1;
    int64_t source_eos_idx = -1;
    int64_t sourceBos() const { return source_bos_idx >= 0 ? source_bos_idx : bos_idx; }
    int64_t sourceEos() const { return source_eos_idx >= 0 ? source_eos_idx : eos_idx; }
    // How text becomes ids: "sentencepiece" = one SentencePiece model whose ids are the model's
    // (tokenizer.model); "marian" = MarianTokenizer's layout: source.spm and target.spm, and
    // vocab.json mapping pieces to the model's ids (a piece missing from it is unk_idx);
    // "ctranslate2" = CTranslate2's vocabularies (shared_vocabulary.json, or source_ and
    // target_vocabulary), whitespace-separated tokens, or SentencePiece pieces where a
    // sentencepiece.model lies beside them.
    std::string tokenizer = "sentencepiece";
    // The model's own decoding defaults (generation_config.json or config.json of an imported
    // model); 0 = AttnLab's defaults (DecodingOptions).
    int num_beams = 0;
    int max_length = 0;
    // </s> is not chosen before this many generated tokens (format 4; CTranslate2's translate_batch:
    // min_decoding_length = 1) unless DecodingOptions::min_length says otherwise.
    int min_length = 0;
    // A multilingual model (NLLB-200, M2M100, mBART-50): its languages, in the tokenizer's order.
    // The source gets the source language's token (before its pieces, or after </s> where
    // language_token_position is "after_eos": NLLB's legacy_behaviour), and every translation
    // starts with the target language's token, forced (forced_bos_token_id); source_lang and
    // target_lang are then the codes used when none is asked for. Empty for other models.
    std::vector<LanguageToken> languages;
    std::string language_token_position = "first";  // first | after_eos

    bool multilingual() const { return !languages.empty(); }
    // The language a user names: its code or its token ("en" or "__en__"); null when the model has none.
    const LanguageToken* findLanguage(const std::string& code_or_token) const;

    static constexpr size_t kMaxLanguages = 4096;  // NLLB-200 has 202

    void validate() const;  // ModelConfig::validate plus the special ids; throws ConfigError

private:
    void validateLanguages() const;
};

}  // namespace attnlab
