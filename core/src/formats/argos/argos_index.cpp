// The Argos package index (attnlab/argos_index.h): argos-translate's settings, index.json's keys, search.
// Installing and removing: argos_install.cpp.
#include <attnlab/argos_index.h>

#include "formats/argos/argos_package.h"
#include "hub/hub_client.h"
#include "util/text.h"

#include <attnlab/errors.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <tuple>

namespace attnlab {

namespace {
namespace argos_keys = package::argos_keys;
// settings.py: package_index's default (argos-translate 1.9; earlier versions wrote it without the last '/').
constexpr const char* kDefaultIndexBase = "https://raw.githubusercontent.com/argosopentech/argospm-index/main/";

std::string lower(std::string s) {
    for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

int64_t wholeNumberSetting(const char* variable, int64_t fallback) {
    const char* v = std::getenv(variable);
    if (!v || !*v) return fallback;
    const std::string text = v;
    if (text.size() > 18 || !std::all_of(text.begin(), text.end(), ::isdigit))
        throw ConfigError(std::string(variable) + "=" + util::forMessage(text) + ": not a whole number of bytes");
    return std::stoll(text);
}

// A string key of an index entry, as IPackage.set_metadata reads it (metadata.get): absent, null or of
// another type counts as absent. A version written as a number (1.9) is taken as its text.
std::string text(const nlohmann::json& entry, const char* key) {
    const auto it = entry.find(key);
    if (it == entry.end()) return {};
    if (it->is_string()) return it->get<std::string>();
    if (it->is_number() && std::string(key).find("version") != std::string::npos) return it->dump();
    return {};
}

ArgosPackageEntry parseEntry(const nlohmann::json& e) {
    ArgosPackageEntry p;
    p.from_code = text(e, argos_keys::kFromCode);
    p.to_code = text(e, argos_keys::kToCode);
    p.from_name = text(e, argos_keys::kFromName);
    p.to_name = text(e, argos_keys::kToName);
    p.package_version = text(e, argos_keys::kPackageVersion);
    p.argos_version = text(e, argos_keys::kArgosVersion);
    p.type = text(e, argos_keys::kType);
    p.code = text(e, argos_keys::kCode);
    // set_metadata: a code made from the languages when the entry has none
    if (p.code.empty() && !p.from_code.empty() && !p.to_code.empty())
        p.code = "translate-" + p.from_code + "_" + p.to_code;
    if (p.type.empty()) p.type = "translate";  // argospm_package_name's reading of an entry without one
    if (const auto links = e.find(argos_keys::kLinks); links != e.end() && links->is_array())
        for (const auto& l : *links)
            if (l.is_string()) p.links.push_back(l.get<std::string>());
    if (const auto size = e.find(argos_keys::kSize); size != e.end() && size->is_number_unsigned())
        p.size = size->get<uint64_t>() <= uint64_t(INT64_MAX) ? int64_t(size->get<uint64_t>()) : -1;
    p.checksum = text(e, argos_keys::kChecksum);
    p.licence = text(e, argos_keys::kLicense);
    return p;
}

// "1.10" after "1.9": dotted numbers compared as numbers, anything else as text.
bool versionLess(const std::string& a, const std::string& b) {
    size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
            size_t ei = i, ej = j;
            while (ei < a.size() && std::isdigit(static_cast<unsigned char>(a[ei]))) ++ei;
            while (ej < b.size() && std::isdigit(static_cast<unsigned char>(b[ej]))) ++ej;
            const std::string na = a.substr(i, ei - i), nb = b.substr(j, ej - j);
            if (na.size() != nb.size()) return na.size() < nb.size();
            if (na != nb) return na < nb;
            i = ei, j = ej;
        } else {
            if (a[i] != b[j]) return a[i] < b[j];
            ++i, ++j;
        }
    }
    return a.size() - i < b.size() - j;
}

// "en-de", "en_de" as (from, to); nothing for anything else.
std::optional<std::pair<std::string, std::string>> splitPair(const std::string& name) {
    const size_t sep = name.find_first_of("-_");
    if (sep == std::string::npos || sep == 0 || sep + 1 == name.size() ||
        name.find_first_of("-_", sep + 1) != std::string::npos)
        return std::nullopt;
    return std::pair{lower(name.substr(0, sep)), lower(name.substr(sep + 1))};
}
}  // namespace

std::string argosIndexUrl(const std::string& base) {
    return base + (!base.empty() && base.back() == '/' ? "" : "/") + "index.json";
}

