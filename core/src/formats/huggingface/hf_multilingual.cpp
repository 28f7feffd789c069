#include "formats/huggingface/hf_multilingual.h"

#include "formats/huggingface/hf_config.h"
#include "formats/huggingface/hf_weights.h"
#include "util/text.h"

#include <attnlab/errors.h>
#include <attnlab/package.h>
#include <attnlab/tokenizer.h>
#include <attnlab/unknown_languages.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

namespace attnlab::package {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kSpm = kHfSentencePiece;
constexpr const char* kVocabJson = "vocab.json";
constexpr const char* kTokenizerConfig = "tokenizer_config.json";
constexpr const char* kSpecialTokensMap = "special_tokens_map.json";
constexpr const char* kAddedTokens = "added_tokens.json";
constexpr int kFairseqOffset = 1;      // NLLB / mBART-50: the model's id of a SentencePiece piece is its id + 1
constexpr int kM2M100MadeupWords = 8;  // M2M100Tokenizer's num_madeup_words

json optionalJson(const std::string& dir, const char* name) {
    const fs::path p = fs::path(dir) / name;
    if (!util::optionalFilePresent(p.string())) return json::object();
    json j = readJson(p.string());
    if (!j.is_object()) throw PackageError(p.string() + ": expected a JSON object");
    return j;
}

// A token as special_tokens_map.json or tokenizer_config.json writes it: a string, or an
// AddedToken object with its "content".
std::string tokenText(const json& t, const std::string& origin) {
    if (t.is_string()) return t.get<std::string>();
    if (t.is_object() && t.contains("content") && t["content"].is_string()) return t["content"].get<std::string>();
    throw PackageError(origin + ": a token is " + t.dump() + ", not a string");
}

// special_tokens_map.json's additional_special_tokens (else tokenizer_config.json's): the language
// tokens in the tokenizer's order.
std::vector<std::string> listedLanguageTokens(const std::string& dir, const json& tcfg) {
    const json smap = optionalJson(dir, kSpecialTokensMap);
    const std::string origin = (fs::path(dir) / kSpecialTokensMap).string();
    json list = smap.value("additional_special_tokens", json());
    if (!list.is_array()) list = tcfg.value("additional_special_tokens", json());
    if (!list.is_array() || list.empty())
        throw PackageError(origin +
                           ": lists no language codes (additional_special_tokens); AttnLab needs them to "
                           "number the language tokens as the tokenizer does");
    if (list.size() > PackageConfig::kMaxLanguages)
        throw PackageError(origin + ": lists " + std::to_string(list.size()) + " language tokens; at most " +
                           std::to_string(PackageConfig::kMaxLanguages) + " are read");
    std::vector<std::string> out;
    for (const auto& t : list) out.push_back(tokenText(t, origin));
    return out;
}

// The pieces of a SentencePiece model, id by id.
std::vector<std::string> spmPieces(const std::string& path) {
    util::requireFile(path);
    try {
        const Tokenizer sp(path);
        std::vector<std::string> out(size_t(sp.vocabSize()));
        for (int i = 0; i < sp.vocabSize(); ++i) out[size_t(i)] = sp.idToPiece(i);
        return out;
    } catch (const TokenizerError& e) {
        throw PackageError(e.what());
    }
}

struct Layout {
    std::map<int64_t, std::string> pieces;   // id -> piece
    std::map<int64_t, std::string> origins;  // id -> the file that gave it
    std::vector<LanguageToken> languages;
    std::vector<int> special;
    int64_t unk = 3;
};

void addPiece(Layout& l, int64_t id, const std::string& piece, const std::string& origin) {
    if (!l.pieces.emplace(id, piece).second)
        throw PackageError(origin + ": id " + std::to_string(id) + " is given to '" + util::forMessage(piece) +
                           "' and to '" + util::forMessage(l.pieces.at(id)) + "'");
    l.origins.emplace(id, origin);
}

// The id `value` that the file `origin` gives the token `token`: a whole number, not negative.
int64_t tokenId(const json& value, const std::string& origin, const std::string& token) {
    if (!value.is_number_integer() || value.get<int64_t>() < 0)
        throw PackageError(origin + ": the id of '" + util::forMessage(token) + "' is " +
                           util::forMessage(value.dump()) + ", not a whole number of 0 or more");
    return value.get<int64_t>();
}

// M2M100Tokenizer: vocab.json's pieces, then "__xx__" language tokens (added_tokens.json's ids
// where it has them, else numbered after vocab.json in the listed order), then unused ids.
Layout m2m100Layout(const std::string& dir, const json& tcfg) {
    Layout l;
    const std::string vocab_path = (fs::path(dir) / kVocabJson).string();
    const json vocab = util::parseJson(util::readSmallFile(vocab_path, 64u << 20), vocab_path);
    if (!vocab.is_object()) throw PackageError(vocab_path + ": expected an object mapping pieces to ids");
    for (const auto& [piece, id] : vocab.items()) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0)
            throw PackageError(vocab_path + ": the id of '" + util::forMessage(piece) + "' is " + id.dump());
        addPiece(l, id.get<int64_t>(), piece, vocab_path);
    }
    for (const char* needed : {"<s>", "<pad>", "</s>", "<unk>"})
        if (!vocab.contains(needed)) throw PackageError(vocab_path + ": has no '" + std::string(needed) + "' piece");
    l.unk = vocab["<unk>"].get<int64_t>();
    const int64_t n = int64_t(vocab.size());
    const std::string added_path = (fs::path(dir) / kAddedTokens).string();
    const json added = optionalJson(dir, kAddedTokens);
    const auto tokens = listedLanguageTokens(dir, tcfg);
    for (size_t i = 0; i < tokens.size(); ++i) {
        const std::string& t = tokens[i];
        const bool wrapped = t.size() > 4 && t.rfind("__", 0) == 0 && t.compare(t.size() - 2, 2, "__") == 0;
        if (!wrapped)
            throw PackageError((fs::path(dir) / kSpecialTokensMap).string() + ": '" + util::forMessage(t) +
                               "' is not an M2M100 language token (__xx__)");
        const int64_t id = added.contains(t) ? tokenId(added[t], added_path, t) : n + int64_t(i);
        addPiece(l, id, t, added.contains(t) ? added_path : (fs::path(dir) / kSpecialTokensMap).string());
        l.languages.push_back({t.substr(2, t.size() - 4), t, id});
    }
    const int64_t last = n + int64_t(tokens.size());
    for (int k = 0; k < kM2M100MadeupWords; ++k) l.special.push_back(int(last + k));
    for (const char* s : {"<s>", "<pad>", "</s>", "<unk>"}) l.special.push_back(vocab[s].get<int>());
    return l;
}

