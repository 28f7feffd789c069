#include "fixtures.h"
#include "random_model.h"

#include "package/package_io.h"

#include <attnlab/tokenizer.h>

#include <QCoreApplication>
#include <QDeadlineTimer>
#include <QProcess>

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

namespace attnlab::testing {

std::string testDevice() {
    const char* env = std::getenv("ATTNLAB_TEST_DEVICE");
    return env && *env ? env : "cpu";
}

QString testDeviceArg() { return QString::fromStdString(testDevice()); }

std::vector<std::string> corpusLines(int count, unsigned seed) {
    static const std::vector<std::string> de = {
        "ein",       "eine",   "der",    "die",       "das",     "mann",   "frau",    "kind",  "hund",    "straße",
        "läuft",     "über",   "grünen", "wiese",     "mädchen", "spielt", "mit",     "einem", "ball",    "männer",
        "arbeiten",  "auf",    "großen", "baustelle", "junge",   "fährt",  "fahrrad", "vor",   "gebäude", "zwei",
        "drei",      "schöne", "blumen", "im",        "garten",  "tür",    "öffnet",  "müde",  "katze",   "schläft",
        "gemütlich", "sofa",   "und",    "hält",      "ihre",    "hände",  "spaß"};
    static const std::vector<std::string> en = {
        "a",        "the",          "man",   "woman",     "child",   "dog",    "street", "runs",  "across",
        "green",    "meadow",       "girl",  "plays",     "with",    "ball",   "men",    "work",  "on",
        "large",    "construction", "site",  "boy",       "rides",   "bike",   "in",     "front", "of",
        "building", "two",          "three", "beautiful", "flowers", "garden", "door",   "opens", "tired",
        "cat",      "sleeps",       "sofa",  "and",       "holds",   "her",    "hands",  "fun"};
    std::mt19937 rng(seed);
    std::vector<std::string> lines;
    for (int i = 0; i < count; ++i) {
        const auto& words = (i % 2) ? en : de;
        std::uniform_int_distribution<int> len(4, 12), pick(0, static_cast<int>(words.size()) - 1), num(0, 99);
        std::ostringstream s;
        const int n = len(rng);
        for (int w = 0; w < n; ++w) {
            if (w) s << ' ';
            std::string word = words[pick(rng)];
            if (w == 0) word[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(word[0])));
            s << word;
            if (num(rng) < 8) s << ' ' << num(rng);
        }
        s << '.';
        lines.push_back(s.str());
    }
    return lines;
}

std::string trainTokenizer(const std::string& dir, int vocab_size, bool byte_fallback) {
    const std::string corpus = dir + "/corpus.txt";
    std::ofstream out(corpus);
    for (const auto& l : corpusLines(3000)) out << l << "\n";
    out.close();
    TokenizerTrainingOptions o;
    o.input_files = {corpus};
    o.model_path = dir + "/spm.model";
    o.vocab_size = vocab_size;
    o.byte_fallback = byte_fallback;
    o.num_threads = 1;
    Tokenizer::train(o);
    return dir + "/spm.model";
}

ModelConfig smallConfig(int64_t vocab) {
    ModelConfig c;
    c.n_src_vocab = c.n_trg_vocab = vocab;
    c.src_pad_idx = c.trg_pad_idx = 0;
    c.d_word_vec = c.d_model = 32;
    c.d_inner = 64;
    c.n_layers = 2;
    c.n_head = 4;
    c.d_k = c.d_v = 8;
    c.dropout = 0.1;
    c.n_position = 64;
    c.scale_emb_or_prj = "emb";
    return c;
}

PackageConfig packageConfig(const ModelConfig& model) {
    PackageConfig p;
    p.source_lang = "de";
    p.target_lang = "en";
    p.model = model;
    p.unk_idx = 1;
    p.bos_idx = 2;
    p.eos_idx = 3;
    return p;
}

model::Transformer randomModel(const ModelConfig& config, uint64_t seed) {
    torch::manual_seed(seed);
    model::Transformer m(config);
    m->eval();
    return m;
}

