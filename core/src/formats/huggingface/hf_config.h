#pragma once
// Typed reads of a Hugging Face config.json (and its generation_config.json), each error naming the
// file and the key: what the MarianMT and the multilingual readers share.

#include "util/json_parse.h"
#include "util/small_file.h"
#include "util/text.h"

#include <attnlab/config.h>
#include <attnlab/errors.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>

namespace attnlab::package {

// The largest JSON configuration read (config.json, generation_config.json, tokenizer_config.json,
// special_tokens_map.json, added_tokens.json, CTranslate2's config.json, Argos's metadata.json): the
// real ones take a few kB (NLLB's tokenizer_config.json 30 kB), and a DOM takes at most about 30
// times its text.
inline constexpr size_t kMaxJsonConfigBytes = size_t(4) << 20;

inline nlohmann::json readJson(const std::string& path) {
    return util::parseJson(util::readSmallFile(path, kMaxJsonConfigBytes), path);
}

// Typed reads of a Hugging Face config.json, each error naming the file and the key.
struct HfConfig {
    nlohmann::json j;
    std::string path;

    [[noreturn]] void fail(const std::string& m) const { throw PackageError(path + ": " + m); }
    bool has(const char* key) const { return j.contains(key) && !j.at(key).is_null(); }
    int64_t integer(const char* key) const {
        if (!has(key)) fail(std::string("missing '") + key + "'");
        const nlohmann::json& v = j.at(key);
        if (!v.is_number_integer()) fail(std::string("'") + key + "' must be an integer, not " + v.dump());
        return v.get<int64_t>();
    }
    int64_t integer(const char* key, int64_t fallback) const { return has(key) ? integer(key) : fallback; }
    // A count or width that must be there and at least 1 (AttnLab's own config reads 0 in
    // n_dec_layers / d_dec_inner as "as the encoder"; in Hugging Face's there is no such 0).
    int64_t positive(const char* key) const {
        const int64_t v = integer(key);
        if (v < 1) fail(std::string("'") + key + "' is " + std::to_string(v) + "; it must be at least 1");
        return v;
    }
    bool boolean(const char* key, bool fallback) const {
        if (!has(key)) return fallback;
        const nlohmann::json& v = j.at(key);
        if (!v.is_boolean()) fail(std::string("'") + key + "' must be true or false, not " + v.dump());
        return v.get<bool>();
    }
    std::string string(const char* key, const std::string& fallback) const {
        if (!has(key)) return fallback;
        const nlohmann::json& v = j.at(key);
        if (!v.is_string()) fail(std::string("'") + key + "' must be a string, not " + v.dump());
        return v.get<std::string>();
    }
};

// A model_type no reader here opens, refused by name: what is supported, and for T5's family why not.
[[noreturn]] inline void refuseModelType(const HfConfig& c, const std::string& type) {
    if (type == "t5" || type == "mt5" || type == "umt5")
        c.fail("model_type '" + type +
               "' (T5, mT5, MADLAD-400) is not supported: its relative position buckets are not implemented");
    c.fail("model_type '" + util::forMessage(type) +
           "' is not supported: AttnLab opens MarianMT (marian, as OPUS-MT's), M2M100 and NLLB-200 (m2m_100) and "
           "mBART-50 (mbart) models");
}

// d_model and the one head count of encoder and decoder, checked: AttnLab's layers share both.
inline std::pair<int64_t, int64_t> widthAndHeads(const HfConfig& c) {
    const int64_t heads = c.integer("encoder_attention_heads");
    if (c.integer("decoder_attention_heads") != heads)
        c.fail("encoder_attention_heads (" + std::to_string(heads) + ") and decoder_attention_heads (" +
               std::to_string(c.integer("decoder_attention_heads")) + ") differ; AttnLab needs one head count");
    const int64_t d_model = c.integer("d_model");
    if (heads <= 0 || d_model <= 0 || d_model % heads != 0)
        c.fail("d_model " + std::to_string(d_model) + " is not a positive multiple of the " + std::to_string(heads) +
               " heads");
    return {d_model, heads};
}

// The widths, depths and heads a BART-family config.json names the same way in MarianMT, M2M100 and
// mBART (encoder and decoder share one width and head count: the caller has checked that).
inline void mapBartDimensions(const HfConfig& c, int64_t d_model, int64_t heads, ModelConfig& m) {
    m.src_pad_idx = m.trg_pad_idx = c.integer("pad_token_id");
    m.d_word_vec = m.d_model = d_model;
    m.n_head = heads;
    m.d_k = m.d_v = d_model / heads;
    m.n_layers = c.positive("encoder_layers");
    m.n_dec_layers = c.positive("decoder_layers");
    m.d_inner = c.positive("encoder_ffn_dim");
    m.d_dec_inner = c.positive("decoder_ffn_dim");
    m.dropout = 0.1;
    m.trg_emb_prj_weight_sharing = c.boolean("tie_word_embeddings", true);
    m.scale_emb_or_prj = "none";
    m.emb_scale = c.boolean("scale_embedding", false) ? "sqrt_d_model" : "none";
    m.attn_bias = true;
    m.layer_norm_eps = 1e-5;  // torch.nn.LayerNorm's default, which these models use
}

// bad_words_ids: AttnLab blocks the pad id and nothing else, so only that list is accepted.
inline void checkBadWords(const HfConfig& c, int64_t pad) {
    if (!c.has("bad_words_ids")) return;
    const nlohmann::json& b = c.j.at("bad_words_ids");
    const bool only_pad =
        b.is_array() && std::all_of(b.begin(), b.end(), [&](const nlohmann::json& w) {
            return w.is_array() && w.size() == 1 && w[0].is_number_integer() && w[0].get<int64_t>() == pad;
        });
    if (!only_pad)
        c.fail("bad_words_ids " + b.dump() + " is not supported: AttnLab blocks the pad id (" + std::to_string(pad) +
               ") only, as OPUS-MT models ask");
}

// config.json's activation_function as ModelConfig::ffn_activation names it.
inline std::string activationOf(const HfConfig& c) {
    const std::string a = c.string("activation_function", "gelu");
    if (a == "swish" || a == "silu") return "swish";
    if (a == "relu" || a == "gelu") return a;
    c.fail("activation_function '" + util::forMessage(a) + "' is not supported (relu, swish/silu and gelu are)");
}

inline constexpr const char* kGenerationConfig = "generation_config.json";
// The SentencePiece model of an M2M100 / NLLB-200 / mBART folder.
inline constexpr const char* kHfSentencePiece = "sentencepiece.bpe.model";

// A Hugging Face folder's weight files, in the order they are preferred (transformers' own: safetensors,
// whole or sharded, before the pickled pytorch_model.bin): a single file, or an index (".index.json")
// naming its shards. The one list the loader (hf_weights.h) and the hub client (core/src/hub) go by.
// The largest weights index read (NLLB 3.3B's is 90 kB).
inline constexpr size_t kMaxWeightsIndexBytes = size_t(16) << 20;
inline constexpr std::array<const char*, 4> kHfWeightFiles = {"model.safetensors", "model.safetensors.index.json",
                                                              "pytorch_model.bin", "pytorch_model.bin.index.json"};

// num_beams and max_length: generation_config.json when present, else config.json.
inline void decodingDefaults(const std::string& dir, const HfConfig& c, PackageConfig& pc) {
    const std::filesystem::path gc = std::filesystem::path(dir) / kGenerationConfig;
    const HfConfig from = util::optionalFilePresent(gc.string()) ? HfConfig{readJson(gc.string()), gc.string()} : c;
    if (!from.j.is_object()) from.fail("expected a JSON object");
    pc.num_beams = static_cast<int>(std::clamp<int64_t>(from.integer("num_beams", c.integer("num_beams", 0)), 0, 64));
    pc.max_length =
        static_cast<int>(std::clamp<int64_t>(from.integer("max_length", c.integer("max_length", 0)), 0, 4096));
}

}  // namespace attnlab::package
