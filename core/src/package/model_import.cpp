// `attnlab-cli import`: any model AttnLab reads (a Hugging Face MarianMT or multilingual directory, a
// CTranslate2 model, an Argos package) written as an AttnLab package. Each family's reader is in its
// own room of formats/; this only chooses one and writes what it read.
#include "formats/argos/argos_package.h"
#include "formats/ctranslate2/ct2_model.h"
#include "formats/ctranslate2/ct2_weights.h"
#include "formats/huggingface/hf_multilingual.h"
#include "formats/huggingface/hf_weights.h"
#include "formats/huggingface/marian_import.h"
#include "package/package_io.h"
#include "tokenizer/text_codec.h"

#include <attnlab/errors.h>
#include <attnlab/package.h>

#include <c10/util/Exception.h>

#include <algorithm>
#include <filesystem>
#include <new>
#include <string>

namespace attnlab {
namespace fs = std::filesystem;

namespace {
// A multilingual directory: its SentencePiece model as both sides' and vocab.json written from the
// tokenizer's ids (the "marian" layout), the languages in config.json.
PackageConfig importMultilingual(const std::string& from_dir, const std::string& package_dir) {
    const package::MultilingualModel mm = package::readMultilingualModel(from_dir);
    model::Transformer model = package::loadHfWeights(from_dir, mm.config, mm.family);
    package::SaveOptions so;
    so.extra_files[package_files::kModelCard] = package::multilingualModelCard(from_dir, mm);
    nlohmann::json vocab = nlohmann::json::object();  // sorted by piece: ordered_json's linear search took 34 s
    for (size_t id = 0; id < mm.tokenizer.pieces.size(); ++id) vocab[mm.tokenizer.pieces[id]] = id;
    so.extra_files[marian_files::kVocab] = vocab.dump(1) + "\n";
    so.copied_as[marian_files::kSourceSpm] = mm.tokenizer.spm_path;
    so.copied_as[marian_files::kTargetSpm] = mm.tokenizer.spm_path;
    package::savePackage(package_dir, mm.config, model, "", so);
    return mm.config;
}

// A CTranslate2 model (a directory, an Argos package or .argosmodel): the vocabularies written as
// CTranslate2 holds them, the SentencePiece model copied (the "ctranslate2" tokenizer layout).
PackageConfig importCtranslate2(const std::string& from, const std::string& package_dir) {
    const package::Ct2Model m = package::readCtranslate2Model(from);
    (void)package::ctranslate2Codec(m.config, m.vocabularies, m.spm_path);  // checked before anything is written
    model::Transformer model = package::loadCt2Weights(m);
    package::SaveOptions so;
    so.extra_files[package_files::kModelCard] = package::ctranslate2ModelCard(from, m);
    // As CTranslate2 read them (the <unk> it appends where a file lacks one): JSON lists under its names.
    for (auto& [name, text] : package::ct2VocabularyFiles(m.vocabularies)) so.extra_files[name] = text;
    if (!m.spm_path.empty()) so.copied_as[package::ct2_files::kSentencePiece] = m.spm_path;
    package::savePackage(package_dir, m.config, model, "", so);
    return m.config;
}

PackageConfig importChecked(const std::string& from_dir, const std::string& package_dir) {
    if (package::isCtranslate2Model(from_dir)) return importCtranslate2(from_dir, package_dir);
    if (package::isMultilingualDirectory(from_dir)) return importMultilingual(from_dir, package_dir);
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
    if (auto problem = package::modelBinProblem(from_dir)) throw PackageError(*problem);
    if (!package::isHuggingFaceDirectory(from_dir) && !package::isCtranslate2Model(from_dir))
        throw PackageError(
            from_dir +
            ": neither a Hugging Face model directory (a config.json with a model_type) nor a CTranslate2 "
            "model (model.bin, an Argos Translate package or .argosmodel)");
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
