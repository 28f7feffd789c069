// config.json reading and writing, and the checks of ModelConfig and PackageConfig.
#include <attnlab/alignment.h>
#include <attnlab/config.h>
#include <attnlab/config_fields.h>
#include <attnlab/errors.h>
#include <attnlab/hub.h>
#include <attnlab/package.h>
#include <attnlab/text_io.h>

#include "formats/argos/argos_package.h"
#include "util/atomic_file.h"
#include "util/checks.h"
#include "util/json_parse.h"
#include "util/small_file.h"
#include "util/text.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <type_traits>

namespace attnlab {
namespace fs = std::filesystem;
using nlohmann::json;

using util::requireRange;

void ModelConfig::validate() const {
    const char* o = "model config";
    for (const auto& f : modelConfigFields()) {
        if (auto p = std::get_if<int64_t ModelConfig::*>(&f.member))
            requireRange<int64_t>(f.name, this->**p, int64_t(f.min), int64_t(f.max), o);
        else if (auto d = std::get_if<double ModelConfig::*>(&f.member))
            requireRange<double>(f.name, this->**d, f.min, f.max, o);
        else if (auto t = std::get_if<std::string ModelConfig::*>(&f.member)) {
            const std::string choices = std::string("|") + f.choices + "|";
            if (choices.find("|" + this->**t + "|") == std::string::npos)
                throw ConfigError(std::string(o) + ": " + f.name + " is '" + util::forMessage(this->**t) +
                                  "'; expected " + f.rangeText());
        }
    }
    // What no single field's range says.
    requireRange<int64_t>("src_pad_idx", src_pad_idx, 0, n_src_vocab - 1, o);
    requireRange<int64_t>("trg_pad_idx", trg_pad_idx, 0, n_trg_vocab - 1, o);
    // The two sinusoid tables are allocated from the config alone, before any weight is read:
    // bound them so that a config.json cannot make the loader allocate gigabytes.
    if ((n_position + pos_offset) * d_word_vec > kMaxPositionalTableEntries)
        throw ConfigError(std::string(o) + ": (n_position + pos_offset) x d_word_vec = " +
                          std::to_string((n_position + pos_offset) * d_word_vec) + " exceeds the " +
                          std::to_string(kMaxPositionalTableEntries) + " entries a positional table may have");
    if (d_word_vec != d_model)
        throw ConfigError("model config: d_word_vec (" + std::to_string(d_word_vec) + ") must equal d_model (" +
                          std::to_string(d_model) + ") for the residual connections, as in the reference");
    if (emb_src_trg_weight_sharing && n_src_vocab != n_trg_vocab)
        throw ConfigError("model config: emb_src_trg_weight_sharing needs n_src_vocab == n_trg_vocab (" +
                          std::to_string(n_src_vocab) + " vs " + std::to_string(n_trg_vocab) + ")");
    if (pos_encoding == "none" && !relativePositions())
        throw ConfigError(
            "model config: pos_encoding 'none' with max_relative_positions 0 leaves the model no "
            "positions at all; 'none' is for models with relative positions (max_relative_positions "
            ">= 1)");
}

void PackageConfig::validate() const {
    if (format_version < kOldestFormatVersion || format_version > kFormatVersion)
        throw ConfigError("format_version " + std::to_string(format_version) + " is not supported (this build reads " +
                          std::to_string(kOldestFormatVersion) + " to " + std::to_string(kFormatVersion) + ")");
    // pos_encoding "none" came with relative positions: the format that added max_relative_positions.
    const int relative_since = findModelConfigField("max_relative_positions").since;
    if (model.pos_encoding == "none" && format_version < relative_since)
        throw ConfigError("package config: pos_encoding 'none' needs format_version " + std::to_string(relative_since) +
                          " or later (this one is " + std::to_string(format_version) + ")");
    model.validate();
    const char* o = "package config";
    requireRange<int64_t>("bos_idx", bos_idx, 0, model.n_trg_vocab - 1, o);
    requireRange<int64_t>("eos_idx", eos_idx, 0, model.n_trg_vocab - 1, o);
    requireRange<int64_t>("unk_idx", unk_idx, 0, model.n_trg_vocab - 1, o);
    if (tokenizer != "sentencepiece" && tokenizer != "marian" && tokenizer != "ctranslate2")
        throw ConfigError("package config: tokenizer is '" + util::forMessage(tokenizer) +
                          "'; expected sentencepiece | marian | ctranslate2");
    if (source_bos_idx >= 0) requireRange<int64_t>("source_bos_idx", source_bos_idx, 0, model.n_src_vocab - 1, o);
    if (source_eos_idx >= 0) requireRange<int64_t>("source_eos_idx", source_eos_idx, 0, model.n_src_vocab - 1, o);
    if (source_bos_idx < -1 || source_eos_idx < -1)
        throw ConfigError("package config: source_bos_idx and source_eos_idx are ids or -1");
    requireRange<int>("num_beams", num_beams, 0, 64, o);
    requireRange<int>("max_length", max_length, 0, 4096, o);
    requireRange<int>("min_length", min_length, 0, 4096, o);
    validateLanguages();
}

const LanguageToken* PackageConfig::findLanguage(const std::string& name) const {
    for (const auto& l : languages)
        if (l.code == name || l.token == name) return &l;
    return nullptr;
}

void PackageConfig::validateLanguages() const {
    if (language_token_position != "first" && language_token_position != "after_eos")
        throw ConfigError("package config: language_token_position is '" + util::forMessage(language_token_position) +
                          "'; expected first | after_eos");
    if (languages.empty()) return;
    if (languages.size() > kMaxLanguages)
        throw ConfigError("package config: " + std::to_string(languages.size()) + " languages; at most " +
                          std::to_string(kMaxLanguages) + " are read");
    std::set<std::string> names;
    std::set<int64_t> ids;
    for (const auto& l : languages) {
        if (l.code.empty() || l.token.empty() || l.code.size() > 64 || l.token.size() > 64)
            throw ConfigError("package config: a language's code and token must be 1 to 64 bytes ('" +
                              util::forMessage(l.code) + "', '" + util::forMessage(l.token) + "')");
        requireRange<int64_t>(("the id of language " + l.code).c_str(), l.id, 0, model.n_trg_vocab - 1,
                              "package config");
        if (!ids.insert(l.id).second)
            throw ConfigError("package config: two languages have the id " + std::to_string(l.id));
        for (const auto* n : {&l.code, &l.token})
            if (!names.insert(*n).second && !(n == &l.token && l.token == l.code))
                throw ConfigError("package config: the language '" + util::forMessage(*n) + "' is listed twice");
    }
    for (const auto* side : {&source_lang, &target_lang})
        if (!findLanguage(*side))
            throw ConfigError("package config: the default language '" + util::forMessage(*side) +
                              "' is not one of the model's languages");
}

// ------------------------------------------------------------------ config.json
namespace {
constexpr size_t kMaxPackageConfigBytes = size_t(1) << 20;  // a package's config.json takes 2 kB
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

// "languages": [{"code": "en", "token": "__en__", "id": 128022}, ...] and
// "language_token_position" (format 3; both optional: a model of one language pair has neither).
void readLanguages(const Reader& r, PackageConfig& c) {
    if (r.j.contains("language_token_position")) c.language_token_position = r.string("language_token_position");
    if (!r.j.contains("languages")) return;
    const json& list = r.get("languages");
    if (!list.is_array()) r.fail("'languages' must be a list");
    if (list.size() > PackageConfig::kMaxLanguages)
        r.fail("'languages' has " + std::to_string(list.size()) + " entries; at most " +
               std::to_string(PackageConfig::kMaxLanguages) + " are read");
    for (size_t i = 0; i < list.size(); ++i) {
        const json& e = list[i];
        const std::string where = "languages[" + std::to_string(i) + "]";
        if (!e.is_object() || !e.contains("code") || !e.contains("token") || !e.contains("id") ||
            !e["code"].is_string() || !e["token"].is_string() || !e["id"].is_number_integer())
            r.fail(where + " must be {\"code\": text, \"token\": text, \"id\": integer}");
        c.languages.push_back({e["code"].get<std::string>(), e["token"].get<std::string>(), e["id"].get<int64_t>()});
    }
}
}  // namespace

PackageConfig packageConfigFromJson(const std::string& text, const std::string& origin) {
    // Parse errors, numbers too large for any type (fuzz finding), nesting too deep for the stack.
    const json j = util::parseJson(text, origin);
    if (!j.is_object()) throw PackageError(origin + ": expected a JSON object at the top level");
    Reader r{j, origin};
    PackageConfig c;
    c.format_version = static_cast<int>(r.integer("format_version"));
    if (c.format_version < PackageConfig::kOldestFormatVersion || c.format_version > PackageConfig::kFormatVersion)
        r.fail("unknown format_version " + std::to_string(c.format_version) + " (this build reads " +
               std::to_string(PackageConfig::kOldestFormatVersion) + " to " +
               std::to_string(PackageConfig::kFormatVersion) + ")");
    c.source_lang = r.string("source_lang");
    c.target_lang = r.string("target_lang");
    ModelConfig& m = c.model;
    for (const auto& f : modelConfigFields()) {
        if (f.since > c.format_version) {  // an older package: the field keeps its default
            if (j.contains(f.name))
                r.fail(std::string("field '") + f.name + "' needs format_version " + std::to_string(f.since) +
                       " or later");
            continue;
        }
        if (f.since > 1 && !j.contains(f.name)) continue;  // the fields format 2 added default when absent
        std::visit(
            [&](auto ptr) {
                auto& v = m.*ptr;
                using T = std::decay_t<decltype(v)>;
                if constexpr (std::is_same_v<T, int64_t>)
                    v = r.integer(f.name);
                else if constexpr (std::is_same_v<T, double>)
                    v = r.number(f.name);
                else if constexpr (std::is_same_v<T, bool>)
                    v = r.boolean(f.name);
                else
                    v = r.string(f.name);
            },
            f.member);
    }
    c.bos_idx = r.integer("bos_idx");
    c.eos_idx = r.integer("eos_idx");
    c.unk_idx = r.integer("unk_idx");
    c.source_bos = r.boolean("source_bos", false);
    c.source_eos = r.boolean("source_eos", true);
    if (c.format_version >= 2) {
        if (j.contains("tokenizer")) c.tokenizer = r.string("tokenizer");
        c.num_beams = static_cast<int>(r.integer("num_beams", 0));
        c.max_length = static_cast<int>(r.integer("max_length", 0));
    }
    if (c.format_version >= 3) readLanguages(r, c);
    if (c.format_version >= 4) {
        c.source_bos_idx = r.integer("source_bos_idx", -1);
        c.source_eos_idx = r.integer("source_eos_idx", -1);
        c.min_length = static_cast<int>(r.integer("min_length", 0));
    }
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
    j["format_version"] = PackageConfig::kFormatVersion;  // every field is written: always the newest version
    j["source_lang"] = c.source_lang;
    j["target_lang"] = c.target_lang;
    for (const auto& f : modelConfigFields()) std::visit([&](auto ptr) { j[f.name] = m.*ptr; }, f.member);
    j["bos_idx"] = c.bos_idx;
    j["eos_idx"] = c.eos_idx;
    j["unk_idx"] = c.unk_idx;
    j["source_bos"] = c.source_bos;
    j["source_eos"] = c.source_eos;
    j["source_bos_idx"] = c.source_bos_idx;
    j["source_eos_idx"] = c.source_eos_idx;
    j["tokenizer"] = c.tokenizer;
    j["num_beams"] = c.num_beams;
    j["max_length"] = c.max_length;
    j["min_length"] = c.min_length;
    json languages = json::array();
    for (const auto& l : c.languages) languages.push_back({{"code", l.code}, {"token", l.token}, {"id", l.id}});
    j["languages"] = languages;
    j["language_token_position"] = c.language_token_position;
    return j.dump(2) + "\n";
}

PackageConfig readPackageConfig(const std::string& dir) {
    const fs::path path = fs::path(dir) / package_files::kConfig;
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) throw PackageError(dir + ": not a directory (a model package is a directory)");
    return packageConfigFromJson(util::readSmallFile(path.string(), kMaxPackageConfigBytes), path.string());
}

