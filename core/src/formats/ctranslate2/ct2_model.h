#pragma once
// CTranslate2 model directories (what ct2-transformers-converter, ct2-opennmt-py-converter,
// ct2-fairseq-converter and Argos Translate ship): model.bin with a TransformerSpec, an optional
// config.json, and the vocabularies (shared_vocabulary.json / .txt, or source_vocabulary.* and
// target_vocabulary.*), with a SentencePiece model beside them in Argos packages. docs/ctranslate2.md
// lists what is read and how it maps onto AttnLab's architecture fields.
//
// What CTranslate2 computes, read from its source (src/layers/transformer.cc, attention.cc,
// common.cc, src/models/transformer.cc):
//   - embeddings x scale_embeddings (absent or true: sqrt(d_model); a float: that value), then the
//     positions: a stored `encodings` table from row 0, or sinusoids computed with sines in the first
//     half and cosines in the second, timescale ln(10000)/(d/2 - 1), the first token at position 1;
//     then `layernorm_embedding` when present;
//   - each sub-layer: pre_norm (the default when absent): x + f(norm(x)); otherwise norm(x + f(x));
//     a stack's final `layer_norm` when present;
//   - self-attention linear_0 = q|k|v (d rows each), linear_1 = out; cross-attention linear_0 = q,
//     linear_1 = k|v, linear_2 = out; queries scaled by 1/sqrt(d_head);
//   - layer norm epsilon: config.json's layer_norm_epsilon, else 1e-5;
//   - int8 weights are w * scale rounded (scale per output row), int16 one scale: read as q / scale;
//   - relative_position_keys / _values in every self-attention (OpenNMT-py's max_relative_positions; no
//     position table then): ModelConfig::max_relative_positions, pos_encoding "none" (docs/ctranslate2.md).
// Variants AttnLab does not implement are refused by name (asymmetric relative positions, T5's attention bias,
// rotary, ALiBi, multi-query attention, gated feed-forward, RMS norm, source features, a decoder-only
// or another spec). A decoder that starts from a zero embedding (Marian's, start_from_zero_embedding)
// maps onto ModelConfig::start_from_zero_embedding.

#include "formats/ctranslate2/ct2_model_bin.h"
#include "tokenizer/text_codec.h"

#include <attnlab/config.h>

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace attnlab::package {

namespace ct2_files {
inline constexpr const char* kModel = "model.bin";
inline constexpr const char* kConfig = "config.json";
inline constexpr const char* kSentencePiece = "sentencepiece.model";  // Argos Translate's name
// The vocabularies' names without their extension (.json, else .txt: model_reader.cc load_vocabulary).
inline constexpr const char* kSharedVocabulary = "shared_vocabulary";
inline constexpr const char* kSourceVocabulary = "source_vocabulary";
inline constexpr const char* kTargetVocabulary = "target_vocabulary";
inline constexpr const char* kFirstFeatureVocabulary = "source_1_vocabulary";  // source features (refused)
}  // namespace ct2_files

// For a folder without config.json where something other than a regular file stands at model.bin
// (a FIFO, a folder, a dangling link): what is wrong there, in util::fileProblem's words ("model.bin:
// is a FIFO (named pipe), not a regular file"), so that it is reported as that rather than as a
// package without config.json. Nothing for any other folder or path. Opens nothing it examines.
std::optional<std::string> modelBinProblem(const std::string& dir);

struct Ct2Vocabularies {
    std::vector<std::string> source, target;
    std::vector<std::string> files;  // the files they were read from (one when shared)
    bool shared = false;
    // What CTranslate2 adds to them when it loads them (appendUnknownToken) and AttnLab for its masks
    // (ct2_model.cpp addPadding): the tokens the files lack, in the order appended.
    std::vector<std::string> source_added, target_added;
};

// The vocabulary files of `dir`: shared_vocabulary.{json,txt} or source_ and target_vocabulary, as
// src/models/model_reader.cc load_vocabulary reads them (.json first, then .txt; one token a line,
// empty lines kept as empty tokens, a final \r dropped only when every line has one). Nothing is
// appended here. Throws PackageError naming the file and the problem.
Ct2Vocabularies readCt2Vocabularies(const std::string& dir);

// CTranslate2's rule (src/vocabulary.cc, Vocabulary::Vocabulary: "Append the unknown token if not
// found in the vocabulary file"): `unk` appended to each vocabulary that lacks it (once to a shared one).
void appendUnknownToken(Ct2Vocabularies& v, const std::string& unk);

// The vocabularies as files of an imported package, with what was appended: file name -> its text
// (a JSON list of tokens, as model_spec.py _save_vocabulary writes it).
std::map<std::string, std::string> ct2VocabularyFiles(const Ct2Vocabularies& v);

// Where one of AttnLab's tensors is in model.bin: a variable (aliases resolved) or rows of it (the
// fused projections).
struct TensorSource {
    std::string variable;
    int64_t row_begin = 0;
    int64_t rows = -1;  // -1: every row
};

struct Ct2Model {
    PackageConfig config;
    ct2::ModelBin bin;
    Ct2Vocabularies vocabularies;
    std::string spm_path;  // the SentencePiece model beside it; empty: whitespace-separated tokens
    bool argos = false;  // an Argos package: its text made as argos-translate makes it (TokenVocabularies::join_pieces)
    // AttnLab tensor name -> where it is stored; a bias with no entry is zero (CTranslate2 leaves out
    // a bias a model does not have).
    std::map<std::string, TensorSource> sources;
    std::string stored_dtypes;               // "float32", "int8+float32", ...
    std::string model_dir;                   // where model.bin is (inside an unpacked .argosmodel: a temporary folder)
    std::shared_ptr<const void> keep_alive;  // that temporary folder, removed with the last copy
    // AttnLab's tensors that have one row more than their variable: every vocabulary gets a <pad> of AttnLab's
    // own for its masks (the model's <blank> or <pad> stays an ordinary token, as CTranslate2 pads by lengths),
    // its embedding row zero and its logit kPaddingLogit, so that it takes no share of the softmax
    // CTranslate2 computes without it.
    std::set<std::string> padding_rows;
};

inline constexpr float kPaddingLogit = -1e30f;

// model.bin's header, config.json and the vocabularies of the CTranslate2 model `path` names (a
// model directory, an installed Argos package or an .argosmodel: formats/argos/argos_package.h) -> the
// package config and where each tensor is. Throws PackageError naming the file and the problem.
Ct2Model readCtranslate2Model(const std::string& path);

// The text codec of such a model or of a package imported from one (tokenizer "ctranslate2"); `argos`: an
// Argos package's, whose text is made as argos-translate makes it.
std::unique_ptr<TextCodec> ctranslate2Codec(const PackageConfig& config, const Ct2Vocabularies& vocabularies,
                                            const std::string& spm_path, bool argos = false);

// The part of it model.bin decides, from its header alone (the fuzz target): vocabularies of
// generated tokens of the embeddings' sizes, CTranslate2's config defaults.
Ct2Model ctranslate2ModelFromBin(ct2::ModelBin bin);

// A few lines for the model card of an imported package.
std::string ctranslate2ModelCard(const std::string& dir, const Ct2Model& m);

}  // namespace attnlab::package
