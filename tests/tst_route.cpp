// The route between two languages among the installed models (attnlab/route.h): a model of the pair
// first, else two legs through English as argos-translate chains its packages, else through another
// middle language; none refused by a message naming the pair and what is installed. Also the
// installed Argos packages as a route sees them (ARGOS_PACKAGES_DIR) and the files a pivot's legs write.
#include "fixtures.h"

#include <attnlab/errors.h>
#include <attnlab/route.h>

#include <QtTest/QtTest>

#include <filesystem>

namespace fs = std::filesystem;
using attnlab::BundledModel;
using attnlab::chooseRoute;
using attnlab::testing::messageOf;

namespace {
BundledModel model(const std::string& name, const std::string& from, const std::string& to) {
    return {name, "/models/" + name, from, to};
}
std::vector<std::string> names(const attnlab::TranslationRoute& r) {
    std::vector<std::string> out;
    for (const auto& m : r.legs) out.push_back(m.name);
    return out;
}
using Names = std::vector<std::string>;
}  // namespace

class TestRoute : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void directModelFirst();
    void pivotThroughEnglish();
    void pivotThroughAnotherLanguage();
    void noRouteNamesWhatIsInstalled();
    void pivotRoutesForTheSwitch();
    void installedArgosPackagesRoute();
    void legFileNames();
};

void TestRoute::directModelFirst() {
    // A pair with a model of its own takes it, though a pivot through English exists too; of two
    // models of the pair, the first listed.
    const std::vector<BundledModel> models = {model("de-en", "de", "en"), model("en-fr", "en", "fr"),
                                              model("de-fr-a", "de", "fr"), model("de-fr-b", "de", "fr")};
    const auto r = chooseRoute(models, "de", "fr");
    QVERIFY(!r.pivot());
    QCOMPARE(names(r), Names{"de-fr-a"});
    QCOMPARE(r.middle(), std::string());
    QCOMPARE(r.from(), std::string("de"));
    QCOMPARE(r.to(), std::string("fr"));
}

void TestRoute::pivotThroughEnglish() {
    // de -> fr through en, though de -> da -> fr exists too and "da" sorts before "en": English is
    // tried first, as argos-translate's index pivots through it.
    const std::vector<BundledModel> models = {model("de-da", "de", "da"), model("da-fr", "da", "fr"),
                                              model("de-en", "de", "en"), model("en-fr", "en", "fr"),
                                              model("fr-en", "fr", "en")};
    const auto r = chooseRoute(models, "de", "fr");
    QVERIFY(r.pivot());
    QCOMPARE(names(r), (Names{"de-en", "en-fr"}));
    QCOMPARE(r.middle(), std::string("en"));
    QCOMPARE(r.from(), std::string("de"));
    QCOMPARE(r.to(), std::string("fr"));
    // The other way: fr -> en is direct, and fr -> de has no second leg from English.
    QCOMPARE(names(chooseRoute(models, "fr", "en")), Names{"fr-en"});
    QVERIFY_THROWS_EXCEPTION(attnlab::InputError, chooseRoute(models, "fr", "de"));
}

void TestRoute::pivotThroughAnotherLanguage() {
    // Without an English pair, the middle languages by their codes: de -> es -> fr before de -> it -> fr.
    const std::vector<BundledModel> models = {model("de-it", "de", "it"), model("it-fr", "it", "fr"),
                                              model("de-es", "de", "es"), model("es-fr", "es", "fr"),
                                              model("de-en", "de", "en")};
    const auto r = chooseRoute(models, "de", "fr");
    QCOMPARE(names(r), (Names{"de-es", "es-fr"}));
    QCOMPARE(r.middle(), std::string("es"));
}

void TestRoute::noRouteNamesWhatIsInstalled() {
    const std::vector<BundledModel> models = {model("translate-de_en", "de", "en"),
                                              model("translate-en_es", "en", "es")};
    const QString none = messageOf([&] { chooseRoute(models, "de", "fr"); });
    QCOMPARE(none, QString("no installed model translates de -> fr, directly or through a middle language (through "
                           "en first, as argos-translate pivots); installed: de -> en (translate-de_en), en -> es "
                           "(translate-en_es)"));
    QVERIFY2(messageOf([&] { chooseRoute({}, "de", "fr"); }).endsWith("installed: none"), "nothing installed");
    // argos-translate gives the text back (IdentityTranslation); AttnLab has no attention to show.
    QCOMPARE(messageOf([&] { chooseRoute(models, "de", "de"); }),
             QString("--from and --to name the same language (de): no model translates it, so there is no "
                     "attention to show (argos-translate gives the text back unchanged)"));
    // A route is never longer than two legs: de -> en -> es exists, de -> en -> es -> fr is not taken.
    const std::vector<BundledModel> chain = {model("de-en", "de", "en"), model("en-es", "en", "es"),
                                             model("es-fr", "es", "fr")};
    QCOMPARE(names(chooseRoute(chain, "de", "es")), (Names{"de-en", "en-es"}));
    QVERIFY(messageOf([&] { chooseRoute(chain, "de", "fr"); }).startsWith("no installed model translates de -> fr"));
}