namespace {
constexpr const char* kDefaultBundled = "multi30k-de-en";

// Where the bundled models lie: the source tree's resources/models, or the installed
// share/attnlab/models (next to the executable or at the install prefix).
std::string bundledModelsDir() {
    std::vector<fs::path> candidates;
#ifdef ATTNLAB_SOURCE_MODEL_DIR
    candidates.emplace_back(ATTNLAB_SOURCE_MODEL_DIR);
#endif
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        candidates.push_back(exe.parent_path().parent_path() / "share/attnlab/models");
        candidates.push_back(exe.parent_path().parent_path() / "resources/models");
    }
#ifdef ATTNLAB_INSTALL_MODEL_DIR
    candidates.emplace_back(ATTNLAB_INSTALL_MODEL_DIR);
#endif
    for (const auto& c : candidates)
        if (fs::is_regular_file(c / kDefaultBundled / package_files::kConfig, ec)) return c.string();
    return {};
}
}  // namespace

std::string bundledHubCatalogPath() {
    const std::string models = bundledModelsDir();
    if (models.empty()) return {};
    std::error_code ec;
    const fs::path catalog = fs::path(models).parent_path() / kHubCatalogFile;
    return fs::is_regular_file(catalog, ec) ? catalog.string() : std::string();
}

std::string bundledLessonsDir() {
    const std::string models = bundledModelsDir();
    if (models.empty()) return {};
    std::error_code ec;
    const fs::path lessons = fs::path(models).parent_path() / "lessons";
    return fs::is_directory(lessons, ec) ? lessons.string() : std::string();
}

