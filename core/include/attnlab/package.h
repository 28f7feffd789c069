#pragma once
// Model packages: a directory with config.json, model.safetensors and tokenizer.model.
// This header is torch-free; loading the weights happens inside Translator.

#include <attnlab/config.h>
#include <attnlab/hub.h>

#include <string>
#include <vector>

namespace attnlab {

// The file names of a model package: the one owner every reader and writer uses.
namespace package_files {
inline constexpr const char* kConfig = "config.json";             // PackageConfig as JSON (required)
inline constexpr const char* kWeights = "model.safetensors";      // parameters and buffers (required)
inline constexpr const char* kTokenizer = "tokenizer.model";      // SentencePiece model (required)
inline constexpr const char* kModelCard = "MODEL_CARD.md";        // how it was trained (optional)
inline constexpr const char* kTrainingLog = "training_log.tsv";   // the run's per-epoch log (optional)
inline constexpr const char* kAveragedFrom = "AVERAGED_FROM.md";  // what `average` combined (optional)
inline constexpr const char* kConfidence = "confidence.json";     // ConfidenceCalibration (optional)
inline constexpr const char* kExamples = "examples.tsv";          // example sentences (optional)
inline constexpr const char* kAlignments = "alignments.txt";      // gold alignments of the examples (optional)
// Attention maps of probe sentences across training (optional; attnlab/attention_history.h).
inline constexpr const char* kAttentionHistory = "attention_history.bin";
// The marker of a folder AttnLab wrote (util::writeDirectory puts it in every package and
// checkpoint): only a folder that carries it, or an empty one, is ever replaced by a new package.
inline constexpr const char* kWrittenByAttnlab = ".attnlab-package";
}  // namespace package_files

// Reads and validates <dir>/config.json; throws PackageError naming the file and the problem.
PackageConfig readPackageConfig(const std::string& dir);
PackageConfig packageConfigFromJson(const std::string& json_text, const std::string& origin);
std::string packageConfigToJson(const PackageConfig& config);

// Writes a Hugging Face MarianMT directory (OPUS-MT; docs/marian.md) as an AttnLab package:
// config.json (format 2), model.safetensors (F32), source.spm, target.spm, vocab.json and a
// MODEL_CARD.md naming the source; the directory itself opens too, this only makes loading fast.
// Replaces `package_dir` atomically. Throws PackageError naming the file and the problem.
PackageConfig importMarianModel(const std::string& from_dir, const std::string& package_dir);

// Why `dir` may not be replaced by a package, as a sentence naming it; empty when it may: it does
// not exist, is an empty folder, or is a folder AttnLab wrote (it carries
// package_files::kWrittenByAttnlab; a config.json alone is not enough). Every writer that replaces
// a package directory whole asks this (util::writeDirectory asks it again under its lock), so
// that a mistyped --output never removes a folder of other files.
std::string whyNotReplaceable(const std::string& dir);

// Copies the package `from` (its config.json must read) to `to`, replacing `to` whole and
// atomically. Throws PackageError naming the problem: `from` not a package, `to` not replaceable
// (whyNotReplaceable), a copy that fails (nothing is left behind then).
void copyPackage(const std::string& from, const std::string& to);

// A package's example sentences (examples.tsv: one per line, the source sentence, then optionally
// a tab and a reference translation). Empty when the file is absent; InputError naming the file
// and line for a line with more than two fields.
struct Example {
    std::string source, reference;
    // A hand-made gold word alignment of source and reference (package file alignments.txt, one
    // Pharaoh line per example: i-j sure, ipj possible, 0-based source-target whitespace words);
    // empty when the package has none.
    std::string alignment;
};
std::vector<Example> readExamples(const std::string& package_dir);

// The models that come with AttnLab: every package under the bundled models directory, the
// default (multi30k-de-en) first. name = the directory's name; direction = "de-en".
struct BundledModel {
    std::string name, dir, source_lang, target_lang;
    std::string direction() const { return source_lang + "-" + target_lang; }
};
std::vector<BundledModel> bundledModels();
// The Argos Translate packages argos-translate installed ($ARGOS_PACKAGES_DIR, else
// $XDG_DATA_HOME/argos-translate/packages, else ~/.local/share/argos-translate/packages): name = the
// package's folder, the languages from its metadata.json; sorted by language names.
std::vector<BundledModel> installedArgosModels();
// The bundled model of the other direction (its source the forward model's target and vice versa):
// what symmetrised alignment uses by default. Empty when there is none or the languages are unknown.
std::string reverseBundledModel(const PackageConfig& forward);

// What a --model argument names: an existing directory (or file: an .argosmodel) as it is; else a bundled model by name
// ("multi30k-de-en") or by direction ("en-de"); else a Hugging Face name ORG/NAME[@REVISION]: its snapshot in the
// shared cache, downloaded where missing (attnlab/hub.h: hubSnapshot, with `progress`; the environment's HF_*
// settings). A name that can only be a path (./, ../, /, ~, more than one '/', a file's suffix) never goes to the
// hub: InputError "no such folder or file here". A hub name not in the cache is first announced to `progress`
// (HubProgress::notice: "no folder ORG/NAME here: getting it as a Hugging Face model from ..."), and hubSnapshot's
// errors begin "no folder ORG/NAME here; as a Hugging Face name: ". Else InputError listing the bundled names.
// The value is escaped in messages (control characters as \n, \x1B, ...).
std::string resolveModelArgument(const std::string& name_or_dir, const HubProgressCallback& progress = {});
// Whether a --model value can only mean a path (./, ../, /, ~, a backslash, more than one '/' before any '@', a
// file's suffix such as .json, .bin, .safetensors, .argosmodel): such a value is never asked of the hub, where
// someone who registered a matching name could answer it.
bool looksLikeAPath(const std::string& model_argument);

// The bundled lessons' directory (resources/lessons, or share/attnlab/lessons once installed): the
// sibling of the bundled models' directory. Empty when none is found.
std::string bundledLessonsDir();

// The bundled default model: $ATTNLAB_MODEL_DIR, else resources/models/multi30k-de-en next to the
// source tree or the installed share/attnlab/models/multi30k-de-en. Empty when none is found.
std::string defaultModelDir();

}  // namespace attnlab
