// Lesson and session files (core/src/io/lesson.cpp): every field read, a session written and read
// back, each malformed case answered with a message naming the file, the step and the field, and
// the bundled lessons valid for the bundled model.
#include "fixtures.h"
#include "memory_limit.h"

#include <attnlab/attention_history.h>
#include <attnlab/errors.h>
#include <attnlab/lesson.h>
#include <attnlab/package.h>

#include <QtTest/QtTest>

#include <filesystem>

using attnlab::InputError;

namespace {
std::string lesson(const std::string& steps) {
    return R"({"format": "attnlab-lesson", "version": 1, "title": "T", "steps": [)" + steps + "]}";
}

std::string errorOf(const std::string& text) {
    try {
        attnlab::parseLesson(text, "l.json");
    } catch (const InputError& e) {
        return e.what();
    }
    return "no error";
}
}  // namespace

class TestLesson : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void everyFieldIsRead();
    void malformedLessonsAreNamed_data();
    void malformedLessonsAreNamed();
    void modelShapeIsChecked();
    void tabsAreCheckedAgainstTheAppsViews();
    void sessionRoundTrip();
    void jumpingToAStepKeepsItsContext();
    void bundledLessonsAreValid();
    void lessonsAreBounded();
    void aStepNamesATrainingPoint();
    void lessonRoundTrip();
};

void TestLesson::everyFieldIsRead() {
    const auto l = attnlab::parseLesson(lesson(R"(
        {"title": "one", "caption": "**Hi**", "view": {"tab": "weight", "sentence": "Ein Hund.", "beam": 3,
         "alpha": 0.5, "max_length": 20, "force_prefix": "A dog", "source_language": "eng_Latn",
         "target_language": "deu_Latn", "kind": "decoder", "layer": 1, "head": 2,
         "cell": [3, 1], "step": 4, "token": {"side": "target", "position": 2}, "pair": ["Ein Hund.", "Eine Katze."],
         "focus": "softmax", "measure": "rollout"}},
        {"view": {"head": 5}})"),
                                        "l.json");
    QCOMPARE(l.title, std::string("T"));
    QCOMPARE(l.steps.size(), size_t(2));
    const auto& v = l.steps[0].view;
    QCOMPARE(l.steps[0].caption, std::string("**Hi**"));
    QCOMPARE(*v.tab, std::string("weight"));
    QCOMPARE(*v.sentence, std::string("Ein Hund."));
    QCOMPARE(*v.beam, 3);
    QCOMPARE(*v.alpha, 0.5);
    QCOMPARE(*v.max_length, 20);
    QCOMPARE(*v.force_prefix, std::string("A dog"));
    QCOMPARE(*v.source_language, std::string("eng_Latn"));
    QCOMPARE(*v.target_language, std::string("deu_Latn"));
    QCOMPARE(*attnlab::lessonViewAt(l, 1).target_language, std::string("deu_Latn"));  // carried over
    QCOMPARE(*v.kind, attnlab::AttentionKind::DecoderSelf);
    QCOMPARE(*v.layer, 1);
    QCOMPARE(*v.head, 2);
    QCOMPARE(*v.cell_query, 3);
    QCOMPARE(*v.cell_key, 1);
    QCOMPARE(*v.step, 4);
    QCOMPARE(*v.token_target, true);
    QCOMPARE(*v.token_position, 2);
    QCOMPARE(*v.pair_b, std::string("Eine Katze."));
    QCOMPARE(*v.focus, std::string("softmax"));
    QVERIFY(*v.measure == attnlab::MapMeasure::Rollout);
    QVERIFY(*attnlab::lessonViewAt(l, 1).measure == attnlab::MapMeasure::Rollout);  // carried over
    // Absent fields stay absent: the app keeps what it shows.
    const auto& w = l.steps[1].view;
    QVERIFY(!w.tab && !w.sentence && !w.layer && !w.cell_query && !w.token_target && !w.focus);
    // A focus belongs to its own step: a jump to step 2 does not scroll to step 1's plot.
    QVERIFY(!attnlab::lessonViewAt(l, 1).focus);
    QCOMPARE(*w.head, 5);
}

