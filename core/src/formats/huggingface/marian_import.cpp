#include "formats/huggingface/marian_import.h"

#include "formats/huggingface/hf_config.h"
#include "formats/huggingface/hf_multilingual.h"
#include "formats/huggingface/hf_weights.h"
#include "formats/safetensors/safetensors.h"
#include "formats/torch/torch_bin.h"
#include "package/package_io.h"
#include "tokenizer/text_codec.h"
#include "util/json_parse.h"
#include "util/small_file.h"
#include "util/text.h"

#include <attnlab/errors.h>
#include <attnlab/hub.h>
#include <attnlab/package.h>
#include <attnlab/unknown_languages.h>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

namespace attnlab::package {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kTokenizerConfig = "tokenizer_config.json";
// The card read for the languages: OPUS-MT's are a few kB (docs/reliability.md).
constexpr size_t kMaxCardBytes = 1u << 20;
constexpr size_t kMaxCardLanguage = 40;  // "de+en+fr…": a longer value is not taken for codes

std::string trimmed(const std::string& s) {
    const size_t b = s.find_first_not_of(" \t\r"), e = s.find_last_not_of(" \t\r");
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// A language code as a card writes it ("en", "de+en", "zh_Hant"): short, letters, digits, _ + , -.
bool languageCode(const std::string& s) {
    return !s.empty() && s.size() <= kMaxCardLanguage && std::all_of(s.begin(), s.end(), [](unsigned char c) {
        return std::isalnum(c) || c == '_' || c == '+' || c == ',' || c == '-';
    });
}

// OPUS-MT's cards (README.md, or MODEL_CARD.md beside it) say "* source languages: en" and
// "* target languages: mg"; nothing when a card is absent, too large or says neither.
std::optional<std::pair<std::string, std::string>> cardLanguages(const std::string& dir) {
    for (const char* name : {package_files::kModelCard, "README.md"}) {
        const fs::path p = fs::path(dir) / name;
        std::string text;
        try {
            if (!util::optionalFilePresent(p.string())) continue;
            text = util::readSmallFile(p.string(), kMaxCardBytes);
        } catch (const Error&) {
            continue;  // the card is optional: the languages come from elsewhere
        }
        std::string source, target;
        std::istringstream lines(text);
        for (std::string line; std::getline(lines, line);) {
            const size_t colon = line.find(':');
            if (colon == std::string::npos) continue;
            std::string key = line.substr(0, colon), value = trimmed(line.substr(colon + 1));
            key.erase(0, key.find_first_not_of("*- \t"));
            if (key == "source languages" || key == "source language") source = value;
            if (key == "target languages" || key == "target language") target = value;
        }
        if (languageCode(source) && languageCode(target)) return std::make_pair(source, target);
    }
    return std::nullopt;
}

// The languages: tokenizer_config.json's source_lang/target_lang, else the model card's, else the
// directory's name (opus-mt-en-de -> en, de; a snapshot of the Hugging Face cache, whose folder is a
// commit, by its repository's: hubNameOfSnapshot), else the codes of unknown languages.
std::pair<std::string, std::string> languagesOf(const std::string& dir) {
    const fs::path tc = fs::path(dir) / kTokenizerConfig;
    if (util::optionalFilePresent(tc.string())) {
        const json j = readJson(tc.string());
        if (j.is_object() && j.value("source_lang", json()).is_string() && j.value("target_lang", json()).is_string())
            return {j["source_lang"].get<std::string>(), j["target_lang"].get<std::string>()};
    }
    if (const auto card = cardLanguages(dir)) return *card;
    std::string name = fs::path(dir).lexically_normal().filename().string();
    if (name.empty()) name = fs::path(dir).lexically_normal().parent_path().filename().string();
    if (const auto hub = hubNameOfSnapshot(dir)) name = fs::path(hub->repo).filename().string();  // ORG/NAME
    const size_t dash2 = name.rfind('-');
    const size_t dash1 = dash2 == std::string::npos || dash2 == 0 ? std::string::npos : name.rfind('-', dash2 - 1);
    if (dash1 != std::string::npos && dash2 > dash1 + 1 && dash2 + 1 < name.size())
        return {name.substr(dash1 + 1, dash2 - dash1 - 1), name.substr(dash2 + 1)};
    return {unknown_language::kSource, unknown_language::kTarget};
}

// Multilingual tc-big models with a target vocabulary of their own (target_vocab.json,
// tokenizer_config.json's separate_vocabs): not supported yet, refused rather than read wrongly.
void refuseSeparateVocabularies(const std::string& dir) {
    std::error_code ec;
    if (fs::exists(fs::path(dir) / "target_vocab.json", ec))
        throw PackageError(dir + ": has target_vocab.json: separate target vocabularies are not supported yet");
    const fs::path tc = fs::path(dir) / kTokenizerConfig;
    if (!util::optionalFilePresent(tc.string())) return;
    const json j = readJson(tc.string());
    if (j.is_object() && j.value("separate_vocabs", json(false)) == json(true))
        throw PackageError(tc.string() +
                           ": separate_vocabs is true: separate target vocabularies are not supported yet");
}

}  // namespace

bool isHuggingFaceDirectory(const std::string& dir) {
    const fs::path p = fs::path(dir) / package_files::kConfig;
    std::error_code ec;
    if (!fs::is_regular_file(p, ec)) return false;
    try {
        const json j = util::parseJson(util::readSmallFile(p.string(), 4u << 20), p.string());
        return j.is_object() && j.contains("model_type") && !j.contains("format_version");
    } catch (const std::exception&) {
        return false;  // an AttnLab reader reports what is wrong with it
    }
}

namespace {
// config.json's own keys onto AttnLab's fields (what readMarianConfig then completes from the
// directory's other files).
PackageConfig mapMarianConfig(const HfConfig& c) {
    if (!c.j.is_object()) c.fail("expected a JSON object");
    const std::string type = c.string("model_type", "");
    if (type != "marian") refuseModelType(c, type);
    if (c.boolean("normalize_before", false))
        c.fail(
            "normalize_before is true: pre-layer-norm models are not supported (AttnLab's model is post-layer-norm)");
    if (c.boolean("add_final_layer_norm", false))
        c.fail("add_final_layer_norm is true: a final layer norm after the stacks is not supported");
    const auto [d_model, heads] = widthAndHeads(c);
    const int64_t vocab = c.integer("vocab_size");
    if (c.integer("decoder_vocab_size", vocab) != vocab)
        c.fail("decoder_vocab_size differs from vocab_size: separate target vocabularies are not supported yet");

    PackageConfig pc;
    pc.source_lang = unknown_language::kSource;
    pc.target_lang = unknown_language::kTarget;
    ModelConfig& m = pc.model;
    m.n_src_vocab = m.n_trg_vocab = vocab;
    mapBartDimensions(c, d_model, heads, m);
    m.n_position = c.integer("max_position_embeddings", 512);
    m.emb_src_trg_weight_sharing = c.boolean("share_encoder_decoder_embeddings", true);
    m.ffn_activation = activationOf(c);
    m.emb_layer_norm = false;  // MarianEncoder/MarianDecoder have no layer norm on the embeddings
    m.pos_encoding = "half";   // MarianSinusoidalPositionalEmbedding
    m.pos_offset = 0;
    m.logits_bias = true;  // MarianMTModel adds final_logits_bias
    pc.eos_idx = c.integer("eos_token_id");
    pc.bos_idx = c.integer("decoder_start_token_id", m.trg_pad_idx);  // what starts the decoder
    pc.unk_idx = 1;  // vocab.json's <unk> (readMarianConfig); 1 in every OPUS-MT vocabulary
    checkBadWords(c, m.trg_pad_idx);
    pc.source_bos = false;  // MarianTokenizer: pieces + </s>
    pc.source_eos = true;
    pc.tokenizer = "marian";
    pc.num_beams = static_cast<int>(std::clamp<int64_t>(c.integer("num_beams", 0), 0, 64));
    pc.max_length = static_cast<int>(std::clamp<int64_t>(c.integer("max_length", 0), 0, 4096));
    try {
        pc.validate();
    } catch (const ConfigError& e) {
        c.fail(e.what());
    }
    return pc;
}

}  // namespace

PackageConfig marianConfigFromJson(const std::string& text, const std::string& origin) {
    return mapMarianConfig(HfConfig{util::parseJson(text, origin), origin});
}

PackageConfig readMarianConfig(const std::string& dir) {
    const std::string path = (fs::path(dir) / package_files::kConfig).string();
    const HfConfig c{readJson(path), path};
    PackageConfig pc = mapMarianConfig(c);
    std::tie(pc.source_lang, pc.target_lang) = languagesOf(dir);
    refuseSeparateVocabularies(dir);
    const auto vocab_json =
        readMarianVocab((fs::path(dir) / marian_files::kVocab).string(), pc.model.n_trg_vocab);  // names its problems
    pc.unk_idx = vocab_json.at("<unk>");
    if (vocab_json.at("</s>") != pc.eos_idx)
        c.fail("eos_token_id is " + std::to_string(pc.eos_idx) + " but vocab.json gives '</s>' the id " +
               std::to_string(vocab_json.at("</s>")));
    if (vocab_json.at("<pad>") != pc.model.trg_pad_idx)
        c.fail("pad_token_id is " + std::to_string(pc.model.trg_pad_idx) + " but vocab.json gives '<pad>' the id " +
               std::to_string(vocab_json.at("<pad>")));
    decodingDefaults(dir, c, pc);
    try {
        pc.validate();
    } catch (const ConfigError& e) {
        c.fail(e.what());
    }
    return pc;
}

std::string marianWeightsPath(const std::string& dir) { return hfWeightFiles(dir).front(); }

model::Transformer loadMarianWeights(const std::string& dir, const PackageConfig& config, std::string* stored_dtype,
                                     model::ComputeType held) {
    return loadHfWeights(dir, config, "MarianMTModel", stored_dtype, held);
}

std::string marianModelCard(const std::string& dir, const PackageConfig& c) {
    const auto& m = c.model;
    std::string card = "# " + c.source_lang + "→" + c.target_lang + " (imported MarianMT model)\n\n";
    card += "Imported by `attnlab-cli import` from a Hugging Face MarianMT directory (`" +
            fs::path(dir).lexically_normal().filename().string() + "`, weights from `" +
            fs::path(marianWeightsPath(dir)).filename().string() +
            "`). The source model's own card and licence apply; AttnLab changed no weight.\n\n";
    card += "- " + std::to_string(m.encoderLayers()) + " encoder and " + std::to_string(m.decoderLayers()) +
            " decoder layers, " + std::to_string(m.n_head) + " heads, d_model " + std::to_string(m.d_model) +
            ", vocabulary " + std::to_string(m.n_trg_vocab) + "\n";
    card += "- activation " + m.ffn_activation + ", eos " + std::to_string(c.eos_idx) + ", pad = decoder start " +
            std::to_string(m.trg_pad_idx) + ", default beam " + std::to_string(c.num_beams) + ", max length " +
            std::to_string(c.max_length) + "\n";
    card += "- tokenizer: source.spm, target.spm and vocab.json, as MarianTokenizer uses them\n";
    return card;
}

}  // namespace attnlab::package
