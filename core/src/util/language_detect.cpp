#include <attnlab/language_detect.h>

#include "util/text.h"

// CLD2's header uses FILE without including <cstdio>.
#include <cstdio>

#include <cld2/public/compact_lang_det.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <string_view>
#include <utility>

namespace attnlab {

namespace {

// ISO 639-1 -> ISO 639-3 for the languages CLD2 names by a two-letter code (CLD2::LanguageCode,
// cld2/internal/lang_script.h), from Debian's iso-codes (/usr/share/iso-codes/json/iso_639-3.json:
// alpha_2 -> alpha_3); sorted by the first.
constexpr std::pair<std::string_view, std::string_view> kIso3[] = {
    {"aa", "aar"}, {"ab", "abk"}, {"af", "afr"}, {"ak", "aka"}, {"am", "amh"}, {"ar", "ara"}, {"as", "asm"},
    {"ay", "aym"}, {"az", "aze"}, {"ba", "bak"}, {"be", "bel"}, {"bg", "bul"}, {"bi", "bis"}, {"bn", "ben"},
    {"bo", "bod"}, {"br", "bre"}, {"bs", "bos"}, {"ca", "cat"}, {"co", "cos"}, {"cs", "ces"}, {"cy", "cym"},
    {"da", "dan"}, {"de", "deu"}, {"dv", "div"}, {"dz", "dzo"}, {"ee", "ewe"}, {"el", "ell"}, {"en", "eng"},
    {"eo", "epo"}, {"es", "spa"}, {"et", "est"}, {"eu", "eus"}, {"fa", "fas"}, {"fi", "fin"}, {"fj", "fij"},
    {"fo", "fao"}, {"fr", "fra"}, {"fy", "fry"}, {"ga", "gle"}, {"gd", "gla"}, {"gl", "glg"}, {"gn", "grn"},
    {"gu", "guj"}, {"gv", "glv"}, {"ha", "hau"}, {"he", "heb"}, {"hi", "hin"}, {"hr", "hrv"}, {"ht", "hat"},
    {"hu", "hun"}, {"hy", "hye"}, {"ia", "ina"}, {"id", "ind"}, {"ie", "ile"}, {"ig", "ibo"}, {"ik", "ipk"},
    {"is", "isl"}, {"it", "ita"}, {"iu", "iku"}, {"ja", "jpn"}, {"jv", "jav"}, {"ka", "kat"}, {"kk", "kaz"},
    {"kl", "kal"}, {"km", "khm"}, {"kn", "kan"}, {"ko", "kor"}, {"ks", "kas"}, {"ku", "kur"}, {"ky", "kir"},
    {"la", "lat"}, {"lb", "ltz"}, {"lg", "lug"}, {"ln", "lin"}, {"lo", "lao"}, {"lt", "lit"}, {"lv", "lav"},
    {"mg", "mlg"}, {"mi", "mri"}, {"mk", "mkd"}, {"ml", "mal"}, {"mn", "mon"}, {"mr", "mar"}, {"ms", "msa"},
    {"mt", "mlt"}, {"my", "mya"}, {"na", "nau"}, {"ne", "nep"}, {"nl", "nld"}, {"nn", "nno"}, {"no", "nor"},
    {"nr", "nbl"}, {"ny", "nya"}, {"oc", "oci"}, {"om", "orm"}, {"or", "ori"}, {"os", "oss"}, {"pa", "pan"},
    {"pl", "pol"}, {"ps", "pus"}, {"pt", "por"}, {"qu", "que"}, {"rm", "roh"}, {"rn", "run"}, {"ro", "ron"},
    {"ru", "rus"}, {"rw", "kin"}, {"sa", "san"}, {"sd", "snd"}, {"sg", "sag"}, {"si", "sin"}, {"sk", "slk"},
    {"sl", "slv"}, {"sm", "smo"}, {"sn", "sna"}, {"so", "som"}, {"sq", "sqi"}, {"sr", "srp"}, {"ss", "ssw"},
    {"st", "sot"}, {"su", "sun"}, {"sv", "swe"}, {"sw", "swa"}, {"ta", "tam"}, {"te", "tel"}, {"tg", "tgk"},
    {"th", "tha"}, {"ti", "tir"}, {"tk", "tuk"}, {"tl", "tgl"}, {"tn", "tsn"}, {"to", "ton"}, {"tr", "tur"},
    {"ts", "tso"}, {"tt", "tat"}, {"tw", "twi"}, {"ug", "uig"}, {"uk", "ukr"}, {"ur", "urd"}, {"uz", "uzb"},
    {"ve", "ven"}, {"vi", "vie"}, {"vo", "vol"}, {"wo", "wol"}, {"xh", "xho"}, {"yi", "yid"}, {"yo", "yor"},
    {"za", "zha"}, {"zh", "zho"}, {"zu", "zul"},
};

// The individual language NLLB-200 names where ISO 639-3 has a macrolanguage (NLLB's FLORES-200 codes,
// as its tokenizer's special_tokens_map.json lists them: arb_Arab, pes_Arab, swh_Latn, ...).
constexpr std::pair<std::string_view, std::string_view> kIndividual[] = {
    {"ar", "arb"}, {"ay", "ayr"}, {"az", "azj"}, {"fa", "pes"}, {"ku", "kmr"}, {"lv", "lvs"}, {"mg", "plt"},
    {"mn", "khk"}, {"ms", "zsm"}, {"ne", "npi"}, {"no", "nob"}, {"om", "gaz"}, {"or", "ory"}, {"ps", "pbt"},
    {"qu", "quy"}, {"sq", "als"}, {"sw", "swh"}, {"uz", "uzn"}, {"yi", "ydd"}};

template <size_t N>
std::string_view lookup(const std::pair<std::string_view, std::string_view> (&table)[N], std::string_view key) {
    for (const auto& [from, to] : table)
        if (from == key) return to;
    return {};
}

// CLD2's codes for the few languages it names by a withdrawn ISO code.
std::string modernCode(std::string code) {
    if (code == "iw") return "he";
    if (code == "jw") return "jv";
    return code;
}

struct ModelCode {
    std::string language;  // without M2M100's "__" and what follows "_" or "-"
    std::string script;    // NLLB's four letters ("Latn"), else empty
};

ModelCode splitModelCode(std::string code) {
    if (code.size() > 4 && code.rfind("__", 0) == 0 && util::endsWith(code, "__"))
        code = code.substr(2, code.size() - 4);
    const size_t cut = code.find_first_of("_-");
    if (cut == std::string::npos) return {code, {}};
    const std::string rest = code.substr(cut + 1);
    return {code.substr(0, cut), rest.size() == 4 ? rest : std::string()};
}

std::string joined(const std::vector<std::string>& codes) {
    std::string s;
    for (const auto& c : codes) s += (s.empty() ? "" : ", ") + c;
    return s;
}

// Letters as a reader counts them: code points that are not spaces, digits, ASCII punctuation or the
// general and CJK punctuation blocks (U+2000-U+206F, U+3000-U+303F, U+FF01-U+FF0F).
int letterCount(std::string_view text) {
    int n = 0;
    for (size_t i = 0; i < text.size();) {
        const size_t len = util::utf8SequenceLength(static_cast<unsigned char>(text[i]));
        const long cp = len == 1 ? static_cast<unsigned char>(text[i]) : util::decodeUtf8(text, i, len);
        i += cp < 0 ? 1 : len;
        if (cp < 0x80) {
            n += std::isalpha(int(cp)) != 0;
        } else {
            n += !((cp >= 0x2000 && cp <= 0x206F) || (cp >= 0x3000 && cp <= 0x303F) || (cp >= 0xFF01 && cp <= 0xFF0F) ||
                   cp == 0xA0);
        }
    }
    return n;
}

// CLD2's name ("GERMAN", "ChineseT") as English writes it: "German", "Chinese (traditional)".
std::string englishName(CLD2::Language l, const std::string& code) {
    if (code == "zh-Hant") return "Chinese (traditional)";
    std::string name = CLD2::LanguageName(l);
    for (size_t i = 1; i < name.size(); ++i)
        name[i] = name[i - 1] == '_' || name[i - 1] == ' ' ? name[i]
                                                           : char(std::tolower(static_cast<unsigned char>(name[i])));
    for (char& c : name)
        if (c == '_') c = ' ';
    return name;
}

// What CLD2 is given: `text` up to kMostDetectedBytes (cut before a character, not inside one), its control
// characters other than tab and line ends (C0, DEL, C1: a form feed or an escape in a text file) made spaces.
// ExtDetectLanguageSummaryCheckUTF8 reads only "interchange-valid" UTF-8 (cld2/public/compact_lang_det.h) and
// stops at the first control character, so such a text would read as not UTF-8.
constexpr size_t kMostDetectedBytes = size_t(1) << 24;
std::string forCld2(const std::string& text) {
    size_t length = std::min(text.size(), kMostDetectedBytes);
    while (length > 0 && length < text.size() && (static_cast<unsigned char>(text[length]) & 0xC0) == 0x80) --length;
    std::string out = text.substr(0, length);
    for (size_t i = 0; i < out.size(); ++i) {
        const auto c = static_cast<unsigned char>(out[i]);
        const bool c1 = c == 0xC2 && i + 1 < out.size() && static_cast<unsigned char>(out[i + 1]) >= 0x80 &&
                        static_cast<unsigned char>(out[i + 1]) <= 0x9F;  // U+0080..U+009F
        if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F) out[i] = ' ';
        if (c1) out[i] = out[i + 1] = ' ';
    }
    return out;
}

}  // namespace

