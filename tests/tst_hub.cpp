// Models by Hugging Face name (attnlab/hub.h) against a local stand-in for the hub
// (tests/support/fake_hub.py, started with QProcess on 127.0.0.1; no test reaches the internet):
// the cache laid out exactly as huggingface_hub lays it out, a second call and offline use with no
// request, a cut download resumed with Range, corrupt bytes refused, gated models and the token,
// unknown names, an unreachable host, cancellation, which files are chosen, progress, a file that
// cannot be written. ATTNLAB_HUB_BIG_MB=300 adds a download of that size (memory measured by
// running this under /usr/bin/time -v: the bytes are streamed to disk, never held).
#include "fake_hub_server.h"
#include "fixtures.h"
#include "hub/hub_cache.h"
#include "hub/hub_client.h"

#include <attnlab/errors.h>
#include <attnlab/hub.h>
#include <attnlab/hub_progress.h>
#include <attnlab/package.h>
#include <attnlab/translator.h>

#include <QtTest/QtTest>

#include <nlohmann/json.hpp>

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

namespace fs = std::filesystem;
using attnlab::CancelledError;
using attnlab::HubModelName;
using attnlab::HubOptions;
using attnlab::HubProgress;
using attnlab::InputError;
using attnlab::PackageError;
using attnlab::testing::messageOf;
using attnlab::testing::readFile;

namespace {

using attnlab::testing::writeInto;

// Deterministic bytes that do not repeat within a file (so a shifted resume would show).
std::string bytesOf(size_t size, unsigned seed) {
    std::string s(size, '\0');
    uint32_t x = seed * 2654435761u + 1;
    for (char& c : s) {
        x = x * 1664525u + 1013904223u;
        c = char(x >> 24);
    }
    return s;
}

std::string sha256Hex(const std::string& bytes) {
    return QCryptographicHash::hash(QByteArray::fromStdString(bytes), QCryptographicHash::Sha256).toHex().toStdString();
}
std::string sha1Hex(const std::string& bytes) {
    return QCryptographicHash::hash(QByteArray::fromStdString(bytes), QCryptographicHash::Sha1).toHex().toStdString();
}
// The hub's ETag of a small (non-LFS) file: git's blob id.
std::string gitBlobSha1(const std::string& bytes) {
    return sha1Hex("blob " + std::to_string(bytes.size()) + std::string(1, '\0') + bytes);
}
// The fake hub's commit of a repository.
std::string commitOf(const std::string& repo) { return sha1Hex(repo); }

// The ETag the cache names a file's blob by (LFS above 1 kB, as the fake hub serves them).
std::string etagOf(const std::string& bytes) { return bytes.size() > 1024 ? sha256Hex(bytes) : gitBlobSha1(bytes); }

std::vector<std::string> namesIn(const std::string& dir) {
    std::vector<std::string> names;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        names.push_back(it->path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
}

using attnlab::testing::FakeHub;
using attnlab::testing::Files;

// A small Marian-like model: two small files answered by the hub itself, three "LFS" files.
Files smallModel() {
    const std::string spm = bytesOf(3000, 3);
    return {{"config.json", R"({"model_type": "marian", "d_model": 32})"},
            {"vocab.json", R"({"<pad>": 0, "</s>": 1, "ein": 2})"},
            {"source.spm", spm},
            {"target.spm", spm},  // the same bytes: one blob, two links
            {"model.safetensors", bytesOf(200000, 5)},
            {"tf_model.h5", bytesOf(5000, 6)},
            {"onnx/encoder_model.onnx", bytesOf(5000, 7)},
            {"README.md", "# a model\n"}};
}

const char* kRepo = "Helsinki-NLP/opus-mt-de-en";

}  // namespace

class TestHub : public QObject {
    Q_OBJECT
    QTemporaryDir m_tmp;
    std::unique_ptr<QTemporaryDir> m_case;  // each test's own folder: cache and server
    std::unique_ptr<FakeHub> m_hub;

    std::string cacheDir() const { return m_case->path().toStdString() + "/cache"; }
    std::string repoDir(const std::string& repo = kRepo) const {
        return cacheDir() + "/" + attnlab::hub::repoFolderName(repo);
    }
    HubOptions options() const {
        HubOptions o;
        o.endpoint = m_hub ? m_hub->endpoint() : "http://127.0.0.1:1";
        o.cache_dir = cacheDir();
        o.connect_timeout_s = 5;
        // a busy machine may pause the server for seconds: only a server that drips bytes is this slow
        o.min_bytes_per_second = 1024;
        o.slow_window_s = 20;
        return o;
    }
    FakeHub& startHub(const Files& files = smallModel(), const std::string& repo = kRepo) {
        m_hub = std::make_unique<FakeHub>(m_case->path() + "/hub");
        m_hub->addRepo(repo, files);
        m_hub->start();  // (a failure there is the test's: QTest::currentTestFailed())
        return *m_hub;
    }
    // The port of a server that is gone: nothing listens there.
    std::string closedEndpoint() {
        FakeHub gone(m_case->path() + "/gone");
        gone.start();
        gone.stop();
        return gone.endpoint();
    }
    static HubModelName name(const std::string& text) { return *attnlab::parseHubModelName(text); }
    static std::vector<std::string> paths(const std::vector<nlohmann::json>& requests, const std::string& method) {
        std::vector<std::string> out;
        for (const auto& r : requests) {
            if (r["method"] == method) out.push_back(r["path"]);
        }
        return out;
    }

private Q_SLOTS:
    void init() { m_case = std::make_unique<QTemporaryDir>(m_tmp.path() + "/case-XXXXXX"); }
    void cleanup() {
        m_hub.reset();
        m_case.reset();
    }

