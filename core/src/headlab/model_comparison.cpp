#include <attnlab/model_comparison.h>

#include <attnlab/language_detect.h>
#include <attnlab/unknown_languages.h>

namespace attnlab {

namespace {

// The language part of a model's code: "en" of "en", "__en__" and "en_XX"; "eng" of "eng_Latn".
std::string languagePart(std::string code) {
    if (code.size() > 4 && code.rfind("__", 0) == 0 && code.compare(code.size() - 2, 2, "__") == 0)
        code = code.substr(2, code.size() - 4);
    return code.substr(0, code.find_first_of("_-"));
}

// Whether the model code `model_code` names the ISO 639-1 language `iso1` (modelLanguageFor's rules).
bool namesLanguage(const std::string& iso1, const std::string& model_code) {
    DetectedLanguage d;
    d.code = iso1;
    return modelLanguageFor(d, {model_code}).code == model_code;
}

std::string pair(const std::string& source, const std::string& target) { return source + " → " + target; }

ComparisonPlan planMultilingual(const std::string& source, const std::string& target, const PackageConfig& other,
                                const std::string& name) {
    std::vector<std::string> codes;
    for (const auto& l : other.languages) codes.push_back(l.code);
    ComparisonPlan plan;
    const auto s = sameLanguage(source, codes), t = sameLanguage(target, codes);
    if (!s || !t) {
        plan.problem = name + " has no language matching '" + (s ? target : source) + "' among its " +
                       std::to_string(codes.size()) + " languages";
        return plan;
    }
    plan.source_language = *s;
    plan.target_language = *t;
    return plan;
}

}  // namespace

std::optional<std::string> sameLanguage(const std::string& code, const std::vector<std::string>& codes) {
    for (const auto& c : codes)
        if (c == code) return c;
    const std::string mine = languagePart(code);
    if (mine.empty()) return std::nullopt;
    for (const auto& c : codes) {
        const std::string theirs = languagePart(c);
        if (theirs.size() == 2 && mine.size() == 2 ? theirs == mine
            : theirs.size() == 2                   ? namesLanguage(theirs, code)
            : mine.size() == 2                     ? namesLanguage(mine, c)
                                                   : false)  // two ISO 639-3 codes: only the same code
            return c;
    }
    return std::nullopt;
}

ComparisonPlan planComparison(const std::string& source, const std::string& target, const PackageConfig& other,
                              const std::string& other_name) {
    ComparisonPlan plan;
    if (!unknown_language::known(source) || !unknown_language::known(target)) {
        plan.problem = "the loaded model does not say which languages it translates, so " + other_name +
                       "'s cannot be matched to them";
        return plan;
    }
    if (other.multilingual()) return planMultilingual(source, target, other, other_name);
    const std::string& from = other.source_lang;
    const std::string& to = other.target_lang;
    if (!unknown_language::known(from) || !unknown_language::known(to)) {
        plan.problem = other_name + " does not say which languages it translates (its files name none), so it " +
                       "cannot be matched to " + pair(source, target);
        return plan;
    }
    if (sameLanguage(source, {from}) && sameLanguage(target, {to})) return plan;
    if (sameLanguage(source, {to}) && sameLanguage(target, {from})) {
        plan.reversed = true;
        return plan;
    }
    plan.problem = other_name + " translates " + pair(from, to) + " only; the comparison needs " +
                   pair(source, target) + " or the other way round";
    return plan;
}

}  // namespace attnlab
