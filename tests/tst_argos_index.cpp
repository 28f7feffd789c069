// The Argos package index and package manager (attnlab/argos_index.h) against a local stand-in for the index
// (tests/support/fake_hub.py's /files/ route on 127.0.0.1; no test reaches the internet) serving an index.json
// and a small .argosmodel that scripts/ct2_reference.py writes: argos-translate's settings and keys, listing and
// search, an install cut and resumed with Range, its checksum checked (a wrong one refused by message, naming
// both sums), the installed folder as argos-translate names it, seen by the folder scan and opened as a model,
// remove (never through a link).
#include "fake_hub_server.h"
#include "fixtures.h"
#include "formats/argos/argos_package.h"

#include <attnlab/argos_index.h>
#include <attnlab/errors.h>
#include <attnlab/hub_progress.h>
#include <attnlab/package.h>
#include <attnlab/translator.h>

#include <QCryptographicHash>
#include <QtTest/QtTest>

#include <nlohmann/json.hpp>

#include <filesystem>

namespace fs = std::filesystem;
using attnlab::testing::messageOf;
using nlohmann::json;

class TestArgosIndex : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void cleanupTestCase();
    void indexKeysAsArgosTranslateReadsThem();
    void settingsFromEnvironmentAndSettingsFile();
    void listsAndSearchesTheIndex();
    void unreachableIndexIsNamed();
    void installIsResumedCheckedAndSeen();
    void wrongChecksumIsRefused();
    void removeTakesOnlyPackageFolders();

private:
    void writeIndex(const std::string& checksum);
    attnlab::ArgosOptions options() const { return attnlab::argosOptionsFromEnvironment(); }
    QTemporaryDir m_dir;
    std::unique_ptr<attnlab::testing::FakeHub> m_hub;
    std::string m_zip;  // the package's archive as the test wrote it
    std::string m_sha256;
    std::string m_packages;
    static constexpr const char* kArchive = "argos/translate-en_de-1_0.argosmodel";
};

void TestArgosIndex::initTestCase() {
    const std::string dir = m_dir.path().toStdString();
    m_zip = attnlab::testing::makeSmallArgosPackage(m_dir.filePath("made"), "en", "de", 7);
    if (m_zip.empty()) {
        if (qEnvironmentVariable("CI") == "true") QFAIL("CI=true but python3-torch / python3-sentencepiece is missing");
        QSKIP("python3-torch or python3-sentencepiece is not installed: no package to serve");
    }
    const std::string bytes = attnlab::testing::readFile(m_zip);
    m_sha256 =
        QCryptographicHash::hash(QByteArray::fromStdString(bytes), QCryptographicHash::Sha256).toHex().toStdString();
    m_hub = std::make_unique<attnlab::testing::FakeHub>(m_dir.filePath("hub"));
    attnlab::testing::writeInto(m_hub->root() + "/" + kArchive, bytes);
    m_hub->start();
    writeIndex(m_sha256);
    // Everything argos-translate reads from the environment points into the test's folder.
    m_packages = dir + "/packages";
    qputenv("ARGOS_PACKAGE_INDEX", QByteArray::fromStdString(m_hub->endpoint() + "/files/argos"));
    qputenv("ARGOS_PACKAGES_DIR", QByteArray::fromStdString(m_packages));
    qputenv("XDG_CACHE_HOME", QByteArray::fromStdString(dir + "/cache"));
    qputenv("XDG_CONFIG_HOME", QByteArray::fromStdString(dir + "/config"));
    qputenv("XDG_DATA_HOME", QByteArray::fromStdString(dir + "/data"));
}

void TestArgosIndex::cleanupTestCase() {
    if (m_hub) m_hub->stop();
}

