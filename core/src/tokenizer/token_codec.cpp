// CTranslate2's vocabularies as a TextCodec (text_codec.h, tokenVocabularyCodec).
#include "tokenizer/text_codec.h"

#include "util/small_file.h"

#include <attnlab/errors.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace attnlab {
namespace {

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

// argos-translate's detokenization (translate.py apply_packaged_translation): "".join(tokens), "▁" -> " ",
// then one leading space removed.
std::string joinedPieces(const std::vector<std::string>& pieces) {
    static const std::string kSpaceSymbol = "\xE2\x96\x81";  // U+2581
    std::string joined, text;
    for (const auto& p : pieces) joined += p;
    for (size_t i = 0; i < joined.size();) {
        if (joined.compare(i, kSpaceSymbol.size(), kSpaceSymbol) == 0) {
            text += ' ';
            i += kSpaceSymbol.size();
        } else {
            text += joined[i++];
        }
    }
    if (!text.empty() && text.front() == ' ') text.erase(0, 1);
    return text;
}

class Lookup {
public:
    Lookup(const std::vector<std::string>& tokens, int unk) : m_unk(unk) {
        m_ids.reserve(tokens.size());
        for (size_t i = 0; i < tokens.size(); ++i) m_ids.emplace(tokens[i], static_cast<int>(i));  // keeps the first
    }
    int operator()(const std::string& token) const {
        auto it = m_ids.find(token);
        return it == m_ids.end() ? m_unk : it->second;
    }
    bool knows(const std::string& token) const { return m_ids.count(token) > 0; }
    int unk() const { return m_unk; }

private:
    std::unordered_map<std::string, int> m_ids;
    int m_unk;
};

class TokenVocabularyCodec final : public TextCodec {
public:
    explicit TokenVocabularyCodec(TokenVocabularies v)
        : m_v(std::move(v)),
          m_source(m_v.source, m_v.source_unk),
          m_target(m_v.target, m_v.target_unk),
          m_special(m_v.special.begin(), m_v.special.end()) {
        if (!m_v.spm_path.empty()) {
            util::requireFile(m_v.spm_path);
            try {
                m_spm = std::make_unique<Tokenizer>(m_v.spm_path);
            } catch (const TokenizerError& e) {
                throw PackageError(e.what());
            }
        }
    }

    Encoding encodeSource(const std::string& text) const override { return encode(text, m_source); }
    Encoding encodeTarget(const std::string& text) const override { return encode(text, m_target); }
    bool keepsUnknown() const override { return true; }

    std::vector<std::string> unknownCharacters(const Encoding& e) const override {
        std::vector<std::string> out;  // a whitespace model's unknown tokens, or a piece model's unknown pieces
        for (size_t i = 0; i < e.ids.size() && i < e.pieces.size(); ++i) {
            // The encoding may be of either side: a token is unknown where its side's lookup gave unk.
            const bool unknown = (e.ids[i] == m_source.unk() && !m_source.knows(e.pieces[i])) ||
                                 (e.ids[i] == m_target.unk() && !m_target.knows(e.pieces[i]));
            std::string what = m_spm && i < e.surfaces.size() ? e.surfaces[i] : e.pieces[i];
            if (unknown && std::find(out.begin(), out.end(), what) == out.end()) out.push_back(what);
        }
        return out;
    }

    std::string decode(const std::vector<int>& ids) const override {
        std::vector<std::string> tokens;
        for (int id : ids)
            if (!m_special.count(id)) tokens.push_back(idToPiece(id));
        if (m_v.join_pieces) return joinedPieces(tokens);
        if (m_spm) return m_spm->decodePieces(tokens);
        std::string text;
        for (const auto& t : tokens) text += (text.empty() ? "" : " ") + t;
        return text;
    }

    std::string idToPiece(int id) const override {
        if (id < 0 || id >= vocabSize()) return "<id " + std::to_string(id) + ">";
        return m_v.target[static_cast<size_t>(id)];
    }
    std::string sourcePiece(int id) const override {
        if (id < 0 || id >= static_cast<int>(m_v.source.size())) return "<id " + std::to_string(id) + ">";
        return m_v.source[static_cast<size_t>(id)];
    }
    int pieceToId(const std::string& piece) const override { return m_target.knows(piece) ? m_target(piece) : -1; }
    int vocabSize() const override { return static_cast<int>(m_v.target.size()); }

private:
    Encoding encode(const std::string& text, const Lookup& lookup) const {
        Encoding e;
        if (m_spm) {
            e = m_spm->encode(text);
        } else {
            for (size_t i = 0; i < text.size();) {
                while (i < text.size() && isSpace(text[i])) ++i;
                const size_t begin = i;
                while (i < text.size() && !isSpace(text[i])) ++i;
                if (i > begin) e.pieces.push_back(text.substr(begin, i - begin));
            }
            e.surfaces = e.pieces;
        }
        e.ids.clear();
        for (const auto& p : e.pieces) e.ids.push_back(lookup(p));
        return e;
    }

    TokenVocabularies m_v;
    Lookup m_source, m_target;
    std::unordered_set<int> m_special;
    std::unique_ptr<Tokenizer> m_spm;
};

}  // namespace

std::unique_ptr<TextCodec> tokenVocabularyCodec(TokenVocabularies vocabularies) {
    return std::make_unique<TokenVocabularyCodec>(std::move(vocabularies));
}

}  // namespace attnlab
