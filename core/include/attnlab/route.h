#pragma once
// A route from one language to another among the installed models: one model when one translates the
// pair, else two through a middle language (pivot translation), as argos-translate chains its packages.
//
// argos-translate's rule (argostranslate/translate.py, get_installed_languages: "Pivot through
// intermediate languages to add translations that don't already exist"; Language.get_translation,
// CompositeTranslation): every installed package is a translation from its from_code to its to_code;
// a pair with a package of its own uses it (the first one listed); a pair without one gets a
// CompositeTranslation of two translations, the first leg's output being the second leg's input.
// The packages it pairs come in the order its folder listing gives them (package.py,
// get_installed_packages: Path.iterdir, an order the file system chooses), and the index's packages
// all translate from or into English, so in practice the middle language is English. AttnLab keeps
// the rule and makes the choice fixed: a direct model first; else through English; else through
// another middle language (by its code); among models of one pair, the first of the list given
// (installedModels: the bundled ones, then the Argos packages by language names and folder). Routes
// of more than two legs (argos-translate may chain its composites further) are not taken.

#include <attnlab/package.h>

#include <string>
#include <vector>

namespace attnlab {

// The language argos-translate's index pivots through.
inline constexpr const char* kPivotLanguage = "en";

struct TranslationRoute {
    std::vector<BundledModel> legs;  // one (direct) or two (from -> middle, middle -> to)
    bool pivot() const { return legs.size() == 2; }
    // The middle language's code (empty for a direct route).
    std::string middle() const { return pivot() ? legs[0].target_lang : std::string(); }
    std::string from() const { return legs.empty() ? std::string() : legs.front().source_lang; }
    std::string to() const { return legs.empty() ? std::string() : legs.back().target_lang; }
};

// The route from `from` to `to` among `models` (language codes compared as they are written, as
// argos-translate compares them). Throws InputError when from and to are the same, or when no model
// and no two chained models translate the pair: the message names the pair and every installed
// direction.
TranslationRoute chooseRoute(const std::vector<BundledModel>& models, const std::string& from, const std::string& to);

// The models a route may use: the bundled ones, then the Argos Translate packages installed
// (installedArgosModels: $ARGOS_PACKAGES_DIR, else argos-translate's own folder).
std::vector<BundledModel> installedModels();
// chooseRoute over installedModels(); its error also names the Argos packages' folder.
TranslationRoute chooseInstalledRoute(const std::string& from, const std::string& to);

// Every pair that only a pivot translates (no model of its own), with its route, sorted by the
// pair's codes: what the app's direction switch offers beside the models.
std::vector<TranslationRoute> pivotRoutes(const std::vector<BundledModel>& models);

// The file a pivot's leg writes when the whole translation was asked to write `path`: the leg's
// number (1-based) and its languages before the extension ("attention.json" -> for leg 1 of de ->
// fr through en "attention.leg1-de-en.json"; without an extension the same at the end).
std::string legFileName(const std::string& path, size_t leg, const BundledModel& model);

}  // namespace attnlab
