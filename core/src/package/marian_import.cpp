#include "package/marian_import.h"

#include "package/package_io.h"
#include "package/safetensors.h"
#include "package/torch_bin.h"
#include "tokenizer/text_codec.h"
#include "util/json_parse.h"
#include "util/small_file.h"
#include "util/text.h"

#include <attnlab/errors.h>
#include <attnlab/package.h>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

namespace attnlab::package {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kSafetensors = "model.safetensors";
constexpr const char* kTorchBin = "pytorch_model.bin";
constexpr const char* kGenerationConfig = "generation_config.json";
constexpr const char* kTokenizerConfig = "tokenizer_config.json";
// The card read for the languages: OPUS-MT's are a few kB (docs/reliability.md).
constexpr size_t kMaxCardBytes = 1u << 20;
constexpr size_t kMaxCardLanguage = 40;  // "de+en+fr…": a longer value is not taken for codes

std::string trimmed(const std::string& s) {
    const size_t b = s.find_first_not_of(" \t\r"), e = s.find_last_not_of(" \t\r");
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

json readJson(const std::string& path) { return util::parseJson(util::readSmallFile(path, 4u << 20), path); }

// Typed reads of a Hugging Face config.json, each error naming the file and the key.
struct HfConfig {
    json j;
    std::string path;

    [[noreturn]] void fail(const std::string& m) const { throw PackageError(path + ": " + m); }
    bool has(const char* key) const { return j.contains(key) && !j.at(key).is_null(); }
    int64_t integer(const char* key) const {
        if (!has(key)) fail(std::string("missing '") + key + "'");
        const json& v = j.at(key);
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
        const json& v = j.at(key);
        if (!v.is_boolean()) fail(std::string("'") + key + "' must be true or false, not " + v.dump());
        return v.get<bool>();
    }
    std::string string(const char* key, const std::string& fallback) const {
        if (!has(key)) return fallback;
        const json& v = j.at(key);
        if (!v.is_string()) fail(std::string("'") + key + "' must be a string, not " + v.dump());
        return v.get<std::string>();
    }
};

std::string activationOf(const HfConfig& c) {
    const std::string a = c.string("activation_function", "gelu");
    if (a == "swish" || a == "silu") return "swish";
    if (a == "relu" || a == "gelu") return a;
    c.fail("activation_function '" + util::forMessage(a) + "' is not supported (relu, swish/silu and gelu are)");
}

// A language code as a card writes it ("en", "de+en", "zh_Hant"): short, letters, digits, _ + , -.
bool languageCode(const std::string& s) {
    return !s.empty() && s.size() <= kMaxCardLanguage && std::all_of(s.begin(), s.end(), [](unsigned char c) {
        return std::isalnum(c) || c == '_' || c == '+' || c == ',' || c == '-';
    });
}

// OPUS-MT's cards (README.md, or MODEL_CARD.md beside it) say "* source languages: en" and
// "* target languages: mg"; nothing when a card is absent, too large or says neither.
std::optional<std::pair<std::string, std::string>> cardLanguages(const std::string& dir) {
    for (const char* name : {package_files::kModelCard, "README.md"}) {
        const fs::path p = fs::path(dir) / name;
        std::string text;
        try {
            if (!util::optionalFilePresent(p.string())) continue;
            text = util::readSmallFile(p.string(), kMaxCardBytes);
        } catch (const Error&) {
            continue;  // the card is optional: the languages come from elsewhere
        }
        std::string source, target;
        std::istringstream lines(text);
        for (std::string line; std::getline(lines, line);) {
            const size_t colon = line.find(':');
            if (colon == std::string::npos) continue;
            std::string key = line.substr(0, colon), value = trimmed(line.substr(colon + 1));
            key.erase(0, key.find_first_not_of("*- \t"));
            if (key == "source languages" || key == "source language") source = value;
            if (key == "target languages" || key == "target language") target = value;
        }
        if (languageCode(source) && languageCode(target)) return std::make_pair(source, target);
    }
    return std::nullopt;
}

// The languages: tokenizer_config.json's source_lang/target_lang, else the model card's, else the
// directory's name (opus-mt-en-de -> en, de), else "src"/"tgt".
std::pair<std::string, std::string> languagesOf(const std::string& dir) {
    const fs::path tc = fs::path(dir) / kTokenizerConfig;
    if (util::optionalFilePresent(tc.string())) {
        const json j = readJson(tc.string());
        if (j.is_object() && j.value("source_lang", json()).is_string() && j.value("target_lang", json()).is_string())
            return {j["source_lang"].get<std::string>(), j["target_lang"].get<std::string>()};
    }
    if (const auto card = cardLanguages(dir)) return *card;
    std::string name = fs::path(dir).lexically_normal().filename().string();
    if (name.empty()) name = fs::path(dir).lexically_normal().parent_path().filename().string();
    const size_t dash2 = name.rfind('-');
    const size_t dash1 = dash2 == std::string::npos || dash2 == 0 ? std::string::npos : name.rfind('-', dash2 - 1);
    if (dash1 != std::string::npos && dash2 > dash1 + 1 && dash2 + 1 < name.size())
        return {name.substr(dash1 + 1, dash2 - dash1 - 1), name.substr(dash2 + 1)};
    return {"src", "tgt"};
}

// num_beams and max_length: generation_config.json when present, else config.json.
void decodingDefaults(const std::string& dir, const HfConfig& c, PackageConfig& pc) {
    const fs::path gc = fs::path(dir) / kGenerationConfig;
    const HfConfig from = util::optionalFilePresent(gc.string()) ? HfConfig{readJson(gc.string()), gc.string()} : c;
    if (!from.j.is_object()) from.fail("expected a JSON object");
    pc.num_beams = static_cast<int>(std::clamp<int64_t>(from.integer("num_beams", c.integer("num_beams", 0)), 0, 64));
    pc.max_length =
        static_cast<int>(std::clamp<int64_t>(from.integer("max_length", c.integer("max_length", 0)), 0, 4096));
}

void checkBadWords(const HfConfig& c, int64_t pad) {
    if (!c.has("bad_words_ids")) return;
    const json& b = c.j.at("bad_words_ids");
    const bool only_pad =
        b.is_array() && std::all_of(b.begin(), b.end(), [&](const json& w) {
            return w.is_array() && w.size() == 1 && w[0].is_number_integer() && w[0].get<int64_t>() == pad;
        });
    if (!only_pad)
        c.fail("bad_words_ids " + b.dump() + " is not supported: AttnLab blocks the pad id (" + std::to_string(pad) +
               ") only, as OPUS-MT models ask");
}

// Multilingual tc-big models with a target vocabulary of their own (target_vocab.json,
// tokenizer_config.json's separate_vocabs): not supported yet, refused rather than read wrongly.
void refuseSeparateVocabularies(const std::string& dir) {
    std::error_code ec;
    if (fs::exists(fs::path(dir) / "target_vocab.json", ec))
        throw PackageError(dir + ": has target_vocab.json: separate target vocabularies are not supported yet");
    const fs::path tc = fs::path(dir) / kTokenizerConfig;
    if (!util::optionalFilePresent(tc.string())) return;
    const json j = readJson(tc.string());
    if (j.is_object() && j.value("separate_vocabs", json(false)) == json(true))
        throw PackageError(tc.string() +
                           ": separate_vocabs is true: separate target vocabularies are not supported yet");
}

}  // namespace

bool isHuggingFaceDirectory(const std::string& dir) {
    const fs::path p = fs::path(dir) / package_files::kConfig;
    std::error_code ec;
    if (!fs::is_regular_file(p, ec)) return false;
    try {
        const json j = util::parseJson(util::readSmallFile(p.string(), 4u << 20), p.string());
        return j.is_object() && j.contains("model_type") && !j.contains("format_version");
    } catch (const std::exception&) {
        return false;  // an AttnLab reader reports what is wrong with it
    }
}

namespace {
// config.json's own keys onto AttnLab's fields (what readMarianConfig then completes from the
// directory's other files).
PackageConfig mapMarianConfig(const HfConfig& c) {
    if (!c.j.is_object()) c.fail("expected a JSON object");
    const std::string type = c.string("model_type", "");
    if (type != "marian")
        c.fail("model_type '" + util::forMessage(type) +
               "' is not supported: AttnLab opens MarianMT models (model_type \"marian\", as OPUS-MT's)");
    if (c.boolean("normalize_before", false))
        c.fail(
            "normalize_before is true: pre-layer-norm models are not supported (AttnLab's model is post-layer-norm)");
    if (c.boolean("add_final_layer_norm", false))
        c.fail("add_final_layer_norm is true: a final layer norm after the stacks is not supported");
    const int64_t heads = c.integer("encoder_attention_heads");
    if (c.integer("decoder_attention_heads") != heads)
        c.fail("encoder_attention_heads (" + std::to_string(heads) + ") and decoder_attention_heads (" +
               std::to_string(c.integer("decoder_attention_heads")) + ") differ; AttnLab needs one head count");
    const int64_t d_model = c.integer("d_model");
    if (heads <= 0 || d_model <= 0 || d_model % heads != 0)
        c.fail("d_model " + std::to_string(d_model) + " is not a positive multiple of the " + std::to_string(heads) +
               " heads");
    const int64_t vocab = c.integer("vocab_size");
    if (c.integer("decoder_vocab_size", vocab) != vocab)
        c.fail("decoder_vocab_size differs from vocab_size: separate target vocabularies are not supported yet");

    PackageConfig pc;
    pc.source_lang = "src";
    pc.target_lang = "tgt";
    ModelConfig& m = pc.model;
    m.n_src_vocab = m.n_trg_vocab = vocab;
    m.src_pad_idx = m.trg_pad_idx = c.integer("pad_token_id");
    m.d_word_vec = m.d_model = d_model;
    m.n_head = heads;
    m.d_k = m.d_v = d_model / heads;
    m.n_layers = c.positive("encoder_layers");
    m.n_dec_layers = c.positive("decoder_layers");
    m.d_inner = c.positive("encoder_ffn_dim");
    m.d_dec_inner = c.positive("decoder_ffn_dim");
    m.dropout = 0.1;
    m.n_position = c.integer("max_position_embeddings", 512);
    m.emb_src_trg_weight_sharing = c.boolean("share_encoder_decoder_embeddings", true);
    m.trg_emb_prj_weight_sharing = c.boolean("tie_word_embeddings", true);
    m.scale_emb_or_prj = "none";
    m.emb_scale = c.boolean("scale_embedding", false) ? "sqrt_d_model" : "none";
    m.ffn_activation = activationOf(c);
    m.attn_bias = true;
    m.layer_norm_eps = 1e-5;   // torch.nn.LayerNorm's default, which MarianMTModel uses
    m.emb_layer_norm = false;  // MarianEncoder/MarianDecoder have no layer norm on the embeddings
    m.pos_encoding = "half";   // MarianSinusoidalPositionalEmbedding
    m.pos_offset = 0;
    m.logits_bias = true;  // MarianMTModel adds final_logits_bias
    pc.eos_idx = c.integer("eos_token_id");
    pc.bos_idx = c.integer("decoder_start_token_id", m.trg_pad_idx);  // what starts the decoder
    pc.unk_idx = 1;  // vocab.json's <unk> (readMarianConfig); 1 in every OPUS-MT vocabulary
    checkBadWords(c, m.trg_pad_idx);
    pc.source_bos = false;  // MarianTokenizer: pieces + </s>
    pc.source_eos = true;
    pc.tokenizer = "marian";
    pc.num_beams = static_cast<int>(std::clamp<int64_t>(c.integer("num_beams", 0), 0, 64));
    pc.max_length = static_cast<int>(std::clamp<int64_t>(c.integer("max_length", 0), 0, 4096));
    try {
        pc.validate();
    } catch (const ConfigError& e) {
        c.fail(e.what());
    }
    return pc;
}

}  // namespace

PackageConfig marianConfigFromJson(const std::string& text, const std::string& origin) {
    return mapMarianConfig(HfConfig{util::parseJson(text, origin), origin});
}

PackageConfig readMarianConfig(const std::string& dir) {
    const std::string path = (fs::path(dir) / package_files::kConfig).string();
    const HfConfig c{readJson(path), path};
    PackageConfig pc = mapMarianConfig(c);
    std::tie(pc.source_lang, pc.target_lang) = languagesOf(dir);
    refuseSeparateVocabularies(dir);
    const auto vocab_json =
        readMarianVocab((fs::path(dir) / marian_files::kVocab).string(), pc.model.n_trg_vocab);  // names its problems
    pc.unk_idx = vocab_json.at("<unk>");
    if (vocab_json.at("</s>") != pc.eos_idx)
        c.fail("eos_token_id is " + std::to_string(pc.eos_idx) + " but vocab.json gives '</s>' the id " +
               std::to_string(vocab_json.at("</s>")));
    if (vocab_json.at("<pad>") != pc.model.trg_pad_idx)
        c.fail("pad_token_id is " + std::to_string(pc.model.trg_pad_idx) + " but vocab.json gives '<pad>' the id " +
               std::to_string(vocab_json.at("<pad>")));
    decodingDefaults(dir, c, pc);
    try {
        pc.validate();
    } catch (const ConfigError& e) {
        c.fail(e.what());
    }
    return pc;
}

std::string marianWeightsPath(const std::string& dir) {
    for (const char* name : {kSafetensors, kTorchBin}) {
        const fs::path p = fs::path(dir) / name;
        if (util::optionalFilePresent(p.string())) return p.string();  // names a folder or FIFO there
    }
    throw PackageError(dir +
                       ": has neither model.safetensors nor pytorch_model.bin (the weights; with git, "
                       "`git lfs pull` fetches them)");
}

namespace {

// One tensor of the file, under its name without the "model." prefix.
using Named = std::map<std::string, torch::Tensor>;

// A file `git clone` left as a Git LFS pointer (git-lfs not installed, or not pulled).
void refuseLfsPointer(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::string head(24, '\0');
    in.read(head.data(), std::streamsize(head.size()));
    if (head.rfind("version https://git-lfs", 0) == 0)
        throw PackageError(path +
                           ": is a Git LFS pointer, not the weights: install git-lfs and run `git lfs pull` in "
                           "the model's directory");
}

Named readAll(const std::string& path) {
    refuseLfsPointer(path);
    Named out;
    auto put = [&](const std::string& stored, torch::Tensor t) {
        const std::string name = stored.rfind("model.", 0) == 0 ? stored.substr(6) : stored;
        if (!out.emplace(name, std::move(t)).second)
            throw PackageError(path + ": holds '" + util::forMessage(name) +
                               "' twice (with and without the 'model.' prefix)");
    };
    if (path.size() >= 4 && path.compare(path.size() - 4, 4, ".bin") == 0) {
        for (auto& [name, t] : readTorchBin(path)) put(name, t);
        return out;
    }
    const safetensors::Header header = safetensors::readHeader(path);
    for (const auto& t : header.tensors) {
        if (t.dtype != "F32" && t.dtype != "F16" && t.dtype != "BF16")
            throw PackageError(path + ": tensor '" + util::forMessage(t.name) + "' has dtype " + t.dtype +
                               "; expected F32, F16 or BF16");
        std::vector<char> bytes = safetensors::readTensorBytes(header, t);
        const auto dtype = t.dtype == "F32" ? torch::kFloat32 : t.dtype == "F16" ? torch::kFloat16 : torch::kBFloat16;
        put(t.name, torch::from_blob(bytes.data(), t.shape, torch::TensorOptions().dtype(dtype)).clone());
    }
    return out;
}

// Hugging Face's names inside one layer -> AttnLab's (the reference's module names).
const std::vector<std::pair<std::string, std::string>>& layerNames() {
    static const std::vector<std::pair<std::string, std::string>> names = {
        {"self_attn.q_proj", "slf_attn.w_qs"},
        {"self_attn.k_proj", "slf_attn.w_ks"},
        {"self_attn.v_proj", "slf_attn.w_vs"},
        {"self_attn.out_proj", "slf_attn.fc"},
        {"self_attn_layer_norm", "slf_attn.layer_norm"},
        {"encoder_attn.q_proj", "enc_attn.w_qs"},
        {"encoder_attn.k_proj", "enc_attn.w_ks"},
        {"encoder_attn.v_proj", "enc_attn.w_vs"},
        {"encoder_attn.out_proj", "enc_attn.fc"},
        {"encoder_attn_layer_norm", "enc_attn.layer_norm"},
        {"fc1", "pos_ffn.w_1"},
        {"fc2", "pos_ffn.w_2"},
        {"final_layer_norm", "pos_ffn.layer_norm"},
    };
    return names;
}

// "encoder.layers.3.fc1.weight" <-> "encoder.layer_stack.3.pos_ffn.w_1.weight"; empty when the
// name is not a layer's.
std::string renameLayerTensor(const std::string& name, bool to_attnlab) {
    for (const char* stack : {"encoder.", "decoder."}) {
        const std::string from_prefix = std::string(stack) + (to_attnlab ? "layers." : "layer_stack.");
        const std::string to_prefix = std::string(stack) + (to_attnlab ? "layer_stack." : "layers.");
        if (name.rfind(from_prefix, 0) != 0) continue;
        const size_t dot = name.find('.', from_prefix.size());
        if (dot == std::string::npos) return {};
        const std::string index = name.substr(from_prefix.size(), dot - from_prefix.size());
        const std::string rest = name.substr(dot + 1);
        for (const auto& [hf, ours] : layerNames()) {
            const std::string& a = to_attnlab ? hf : ours;
            const std::string& b = to_attnlab ? ours : hf;
            if (rest.rfind(a + ".", 0) == 0) return to_prefix + index + "." + b + rest.substr(a.size());
        }
    }
    return {};
}

// The Hugging Face names that may hold one of AttnLab's tied or embedding tensors, in the order
// they are taken; every other one present must be equal to the first.
std::map<std::string, std::vector<std::string>> embeddingSources(const ModelConfig& c) {
    std::map<std::string, std::vector<std::string>> s;
    auto& target = s["decoder.trg_word_emb.weight"];
    target = {"decoder.embed_tokens.weight", "shared.weight"};
    if (c.emb_src_trg_weight_sharing)
        target.push_back("encoder.embed_tokens.weight");
    else
        s["encoder.src_word_emb.weight"] = {"encoder.embed_tokens.weight"};
    if (c.trg_emb_prj_weight_sharing)
        target.push_back("lm_head.weight");
    else
        s["trg_word_prj.weight"] = {"lm_head.weight"};
    return s;
}

std::string shapeOf(const torch::Tensor& t) {
    return util::shapeString(std::vector<int64_t>(t.sizes().begin(), t.sizes().end()));
}

}  // namespace

model::Transformer loadMarianWeights(const std::string& dir, const PackageConfig& config, std::string* stored_dtype) {
    const std::string path = marianWeightsPath(dir);
    auto fail = [&](const std::string& m) -> void { throw PackageError(path + ": " + m); };
    Named file = readAll(path);
    std::set<std::string> dtypes;
    for (const auto& [name, t] : file) {
        const auto type = t.scalar_type();
        if (type != torch::kFloat32 && type != torch::kFloat16 && type != torch::kBFloat16)
            fail("tensor '" + util::forMessage(name) + "' is " + std::string(c10::toString(type)) +
                 ", not F32, F16 or BF16");
        dtypes.insert(type == torch::kFloat32 ? "F32" : type == torch::kFloat16 ? "F16" : "BF16");
    }

    Named ours;  // AttnLab name -> tensor
    std::set<std::string> used = {"encoder.embed_positions.weight", "decoder.embed_positions.weight"};  // recomputed
    for (const auto& [name, sources] : embeddingSources(config.model)) {
        std::string first;
        for (const auto& s : sources) {
            auto it = file.find(s);
            if (it == file.end()) continue;
            used.insert(s);
            if (first.empty()) {
                first = s;
                ours[name] = it->second;
            } else if (!torch::equal(it->second.to(torch::kFloat32), file.at(first).to(torch::kFloat32))) {
                fail("'" + s + "' differs from '" + first + "', though config.json ties them");
            }
        }
        if (first.empty()) fail("missing tensor '" + sources.front() + "' (or any of its tied copies)");
    }
    if (auto it = file.find("final_logits_bias"); it != file.end()) {
        used.insert(it->first);
        ours["final_logits_bias"] = it->second.reshape({-1});
    } else {
        ours["final_logits_bias"] = torch::zeros({config.model.n_trg_vocab});  // a buffer some savers leave out
    }
    for (const auto& [name, t] : file) {
        if (used.count(name)) continue;
        const std::string mine = renameLayerTensor(name, true);
        if (mine.empty()) fail("unexpected tensor '" + util::forMessage(name) + "': not part of a MarianMTModel");
        ours[mine] = t;
    }
    file.clear();  // each tensor now lives once, in `ours`, until it is copied into the model

    // Every name and shape checked against config.json before the model is built: a config that
    // disagrees with its weights must not make the loader allocate what it asks for.
    const TensorShapes expected = expectedTensors(config.model);
    for (const auto& [name, shape] : expected) {
        if (name.size() > 10 && name.compare(name.size() - 10, 10, ".pos_table") == 0) continue;
        const std::string hf = renameLayerTensor(name, false);
        auto it = ours.find(name);
        if (it == ours.end()) fail("missing tensor '" + (hf.empty() ? name : hf) + "'");
        if (it->second.sizes().vec() != shape)
            fail("tensor '" + (hf.empty() ? name : hf) + "' has shape " + shapeOf(it->second) +
                 " but config.json needs " + util::shapeString(shape));
    }
    if (ours.size() + 2 != expected.size()) {  // + the two position tables, recomputed
        std::set<std::string> names;
        for (const auto& e : expected) names.insert(e.first);
        for (const auto& [name, t] : ours)
            if (!names.count(name)) {
                const std::string hf = renameLayerTensor(name, false);
                fail("unexpected tensor '" + (hf.empty() ? name : hf) + "' (config.json's layers have no such tensor)");
            }
    }

    model::Transformer model(config.model);
    model->eval();
    std::map<std::string, torch::Tensor> targets;
    for (const auto& p : model->named_parameters()) targets[p.key()] = p.value();
    torch::NoGradGuard no_grad;
    for (auto it = ours.begin(); it != ours.end(); it = ours.erase(it)) {  // each one freed once copied
        auto value = it->second.to(torch::kFloat32);
        if (!torch::isfinite(value).all().item<bool>()) {
            const std::string hf = renameLayerTensor(it->first, false);
            fail("tensor '" + (hf.empty() ? it->first : hf) + "' contains NaN or infinite values");
        }
        targets.at(it->first).copy_(value);
    }
    if (stored_dtype) {
        std::string d;
        for (const auto& x : dtypes) d += (d.empty() ? "" : "+") + x;
        *stored_dtype = d;
    }
    return model;
}

std::string marianModelCard(const std::string& dir, const PackageConfig& c) {
    const auto& m = c.model;
    std::string card = "# " + c.source_lang + "→" + c.target_lang + " (imported MarianMT model)\n\n";
    card += "Imported by `attnlab-cli import` from a Hugging Face MarianMT directory (`" +
            fs::path(dir).lexically_normal().filename().string() + "`, weights from `" +
            fs::path(marianWeightsPath(dir)).filename().string() +
            "`). The source model's own card and licence apply; AttnLab changed no weight.\n\n";
    card += "- " + std::to_string(m.encoderLayers()) + " encoder and " + std::to_string(m.decoderLayers()) +
            " decoder layers, " + std::to_string(m.n_head) + " heads, d_model " + std::to_string(m.d_model) +
            ", vocabulary " + std::to_string(m.n_trg_vocab) + "\n";
    card += "- activation " + m.ffn_activation + ", eos " + std::to_string(c.eos_idx) + ", pad = decoder start " +
            std::to_string(m.trg_pad_idx) + ", default beam " + std::to_string(c.num_beams) + ", max length " +
            std::to_string(c.max_length) + "\n";
    card += "- tokenizer: source.spm, target.spm and vocab.json, as MarianTokenizer uses them\n";
    return card;
}

}  // namespace attnlab::package