    void parsesHubNames();
    void optionsFromTheEnvironment();
    void choosesTheFilesATranslationModelNeeds();
    void downloadsIntoTheSharedCacheLayout();
    void secondCallAndOfflineMakeNoRequest();
    void offlineWithAnEmptyCacheNamesTheMissingFiles();
    void readsACacheLaidOutByHuggingfaceHub();
    void resumesACutDownloadWithRange();
    void startsOverWhenTheServerIgnoresRange();
    void refusesBytesThatFailTheirChecksum();
    void gatedModelNeedsAToken();
    void unknownRepositoryOrRevision();
    void unreachableEndpointNamesTheHost();
    void cancelledFromTheCallbackAndResumedLater();
    void prefersSafetensorsAndFetchesShardsByIndex();
    void progressIsMonotoneAndEndsAtTheTotal();
    void revisionsWithSlashesAndCommits();
    void aFileThatCannotBeWrittenLeavesNothingHalfWritten();
    void bigDownloadIsStreamed();
    void aModelGotByNameTranslatesAsItsFolder();
    void modelArgumentTakesAFolderFirstThenTheHub();
    void namesASnapshotByItsRepository();
    void readsTheShippedCatalog();
    void describesProgressInWords();
    void aSnapshotIsCompleteOnlyWithWhatItsLoaderReads();
    void neverReplacesWhatItDidNotWrite();
    void aPlantedLinkOrFifoIsNeverWrittenThrough();
    void aPlantedLinkForACacheFolderIsRefused();
    void theServerNeverDecidesTheBytes();
    void aDrippingServerIsLeftWithAMessage();
    void onlyTheLoadersFilesAreFetchedWithinCaps();
    void aListingSaysSizeAndLicenceWithOneRequest();
    void aMissingFolderIsNamedAsOneFirst();
    void settingsFromTheEnvironmentAreChecked();
};

void TestHub::parsesHubNames() {
    auto n = attnlab::parseHubModelName("Helsinki-NLP/opus-mt-de-en");
    QVERIFY(n);
    QCOMPARE(n->repo, std::string("Helsinki-NLP/opus-mt-de-en"));
    QCOMPARE(n->revision, std::string("main"));
    n = attnlab::parseHubModelName("facebook/nllb-200-distilled-600M@v1.0");
    QVERIFY(n);
    QCOMPARE(n->repo, std::string("facebook/nllb-200-distilled-600M"));
    QCOMPARE(n->revision, std::string("v1.0"));
    QCOMPARE(attnlab::parseHubModelName("org/name@refs/pr/1")->revision, std::string("refs/pr/1"));
    // a NUL is no character of a name or an ETag (it would cut the path the cache makes of it)
    QVERIFY(!attnlab::parseHubModelName(std::string("org/na\0me", 9)));
    QVERIFY(!attnlab::parseHubModelName(std::string("org/name@ma\0in", 14)));
    QVERIFY(!attnlab::hub::normalizeEtag(std::string("\"ab\0cd\"", 7)));
    QCOMPARE(attnlab::hubModelNameString(name("org/m_1.x@refs/pr/1")), std::string("org/m_1.x@refs/pr/1"));
    QCOMPARE(attnlab::hubModelNameString(name("org/m")), std::string("org/m"));
    for (const char* bad : {"",
                            "name",
                            "a/b/c",
                            "/name",
                            "org/",
                            "org/..",
                            "org/-name",
                            "org/name-",
                            "org/.name",
                            "org/na..me",
                            "org/na--me",
                            "org/name.git",
                            "org/na me",
                            "org/näme",
                            "org/name@",
                            "org/name@../x",
                            "org/name@a//b",
                            "org/name@a/",
                            "org/name@x.lock",
                            "org/name@.hidden",
                            "org/name@a b",
                            "../../etc/passwd"}) {
        QVERIFY2(!attnlab::parseHubModelName(bad), bad);
    }
    // a revision is one path segment in URLs
    QCOMPARE(attnlab::hub::urlEncode("refs/pr/1", false), std::string("refs%2Fpr%2F1"));
    QCOMPARE(attnlab::hub::urlEncode("sub dir/a+b.json", true), std::string("sub%20dir/a%2Bb.json"));
    // a name made by hand is checked too: it must not lead outside the cache
    const HubModelName escape{"org/name", "../../x"};
    QVERIFY(messageOf<InputError>([&] { attnlab::hubSnapshot(escape, options()); }).contains("not a Hugging Face"));
    QVERIFY(!attnlab::cachedHubSnapshot(escape, options()));
    QVERIFY(messageOf<attnlab::ConfigError>([&] {
                attnlab::hubSnapshot(name("org/name"), HubOptions{});
            }).contains("cache folder"));
}

void TestHub::optionsFromTheEnvironment() {
    const char* vars[] = {"HF_ENDPOINT", "HF_HUB_CACHE",  "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME",
                          "HF_TOKEN",    "HF_TOKEN_PATH", "HF_HUB_OFFLINE",        "HOME"};
    std::map<std::string, std::optional<QByteArray>> saved;
    for (const char* v : vars) saved[v] = qEnvironmentVariableIsSet(v) ? std::optional(qgetenv(v)) : std::nullopt;
    const std::string home = m_case->path().toStdString() + "/home";
    for (const char* v : vars) qunsetenv(v);
    qputenv("HOME", QByteArray::fromStdString(home));

    auto o = attnlab::hubOptionsFromEnvironment();
    QCOMPARE(o.endpoint, std::string("https://huggingface.co"));
    QCOMPARE(o.cache_dir, home + "/.cache/huggingface/hub");
    QCOMPARE(o.token, std::string());
    QVERIFY(!o.offline);
    writeInto(home + "/.cache/huggingface/token", "  hf_fromfile\n");
    QCOMPARE(attnlab::hubOptionsFromEnvironment().token, std::string("hf_fromfile"));

    qputenv("XDG_CACHE_HOME", "/xdg");
    QCOMPARE(attnlab::hubOptionsFromEnvironment().cache_dir, std::string("/xdg/huggingface/hub"));
    qputenv("HF_HOME", QByteArray::fromStdString(home + "/hf"));
    writeInto(home + "/hf/token", "hf_home_token\n");
    o = attnlab::hubOptionsFromEnvironment();
    QCOMPARE(o.cache_dir, home + "/hf/hub");
    QCOMPARE(o.token, std::string("hf_home_token"));
    qputenv("HF_HUB_CACHE", "~/hubcache");
    qputenv("HF_ENDPOINT", "http://mirror.example//");
    writeInto(home + "/elsewhere", "hf_path_token");
    qputenv("HF_TOKEN_PATH", QByteArray::fromStdString(home + "/elsewhere"));
    o = attnlab::hubOptionsFromEnvironment();
    QCOMPARE(o.cache_dir, home + "/hubcache");
    QCOMPARE(o.endpoint, std::string("http://mirror.example"));
    QCOMPARE(o.token, std::string("hf_path_token"));
    qputenv("HF_TOKEN", " hf_env \n");
    QCOMPARE(attnlab::hubOptionsFromEnvironment().token, std::string("hf_env"));
    for (const char* on : {"1", "ON", "yes", "True"}) {
        qputenv("HF_HUB_OFFLINE", on);
        QVERIFY2(attnlab::hubOptionsFromEnvironment().offline, on);
    }
    for (const char* off : {"0", "no", "", "offline"}) {
        qputenv("HF_HUB_OFFLINE", off);
        QVERIFY2(!attnlab::hubOptionsFromEnvironment().offline, off);
    }
    for (const auto& [v, value] : saved) {
        if (value)
            qputenv(v.c_str(), *value);
        else
            qunsetenv(v.c_str());
    }
}

void TestHub::choosesTheFilesATranslationModelNeeds() {
    using attnlab::hub::selectModelFiles;
    using V = std::vector<std::string>;
    const V everything = {"config.json",
                          "generation_config.json",
                          "tokenizer_config.json",
                          "special_tokens_map.json",
                          "source.spm",
                          "target.spm",
                          "vocab.json",
                          "tokenizer.json",
                          "sentencepiece.bpe.model",
                          "added_tokens.json",
                          "vocab.txt",
                          "README.md",
                          ".gitattributes",
                          "model.safetensors",
                          "pytorch_model.bin",
                          "tf_model.h5",
                          "flax_model.msgpack",
                          "rust_model.ot",
                          "onnx/encoder_model.onnx",
                          "model.ckpt",
                          "openvino/model.bin",
                          "metadata.json",
                          "shared_vocabulary.json",
                          "source_vocabulary.txt",
                          "target_vocabulary.txt",
                          "sub/config.json"};
    // by the exact names the loaders open: tokenizer.json and vocab.txt are read by none of them
    QCOMPARE(
        selectModelFiles(everything),
        (V{"added_tokens.json", "config.json", "generation_config.json", "metadata.json", "model.safetensors",
           "sentencepiece.bpe.model", "shared_vocabulary.json", "source.spm", "source_vocabulary.txt",
           "special_tokens_map.json", "target.spm", "target_vocabulary.txt", "tokenizer_config.json", "vocab.json"}));
    // no pattern: names that merely end like a tokenizer's are not fetched
    QCOMPARE(selectModelFiles({"config.json", "model.bin", "f000001.model", "x.spm", "evil_vocabulary.json",
                               "shared_vocabulary.json.bak", "sentencepiece.model"}),
             (V{"config.json", "model.bin", "sentencepiece.model"}));
    // one set of weights, in the order of preference
    QCOMPARE(selectModelFiles({"config.json", "pytorch_model.bin", "model.safetensors.index.json",
                               "model-00001-of-00002.safetensors", "pytorch_model.bin.index.json"}),
             (V{"config.json", "model.safetensors.index.json"}));
    QCOMPARE(selectModelFiles({"config.json", "pytorch_model.bin", "pytorch_model.bin.index.json", "tf_model.h5"}),
             (V{"config.json", "pytorch_model.bin"}));
    QCOMPARE(selectModelFiles({"config.json", "pytorch_model.bin.index.json", "pytorch_model-00001-of-00002.bin"}),
             (V{"config.json", "pytorch_model.bin.index.json"}));
    QCOMPARE(selectModelFiles({"config.json", "model.bin", "shared_vocabulary.json"}),
             (V{"config.json", "model.bin", "shared_vocabulary.json"}));
    QCOMPARE(selectModelFiles({"tf_model.h5", "flax_model.msgpack", "onnx/decoder_model.onnx"}), V{});

    const std::string index = R"({"metadata": {}, "weight_map": {"a": "model-00002-of-00002.safetensors",
        "b": "model-00001-of-00002.safetensors", "c": "model-00001-of-00002.safetensors"}})";
    QCOMPARE(attnlab::hub::shardsOfIndex(index, "model.safetensors.index.json"),
             (V{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}));
    QVERIFY(messageOf<PackageError>([] {
                attnlab::hub::shardsOfIndex(R"({"weight_map": {"a": "../../x"}})", "model.safetensors.index.json");
            }).contains("not a plain file name"));
    QVERIFY(messageOf<PackageError>([] { attnlab::hub::shardsOfIndex("[]", "i.json"); }).contains("weight_map"));
    // ETags as blob names
    QCOMPARE(*attnlab::hub::normalizeEtag("W/\"abc123\""), std::string("abc123"));
    QVERIFY(!attnlab::hub::normalizeEtag("\"../../x\""));
}

