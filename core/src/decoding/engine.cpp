#include "decoding/engine.h"

#include "formats/argos/argos_package.h"
#include "formats/ctranslate2/ct2_model.h"
#include "formats/ctranslate2/ct2_weights.h"
#include "formats/huggingface/hf_multilingual.h"
#include "formats/huggingface/hf_weights.h"
#include "formats/huggingface/marian_import.h"
#include "model/low_precision.h"
#include "package/package_io.h"
#include "util/device.h"
#include "util/small_file.h"
#include "util/tensor_convert.h"
#include "util/text.h"
#include "util/torch_errors.h"

#include <attnlab/device.h>
#include <attnlab/errors.h>
#include <attnlab/package.h>

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <numeric>
#include <optional>
#include <tuple>

namespace attnlab::decoding {
namespace fs = std::filesystem;

namespace {
using Clock = std::chrono::steady_clock;
double secondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

constexpr size_t kMaxSentenceBytes = 64 * 1024;

bool isBlank(const std::string& s) {
    return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isspace(c); });
}

using util::translatingTorchErrors;

// The sentences run() decodes together: max_batch_size, or one at a time for the reference's search.
size_t searchBatchSize(const DecodingOptions& o) {
    return o.reference_beam ? 1 : size_t(std::max(o.max_batch_size, 1));
}

// The learned relative position tables of every self-attention (attnlab/positional.h), as float32 copies.
RelativePositionTables relativePositionTables(model::TransformerImpl& m) {
    RelativePositionTables t;
    t.max_distance = static_cast<int>(m.config().max_relative_positions);
    if (t.empty()) return t;
    torch::NoGradGuard no_grad;
    for (AttentionKind kind : {AttentionKind::EncoderSelf, AttentionKind::DecoderSelf}) {
        const bool enc = kind == AttentionKind::EncoderSelf;
        for (int64_t l = 0; l < m.config().layers(kind); ++l) {
            const auto a = m.attention(kind, l);
            (enc ? t.encoder_keys : t.decoder_keys)
                .push_back(util::toMatrix(a->relative_position_keys.to(torch::kCPU)));
            (enc ? t.encoder_values : t.decoder_values)
                .push_back(util::toMatrix(a->relative_position_values.to(torch::kCPU)));
        }
    }
    return t;
}
}  // namespace

// ---------------------------------------------------------------- loading
Engine::Engine(const std::string& dir, const TranslatorOptions& options) : m_device(torch::kCPU) {
    const auto t0 = Clock::now();
    options.validate();
    setComputeThreads(options.num_threads);
    m_threads = requestedThreads(options.num_threads);
    // An AttnLab package, a Hugging Face directory as it is downloaded (MarianMT, M2M100 / NLLB-200,
    // mBART) or a CTranslate2 model (a directory, an Argos Translate package or .argosmodel).
    if (auto problem = package::modelBinProblem(dir)) throw PackageError(*problem);
    if (package::isCtranslate2Model(dir)) {
        loadCtranslate2(dir, options);
    } else {
        loadHuggingFaceOrPackage(dir, options);
        m_info.confidence = readConfidenceCalibration(dir);
        m_info.examples = readExamples(dir);
    }
    m_info.package_dir = fs::absolute(dir).string();
    m_info.config = m_config;
    m_info.vocab_size = m_tokenizer->vocabSize();
    m_info.device = m_device.str();
    m_info.parameters = countParameters();
    m_info.relative_positions = relativePositionTables(*m_model);
    m_info.load_seconds = secondsSince(t0);
}

void Engine::loadHuggingFaceOrPackage(const std::string& dir, const TranslatorOptions& options) {
    const bool hugging_face = package::isHuggingFaceDirectory(dir);
    std::optional<package::MultilingualModel> multilingual;
    if (hugging_face && package::isMultilingualDirectory(dir)) {
        multilingual = package::readMultilingualModel(dir);
        m_config = multilingual->config;
        auto& t = multilingual->tokenizer;
        m_tokenizer =
            pieceVocabularyCodec({t.spm_path, std::move(t.pieces), std::move(t.special), int(m_config.unk_idx)});
    } else {
        m_config = hugging_face ? package::readMarianConfig(dir) : readPackageConfig(dir);
        m_tokenizer = loadCodec(dir);
    }
    translatingTorchErrors("loading the model", [&] {
        m_device = util::resolveDevice(options.device);
        const model::ComputeType held = heldType(options);
        m_model = multilingual ? package::loadHfWeights(dir, m_config, multilingual->family, &m_info.stored_dtype, held)
                  : hugging_face ? package::loadMarianWeights(dir, m_config, &m_info.stored_dtype, held)
                                 : package::loadWeights(dir, m_config, &m_info.stored_dtype, held);
        placeModel(options);
    });
}

