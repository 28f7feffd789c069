#pragma once
// ModelConfig: the arguments of the reference implementation's Transformer constructor
// (jadore801120/attention-is-all-you-need-pytorch, transformer/Models.py), under their own names,
// so a config.json written for one reads in the other.

#include <cstdint>
#include <string>

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
    int64_t n_layers = 6;                    // encoder layers and decoder layers (each)
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

    // Throws ConfigError naming the first field that is out of range.
    void validate() const;

    // What the reference derives from scale_emb_or_prj.
    bool scaleEmb() const { return trg_emb_prj_weight_sharing && scale_emb_or_prj == "emb"; }
    bool scalePrj() const { return trg_emb_prj_weight_sharing && scale_emb_or_prj == "prj"; }
};

// Everything config.json of a model package holds: the model's constructor arguments plus what
// the translator needs to turn text into ids and back.
struct PackageConfig {
    static constexpr int kFormatVersion = 1;

    int format_version = kFormatVersion;
    std::string source_lang;  // e.g. "de"
    std::string target_lang;  // e.g. "en"
    ModelConfig model;
    int64_t bos_idx = special_ids::kBos;
    int64_t eos_idx = special_ids::kEos;
    int64_t unk_idx = special_ids::kUnk;
    // How a source sentence becomes ids: pieces, then </s> (as the seed documents show);
    // models converted from the reference's torchtext pipeline also put <s> first.
    bool source_bos = false;
    bool source_eos = true;

    void validate() const;  // ModelConfig::validate plus the special ids; throws ConfigError
};

}  // namespace attnlab
