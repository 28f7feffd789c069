// The fuzz targets: one function per reader of outside data. Each feeds the bytes to the reader
// the app uses; an attnlab::Error is the expected answer to bad input, anything else (another
// exception, a crash, a sanitizer report, __builtin_trap on a broken invariant) is a finding.
// Used by the libFuzzer harnesses (fuzz/*.cpp) and by tests/tst_fuzz_regressions.cpp, which
// replays every input a harness ever found a problem with.
#include "targets.h"

#include "fuzz_support.h"

#include "data/corpus.h"
#include "decoding/search.h"
#include "formats/argos/argos_package.h"
#include "formats/ctranslate2/ct2_model.h"
#include "formats/ctranslate2/ct2_weights.h"
#include "formats/huggingface/hf_multilingual.h"
#include "formats/huggingface/hf_weights.h"
#include "formats/huggingface/marian_import.h"
#include "formats/safetensors/safetensors.h"
#include "formats/torch/torch_bin.h"
#include "formats/torch/torch_pickle.h"
#include "hub/hub_cache.h"
#include "hub/hub_client.h"
#include "package/package_io.h"
#include "tokenizer/normalizer_check.h"
#include "tokenizer/spm_loader.h"
#include "tokenizer/text_codec.h"
#include "util/text.h"

#include <attnlab/alignment.h>
#include <attnlab/argos_index.h>
#include <attnlab/attention_history.h>
#include <attnlab/confidence.h>
#include <attnlab/errors.h>
#include <attnlab/head_lab_json.h>
#include <attnlab/hub.h>
#include <attnlab/language_detect.h>
#include <attnlab/lesson.h>
#include <attnlab/package.h>
#include <attnlab/partial_result.h>
#include <attnlab/sentences.h>
#include <attnlab/tokenizer.h>
#include <attnlab/training_log.h>
#include <attnlab/translator.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attnlab::fuzz {

// model.safetensors: the header parser and the checks of every tensor's dtype, shape and offsets.
void safetensorsFile(const uint8_t* data, size_t size) {
    const std::string bytes(reinterpret_cast<const char*>(data), size);
    try {
        const auto h = attnlab::safetensors::parseHeader(bytes, "fuzz.safetensors", size);
        for (const auto& t : h.tensors) (void)t.numel();
    } catch (const attnlab::Error&) {
    }
}

// config.json: JSON parsing, the field table's type checks and every range check.
void configJson(const uint8_t* data, size_t size) {
    try {
        const auto c =
            attnlab::packageConfigFromJson(std::string(reinterpret_cast<const char*>(data), size), "config.json");
        // What is accepted writes back and reads again to the same configuration.
        const auto again = attnlab::packageConfigFromJson(attnlab::packageConfigToJson(c), "again");
        if (attnlab::packageConfigToJson(again) != attnlab::packageConfigToJson(c)) __builtin_trap();
    } catch (const attnlab::Error&) {
    }
}

// A MarianMT config.json: the mapping onto AttnLab's fields; what is accepted is a valid package
// config that writes and reads back to the same configuration.
void marianConfig(const uint8_t* data, size_t size) {
    try {
        const auto c = attnlab::package::marianConfigFromJson(std::string(reinterpret_cast<const char*>(data), size),
                                                              "config.json");
        const auto again = attnlab::packageConfigFromJson(attnlab::packageConfigToJson(c), "again");
        if (attnlab::packageConfigToJson(again) != attnlab::packageConfigToJson(c)) __builtin_trap();
    } catch (const attnlab::Error&) {
    }
}

// confidence.json: parsing and the range checks; what is accepted writes back to the same values.
void confidenceJson(const uint8_t* data, size_t size) {
    try {
        const auto c = attnlab::confidenceCalibrationFromJson(std::string(reinterpret_cast<const char*>(data), size),
                                                              "confidence.json");
        const auto again = attnlab::confidenceCalibrationFromJson(attnlab::confidenceCalibrationToJson(c), "again");
        if (attnlab::confidenceCalibrationToJson(again) != attnlab::confidenceCalibrationToJson(c)) __builtin_trap();
        (void)attnlab::withConfidenceSection("# card\n## Confidence\nold\n## Next\n", c);
    } catch (const attnlab::Error&) {
    }
}

// Lesson and session files: parsing, the model-shape check (and a history's points); an accepted
// lesson or session writes back and reads again to the same file.
void lessonFile(const uint8_t* data, size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    try {
        const auto lesson = attnlab::parseLesson(text, "lesson.json");
        const std::string again = attnlab::lessonJson(lesson);
        if (attnlab::lessonJson(attnlab::parseLesson(again, "again")) != again) __builtin_trap();
        attnlab::checkLessonFitsModel(lesson, 3, 8, "lesson.json", 3, 44);
        attnlab::checkLessonViews(lesson, {"attention", "weight"}, "lesson.json");
    } catch (const attnlab::Error&) {
    }
    try {
        const auto session = attnlab::parseSession(text, "session.json");
        const std::string again = attnlab::sessionJson(session.steps.at(0), session.model);
        const auto reread = attnlab::parseSession(again, "again");
        if (attnlab::sessionJson(reread.steps.at(0), reread.model) != again) __builtin_trap();
    } catch (const attnlab::Error&) {
    }
}