// tokenizer_config.json's added_tokens_decoder: token -> id, each id written in decimal digits only
// ("-5", "+5", " 5" and "5x" refused, as they are no id a tokenizer gives).
std::map<std::string, int64_t> movedIds(const std::string& dir, const json& tcfg) {
    const std::string origin = (fs::path(dir) / kTokenizerConfig).string();
    std::map<std::string, int64_t> moved;
    if (!tcfg.contains("added_tokens_decoder") || !tcfg["added_tokens_decoder"].is_object()) return moved;
    for (const auto& [id, t] : tcfg["added_tokens_decoder"].items()) {
        const bool digits = !id.empty() && id.size() <= 18 &&
                            std::all_of(id.begin(), id.end(), [](unsigned char c) { return c >= '0' && c <= '9'; });
        if (!digits)
            throw PackageError(origin + ": added_tokens_decoder has the id '" + util::forMessage(id) +
                               "', not a whole number of 0 or more");
        moved[tokenText(t, origin)] = std::stoll(id);
    }
    return moved;
}

// NllbTokenizer and MBart50Tokenizer: fairseq's ids over the SentencePiece model, the language
// codes after it, then <mask>; tokenizer_config.json's added_tokens_decoder moves ids it names.
Layout fairseqLayout(const std::string& dir, const json& tcfg, const std::string& spm_path) {
    Layout l;
    const std::map<std::string, int64_t> moved = movedIds(dir, tcfg);
    const auto sp = spmPieces(spm_path);
    const std::map<std::string, int64_t> fixed = {{"<s>", 0}, {"<pad>", 1}, {"</s>", 2}, {"<unk>", 3}};
    for (const auto& [piece, id] : fixed) addPiece(l, id, piece, spm_path);
    for (size_t i = 1; i < sp.size(); ++i)
        if (!fixed.count(sp[i])) addPiece(l, int64_t(i) + kFairseqOffset, sp[i], spm_path);
    const int64_t n = int64_t(sp.size());
    const auto tokens = listedLanguageTokens(dir, tcfg);
    auto idOf = [&](const std::string& t, int64_t fallback) { return moved.count(t) ? moved.at(t) : fallback; };
    // Where an id comes from: added_tokens_decoder where it moves the token, else the language list's order.
    auto originOf = [&](const std::string& t) {
        return (fs::path(dir) / (moved.count(t) ? kTokenizerConfig : kSpecialTokensMap)).string();
    };
    for (size_t i = 0; i < tokens.size(); ++i) {
        const int64_t id = idOf(tokens[i], n + kFairseqOffset + int64_t(i));
        addPiece(l, id, tokens[i], originOf(tokens[i]));
        l.languages.push_back({tokens[i], tokens[i], id});
    }
    const int64_t mask = idOf("<mask>", n + kFairseqOffset + int64_t(tokens.size()));
    addPiece(l, mask, "<mask>", originOf("<mask>"));
    for (int s = 0; s < 4; ++s) l.special.push_back(s);
    l.special.push_back(int(mask));
    return l;
}

