#pragma once
// TextCodec: text <-> the model's token ids, for the two layouts a package may have
// (PackageConfig::tokenizer):
//   "sentencepiece" — one SentencePiece model whose ids are the model's ids (tokenizer.model);
//   "marian"        — MarianTokenizer's layout: source.spm for the source, target.spm for the
//                     target, and vocab.json mapping pieces to the model's ids.
// The engine asks only this interface; Tokenizer stays the SentencePiece wrapper.

#include <attnlab/tokenizer.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace attnlab {

class TextCodec {
public:
    virtual ~TextCodec() = default;
    // Text -> the model's ids (no special tokens added), pieces and the text each piece covers.
    virtual Encoding encodeSource(const std::string& text) const = 0;
    virtual Encoding encodeTarget(const std::string& text) const = 0;
    // Characters of an encoding that the vocabulary lacks (each became <unk>), in order of first
    // appearance, each once.
    virtual std::vector<std::string> unknownCharacters(const Encoding& encoding) const = 0;
    // Whether such characters stay in the input as <unk> (MarianTokenizer: what the model was
    // trained with) rather than being left out of it (AttnLab's own packages).
    virtual bool keepsUnknown() const { return false; }
    // Target ids -> text; special tokens (</s>, padding, <unk>) are left out.
    virtual std::string decode(const std::vector<int>& ids) const = 0;
    virtual std::string idToPiece(int id) const = 0;  // a target id's piece
    // A target piece's id, looked up in the vocabulary (not encoded: "dog" and "▁dog" are two pieces); -1 when
    // the vocabulary lacks it.
    virtual int pieceToId(const std::string& piece) const = 0;
    // A source id's piece: the same unless the source vocabulary is another (CTranslate2's separate ones).
    virtual std::string sourcePiece(int id) const { return idToPiece(id); }
    virtual int vocabSize() const = 0;
    // The one SentencePiece model of the "sentencepiece" layout (training needs it); null otherwise.
    virtual const Tokenizer* sentencePiece() const { return nullptr; }
};

std::unique_ptr<TextCodec> sentencePieceCodec(std::unique_ptr<Tokenizer> tokenizer);

// The files of the "marian" layout (the names Hugging Face's MarianTokenizer uses).
namespace marian_files {
inline constexpr const char* kSourceSpm = "source.spm";
inline constexpr const char* kTargetSpm = "target.spm";
inline constexpr const char* kVocab = "vocab.json";
}  // namespace marian_files

// The largest vocab.json read (Marian's, M2M100's: a JSON object of piece -> id; NLLB's 256,206
// pieces take 6 MB).
inline constexpr size_t kMaxVocabJsonBytes = size_t(64) << 20;

// Reads vocab.json (piece -> id); throws PackageError naming the file for what stands there
// instead of a file, malformed JSON, an id outside [0, vocab_size), an id given twice, an id of
// 0..vocab_size-1 with no piece (the first few named, and the count), or a missing "</s>",
// "<unk>" or "<pad>". Pieces are quoted escaped (util::forMessage).
std::unordered_map<std::string, int> readMarianVocab(const std::string& path, int64_t vocab_size);

// MarianTokenizer as Hugging Face documents it: a leading ">>xx<<" language code is kept as one
// token; the rest is encoded with the side's SentencePiece model; pieces map through vocab.json,
// a piece missing from it is <unk>. Decoding: ids -> pieces, special tokens dropped, the target
// model's DecodePieces, '▁' -> ' ', trimmed. Throws PackageError naming the file that is wrong.
// `special`: more ids left out of decoded text (a multilingual package's language tokens).
std::unique_ptr<TextCodec> marianCodec(const std::string& dir, int64_t vocab_size,
                                       const std::vector<int>& special = {});

// The same codec over one SentencePiece model for both sides and a vocabulary given id by id (a
// Hugging Face multilingual directory: formats/huggingface/hf_multilingual.h builds it from its tokenizer's files).
struct PieceVocabulary {
    std::string spm_path;
    std::vector<std::string> pieces;  // id -> piece, every id of the model
    std::vector<int> special;         // ids left out of decoded text besides <unk>
    int unk = 3;
};
std::unique_ptr<TextCodec> pieceVocabularyCodec(PieceVocabulary vocabulary);

// CTranslate2's vocabularies (a token list per side, the id of a token its place in the list; the
// first place where a token is listed twice): with no SentencePiece model, text is
// whitespace-separated tokens and decoded text the target tokens joined by spaces, as
// translate_batch takes and gives them; with one (an Argos Translate package), text is encoded into
// pieces that are then looked up, and decoded with DecodePieces. A token the vocabulary lacks
// becomes `unk` of its side.
struct TokenVocabularies {
    std::string spm_path;  // empty: whitespace-separated tokens
    std::vector<std::string> source, target;
    std::vector<int> special;  // target ids left out of decoded text (</s>, padding, the start token)
    int source_unk = 0, target_unk = 0;
    // An Argos package's text, as argos-translate makes it (translate.py apply_packaged_translation): the
    // pieces joined, every "▁" a space, one leading space dropped, rather than SentencePiece's decoding
    // (which keeps the "▁" of a piece its model lacks: an OPUS-MT package's sentencepiece.model is the
    // source side's, so target pieces need not be in it).
    bool join_pieces = false;
};
std::unique_ptr<TextCodec> tokenVocabularyCodec(TokenVocabularies vocabularies);

// The language code a MarianTokenizer keeps whole (">>fra<<" at the start of the text, up to the
// first "<<") and the rest of the text, untouched.
struct LanguageCode {
    std::string code;  // empty when the text does not start with one
    std::string rest;
};
LanguageCode splitLanguageCode(const std::string& text);

}  // namespace attnlab