void Engine::loadCtranslate2(const std::string& path, const TranslatorOptions& options) {
    const package::Ct2Model ct2 = package::readCtranslate2Model(path);
    m_config = ct2.config;
    m_tokenizer = package::ctranslate2Codec(m_config, ct2.vocabularies, ct2.spm_path, ct2.argos);
    m_info.stored_dtype = ct2.stored_dtypes;
    translatingTorchErrors("loading the model", [&] {
        m_device = util::resolveDevice(options.device);
        m_model = package::loadCt2Weights(ct2, heldType(options));
        placeModel(options);
    });
}

model::ComputeType Engine::heldType(const TranslatorOptions& options) const {
    const model::ComputeType compute = model::parseComputeType(options.compute_type);
    return m_device.is_cpu() && !model::computeTypeUnavailable(compute) ? compute : model::ComputeType::Float32;
}

void Engine::placeModel(const TranslatorOptions& options) {
    m_model->to(m_device);
    m_model->eval();
    m_model->setPackedInference(options.packed_weights);
    const model::ComputeType compute = model::parseComputeType(options.compute_type);
    if (compute != model::ComputeType::Float32) {
        if (!m_device.is_cpu())
            throw ConfigError("compute type " + options.compute_type +
                              " runs on the CPU only: choose the CPU device, "
                              "or float32 on " +
                              m_device.str());
        if (auto why = model::computeTypeUnavailable(compute))
            throw ConfigError("compute type " + options.compute_type + ": " + *why);
        if (!m_model->droppedFloatWeights()) {  // (a loader that read them straight into `compute` has)
            m_model->setComputeType(compute);
            m_model->dropFloatWeights();  // the int8 / bfloat16 copies are the model from here on
        }
    }
    m_info.compute_type = options.compute_type;
}

Engine::Engine(const PackageConfig& cfg, model::Transformer m, std::unique_ptr<Tokenizer> tok)
    : m_config(cfg), m_tokenizer(sentencePieceCodec(std::move(tok))), m_model(std::move(m)), m_device(torch::kCPU) {
    m_device = m_model->decoder->trg_word_emb->weight.device();
    m_threads = at::get_num_threads();  // the trainer's choice, kept for its validation
    m_info.config = m_config;
    m_info.vocab_size = m_tokenizer->vocabSize();
    m_info.device = m_device.str();
    m_info.parameters = countParameters();
    m_info.relative_positions = relativePositionTables(*m_model);
}

Engine::~Engine() = default;

std::unique_ptr<TextCodec> Engine::loadCodec(const std::string& dir) const {
    if (m_config.tokenizer == "ctranslate2") {
        const std::string spm = (fs::path(dir) / package::ct2_files::kSentencePiece).string();
        return package::ctranslate2Codec(m_config, package::readCt2Vocabularies(dir),
                                         util::optionalFilePresent(spm) ? spm : std::string());
    }
    if (m_config.tokenizer == "marian") {
        if (m_config.model.n_src_vocab != m_config.model.n_trg_vocab)
            throw PackageError(dir + ": the marian tokenizer layout needs one vocabulary (n_src_vocab == n_trg_vocab)");
        std::vector<int> languages;  // left out of decoded text
        for (const auto& l : m_config.languages) languages.push_back(static_cast<int>(l.id));
        return marianCodec(dir, m_config.model.n_trg_vocab, languages);
    }
    const std::string tok_path = (fs::path(dir) / package_files::kTokenizer).string();
    util::requireFile(tok_path);
    std::unique_ptr<Tokenizer> tok;
    try {
        tok = std::make_unique<Tokenizer>(tok_path);
    } catch (const TokenizerError& e) {
        throw PackageError(e.what());
    }
    checkTokenizerMatches(dir, *tok);
    return sentencePieceCodec(std::move(tok));
}

const Tokenizer& Engine::tokenizer() const {
    if (const Tokenizer* t = m_tokenizer->sentencePiece()) return *t;
    throw InputError("this model has separate source and target tokenizers (" + m_config.tokenizer +
                     " layout); this operation needs one SentencePiece model");
}