DetectedLanguage detectLanguage(const std::string& text) {
    DetectedLanguage d;
    CLD2::Language top[3];
    int percent[3] = {0, 0, 0};
    double scores[3];
    int letters = 0, valid_prefix = 0;  // CLD2's count of letter bytes (unused: letterCount counts characters)
    bool reliable = false;
    const std::string given = forCld2(text);
    const CLD2::Language l =
        CLD2::ExtDetectLanguageSummaryCheckUTF8(given.data(), int(given.size()), /*is_plain_text=*/true, nullptr, 0,
                                                top, percent, scores, nullptr, &letters, &reliable, &valid_prefix);
    if (size_t(valid_prefix) < given.size()) {
        d.problem = "not UTF-8 text";
        return d;
    }
    d.letters = letterCount(given);  // of what CLD2 looked at (at most the first 16 MiB)
    d.percent = percent[0];
    d.reliable = reliable;
    const std::string code = modernCode(CLD2::LanguageCode(l));
    const bool known = l != CLD2::UNKNOWN_LANGUAGE && l != CLD2::TG_UNKNOWN_LANGUAGE && code.rfind("xx-", 0) != 0;
    if (known) d.name = englishName(l, code);
    if (d.letters < kMinDetectLetters) {
        d.problem = "too short to tell its language (" + std::to_string(d.letters) + " letters; at least " +
                    std::to_string(kMinDetectLetters) + " are needed)";
    } else if (!known) {
        d.problem = "its language is not one CLD2 recognises";
    } else if (!reliable) {
        d.problem = "unsure of its language (perhaps " + d.name + ", " + std::to_string(d.percent) + " % of it)";
    } else {
        d.code = code;
    }
    return d;
}