// The tokenizer's class: tokenizer_config.json's tokenizer_class, else what the files say.
std::string tokenizerClass(const std::string& dir, const json& tcfg, const std::string& model_type) {
    std::string name = tcfg.value("tokenizer_class", json("")).is_string() ? tcfg.value("tokenizer_class", "") : "";
    if (name.size() > 4 && name.compare(name.size() - 4, 4, "Fast") == 0) name.resize(name.size() - 4);
    if (name.empty()) {
        if (util::optionalFilePresent((fs::path(dir) / kVocabJson).string())) return "M2M100Tokenizer";
        return model_type == "mbart" ? "MBart50Tokenizer" : "NllbTokenizer";
    }
    if (name != "M2M100Tokenizer" && name != "NllbTokenizer" && name != "MBart50Tokenizer")
        throw PackageError((fs::path(dir) / kTokenizerConfig).string() + ": tokenizer_class " + name +
                           " is not supported (M2M100Tokenizer, NllbTokenizer and MBart50Tokenizer are)");
    return name;
}

PackageConfig mapConfig(const HfConfig& c) {
    if (!c.j.is_object()) c.fail("expected a JSON object");
    const std::string type = c.string("model_type", "");
    if (type != "m2m_100" && type != "mbart") refuseModelType(c, type);
    const auto [d_model, heads] = widthAndHeads(c);
    if (c.has("encoder_d_model") || c.has("decoder_d_model"))
        c.fail("an encoder and a decoder of different widths are not supported");
    const bool mbart = type == "mbart";
    PackageConfig pc;
    ModelConfig& m = pc.model;
    m.n_src_vocab = m.n_trg_vocab = c.positive("vocab_size");
    mapBartDimensions(c, d_model, heads, m);
    m.n_position = c.positive("max_position_embeddings");
    m.emb_src_trg_weight_sharing = true;  // model.shared
    // The classes' own defaults where config.json says nothing: M2M100Config relu and a scaled
    // embedding, MBartConfig gelu and none.
    m.ffn_activation = c.has("activation_function") ? activationOf(c) : (mbart ? "gelu" : "relu");
    m.emb_scale = c.boolean("scale_embedding", !mbart) ? "sqrt_d_model" : "none";
    checkBadWords(c, m.trg_pad_idx);
    m.norm_position = "pre";  // M2M100EncoderLayer, MBartEncoderLayer: norm, sub-layer, residual
    m.final_layer_norm = true;
    m.emb_layer_norm = mbart;  // MBartEncoder.layernorm_embedding
    m.pos_encoding = mbart ? "learned" : "fairseq";
    m.pos_offset = mbart ? 2 : m.src_pad_idx + 1;  // MBartLearnedPositionalEmbedding.offset; M2M100: from pad + 1
    m.logits_bias = mbart;                         // MBartForConditionalGeneration.final_logits_bias
    pc.eos_idx = c.integer("eos_token_id");
    pc.bos_idx = c.integer("decoder_start_token_id", pc.eos_idx);
    pc.unk_idx = 3;
    pc.source_bos = false;  // the language token takes that place
    pc.source_eos = true;
    pc.tokenizer = "marian";  // a piece vocabulary over a SentencePiece model
    pc.num_beams = static_cast<int>(std::clamp<int64_t>(c.integer("num_beams", 0), 0, 64));
    pc.max_length = static_cast<int>(std::clamp<int64_t>(c.integer("max_length", 0), 0, 4096));
    pc.source_lang = unknown_language::kSource;
    pc.target_lang = unknown_language::kTarget;
    try {
        pc.validate();
    } catch (const ConfigError& e) {
        c.fail(e.what());
    }
    return pc;
}