// index.json as argospm-index writes it: en-de with its link after an ipfs:// one (never fetched), its size and
// `checksum`; an entry without code, links or versions; one of another type.
void TestArgosIndex::writeIndex(const std::string& checksum) {
    const json index =
        json::array({{{"package_version", "1.0"},
                      {"argos_version", "1.0"},
                      {"from_code", "en"},
                      {"from_name", "English"},
                      {"to_code", "de"},
                      {"to_name", "German"},
                      {"links", {"ipfs://QmNotFetched", m_hub->endpoint() + "/files/" + kArchive}},
                      {"size", fs::file_size(m_zip)},
                      {"checksum", checksum},
                      {"code", "translate-en_de"}},
                     {{"from_code", "de"}, {"from_name", "German"}, {"to_code", "fr"}, {"to_name", "French"}},
                     {{"type", "sbd"}, {"code", "sbd-en"}, {"from_codes", {"en"}}}});
    attnlab::testing::writeInto(m_hub->root() + "/argos/index.json", index.dump(2));
}

void TestArgosIndex::indexKeysAsArgosTranslateReadsThem() {
    const auto index = attnlab::parseArgosIndex(
        R"([{"from_code": "en", "to_code": "fr", "from_name": "English", "to_name": "French", "package_version": 1.9,
             "links": ["https://x/a.argosmodel", 7], "size": 123, "license": "CC-BY"},
            "not an object",
            {"from_code": "en", "to_code": "fr", "from_name": "English", "to_name": "French", "package_version": "1.10"},
            {"from_code": "ar", "to_code": "en", "from_name": "Arabic", "to_name": "English", "code": 5}])",
        "test");
    QCOMPARE(index.size(), size_t(3));                        // the string is passed over, as a non-object has no keys
    QCOMPARE(index[0].from_code, std::string("ar"));          // sorted by language names, then version
    QCOMPARE(index[0].code, std::string("translate-ar_en"));  // a code of another type is absent: made as package.py
    QCOMPARE(index[0].type, std::string("translate"));
    QCOMPARE(index[0].size, int64_t(-1));
    QVERIFY(index[0].links.empty());
    QCOMPARE(index[1].package_version, std::string("1.9"));  // a number taken as its text
    QCOMPARE(index[2].package_version, std::string("1.10"));
    QCOMPARE(index[1].links, std::vector<std::string>{"https://x/a.argosmodel"});
    QCOMPARE(index[1].size, int64_t(123));
    QCOMPARE(index[1].licence, std::string("CC-BY"));
    // the newest version of a pair is the one installed
    QCOMPARE(attnlab::findArgosEntry(index, "en-fr", "u").package_version, std::string("1.10"));
    QCOMPARE(messageOf([] { attnlab::parseArgosIndex(R"({"a": 1})", "ORIGIN"); }),
             QString("ORIGIN: not a JSON list of packages (argospm-index's index.json)"));
    QCOMPARE(messageOf([] { attnlab::parseArgosIndex("[{", "ORIGIN"); }),
             QString("ORIGIN: not JSON (an Argos package index is a JSON list)"));
    QVERIFY(messageOf([] {
                attnlab::parseArgosIndex(std::string(attnlab::kMaxArgosIndexBytes + 1, ' '), "O");
            }).startsWith("O: larger than 8 MB"));
}

