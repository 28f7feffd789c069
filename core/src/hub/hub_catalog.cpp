// The catalog of models File › Get a model… lists (resources/hub_catalog.json), and the hub name of a
// snapshot folder (for menus that show models by name).
#include "hub/hub_cache.h"

#include <attnlab/errors.h>
#include <attnlab/hub.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;

namespace attnlab {

namespace {
constexpr int kCatalogFormat = 1;

std::vector<std::string> codes(const nlohmann::json& e, const char* key, const std::string& where) {
    if (!e.contains(key) || !e[key].is_array() || e[key].empty())
        throw PackageError(where + ": \"" + key + "\" is not a list of language codes");
    std::vector<std::string> out;
    for (const auto& c : e[key]) {
        if (!c.is_string()) throw PackageError(where + ": \"" + key + "\" holds something other than a code");
        out.push_back(c.get<std::string>());
    }
    return out;
}

std::string text(const nlohmann::json& e, const char* key, const std::string& where, bool required = true) {
    if (!e.contains(key)) {
        if (required) throw PackageError(where + ": no \"" + key + "\"");
        return {};
    }
    if (!e[key].is_string()) throw PackageError(where + ": \"" + key + "\" is not text");
    return e[key].get<std::string>();
}

HubCatalogEntry catalogEntry(const nlohmann::json& e, const std::string& where) {
    if (!e.is_object()) throw PackageError(where + ": not an object");
    HubCatalogEntry m;
    m.repo = text(e, "repo", where);
    if (!parseHubModelName(m.repo)) throw PackageError(where + ": \"" + m.repo + "\" is not a hub name (ORG/NAME)");
    m.family = text(e, "family", where);
    m.source = codes(e, "source", where);
    m.target = codes(e, "target", where);
    m.languages = text(e, "languages", where);
    if (!e.contains("size_bytes") || !e["size_bytes"].is_number_integer() || e["size_bytes"].get<int64_t>() <= 0)
        throw PackageError(where + ": \"size_bytes\" is not a positive whole number");
    m.size_bytes = e["size_bytes"].get<int64_t>();
    if (e.contains("size_is_estimate") && !e["size_is_estimate"].is_boolean())
        throw PackageError(where + ": \"size_is_estimate\" is not true or false");
    m.size_is_estimate = e.contains("size_is_estimate") && e["size_is_estimate"].get<bool>();
    m.licence = text(e, "licence", where);
    m.notes = text(e, "notes", where, /*required=*/false);
    return m;
}
}  // namespace

std::vector<HubCatalogEntry> parseHubCatalog(const std::string& json_text, const std::string& origin) {
    const nlohmann::json doc = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
    if (!doc.is_object()) throw PackageError(origin + ": not a JSON object");
    // (json::value() throws its own type_error for a "format" that is not a number: checked by hand)
    const nlohmann::json format = doc.contains("format") ? doc["format"] : nlohmann::json();
    if (!format.is_number_integer() || format.get<int64_t>() != kCatalogFormat)
        throw PackageError(origin + ": format " + format.dump() + " is not one this AttnLab reads (" +
                           std::to_string(kCatalogFormat) + ")");
    if (!doc.contains("models") || !doc["models"].is_array()) throw PackageError(origin + ": no \"models\" list");
    std::vector<HubCatalogEntry> out;
    for (size_t i = 0; i < doc["models"].size(); ++i)
        out.push_back(catalogEntry(doc["models"][i], origin + ": model " + std::to_string(i + 1)));
    return out;
}

std::optional<HubModelName> hubNameOfSnapshot(const std::string& dir) {
    // .../models--ORG--NAME/snapshots/COMMIT, or a folder below the commit's
    fs::path p = fs::path(dir).lexically_normal();
    if (p.filename().empty()) p = p.parent_path();
    while (!p.empty() && p.has_parent_path() && p.parent_path().filename() != "snapshots") {
        if (p == p.parent_path()) return std::nullopt;
        p = p.parent_path();
    }
    const std::string commit = p.filename().string();
    const fs::path repo_dir = p.parent_path().parent_path();
    const std::string folder = repo_dir.filename().string();
    const std::string prefix = "models--";
    if (!hub::isCommitHash(commit) || folder.rfind(prefix, 0) != 0) return std::nullopt;
    const std::string rest = folder.substr(prefix.size());
    const size_t sep = rest.find("--");
    if (sep == std::string::npos) return std::nullopt;
    auto name = parseHubModelName(rest.substr(0, sep) + "/" + rest.substr(sep + 2));
    if (!name) return std::nullopt;
    name->revision = commit;
    const hub::RepoCache cache(repo_dir.parent_path().string(), name->repo);
    if (cache.commitFor("main") == commit) {
        name->revision = "main";
        return name;
    }
    std::error_code ec;
    const fs::path refs = repo_dir / "refs";
    for (fs::recursive_directory_iterator it(refs, ec), end; !ec && it != end; it.increment(ec)) {
        if (!it->is_regular_file(ec)) continue;
        const std::string revision = fs::relative(it->path(), refs, ec).string();
        if (cache.commitFor(revision) == commit) {
            name->revision = revision;
            break;
        }
    }
    return name;
}

}  // namespace attnlab