std::vector<Example> readExamples(const std::string& package_dir) {
    const std::string path = (fs::path(package_dir) / package_files::kExamples).string();
    if (!util::optionalFilePresent(path)) return {};
    std::vector<Example> out;
    size_t line_no = 0;
    for (const std::string& line : readTextLines(path)) {
        ++line_no;
        if (line.empty()) continue;
        const size_t tab = line.find('\t');
        if (tab != std::string::npos && line.find('\t', tab + 1) != std::string::npos)
            throw InputError(path + ": line " + std::to_string(line_no) +
                             " has more than two tab-separated fields (source, reference)");
        out.push_back({line.substr(0, tab), tab == std::string::npos ? std::string() : line.substr(tab + 1), {}});
    }
    const std::string gold_path = (fs::path(package_dir) / package_files::kAlignments).string();
    if (!util::optionalFilePresent(gold_path)) return out;
    const auto gold = readTextLines(gold_path);
    if (gold.size() != out.size())
        throw InputError(gold_path + " has " + std::to_string(gold.size()) + " lines but " + path + " has " +
                         std::to_string(out.size()) + " examples");
    for (size_t i = 0; i < out.size(); ++i) {
        const std::string where = gold_path + " line " + std::to_string(i + 1);
        checkGoldIndices(parseGoldLine(gold[i], {}, where), static_cast<int>(whitespaceWords(out[i].source).size()),
                         static_cast<int>(whitespaceWords(out[i].reference).size()), where);
        out[i].alignment = gold[i];
    }
    return out;
}