namespace attnlab {
namespace fs = std::filesystem;

namespace {
PackageConfig importChecked(const std::string& from_dir, const std::string& package_dir) {
    const PackageConfig config = package::readMarianConfig(from_dir);
    // The tokenizer files are checked (and the vocabulary read) before anything is written.
    (void)marianCodec(from_dir, config.model.n_trg_vocab);
    model::Transformer model = package::loadMarianWeights(from_dir, config);
    package::SaveOptions so;
    so.extra_files[package_files::kModelCard] = package::marianModelCard(from_dir, config);
    for (const char* f : {marian_files::kSourceSpm, marian_files::kTargetSpm, marian_files::kVocab})
        so.copied_files.push_back((std::filesystem::path(from_dir) / f).string());
    package::savePackage(package_dir, config, model, "", so);
    return config;
}

// `import` replaces its output directory: never the source itself, a directory around or inside
// it, or a folder AttnLab did not write (somebody's files).
void checkImportTarget(const std::string& from_dir, const std::string& package_dir) {
    std::error_code ec;
    const fs::path from = fs::weakly_canonical(from_dir, ec), to = fs::weakly_canonical(package_dir, ec);
    auto inside = [](const fs::path& a, const fs::path& b) {  // a within b (or equal)
        auto [ai, bi] = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
        return bi == b.end();
    };
    if (inside(from, to) || inside(to, from))
        throw PackageError("--output " + package_dir + ": is the source directory " + from_dir +
                           " or lies around or inside it; write the package somewhere else");
    // Only a folder AttnLab wrote is replaced (its marker, not any config.json: an editor's
    // settings or a Hugging Face model are somebody's files).
    if (const std::string why = whyNotReplaceable(package_dir); !why.empty()) throw PackageError("--output " + why);
}
}  // namespace

PackageConfig importMarianModel(const std::string& from_dir, const std::string& package_dir) {
    if (!package::isHuggingFaceDirectory(from_dir))
        throw PackageError(from_dir + ": not a Hugging Face model directory (no config.json with a model_type)");
    checkImportTarget(from_dir, package_dir);
    try {
        return importChecked(from_dir, package_dir);
    } catch (const c10::Error& e) {
        throw PackageError(from_dir + ": LibTorch failed while importing: " + e.what_without_backtrace());
    } catch (const std::bad_alloc&) {
        throw PackageError(from_dir + ": out of memory while importing (is config.json's size right?)");
    }
}

}  // namespace attnlab
