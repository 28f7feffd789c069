// The fuzz targets: one function per reader of outside data. Each feeds the bytes to the reader
// the app uses; an attnlab::Error is the expected answer to bad input, anything else (another
// exception, a crash, a sanitizer report, __builtin_trap on a broken invariant) is a finding.
// Used by the libFuzzer harnesses (fuzz/*.cpp) and by tests/tst_fuzz_regressions.cpp, which
// replays every input a harness ever found a problem with.
#include "targets.h"

#include "fuzz_support.h"

#include "data/corpus.h"
#include "package/safetensors.h"

#include <attnlab/confidence.h>
#include <attnlab/lesson.h>
#include <attnlab/errors.h>
#include <attnlab/package.h>
#include <attnlab/tokenizer.h>
#include <attnlab/training_log.h>
#include <attnlab/translator.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>

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

// Lesson and session files: parsing, the model-shape check; an accepted session writes back and
// reads again to the same file.
void lessonFile(const uint8_t* data, size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    try {
        const auto lesson = attnlab::parseLesson(text, "lesson.json");
        attnlab::checkLessonFitsModel(lesson, 3, 8, "lesson.json");
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

// tokenizer.model bytes through the dlopen'ed SentencePiece module: load, encode, decode.
void tokenizerModel(const uint8_t* data, size_t size) {
    static const std::string path = attnlab::fuzz::scratch("tokenizer.model");
    attnlab::fuzz::writeBytes(path, data, size);
    try {
        attnlab::Tokenizer tok(path);
        const auto e = tok.encode("Ein Hund läuft 😀 über die Wiese.");
        (void)tok.decode(e.ids);
        (void)tok.unknownCharacters(e);
        for (int id = 0; id < std::min(tok.vocabSize(), 16); ++id) (void)tok.idToPiece(id);
    } catch (const attnlab::Error&) {
    }
}

// A whole package directory through the load path the app uses (attnlab::Translator): the input
// is [config length: 2 bytes LE][tokenizer length: 4 bytes LE][config.json][tokenizer.model]
// [model.safetensors] (lengths clipped to what is there), written to a directory, loaded, and,
// when it loads, used to translate a sentence.
void packageDirectory(const uint8_t* data, size_t size) {
    static const std::string dir = attnlab::fuzz::scratch("package");
    std::filesystem::create_directories(dir);
    size_t at = std::min<size_t>(size, 6);
    auto take = [&](size_t n) {
        n = std::min(n, size - at);
        std::string part(reinterpret_cast<const char*>(data) + at, n);
        at += n;
        return part;
    };
    const size_t config_len = size >= 2 ? size_t(data[0]) | size_t(data[1]) << 8 : 0;
    const size_t tok_len =
        size >= 6 ? size_t(data[2]) | size_t(data[3]) << 8 | size_t(data[4]) << 16 | size_t(data[5]) << 24 : 0;
    const std::string config = take(config_len), tokenizer = take(tok_len), weights = take(size);
    auto put = [&](const char* name, const std::string& bytes) {
        attnlab::fuzz::writeBytes(dir + "/" + name, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    };
    put("config.json", config);
    put("tokenizer.model", tokenizer);
    put("model.safetensors", weights);
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