void TestLesson::malformedLessonsAreNamed_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("message");
    QTest::newRow("not json") << "{\"format\": "
                              << "l.json: not valid JSON";
    QTest::newRow("format") << R"({"format": "x", "version": 1, "steps": []})"
                            << R"(l.json: format: expected "attnlab-lesson")";
    QTest::newRow("version") << R"({"format": "attnlab-lesson", "version": 7, "steps": []})"
                             << "l.json: version: expected 1";
    QTest::newRow("no steps") << QString::fromStdString(lesson(""))
                              << "l.json: steps: expected a list of at least one step";
    QTest::newRow("empty tab") << QString::fromStdString(lesson(R"({"view": {}}, {"view": {"tab": ""}})"))
                               << "l.json: step 2: tab: is empty";
    QTest::newRow("unknown kind") << QString::fromStdString(lesson(R"({"view": {"kind": "self"}})"))
                                  << "l.json: step 1: kind: 'self' is not one of encoder, decoder, cross";
    QTest::newRow("layer type") << QString::fromStdString(lesson(R"({"view": {"layer": "2"}})"))
                                << "l.json: step 1: layer: expected a whole number, found string";
    QTest::newRow("negative head") << QString::fromStdString(lesson(R"({"view": {"head": -1}})"))
                                   << "l.json: step 1: head: -1 is out of range (0..65536)";
    QTest::newRow("beam") << QString::fromStdString(lesson(R"({"view": {"beam": 0}})"))
                          << "l.json: step 1: beam: 0 is out of range (1..256)";
    QTest::newRow("cell") << QString::fromStdString(lesson(R"({"view": {"cell": [1]}})"))
                          << "l.json: step 1: cell: expected [query, key]";
    QTest::newRow("typo") << QString::fromStdString(lesson(R"({"view": {"layr": 1}})"))
                          << "l.json: step 1: view.layr: unknown field";
    QTest::newRow("no view") << QString::fromStdString(lesson(R"({"caption": "x"})"))
                             << "l.json: step 1: view: missing";
    QTest::newRow("empty sentence") << QString::fromStdString(lesson(R"({"view": {"sentence": "  "}})"))
                                    << "l.json: step 1: sentence: is empty";
    QTest::newRow("pair") << QString::fromStdString(lesson(R"({"view": {"pair": ["A", ""]}})"))
                          << "l.json: step 1: pair: expected [sentence A, sentence B]";
    QTest::newRow("token side") << QString::fromStdString(
                                       lesson(R"({"view": {"token": {"side": "left", "position": 0}}})"))
                                << "l.json: step 1: token.side: 'left' is not source or target";
    QTest::newRow("selection field") << QString::fromStdString(lesson(
                                            R"({"view": {"selections": {"pairs": {"kind": "cross", "layr": 1}}}})"))
                                     << "l.json: step 1: selections.pairs.layr: unknown field";
    QTest::newRow("selection incomplete")
        << QString::fromStdString(lesson(R"({"view": {"selections": {"pairs": {"kind": "cross", "layer": 1}}}})"))
        << "l.json: step 1: selections.pairs: needs kind, layer and head (head is missing)";
    QTest::newRow("measure")
        << QString::fromStdString(lesson(R"({"view": {"measure": "saliency"}})"))
        << "l.json: step 1: measure: 'saliency' is not one of weights, value-norm, rollout, alti+, "
           "value-zeroing";
    QTest::newRow("focus without tab") << QString::fromStdString(lesson(R"({"view": {"focus": "map"}})"))
                                       << "l.json: step 1: focus: needs a tab in the same step";
    QTest::newRow("empty focus") << QString::fromStdString(lesson(R"({"view": {"tab": "attention", "focus": ""}})"))
                                 << "l.json: step 1: focus: is empty";
    QTest::newRow("selection kind")
        << QString::fromStdString(
               lesson(R"({"view": {"selections": {"pairs": {"kind": "x", "layer": 1, "head": 0}}}})"))
        << "l.json: step 1: selections.pairs.kind: 'x' is not one of encoder, decoder, cross";
}

void TestLesson::malformedLessonsAreNamed() {
    QFETCH(QString, text);
    QFETCH(QString, message);
    const std::string e = errorOf(text.toStdString());
    QVERIFY2(e.rfind(message.toStdString(), 0) == 0, e.c_str());
}