// attention_history.bin: the reader; an accepted file writes back to the same bytes (the weights
// are bytes already, so quantizing them again changes nothing) and reads again.
void attentionHistory(const uint8_t* data, size_t size) {
    const std::string bytes(reinterpret_cast<const char*>(data), size);
    try {
        const auto history = attnlab::parseAttentionHistory(bytes, "attention_history.bin");
        const std::string again = attnlab::attentionHistoryBytes(history);
        if (attnlab::attentionHistoryBytes(attnlab::parseAttentionHistory(again, "again")) != again) __builtin_trap();
        (void)attnlab::attentionHistoryJson(history);
    } catch (const attnlab::Error&) {
    }
}

// data.pkl of a pytorch_model.bin: the restricted unpickler. What it accepts is a state dict of
// tensors whose dtype is known, whose shape and stride agree and whose extent cannot overflow.
void torchPickle(const uint8_t* data, size_t size) {
    try {
        const auto tensors =
            attnlab::package::parseStateDictPickle(std::string(reinterpret_cast<const char*>(data), size), "data.pkl");
        for (const auto& t : tensors) {
            if (attnlab::safetensors::dtypeSize(t.dtype) == 0 || t.shape.size() != t.stride.size() ||
                t.storage_key.empty() || t.storage_offset < 0)
                __builtin_trap();
            if (attnlab::package::storageBytesNeeded(t) > (uint64_t(1) << 62)) __builtin_trap();
        }
    } catch (const attnlab::Error&) {
    }
}

// A whole pytorch_model.bin: the zip container as LibTorch's reader (miniz) takes it, with the
// checks before it (the end records, every record's declared size), then data.pkl and the
// storages. What it accepts takes at most 8 times the file's size in tensors.
void torchBin(const uint8_t* data, size_t size) {
    static const std::string path = attnlab::fuzz::scratch("pytorch_model.bin");
    attnlab::fuzz::writeBytes(path, data, size);
    try {
        uint64_t bytes = 0;
        for (const auto& [name, t] : attnlab::package::readTorchBin(path)) bytes += uint64_t(t.nbytes());
        if (bytes > 8 * uint64_t(size)) __builtin_trap();
    } catch (const attnlab::Error&) {
    }
}

// training_log.tsv (and steps.tsv): the TSV reader behind the Model tab's curves.
void trainingLog(const uint8_t* data, size_t size) {
    static const std::string path = attnlab::fuzz::scratch("training_log.tsv");
    attnlab::fuzz::writeBytes(path, data, size);
    try {
        const auto log = attnlab::readTrainingLog(path);
        for (const auto& c : log.columns) (void)log.column(c);
        (void)log.column(attnlab::epoch_log::kValidBleu);
    } catch (const attnlab::Error&) {
    }
}

// Corpus files, plain or gzip (detected by content): the reader the trainer and `eval` use.
void corpusFile(const uint8_t* data, size_t size) {
    static const std::string path = attnlab::fuzz::scratch("corpus.gz");
    attnlab::fuzz::writeBytes(path, data, size);
    try {
        size_t bytes = 0;
        for (const auto& line : attnlab::data::readLines(path)) bytes += line.size();
        if (bytes > size * 1100 + 64) __builtin_trap();  // gzip expands at most ~1032x
    } catch (const attnlab::Error&) {
    }
}

