#pragma once
// Tokenizer: a SentencePiece model behind a std-types interface.
//
// SentencePiece and LibTorch cannot share one process on Debian 12 when linked normally (the
// Debian libsentencepiece exports protobuf 3.14 symbols that clash with LibTorch's protobuf
// 3.21). Every SentencePiece call therefore lives in a small module library
// (libattnlab_spm.so, C interface) that this class loads with
// dlopen(RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND).

#include <attnlab/config.h>

#include <memory>
#include <string>
#include <vector>

namespace attnlab {

struct TokenizerTrainingOptions {
    std::vector<std::string> input_files;  // plain text, one sentence per line
    std::string model_path;                // the model file written (atomically); the model records no paths
    int vocab_size = 8000;
    std::string model_type = "unigram";  // unigram | bpe | char | word
    double character_coverage = 1.0;
    bool byte_fallback = true;    // unseen characters become byte pieces, so that
                                  // decode(encode(x)) == x for any UTF-8 text
    int input_sentence_size = 0;  // sample this many sentences (0 = all)
    int num_threads = 2;
    int pad_id = int(special_ids::kPad), unk_id = int(special_ids::kUnk);  // the ids AttnLab packages use
    int bos_id = int(special_ids::kBos), eos_id = int(special_ids::kEos);
    void validate() const;  // throws ConfigError
};

struct Encoding {
    std::vector<int> ids;
    std::vector<std::string> pieces;
    std::vector<std::string> surfaces;  // the span of the input text each piece covers
};

class Tokenizer {
public:
    // Loads a SentencePiece model file; throws TokenizerError naming the file.
    explicit Tokenizer(const std::string& model_path);
    ~Tokenizer();
    Tokenizer(Tokenizer&&) noexcept;
    Tokenizer& operator=(Tokenizer&&) noexcept;
    Tokenizer(const Tokenizer&) = delete;
    Tokenizer& operator=(const Tokenizer&) = delete;

    Encoding encode(const std::string& text) const;
    std::string decode(const std::vector<int>& ids) const;
    // As SentencePiece's DecodePieces: a piece the model lacks is written as itself.
    std::string decodePieces(const std::vector<std::string>& pieces) const;
    std::string idToPiece(int id) const;
    int pieceToId(const std::string& piece) const;  // unk id when absent
    int vocabSize() const;
    int padId() const;
    int unkId() const;
    int bosId() const;
    int eosId() const;
    bool isByte(int id) const;  // a byte-fallback piece such as <0xF0>
    const std::string& path() const;

    // Characters of `text` that the vocabulary lacks: each becomes <unk> (or byte pieces when the
    // model has byte fallback). Returned in order of first appearance, each once.
    std::vector<std::string> unknownCharacters(const std::string& text) const;
    // The same from an encoding already made (its surfaces).
    std::vector<std::string> unknownCharacters(const Encoding& encoding) const;
    bool hasByteFallback() const;  // unknown characters become <0xNN> pieces instead of <unk>

    // Trains a SentencePiece model and writes it to options.model_path (no .vocab file); the
    // model records no path, neither its input's nor its own. Throws TokenizerError with
    // SentencePiece's message, or InputError when the file cannot be written.
    static void train(const TokenizerTrainingOptions& options);

    // Where the module was found (for diagnostics); throws TokenizerError when it cannot be.
    static std::string modulePath();

private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

}  // namespace attnlab