void TestHub::downloadsIntoTheSharedCacheLayout() {
    const Files files = smallModel();
    FakeHub& hub = startHub(files);
    const std::string snapshot = attnlab::hubSnapshot(name(kRepo), options());
    const std::string commit = commitOf(kRepo);
    QCOMPARE(snapshot, repoDir() + "/snapshots/" + commit);
    QCOMPARE(readFile(repoDir() + "/refs/main"), commit);  // the sha alone, no newline
    QCOMPARE(namesIn(snapshot),
             (std::vector<std::string>{"config.json", "model.safetensors", "source.spm", "target.spm", "vocab.json"}));
    std::set<std::string> blobs;
    for (const std::string& file : namesIn(snapshot)) {
        const fs::path link = snapshot + "/" + file;
        QVERIFY2(fs::is_symlink(link), file.c_str());
        const std::string etag = etagOf(files.at(file));
        QCOMPARE(fs::read_symlink(link).string(), "../../blobs/" + etag);  // relative, as huggingface_hub
        QCOMPARE(readFile(link), files.at(file));                          // byte-identical through it
        blobs.insert(etag);
    }
    QCOMPARE(sha256Hex(files.at("model.safetensors")).size(), size_t(64));
    QCOMPARE(namesIn(repoDir() + "/blobs"), std::vector<std::string>(blobs.begin(), blobs.end()));  // no .incomplete
    // what a translation model does not need was never asked for
    for (const std::string& path : paths(hub.requests(), "GET")) {
        QVERIFY2(path.find("tf_model") == std::string::npos && path.find("onnx") == std::string::npos, path.c_str());
        QVERIFY2(path.find("README") == std::string::npos, path.c_str());
    }
    for (const auto& r : hub.requests()) QCOMPARE(r["agent"].get<std::string>().rfind("attnlab/", 0), size_t(0));
    // files are asked for by commit, so that a moving branch cannot mix two commits
    for (const std::string& path : paths(hub.requests(), "HEAD")) {
        QVERIFY2(path.find("/resolve/" + commit + "/") != std::string::npos, path.c_str());
    }
}

void TestHub::secondCallAndOfflineMakeNoRequest() {
    FakeHub& hub = startHub();
    const std::string first = attnlab::hubSnapshot(name(kRepo), options());
    hub.clearLog();
    QCOMPARE(attnlab::hubSnapshot(name(kRepo), options()), first);
    QCOMPARE(*attnlab::cachedHubSnapshot(name(kRepo), options()), first);
    HubOptions offline = options();
    offline.offline = true;
    QCOMPARE(attnlab::hubSnapshot(name(kRepo), offline), first);
    QCOMPARE(hub.requests().size(), size_t(0));
}

void TestHub::offlineWithAnEmptyCacheNamesTheMissingFiles() {
    FakeHub& hub = startHub();
    HubOptions o = options();
    o.offline = true;
    QVERIFY(!attnlab::cachedHubSnapshot(name(kRepo), o));
    const QString message = messageOf<PackageError>([&] { attnlab::hubSnapshot(name(kRepo), o); });
    QVERIFY2(message.contains("HF_HUB_OFFLINE") && message.contains("config.json") &&
                 message.contains("model.safetensors") && message.contains(kRepo),
             qPrintable(message));
    QCOMPARE(hub.requests().size(), size_t(0));
}

void TestHub::readsACacheLaidOutByHuggingfaceHub() {
    // what huggingface_hub's hf_hub_download leaves, written here by hand (the fake hub not running)
    const std::string repo = "facebook/m2m-tiny", commit = std::string(40, 'c'), folder = repoDir(repo);
    const std::string
        config = R"({"model_type": "m2m_100"})",
        index = R"({"weight_map": {"x": "model-00001-of-00002.safetensors", "y": "model-00002-of-00002.safetensors"}})";
    const Files files = {{"config.json", config},
                         {"model.safetensors.index.json", index},
                         {"model-00001-of-00002.safetensors", bytesOf(4000, 1)},
                         {"model-00002-of-00002.safetensors", bytesOf(4000, 2)},
                         {"sentencepiece.bpe.model", bytesOf(2000, 3)}};
    writeInto(folder + "/refs/main", commit);
    for (const auto& [file, bytes] : files) {
        writeInto(folder + "/blobs/" + etagOf(bytes), bytes);
        fs::create_directories(folder + "/snapshots/" + commit);
        fs::create_symlink("../../blobs/" + etagOf(bytes), folder + "/snapshots/" + commit + "/" + file);
    }
    HubOptions o = options();
    o.endpoint = closedEndpoint();
    const std::string snapshot = attnlab::hubSnapshot(name(repo), o);
    QCOMPARE(snapshot, folder + "/snapshots/" + commit);
    QCOMPARE(readFile(snapshot + "/config.json"), config);
    QCOMPARE(attnlab::hubSnapshot(name(repo + "@" + commit), o), snapshot);  // a commit reads its snapshot
    // a shard missing: not complete, and offline says which
    fs::remove(snapshot + "/model-00002-of-00002.safetensors");
    QVERIFY(!attnlab::cachedHubSnapshot(name(repo), o));
    o.offline = true;
    const QString message = messageOf<PackageError>([&] { attnlab::hubSnapshot(name(repo), o); });
    QVERIFY2(message.contains("model-00002-of-00002.safetensors") && !message.contains("config.json"),
             qPrintable(message));
    // a dangling link counts as missing too
    fs::create_symlink("../../blobs/" + std::string(64, 'f'), snapshot + "/model-00002-of-00002.safetensors");
    QVERIFY(!attnlab::cachedHubSnapshot(name(repo), o));
}

void TestHub::resumesACutDownloadWithRange() {
    const Files files = smallModel();
    FakeHub& hub = startHub(files);
    hub.setFaults({{"cut_after", {{"model.safetensors", 70000}}}});
    const QString message = messageOf<PackageError>([&] { attnlab::hubSnapshot(name(kRepo), options()); });
    QVERIFY2(message.contains("model.safetensors") && message.contains("resume") && message.contains("127.0.0.1"),
             qPrintable(message));
    const std::string etag = sha256Hex(files.at("model.safetensors"));
    QCOMPARE(fs::file_size(repoDir() + "/blobs/" + etag + ".incomplete"), uintmax_t(70000));
    QVERIFY(!fs::exists(repoDir() + "/refs/main"));  // nothing says the model is there
    QVERIFY(!fs::exists(repoDir() + "/snapshots"));

    hub.setFaults(nlohmann::json::object());
    hub.clearLog();
    const std::string snapshot = attnlab::hubSnapshot(name(kRepo), options());
    QCOMPARE(readFile(snapshot + "/model.safetensors"), files.at("model.safetensors"));
    QVERIFY(!fs::exists(repoDir() + "/blobs/" + etag + ".incomplete"));
    bool resumed = false;
    for (const auto& r : hub.requests()) {
        if (r["method"] == "GET" && r["path"] == "/cdn/" + etag) resumed = r["range"] == "bytes=70000-";
        // the files completed the first time are not fetched again
        QVERIFY(r["method"] != "GET" || r["path"].get<std::string>().find("config.json") == std::string::npos);
    }
    QVERIFY(resumed);
}

void TestHub::startsOverWhenTheServerIgnoresRange() {
    const Files files = smallModel();
    FakeHub& hub = startHub(files);
    hub.setFaults({{"cut_after", {{"model.safetensors", 50000}}}});
    QVERIFY(messageOf<PackageError>([&] { attnlab::hubSnapshot(name(kRepo), options()); }).contains("resume"));
    hub.setFaults({{"ignore_range", {"model.safetensors"}}});  // answers 200 and the whole file
    const std::string snapshot = attnlab::hubSnapshot(name(kRepo), options());
    QCOMPARE(readFile(snapshot + "/model.safetensors"), files.at("model.safetensors"));
}