void TestLesson::modelShapeIsChecked() {
    const auto l = attnlab::parseLesson(lesson(R"({"view": {}}, {"view": {"layer": 3}})"), "l.json");
    try {
        attnlab::checkLessonFitsModel(l, 3, 8, "l.json");
        QFAIL("no error");
    } catch (const InputError& e) {
        QCOMPARE(std::string(e.what()),
                 std::string("l.json: step 2: layer: 3 is out of range: the model has 3 layers (0..2)"));
    }
    const auto mean = attnlab::parseLesson(lesson(R"({"view": {"head": 8}})"), "l.json");
    attnlab::checkLessonFitsModel(mean, 3, 8, "l.json");  // the mean over heads
    const auto cell = attnlab::parseLesson(lesson(R"({"view": {"head": 8, "cell": [0, 0]}})"), "l.json");
    QVERIFY_THROWS_EXCEPTION(InputError, attnlab::checkLessonFitsModel(cell, 3, 8, "l.json"));
    // A student model, 6 encoder and 2 decoder layers: the layer belongs to the step's kind's stack
    // (inherited from the steps before it).
    const auto student =
        attnlab::parseLesson(lesson(R"({"view": {"kind": "encoder", "layer": 5}}, {"view": {"kind": "cross"}},
                                       {"view": {"layer": 1}}, {"view": {"layer": 4}})"),
                             "l.json");
    try {
        attnlab::checkLessonFitsModel(student, 6, 8, "l.json", 2);
        QFAIL("no error");
    } catch (const InputError& e) {
        QCOMPARE(std::string(e.what()),
                 std::string("l.json: step 4: layer: 4 is out of range: the model has 2 layers in its decoder (0..1)"));
    }
}

void TestLesson::tabsAreCheckedAgainstTheAppsViews() {
    const auto l = attnlab::parseLesson(lesson(R"({"view": {"tab": "weight"}}, {"view": {"tab": "maps"}})"), "l.json");
    try {
        attnlab::checkLessonViews(l, {"attention", "weight"}, "l.json");
        QFAIL("no error");
    } catch (const InputError& e) {
        QCOMPARE(std::string(e.what()), std::string("l.json: step 2: tab: 'maps' is not one of attention, weight"));
    }
    attnlab::checkLessonViews(l, {"maps", "weight"}, "l.json");  // both named: no error
    // A focus names a part of its step's tab.
    const std::map<std::string, std::vector<std::string>> parts{{"weight", {"q-k", "softmax"}}};
    const auto f = attnlab::parseLesson(
        lesson(R"({"view": {"tab": "weight", "focus": "softmax"}}, {"view": {"tab": "weight", "focus": "plot4"}})"),
        "l.json");
    try {
        attnlab::checkLessonViews(f, {"attention", "weight"}, "l.json", parts);
        QFAIL("no error");
    } catch (const InputError& e) {
        QCOMPARE(std::string(e.what()),
                 std::string("l.json: step 2: focus: 'plot4' is not one of q-k, softmax (the weight view's parts)"));
    }
    const auto g = attnlab::parseLesson(lesson(R"({"view": {"tab": "attention", "focus": "map"}})"), "l.json");
    try {
        attnlab::checkLessonViews(g, {"attention", "weight"}, "l.json", parts);
        QFAIL("no error");
    } catch (const InputError& e) {
        QCOMPARE(std::string(e.what()),
                 std::string("l.json: step 1: focus: the attention view has no parts to bring into view"));
    }
    // A tab's own selection names a view too, and fits the model's shape.
    const auto s = attnlab::parseLesson(
        lesson(R"({"view": {"selections": {"pairz": {"kind": "encoder", "layer": 2, "head": 0}}}})"), "l.json");
    try {
        attnlab::checkLessonViews(s, {"attention", "pairs"}, "l.json");
        QFAIL("no error");
    } catch (const InputError& e) {
        QCOMPARE(std::string(e.what()),
                 std::string("l.json: step 1: selections: 'pairz' is not one of attention, pairs"));
    }
    try {
        attnlab::checkLessonFitsModel(s, 2, 4, "l.json");
        QFAIL("no error");
    } catch (const InputError& e) {
        QCOMPARE(std::string(e.what()), std::string("l.json: step 1: selections.pairz.layer: 2 is out of range: the "
                                                    "model has 2 encoder layers (0..1)"));
    }
    attnlab::checkLessonFitsModel(s, 3, 4, "l.json");
}

