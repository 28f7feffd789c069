// Routes between two languages among the installed models (attnlab/route.h): argos-translate's
// CompositeTranslation of two packages where no package translates the pair
// (argostranslate/translate.py, get_installed_languages).
#include <attnlab/route.h>

#include "formats/argos/argos_package.h"
#include "util/text.h"

#include <attnlab/errors.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <optional>
#include <set>

namespace attnlab {

namespace {

// The first model of the list that translates from -> to (argos-translate's Language.get_translation
// takes the first of its translations to that language).
std::optional<BundledModel> directModel(const std::vector<BundledModel>& models, const std::string& from,
                                        const std::string& to) {
    for (const auto& m : models)
        if (m.source_lang == from && m.target_lang == to) return m;
    return std::nullopt;
}

// The middle languages to try, English first, then the others by their codes.
std::vector<std::string> middleLanguages(const std::vector<BundledModel>& models, const std::string& from,
                                         const std::string& to) {
    std::set<std::string> codes;
    for (const auto& m : models)
        if (m.source_lang == from && m.target_lang != to && m.target_lang != from) codes.insert(m.target_lang);
    std::vector<std::string> out;
    if (codes.erase(kPivotLanguage)) out.push_back(kPivotLanguage);
    out.insert(out.end(), codes.begin(), codes.end());
    return out;
}

std::optional<TranslationRoute> findRoute(const std::vector<BundledModel>& models, const std::string& from,
                                          const std::string& to) {
    if (auto direct = directModel(models, from, to)) return TranslationRoute{{*direct}};
    for (const auto& middle : middleLanguages(models, from, to)) {
        auto first = directModel(models, from, middle);
        auto second = directModel(models, middle, to);
        if (first && second) return TranslationRoute{{*first, *second}};
    }
    return std::nullopt;
}

std::string pairText(const std::string& from, const std::string& to) {
    return util::forMessage(from) + " -> " + util::forMessage(to);
}

std::string installedText(const std::vector<BundledModel>& models) {
    if (models.empty()) return "none";
    std::string out;
    for (const auto& m : models)
        out +=
            (out.empty() ? "" : ", ") + pairText(m.source_lang, m.target_lang) + " (" + util::forMessage(m.name) + ")";
    return out;
}

// Not a question of what is installed: two languages, and different ones. argos-translate answers a
// language to itself with an IdentityTranslation (translate.py, get_installed_languages: "Add
// translations so everything can translate to itself"), the text given back; AttnLab refuses, as no
// model's attention would be there to show.
void checkPair(const std::string& from, const std::string& to) {
    if (from.empty() || to.empty()) throw InputError("a route needs both languages (--from and --to)");
    if (from == to)
        throw InputError("--from and --to name the same language (" + util::forMessage(from) +
                         "): no model translates it, so there is no attention to show (argos-translate gives "
                         "the text back unchanged)");
}

}  // namespace

TranslationRoute chooseRoute(const std::vector<BundledModel>& models, const std::string& from, const std::string& to) {
    checkPair(from, to);
    if (auto route = findRoute(models, from, to)) return *route;
    throw InputError("no installed model translates " + pairText(from, to) +
                     ", directly or through a middle language (through " + kPivotLanguage +
                     " first, as argos-translate pivots); installed: " + installedText(models));
}

std::vector<BundledModel> installedModels() {
    auto out = bundledModels();
    const auto argos = installedArgosModels();
    out.insert(out.end(), argos.begin(), argos.end());
    return out;
}

TranslationRoute chooseInstalledRoute(const std::string& from, const std::string& to) {
    checkPair(from, to);  // its message names no folder: none is concerned
    try {
        return chooseRoute(installedModels(), from, to);
    } catch (const InputError& e) {
        const std::string folder = package::argosPackagesDir();
        std::error_code ec;
        const std::string where = folder.empty() ? std::string("no folder: neither ARGOS_PACKAGES_DIR nor HOME is set")
                                  : std::filesystem::is_directory(folder, ec)
                                      ? util::forMessage(folder)
                                      : util::forMessage(folder) + ", which does not exist";
        throw InputError(std::string(e.what()) + " (the bundled models and the Argos Translate packages in " + where +
                         ")");
    }
}

std::vector<TranslationRoute> pivotRoutes(const std::vector<BundledModel>& models) {
    std::set<std::string> sources, targets;
    for (const auto& m : models) {
        sources.insert(m.source_lang);
        targets.insert(m.target_lang);
    }
    std::vector<TranslationRoute> out;
    for (const auto& from : sources)
        for (const auto& to : targets) {
            if (from == to || from.empty() || to.empty()) continue;
            auto route = findRoute(models, from, to);
            if (route && route->pivot()) out.push_back(std::move(*route));
        }
    return out;
}

namespace {
// A language code as part of a file name: letters, digits, '_' and '-' kept, anything else '_' (a
// package's metadata.json could name its language "../x").
std::string fileNamePart(const std::string& code) {
    std::string out = code;
    for (char& c : out)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') c = '_';
    return out;
}
}  // namespace

std::string legFileName(const std::string& path, size_t leg, const BundledModel& model) {
    const std::filesystem::path p(path);
    const std::string tag =
        ".leg" + std::to_string(leg) + "-" + fileNamePart(model.source_lang) + "-" + fileNamePart(model.target_lang);
    const std::string ext = p.extension().string();
    return (p.parent_path() / (p.stem().string() + tag + ext)).string();
}

}  // namespace attnlab