void TestHub::refusesBytesThatFailTheirChecksum() {
    const Files files = smallModel();
    FakeHub& hub = startHub(files);
    hub.setFaults({{"corrupt", {"model.safetensors"}}});
    const std::string etag = sha256Hex(files.at("model.safetensors"));
    const QString message = messageOf<PackageError>([&] { attnlab::hubSnapshot(name(kRepo), options()); });
    QVERIFY2(message.contains("model.safetensors") && message.contains("checksum") &&
                 message.contains(QString::fromStdString(etag)) && message.contains("got "),
             qPrintable(message));
    for (const std::string& blob : namesIn(repoDir() + "/blobs")) QVERIFY2(blob.rfind(etag, 0) != 0, blob.c_str());
    QVERIFY(!fs::exists(repoDir() + "/snapshots"));
    QVERIFY(!fs::exists(repoDir() + "/refs/main"));
}

void TestHub::gatedModelNeedsAToken() {
    const std::string repo = "meta-llama/gated-mt";
    FakeHub& hub = startHub(smallModel(), repo);
    // the CDN named by another host name (the same server): the token must not go there
    hub.setFaults({{"gated", {repo}}, {"token", "hf_right"}, {"cdn_host", "localhost"}});
    QString message = messageOf<PackageError>([&] { attnlab::hubSnapshot(name(repo), options()); });
    QVERIFY2(message.contains("HF_TOKEN") && message.contains("huggingface-cli login") &&
                 message.contains(QString::fromStdString(repo)),
             qPrintable(message));
    HubOptions o = options();
    o.token = "hf_wrong";
    message = messageOf<PackageError>([&] { attnlab::hubSnapshot(name(repo), o); });
    QVERIFY2(message.contains("refused the token") && message.contains("HF_TOKEN"), qPrintable(message));
    o.token = "hf_right";
    hub.clearLog();
    const std::string snapshot = attnlab::hubSnapshot(name(repo), o);
    QCOMPARE(readFile(snapshot + "/model.safetensors"), smallModel().at("model.safetensors"));
    int to_hub = 0, to_cdn = 0;
    for (const auto& r : hub.requests()) {
        const bool cdn = r["path"].get<std::string>().rfind("/cdn/", 0) == 0;
        QCOMPARE(r["authorization"].get<bool>(), !cdn);
        QCOMPARE(r["host"].get<std::string>().rfind(cdn ? "localhost:" : "127.0.0.1:", 0), size_t(0));
        (cdn ? to_cdn : to_hub)++;
    }
    QVERIFY(to_hub > 0 && to_cdn > 0);
}

void TestHub::unknownRepositoryOrRevision() {
    startHub();
    QString message = messageOf<PackageError>([&] { attnlab::hubSnapshot(name("nobody/nothing"), options()); });
    QVERIFY2(message.contains("unknown repository nobody/nothing") && message.contains("404"), qPrintable(message));
    message = messageOf<PackageError>([&] { attnlab::hubSnapshot(name(std::string(kRepo) + "@v9"), options()); });
    QVERIFY2(message.contains("has no revision v9"), qPrintable(message));
    m_hub->addRepo("org/no-weights", {{"config.json", "{}"}, {"tf_model.h5", bytesOf(2000, 1)}});
    message = messageOf<PackageError>([&] { attnlab::hubSnapshot(name("org/no-weights"), options()); });
    QVERIFY2(message.contains("no weights AttnLab reads") && message.contains("tf_model.h5"), qPrintable(message));
}

void TestHub::unreachableEndpointNamesTheHost() {
    HubOptions o = options();
    o.endpoint = closedEndpoint();
    const QString message = messageOf<PackageError>([&] { attnlab::hubSnapshot(name(kRepo), o); });
    QVERIFY2(message.contains("from 127.0.0.1") && message.contains("connect", Qt::CaseInsensitive),
             qPrintable(message));
}

void TestHub::cancelledFromTheCallbackAndResumedLater() {
    const Files files = smallModel();
    FakeHub& hub = startHub(files);
    hub.setFaults({{"slow", {{"model.safetensors", 200}}}});  // 16 kB every 200 ms: 2.6 s for the file
    int calls_after_cancel = 0;
    bool cancelled = false;
    const auto cancel = [&](const HubProgress& p) {
        if (cancelled) ++calls_after_cancel;
        if (p.file == "model.safetensors" && p.file_done > 0) cancelled = true;
        return !cancelled;
    };
    QCOMPARE(messageOf<CancelledError>([&] { attnlab::hubSnapshot(name(kRepo), options(), cancel); }),
             QString("cancelled"));
    // It stopped the transfer (no timing asserted: the partial file below is shorter than the file).
    QCOMPARE(calls_after_cancel, 0);
    const std::string partial = repoDir() + "/blobs/" + sha256Hex(files.at("model.safetensors")) + ".incomplete";
    QVERIFY(fs::exists(partial));
    const auto kept = fs::file_size(partial);
    QVERIFY(kept > 0 && kept < files.at("model.safetensors").size());
    QVERIFY(!fs::exists(repoDir() + "/refs/main"));

    hub.setFaults(nlohmann::json::object());
    hub.clearLog();
    const std::string snapshot = attnlab::hubSnapshot(name(kRepo), options());
    QCOMPARE(readFile(snapshot + "/model.safetensors"), files.at("model.safetensors"));
    bool resumed = false;
    for (const auto& r : hub.requests()) resumed |= r["range"] == "bytes=" + std::to_string(kept) + "-";
    QVERIFY(resumed);
}

void TestHub::prefersSafetensorsAndFetchesShardsByIndex() {
    const std::string index =
        R"({"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}})";
    const Files sharded = {{"config.json", "{}"},
                           {"model.safetensors.index.json", index},
                           {"model-00001-of-00002.safetensors", bytesOf(3000, 1)},
                           {"model-00002-of-00002.safetensors", bytesOf(3000, 2)},
                           {"pytorch_model.bin", bytesOf(6000, 3)},
                           {"flax_model.msgpack", bytesOf(6000, 4)}};
    FakeHub& hub = startHub(sharded, "org/sharded");
    hub.addRepo(
        "org/both",
        {{"config.json", "{}"}, {"model.safetensors", bytesOf(3000, 5)}, {"pytorch_model.bin", bytesOf(3000, 6)}});
    const std::string snapshot = attnlab::hubSnapshot(name("org/sharded"), options());
    QCOMPARE(namesIn(snapshot),
             (std::vector<std::string>{"config.json", "model-00001-of-00002.safetensors",
                                       "model-00002-of-00002.safetensors", "model.safetensors.index.json"}));
    for (const std::string& f : namesIn(snapshot)) QCOMPARE(readFile(snapshot + "/" + f), sharded.at(f));
    QCOMPARE(namesIn(attnlab::hubSnapshot(name("org/both"), options())),
             (std::vector<std::string>{"config.json", "model.safetensors"}));
    for (const auto& r : hub.requests()) {
        const std::string path = r["path"];
        QVERIFY2(path.find("pytorch_model") == std::string::npos && path.find("flax") == std::string::npos,
                 path.c_str());
    }
}

void TestHub::progressIsMonotoneAndEndsAtTheTotal() {
    const Files files = smallModel();
    FakeHub& hub = startHub(files);
    hub.setFaults({{"slow", {{"model.safetensors", 25}}}});  // long enough for reports in between
    std::vector<HubProgress> reports;
    attnlab::hubSnapshot(name(kRepo), options(), [&](const HubProgress& p) {
        reports.push_back(p);
        return true;
    });
    QVERIFY(reports.size() >= 6);
    // config.json, vocab.json, one blob for source.spm = target.spm, model.safetensors
    const int64_t total = int64_t(files.at("config.json").size() + files.at("vocab.json").size() +
                                  files.at("source.spm").size() + files.at("model.safetensors").size());
    int in_between = 0;
    for (size_t i = 0; i < reports.size(); ++i) {
        const HubProgress& p = reports[i];
        if (p.files_total == 0) {  // while the files are listed (the callback is asked whether to go on)
            QCOMPARE(p.done, int64_t(0));
            continue;
        }
        QCOMPARE(p.total, total);
        QCOMPARE(p.files_total, 4);
        QVERIFY(p.file_done <= p.file_total && p.done <= p.total);
        if (i > 0) QVERIFY(p.done >= reports[i - 1].done && p.files_done >= reports[i - 1].files_done);
        in_between += p.file == "model.safetensors" && p.file_done > 0 && p.file_done < p.file_total;
    }
    QVERIFY(in_between >= 2);
    QCOMPARE(reports.back().done, total);
    QCOMPARE(reports.back().files_done, 4);
    QVERIFY(reports.back().bytes_per_second > 0);
    QCOMPARE(reports.back().seconds_left, 0.0);
}