void TestRoute::pivotRoutesForTheSwitch() {
    const std::vector<BundledModel> models = {model("de-en", "de", "en"), model("en-de", "en", "de"),
                                              model("en-fr", "en", "fr"), model("fr-en", "fr", "en")};
    const auto routes = attnlab::pivotRoutes(models);
    // de -> fr and fr -> de only: every other pair has a model of its own (or is no pair).
    QCOMPARE(routes.size(), size_t(2));
    QCOMPARE(routes[0].from() + ">" + routes[0].to(), std::string("de>fr"));
    QCOMPARE(names(routes[0]), (Names{"de-en", "en-fr"}));
    QCOMPARE(routes[1].from() + ">" + routes[1].to(), std::string("fr>de"));
    QCOMPARE(names(routes[1]), (Names{"fr-en", "en-de"}));
}

void TestRoute::installedArgosPackagesRoute() {
    // Package folders as argos-translate installs them (metadata.json and model/model.bin); the route
    // reads their languages from metadata.json. Codes no bundled model uses, so that only these count.
    QTemporaryDir dir;
    const std::string root = dir.path().toStdString() + "/packages";
    auto install = [&](const std::string& name, const std::string& from, const std::string& to) {
        fs::create_directories(root + "/" + name + "/model");
        attnlab::testing::writeFile(root + "/" + name + "/model/model.bin", "");
        attnlab::testing::writeFile(root + "/" + name + "/metadata.json",
                                    R"({"from_code": ")" + from + R"(", "to_code": ")" + to + R"("})");
    };
    install("translate-xa_en-1_0", "xa", "en");
    install("translate-en_xb-1_0", "en", "xb");
    qputenv("ARGOS_PACKAGES_DIR", QByteArray::fromStdString(root));
    const auto route = attnlab::chooseInstalledRoute("xa", "xb");
    const QString none = messageOf([] { attnlab::chooseInstalledRoute("xb", "xa"); });
    const QString same = messageOf([] { attnlab::chooseInstalledRoute("xa", "xa"); });
    qputenv("ARGOS_PACKAGES_DIR", QByteArray::fromStdString(root + "/absent"));
    const QString absent = messageOf([] { attnlab::chooseInstalledRoute("xa", "xb"); });
    qunsetenv("ARGOS_PACKAGES_DIR");
    QVERIFY2(same.startsWith("--from and --to name the same language (xa)") && !same.contains(dir.path()),
             qPrintable(same));  // no folder named: none is concerned
    QCOMPARE(names(route), (Names{"translate-xa_en-1_0", "translate-en_xb-1_0"}));
    QCOMPARE(route.legs[0].dir, root + "/translate-xa_en-1_0");
    QVERIFY2(none.contains("no installed model translates xb -> xa"), qPrintable(none));
    QVERIFY2(none.contains("xa -> en (translate-xa_en-1_0)"), qPrintable(none));
    QVERIFY2(none.endsWith(QString::fromStdString(" Argos Translate packages in " + root + ")")), qPrintable(none));
    QVERIFY2(absent.endsWith(
                 QString::fromStdString(" Argos Translate packages in " + root + "/absent, which does not exist)")),
             qPrintable(absent));
}

void TestRoute::legFileNames() {
    const auto leg = model("de-en", "de", "en");
    QCOMPARE(attnlab::legFileName("out/attention.json", 1, leg), std::string("out/attention.leg1-de-en.json"));
    QCOMPARE(attnlab::legFileName("attention", 2, leg), std::string("attention.leg2-de-en"));
    // A language code is no path: what a file name cannot hold becomes '_'.
    QCOMPARE(attnlab::legFileName("a.json", 1, model("x", "../de", "en")), std::string("a.leg1-___de-en.json"));
}

QTEST_GUILESS_MAIN(TestRoute)
#include "tst_route.moc"