std::string familyOf(const PackageConfig& pc) {
    return pc.model.pos_encoding == "learned" ? "MBartForConditionalGeneration" : "M2M100ForConditionalGeneration";
}

}  // namespace

// The codes used when none is asked for: tokenizer_config.json's src_lang / tgt_lang, else English
// into German where the model has both, else its first two languages.
void defaultLanguages(PackageConfig& pc, const json& tcfg) {
    auto pick = [&](const char* key, std::vector<std::string> preferred, size_t fallback) {
        if (tcfg.contains(key) && tcfg[key].is_string())
            preferred.insert(preferred.begin(), tcfg[key].get<std::string>());
        for (const auto& p : preferred)
            if (const LanguageToken* l = pc.findLanguage(p)) return l->code;
        return pc.languages[std::min(fallback, pc.languages.size() - 1)].code;
    };
    pc.source_lang = pick("src_lang", {"en", "eng_Latn", "en_XX"}, 0);
    pc.target_lang = pick("tgt_lang", {"de", "deu_Latn", "de_DE"}, 1);
}

bool isMultilingualDirectory(const std::string& dir) {
    const fs::path p = fs::path(dir) / package_files::kConfig;
    try {
        if (!util::optionalFilePresent(p.string())) return false;
        const json j = readJson(p.string());
        return j.is_object() &&
               (j.value("model_type", json()) == json("m2m_100") || j.value("model_type", json()) == json("mbart"));
    } catch (const std::exception&) {
        return false;  // the reader that opens it says what is wrong
    }
}

PackageConfig multilingualConfigFromJson(const std::string& text, const std::string& origin) {
    return mapConfig(HfConfig{util::parseJson(text, origin), origin});
}

