#pragma once
// Fixtures the tests make for themselves: a small German/English corpus, a SentencePiece model
// trained on it by attnlab::Tokenizer::train, and random-weight model packages written by
// attnlab::package::savePackage. Nothing here is a recorded result. No torch header: random_model.h has the
// fixture that needs one.

#include <attnlab/config.h>
#include <attnlab/errors.h>
#include <attnlab/translation.h>

#include <QProcessEnvironment>
#include <QString>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace attnlab::testing {

// Deterministic pseudo-sentences built from German and English word lists (umlauts, ß, digits).
std::vector<std::string> corpusLines(int count, unsigned seed = 1);

// Writes the corpus to <dir>/corpus.txt and trains <dir>/spm.model (vocab_size pieces, byte
// fallback on). Returns the .model path.
std::string trainTokenizer(const std::string& dir, int vocab_size = 400, bool byte_fallback = true);

// A small configuration for `vocab` pieces: 2+2 layers, d_model 32, 4 heads.
ModelConfig smallConfig(int64_t vocab);

// A package config around `model` with the special ids AttnLab's tokenizers use.
PackageConfig packageConfig(const ModelConfig& model);

// Writes a package with random weights to `dir`; returns dir.
std::string writeRandomPackage(const std::string& dir, const std::string& tokenizer_model, const ModelConfig& config,
                               uint64_t seed = 7, const std::string& dtype = "F32");

// A package like writeRandomPackage's whose parameter `parameter` (a state-dict name, e.g.
// "encoder.layer_stack.1.slf_attn.w_vs.weight") is filled with `value`, 3e38 by default: finite in
// float32, so every load-time check passes it, but what it multiplies overflows in a forward pass.
// Returns dir.
std::string writeHugeWeightPackage(const std::string& dir, const std::string& tokenizer_model,
                                   const ModelConfig& config, const std::string& parameter, float value = 3e38f);

// The device the tests' translators and engines run on: $ATTNLAB_TEST_DEVICE ("cuda" on a GPU
// machine, as scripts/gpu_check.sh runs the suite), "cpu" when unset. testDeviceArg() is the same
// for an attnlab-cli --device argument.
std::string testDevice();
QString testDeviceArg();

// Runs scripts/<script> with `python` and `args`, waiting up to `seconds`; a failure stops the test
// run with the script's stderr (qFatal): the reference scripts make what the tests compare with.
void runScript(const QString& python, const QString& script, const QStringList& args, int seconds = 300);
// The same for `python -c code args...`.
void runPythonCode(const QString& python, const QString& code, const QStringList& args, int seconds = 300);

// An .argosmodel of a small random CTranslate2 model (1 layer, width 16, 2 heads, a SentencePiece model of 300
// pieces) translating `from` into `to`, written by scripts/ct2_reference.py under `dir`; its path. Empty when
// python3 (ATTNLAB_PYTHON) cannot import torch, numpy and sentencepiece: the caller skips, or fails under CI=true.
std::string makeSmallArgosPackage(const QString& dir, const QString& from, const QString& to, int seed);

// `program` (runCli: attnlab-cli) run with `args`, `input` on its standard input (then closed) and `env`,
// waited for up to 120 s: its exit status (-1 when it did not end normally) and what it printed.
struct CliRun {
    int code = -1;
    QString out, err;
};
CliRun runProgram(const QString& program, const QStringList& args, const QByteArray& input = {},
                  const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment());
CliRun runCli(const QStringList& args, const QByteArray& input = {},
              const QProcessEnvironment& env = QProcessEnvironment::systemEnvironment());

// The message of the exception of type E that `f` throws, or "(no exception)" (tests assert
// errors by message).
template <typename E = attnlab::Error, typename F>
QString messageOf(F&& f) {
    try {
        f();
    } catch (const E& e) {
        return QString::fromStdString(e.what());
    }
    return "(no exception)";
}

// Reads a whole file into a string / writes a string to a file.
std::string readFile(const std::string& path);
// The largest difference between [layer][head][row][column] maps and a reference's JSON of them,
// over the first `rows` rows (1e9 when the layer or head counts differ).
double worstMapDifference(const LayerHeadMaps& ours, const nlohmann::json& theirs, size_t rows = size_t(1) << 30);
// The same between two sets of maps of one shape (1e9 when the shapes differ).
double worstMapDifference(const LayerHeadMaps& a, const LayerHeadMaps& b);
void writeFile(const std::string& path, const std::string& bytes);

}  // namespace attnlab::testing