void Engine::checkTokenizerMatches(const std::string& dir, const Tokenizer& tok) const {
    auto mismatch = [&](const std::string& field, int64_t value, int64_t in_tokenizer) {
        throw PackageError(dir + ": " + package_files::kConfig + " has " + field + " = " + std::to_string(value) +
                           " but " + package_files::kTokenizer + " has " + std::to_string(in_tokenizer));
    };
    const int vocab = tok.vocabSize();
    if (m_config.model.n_src_vocab != vocab) mismatch("n_src_vocab", m_config.model.n_src_vocab, vocab);
    if (m_config.model.n_trg_vocab != vocab) mismatch("n_trg_vocab", m_config.model.n_trg_vocab, vocab);
    if (m_config.bos_idx != tok.bosId()) mismatch("bos_idx", m_config.bos_idx, tok.bosId());
    if (m_config.eos_idx != tok.eosId()) mismatch("eos_idx", m_config.eos_idx, tok.eosId());
    if (m_config.unk_idx != tok.unkId()) mismatch("unk_idx", m_config.unk_idx, tok.unkId());
}

ParameterCounts Engine::countParameters() const {
    ParameterCounts c;
    for (const auto& p : m_model->named_parameters()) {
        const std::string& k = p.key();
        const int64_t n = p.value().numel();
        c.total += n;
        if (k == "decoder.trg_word_emb.weight")
            c.decoder_embedding += n;
        else if (k == "encoder.src_word_emb.weight")
            c.encoder_embedding += n;
        else if (k == "trg_word_prj.weight" || k == "final_logits_bias")
            c.output_projection += n;
        else if (k.rfind("encoder.layer_stack.", 0) == 0)
            c.encoder_layers += n;
        else if (k.rfind("decoder.layer_stack.", 0) == 0)
            c.decoder_layers += n;
        else
            c.layer_norms += n;
    }
    return c;
}

std::vector<std::vector<float>> Engine::positionalTable() const {
    return util::toMatrix(m_model->decoder->position_enc->pos_table[0]);
}

// ---------------------------------------------------------------- input
std::optional<std::string> Engine::inputProblem(const std::string& sentence) const {
    Cleaned unused;
    return inputProblem(sentence, unused);
}