namespace {
// Text for a tokenizer model to encode: every character up to U+02FF, every 37th of the rest of
// the Basic Multilingual Plane, every 7th emoji and a German sentence.
const std::string& manyScripts() {
    static const std::string text = [] {
        std::string t = "Ein Hund läuft 😀 über die Wiese. ";
        auto put = [&](char32_t c) { attnlab::util::appendUtf8(t, c); };
        for (char32_t c = 0x20; c < 0x300; ++c) put(c);
        for (char32_t c = 0x300; c < 0x10000; c += 37)
            if (c < 0xD800 || c > 0xDFFF) put(c);
        for (char32_t c = 0x1F300; c < 0x1FB00; c += 7) put(c);
        return t;
    }();
    return text;
}

// Writes `bytes` to `path` unless the last call for that path wrote the same bytes: an unchanged
// file keeps its modification time, so the tokenizer's once-per-file-version probe is not rerun.
void writeIfChanged(const std::string& path, const std::string& bytes, std::string& last) {
    if (bytes == last && std::filesystem::exists(path)) return;
    attnlab::fuzz::writeBytes(path, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    last = bytes;
}

// The files of one input, separated by kPackagePartSeparator: at most `n`, the last taking the
// rest of the input (so that it may hold the separator itself). Separators keep a mutation inside
// one file from shifting the others.
std::vector<std::string> splitParts(std::string_view input, size_t n) {
    const std::string_view sep = kPackagePartSeparator;
    std::vector<std::string> parts;
    size_t at = 0;
    while (parts.size() < n && at <= input.size()) {
        const size_t end = parts.size() + 1 < n ? std::min(input.find(sep, at), input.size()) : input.size();
        parts.emplace_back(input.substr(at, end - at));
        at = end + sep.size();
    }
    return parts;
}
}  // namespace

// tokenizer.model bytes: the normalization-table check the tokenizer runs first
// (normalizer_check.h), then, for a model that passes it, the dlopen'ed SentencePiece module in
// this process: load, encode text of many scripts, decode, name pieces. attnlab::Tokenizer also
// probes every model in a process of its own and refuses one that crashes it (tokenizer.cpp);
// here that crash is a finding, because the in-process check alone must make SentencePiece safe.
// (Spawning that probe for every input held this harness to 14 executions per second.)
void tokenizerModel(const uint8_t* data, size_t size) {
    static const std::string path = attnlab::fuzz::scratch("tokenizer.model");
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    if (!attnlab::spm::normalizationTableProblem(bytes).empty()) return;
    attnlab::fuzz::writeBytes(path, data, size);
    const auto& m = attnlab::spm::module();
    char* err = nullptr;
    attnlab_spm* sp = m.load(path.c_str(), &err);
    if (!sp) {
        (void)attnlab::spm::takeError(m, err, "");
        return;
    }
    const std::string& text = manyScripts();
    int* ids = nullptr;
    size_t n = 0, plen = 0, slen = 0;
    char *pieces = nullptr, *surfaces = nullptr;
    if (m.encode(sp, text.data(), text.size(), &ids, &n, &pieces, &plen, &surfaces, &slen, &err) == 0) {
        char* decoded = nullptr;
        size_t len = 0;
        if (m.decode(sp, ids, n, &decoded, &len, &err) == 0)
            m.free(decoded);
        else
            (void)attnlab::spm::takeError(m, err, "");
        for (size_t i = 0; i < n; ++i) (void)(m.is_byte(sp, ids[i]) + m.is_unknown(sp, ids[i]));
        m.free(ids);
        m.free(pieces);
        m.free(surfaces);
    } else {
        (void)attnlab::spm::takeError(m, err, "");
    }
    for (int which = 0; which < 4; ++which) (void)m.special_id(sp, which);
    for (int id = -1; id < std::min(m.vocab_size(sp), 64); ++id) m.free(m.id_to_piece(sp, id));
    (void)m.piece_to_id(sp, "<0x41>");
    m.destroy(sp);
}

// A package's examples.tsv and alignments.txt (separated by kPackagePartSeparator) through
// readExamples, which checks every gold link against the example's words; then alignments.txt as a
// gold file of `attnlab-cli align --gold` in each of its four formats.
void examplesAndGold(const uint8_t* data, size_t size) {
    static const std::string dir = attnlab::fuzz::scratch("examples");
    std::filesystem::create_directories(dir);
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    const size_t cut = std::min(input.find(kPackagePartSeparator), input.size());
    const std::string examples(input.substr(0, cut));
    const std::string gold(cut < input.size() ? input.substr(cut + std::string_view(kPackagePartSeparator).size())
                                              : "");
    const std::string gold_path = dir + "/" + attnlab::package_files::kAlignments;
    attnlab::fuzz::writeBytes(dir + "/" + attnlab::package_files::kExamples,
                              reinterpret_cast<const uint8_t*>(examples.data()), examples.size());
    attnlab::fuzz::writeBytes(gold_path, reinterpret_cast<const uint8_t*>(gold.data()), gold.size());
    try {
        (void)attnlab::readExamples(dir);
    } catch (const attnlab::Error&) {
    }
    for (const bool one : {false, true})
        for (const bool reversed : {false, true}) {
            try {
                for (const auto& g : attnlab::readGoldAlignments(gold_path, {one, reversed}))
                    for (const auto& link : g.sure)  // every sure link is also possible (alignment.h)
                        if (!std::binary_search(g.possible.begin(), g.possible.end(), link)) __builtin_trap();
            } catch (const attnlab::Error&) {
            }
        }
}

// A whole package directory through the load path the app uses (attnlab::Translator): the input is
// config.json, tokenizer.model and model.safetensors separated by kPackagePartSeparator (a missing
// part is an empty file), written to a directory, loaded, and, when it loads, used to translate a
// sentence. Separators keep a mutation inside one file from shifting the others, and a file is
// rewritten only when its bytes changed (writeIfChanged).
void packageDirectory(const uint8_t* data, size_t size) {
    static const std::string dir = attnlab::fuzz::scratch("package");
    static std::string last[3];
    std::filesystem::create_directories(dir);
    std::vector<std::string> parts = splitParts(std::string_view(reinterpret_cast<const char*>(data), size), 3);
    parts.resize(3);
    const char* names[3] = {"config.json", "tokenizer.model", "model.safetensors"};
    for (int i = 0; i < 3; ++i) writeIfChanged(dir + "/" + names[i], parts[i], last[i]);
    try {
        attnlab::Translator t(dir, {"cpu", 1});
        attnlab::DecodingOptions o;
        o.beam_size = 2;
        o.max_length = 4;
        (void)t.translate("Ein Hund läuft.", o);
    } catch (const attnlab::Error&) {
    }
}

namespace {
namespace fs = std::filesystem;

// The fixed part of the MarianMT directory of fuzz_marian_dir: 16 ids, d_model 8, two heads, one
// encoder and one decoder layer, feed-forward width 8 (scripts/make_fuzz_seeds.py writes the
// config.json and vocab.json that match it).
constexpr int64_t kMarianVocab = 16, kMarianModel = 8, kMarianFfn = 8;

// A MarianMTModel's tensors under Hugging Face's names for that shape.
std::vector<std::pair<std::string, std::vector<int64_t>>> tinyMarianTensors() {
    const int64_t V = kMarianVocab, D = kMarianModel, F = kMarianFfn;
    std::vector<std::pair<std::string, std::vector<int64_t>>> t = {{"model.shared.weight", {V, D}},
                                                                   {"final_logits_bias", {1, V}}};
    for (const std::string stack : {"encoder", "decoder"}) {
        const std::string p = "model." + stack + ".layers.0.";
        std::vector<std::string> attentions = {"self_attn"};
        if (stack == "decoder") attentions.push_back("encoder_attn");
        for (const auto& a : attentions) {
            for (const char* proj : {"q_proj", "k_proj", "v_proj", "out_proj"}) {
                t.push_back({p + a + "." + proj + ".weight", {D, D}});
                t.push_back({p + a + "." + proj + ".bias", {D}});
            }
            t.push_back({p + a + "_layer_norm.weight", {D}});
            t.push_back({p + a + "_layer_norm.bias", {D}});
        }
        t.push_back({p + "fc1.weight", {F, D}});
        t.push_back({p + "fc1.bias", {F}});
        t.push_back({p + "fc2.weight", {D, F}});
        t.push_back({p + "fc2.bias", {D}});
        t.push_back({p + "final_layer_norm.weight", {D}});
        t.push_back({p + "final_layer_norm.bias", {D}});
    }
    return t;
}

// The directory, made once per process: source.spm and target.spm (one 40-piece SentencePiece
// model trained here, so that the tokenizer's probe process runs once) and model.safetensors.
const std::string& marianFixture() {
    static const std::string dir = [] {
        const std::string d = attnlab::fuzz::scratch("marian") + "/opus-mt-de-en";
        fs::create_directories(d);
        const std::string corpus = d + "/corpus.txt";
        const std::string text =
            "Ein Mann läuft.\nZwei Hunde spielen im Schnee.\nEine Frau liest ein Buch.\n"
            "A man runs.\nTwo dogs play in the snow.\nA woman reads a book.\n";
        attnlab::fuzz::writeBytes(corpus, reinterpret_cast<const uint8_t*>(text.data()), text.size());
        attnlab::TokenizerTrainingOptions o;
        o.input_files = {corpus};
        o.model_path = d + "/" + attnlab::marian_files::kSourceSpm;
        o.vocab_size = 40;
        o.byte_fallback = false;
        o.num_threads = 1;
        attnlab::Tokenizer::train(o);
        fs::copy_file(o.model_path, d + "/" + attnlab::marian_files::kTargetSpm, fs::copy_options::overwrite_existing);
        fs::remove(corpus);
        const auto shapes = tinyMarianTensors();
        std::vector<std::vector<float>> values;
        std::vector<attnlab::safetensors::TensorView> views;
        for (const auto& [name, shape] : shapes) {
            size_t n = 1;
            for (const int64_t x : shape) n *= size_t(x);
            std::vector<float> v(n);
            for (size_t i = 0; i < n; ++i) v[i] = 0.01f * float(int((i * 37 + values.size()) % 17) - 8);
            values.push_back(std::move(v));
            views.push_back({name, "F32", shape, values.back().data(), n * sizeof(float)});
        }
        attnlab::safetensors::write(d + "/model.safetensors", views, {{"format", "pt"}});
        return d;
    }();
    return dir;
}

// Writes `bytes` to `path`, or removes the file when there are none.
void placeOrRemove(const std::string& path, const std::optional<std::string>& bytes) {
    if (bytes)
        attnlab::fuzz::writeBytes(path, reinterpret_cast<const uint8_t*>(bytes->data()), bytes->size());
    else
        fs::remove(path);
}
}  // namespace

// A MarianMT directory as `import` and the app open it (the directory-level reader and its
// cross-file checks): the input is config.json, vocab.json and optionally generation_config.json
// and tokenizer_config.json, separated by kPackagePartSeparator, beside the fixed tokenizers and
// weights of marianFixture. readMarianConfig (config.json mapped and checked against vocab.json's
// ids and the optional files), then the tokenizer layout (both .spm files and vocab.json), an
// encoding and a decoding, then the weights checked against what the config says; the fixed
// weights load only for a config of their shape. What is accepted keeps every id the codec
// produces inside the vocabulary.
void marianDirectory(const uint8_t* data, size_t size) {
    const std::string& dir = marianFixture();
    const auto parts = splitParts(std::string_view(reinterpret_cast<const char*>(data), size), 4);
    auto part = [&](size_t i) { return i < parts.size() ? std::optional<std::string>(parts[i]) : std::nullopt; };
    placeOrRemove(dir + "/config.json", part(0).value_or(""));
    placeOrRemove(dir + "/" + attnlab::marian_files::kVocab, part(1).value_or(""));
    placeOrRemove(dir + "/generation_config.json", part(2));
    placeOrRemove(dir + "/tokenizer_config.json", part(3));
    try {
        if (!attnlab::package::isHuggingFaceDirectory(dir)) return;
        const attnlab::PackageConfig config = attnlab::package::readMarianConfig(dir);
        const auto codec = attnlab::marianCodec(dir, config.model.n_trg_vocab);
        if (codec->vocabSize() != config.model.n_trg_vocab) __builtin_trap();
        const attnlab::Encoding e = codec->encodeSource(">>deu<< Ein Mann läuft über die Wiese.");
        for (const int id : e.ids)
            if (id < 0 || id >= codec->vocabSize()) __builtin_trap();
        (void)codec->unknownCharacters(e);
        (void)codec->decode(e.ids);
        (void)codec->idToPiece(int(config.eos_idx));
        (void)attnlab::package::loadMarianWeights(dir, config);
    } catch (const attnlab::Error&) {
    }
}

// A multilingual directory's text files: config.json, special_tokens_map.json,
// tokenizer_config.json, added_tokens.json, vocab.json and model.safetensors.index.json,
// separated by kPackagePartSeparator (a missing part: no such file), beside a fixed
// sentencepiece.bpe.model (marianFixture's source model) and one fixed shard. readMultilingualModel
// (config mapped, the tokenizer's ids laid out and checked against vocab_size, the languages), the
// codec over them (an encoding and a decoding), the sharded index's file list. What is accepted
// keeps every id inside the vocabulary and every language id a piece of its own.
void multilingualDirectory(const uint8_t* data, size_t size) {
    static const std::string dir = [] {
        const std::string d = attnlab::fuzz::scratch("multilingual") + "/nllb";
        fs::create_directories(d);
        fs::copy_file(marianFixture() + "/" + attnlab::marian_files::kSourceSpm, d + "/sentencepiece.bpe.model",
                      fs::copy_options::overwrite_existing);
        fs::copy_file(marianFixture() + "/model.safetensors", d + "/model-00001-of-00001.safetensors",
                      fs::copy_options::overwrite_existing);
        return d;
    }();
    const auto parts = splitParts(std::string_view(reinterpret_cast<const char*>(data), size), 6);
    auto part = [&](size_t i) {
        return i < parts.size() && !parts[i].empty() ? std::optional<std::string>(parts[i]) : std::nullopt;
    };
    const char* names[] = {"config.json", "special_tokens_map.json",     "tokenizer_config.json", "added_tokens.json",
                           "vocab.json",  "model.safetensors.index.json"};
    placeOrRemove(dir + "/" + names[0], part(0).value_or(""));
    for (size_t i = 1; i < 6; ++i) placeOrRemove(dir + "/" + names[i], part(i));
    try {
        (void)attnlab::package::hfWeightFiles(dir);
    } catch (const attnlab::Error&) {
    }
    try {
        if (!attnlab::package::isMultilingualDirectory(dir)) return;
        attnlab::package::MultilingualModel m = attnlab::package::readMultilingualModel(dir);
        const int64_t vocab = m.config.model.n_trg_vocab;
        if (int64_t(m.tokenizer.pieces.size()) != vocab) __builtin_trap();
        for (const auto& l : m.config.languages)
            if (l.id < 0 || l.id >= vocab || m.tokenizer.pieces[size_t(l.id)] != l.token) __builtin_trap();
        const auto codec = attnlab::pieceVocabularyCodec({m.tokenizer.spm_path, std::move(m.tokenizer.pieces),
                                                          std::move(m.tokenizer.special), int(m.config.unk_idx)});
        const attnlab::Encoding e = codec->encodeSource("Ein Mann läuft über die Wiese.");
        for (const int id : e.ids)
            if (id < 0 || id >= codec->vocabSize()) __builtin_trap();
        (void)codec->decode(e.ids);
    } catch (const attnlab::Error&) {
    }
}

namespace {
// The AttnLab package of fuzz_safetensors_values: the bundled config cut down to 16 ids, d_model 8,
// one head, one layer each side (scripts/make_fuzz_seeds.py's tiny_package(16) writes its weights).
const attnlab::PackageConfig& tinyPackageConfig() {
    static const attnlab::PackageConfig config = attnlab::packageConfigFromJson(
        R"({"attn_bias": false, "bos_idx": 2, "d_dec_inner": 0, "d_inner": 8, "d_k": 8, "d_model": 8, "d_v": 8,
            "d_word_vec": 8, "dropout": 0.1, "emb_layer_norm": true, "emb_scale": "auto",
            "emb_src_trg_weight_sharing": true, "eos_idx": 3, "ffn_activation": "relu", "format_version": 2,
            "layer_norm_eps": 1e-06, "logits_bias": false, "max_length": 0, "n_dec_layers": 0, "n_head": 1,
            "n_layers": 1, "n_position": 16, "n_src_vocab": 16, "n_trg_vocab": 16, "num_beams": 0,
            "pos_encoding": "interleaved", "pos_offset": 0, "scale_emb_or_prj": "emb", "source_bos": false,
            "source_eos": true, "source_lang": "de", "src_pad_idx": 0, "target_lang": "en",
            "tokenizer": "sentencepiece", "trg_emb_prj_weight_sharing": true, "trg_pad_idx": 0, "unk_idx": 1})",
        "tiny config.json");
    return config;
}
}  // namespace