std::vector<BundledModel> bundledModels() {
    std::vector<BundledModel> out;
    const std::string root = bundledModelsDir();
    if (root.empty()) return out;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(root, ec)) {
        if (!fs::is_regular_file(entry.path() / package_files::kConfig, ec)) continue;
        try {
            const PackageConfig c = readPackageConfig(entry.path().string());
            out.push_back({entry.path().filename().string(), entry.path().string(), c.source_lang, c.target_lang});
        } catch (const Error&) {
            // A broken bundled package is reported when it is opened, not listed.
        }
    }
    std::sort(out.begin(), out.end(), [](const BundledModel& a, const BundledModel& b) {
        return std::make_pair(a.name != kDefaultBundled, a.name) < std::make_pair(b.name != kDefaultBundled, b.name);
    });
    return out;
}

std::vector<BundledModel> installedArgosModels() {
    std::vector<BundledModel> out;
    for (const auto& p : package::installedArgosPackages())
        out.push_back({fs::path(p.dir).filename().string(), p.dir, p.metadata.from_code, p.metadata.to_code});
    return out;
}

std::string reverseBundledModel(const PackageConfig& forward) {
    if (forward.source_lang.empty() || forward.target_lang.empty()) return "";
    for (const auto& m : bundledModels())
        if (m.source_lang == forward.target_lang && m.target_lang == forward.source_lang) return m.dir;
    return "";
}