void TestHub::revisionsWithSlashesAndCommits() {
    const Files files = smallModel();
    FakeHub& hub = startHub(files);
    hub.setFaults({{"revisions", {"refs/pr/1"}}});
    const std::string commit = commitOf(kRepo);
    const std::string snapshot = attnlab::hubSnapshot(name(std::string(kRepo) + "@refs/pr/1"), options());
    QCOMPARE(readFile(repoDir() + "/refs/refs/pr/1"), commit);  // nested, as huggingface_hub writes it
    QCOMPARE(paths(hub.requests(), "GET").front(),
             "/api/models/" + std::string(kRepo) + "/revision/refs%2Fpr%2F1?blobs=true");
    // a commit: no ref written, its snapshot read directly
    QCOMPARE(attnlab::hubSnapshot(name(std::string(kRepo) + "@" + commit), options()), snapshot);
    QCOMPARE(namesIn(repoDir() + "/refs"), std::vector<std::string>{"refs"});
}

void TestHub::aFileThatCannotBeWrittenLeavesNothingHalfWritten() {
    const Files files = smallModel();
    startHub(files);
    // a file-size limit makes every write past 20 kB fail (EFBIG), as a full disk would (ENOSPC)
    rlimit saved{};
    getrlimit(RLIMIT_FSIZE, &saved);
    const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
    rlimit limited = saved;
    limited.rlim_cur = 20000;
    QCOMPARE(setrlimit(RLIMIT_FSIZE, &limited), 0);
    const QString message = messageOf<PackageError>([&] { attnlab::hubSnapshot(name(kRepo), options()); });
    setrlimit(RLIMIT_FSIZE, &saved);
    std::signal(SIGXFSZ, old_handler);
    const std::string etag = sha256Hex(files.at("model.safetensors"));
    QVERIFY2(message.contains("cannot write") && message.contains(QString::fromStdString(etag + ".incomplete")) &&
                 message.contains("File too large"),
             qPrintable(message));
    for (const std::string& blob : namesIn(repoDir() + "/blobs")) QVERIFY2(blob.rfind(etag, 0) != 0, blob.c_str());
    QVERIFY(!fs::exists(repoDir() + "/snapshots"));
    QVERIFY(!fs::exists(repoDir() + "/refs"));
}

void TestHub::bigDownloadIsStreamed() {
    const int mb = qEnvironmentVariableIntValue("ATTNLAB_HUB_BIG_MB");
    if (mb <= 0) QSKIP("ATTNLAB_HUB_BIG_MB not set: the large download is measured by hand");
    const std::string weights = m_case->path().toStdString() + "/hub/root/org/big/model.safetensors";
    fs::create_directories(fs::path(weights).parent_path());
    {
        std::ofstream out(weights, std::ios::binary);
        const std::string block = bytesOf(1 << 20, 9);
        for (int i = 0; i < mb; ++i) out << block;
    }
    startHub({{"config.json", "{}"}}, "org/big");
    // This process only (the server is a child of its own), above what it held before: LibTorch and the
    // libraries alone are ~150 MB. Writing 5 to clear_refs resets the peak (VmHWM) to the present.
    const auto kib = [](const char* field) {
        std::ifstream status("/proc/self/status");
        for (std::string line; std::getline(status, line);)
            if (line.rfind(field, 0) == 0) return std::stol(line.substr(std::strlen(field)));
        return -1L;
    };
    std::ofstream("/proc/self/clear_refs") << "5";
    const long before = kib("VmRSS:");
    QElapsedTimer timer;
    timer.start();
    const std::string snapshot = attnlab::hubSnapshot(name("org/big"), options());
    const long peak = kib("VmHWM:");
    qInfo("%d MB in %.1f s; resident memory %.1f MB before, peak %.1f MB during (+%.1f MB)", mb,
          timer.elapsed() / 1000.0, before / 1024.0, peak / 1024.0, (peak - before) / 1024.0);
    QCOMPARE(fs::file_size(snapshot + "/model.safetensors"), uintmax_t(mb) << 20);
    QVERIFY2(peak - before < 64 * 1024, "the download was held in memory");
}

// The bundled model served as a repository of the hub: got by name, it translates exactly as its folder
// (the same ids, log-probabilities and maps: the same bytes through the cache's links).
void TestHub::aModelGotByNameTranslatesAsItsFolder() {
    const std::string bundled = attnlab::resolveModelArgument("de-en");
    Files files;
    for (const auto& e : fs::directory_iterator(bundled))
        if (e.is_regular_file()) files[e.path().filename().string()] = readFile(e.path().string());
    startHub(files, "attnlab/multi30k-de-en");
    const std::string snapshot = attnlab::hubSnapshot(name("attnlab/multi30k-de-en"), options());
    attnlab::TranslatorOptions cpu;
    cpu.device = "cpu";
    attnlab::Translator from_folder(bundled, cpu), from_hub(snapshot, cpu);
    attnlab::DecodingOptions o;
    o.return_attention = true;
    for (const auto& example : from_folder.info().examples) {
        const auto a = from_folder.translate(example.source, o), b = from_hub.translate(example.source, o);
        QCOMPARE(b.best.text, a.best.text);
        QCOMPARE(b.best.ids, a.best.ids);
        QCOMPARE(b.best.token_log_probs, a.best.token_log_probs);
        QCOMPARE(attnlab::testing::worstMapDifference(a.cross, b.cross), 0.0);
    }
    QVERIFY(!from_hub.info().examples.empty());  // examples.tsv came along (an AttnLab package's file)
}

// --model ORG/NAME: a folder of that path wins (no request); else the hub, as the environment says.
void TestHub::modelArgumentTakesAFolderFirstThenTheHub() {
    FakeHub& hub = startHub();
    const QString before = QDir::currentPath();
    QVERIFY(QDir::setCurrent(m_case->path()));
    fs::create_directories(kRepo);  // a folder named like the repository, relative to here
    QCOMPARE(attnlab::resolveModelArgument(kRepo), std::string(kRepo));
    QCOMPARE(hub.requests().size(), size_t(0));
    fs::remove_all("Helsinki-NLP");
    qputenv("HF_ENDPOINT", QByteArray::fromStdString(hub.endpoint()));
    qputenv("HF_HUB_CACHE", QByteArray::fromStdString(cacheDir()));
    const std::string got = attnlab::resolveModelArgument(kRepo);
    qunsetenv("HF_ENDPOINT");
    qunsetenv("HF_HUB_CACHE");
    QDir::setCurrent(before);
    QCOMPARE(got, repoDir() + "/snapshots/" + commitOf(kRepo));
    QVERIFY(messageOf([] { attnlab::resolveModelArgument("no-such-model"); }).contains("not a Hugging Face name"));
}

void TestHub::namesASnapshotByItsRepository() {
    startHub();
    const std::string snapshot = attnlab::hubSnapshot(name(kRepo), options());
    auto n = attnlab::hubNameOfSnapshot(snapshot);
    QVERIFY(n);
    QCOMPARE(attnlab::hubModelNameString(*n), std::string(kRepo));  // main: left out
    QCOMPARE(attnlab::hubNameOfSnapshot(snapshot + "/config.json")->repo, std::string(kRepo));
    fs::remove(repoDir() + "/refs/main");
    writeInto(repoDir() + "/refs/refs/pr/3", commitOf(kRepo));
    QCOMPARE(attnlab::hubNameOfSnapshot(snapshot)->revision, std::string("refs/pr/3"));
    fs::remove(repoDir() + "/refs/refs/pr/3");
    QCOMPARE(attnlab::hubNameOfSnapshot(snapshot)->revision, commitOf(kRepo));  // no ref: the commit
    QVERIFY(!attnlab::hubNameOfSnapshot(m_case->path().toStdString()));
    QVERIFY(!attnlab::hubNameOfSnapshot(cacheDir() + "/models--x/snapshots/" + commitOf(kRepo)));
}