// A whole model.safetensors, header and values, through the package loader (loadWeights: every
// name, shape and dtype against a tiny config, every value finite) into a model, then two greedy
// steps: finite weights whose products overflow must be refused there as a NumericError, never
// give a non-finite score or an id outside the vocabulary.
void safetensorsValues(const uint8_t* data, size_t size) {
    static const std::string dir = attnlab::fuzz::scratch("values");
    fs::create_directories(dir);
    attnlab::fuzz::writeBytes(dir + "/" + attnlab::package_files::kWeights, data, size);
    try {
        const attnlab::PackageConfig& config = tinyPackageConfig();
        attnlab::model::Transformer model = attnlab::package::loadWeights(dir, config);
        torch::NoGradGuard no_grad;
        const torch::Tensor src = torch::tensor({5, 6, 7, 3}, torch::kLong).view({1, 4});
        const auto stepper = attnlab::decoding::makeStepper(attnlab::decoding::StepperKind::Cached, model, src);
        attnlab::decoding::SearchOptions o;
        o.beam_size = 1;
        o.max_lengths = {2};
        o.blocked = {config.model.trg_pad_idx, config.bos_idx};
        for (const auto& hyps : attnlab::decoding::greedySearch(*stepper, 1, o))
            for (const auto& h : hyps) {
                if (!std::isfinite(h.score)) __builtin_trap();
                for (const int64_t t : h.tokens)
                    if (t < 0 || t >= config.model.n_trg_vocab) __builtin_trap();
            }
    } catch (const attnlab::Error&) {
    }
}