namespace {
bool isAsciiSpace(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

// `text` without every occurrence of `chars`, whitespace runs left by them collapsed to one space;
// `origin` gets where each byte of the result is in `text`.
std::string withoutCharacters(const std::string& text, const std::vector<std::string>& chars,
                              std::vector<size_t>& origin) {
    std::string spaced = text;  // each removed character's bytes become spaces: offsets stay put
    for (const auto& c : chars)
        for (size_t at = spaced.find(c); at != std::string::npos; at = spaced.find(c, at))
            spaced.replace(at, c.size(), std::string(c.size(), ' '));
    std::string collapsed;
    origin.clear();
    for (size_t i = 0; i < spaced.size(); ++i) {
        const bool space = isAsciiSpace(spaced[i]);
        if (space && (collapsed.empty() || collapsed.back() == ' ')) continue;
        collapsed += space ? ' ' : spaced[i];
        origin.push_back(i);
    }
    while (!collapsed.empty() && collapsed.back() == ' ') collapsed.pop_back(), origin.pop_back();
    return collapsed;
}

// The whitespace word of `sentence` that each piece of `e` covers, found from the pieces' surfaces
// (the spans of `text` they cover, `origin` mapping them back to the sentence; SentencePiece gives the first of a
// character's byte pieces the character, the others nothing). A piece with no visible surface goes with the piece
// before it (a byte piece's continuation), or, when it starts a word ("▁" alone), with the one after
// it. Empty when the surfaces do not line up with the text.
std::vector<int> wordsOfPieces(const std::string& sentence, const std::string& text, const std::vector<size_t>& origin,
                               const Encoding& e) {
    if (e.surfaces.size() != e.pieces.size()) return {};
    std::vector<int> word_at(sentence.size(), -1);
    int word = -1;
    for (size_t i = 0; i < sentence.size(); ++i) {
        if (isAsciiSpace(sentence[i])) continue;
        if (i == 0 || isAsciiSpace(sentence[i - 1])) ++word;
        word_at[i] = word;
    }
    std::vector<int> out(e.pieces.size(), -1);
    size_t cursor = 0;
    for (size_t k = 0; k < e.pieces.size(); ++k) {
        const std::string& s = e.surfaces[k];
        const size_t first = s.find_first_not_of(" \t\n\v\f\r");
        if (first == std::string::npos) continue;
        const size_t at = text.find(s, cursor);
        if (at == std::string::npos) return {};
        cursor = at + s.size();
        const size_t pos = origin.empty() ? at + first : origin.at(at + first);
        if (pos >= sentence.size() || word_at[pos] < 0) return {};
        out[k] = word_at[pos];
    }
    static const std::string kWordStart = "\xE2\x96\x81";  // "▁"
    for (size_t k = 0; k < out.size(); ++k) {
        if (out[k] >= 0) continue;
        const bool starts_word = e.pieces[k].rfind(kWordStart, 0) == 0;
        int next = -1;
        for (size_t j = k + 1; j < out.size() && next < 0; ++j) next = out[j];
        const int before = k > 0 ? out[k - 1] : -1;
        out[k] = (starts_word || before < 0) ? next : before;
        if (out[k] < 0) return {};
    }
    return out;
}

std::string joined(const std::vector<std::string>& items) {
    std::string list;
    for (const auto& x : items) list += (list.empty() ? "" : " ") + util::forMessage(x);
    return list;
}
}  // namespace

std::optional<std::string> Engine::inputProblem(const std::string& sentence, Cleaned& cleaned, bool target) const {
    if (sentence.size() > kMaxSentenceBytes)
        return "the sentence is " + std::to_string(sentence.size()) + " bytes long; at most " +
               std::to_string(kMaxSentenceBytes) + " are accepted";
    if (isBlank(sentence)) return std::string("the sentence is empty");
    auto encode = [&](const std::string& text) {
        return target ? m_tokenizer->encodeTarget(text) : m_tokenizer->encodeSource(text);
    };
    cleaned.encoding = encode(sentence);
    cleaned.text = sentence;
    cleaned.origin.clear();
    cleaned.left_out = m_tokenizer->unknownCharacters(cleaned.encoding);
    if (!cleaned.left_out.empty() && m_tokenizer->keepsUnknown()) {
        cleaned.read_as_unknown = std::move(cleaned.left_out);
        cleaned.left_out.clear();
    }
    if (!cleaned.left_out.empty()) {
        cleaned.text = withoutCharacters(sentence, cleaned.left_out, cleaned.origin);
        if (isBlank(cleaned.text))
            return "the sentence has no character this model knows (" + joined(cleaned.left_out) + ")";
        cleaned.encoding = encode(cleaned.text);
    }
    cleaned.word_of_piece = wordsOfPieces(sentence, cleaned.text, cleaned.origin, cleaned.encoding);
    const size_t n = cleaned.encoding.ids.size() + (m_config.source_bos ? 1 : 0) + (m_config.source_eos ? 1 : 0) +
                     (m_config.multilingual() ? 1 : 0);
    if (static_cast<int64_t>(n) > m_config.model.n_position)
        return "the sentence has " + std::to_string(n) + " pieces; this model accepts at most " +
               std::to_string(m_config.model.n_position) + " (n_position)";
    return std::nullopt;
}

Engine::Source Engine::prepare(const std::string& sentence, int source_language) const {
    Cleaned c;
    if (auto why = inputProblem(sentence, c)) throw InputError(*why);
    Source s;
    s.text = sentence;
    // [<s>] [language] pieces [</s>] [language]: the language token where the model puts it.
    const bool language_first = source_language >= 0 && m_config.language_token_position == "first";
    const bool language_last = source_language >= 0 && !language_first;
    if (m_config.source_bos) s.ids.push_back(static_cast<int>(m_config.sourceBos()));
    if (language_first) s.ids.push_back(source_language);
    s.ids.insert(s.ids.end(), c.encoding.ids.begin(), c.encoding.ids.end());
    if (m_config.source_eos) s.ids.push_back(static_cast<int>(m_config.sourceEos()));
    if (language_last) s.ids.push_back(source_language);
    for (int id : s.ids) s.pieces.push_back(m_tokenizer->sourcePiece(id));
    if (!c.word_of_piece.empty()) {
        const size_t before = (m_config.source_bos ? 1 : 0) + (language_first ? 1 : 0);
        const size_t after = (m_config.source_eos ? 1 : 0) + (language_last ? 1 : 0);
        s.word_of_piece.assign(before, -1);
        s.word_of_piece.insert(s.word_of_piece.end(), c.word_of_piece.begin(), c.word_of_piece.end());
        s.word_of_piece.insert(s.word_of_piece.end(), after, -1);
    }
    if (!c.left_out.empty())
        s.warnings.push_back("characters not in the vocabulary, left out of the translation: " + joined(c.left_out));
    if (!c.read_as_unknown.empty())
        s.warnings.push_back("characters not in the vocabulary, read as <unk>: " + joined(c.read_as_unknown));
    return s;
}

int Engine::maxLength(size_t src_len, const DecodingOptions& o) const {
    int64_t cap = std::min<int64_t>(o.max_length, m_config.model.n_position);
    if (o.max_length_ratio > 0)
        cap = std::min<int64_t>(cap, static_cast<int64_t>(o.max_length_ratio * double(src_len)) + o.max_length_offset);
    return static_cast<int>(std::max<int64_t>(cap, 1));
}

SearchOptions Engine::searchOptions(const DecodingOptions& o, const std::vector<size_t>& source_lengths) const {
    SearchOptions so;
    so.beam_size = o.beam_size;
    so.length_penalty = o.length_penalty;
    so.nbest = o.nbest;
    so.bos = m_config.bos_idx;
    so.eos = m_config.eos_idx;
    // Padding and <s> are never generated: a generated pad would be masked as padding by the
    // decoder mask of the maps, and <s> only ever starts the decoder's input.
    // Padding and the start token are never generated, unless the start token is </s> itself
    // (M2M100, NLLB, mBART start the decoder with </s>).
    so.blocked = {m_config.model.trg_pad_idx};
    if (m_config.bos_idx != m_config.eos_idx) so.blocked.push_back(m_config.bos_idx);
    so.forced = forcedTokens(o);
    so.min_length = o.min_length >= 0 ? o.min_length : m_config.min_length;
    // A forced prefix always fits: the cap grows to the prefix and one more token.
    for (size_t len : source_lengths)
        so.max_lengths.push_back(std::max<int>(maxLength(len, o), static_cast<int>(so.forced.size()) + 1));
    return so;
}

namespace {
// Levenshtein distance, for the languages nearest to a name the model lacks.
size_t editDistance(const std::string& a, const std::string& b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t diagonal = row[0];
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            const size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diagonal = up;
        }
    }
    return row[b.size()];
}
}  // namespace