std::string writeRandomPackage(const std::string& dir, const std::string& tokenizer_model, const ModelConfig& config,
                               uint64_t seed, const std::string& dtype) {
    auto m = randomModel(config, seed);
    package::SaveOptions o;
    o.dtype = dtype;
    package::savePackage(dir, packageConfig(config), m, tokenizer_model, o);
    return dir;
}

std::string writeHugeWeightPackage(const std::string& dir, const std::string& tokenizer_model,
                                   const ModelConfig& config, const std::string& parameter, float value) {
    auto m = randomModel(config, 7);
    {
        torch::NoGradGuard no_grad;
        m->named_parameters()[parameter].fill_(value);
    }
    package::savePackage(dir, packageConfig(config), m, tokenizer_model, package::SaveOptions{});
    return dir;
}

std::string readFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

void writeFile(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << bytes;
}

namespace {
// The Python that runs the reference scripts, asked to end (its stdin closed) before it is killed.
class ScriptServer : public QProcess {
public:
    using QProcess::QProcess;
    ~ScriptServer() override {
        closeWriteChannel();
        waitForFinished(10000);
    }
    ScriptServer(const ScriptServer&) = delete;
    ScriptServer& operator=(const ScriptServer&) = delete;
};

// A test program asks for dozens of reference runs (scripts/*_reference.py: a model made, sentences
// translated); each in a Python of its own imported torch, numpy and sentencepiece again (1.5 s of CPU), more
// than the run itself on the tests' small models. One Python per program and interpreter runs them all
// (support/script_server.py: the script's main() with the run's arguments). It belongs to the application
// object, found there by its name, and ends with the program.
QProcess* scriptServer(const QString& python) {
    QCoreApplication* app = QCoreApplication::instance();
    if (!app) return nullptr;
    const QString name = "attnlab-script-server " + python;
    auto* server = app->findChild<QProcess*>(name, Qt::FindDirectChildrenOnly);
    if (server && server->state() == QProcess::Running) return server;
    delete server;  // one that ended (a script killed its Python): a new one
    server = new ScriptServer(app);
    server->setObjectName(name);
    server->start(python, {QString(ATTNLAB_SOURCE_DIR) + "/tests/support/script_server.py",
                           QString(ATTNLAB_SOURCE_DIR) + "/scripts"});
    if (!server->waitForStarted(60000))
        qFatal("%s did not start: %s", qPrintable(python), qPrintable(server->errorString()));
    return server;
}

[[noreturn]] void scriptFailed(const QString& what, const QByteArray& why) {
    qFatal("%s failed: %s", qPrintable(what), why.constData());
}

// `program` (a script's path, or -c and its code) run with `args` by `python`: by its script server where there is
// one (`request` for it), else in a process of its own. A failure stops the test run with what Python printed.
void runPython(const QString& python, const QStringList& program, nlohmann::json request, const QStringList& args,
               const QString& what, int seconds) {
    QProcess* server = scriptServer(python);
    if (!server) {  // no application object (a helper program's main): a Python of its own
        QProcess p;
        p.start(python, program + args);
        if (!p.waitForFinished(seconds * 1000) || p.exitStatus() != QProcess::NormalExit || p.exitCode() != 0)
            scriptFailed(what, p.readAllStandardError());
        return;
    }
    server->readAllStandardError();  // what earlier runs printed
    request["args"] = nlohmann::json::array();
    for (const QString& a : args) request["args"].push_back(a.toStdString());
    server->write(QByteArray::fromStdString(request.dump() + "\n"));
    QDeadlineTimer deadline{std::chrono::seconds(seconds)};
    while (!server->canReadLine() && server->state() == QProcess::Running && !deadline.hasExpired())
        server->waitForReadyRead(int(std::min<qint64>(deadline.remainingTime(), 1000)));
    if (!server->canReadLine()) {
        server->kill();  // stuck: stopped, and what it printed shown
        server->waitForFinished(10000);
        scriptFailed(what, "no answer within " + QByteArray::number(seconds) + " s: " + server->readAllStandardError());
    }
    const auto answer = nlohmann::json::parse(server->readLine().toStdString(), nullptr, false);
    if (answer.is_discarded() || answer.value("status", 1) != 0) {
        server->waitForReadyRead(500);  // the rest of its stderr (another pipe than the answer's)
        scriptFailed(what, server->readAllStandardError());
    }
}
}  // namespace