ArgosOptions argosOptionsFromEnvironment() {
    ArgosOptions o;
    o.index_url = argosIndexUrl(package::argosSetting("ARGOS_PACKAGE_INDEX").value_or(kDefaultIndexBase));
    o.packages_dir = package::argosPackagesDir();
    const std::string cache = package::argosCacheDir();
    o.downloads_dir = cache.empty() ? cache : cache + "/downloads";
    o.transfer = hubOptionsFromEnvironment();  // the same download guards as the hub's
    o.transfer.endpoint.clear();               // no token goes to an index or a package's host
    o.transfer.token.clear();
    o.transfer.cache_dir.clear();
    o.max_package_bytes = wholeNumberSetting("ATTNLAB_ARGOS_MAX_BYTES", o.max_package_bytes);
    return o;
}

std::vector<ArgosPackageEntry> parseArgosIndex(const std::string& json_text, const std::string& origin) {
    if (json_text.size() > kMaxArgosIndexBytes)
        throw PackageError(origin + ": larger than " + std::to_string(kMaxArgosIndexBytes >> 20) +
                           " MB, not an Argos package index");
    const nlohmann::json j = nlohmann::json::parse(json_text, nullptr, false);
    if (j.is_discarded()) throw PackageError(origin + ": not JSON (an Argos package index is a JSON list)");
    if (!j.is_array()) throw PackageError(origin + ": not a JSON list of packages (argospm-index's index.json)");
    std::vector<ArgosPackageEntry> out;
    for (const nlohmann::json& e : j)
        if (e.is_object()) out.push_back(parseEntry(e));
    std::stable_sort(out.begin(), out.end(), [](const ArgosPackageEntry& a, const ArgosPackageEntry& b) {
        if (std::tie(a.from_name, a.to_name) != std::tie(b.from_name, b.to_name))
            return std::tie(a.from_name, a.to_name) < std::tie(b.from_name, b.to_name);
        return versionLess(a.package_version, b.package_version);
    });
    return out;
}

std::vector<ArgosPackageEntry> fetchArgosIndex(const ArgosOptions& options, const std::function<bool()>& keep_going) {
    hub::HubClient client(options.transfer);
    const std::string what = "the Argos package index " + options.index_url + " (ARGOS_PACKAGE_INDEX)";
    std::vector<ArgosPackageEntry> index =
        parseArgosIndex(client.getSmall(options.index_url, what, kMaxArgosIndexBytes, keep_going), options.index_url);
    const auto installed = installedArgosPackagesList(options);
    for (ArgosPackageEntry& e : index)
        for (const ArgosInstalledPackage& p : installed)
            if (p.from_code == e.from_code && p.to_code == e.to_code) {
                e.installed_dir = p.dir;
                e.installed_version = p.package_version;
            }
    return index;
}

bool argosEntryMatches(const ArgosPackageEntry& entry, const std::string& language) {
    const std::string q = lower(language);
    if (q.empty()) return true;
    if (const auto pair = splitPair(q); pair && lower(entry.from_code) == pair->first)
        return lower(entry.to_code) == pair->second;
    if (lower(entry.from_code) == q || lower(entry.to_code) == q) return true;
    return q.size() > 2 &&
           (lower(entry.from_name).find(q) != std::string::npos || lower(entry.to_name).find(q) != std::string::npos);
}

const ArgosPackageEntry& findArgosEntry(const std::vector<ArgosPackageEntry>& index, const std::string& name,
                                        const std::string& index_url) {
    const auto pair = splitPair(name);
    const ArgosPackageEntry* best = nullptr;
    for (const ArgosPackageEntry& e : index) {
        const bool named =
            e.code == name || (pair && lower(e.from_code) == pair->first && lower(e.to_code) == pair->second);
        if (named && (!best || versionLess(best->package_version, e.package_version))) best = &e;
    }
    if (best) return *best;
    std::string near;
    int shown = 0;
    for (const ArgosPackageEntry& e : index)
        if (pair && (lower(e.from_code) == pair->first || lower(e.to_code) == pair->second) && shown++ < 30)
            near += (near.empty() ? "" : ", ") + e.pair();
    throw InputError("no package " + util::forMessage(name) + " in the Argos index " + index_url +
                     (near.empty() ? " (name a pair FROM-TO such as en-de, or a package's code)"
                                   : "; pairs with those languages: " + near));
}

std::vector<ArgosInstalledPackage> installedArgosPackagesList(const ArgosOptions& options) {
    std::vector<ArgosInstalledPackage> out;
    for (const package::InstalledArgosPackage& p : package::installedArgosPackagesIn(options.packages_dir)) {
        const auto& m = p.metadata;
        out.push_back({p.dir, std::filesystem::path(p.dir).filename().string(), m.from_code, m.from_name, m.to_code,
                       m.to_name, m.package_version});
    }
    return out;
}

}  // namespace attnlab
