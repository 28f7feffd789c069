// The fuzz targets: one function per reader of outside data. Each feeds the bytes to the reader
// the app uses; an attnlab::Error is the expected answer to bad input, anything else (another
// exception, a crash, a sanitizer report, __builtin_trap on a broken invariant) is a finding.
// Used by the libFuzzer harnesses (fuzz/*.cpp) and by tests/tst_fuzz_regressions.cpp, which
// replays every input a harness ever found a problem with.
#include "targets.h"

#include "fuzz_support.h"

#include "data/corpus.h"
#include "package/marian_import.h"
#include "package/safetensors.h"
#include "package/torch_bin.h"
#include "package/torch_pickle.h"
#include "tokenizer/normalizer_check.h"
#include "tokenizer/spm_loader.h"
#include "util/text.h"

#include <attnlab/alignment.h>
#include <attnlab/attention_history.h>
#include <attnlab/confidence.h>
#include <attnlab/errors.h>
#include <attnlab/lesson.h>
#include <attnlab/package.h>
#include <attnlab/training_log.h>
#include <attnlab/translator.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

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
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    const std::string_view sep = kPackagePartSeparator;
    std::string parts[3];
    size_t at = 0;
    for (int i = 0; i < 3 && at <= input.size(); ++i) {
        const size_t end = i < 2 ? std::min(input.find(sep, at), input.size()) : input.size();
        parts[i] = std::string(input.substr(at, end - at));
        at = end + sep.size();
    }
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

}  // namespace attnlab::fuzz
