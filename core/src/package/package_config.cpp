// config.json reading and writing, and the option checks of the public structs.
#include <attnlab/config.h>
#include <attnlab/decoding_options.h>
#include <attnlab/errors.h>
#include <attnlab/package.h>
#include <attnlab/tokenizer.h>
#include <attnlab/translator.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace attnlab {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {
template <typename T>
void requireRange(const char* what, T value, T lo, T hi, const char* owner) {
    if (value < lo || value > hi) {
        std::ostringstream m;
        m << owner << ": " << what << " = " << value << " is out of range [" << lo << ", " << hi << "]";
        throw ConfigError(m.str());
    }
}
}  // namespace

void ModelConfig::validate() const {
    const char* o = "model config";
    constexpr int64_t kBig = int64_t(1) << 24;
    requireRange<int64_t>("n_src_vocab", n_src_vocab, 1, kBig, o);
    requireRange<int64_t>("n_trg_vocab", n_trg_vocab, 1, kBig, o);
    requireRange<int64_t>("src_pad_idx", src_pad_idx, 0, n_src_vocab - 1, o);
    requireRange<int64_t>("trg_pad_idx", trg_pad_idx, 0, n_trg_vocab - 1, o);
    requireRange<int64_t>("d_model", d_model, 1, 65536, o);
    requireRange<int64_t>("d_inner", d_inner, 1, 1 << 20, o);
    requireRange<int64_t>("n_layers", n_layers, 1, 256, o);
    requireRange<int64_t>("n_head", n_head, 1, 1024, o);
    requireRange<int64_t>("d_k", d_k, 1, 65536, o);
    requireRange<int64_t>("d_v", d_v, 1, 65536, o);
    requireRange<int64_t>("n_position", n_position, 2, 8192, o);
    // The two sinusoid tables are allocated from the config alone, before any weight is read:
    // bound them so that a config.json cannot make the loader allocate gigabytes.
    if (n_position * d_word_vec > (int64_t(1) << 25))
        throw ConfigError(std::string(o) + ": n_position x d_word_vec = " + std::to_string(n_position * d_word_vec) +
                          " exceeds the 33554432 entries a positional table may have");
    requireRange<double>("dropout", dropout, 0.0, 1.0, o);
    if (d_word_vec != d_model)
        throw ConfigError("model config: d_word_vec (" + std::to_string(d_word_vec) + ") must equal d_model (" +
                          std::to_string(d_model) + ") for the residual connections, as in the reference");
    if (scale_emb_or_prj != "emb" && scale_emb_or_prj != "prj" && scale_emb_or_prj != "none")
        throw ConfigError("model config: scale_emb_or_prj is '" + scale_emb_or_prj + "'; expected emb, prj or none");
    if (emb_src_trg_weight_sharing && n_src_vocab != n_trg_vocab)
        throw ConfigError("model config: emb_src_trg_weight_sharing needs n_src_vocab == n_trg_vocab (" +
                          std::to_string(n_src_vocab) + " vs " + std::to_string(n_trg_vocab) + ")");
}

void PackageConfig::validate() const {
    if (format_version != kFormatVersion)
        throw ConfigError("format_version " + std::to_string(format_version) + " is not supported (this build reads " +
                          std::to_string(kFormatVersion) + ")");
    model.validate();
    const char* o = "package config";
    requireRange<int64_t>("bos_idx", bos_idx, 0, model.n_trg_vocab - 1, o);
    requireRange<int64_t>("eos_idx", eos_idx, 0, model.n_trg_vocab - 1, o);
    requireRange<int64_t>("unk_idx", unk_idx, 0, model.n_trg_vocab - 1, o);
}

void DecodingOptions::validate() const {
    const char* o = "decoding options";
    requireRange("beam_size", beam_size, 1, 256, o);
    requireRange("length_penalty (alpha)", length_penalty, 0.0, 10.0, o);
    requireRange("max_length", max_length, 1, 1 << 16, o);
    requireRange("max_length_ratio", max_length_ratio, 0.0, 1000.0, o);
    requireRange("max_length_offset", max_length_offset, 0, 1 << 16, o);
    requireRange("nbest", nbest, 1, beam_size, o);
    requireRange("top_k_candidates", top_k_candidates, 0, 1000, o);
    requireRange("max_batch_size", max_batch_size, 1, 4096, o);
}