namespace {
// `bytes` as the inside of a JSON string: quotes, backslashes and control characters escaped, the
// rest (invalid UTF-8 included) as it is, for the parser to judge.
void appendJsonEscaped(std::string& out, char c) {
    static const char* hex = "0123456789abcdef";
    if (c == '"' || c == '\\') {
        out += '\\';
        out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
        out += "\\u00";
        out += hex[static_cast<unsigned char>(c) >> 4];
        out += hex[c & 15];
    } else {
        out += c;
    }
}

// A count from one byte: mostly small (1 .. small, spread), and for the last six values the
// neighbourhood of the cap (cap - 4 .. cap + 1), so that both sides of it are reached without
// making every execution large.
size_t nearCap(uint8_t b, size_t cap, size_t small) { return b >= 250 ? cap - 4 + (b - 250) : 1 + b * small / 250; }
}  // namespace

// Lessons at size: the input is [steps byte][caption byte] STEP [separator CAPTION]. The lesson
// has 1..8 steps or 996..1001 (around the reader's cap of 1,000): STEP (one step's JSON, as it
// stands) for the first 8 at most, a step that changes nothing ({"view": {}}) for the others,
// then one step whose caption is CAPTION repeated to 1..997 bytes or 16,380..16,385 (around the
// 16 KiB cap). (Repeating STEP a thousand times held the harness to 131 executions a second, 16 times and
// captions up to 4 KB to 392.)
// What parses must hold to the caps; the model-shape check (linear in the steps) and the view of
// the last step (lessonViewAt, what a jump to it shows, walking back over every step) run on it.
void lessonAtSize(const uint8_t* data, size_t size) {
    constexpr size_t kMaxSteps = 1000, kMaxCaption = 16 << 10, kMaxBytes = 4 << 20;
    if (size < 2) return;
    constexpr size_t kFuzzedSteps = 8;
    const size_t steps = nearCap(data[0], kMaxSteps, kFuzzedSteps);  // the caption's step included
    const size_t caption_bytes = nearCap(data[1], kMaxCaption, 1000);
    const auto parts = splitParts(std::string_view(reinterpret_cast<const char*>(data + 2), size - 2), 2);
    const std::string& step = parts.at(0);
    const std::string unit = parts.size() > 1 && !parts[1].empty() ? parts[1] : std::string("*a* ");
    std::string text = R"({"format": "attnlab-lesson", "version": 1, "title": "at size", "steps": [)";
    for (size_t i = 0; i + 1 < steps && text.size() < kMaxBytes; ++i)
        (text += i < kFuzzedSteps ? std::string_view(step) : std::string_view(R"({"view": {}})")) += ",";
    text += R"({"title": "last", "view": {}, "caption": ")";
    for (size_t i = 0; i < caption_bytes; ++i) appendJsonEscaped(text, unit[i % unit.size()]);
    text += R"("}]})";
    try {
        const attnlab::Lesson lesson = attnlab::parseLesson(text, "lesson.json");
        if (lesson.steps.empty() || lesson.steps.size() > kMaxSteps) __builtin_trap();
        for (const auto& s : lesson.steps)
            if (s.caption.size() > kMaxCaption) __builtin_trap();
        attnlab::checkLessonFitsModel(lesson, 6, 8, "lesson.json", 3);
        (void)attnlab::lessonViewAt(lesson, int(lesson.steps.size()) - 1);
        attnlab::checkLessonViews(lesson, {"attention", "weight", "decoding"}, "lesson.json",
                                  {{"attention", {"map", "heads"}}});
    } catch (const attnlab::Error&) {
    }
}