int Engine::languageId(const std::string& name, const std::string& fallback, const char* side) const {
    const std::string& wanted = name.empty() ? fallback : name;
    if (const LanguageToken* l = m_config.findLanguage(wanted)) return static_cast<int>(l->id);
    std::vector<std::pair<size_t, std::string>> near;
    for (const auto& l : m_config.languages)
        near.emplace_back(std::min(editDistance(wanted, l.code), editDistance(wanted, l.token)), l.code);
    std::sort(near.begin(), near.end());
    std::string list;
    for (size_t i = 0; i < std::min<size_t>(5, near.size()); ++i) list += (i ? ", " : "") + near[i].second;
    throw InputError(std::string("the ") + side + " language '" + util::forMessage(wanted) +
                     "' is not one of this model's " + std::to_string(m_config.languages.size()) +
                     " languages; the nearest: " + list);
}

Engine::LanguageIds Engine::languageIds(const DecodingOptions& o) const {
    if (!m_config.multilingual()) {
        // A model of one language pair translates that pair: another asked for is an error, not ignored.
        for (const auto& [asked, own, side] : {std::tuple{o.source_language, m_config.source_lang, "source"},
                                               std::tuple{o.target_language, m_config.target_lang, "target"}})
            if (!asked.empty() && asked != own)
                throw InputError(std::string("this model translates ") + m_config.source_lang + " into " +
                                 m_config.target_lang + " only; the " + side + " language '" + util::forMessage(asked) +
                                 "' is not one of its languages");
        return {};
    }
    return {languageId(o.source_language, m_config.source_lang, "source"),
            languageId(o.target_language, m_config.target_lang, "target")};
}

// A multilingual model's first output is the target language's token, forced (forced_bos_token_id);
// a prefix that already starts with it (a what-if built from an earlier translation) keeps one.
std::vector<int64_t> Engine::forcedTokens(const DecodingOptions& o) const {
    std::vector<int64_t> forced = prefixTokens(o);
    const int target = languageIds(o).target;
    if (target >= 0 && (forced.empty() || forced.front() != target)) forced.insert(forced.begin(), target);
    if (static_cast<int64_t>(forced.size()) + 1 > m_config.model.n_position)
        throw InputError("the forced prefix and the target language's token are " + std::to_string(forced.size()) +
                         " pieces; this model generates at most " + std::to_string(m_config.model.n_position - 1));
    return forced;
}