void TranslatorOptions::validate() const {
    const char* o = "translator options";
    requireRange("num_threads", num_threads, 0, 4096, o);
    const bool ok = device == "auto" || device == "cpu" || device == "cuda" ||
                    (device.rfind("cuda:", 0) == 0 && device.size() > 5 &&
                     device.find_first_not_of("0123456789", 5) == std::string::npos);
    if (!ok) throw ConfigError("translator options: device '" + device + "' is not one of auto, cpu, cuda, cuda:N");
}

void TokenizerTrainingOptions::validate() const {
    const char* o = "tokenizer training";
    if (input_files.empty()) throw ConfigError("tokenizer training: no input files");
    if (model_prefix.empty()) throw ConfigError("tokenizer training: empty model prefix");
    requireRange("vocab_size", vocab_size, 8, 1 << 20, o);
    requireRange("character_coverage", character_coverage, 0.5, 1.0, o);
    if (model_type != "unigram" && model_type != "bpe" && model_type != "char" && model_type != "word")
        throw ConfigError("tokenizer training: model_type '" + model_type + "' is not unigram, bpe, char or word");
}

// ------------------------------------------------------------------ config.json
namespace {
struct Reader {
    const json& j;
    const std::string& origin;

    [[noreturn]] void fail(const std::string& m) const { throw PackageError(origin + ": " + m); }
    const json& get(const char* key) const {
        auto it = j.find(key);
        if (it == j.end()) fail(std::string("missing field '") + key + "'");
        return *it;
    }
    int64_t integer(const char* key) const {
        const json& v = get(key);
        if (!v.is_number_integer()) fail(std::string("field '") + key + "' must be an integer, not " + v.dump());
        return v.get<int64_t>();
    }
    int64_t integer(const char* key, int64_t fallback) const { return j.contains(key) ? integer(key) : fallback; }
    double number(const char* key) const {
        const json& v = get(key);
        if (!v.is_number()) fail(std::string("field '") + key + "' must be a number, not " + v.dump());
        return v.get<double>();
    }
    bool boolean(const char* key) const {
        const json& v = get(key);
        if (!v.is_boolean()) fail(std::string("field '") + key + "' must be true or false, not " + v.dump());
        return v.get<bool>();
    }
    bool boolean(const char* key, bool fallback) const { return j.contains(key) ? boolean(key) : fallback; }
    std::string string(const char* key) const {
        const json& v = get(key);
        if (!v.is_string()) fail(std::string("field '") + key + "' must be a string, not " + v.dump());
        return v.get<std::string>();
    }
};
}  // namespace

PackageConfig packageConfigFromJson(const std::string& text, const std::string& origin) {
    json j;
    try {
        j = json::parse(text);
    } catch (const json::parse_error& e) {
        throw PackageError(origin + ": malformed JSON: " + e.what());
    }
    if (!j.is_object()) throw PackageError(origin + ": expected a JSON object at the top level");
    Reader r{j, origin};
    PackageConfig c;
    c.format_version = static_cast<int>(r.integer("format_version"));
    if (c.format_version != PackageConfig::kFormatVersion)
        r.fail("unknown format_version " + std::to_string(c.format_version) + " (this build reads " +
               std::to_string(PackageConfig::kFormatVersion) + ")");
    c.source_lang = r.string("source_lang");
    c.target_lang = r.string("target_lang");
    ModelConfig& m = c.model;
    m.n_src_vocab = r.integer("n_src_vocab");
    m.n_trg_vocab = r.integer("n_trg_vocab");
    m.src_pad_idx = r.integer("src_pad_idx");
    m.trg_pad_idx = r.integer("trg_pad_idx");
    m.d_word_vec = r.integer("d_word_vec");
    m.d_model = r.integer("d_model");
    m.d_inner = r.integer("d_inner");
    m.n_layers = r.integer("n_layers");
    m.n_head = r.integer("n_head");
    m.d_k = r.integer("d_k");
    m.d_v = r.integer("d_v");
    m.dropout = r.number("dropout");
    m.n_position = r.integer("n_position");
    m.trg_emb_prj_weight_sharing = r.boolean("trg_emb_prj_weight_sharing");
    m.emb_src_trg_weight_sharing = r.boolean("emb_src_trg_weight_sharing");
    m.scale_emb_or_prj = r.string("scale_emb_or_prj");
    c.bos_idx = r.integer("bos_idx");
    c.eos_idx = r.integer("eos_idx");
    c.unk_idx = r.integer("unk_idx");
    c.source_bos = r.boolean("source_bos", false);
    c.source_eos = r.boolean("source_eos", true);
    try {
        c.validate();
    } catch (const ConfigError& e) {
        r.fail(e.what());
    }
    return c;
}

