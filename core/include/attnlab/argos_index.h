#pragma once
// The Argos Translate package index (argosopentech/argospm-index, index.json) and a package manager over it
// that shares argos-translate's folders: what `argospm list | install | remove` do, so that each tool sees
// the other's packages.
//
// The rules are argos-translate's own (argostranslate/settings.py, argostranslate/package.py):
// - settings: an environment variable, else the key of the same name in
//   $XDG_CONFIG_HOME/argos-translate/settings.json (~/.config/...), else the default (settings.get_setting);
//   $HOME is $SNAP_USER_DATA when $SNAP is set;
// - the index: ARGOS_PACKAGE_INDEX (a base address; default
//   https://raw.githubusercontent.com/argosopentech/argospm-index/main/) + "index.json"
//   (settings.remote_package_index);
// - the packages folder: ARGOS_PACKAGES_DIR, else $XDG_DATA_HOME/argos-translate/packages, else
//   ~/.local/share/argos-translate/packages (settings.package_data_dir);
// - downloads: $XDG_CACHE_HOME/argos-translate/downloads, else ~/.local/cache/argos-translate/downloads
//   (settings.downloads_dir);
// - an index entry's keys as IPackage.set_metadata reads them (package.py), each one optional;
// - install: the .argosmodel's one top folder unzipped into the packages folder under its own name
//   (install_from_path: zip.extractall(packages_dir)); remove: that folder (uninstall: shutil.rmtree).
//
// Errors (attnlab/errors.h): PackageError naming the address, the file or the folder and the problem;
// InputError for a pair the index or the packages folder does not have; CancelledError when the progress
// callback returned false.
#include <attnlab/hub.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace attnlab {

// Where the index and the packages are, and how downloads go.
struct ArgosOptions {
    std::string index_url;      // the full address of index.json
    std::string packages_dir;   // where packages are installed (created when first needed)
    std::string downloads_dir;  // where a package's archive is downloaded (and resumed) before it is unpacked
    // The HTTP client's options: the hub's download guards, read from the same variables (ATTNLAB_HUB_MIN_RATE,
    // ATTNLAB_HUB_SLOW_WINDOW, the connection time-out); its token stays empty: none is sent to an index.
    HubOptions transfer;
    // The most a package may be when the index gives no size (ATTNLAB_ARGOS_MAX_BYTES); the largest in
    // today's index is under 500 MB.
    int64_t max_package_bytes = int64_t(4) << 30;
};

// ArgosOptions as argos-translate's settings are read (above). ConfigError naming a variable that is not a
// whole number where one is needed.
ArgosOptions argosOptionsFromEnvironment();
// The index address a base (ARGOS_PACKAGE_INDEX's value) gives: base + "index.json", with a '/' between when
// the base has none (argos-translate 1.9 appends "index.json" to the base, earlier versions "/index.json").
std::string argosIndexUrl(const std::string& base);

// One package of the index, every key optional as in argos-translate (absent: empty, or -1 for the size).
struct ArgosPackageEntry {
    std::string code;  // "translate-en_de"; made from the languages when the entry has none, as package.py does
    std::string type;  // "translate" when absent (argospm_package_name)
    std::string from_code, from_name, to_code, to_name;
    std::string package_version, argos_version;
    std::vector<std::string> links;  // only http:// and https:// ones are ever fetched (networking.py)
    int64_t size = -1;               // bytes, when the index says ("size")
    std::string checksum;            // as the index gives it ("checksum"): "ALGORITHM:HEX" or bare hex
    std::string licence;             // "license", when the index says; AttnLab's addition, absent today
    // The installed package of the same pair, if any (installedArgosPackagesList).
    std::string installed_dir, installed_version;
    std::string pair() const { return from_code + "-" + to_code; }  // "en-de"
};

// index.json's text as argos-translate reads it: a JSON array of objects (anything else: PackageError naming
// `origin`); an element that is not an object, or a key of another type than argos-translate uses, is passed
// over as absent. Sorted by language names, then version. At most kMaxArgosIndexBytes.
inline constexpr size_t kMaxArgosIndexBytes = size_t(8) << 20;
std::vector<ArgosPackageEntry> parseArgosIndex(const std::string& json_text, const std::string& origin);

// GET of the index (through the hub's HTTP client), parsed, each entry marked with its installed package.
// PackageError naming the address when it cannot be got; CancelledError when `keep_going` says false.
std::vector<ArgosPackageEntry> fetchArgosIndex(const ArgosOptions& options,
                                               const std::function<bool()>& keep_going = {});

// Whether the entry translates from or into `language`: a code ("de", any case), a pair ("en-de"), or a part
// of a language's name ("germ"). An empty query matches everything.
bool argosEntryMatches(const ArgosPackageEntry& entry, const std::string& language);

// The entry a user names: a pair "en-de" (or "en_de"), or the package's code ("translate-en_de"). InputError
// "no package en-de in the index ADDRESS" listing the pairs from or to those languages.
const ArgosPackageEntry& findArgosEntry(const std::vector<ArgosPackageEntry>& index, const std::string& name,
                                        const std::string& index_url);

// An installed package (a folder of the packages folder with metadata.json and model/model.bin).
struct ArgosInstalledPackage {
    std::string dir, folder;  // its path, and its name in the packages folder
    std::string from_code, from_name, to_code, to_name, package_version;
    std::string pair() const { return from_code + "-" + to_code; }
};
std::vector<ArgosInstalledPackage> installedArgosPackagesList(const ArgosOptions& options);

// Downloads `entry` (its first http(s) link; resumed where a former try stopped; its size and checksum
// checked where the index gives them), unzips it into a staging folder inside the packages folder (the
// bounded unzip of .argosmodel files; no link, nothing outside its one top folder) and renames its top
// folder into place. A package of the same pair already installed, or anything at the folder's name, is
// left as it is (PackageError naming it) unless `replace`: then the new folder takes its place and the old
// one is removed. Progress as hubSnapshot reports it (one file). Returns the installed folder.
std::string installArgosPackage(const ArgosPackageEntry& entry, const ArgosOptions& options,
                                const HubProgressCallback& progress = {}, bool replace = false);

// Removes the installed package `name` (a pair "en-de", or its folder's name): only a folder directly
// inside the packages folder, not a link, holding metadata.json and model/; it is renamed out of sight
// first, then deleted (links inside are removed, never followed). Returns the folder removed. InputError
// when nothing installed has that name; PackageError when several packages do (each named), or the
// folder is not one to remove.
std::string removeArgosPackage(const std::string& name, const ArgosOptions& options);

}  // namespace attnlab
