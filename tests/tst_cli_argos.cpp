// attnlab-cli argos list | install | remove against a local stand-in for the Argos index (fake_hub.py's /files/
// route on 127.0.0.1) serving an .argosmodel that scripts/ct2_reference.py writes: the table, --search, an
// install's progress lines and where it went, the installed package listed and translated with, remove, and
// the errors (no such pair, an unreachable index named by its address).
#include "fake_hub_server.h"
#include "fixtures.h"

#include <attnlab/hub_progress.h>

#include <QtTest/QtTest>

#include <nlohmann/json.hpp>

#include <filesystem>

namespace fs = std::filesystem;

class TestCliArgos : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void cleanupTestCase();
    void listsAndSearches();
    void installsListsTranslatesAndRemoves();
    void errorsNameTheCause();

private:
    using Run = attnlab::testing::CliRun;
    Run cli(const QStringList& args, const QString& index = {}) const;
    QTemporaryDir m_dir;
    std::unique_ptr<attnlab::testing::FakeHub> m_hub;
    std::string m_zip;
};

TestCliArgos::Run TestCliArgos::cli(const QStringList& args, const QString& index) const {
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("ARGOS_PACKAGE_INDEX",
               index.isEmpty() ? QString::fromStdString(m_hub->endpoint() + "/files/argos/") : index);
    env.insert("ARGOS_PACKAGES_DIR", m_dir.filePath("packages"));
    env.insert("XDG_CACHE_HOME", m_dir.filePath("cache"));
    env.insert("XDG_CONFIG_HOME", m_dir.filePath("config"));
    return attnlab::testing::runCli(args, {}, env);
}

void TestCliArgos::initTestCase() {
    m_zip = attnlab::testing::makeSmallArgosPackage(m_dir.filePath("made"), "en", "de", 11);
    if (m_zip.empty()) {
        if (qEnvironmentVariable("CI") == "true") QFAIL("CI=true but python3-torch / python3-sentencepiece is missing");
        QSKIP("python3-torch or python3-sentencepiece is not installed: no package to serve");
    }
    m_hub = std::make_unique<attnlab::testing::FakeHub>(m_dir.filePath("hub"));
    const std::string bytes = attnlab::testing::readFile(m_zip);
    attnlab::testing::writeInto(m_hub->root() + "/argos/translate-en_de-1_0.argosmodel", bytes);
    m_hub->start();
    const nlohmann::json index =
        nlohmann::json::array({{{"package_version", "1.0"},
                                {"argos_version", "1.0"},
                                {"from_code", "en"},
                                {"from_name", "English"},
                                {"to_code", "de"},
                                {"to_name", "German"},
                                {"links", {m_hub->endpoint() + "/files/argos/translate-en_de-1_0.argosmodel"}},
                                {"size", bytes.size()},
                                {"license", "CC-BY-4.0"}},
                               {{"package_version", "1.9"},
                                {"from_code", "fr"},
                                {"from_name", "French"},
                                {"to_code", "en"},
                                {"to_name", "English"},
                                {"links", nlohmann::json::array()}}});
    attnlab::testing::writeInto(m_hub->root() + "/argos/index.json", index.dump());
}

void TestCliArgos::cleanupTestCase() {
    if (m_hub) m_hub->stop();
}

void TestCliArgos::listsAndSearches() {
    const Run all = cli({"argos", "list"});
    QVERIFY2(all.code == 0, qPrintable(all.err));
    QVERIFY2(all.out.contains(QString::fromStdString("index     " + m_hub->endpoint() + "/files/argos/index.json\n")),
             qPrintable(all.out));
    const QStringList lines = all.out.split('\n', Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 5);  // index, packages, the header, two packages
    QVERIFY(lines[2].startsWith("PAIR"));
    // sorted by language names; size, version, licence where the index gives them
    QVERIFY2(lines[3].startsWith("en-de") && lines[3].contains("English → German") && lines[3].contains("1.0") &&
                 lines[3].contains(QString::fromStdString(attnlab::byteSizeText(int64_t(fs::file_size(m_zip))))) &&
                 lines[3].contains("CC-BY-4.0"),
             qPrintable(lines[3]));
    QVERIFY2(lines[4].startsWith("fr-en") && lines[4].contains("French → English"), qPrintable(lines[4]));
    const Run french = cli({"argos", "list", "--search", "fr"});
    QCOMPARE(french.out.split('\n', Qt::SkipEmptyParts).size(), 4);
    QVERIFY(french.out.contains("fr-en") && !french.out.contains("en-de"));
    const Run none = cli({"argos", "list", "--search", "xx"});
    QVERIFY2(none.out.endsWith("(no package for xx)\n"), qPrintable(none.out));
}

void TestCliArgos::installsListsTranslatesAndRemoves() {
    const Run install = cli({"argos", "install", "en-de"});
    QVERIFY2(install.code == 0, qPrintable(install.err));
    const QString dir = m_dir.filePath("packages") + "/translate-en_de-1_0";
    QCOMPARE(install.out, "installed en-de (English → German, version 1.0) into " + dir + "\n");
    // the progress as a download of the hub prints it in a script: the file's line, then "· done"
    QVERIFY2(
        install.err.startsWith("getting translate-en_de 1.0 (English → German)\n  translate-en_de-1.0.argosmodel · "),
        qPrintable(install.err));
    QVERIFY2(install.err.contains(" · file 1 of 1 · done\n"), qPrintable(install.err));
    const Run listed = cli({"argos", "list", "--installed"});
    QVERIFY2(listed.out.contains("en-de") && listed.out.contains("translate-en_de-1_0"), qPrintable(listed.out));
    const Run translated =
        cli({"translate", "--model", dir, "--device", attnlab::testing::testDeviceArg(), "--text", "Hello world."});
    QVERIFY2(translated.code == 0, qPrintable(translated.err));
    const Run again = cli({"argos", "install", "en-de"});
    QCOMPARE(again.code, 2);
    QVERIFY2(again.err.startsWith("attnlab-cli: en-de is already installed: " + dir), qPrintable(again.err));
    const Run removed = cli({"argos", "remove", "en-de"});
    QCOMPARE(removed.out, "removed " + dir + "\n");
    QVERIFY(!QFileInfo::exists(dir));
}

void TestCliArgos::errorsNameTheCause() {
    const Run unknown = cli({"argos", "install", "en-xx"});
    QCOMPARE(unknown.code, 2);
    QCOMPARE(unknown.err,
             QString("attnlab-cli: no package en-xx in the Argos index " + QString::fromStdString(m_hub->endpoint()) +
                     "/files/argos/index.json; pairs with those languages: en-de\n"));
    const Run no_link = cli({"argos", "install", "fr-en"});
    QCOMPARE(no_link.err, QString("attnlab-cli: the Argos index has no http or https link for translate-fr_en (no "
                                  "\"links\")\n"));
    const Run unreachable = cli({"argos", "list"}, "http://127.0.0.1:1/idx");
    QCOMPARE(unreachable.code, 2);
    QVERIFY2(
        unreachable.err.startsWith("attnlab-cli: cannot get the Argos package index http://127.0.0.1:1/idx/index.json "
                                   "(ARGOS_PACKAGE_INDEX) from 127.0.0.1: "),
        qPrintable(unreachable.err));
    const Run not_installed = cli({"argos", "remove", "de-en"});
    QCOMPARE(not_installed.code, 2);
    QVERIFY2(not_installed.err.startsWith("attnlab-cli: no installed Argos package de-en in "),
             qPrintable(not_installed.err));
}

QTEST_GUILESS_MAIN(TestCliArgos)
#include "tst_cli_argos.moc"