void runScript(const QString& python, const QString& script, const QStringList& args, int seconds) {
    runPython(python, {QString(ATTNLAB_SOURCE_DIR) + "/scripts/" + script}, {{"script", script.toStdString()}}, args,
              script + " " + args.value(0), seconds);
}

void runPythonCode(const QString& python, const QString& code, const QStringList& args, int seconds) {
    runPython(python, {"-c", code}, {{"code", code.toStdString()}}, args, "python3 -c '" + code.left(60) + "...'",
              seconds);
}

std::string makeSmallArgosPackage(const QString& dir, const QString& from, const QString& to, int seed) {
    const QString python = qEnvironmentVariable("ATTNLAB_PYTHON", "/usr/bin/python3");
    QProcess probe;
    probe.start(python, {"-c", "import torch, numpy, sentencepiece"});
    if (!probe.waitForFinished(60000) || probe.exitCode() != 0) return {};
    const QString name = QString("translate-%1_%2-1_0").arg(from, to), zip = dir + "/" + name + ".argosmodel";
    std::filesystem::create_directories(dir.toStdString());
    runScript(python, "ct2_reference.py",
              {"make",
               "--out",
               dir + "/" + name + "-ct2",
               "--layers",
               "1",
               "--d-model",
               "16",
               "--heads",
               "2",
               "--ffn",
               "32",
               "--vocab-size",
               "300",
               "--spm",
               "--seed",
               QString::number(seed),
               "--argos",
               zip,
               "--from-code",
               from,
               "--to-code",
               to});
    return zip.toStdString();
}

CliRun runCli(const QStringList& args, const QByteArray& input, const QProcessEnvironment& env) {
    return runProgram(ATTNLAB_CLI_PATH, args, input, env);
}

CliRun runProgram(const QString& program, const QStringList& args, const QByteArray& input,
                  const QProcessEnvironment& env) {
    QProcess p;
    p.setProcessEnvironment(env);
    p.start(program, args);
    p.waitForStarted();
    if (!input.isEmpty()) p.write(input);
    p.closeWriteChannel();
    p.waitForFinished(120000);
    CliRun r;
    r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.out = QString::fromUtf8(p.readAllStandardOutput());
    r.err = QString::fromUtf8(p.readAllStandardError());
    return r;
}

double worstMapDifference(const LayerHeadMaps& ours, const nlohmann::json& theirs, size_t rows) {
    double worst = 0;
    if (ours.size() != theirs.size()) return 1e9;
    for (size_t l = 0; l < ours.size(); ++l) {
        if (ours[l].size() != theirs[l].size()) return 1e9;
        for (size_t h = 0; h < ours[l].size(); ++h)
            for (size_t q = 0; q < std::min(rows, ours[l][h].size()); ++q)
                for (size_t k = 0; k < ours[l][h][q].size(); ++k)
                    worst = std::max(worst, std::abs(double(ours[l][h][q][k]) - theirs[l][h][q][k].get<double>()));
    }
    return worst;
}

double worstMapDifference(const LayerHeadMaps& a, const LayerHeadMaps& b) {
    double worst = 0;
    if (a.size() != b.size()) return 1e9;
    for (size_t l = 0; l < a.size(); ++l) {
        if (a[l].size() != b[l].size()) return 1e9;
        for (size_t h = 0; h < a[l].size(); ++h) {
            if (a[l][h].size() != b[l][h].size()) return 1e9;
            for (size_t q = 0; q < a[l][h].size(); ++q) {
                if (a[l][h][q].size() != b[l][h][q].size()) return 1e9;
                for (size_t k = 0; k < a[l][h][q].size(); ++k)
                    worst = std::max(worst, double(std::abs(a[l][h][q][k] - b[l][h][q][k])));
            }
        }
    }
    return worst;
}

}  // namespace attnlab::testing