// A CTranslate2 model.bin: the header reader, the spec's mapping onto AttnLab's architecture (with
// CTranslate2's config defaults and generated vocabularies), and for small models the weights read,
// dequantized and split into a model.
void ctranslate2ModelBin(const uint8_t* data, size_t size) {
    static const std::string path = attnlab::fuzz::scratch("model.bin");
    attnlab::fuzz::writeBytes(path, data, size);
    try {
        auto bin = attnlab::package::ct2::readModelBin(path);
        uint64_t stored = 0;
        for (const auto& v : bin.variables) stored += v.nbytes;
        if (stored > size) __builtin_trap();  // every byte a variable claims lies in the file
        const auto m = attnlab::package::ctranslate2ModelFromBin(std::move(bin));
        const auto& c = m.config.model;
        if (c.n_src_vocab * c.d_model + c.n_trg_vocab * c.d_model < (1 << 20)) {
            auto model = attnlab::package::loadCt2Weights(m);
            (void)model;
        }
    } catch (const attnlab::Error&) {
    }
}

// An .argosmodel (zip): member names checked without writing, then unpacked into a fresh folder,
// nothing of it outside.
void argosArchive(const uint8_t* data, size_t size) {
    namespace fs = std::filesystem;
    static const std::string into = attnlab::fuzz::scratch("argos");
    std::error_code ec;
    fs::remove_all(into, ec);
    fs::create_directories(into, ec);
    try {
        const auto names = attnlab::package::extractArgosArchive(data, size, "fuzz.argosmodel", "");
        const auto written = attnlab::package::extractArgosArchive(data, size, "fuzz.argosmodel", into);
        if (names != written) __builtin_trap();
    } catch (const attnlab::Error&) {
    }
    for (const auto& e : fs::recursive_directory_iterator(into, ec))
        if (e.is_symlink()) __builtin_trap();  // nothing but files and folders is ever written
}