std::vector<int64_t> Engine::prefixTokens(const DecodingOptions& o) const {
    if (isBlank(o.force_prefix)) {
        for (int id : o.force_prefix_ids)
            if (id < 0 || id >= m_info.vocab_size || id == m_config.model.trg_pad_idx || id == m_config.bos_idx ||
                id == m_config.eos_idx)
                throw InputError("the forced prefix has token id " + std::to_string(id) +
                                 ", which is not a piece this model generates (0.." +
                                 std::to_string(m_info.vocab_size - 1) + " without padding, <s> and </s>)");
        if (static_cast<int64_t>(o.force_prefix_ids.size()) + 1 > m_config.model.n_position)
            throw InputError("the forced prefix has " + std::to_string(o.force_prefix_ids.size()) +
                             " pieces; this model generates at most " + std::to_string(m_config.model.n_position - 1));
        return {o.force_prefix_ids.begin(), o.force_prefix_ids.end()};
    }
    const Encoding e = m_tokenizer->encodeTarget(o.force_prefix);
    const auto unknown = m_tokenizer->unknownCharacters(e);
    if (!unknown.empty()) throw InputError("the forced prefix has characters the vocabulary lacks: " + joined(unknown));
    if (static_cast<int64_t>(e.ids.size()) + 1 > m_config.model.n_position)
        throw InputError("the forced prefix has " + std::to_string(e.ids.size()) +
                         " pieces; this model generates at most " + std::to_string(m_config.model.n_position - 1) +
                         " (n_position - 1)");
    return {e.ids.begin(), e.ids.end()};
}

torch::Tensor Engine::sourceTensor(const std::vector<const Source*>& batch) const {
    size_t len = 0;
    for (const auto* s : batch) len = std::max(len, s->ids.size());
    auto src = torch::full({static_cast<int64_t>(batch.size()), static_cast<int64_t>(len)}, m_config.model.src_pad_idx,
                           torch::kInt64);
    auto a = src.accessor<int64_t, 2>();
    for (size_t i = 0; i < batch.size(); ++i)
        for (size_t j = 0; j < batch[i]->ids.size(); ++j) a[i][j] = batch[i]->ids[j];
    return src.to(m_device);
}

// ---------------------------------------------------------------- decoding
int Engine::threadsForRows(int64_t rows) const {
    return threadsFor(m_threads, m_config.model, rows, m_info.compute_type);
}

int64_t Engine::forcedRows(const std::vector<Source>& trg, int max_batch_size) {
    size_t longest = 1;
    for (const auto& t : trg) longest = std::max(longest, t.ids.size());
    return int64_t(std::min(trg.size(), size_t(std::max(max_batch_size, 1))) * longest);
}

std::vector<TranslationResult> Engine::translate(const std::vector<std::string>& sentences, const DecodingOptions& o,
                                                 const StepCallback& on_step, StepperKind kind) const {
    if (sentences.empty()) return {};
    // By the work of a step: a batch's sentences x the beam (attnlab/device.h, the thread policy).
    const auto rows = int64_t(std::min(sentences.size(), searchBatchSize(o))) * o.beam_size;
    util::ThreadScope threads(threadsForRows(rows));
    return translatingTorchErrors("translation", [&] { return run(sentences, o, on_step, kind); });
}