void TestLesson::jumpingToAStepKeepsItsContext() {
    const auto l = attnlab::parseLesson(lesson(R"(
        {"view": {"sentence": "A", "beam": 2, "kind": "encoder", "layer": 1, "tab": "weight", "cell": [0, 1]}},
        {"view": {"sentence": "B", "head": 3, "step": 2}},
        {"view": {"layer": 0, "tab": "decoding"}})"),
                                        "l.json");
    const auto v = attnlab::lessonViewAt(l, 2);
    QCOMPARE(*v.sentence, std::string("B"));  // the latest sentence
    QCOMPARE(*v.beam, 2);
    QCOMPARE(*v.kind, attnlab::AttentionKind::EncoderSelf);
    QCOMPARE(*v.layer, 0);  // its own
    QCOMPARE(*v.head, 3);
    QCOMPARE(*v.tab, std::string("decoding"));
    QVERIFY(!v.cell_query && !v.step);  // not inherited: they belong to their step
    QVERIFY(!attnlab::lessonViewAt(l, 0).head);
    // A tab's own selection belongs to its step too.
    const auto s = attnlab::parseLesson(
        lesson(R"({"view": {"selections": {"pairs": {"kind": "encoder", "layer": 1, "head": 0}}}}, {"view": {}})"),
        "l.json");
    QCOMPARE(attnlab::lessonViewAt(s, 0).selections.size(), size_t(1));
    QVERIFY(attnlab::lessonViewAt(s, 1).selections.empty());
}

void TestLesson::sessionRoundTrip() {
    QTemporaryDir dir;
    attnlab::LessonStep step;
    step.title = "saved";
    step.caption = "a *view*";
    step.view.tab = "decoding";
    step.view.sentence = "Zwei Hunde spielen.";
    step.view.beam = 4;
    step.view.alpha = 0.6;
    step.view.force_prefix = "Two";
    step.view.source_language = "__de__";
    step.view.target_language = "en";
    step.view.kind = attnlab::AttentionKind::Cross;
    step.view.layer = 2;
    step.view.head = 7;
    step.view.cell_query = 1;
    step.view.cell_key = 3;
    step.view.step = 2;
    step.view.token_target = false;
    step.view.token_position = 4;
    step.view.pair_a = "Der Hund.";
    step.view.pair_b = "Den Hund.";
    step.view.selections["pairs"] = {attnlab::AttentionKind::EncoderSelf, 1, 0};
    step.view.selections["attention"] = {attnlab::AttentionKind::Cross, 2, 8};
    step.view.measure = attnlab::MapMeasure::ValueNorm;
    const std::string path = dir.filePath("s.json").toStdString();
    attnlab::writeSession(path, step, "de-en");
    const auto back = attnlab::readSession(path);
    QCOMPARE(back.model, std::string("de-en"));
    QCOMPARE(back.steps.size(), size_t(1));
    QCOMPARE(attnlab::sessionJson(back.steps[0], back.model), attnlab::testing::readFile(path));
    QCOMPARE(*back.steps[0].view.cell_key, 3);
    QCOMPARE(*back.steps[0].view.source_language, std::string("__de__"));
    QCOMPARE(*back.steps[0].view.target_language, std::string("en"));
    QCOMPARE(*back.steps[0].view.token_position, 4);
    QCOMPARE(back.steps[0].view.selections, step.view.selections);
    QVERIFY(back.steps[0].view.measure == attnlab::MapMeasure::ValueNorm);
    // A session written before tabs kept their own selections reads as before: none.
    const auto old = attnlab::parseSession(
        R"({"format": "attnlab-session", "version": 1, "view": {"kind": "cross", "layer": 2, "head": 7}})", "o.json");
    QVERIFY(old.steps[0].view.selections.empty());
    QCOMPARE(*old.steps[0].view.layer, 2);
    // A session is not a lesson, and the other way round; a missing file is named.
    QVERIFY_THROWS_EXCEPTION(InputError, attnlab::readLesson(path));
    try {
        attnlab::readSession(dir.filePath("none.json").toStdString());
        QFAIL("no error");
    } catch (const InputError& e) {
        QVERIFY2(std::string(e.what()).find("none.json: missing file") != std::string::npos, e.what());
    }
}