bool looksLikeAPath(const std::string& given) {
    const std::string repo = given.substr(0, given.find('@'));
    if (repo.empty()) return false;
    if (repo.front() == '/' || repo.front() == '~' || repo.front() == '.' || repo.find('\\') != std::string::npos)
        return true;
    if (std::count(repo.begin(), repo.end(), '/') > 1) return true;
    // its first part a folder here: a path mistyped below it (models/opus-mt-en-dee), not a hub name
    std::error_code ec;
    if (repo.find('/') != std::string::npos && fs::is_directory(repo.substr(0, repo.find('/')), ec)) return true;
    static const char* suffixes[] = {".json", ".bin", ".safetensors", ".argosmodel", ".zip", ".pt",   ".pth",  ".model",
                                     ".spm",  ".txt", ".tsv",         ".gz",         ".tar", ".onnx", ".ckpt", ".h5"};
    return std::any_of(std::begin(suffixes), std::end(suffixes), [&](const std::string& suffix) {
        return repo.size() > suffix.size() && repo.compare(repo.size() - suffix.size(), suffix.size(), suffix) == 0;
    });
}

namespace {
// A Hugging Face name: the cache (no request), else the hub, saying first that no such folder is here.
std::string fromTheHub(const HubModelName& name, const std::string& shown, const HubProgressCallback& progress) {
    const HubOptions options = hubOptionsFromEnvironment();
    const std::string no_folder = "no folder " + shown + " here";
    if (progress) {
        HubProgress notice;
        notice.notice = no_folder + ": getting it as a Hugging Face model from " + options.endpoint;
        if (!progress(notice)) throw CancelledError();
    }
    try {
        return hubSnapshot(name, options, progress);
    } catch (const PackageError& e) {
        throw PackageError(no_folder + "; as a Hugging Face name: " + e.what());
    }
}
}  // namespace

std::string resolveModelArgument(const std::string& name_or_dir, const HubProgressCallback& progress) {
    std::error_code ec;
    if (fs::is_directory(name_or_dir, ec) || package::isCtranslate2Model(name_or_dir)) return name_or_dir;
    const auto models = bundledModels();
    for (const auto& m : models)
        if (m.name == name_or_dir || m.direction() == name_or_dir) return m.dir;
    const std::string shown = util::forMessage(name_or_dir);
    if (fs::exists(fs::symlink_status(name_or_dir, ec))) {
        if (name_or_dir.size() > 11 && name_or_dir.substr(name_or_dir.size() - 11) == ".argosmodel")
            return name_or_dir;  // its loader says what is wrong with it
        throw InputError("--model " + shown + ": a file, not a model folder or an .argosmodel package");
    }
    const auto hub_name = parseHubModelName(name_or_dir);
    if (hub_name)  // the cache: no request, whatever it looks like
        if (const auto cached = cachedHubSnapshot(*hub_name, hubOptionsFromEnvironment())) return *cached;
    if (looksLikeAPath(name_or_dir)) {
        const std::string first = name_or_dir.substr(0, name_or_dir.find('/'));
        const bool below_a_folder = first != name_or_dir && fs::is_directory(first, ec);
        throw InputError("--model " + shown + ": no such folder or file here (a path" +
                         (below_a_folder ? ", below the folder " + util::forMessage(first) + " here" : "") +
                         ": not looked up on the Hugging Face hub)");
    }
    // ORG/NAME[@REVISION]: the Hugging Face cache, downloading what is missing (attnlab/hub.h).
    if (hub_name) return fromTheHub(*hub_name, shown, progress);
    std::string names;
    for (const auto& m : models) names += (names.empty() ? "" : ", ") + m.name + " (" + m.direction() + ")";
    throw InputError("--model " + shown +
                     ": not a directory, not a Hugging Face name (ORG/NAME), and no bundled model has that name "
                     "(bundled: " +
                     (names.empty() ? std::string("none found") : names) + ")");
}

std::string whyNotReplaceable(const std::string& dir) { return util::whyNotReplaceable(dir); }

void copyPackage(const std::string& from, const std::string& to) {
    readPackageConfig(from);
    if (const std::string why = whyNotReplaceable(to); !why.empty()) throw PackageError(why);
    std::error_code ec;
    const fs::path target = fs::absolute(to);
    if (fs::equivalent(from, target, ec)) return;  // already there
    util::writeDirectory(target.string(), [&](const std::string& staged) { util::copyFolderContents(from, staged); });
}

std::string defaultModelDir() {
    if (const char* env = std::getenv("ATTNLAB_MODEL_DIR"); env && *env) return env;
    const std::string root = bundledModelsDir();
    return root.empty() ? std::string() : (fs::path(root) / kDefaultBundled).string();
}

}  // namespace attnlab