std::vector<TranslationResult> Engine::run(const std::vector<std::string>& sentences, const DecodingOptions& o,
                                           const StepCallback& on_step, StepperKind kind) const {
    o.validate();
    const LanguageIds languages = languageIds(o);
    std::vector<Source> sources;
    sources.reserve(sentences.size());
    for (size_t i = 0; i < sentences.size(); ++i) {
        try {
            sources.push_back(prepare(sentences[i], languages.source));
        } catch (const InputError& e) {
            throw InputError(sentences.size() == 1 ? e.what() : "sentence " + std::to_string(i + 1) + ": " + e.what());
        }
    }
    std::vector<size_t> order(sources.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return sources[a].ids.size() < sources[b].ids.size(); });

    std::vector<TranslationResult> results(sources.size());
    torch::NoGradGuard no_grad;
    const auto ablation = ablateHeads(o.ablate);
    const size_t batch_size = searchBatchSize(o);
    for (size_t begin = 0; begin < order.size(); begin += batch_size) {
        const size_t end = std::min(order.size(), begin + batch_size);
        const auto t0 = Clock::now();
        std::vector<const Source*> batch;
        std::vector<size_t> lengths;
        for (size_t i = begin; i < end; ++i) {
            batch.push_back(&sources[order[i]]);
            lengths.push_back(sources[order[i]].ids.size());
        }
        SearchOptions so = searchOptions(o, lengths);
        std::vector<TraceSteps> traces;
        if (o.record_trace) so.traces = &traces;
        if (on_step) {
            so.on_step = [&, begin, end](int step, int max_steps) {
                StepProgress p;
                p.sentence_begin = static_cast<int>(begin);
                p.sentence_end = static_cast<int>(end);
                p.sentences_total = static_cast<int>(order.size());
                p.step = step;
                p.max_steps = max_steps;
                return on_step(p);
            };
        }
        // Tensors of the search need neither autograd nor version counters: InferenceMode leaves both
        // out of each of the search's ~3,000 small operations (the weights stay ordinary tensors).
        c10::InferenceMode inference;
        auto src = sourceTensor(batch);
        model::Transformer model = m_model;
        auto stepper = makeStepper(kind, model, src, o.reference_beam);
        std::vector<std::vector<Hyp>> hyps;
        if (o.reference_beam)
            hyps = {{referenceBeamSearch(*stepper, so)}};
        else if (o.beam_size == 1 && o.nbest == 1)
            hyps = greedySearch(*stepper, src.size(0), so);
        else
            hyps = beamSearch(*stepper, src.size(0), so);
        for (size_t i = 0; i < batch.size(); ++i) {
            auto& r = results[order[begin + i]];
            r.forced_tokens = static_cast<int>(so.forced.size());  // before fillResult: the confidence skips them
            r.forced_by_model = languages.target >= 0 ? 1 : 0;
            fillResult(r, *batch[i], hyps[i], o);
            r.ablated = o.ablate;
            r.forced_text = m_tokenizer->decode(std::vector<int>(so.forced.begin(), so.forced.end()));
            if (o.record_trace) r.trace = toTrace(traces.at(i));
        }
        const double per_sentence = secondsSince(t0) / double(batch.size());
        for (size_t i = begin; i < end; ++i) results[order[i]].seconds += per_sentence;
    }
    return results;
}

Hypothesis Engine::toHypothesis(const Hyp& h) const {
    Hypothesis out;
    out.token_log_probs = h.token_scores;
    out.score = h.score;
    out.normalized_score = h.normalized;
    out.finished = h.finished;
    std::vector<int> text_ids;
    for (int64_t t : h.tokens) {
        out.ids.push_back(static_cast<int>(t));
        out.pieces.push_back(m_tokenizer->idToPiece(static_cast<int>(t)));
        if (t != m_config.eos_idx) text_ids.push_back(static_cast<int>(t));
    }
    out.text = m_tokenizer->decode(text_ids);
    return out;
}

std::shared_ptr<void> Engine::ablateHeads(const std::vector<HeadRef>& heads) const {
    if (heads.empty()) return nullptr;
    const auto& cfg = m_config.model;
    std::vector<model::MultiHeadAttention> touched;
    for (const auto& h : heads) {
        const int64_t layers = cfg.layers(h.kind);
        if (h.layer < 0 || h.layer >= layers)
            throw InputError("ablate " + headName(h) + ": layer " + std::to_string(h.layer) + " is out of range (0.." +
                             std::to_string(layers - 1) + ")");
        if (h.head < 0 || h.head >= cfg.n_head)
            throw InputError("ablate " + headName(h) + ": head " + std::to_string(h.head) + " is out of range (0.." +
                             std::to_string(cfg.n_head - 1) + ")");
        model::Transformer m = m_model;
        model::MultiHeadAttention module = m->attention(h.kind, h.layer);
        if (!module->head_keep.defined())
            module->head_keep = torch::ones({cfg.n_head}, torch::TensorOptions().device(m_device));
        module->head_keep[h.head] = 0.0;
        touched.push_back(module);
    }
    // Every head back on when the translation is done (or throws).
    return std::shared_ptr<void>(nullptr, [touched](void*) {
        for (auto m : touched) m->head_keep = torch::Tensor();
    });
}

std::vector<TraceStep> Engine::toTrace(const TraceSteps& steps) const {
    std::vector<TraceStep> out(steps.size());
    for (size_t t = 0; t < steps.size(); ++t)
        for (const TraceNode& n : steps[t]) {
            TraceHypothesis h;
            h.parent = n.parent;
            h.token_id = static_cast<int>(n.token);
            h.piece = m_tokenizer->idToPiece(h.token_id);
            h.log_prob = n.log_prob;
            h.score = n.score;
            h.normalized_score = n.normalized;
            h.finished = n.finished;
            h.pruned = n.pruned;
            out[t].hypotheses.push_back(std::move(h));
        }
    return out;
}