void TestHub::readsTheShippedCatalog() {
    const std::string path = attnlab::bundledHubCatalogPath();
    QVERIFY(!path.empty());
    const auto catalog = attnlab::parseHubCatalog(readFile(path), path);
    QVERIFY(catalog.size() >= 40);
    std::set<std::string> repos;
    for (const auto& e : catalog) {
        repos.insert(e.repo);
        QVERIFY2(e.size_bytes > 100'000'000, e.repo.c_str());  // every model is at least a hundred MB
        QVERIFY(!e.licence.empty() && !e.languages.empty());
    }
    QCOMPARE(repos.size(), catalog.size());
    for (const char* r :
         {"Helsinki-NLP/opus-mt-de-en", "facebook/nllb-200-distilled-600M", "facebook/nllb-200-distilled-1.3B",
          "facebook/m2m100_418M", "facebook/mbart-large-50-many-to-many-mmt"})
        QVERIFY2(repos.count(r), r);
    QVERIFY(
        messageOf([] { attnlab::parseHubCatalog(R"({"format": 2, "models": []})", "c.json"); }).contains("format 2"));
    QVERIFY(messageOf([] {
                attnlab::parseHubCatalog(R"({"format": 1, "models": [{"repo": "not a name"}]})", "c.json");
            }).contains("c.json: model 1: \"not a name\" is not a hub name"));
    QVERIFY(messageOf([] {
                attnlab::parseHubCatalog(
                    R"({"format": 1, "models": [{"repo": "a/b", "family": "x", "source": ["de"], "target": ["en"],
                        "languages": "de-en", "licence": "MIT", "size_bytes": -1}]})",
                    "c.json");
            }).contains("size_bytes"));
}

