#include "tokenizer/text_codec.h"

#include "util/json_parse.h"
#include "util/small_file.h"
#include "util/text.h"

#include <attnlab/errors.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <unordered_set>

namespace attnlab {
namespace fs = std::filesystem;

namespace {

class SentencePieceCodec final : public TextCodec {
public:
    explicit SentencePieceCodec(std::unique_ptr<Tokenizer> t) : m_tok(std::move(t)) {}
    Encoding encodeSource(const std::string& text) const override { return m_tok->encode(text); }
    Encoding encodeTarget(const std::string& text) const override { return m_tok->encode(text); }
    std::vector<std::string> unknownCharacters(const Encoding& e) const override { return m_tok->unknownCharacters(e); }
    std::string decode(const std::vector<int>& ids) const override { return m_tok->decode(ids); }
    std::string idToPiece(int id) const override { return m_tok->idToPiece(id); }
    int pieceToId(const std::string& piece) const override {
        // SentencePiece's PieceToId gives <unk>'s id for a piece it lacks: only an id whose piece is this one counts.
        const int id = m_tok->pieceToId(piece);
        return id >= 0 && m_tok->idToPiece(id) == piece ? id : -1;
    }
    int vocabSize() const override { return m_tok->vocabSize(); }
    const Tokenizer* sentencePiece() const override { return m_tok.get(); }

private:
    std::unique_ptr<Tokenizer> m_tok;
};

// Splits UTF-8 text into its characters (a malformed byte is one character of its own).
std::vector<std::string> utf8Characters(const std::string& s) {
    std::vector<std::string> out;
    for (size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
        n = std::min(n, s.size() - i);
        out.push_back(s.substr(i, n));
        i += n;
    }
    return out;
}

class MarianCodec final : public TextCodec {
public:
    MarianCodec(const std::string& dir, int64_t vocab_size, const std::vector<int>& special)
        : m_source(load((fs::path(dir) / marian_files::kSourceSpm).string())),
          m_target(load((fs::path(dir) / marian_files::kTargetSpm).string())),
          m_vocab(readMarianVocab((fs::path(dir) / marian_files::kVocab).string(), vocab_size)),
          m_vocab_size(static_cast<int>(vocab_size)) {
        m_pieces.resize(m_vocab.size());  // readMarianVocab: every id 0..vocab_size-1 once
        for (const auto& [piece, id] : m_vocab) m_pieces[id] = piece;
        m_unk = m_vocab.at("<unk>");
        m_special = {m_vocab.at("</s>"), m_vocab.at("<pad>"), m_unk};
        m_special.insert(special.begin(), special.end());
        // What an imported multilingual tokenizer never writes as text (hf_multilingual.cpp names them).
        for (const char* piece : {"<s>", "<mask>"})
            if (auto it = m_vocab.find(piece); it != m_vocab.end()) m_special.insert(it->second);
        for (const auto& [piece, id] : m_vocab)
            if (piece.rfind("<unused ", 0) == 0) m_special.insert(id);
    }
    explicit MarianCodec(PieceVocabulary v)
        : m_source(load(v.spm_path)),
          m_target(load(v.spm_path)),
          m_vocab_size(static_cast<int>(v.pieces.size())),
          m_pieces(std::move(v.pieces)) {
        for (size_t id = 0; id < m_pieces.size(); ++id) m_vocab.emplace(m_pieces[id], static_cast<int>(id));
        m_unk = v.unk;
        m_special.insert(v.special.begin(), v.special.end());
        m_special.insert(m_unk);
        m_marian_codes = false;
    }

    Encoding encodeSource(const std::string& text) const override {
        // MarianTokenizer's ">>code<<"; the multilingual tokenizers read such text as text.
        const LanguageCode lc = m_marian_codes ? splitLanguageCode(text) : LanguageCode{std::string(), text};
        Encoding e = map(m_source->encode(lc.rest));
        if (!lc.code.empty()) {
            e.ids.insert(e.ids.begin(), idOf(lc.code));
            e.pieces.insert(e.pieces.begin(), lc.code);
            e.surfaces.insert(e.surfaces.begin(), lc.code);
        }
        return e;
    }
    Encoding encodeTarget(const std::string& text) const override { return map(m_target->encode(text)); }
    bool keepsUnknown() const override { return true; }

    std::vector<std::string> unknownCharacters(const Encoding& e) const override {
        std::vector<std::string> out;
        for (size_t i = 0; i < e.ids.size() && i < e.surfaces.size(); ++i) {
            if (e.ids[i] != m_unk) continue;
            for (const auto& ch : utf8Characters(e.surfaces[i]))
                if (ch != " " && std::find(out.begin(), out.end(), ch) == out.end()) out.push_back(ch);
        }
        return out;
    }

    std::string decode(const std::vector<int>& ids) const override {
        std::vector<std::string> pieces;
        for (int id : ids)
            if (!m_special.count(id)) pieces.push_back(idToPiece(id));
        std::string text = m_target->decodePieces(pieces);
        // Pieces the target model lacks come back as themselves: their '▁' becomes a space, as
        // MarianTokenizer.convert_tokens_to_string does.
        static const std::string kSpace = "\xE2\x96\x81";
        for (size_t at = text.find(kSpace); at != std::string::npos; at = text.find(kSpace, at + 1))
            text.replace(at, kSpace.size(), " ");
        const auto first = text.find_first_not_of(" \t\n\r");
        if (first == std::string::npos) return {};
        return text.substr(first, text.find_last_not_of(" \t\n\r") - first + 1);
    }