std::vector<WordProbability> Engine::wordsOf(const Hypothesis& h) const {
    static const std::string kWordStart = "\xE2\x96\x81";  // "▁", SentencePiece's word boundary
    std::vector<WordProbability> words;
    std::vector<int> ids;
    auto close = [&] {
        if (words.empty()) return;
        words.back().text = m_tokenizer->decode(ids);
        ids.clear();
    };
    for (size_t i = 0; i < h.ids.size(); ++i) {
        if (h.ids[i] == m_config.eos_idx) break;
        if (words.empty() || h.pieces[i].rfind(kWordStart, 0) == 0) {
            close();
            words.push_back({"", static_cast<int>(i), 0, 1.0});
        }
        words.back().piece_count += 1;
        words.back().probability *= std::exp(h.token_log_probs.at(i));
        ids.push_back(h.ids[i]);
    }
    close();
    return words;
}

void Engine::fillResult(TranslationResult& r, const Source& src, const std::vector<Hyp>& hyps,
                        const DecodingOptions& o) const {
    r.source_text = src.text;
    r.source_ids = src.ids;
    r.source_pieces = src.pieces;
    r.source_piece_words = src.word_of_piece;
    r.warnings = src.warnings;
    if (hyps.empty()) throw InternalError("search returned no hypothesis for: " + src.text);
    for (const auto& h : hyps) r.nbest.push_back(toHypothesis(h));
    r.best = r.nbest.front();
    r.confidence = judgeConfidence(r.best, m_info.confidence, r.forced_tokens);
    r.words = wordsOf(r.best);
    // A decoder that starts from a zero vector: its first input is labelled as what it is.
    r.decoder_starts_from_zero = m_config.model.start_from_zero_embedding;
    r.decoder_input_pieces.push_back(r.decoder_starts_from_zero
                                         ? std::string(kZeroStartPiece)
                                         : m_tokenizer->idToPiece(static_cast<int>(m_config.bos_idx)));
    for (size_t i = 0; i + 1 < r.best.ids.size(); ++i) r.decoder_input_pieces.push_back(r.best.pieces[i]);
    if (o.return_attention || o.top_k_candidates > 0) analyse(r, o);
}

// One teacher-forced pass over the best hypothesis: every attention map (return_attns) and the
// decoder's distribution at each step. In float32 whatever the compute type: the maps and the steps'
// candidates a person reads are exact for the weights the model holds (an int8 model's dequantized:
// its inputs are not rounded), over the translation int8 or bfloat16 found.
void Engine::analyse(TranslationResult& r, const DecodingOptions& o) const {
    const model::ExactProducts exact;
    const auto i64 = torch::TensorOptions().dtype(torch::kInt64);
    std::vector<int64_t> src_ids(r.source_ids.begin(), r.source_ids.end());
    std::vector<int64_t> trg_in{m_config.bos_idx};
    for (size_t i = 0; i + 1 < r.best.ids.size(); ++i) trg_in.push_back(r.best.ids[i]);
    auto src = torch::tensor(src_ids, i64).unsqueeze(0).to(m_device);
    auto trg = torch::tensor(trg_in, i64).unsqueeze(0).to(m_device);
    model::Attentions attns;
    model::Transformer model = m_model;  // a handle: the forward pass is not const
    auto logits = model->forwardFull(src, trg, o.return_attention ? &attns : nullptr);
    if (o.return_attention) {
        for (const auto& a : attns.encoder_self) r.encoder_self.push_back(util::toLayerHeads(a[0]));
        for (const auto& a : attns.decoder_self) r.decoder_self.push_back(util::toLayerHeads(a[0]));
        for (const auto& a : attns.cross) r.cross.push_back(util::toLayerHeads(a[0]));
    }
    auto probs = torch::softmax(logits[0].to(torch::kFloat32), -1).to(torch::kCPU);
    const int64_t k = std::min<int64_t>(o.top_k_candidates, probs.size(1));
    torch::Tensor top_p, top_i;
    if (k > 0) std::tie(top_p, top_i) = probs.topk(k, -1);
    auto pa = probs.accessor<float, 2>();
    for (size_t i = 0; i < r.best.ids.size(); ++i) {
        DecodingStep s;
        s.chosen_id = r.best.ids[i];
        s.chosen_piece = r.best.pieces[i];
        s.chosen_probability = pa[i][s.chosen_id];
        for (int64_t j = 0; j < k; ++j) {
            TokenCandidate c;
            c.id = static_cast<int>(top_i[i][j].item<int64_t>());
            c.piece = m_tokenizer->idToPiece(c.id);
            c.probability = top_p[i][j].item<float>();
            s.candidates.push_back(std::move(c));
        }
        r.steps.push_back(std::move(s));
    }
}

}  // namespace attnlab::decoding