void TestHub::describesProgressInWords() {
    HubProgress p;
    QCOMPARE(attnlab::describeHubProgress(p), std::string("Asking which files the model has…"));
    p.file = "model.safetensors";
    p.done = 45'200'000;
    p.total = 298'000'000;
    p.bytes_per_second = 850'000;
    p.seconds_left = 297.4;
    p.files_done = 2;
    p.files_total = 7;
    QCOMPARE(attnlab::describeHubProgress(p),
             std::string("model.safetensors · 45.2 MB of 298.0 MB · 850 kB/s · 4:57 left · file 3 of 7"));
    QCOMPARE(attnlab::byteSizeText(2'460'000'000), std::string("2.46 GB"));
    QCOMPARE(attnlab::byteSizeText(-5), std::string("0 kB"));
}

// What makes a snapshot complete, by its family: a MarianMT folder needs both SentencePiece models and its
// vocabulary (a cache filled with the config and the weights alone is completed from the hub, not taken);
// an index with shards missing gives way to the next format present, as the loader does.
void TestHub::aSnapshotIsCompleteOnlyWithWhatItsLoaderReads() {
    const std::string dir = m_case->path().toStdString() + "/snap";
    const std::string spm = bytesOf(3000, 3);
    writeInto(dir + "/config.json", R"({"model_type": "marian"})");
    writeInto(dir + "/model.safetensors", bytesOf(2000, 5));
    writeInto(dir + "/source.spm", spm);
    writeInto(dir + "/vocab.json", "{}");
    QCOMPARE(attnlab::hub::missingFromSnapshot(dir), std::vector<std::string>{"target.spm"});
    writeInto(dir + "/target.spm", spm);
    QVERIFY(attnlab::hub::missingFromSnapshot(dir).empty());
    writeInto(dir + "/config.json", R"({"model_type": "m2m_100"})");
    QCOMPARE(attnlab::hub::missingFromSnapshot(dir), std::vector<std::string>{"sentencepiece.bpe.model"});
    writeInto(dir + "/config.json", R"({"model_type": "marian"})");
    // an index whose shard is missing, beside a whole pytorch_model.bin: the .bin is the weights
    fs::remove(dir + "/model.safetensors");
    writeInto(dir + "/model.safetensors.index.json", R"({"weight_map": {"a": "model-00001-of-00002.safetensors"}})");
    QCOMPARE(attnlab::hub::missingFromSnapshot(dir), std::vector<std::string>{"model-00001-of-00002.safetensors"});
    writeInto(dir + "/pytorch_model.bin", bytesOf(2000, 6));
    QVERIFY(attnlab::hub::missingFromSnapshot(dir).empty());
}

// A snapshot's entry that is not the hub's file (a dangling link another program left) is refused by name and
// left as it was; a partial download another program began is resumed, and kept when this one fails.
void TestHub::neverReplacesWhatItDidNotWrite() {
    const Files files = smallModel();
    startHub(files);
    const std::string snapshot = repoDir() + "/snapshots/" + commitOf(kRepo);
    fs::create_directories(snapshot);
    fs::create_symlink("../../blobs/gone", snapshot + "/vocab.json");
    const QString message = messageOf<PackageError>([&] { attnlab::hubSnapshot(name(kRepo), options()); });
    QVERIFY2(message.contains(QString::fromStdString(snapshot + "/vocab.json")) && message.contains("does not replace"),
             qPrintable(message));
    QCOMPARE(fs::read_symlink(snapshot + "/vocab.json").string(), std::string("../../blobs/gone"));
    QVERIFY(!fs::exists(repoDir() + "/refs/main"));
    // Another program's partial download of the weights, resumed, and the connection cut again: its bytes stay.
    fs::remove(snapshot + "/vocab.json");
    const std::string weights = files.at("model.safetensors");
    const std::string partial = repoDir() + "/blobs/" + sha256Hex(weights) + ".incomplete";
    fs::remove(repoDir() + "/blobs/" + sha256Hex(weights));  // (the call above got it whole)
    writeInto(partial, weights.substr(0, 50000));
    m_hub->setFaults({{"cut_after", {{"model.safetensors", 80000}}}});
    const QString cut = messageOf([&] { attnlab::hubSnapshot(name(kRepo), options()); });
    QVERIFY2(cut.contains("resume"), qPrintable(cut));
    QVERIFY(fs::file_size(partial) >= 50000);  // its bytes stay, with what came since
    QCOMPARE(readFile(partial).substr(0, 50000), weights.substr(0, 50000));
    m_hub->setFaults(nlohmann::json::object());
    QCOMPARE(readFile(attnlab::hubSnapshot(name(kRepo), options()) + "/model.safetensors"), weights);
}

namespace {
// A file outside the cache that someone who can write to a shared cache would like AttnLab to write to.
struct Victim {
    std::string path;
    std::string bytes = "my thesis, chapter 1\n";
    explicit Victim(const std::string& dir) : path(dir + "/victim/thesis.txt") { writeInto(path, bytes); }
    bool untouched() const { return fs::exists(path) && readFile(path) == bytes; }
};

// Environment variables set for one test and unset when it ends, whether it passes or not.
struct EnvFor {
    std::vector<const char*> names;
    EnvFor(std::initializer_list<std::pair<const char*, std::string>> values) {
        for (const auto& [name, value] : values) {
            qputenv(name, QByteArray::fromStdString(value));
            names.push_back(name);
        }
    }
    EnvFor(const EnvFor&) = delete;
    EnvFor& operator=(const EnvFor&) = delete;
    ~EnvFor() {
        for (const char* name : names) qunsetenv(name);
    }
};

std::vector<std::string> noticesOf(const std::function<void(const attnlab::HubProgressCallback&)>& run) {
    std::vector<std::string> notices;
    run([&](const HubProgress& p) {
        if (!p.notice.empty()) notices.push_back(p.notice);
        return true;
    });
    return notices;
}
}  // namespace

// Issue 50, item 1: in a cache others can write to, a link or a FIFO planted at every name AttnLab writes is
// set aside or refused, never written through; the victim's file outside the cache keeps its bytes.
void TestHub::aPlantedLinkOrFifoIsNeverWrittenThrough() {
    const Files files = smallModel();
    FakeHub& hub = startHub(files);
    const Victim victim(m_case->path().toStdString());
    const std::string weights_etag = sha256Hex(files.at("model.safetensors"));
    const std::string config_etag = gitBlobSha1(files.at("config.json"));
    const std::string spm_etag = sha256Hex(files.at("source.spm"));
    const std::string locks = cacheDir() + "/.locks/" + attnlab::hub::repoFolderName(kRepo);
    // the partial file of the weights: a link to the victim (appended to, before); with Range ignored (truncated)
    fs::create_directories(repoDir() + "/blobs");
    fs::create_symlink(victim.path, repoDir() + "/blobs/" + weights_etag + ".incomplete");
    // the config's partial file: a FIFO (opening it for writing blocked, or wrote into a pipe)
    QCOMPARE(::mkfifo((repoDir() + "/blobs/" + config_etag + ".incomplete").c_str(), 0600), 0);
    // a lock file: a dangling link to where a new file would be made outside the cache
    fs::create_directories(locks);
    const std::string planted_target = m_case->path().toStdString() + "/victim/created-by-lock";
    fs::create_symlink(planted_target, locks + "/" + spm_etag + ".lock");
    // refs/main and the old temporary name: links to the victim
    fs::create_directories(repoDir() + "/refs");
    fs::create_symlink(victim.path, repoDir() + "/refs/main");
    fs::create_symlink(victim.path, repoDir() + "/refs/main.attnlab-tmp-" + std::to_string(::getpid()));
    hub.setFaults({{"ignore_range", {"model.safetensors"}}});

    std::string snapshot;
    const std::vector<std::string> notices =
        noticesOf([&](const auto& progress) { snapshot = attnlab::hubSnapshot(name(kRepo), options(), progress); });
    QVERIFY(victim.untouched());
    QVERIFY(!fs::exists(planted_target));
    for (const auto& [file, bytes] : files)
        if (fs::exists(snapshot + "/" + file)) QCOMPARE(readFile(snapshot + "/" + file), bytes);
    QCOMPARE(readFile(snapshot + "/model.safetensors"), files.at("model.safetensors"));
    // refs/main is now a file of AttnLab's (the link itself replaced by a rename, its target never opened)
    QVERIFY(!fs::is_symlink(repoDir() + "/refs/main"));
    QCOMPARE(readFile(repoDir() + "/refs/main"), commitOf(kRepo));
    // each planted thing set aside with a message naming it and what it was
    QCOMPARE(notices.size(), size_t(3));
    const std::string all = notices[0] + "\n" + notices[1] + "\n" + notices[2];
    QVERIFY2(all.find(weights_etag + ".incomplete was a symbolic link") != std::string::npos, all.c_str());
    QVERIFY2(all.find(config_etag + ".incomplete was a FIFO") != std::string::npos, all.c_str());
    QVERIFY2(all.find(spm_etag + ".lock was a symbolic link") != std::string::npos, all.c_str());
    QVERIFY2(all.find("set aside as ") != std::string::npos, all.c_str());
    size_t set_aside = 0;
    for (const std::string& f : namesIn(repoDir() + "/blobs")) set_aside += f.find(".set-aside-") != std::string::npos;
    QCOMPARE(set_aside, size_t(2));
    // nothing of AttnLab's temporaries is left behind; the planted old temporary name was never opened
    const std::string planted_temporary = "main.attnlab-tmp-" + std::to_string(::getpid());
    QCOMPARE(namesIn(repoDir() + "/refs"), (std::vector<std::string>{"main", planted_temporary}));
    QVERIFY(fs::is_symlink(repoDir() + "/refs/" + planted_temporary));

    // FIFOs at refs/main and at a lock file: never opened to block on; the ref replaced by a rename, the lock
    // set aside; a FIFO as a snapshot's entry is refused by name, not opened
    fs::remove_all(repoDir() + "/snapshots");
    fs::remove(repoDir() + "/refs/main");
    fs::remove(repoDir() + "/blobs/" + config_etag);
    fs::remove(locks + "/" + config_etag + ".lock");
    QCOMPARE(::mkfifo((repoDir() + "/refs/main").c_str(), 0600), 0);
    QCOMPARE(::mkfifo((locks + "/" + config_etag + ".lock").c_str(), 0600), 0);
    const std::vector<std::string> again =
        noticesOf([&](const auto& progress) { attnlab::hubSnapshot(name(kRepo), options(), progress); });
    QCOMPARE(again.size(), size_t(1));
    QVERIFY2(again[0].find(config_etag + ".lock was a FIFO") != std::string::npos, again[0].c_str());
    QCOMPARE(readFile(repoDir() + "/refs/main"), commitOf(kRepo));
    fs::remove(repoDir() + "/refs/main");
    fs::remove(snapshot + "/vocab.json");
    QCOMPARE(::mkfifo((snapshot + "/vocab.json").c_str(), 0600), 0);
    const QString refused = messageOf<PackageError>([&] { attnlab::hubSnapshot(name(kRepo), options()); });
    QVERIFY2(refused.contains("vocab.json exists and is not the file the hub has for it"), qPrintable(refused));
    QVERIFY(victim.untouched());
}

// A folder of the cache (blobs/, snapshots/, the repository's own) that is a link: refused by name, nothing
// written through it.
void TestHub::aPlantedLinkForACacheFolderIsRefused() {
    startHub();
    const std::string elsewhere = m_case->path().toStdString() + "/victim-folder";
    fs::create_directories(elsewhere);
    fs::create_directories(repoDir());
    fs::create_directory_symlink(elsewhere, repoDir() + "/blobs");
    const QString message = messageOf<PackageError>([&] { attnlab::hubSnapshot(name(kRepo), options()); });
    QVERIFY2(message.contains(QString::fromStdString(repoDir() + "/blobs is a symbolic link")) &&
                 message.contains("never through a link"),
             qPrintable(message));
    QVERIFY(namesIn(elsewhere).empty());
    fs::remove(repoDir() + "/blobs");
    fs::remove_all(repoDir());
    fs::create_directory_symlink(elsewhere, repoDir());  // the repository's folder itself
    QVERIFY(
        messageOf<PackageError>([&] { attnlab::hubSnapshot(name(kRepo), options()); }).contains("is a symbolic link"));
    QVERIFY(namesIn(elsewhere).empty());
}

// Item 2: a body that does not end, or goes past the declared size, is cut at that size and not kept.
void TestHub::theServerNeverDecidesTheBytes() {
    const Files files = smallModel();
    FakeHub& hub = startHub(files);
    const int64_t size = int64_t(files.at("model.safetensors").size());
    const std::string partial = repoDir() + "/blobs/" + sha256Hex(files.at("model.safetensors")) + ".incomplete";
    for (const nlohmann::json& fault : {nlohmann::json{{"endless", {"model.safetensors"}}},
                                        nlohmann::json{{"too_long", {{"model.safetensors", 50'000'000}}}}}) {
        hub.setFaults(fault);
        QElapsedTimer timer;
        timer.start();
        const QString message = messageOf<PackageError>([&] { attnlab::hubSnapshot(name(kRepo), options()); });
        QVERIFY2(message.contains("sent more than the " + QString::number(size) + " bytes model.safetensors has") &&
                     message.contains("127.0.0.1"),
                 qPrintable(message));
        QVERIFY(!fs::exists(partial) || int64_t(fs::file_size(partial)) <= size);  // never one byte more
        QVERIFY(timer.elapsed() < 60'000);  // it stopped at the size, not when the server did (2 GB)
        QVERIFY(!fs::exists(repoDir() + "/refs/main"));
    }
    // a file whose size is said nowhere (listing, X-Linked-Size, Content-Length) is not got at all
    hub.setFaults({{"no_size", {"model.safetensors"}}});
    const QString unsized = messageOf<PackageError>([&] { attnlab::hubSnapshot(name(kRepo), options()); });
    QVERIFY2(unsized.contains("declares no size for model.safetensors") && unsized.contains("of a known size"),
             qPrintable(unsized));
    QVERIFY(!fs::exists(partial));
    hub.setFaults(nlohmann::json::object());
    QCOMPARE(readFile(attnlab::hubSnapshot(name(kRepo), options()) + "/model.safetensors"),
             files.at("model.safetensors"));
}

// Item 3: a server that sends a few bytes a second is left after the window, with the host and the rate named;
// what arrived is kept to resume from.
void TestHub::aDrippingServerIsLeftWithAMessage() {
    const Files files = smallModel();
    FakeHub& hub = startHub(files);
    hub.setFaults({{"drip", {{"model.safetensors", {64, 100}}}}});  // 640 B/s
    HubOptions o = options();
    o.min_bytes_per_second = 4096;
    o.slow_window_s = 5;  // (every request is held to it: 5 s leaves a busy machine room for the listing)
    QElapsedTimer timer;
    timer.start();
    const QString message = messageOf<PackageError>([&] { attnlab::hubSnapshot(name(kRepo), o); });
    QVERIFY2(message.contains("model.safetensors from 127.0.0.1 was slower than 4 kB/s for 5 s") &&
                 message.contains("on average") && message.contains("ATTNLAB_HUB_MIN_RATE") &&
                 message.contains("resume"),
             qPrintable(message));
    QVERIFY(timer.elapsed() < 60'000);  // seconds, not the 5 minutes the file would take
    const std::string partial = repoDir() + "/blobs/" + sha256Hex(files.at("model.safetensors")) + ".incomplete";
    QVERIFY(fs::exists(partial) && fs::file_size(partial) > 0);
    hub.setFaults(nlohmann::json::object());
    QCOMPARE(readFile(attnlab::hubSnapshot(name(kRepo), options()) + "/model.safetensors"),
             files.at("model.safetensors"));
}

// Item 4: 100,000 listed names that end like a tokenizer's file are not asked about; caps on the count and the
// bytes are checked against the listing before the first byte.
void TestHub::onlyTheLoadersFilesAreFetchedWithinCaps() {
    FakeHub& hub = startHub();
    hub.setFaults({{"extra_siblings", 100000}});
    attnlab::hubSnapshot(name(kRepo), options());
    size_t heads = 0;
    for (const auto& r : hub.requests()) {
        QVERIFY2(r["path"].get<std::string>().find("/f0") == std::string::npos, r.dump().c_str());
        heads += r["method"] == "HEAD";
    }
    QVERIFY2(heads <= 2 * 5, std::to_string(heads).c_str());  // five files, asked about at most twice each
    // caps: the listing's sizes say more than the cap; a lower file cap
    fs::remove_all(cacheDir());
    hub.clearLog();
    hub.setFaults({{"listed_size", {{"model.safetensors", int64_t(80) << 30}}}});
    QString message = messageOf<PackageError>([&] { attnlab::hubSnapshot(name(kRepo), options()); });
    QVERIFY2(message.contains("its file list comes to 85.90 GB, more than AttnLab's cap of 68.72 GB") &&
                 message.contains("ATTNLAB_HUB_MAX_BYTES"),
             qPrintable(message));
    QVERIFY(paths(hub.requests(), "GET").size() == 1 && paths(hub.requests(), "HEAD").empty());
    hub.setFaults(nlohmann::json::object());
    HubOptions few = options();
    few.max_files = 3;
    message = messageOf<PackageError>([&] { attnlab::hubSnapshot(name(kRepo), few); });
    QVERIFY2(message.contains("names 5 files to get, more than AttnLab's cap of 3"), qPrintable(message));
    // a weights index naming more shards than the cap: refused once read, before any shard
    Files sharded = {{"config.json", R"({"model_type": "marian"})"},
                     {"vocab.json", "{}"},
                     {"source.spm", bytesOf(1500, 1)},
                     {"target.spm", bytesOf(1500, 2)}};
    nlohmann::json map;
    for (int i = 0; i < 100; ++i) {
        const std::string shard = "model-" + std::to_string(10000 + i) + "-of-00100.safetensors";
        map["t" + std::to_string(i)] = shard;
        sharded[shard] = "x";
    }
    sharded["model.safetensors.index.json"] = nlohmann::json{{"weight_map", map}}.dump();
    hub.addRepo("someone/sharded", sharded);
    hub.clearLog();
    message = messageOf<PackageError>([&] { attnlab::hubSnapshot(name("someone/sharded"), options()); });
    QVERIFY2(message.contains("its weights index names 105 files to get, more than AttnLab's cap of 64"),
             qPrintable(message));
    for (const std::string& get : paths(hub.requests(), "GET"))
        QVERIFY2(get.find("model-1") == std::string::npos, get.c_str());
}

// hubModelListing: what a question before a download shows, from one request, nothing written.
void TestHub::aListingSaysSizeAndLicenceWithOneRequest() {
    const Files files = smallModel();
    FakeHub& hub = startHub(files);
    hub.setFaults({{"licence", "cc-by-4.0"}});
    const attnlab::HubModelListing l = attnlab::hubModelListing(name(kRepo), options());
    QCOMPARE(l.commit, commitOf(kRepo));
    QCOMPARE(l.licence, std::string("cc-by-4.0"));
    QCOMPARE(l.files,
             (std::vector<std::string>{"config.json", "model.safetensors", "source.spm", "target.spm", "vocab.json"}));
    int64_t expected = 0;
    for (const std::string& f : l.files) expected += int64_t(files.at(f).size());
    QCOMPARE(l.total_bytes, expected);
    QCOMPARE(l.cached_bytes, int64_t(0));
    QCOMPARE(hub.requests().size(), size_t(1));
    QVERIFY(!fs::exists(cacheDir()));
    attnlab::hubSnapshot(name(kRepo), options());
    QCOMPARE(attnlab::hubModelListing(name(kRepo), options()).cached_bytes, expected);
    hub.setFaults(nlohmann::json::object());
    QCOMPARE(attnlab::hubModelListing(name(kRepo), options()).licence, std::string());
}

// Item 8: --model A/B with no folder A/B says so first; a name that can only be a path never reaches the hub.
void TestHub::aMissingFolderIsNamedAsOneFirst() {
    FakeHub& hub = startHub();
    const EnvFor env{{"HF_HUB_CACHE", cacheDir()}, {"HF_ENDPOINT", closedEndpoint()}};
    const QString message = messageOf<PackageError>([] { attnlab::resolveModelArgument("notmy/folder"); });
    QVERIFY2(message.startsWith("no folder notmy/folder here; as a Hugging Face name: cannot get the file list"),
             qPrintable(message));
    std::vector<std::string> notices;
    messageOf([&] {
        attnlab::resolveModelArgument("notmy/folder", [&](const HubProgress& p) {
            if (!p.notice.empty()) notices.push_back(p.notice);
            return true;
        });
    });
    QCOMPARE(notices.size(), size_t(1));
    QVERIFY2(notices[0].rfind("no folder notmy/folder here: getting it as a Hugging Face model from http://127.0.0.1:",
                              0) == 0,
             notices[0].c_str());
    qputenv("HF_ENDPOINT", QByteArray::fromStdString(hub.endpoint()));
    for (const char* path : {"./notmy/folder", "../notmy/folder", "/nowhere/notmy/folder", "~/notmy/folder",
                             "notmy/folder/sub", "notmy/model.safetensors", "notmy/pkg.argosmodel", "notmy\\folder"}) {
        const QString m = messageOf<InputError>([&] { attnlab::resolveModelArgument(path); });
        QVERIFY2(m.contains("no such folder or file here") && m.contains("not looked up on the Hugging Face hub"),
                 qPrintable(m));
    }
    // a control character in the value is shown escaped, not acted on
    const QString escaped = messageOf([] { attnlab::resolveModelArgument("bad\nname\x1b[31m"); });
    QVERIFY2(escaped.contains("bad\\nname\\x1B[31m") && !escaped.contains('\n') && !escaped.contains('\x1b'),
             qPrintable(escaped));
    // a mistyped path below a folder that is here: a path, not a name to look up
    const QString before = QDir::currentPath();
    QVERIFY(QDir::setCurrent(m_case->path()));
    fs::create_directories("models/opus-mt-en-de");
    const QString typo = messageOf<InputError>([] { attnlab::resolveModelArgument("models/opus-mt-en-dee"); });
    QDir::setCurrent(before);
    QVERIFY2(typo.contains("no such folder or file here (a path, below the folder models here"), qPrintable(typo));
    QCOMPARE(hub.requests().size(), size_t(0));
}

void TestHub::settingsFromTheEnvironmentAreChecked() {
    auto env = std::make_unique<EnvFor>(
        std::initializer_list<std::pair<const char*, std::string>>{{"ATTNLAB_HUB_MIN_RATE", "2048"},
                                                                   {"ATTNLAB_HUB_SLOW_WINDOW", "5"},
                                                                   {"ATTNLAB_HUB_MAX_FILES", "7"},
                                                                   {"ATTNLAB_HUB_MAX_BYTES", "1000000"}});
    const HubOptions o = attnlab::hubOptionsFromEnvironment();
    QCOMPARE(o.min_bytes_per_second, 2048L);
    QCOMPARE(o.slow_window_s, 5L);
    QCOMPARE(o.max_files, 7);
    QCOMPARE(o.max_total_bytes, int64_t(1000000));
    qputenv("ATTNLAB_HUB_SLOW_WINDOW", "a minute");
    QCOMPARE(messageOf<attnlab::ConfigError>([] { attnlab::hubOptionsFromEnvironment(); }),
             QString("ATTNLAB_HUB_SLOW_WINDOW=a minute is not a whole number"));
    env.reset();
    const HubOptions d = attnlab::hubOptionsFromEnvironment();
    QCOMPARE(d.min_bytes_per_second, 1024L);
    QCOMPARE(d.slow_window_s, 60L);
}

QTEST_GUILESS_MAIN(TestHub)
#include "tst_hub.moc"