void TestArgosIndex::settingsFromEnvironmentAndSettingsFile() {
    QCOMPARE(attnlab::argosIndexUrl("https://h/main/"), std::string("https://h/main/index.json"));
    QCOMPARE(attnlab::argosIndexUrl("https://h/main"), std::string("https://h/main/index.json"));
    const std::string dir = m_dir.path().toStdString();
    QCOMPARE(options().index_url, m_hub->endpoint() + "/files/argos/index.json");
    QCOMPARE(options().packages_dir, m_packages);
    QCOMPARE(options().downloads_dir, dir + "/cache/argos-translate/downloads");
    // settings.json beside argos-translate's, read when the environment says nothing (settings.get_setting)
    attnlab::testing::writeInto(dir + "/config/argos-translate/settings.json",
                                R"({"ARGOS_PACKAGE_INDEX": "http://from-settings/", "ARGOS_PACKAGES_DIR": "/s/p"})");
    const QByteArray index = qgetenv("ARGOS_PACKAGE_INDEX");
    qunsetenv("ARGOS_PACKAGE_INDEX");
    qunsetenv("ARGOS_PACKAGES_DIR");
    const attnlab::ArgosOptions from_file = options();
    qputenv("XDG_CONFIG_HOME", QByteArray::fromStdString(dir + "/no-config"));  // no settings.json there
    qputenv("XDG_DATA_HOME", "/d");
    const std::string packages_default = options().packages_dir;
    qputenv("XDG_CONFIG_HOME", QByteArray::fromStdString(dir + "/config"));
    qputenv("XDG_DATA_HOME", QByteArray::fromStdString(dir + "/data"));
    qputenv("ARGOS_PACKAGE_INDEX", index);
    qputenv("ARGOS_PACKAGES_DIR", QByteArray::fromStdString(m_packages));
    fs::remove(dir + "/config/argos-translate/settings.json");
    QCOMPARE(from_file.index_url, std::string("http://from-settings/index.json"));
    QCOMPARE(from_file.packages_dir, std::string("/s/p"));
    QCOMPARE(packages_default.substr(0, 3), std::string("/d/"));
    QCOMPARE(packages_default, std::string("/d/argos-translate/packages"));
    qputenv("ATTNLAB_ARGOS_MAX_BYTES", "12x");
    QCOMPARE(messageOf<attnlab::ConfigError>([&] { options(); }),
             QString("ATTNLAB_ARGOS_MAX_BYTES=12x: not a whole number of bytes"));
    qputenv("ATTNLAB_ARGOS_MAX_BYTES", "1000");
    QCOMPARE(options().max_package_bytes, int64_t(1000));
    qunsetenv("ATTNLAB_ARGOS_MAX_BYTES");
}

void TestArgosIndex::listsAndSearchesTheIndex() {
    const auto index = attnlab::fetchArgosIndex(options());
    QCOMPARE(index.size(), size_t(3));
    const auto& en_de = attnlab::findArgosEntry(index, "en-de", options().index_url);
    QCOMPARE(en_de.code, std::string("translate-en_de"));
    QCOMPARE(en_de.size, int64_t(fs::file_size(m_zip)));
    QCOMPARE(&attnlab::findArgosEntry(index, "translate-en_de", ""), &en_de);
    QCOMPARE(&attnlab::findArgosEntry(index, "en_de", ""), &en_de);
    // an entry without code or links: its code made from its languages
    QCOMPARE(attnlab::findArgosEntry(index, "de-fr", "").code, std::string("translate-de_fr"));
    int german = 0, pair = 0, by_name = 0;
    for (const auto& e : index) {
        german += attnlab::argosEntryMatches(e, "DE");
        pair += attnlab::argosEntryMatches(e, "en-de");
        by_name += attnlab::argosEntryMatches(e, "fren");
    }
    QCOMPARE(german, 2);
    QCOMPARE(pair, 1);
    QCOMPARE(by_name, 1);
    // a download of no declared size (today's index gives none): what arrived so far
    attnlab::HubProgress p;
    p.file = "a.argosmodel";
    p.done = 1'500'000;
    p.files_total = 1;
    QCOMPARE(attnlab::describeHubProgress(p), std::string("a.argosmodel · 1.5 MB so far · file 1 of 1"));
    QCOMPARE(messageOf<attnlab::InputError>([&] { attnlab::findArgosEntry(index, "en-xx", "URL"); }),
             QString("no package en-xx in the Argos index URL; pairs with those languages: en-de"));
}

void TestArgosIndex::unreachableIndexIsNamed() {
    attnlab::ArgosOptions o = options();
    o.index_url = "http://127.0.0.1:1/index.json";  // nothing listens on port 1
    const QString m = messageOf<attnlab::PackageError>([&] { attnlab::fetchArgosIndex(o); });
    QVERIFY2(m.startsWith("cannot get the Argos package index http://127.0.0.1:1/index.json (ARGOS_PACKAGE_INDEX) "
                          "from 127.0.0.1: "),
             qPrintable(m));
    o.index_url = m_hub->endpoint() + "/files/argos/missing.json";
    QCOMPARE(messageOf<attnlab::PackageError>([&] { attnlab::fetchArgosIndex(o); }),
             QString::fromStdString("127.0.0.1 answered HTTP 404 for the Argos package index " + o.index_url +
                                    " (ARGOS_PACKAGE_INDEX) (" + o.index_url + ")"));
}

void TestArgosIndex::installIsResumedCheckedAndSeen() {
    const int64_t size = int64_t(fs::file_size(m_zip));
    m_hub->setFaults({{"cut_after", {{kArchive, size / 2}}}});
    m_hub->clearLog();
    const auto index = attnlab::fetchArgosIndex(options());
    const auto& entry = attnlab::findArgosEntry(index, "en-de", "");
    const QString cut = messageOf<attnlab::PackageError>([&] { attnlab::installArgosPackage(entry, options()); });
    QVERIFY2(cut.contains("run again to resume"), qPrintable(cut));
    const std::string partial = options().downloads_dir + "/translate-en_de-1.0.argosmodel.incomplete";
    QCOMPARE(int64_t(fs::file_size(partial)), size / 2);
    m_hub->setFaults(json::object());
    std::vector<attnlab::HubProgress> seen;
    const std::string dir = attnlab::installArgosPackage(entry, options(), [&](const attnlab::HubProgress& p) {
        seen.push_back(p);
        return true;
    });
    // argos-translate's name for it: the archive's top folder (install_from_path: extractall)
    QCOMPARE(dir, m_packages + "/translate-en_de-1_0");
    QVERIFY(!seen.empty());
    QCOMPARE(seen.back().done, size);
    QCOMPARE(seen.back().files_done, 1);
    // resumed: the second request asked for the rest only
    std::vector<std::string> ranges;
    for (const json& r : m_hub->requests())
        if (r["path"] == std::string("/files/") + kArchive) ranges.push_back(r["range"]);
    QCOMPARE(ranges, (std::vector<std::string>{"", "bytes=" + std::to_string(size / 2) + "-"}));
    QVERIFY(!fs::exists(partial));  // the archive goes once installed, as argos-translate unlinks it
    for (const auto& e : fs::directory_iterator(options().downloads_dir))  // only the download's lock file stays
        QCOMPARE(e.path().extension().string(), std::string(".lock"));
    for (const auto& e : fs::directory_iterator(m_packages))  // no staging folder left behind
        QVERIFY2(e.path().filename().string().find("staging") == std::string::npos, qPrintable(e.path().c_str()));
    // the whole package, as argos-translate needs it (README.md too)
    QVERIFY(fs::is_regular_file(dir + "/README.md"));
    // seen by the folder scan every reader uses, and opened as a model giving what the archive gives
    const auto installed = attnlab::installedArgosModels();
    QCOMPARE(installed.size(), size_t(1));
    QCOMPARE(installed[0].direction(), std::string("en-de"));
    attnlab::Translator from_folder(dir, {attnlab::testing::testDevice()}),
        from_zip(m_zip, {attnlab::testing::testDevice()});
    attnlab::DecodingOptions greedy;
    greedy.beam_size = 1;
    greedy.max_length = 8;
    const auto a = from_folder.translate("Hello world.", greedy), b = from_zip.translate("Hello world.", greedy);
    QCOMPARE(a.best.ids, b.best.ids);
    QVERIFY(!a.best.ids.empty());
    // installed again: refused unless asked
    QCOMPARE(messageOf<attnlab::PackageError>([&] { attnlab::installArgosPackage(entry, options()); }),
             QString::fromStdString("en-de is already installed: " + dir +
                                    " (version 1.0); install it again with --replace, or remove it first "
                                    "(attnlab-cli argos remove en-de)"));
    QCOMPARE(attnlab::findArgosEntry(attnlab::fetchArgosIndex(options()), "en-de", "").installed_dir, dir);
    // --replace: the new folder in place of the old one, and a copy of the pair under another name removed
    fs::copy(dir, m_packages + "/translate-en_de-copy", fs::copy_options::recursive);
    QCOMPARE(attnlab::installArgosPackage(entry, options(), {}, /*replace=*/true), dir);
    QVERIFY(fs::is_regular_file(dir + "/model/model.bin"));
    QVERIFY(!fs::exists(m_packages + "/translate-en_de-copy"));
}

void TestArgosIndex::wrongChecksumIsRefused() {
    const std::string wrong(64, 'a');
    writeIndex(wrong);
    attnlab::ArgosOptions o = options();
    o.packages_dir = m_dir.path().toStdString() + "/other-packages";
    const auto index = attnlab::fetchArgosIndex(o);
    const QString m = messageOf<attnlab::PackageError>(
        [&] { attnlab::installArgosPackage(attnlab::findArgosEntry(index, "en-de", ""), o); });
    writeIndex(m_sha256);
    QCOMPARE(m, QString::fromStdString("translate-en_de-1.0.argosmodel (" + m_hub->endpoint() + "/files/" + kArchive +
                                       ") failed its checksum: expected sha256 " + wrong + ", got " + m_sha256 +
                                       "; the bytes were not kept"));
    QVERIFY(!fs::exists(o.packages_dir + "/translate-en_de-1_0"));
    QVERIFY(!fs::exists(o.downloads_dir + "/translate-en_de-1.0.argosmodel.incomplete"));
    // a link the server does not have: its status named, no empty partial file left
    attnlab::ArgosPackageEntry missing = attnlab::findArgosEntry(index, "en-de", "");
    missing.links = {m_hub->endpoint() + "/files/argos/missing.argosmodel"};
    QCOMPARE(messageOf<attnlab::PackageError>([&] { attnlab::installArgosPackage(missing, o); }),
             QString::fromStdString("127.0.0.1 answered HTTP 404 for translate-en_de-1.0.argosmodel (" +
                                    missing.links[0] + ")"));
    QVERIFY(!fs::exists(o.downloads_dir + "/translate-en_de-1.0.argosmodel.incomplete"));
    // no size in the index: AttnLab's cap is the most the server may send, refused before a byte is kept
    attnlab::ArgosPackageEntry unsized = attnlab::findArgosEntry(index, "en-de", "");
    unsized.size = -1;
    o.max_package_bytes = 1000;
    QCOMPARE(messageOf<attnlab::PackageError>([&] { attnlab::installArgosPackage(unsized, o); }),
             QString("127.0.0.1 sent more than the 1000 bytes translate-en_de-1.0.argosmodel may have (AttnLab's cap "
                     "for a file of no declared size, ATTNLAB_ARGOS_MAX_BYTES): the download stopped there, and what "
                     "this answer brought of it was not kept"));
    QVERIFY(!fs::exists(o.packages_dir + "/translate-en_de-1_0"));
}

void TestArgosIndex::removeTakesOnlyPackageFolders() {
    if (!fs::exists(m_packages + "/translate-en_de-1_0")) QSKIP("needs installIsResumedCheckedAndSeen's package");
    // a link in the packages folder to a package elsewhere: listed, as argos-translate lists it, never removed
    const std::string elsewhere = m_dir.path().toStdString() + "/elsewhere";
    attnlab::package::extractArgosModel(m_zip, elsewhere + "-zip", true);
    fs::rename(elsewhere + "-zip/translate-en_de-1_0", elsewhere);
    fs::create_symlink(elsewhere, m_packages + "/linked");
    QCOMPARE(messageOf<attnlab::PackageError>([&] { attnlab::removeArgosPackage("linked", options()); }),
             QString::fromStdString(m_packages +
                                    "/linked is a symbolic link: AttnLab removes only folders inside the packages "
                                    "folder, never what a link leads to"));
    QVERIFY(fs::is_regular_file(elsewhere + "/model/model.bin"));
    QVERIFY(messageOf<attnlab::PackageError>([&] {
                attnlab::removeArgosPackage("en-de", options());
            }).startsWith("several installed packages are en-de: "));
    fs::remove(m_packages + "/linked");
    QCOMPARE(attnlab::removeArgosPackage("en-de", options()), m_packages + "/translate-en_de-1_0");
    QVERIFY(!fs::exists(m_packages + "/translate-en_de-1_0"));
    QVERIFY(fs::is_empty(m_packages));  // and no staging folder left
    QCOMPARE(messageOf<attnlab::InputError>([&] { attnlab::removeArgosPackage("en-de", options()); }),
             QString::fromStdString("no installed Argos package en-de in " + m_packages + " (none is installed)"));
}

QTEST_GUILESS_MAIN(TestArgosIndex)
#include "tst_argos_index.moc"