std::string packageConfigToJson(const PackageConfig& c) {
    const ModelConfig& m = c.model;
    json j = json::object();
    j["format_version"] = c.format_version;
    j["source_lang"] = c.source_lang;
    j["target_lang"] = c.target_lang;
    j["n_src_vocab"] = m.n_src_vocab;
    j["n_trg_vocab"] = m.n_trg_vocab;
    j["src_pad_idx"] = m.src_pad_idx;
    j["trg_pad_idx"] = m.trg_pad_idx;
    j["d_word_vec"] = m.d_word_vec;
    j["d_model"] = m.d_model;
    j["d_inner"] = m.d_inner;
    j["n_layers"] = m.n_layers;
    j["n_head"] = m.n_head;
    j["d_k"] = m.d_k;
    j["d_v"] = m.d_v;
    j["dropout"] = m.dropout;
    j["n_position"] = m.n_position;
    j["trg_emb_prj_weight_sharing"] = m.trg_emb_prj_weight_sharing;
    j["emb_src_trg_weight_sharing"] = m.emb_src_trg_weight_sharing;
    j["scale_emb_or_prj"] = m.scale_emb_or_prj;
    j["bos_idx"] = c.bos_idx;
    j["eos_idx"] = c.eos_idx;
    j["unk_idx"] = c.unk_idx;
    j["source_bos"] = c.source_bos;
    j["source_eos"] = c.source_eos;
    return j.dump(2) + "\n";
}

PackageConfig readPackageConfig(const std::string& dir) {
    const fs::path path = fs::path(dir) / package_files::kConfig;
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) throw PackageError(dir + ": not a directory (a model package is a directory)");
    if (!fs::is_regular_file(path, ec)) throw PackageError(path.string() + ": missing file");
    const auto size = fs::file_size(path, ec);
    if (ec || size > (1u << 20)) throw PackageError(path.string() + ": unreadable or larger than 1 MiB");
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    if (!in) throw PackageError(path.string() + ": cannot be read");
    return packageConfigFromJson(ss.str(), path.string());
}

std::string defaultModelDir() {
    if (const char* env = std::getenv("ATTNLAB_MODEL_DIR"); env && *env) return env;
    const char* rel = "multi30k-de-en";
    std::vector<fs::path> candidates;
#ifdef ATTNLAB_SOURCE_MODEL_DIR
    candidates.emplace_back(fs::path(ATTNLAB_SOURCE_MODEL_DIR) / rel);
#endif
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        candidates.push_back(exe.parent_path().parent_path() / "share/attnlab/models" / rel);
        candidates.push_back(exe.parent_path().parent_path() / "resources/models" / rel);
    }
#ifdef ATTNLAB_INSTALL_MODEL_DIR
    candidates.emplace_back(fs::path(ATTNLAB_INSTALL_MODEL_DIR) / rel);
#endif
    for (const auto& c : candidates)
        if (fs::is_regular_file(c / package_files::kConfig, ec)) return c.string();
    return {};
}

}  // namespace attnlab