void TestLesson::bundledLessonsAreValid() {
    const std::filesystem::path dir = ATTNLAB_SOURCE_DIR "/resources/lessons";
    int files = 0;
    for (const auto& f : std::filesystem::directory_iterator(dir)) {
        const auto l = attnlab::readLesson(f.path().string());
        attnlab::checkLessonFitsModel(l, 3, 8, f.path().string());  // the bundled models' shape
        QVERIFY(!l.title.empty());
        for (const auto& s : l.steps) QVERIFY2(!s.caption.empty(), f.path().c_str());
        ++files;
    }
    QVERIFY(files >= 2);
    QCOMPARE(int(attnlab::bundledLessons().size()), files);  // found from the executable, as the app does
    const auto tour = attnlab::readLesson((dir / "transformer-tour.json").string());
    QVERIFY(tour.steps.size() >= 12);
}

// The issue's amplified lessons: 300,000 empty steps (3.6 MB, under the 4 MB file limit) took more
// than a minute to check against a model, every step looking back at all before it; a 30 KB
// caption took a minute to show. Steps, captions and titles now have limits, each error naming the
// file, the step and the limit; read with 512 MiB of address space to spare (the 300,000 steps
// parse in less; the point is that nothing here needs more).
void TestLesson::lessonsAreBounded() {
    const AddressSpaceLimit limit(uint64_t(512) << 20);
    QVERIFY(limit.active());
    std::string steps = R"({"view": {}})";
    for (int i = 1; i < 300'000; ++i) steps += R"(,{"view": {}})";
    QCOMPARE(errorOf(lesson(steps)), std::string("l.json: steps: 300000 steps, over the limit of 1000"));
    const std::string caption(30'000, 'x');
    QCOMPARE(errorOf(lesson(R"({"view": {}}, {"caption": ")" + caption + R"(", "view": {}})")),
             std::string("l.json: step 2: caption: 30000 bytes, over the limit of 16384 (split it over steps)"));
    const std::string title(2'000, 't');
    QCOMPARE(errorOf(lesson(R"({"title": ")" + title + R"(", "view": {}})")),
             std::string("l.json: step 1: title: 2000 bytes, over the limit of 1024"));
    // At the limit: 1,000 steps read, and checked against a model in one pass (the kind set by the
    // first step still decides the last step's stack).
    std::string many = R"({"caption": ")" + std::string(16 << 10, 'c') + R"(", "view": {"kind": "cross"}})";
    for (int i = 1; i < 999; ++i) many += R"(,{"view": {"layer": 1}})";
    many += R"(,{"view": {"layer": 4}})";
    const auto l = attnlab::parseLesson(lesson(many), "l.json");
    QCOMPARE(l.steps.size(), size_t(1000));
    try {
        attnlab::checkLessonFitsModel(l, 6, 8, "l.json", 2);
        QFAIL("no error");
    } catch (const InputError& e) {
        QCOMPARE(
            std::string(e.what()),
            std::string("l.json: step 1000: layer: 4 is out of range: the model has 2 layers in its decoder (0..1)"));
    }
}

namespace {
std::string fitError(const attnlab::Lesson& l, std::optional<int> points) {
    try {
        attnlab::checkLessonFitsModel(l, 3, 8, "l.json", 3, points);
    } catch (const InputError& e) {
        return e.what();
    }
    return "no error";
}
}  // namespace

// "point": the Training tab's recorded point, 1-based as the tab counts it; read, written, its own
// step's alone, and checked against the model's history where that is known.
void TestLesson::aStepNamesATrainingPoint() {
    const auto l = attnlab::parseLesson(lesson(R"({"view": {"tab": "training", "point": 1}}, {"view": {}})"), "l.json");
    QCOMPARE(*l.steps[0].view.point, 1);
    QVERIFY(!attnlab::lessonViewAt(l, 1).point);  // a jump does not inherit it
    QCOMPARE(errorOf(lesson(R"({"view": {"point": 0}})")),
             std::string("l.json: step 1: point: 0 is out of range (1..65536)"));
    QCOMPARE(errorOf(lesson(R"({"view": {"point": "first"}})")),
             std::string("l.json: step 1: point: expected a whole number, found string"));
    QCOMPARE(fitError(l, std::nullopt), std::string("no error"));  // the history not read yet
    QCOMPARE(fitError(l, 44), std::string("no error"));
    const auto far = attnlab::parseLesson(lesson(R"({"view": {}}, {"view": {"point": 45}})"), "l.json");
    QCOMPARE(
        fitError(far, 44),
        std::string("l.json: step 2: point: 45 is out of range: the model's attention history has 44 points (1..44)"));
    QCOMPARE(fitError(far, 0), std::string("l.json: step 2: point: the model carries no attention history (it was not "
                                           "trained with --record-attention)"));
    attnlab::LessonStep step;
    step.view.point = 7;
    QVERIFY(attnlab::sessionJson(step, "").find("\"point\": 7") != std::string::npos);
    QCOMPARE(*attnlab::parseSession(attnlab::sessionJson(step, ""), "s.json").steps[0].view.point, 7);
    // The bundled lesson on how attention is learned opens its first step at the first point.
    const auto learned = attnlab::readLesson(ATTNLAB_SOURCE_DIR "/resources/lessons/attention-learned.json");
    QCOMPARE(learned.steps[0].view.point.value_or(-1), 1);
    // ... and its points are points of the bundled model's history (step 4: the finished model).
    const auto history = attnlab::readAttentionHistory(ATTNLAB_SOURCE_DIR "/resources/models/multi30k-de-en/" +
                                                       std::string(attnlab::package_files::kAttentionHistory));
    QCOMPARE(learned.steps[3].view.point.value_or(-1), int(history.points.size()));
    attnlab::checkLessonFitsModel(learned, 3, 8, "attention-learned.json", 3, int(history.points.size()));
}

// A lesson written (the app's lesson editor saves through writeLesson) reads back as it was; what the
// reader would refuse is refused before anything is written, naming the file, the step and the field.
void TestLesson::lessonRoundTrip() {
    QTemporaryDir dir;
    attnlab::Lesson l;
    l.title = "Written in the app";
    l.model = "de-en";
    for (int i = 0; i < 3; ++i) {
        attnlab::LessonStep s;
        s.title = "step " + std::to_string(i + 1);
        s.caption = "**caption** " + std::to_string(i + 1);
        s.view.tab = i == 2 ? "training" : "attention";
        s.view.sentence = "Ein Hund rennt.";
        s.view.layer = i;
        if (i == 2) s.view.point = 3;
        l.steps.push_back(s);
    }
    const std::string path = dir.filePath("l.json").toStdString();
    attnlab::writeLesson(path, l);
    const auto back = attnlab::readLesson(path);
    QCOMPARE(back.title, l.title);
    QCOMPARE(back.model, l.model);
    QCOMPARE(back.steps.size(), size_t(3));
    for (size_t i = 0; i < 3; ++i) {
        QCOMPARE(back.steps[i].title, l.steps[i].title);
        QCOMPARE(back.steps[i].caption, l.steps[i].caption);
        QCOMPARE(*back.steps[i].view.layer, int(i));
    }
    QCOMPARE(*back.steps[2].view.point, 3);
    QCOMPARE(attnlab::lessonJson(back), attnlab::testing::readFile(path));
    // The caps hold for what is written too: the file is left as it was.
    l.steps[1].caption = std::string(attnlab::kMaxCaptionBytes + 1, 'c');
    try {
        attnlab::writeLesson(path, l);
        QFAIL("no error");
    } catch (const InputError& e) {
        QCOMPARE(std::string(e.what()),
                 path + ": step 2: caption: 16385 bytes, over the limit of 16384 (split it over steps)");
    }
    QCOMPARE(attnlab::readLesson(path).steps[1].caption, std::string("**caption** 2"));
    l.steps.clear();
    QVERIFY_THROWS_EXCEPTION(InputError, attnlab::lessonJson(l));
}

QTEST_APPLESS_MAIN(TestLesson)
#include "tst_lesson.moc"