// An Argos package index (index.json, from whatever server ARGOS_PACKAGE_INDEX names): parsed, searched and
// looked up as the CLI and the app do; an empty search matches every entry, a size is -1 or more.
void argosIndex(const uint8_t* data, size_t size) {
    try {
        const auto index = attnlab::parseArgosIndex(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
        for (const auto& e : index) {
            if (e.size < -1 || !attnlab::argosEntryMatches(e, "")) __builtin_trap();
            (void)attnlab::argosEntryMatches(e, "en-de");
            (void)attnlab::argosEntryMatches(e, "germ");
        }
        (void)attnlab::findArgosEntry(index, "en-de", "fuzz");
    } catch (const attnlab::Error&) {
    }
}

// A text to translate (File > Translate a text): checked as the reader checks it, then split into sentences
// and its language detected. Every sentence is a trimmed, non-empty run of the text at its offset, in
// order; detection says why whenever it names no language.
void textToTranslate(const uint8_t* data, size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    const auto detected = attnlab::detectLanguage(text);
    if (detected.code.empty() && detected.problem.empty()) __builtin_trap();
    if (attnlab::textProblem(text, "fuzz")) return;
    size_t end = 0;
    for (const auto& s : attnlab::splitSentences(text)) {
        if (s.text.empty() || s.offset < end || text.compare(s.offset, s.text.size(), s.text) != 0) __builtin_trap();
        end = s.offset + s.text.size();
    }
}

namespace {
std::vector<std::string> parts(const uint8_t* data, size_t size, size_t count) {
    const std::string text(reinterpret_cast<const char*>(data), size), sep = kPackagePartSeparator;
    std::vector<std::string> out;
    size_t at = 0;
    while (out.size() + 1 < count) {
        const size_t next = text.find(sep, at);
        if (next == std::string::npos) break;
        out.push_back(text.substr(at, next - at));
        at = next + sep.size();
    }
    out.push_back(text.substr(at));
    out.resize(count);
    return out;
}

bool plainName(const std::string& f) {
    return !f.empty() && f != "." && f != ".." && f.find('/') == std::string::npos &&
           f.find('\\') == std::string::npos && f.find('\0') == std::string::npos;
}

// Whatever the file list names, only plain names it holds are chosen (they become paths in the cache), by
// exact name (at most the 21 names the loaders read and one weights file, however many files are listed),
// and every listed size is a size of a listed file.
void fileList(const std::string& body) {
    try {
        const hub::RepoInfo info = hub::parseRepoInfo(body, "fuzz");
        if (!hub::isCommitHash(info.commit)) __builtin_trap();
        for (const auto& [file, bytes] : info.sizes)
            if (bytes < 0 || std::find(info.files.begin(), info.files.end(), file) == info.files.end())
                __builtin_trap();
        const std::vector<std::string> chosen = hub::selectModelFiles(info.files);
        if (chosen.size() > 22) __builtin_trap();
        for (const std::string& f : chosen)
            if (!plainName(f) || std::find(info.files.begin(), info.files.end(), f) == info.files.end())
                __builtin_trap();
    } catch (const attnlab::Error&) {
    }
}
}  // namespace

// parts: the file list (JSON), a weights index (JSON), an ETag header, a hub name, the catalog (JSON)
void hubAnswers(const uint8_t* data, size_t size) {
    const std::vector<std::string> p = parts(data, size, 5);
    fileList(p[0]);
    try {
        for (const std::string& shard : hub::shardsOfIndex(p[1], "fuzz.index.json"))
            if (!plainName(shard)) __builtin_trap();
    } catch (const attnlab::Error&) {
    }
    if (const auto etag = hub::normalizeEtag(p[2]))  // a file name in blobs/
        if (etag->empty() || etag->size() > 128 || !plainName(*etag) || etag->find('.') != std::string::npos)
            __builtin_trap();
    if (const auto name = parseHubModelName(p[3])) {  // a folder name in the cache, and back
        const auto again = parseHubModelName(hubModelNameString(*name));
        if (!again || again->repo != name->repo || again->revision != name->revision) __builtin_trap();
        if (!plainName(hub::repoFolderName(name->repo))) __builtin_trap();
    }
    try {
        for (const auto& e : parseHubCatalog(p[4], "fuzz.json"))
            if (!parseHubModelName(e.repo)) __builtin_trap();
    } catch (const attnlab::Error&) {
    }
}

// Up to three parts of a sharded corpus run (issue 55) merged, and the first read as Open results… reads it (a heads
// document, alignment scores, either): refused by message or accepted; an accepted merge of eval, score or
// translate results merges alone to itself; a merged heads or alignment document is read back as the app reads it.
namespace {
// `path` through each reader of Open results… (readHeadsJson, readAlignmentJson, readHeadLabResults): refused by
// message or read.
void readAsTheAppDoes(const std::string& path) {
    try {
        (void)readHeadsJson(path);
    } catch (const attnlab::Error&) {
    }
    try {
        (void)readAlignmentJson(path);
    } catch (const attnlab::Error&) {
    }
    try {
        (void)readHeadLabResults(path);
    } catch (const attnlab::Error&) {
    }
}
}  // namespace

void corpusResults(const uint8_t* data, size_t size) {
    static const std::string dir = attnlab::fuzz::scratch("corpus-results");
    std::filesystem::create_directories(dir);
    std::vector<std::string> paths;
    for (const std::string& part : parts(data, size, 3)) {
        paths.push_back(dir + "/part" + std::to_string(paths.size()) + ".json");
        attnlab::fuzz::writeBytes(paths.back(), reinterpret_cast<const uint8_t*>(part.data()), part.size());
    }
    try {
        const std::string merged = mergeCorpusResults(paths);
        const std::string again = dir + "/merged.json";
        attnlab::fuzz::writeBytes(again, reinterpret_cast<const uint8_t*>(merged.data()), merged.size());
        if (merged.find("\"attnlab-heads\"") == std::string::npos &&
            merged.find("\"attnlab-alignment\"") == std::string::npos) {
            if (mergeCorpusResults({again}) != merged) __builtin_trap();
        } else {
            readAsTheAppDoes(again);
        }
    } catch (const attnlab::Error&) {
    }
    readAsTheAppDoes(paths.front());
}

}  // namespace attnlab::fuzz