    std::string idToPiece(int id) const override {
        if (id < 0 || id >= m_vocab_size) return "<id " + std::to_string(id) + ">";
        return m_pieces[static_cast<size_t>(id)];
    }
    int pieceToId(const std::string& piece) const override {
        auto it = m_vocab.find(piece);
        return it == m_vocab.end() ? -1 : it->second;
    }
    int vocabSize() const override { return m_vocab_size; }

private:
    static std::unique_ptr<Tokenizer> load(const std::string& path) {
        util::requireFile(path);
        try {
            return std::make_unique<Tokenizer>(path);
        } catch (const TokenizerError& e) {
            throw PackageError(e.what());
        }
    }
    int idOf(const std::string& piece) const {
        auto it = m_vocab.find(piece);
        return it == m_vocab.end() ? m_unk : it->second;
    }
    Encoding map(Encoding e) const {
        for (size_t i = 0; i < e.ids.size(); ++i) e.ids[i] = idOf(e.pieces.at(i));
        return e;
    }

    std::unique_ptr<Tokenizer> m_source, m_target;
    std::unordered_map<std::string, int> m_vocab;
    int m_vocab_size = 0;
    std::vector<std::string> m_pieces;  // id -> piece
    int m_unk = 0;
    std::unordered_set<int> m_special;  // left out of decoded text
    bool m_marian_codes = true;         // a leading ">>code<<" is one token (MarianTokenizer)
};

}  // namespace

std::unique_ptr<TextCodec> sentencePieceCodec(std::unique_ptr<Tokenizer> tokenizer) {
    return std::make_unique<SentencePieceCodec>(std::move(tokenizer));
}

std::unique_ptr<TextCodec> marianCodec(const std::string& dir, int64_t vocab_size, const std::vector<int>& special) {
    return std::make_unique<MarianCodec>(dir, vocab_size, special);
}

std::unique_ptr<TextCodec> pieceVocabularyCodec(PieceVocabulary vocabulary) {
    return std::make_unique<MarianCodec>(std::move(vocabulary));
}

namespace {
// Every id the model has must have its piece: a translation would otherwise show an id that no
// text stands for. (Hugging Face's conversion refuses a vocabulary whose size is not the
// model's, and ids are unique, so every OPUS-MT vocab.json covers 0..vocab_size-1.)
void refuseMissingIds(const std::string& path, const std::unordered_map<int64_t, char>& seen, int64_t vocab_size) {
    if (static_cast<int64_t>(seen.size()) == vocab_size) return;
    constexpr int kNamed = 5;
    std::string first;
    int named = 0;
    for (int64_t id = 0; id < vocab_size && named < kNamed; ++id)
        if (!seen.count(id)) first += (named++ ? ", " : "") + std::to_string(id);
    const int64_t missing = vocab_size - static_cast<int64_t>(seen.size());
    throw PackageError(path + ": has no piece for " + std::to_string(missing) + " of the model's " +
                       std::to_string(vocab_size) + " ids (config.json's vocab_size); the first: " + first +
                       (missing > kNamed ? ", ..." : ""));
}
}  // namespace

std::unordered_map<std::string, int> readMarianVocab(const std::string& path, int64_t vocab_size) {
    const nlohmann::json j = util::parseJson(util::readSmallFile(path, kMaxVocabJsonBytes), path);
    if (!j.is_object()) throw PackageError(path + ": expected an object mapping pieces to ids");
    std::unordered_map<std::string, int> vocab;
    std::unordered_map<int64_t, char> seen;
    for (const auto& [piece, value] : j.items()) {
        if (!value.is_number_integer())
            throw PackageError(path + ": the id of '" + util::forMessage(piece) + "' is " + value.dump() +
                               ", not an integer");
        const int64_t id = value.get<int64_t>();
        if (id < 0 || id >= vocab_size)
            throw PackageError(path + ": '" + util::forMessage(piece) + "' has id " + std::to_string(id) +
                               ", outside the model's vocabulary of " + std::to_string(vocab_size) + " (config.json)");
        if (seen[id]++) throw PackageError(path + ": id " + std::to_string(id) + " is given to more than one piece");
        vocab.emplace(piece, static_cast<int>(id));
    }
    refuseMissingIds(path, seen, vocab_size);
    for (const char* needed : {"</s>", "<unk>", "<pad>"})
        if (!vocab.count(needed)) throw PackageError(path + ": has no '" + needed + "' piece");
    return vocab;
}

LanguageCode splitLanguageCode(const std::string& text) {
    // As MarianTokenizer (and scripts/marian_reference.py): a ">>code<<" at the very start, up to the
    // first "<<" on its line with at least one character between, is one token; nothing else in the
    // text is touched.
    LanguageCode lc{std::string(), text};
    if (text.rfind(">>", 0) != 0) return lc;
    const size_t close = text.find("<<", 3);
    if (close == std::string::npos || text.find('\n') < close) return lc;
    lc.code = text.substr(0, close + 2);
    lc.rest = text.substr(close + 2);
    return lc;
}

}  // namespace attnlab