LanguageChoice modelLanguageFor(const DetectedLanguage& detected, const std::vector<std::string>& model_codes) {
    if (detected.code.empty()) return {{}, detected.problem};
    const size_t dash = detected.code.find('-');
    const std::string primary = detected.code.substr(0, dash);
    const std::string script = detected.code == "zh-Hant" ? "Hant" : primary == "zh" ? "Hans" : "";
    const std::string_view iso3 = lookup(kIso3, primary), individual = lookup(kIndividual, primary);
    std::vector<std::string> found;
    for (const auto& c : model_codes) {
        const ModelCode m = splitModelCode(c);
        const bool same = m.language == primary || (!iso3.empty() && m.language == iso3) ||
                          (!individual.empty() && m.language == individual) ||
                          (script == "Hant" && m.language == "zt");  // Argos's traditional Chinese
        if (!same || (!script.empty() && !m.script.empty() && m.script != script)) continue;
        found.push_back(c);
    }
    if (found.size() > 1 && !script.empty()) {  // the script's own form over one without a script
        std::vector<std::string> own;
        for (const auto& c : found) {
            const ModelCode m = splitModelCode(c);
            if (m.script == script || (script == "Hant" && m.language == "zt")) own.push_back(c);
        }
        if (!own.empty()) found = own;
    }
    if (found.empty())
        return {{}, detected.name + " (" + detected.code + "), which is not one of the model's languages"};
    if (found.size() > 1)
        return {{},
                detected.name + ", which the model has in " + std::to_string(found.size()) + " forms (" +
                    joined(found) + "): choose one"};
    return {found.front(), {}};
}

}  // namespace attnlab
