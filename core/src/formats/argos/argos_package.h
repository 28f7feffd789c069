#pragma once
// Argos Translate packages (what LibreTranslate and argos-translate install): an `.argosmodel` file
// is a zip of one folder holding `model/` (a CTranslate2 model directory), `sentencepiece.model`,
// `metadata.json` (from_code, to_code, from_name, to_name, package_version, ...) and optionally
// `stanza/` (sentence splitting, not used here); argos-translate unzips it into its packages folder
// ($ARGOS_PACKAGES_DIR, else $XDG_DATA_HOME/argos-translate/packages, else
// ~/.local/share/argos-translate/packages). Both forms open.

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace attnlab::package {

// What argos-translate names a package's parts and the keys of its metadata (argostranslate/package.py:
// IPackage.set_metadata reads an installed package's metadata.json and an index.json entry alike); every
// reader here (readArgosMetadata, parseArgosIndex, the installer) uses these names.
namespace argos_files {
inline constexpr const char* kMetadata = "metadata.json";
inline constexpr const char* kModelFolder = "model";
}  // namespace argos_files
namespace argos_keys {
inline constexpr const char* kFromCode = "from_code";
inline constexpr const char* kToCode = "to_code";
inline constexpr const char* kFromName = "from_name";
inline constexpr const char* kToName = "to_name";
inline constexpr const char* kPackageVersion = "package_version";
inline constexpr const char* kArgosVersion = "argos_version";
inline constexpr const char* kCode = "code";
inline constexpr const char* kType = "type";
inline constexpr const char* kLinks = "links";
inline constexpr const char* kTargetPrefix = "target_prefix";
// An index entry's keys that argos-translate itself does not read; AttnLab uses them where an index has them.
inline constexpr const char* kSize = "size";
inline constexpr const char* kChecksum = "checksum";
inline constexpr const char* kLicense = "license";
}  // namespace argos_keys

struct ArgosMetadata {
    std::string from_code, from_name, to_code, to_name, package_version;
};

// metadata.json of a package folder; throws PackageError naming the file and the key.
ArgosMetadata readArgosMetadata(const std::string& path);

// What `--model PATH` names when it is a CTranslate2 model in one of its forms.
struct Ct2Location {
    std::string model_dir;                 // the folder holding model.bin
    std::string spm_path;                  // the SentencePiece model of an Argos package (empty elsewhere)
    std::string source_lang, target_lang;  // from metadata.json (empty elsewhere)
    bool argos = false;                    // an Argos package (decoded as argos-translate does: beam 4)
    std::string origin;                    // what the user named
    // Keeps an .argosmodel's extraction (a temporary folder) until the last copy goes.
    std::shared_ptr<const void> keep_alive;
};

// Whether `path` is a CTranslate2 model: a folder with model.bin, an installed Argos package
// (metadata.json and model/model.bin) or an .argosmodel file.
bool isCtranslate2Model(const std::string& path);

// Where its parts are; an .argosmodel is unzipped into a fresh folder in TMPDIR first, one of
// util::makeStagingFolderIn's (.attnlab-argos-RANDOM.attnlab-staging-PID, marked: what a killed
// process left there is removed by the next one that unpacks). Throws PackageError naming the file
// and the problem.
Ct2Location locateCtranslate2(const std::string& path);

// An .argosmodel unpacks to at most kArgosExpansionLimit times its own size (kArgosMinUnpackBytes for
// a small one, never more than kMaxArgosBytes): its weights barely compress (int8 or float32 values),
// its SentencePiece model about twice, so a real package stays far below; a zip bomb (a 9.6 MB one
// wrote 8.1 GB) stops there.
inline constexpr uint64_t kArgosExpansionLimit = 20;
inline constexpr uint64_t kArgosMinUnpackBytes = uint64_t(32) << 20;
inline constexpr uint64_t kMaxArgosBytes = uint64_t(8) << 30;
// What unpacking leaves free on the disk it writes to (TMPDIR's).
inline constexpr uint64_t kArgosFreeSpaceMargin = uint64_t(128) << 20;
uint64_t argosUnpackLimit(uint64_t archive_bytes);

// Unzips an .argosmodel into `into` (an empty folder AttnLab made): only what a model needs
// (metadata.json, sentencepiece.model, model/), not stanza/ or a README. Every member must lie inside
// the package's one top folder (a __MACOSX/ folder of a zip made on a Mac is passed over):
// with `whole_package` every file of that folder is written (an install that argos-translate also reads:
// stanza/, README.md);
// absolute names, "..", links, devices and members outside it are refused by name. What it writes is
// bounded by what the archive is (argosUnpackLimit) and by the free space where it goes, less
// kArgosFreeSpaceMargin: counted as the bytes are written (a member's header may lie about its
// size), refused with a message naming the bound at the first byte past it. Throws PackageError.
void extractArgosModel(const std::string& zip_path, const std::string& into, bool whole_package = false);
// The one top folder an archive was unpacked into under `into`; PackageError naming `origin` when none.
std::string argosTopFolder(const std::string& into, const std::string& origin);
// Whether `dir` is an installed package: metadata.json and model/model.bin.
bool isArgosPackageFolder(const std::string& dir);
// The same from memory (the fuzz target): the member names it would write, checked, without writing
// when `into` is empty; the bound is that of an archive of `size` bytes.
std::vector<std::string> extractArgosArchive(const void* data, size_t size, const std::string& origin,
                                             const std::string& into);

struct InstalledArgosPackage {
    std::string dir;
    ArgosMetadata metadata;
};
// The packages argos-translate installed (folders with metadata.json and model/model.bin) in argosPackagesDir()
// (or `packages_dir`), sorted by language pair; a folder whose metadata.json cannot be read is left out.
std::vector<InstalledArgosPackage> installedArgosPackages();
std::vector<InstalledArgosPackage> installedArgosPackagesIn(const std::string& packages_dir);

// argos-translate's settings (argostranslate/settings.py, get_setting): the environment variable `key`, else
// the string of that key in $XDG_CONFIG_HOME/argos-translate/settings.json (~/.config/...), else nothing.
// An empty value counts as none. A settings.json that cannot be read or parsed is passed over, as
// load_settings_dict does.
std::optional<std::string> argosSetting(const std::string& key);
// argos-translate's home: $SNAP_USER_DATA when $SNAP is set, else $HOME; empty when neither is.
std::string argosHomeDir();
// ARGOS_PACKAGES_DIR (argosSetting), else $XDG_DATA_HOME/argos-translate/packages, else
// HOME/.local/share/argos-translate/packages (settings.package_data_dir); empty without a home.
std::string argosPackagesDir();
// $XDG_CACHE_HOME/argos-translate, else HOME/.local/cache/argos-translate (settings.cache_dir: .local/cache,
// not .cache); empty without a home.
std::string argosCacheDir();

}  // namespace attnlab::package