MultilingualModel readMultilingualModel(const std::string& dir) {
    const std::string path = (fs::path(dir) / package_files::kConfig).string();
    const HfConfig c{readJson(path), path};
    MultilingualModel out;
    out.config = mapConfig(c);
    out.family = familyOf(out.config);
    const json tcfg = optionalJson(dir, kTokenizerConfig);
    out.tokenizer.spm_path = (fs::path(dir) / kSpm).string();
    out.tokenizer.tokenizer_class = tokenizerClass(dir, tcfg, c.string("model_type", ""));
    Layout l = out.tokenizer.tokenizer_class == "M2M100Tokenizer" ? m2m100Layout(dir, tcfg)
                                                                  : fairseqLayout(dir, tcfg, out.tokenizer.spm_path);
    util::requireFile(out.tokenizer.spm_path);
    const int64_t vocab = out.config.model.n_trg_vocab;
    const int64_t highest = l.pieces.empty() ? -1 : l.pieces.rbegin()->first;
    if (highest >= vocab)
        throw PackageError(l.origins.at(highest) + ": the tokenizer (" + out.tokenizer.tokenizer_class +
                           ") has the id " + std::to_string(highest) + " ('" +
                           util::forMessage(l.pieces.rbegin()->second) + "'), outside config.json's vocab_size of " +
                           std::to_string(vocab));
    out.tokenizer.pieces.resize(size_t(vocab));
    for (int64_t id = 0; id < vocab; ++id) {
        auto it = l.pieces.find(id);
        if (it != l.pieces.end()) {
            out.tokenizer.pieces[size_t(id)] = it->second;
        } else {
            out.tokenizer.pieces[size_t(id)] = "<unused " + std::to_string(id) + ">";
            l.special.push_back(int(id));
        }
    }
    // A piece written twice (a language code that is also a SentencePiece piece) would give the
    // imported vocab.json one key for two ids: refused, with both.
    std::map<std::string, int64_t> first_id;
    for (int64_t id = 0; id < vocab; ++id)
        if (const auto [it, fresh] = first_id.emplace(out.tokenizer.pieces[size_t(id)], id); !fresh)
            throw PackageError(dir + ": the tokenizer gives the piece '" + util::forMessage(it->first) + "' two ids (" +
                               std::to_string(it->second) + " and " + std::to_string(id) + ")");
    for (const auto& lang : l.languages) l.special.push_back(int(lang.id));
    out.tokenizer.special = std::move(l.special);
    out.config.unk_idx = l.unk;
    out.config.languages = std::move(l.languages);
    out.config.language_token_position =
        tcfg.value("legacy_behaviour", json(false)) == json(true) ? "after_eos" : "first";
    defaultLanguages(out.config, tcfg);
    decodingDefaults(dir, c, out.config);
    try {
        out.config.validate();
    } catch (const ConfigError& e) {
        c.fail(e.what());
    }
    return out;
}

std::string multilingualModelCard(const std::string& dir, const MultilingualModel& mm) {
    const auto& c = mm.config;
    const auto& m = c.model;
    std::string card =
        "# " + fs::path(dir).lexically_normal().filename().string() + " (imported " + mm.family + ")\n\n";
    card += "Imported by `attnlab-cli import` from a Hugging Face directory (weights from `" +
            fs::path(hfWeightFiles(dir).front()).filename().string() +
            "`). The source model's own card and licence apply; AttnLab changed no weight.\n\n";
    card += "- " + std::to_string(m.encoderLayers()) + " encoder and " + std::to_string(m.decoderLayers()) +
            " decoder layers, " + std::to_string(m.n_head) + " heads, d_model " + std::to_string(m.d_model) +
            ", vocabulary " + std::to_string(m.n_trg_vocab) + ", layer norm before each sub-layer\n";
    card += "- " + std::to_string(c.languages.size()) + " languages (" + mm.tokenizer.tokenizer_class + "); default " +
            c.source_lang + " → " + c.target_lang + "; the target language's token is forced first\n";
    card +=
        "- tokenizer: source.spm = target.spm = sentencepiece.bpe.model, vocab.json written from the tokenizer's "
        "ids\n";
    return card;
}

}  // namespace attnlab::package
