// attnlab: the desktop app. Only wiring: parse the command line, create the controller and the
// window, and for --export/--screenshot run headlessly and quit.
#include <attnlab/device.h>
#include <attnlab/errors.h>
#include <attnlab/hub.h>
#include <attnlab/lesson.h>
#include <attnlab/package.h>
#include <attnlab/version.h>

#include "document/file_save.h"
#include "document/translation_controller.h"
#include "lessons/lesson_controller.h"
#include "lessons/lesson_pane.h"
#include "shell/main_window.h"
#include "shell/view_registry.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QScreen>
#include <QTabWidget>
#include <QTextStream>
#include <QTimer>

#include <cstdio>
#include <optional>
#include <tuple>

namespace {
int fail(const QString& message) {
    std::fprintf(stderr, "attnlab: %s\n", qPrintable(message));
    return 2;
}

// The exit status when the window cannot be shown: no display (documented in the README).
constexpr int kNoDisplay = 3;

// Whether Qt can reach a display: Qt itself aborts (SIGABRT, status 134) when it cannot.
bool displayAvailable() {
    const QByteArray platform = qgetenv("QT_QPA_PLATFORM");
    if (platform.startsWith("wayland")) return !qgetenv("WAYLAND_DISPLAY").isEmpty();
    if (!platform.isEmpty() && !platform.startsWith("xcb")) return true;  // offscreen, vnc, eglfs: chosen
    return !qgetenv("DISPLAY").isEmpty() || (platform.isEmpty() && !qgetenv("WAYLAND_DISPLAY").isEmpty());
}

// Runs that need no screen: headless figures and screenshots, help and version.
bool needsNoScreen(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        const QByteArray a(argv[i]);
        for (const char* o : {"--export", "--export-animation", "--screenshot", "--screenshot-steps", "--help", "-h",
                              "--version", "-v"})
            if (a == o || a.startsWith(QByteArray(o) + "=")) return true;
    }
    return false;
}
// The command line, checked before anything is loaded: a wrong option is an error, not a default.
struct Options {
    QString model, text, device, export_to, screenshot, animation;
    QString screenshot_steps;  // --screenshot-steps DIR: every step of the lesson, one process
    double text_size = 0;      // 0 = the remembered size, or the desktop's
    // --tab, --view, --layer, --head, --step, --cell: one view state, applied as a lesson step is
    attnlab::ViewState view;
    QString heads_page;                    // --heads statistics|ablation|alignment
    std::vector<attnlab::HeadRef> ablate;  // --ablate kind:layer:head,...
    QString lesson;                        // --lesson FILE, shown from --lesson-step (1-based)
    int lesson_step = 1;
    bool presenter = false;
    bool no_live = false;  // --no-live: translate on Enter only (not remembered)
    int threads = 0;       // --threads: LibTorch threads (0 = $ATTNLAB_THREADS, else the policy of attnlab/device.h)
    // --allow-download: headless, a lesson's or a session's model that the cache lacks is got
    bool allow_download = false;
    bool headless() const {
        return !export_to.isEmpty() || !screenshot.isEmpty() || !animation.isEmpty() || !screenshot_steps.isEmpty();
    }
};

// The registered views' names: "attention, decoding, ..., model".
QString viewList() {
    QStringList names;
    for (const auto& n : attnlab::ui::viewNames()) names << QString::fromStdString(n);
    return names.join(", ");
}

// The view options as one view state: the tab (a registered view), the kind (core's one parser),
// layer, head, decoding step (their defaults are the app's first view) and the cell to open up.
std::optional<QString> readView(const QCommandLineParser& parser, attnlab::ViewState& v) {
    const QString tab = parser.value("tab");
    QStringList tabs;
    for (const auto& t : attnlab::ui::viewNames()) tabs << QString::fromStdString(t);
    if (!tabs.contains(tab)) return QString("--tab '%1' is not one of %2").arg(tab, tabs.join(", "));
    if (parser.isSet("tab")) v.tab = tab.toStdString();
    try {
        v.kind = attnlab::parseAttentionKind(parser.value("view").toStdString(), "--view");
    } catch (const attnlab::Error& e) {
        return QString::fromUtf8(e.what());
    }
    auto number = [&](const char* name, const char* what, std::optional<int>& out) -> std::optional<QString> {
        bool ok = false;
        const int n = parser.value(name).toInt(&ok);
        if (!ok || n < 0) return QString("--%1 '%2' is not %3 (0, 1, ...)").arg(name, parser.value(name), what);
        out = n;
        return std::nullopt;
    };
    if (parser.isSet("method")) {
        v.measure = attnlab::parseMapMeasure(parser.value("method").toStdString());
        QStringList known;
        for (const auto m : attnlab::kMapMeasures) known << QString::fromStdString(attnlab::mapMeasureName(m));
        if (!v.measure) return QString("--method '%1' is not one of %2").arg(parser.value("method"), known.join(", "));
    }
    for (const auto& [name, what, field] :
         {std::tuple{"layer", "a layer number", &v.layer}, std::tuple{"head", "a head number", &v.head},
          std::tuple{"step", "a step number", &v.step}})
        if (auto error = number(name, what, *field)) return error;
    if (parser.isSet("cell")) {
        const QStringList parts = parser.value("cell").split(',');
        bool row_ok = false, column_ok = false;
        const int row = parts.size() == 2 ? parts[0].trimmed().toInt(&row_ok) : -1;
        const int column = parts.size() == 2 ? parts[1].trimmed().toInt(&column_ok) : -1;
        if (!row_ok || !column_ok || row < 0 || column < 0)
            return QString("--cell '%1' is not row,column (two numbers from 0, e.g. 2,3)").arg(parser.value("cell"));
        v.cell_query = row;
        v.cell_key = column;
    }
    return std::nullopt;
}

std::optional<QString> parseOptions(const QApplication& app, Options& o) {
    QCommandLineParser parser;
    parser.setApplicationDescription("Translate with a Transformer and see every head's attention.");
    parser.addHelpOption();
    parser.addVersionOption();
    QCommandLineOption model({"m", "model"},
                             "Model package directory, or a bundled model's name or direction (de-en, en-de); "
                             "default: the bundled de-en.",
                             "dir|name");
    QCommandLineOption text({"t", "text"}, "Sentence to translate at start (default: the first example).", "sentence");
    QCommandLineOption textSize("text-size", "Text size in points (8-28), for every widget and plot.", "pt");
    QCommandLineOption device("device", "auto, cpu, cuda or cuda:N.", "device", "auto");
    QCommandLineOption view("view", "Attention kind to show: encoder, decoder or cross.", "kind", "cross");
    QCommandLineOption method(
        "method",
        "What the attention maps show (the Attention tab's Method): weights, value-norm, rollout, "
        "alti+ or value-zeroing.",
        "name");
    QCommandLineOption layer("layer", "Layer to show.", "n", "0");
    QCommandLineOption head("head", "Head to show (n_head = mean over heads).", "n", "0");
    QCommandLineOption exportTo("export", "Render the view to this PNG or PDF file and quit.", "file");
    QCommandLineOption animation("export-animation",
                                 "Write the view over time (the Training tab: one frame per recorded point) as an "
                                 "animated GIF, or a PNG series (NAME-001.png, ...), and quit.",
                                 "file");
    QCommandLineOption screenshot("screenshot", "Save the whole window to this PNG file and quit.", "file");
    QCommandLineOption screenshotSteps("screenshot-steps",
                                       "With --lesson: save the window at each of its steps (from --lesson-step on) "
                                       "to DIR/step-01.png, step-02.png, ... and quit.",
                                       "dir");
    QCommandLineOption tab("tab", "Tab to show: " + viewList() + ".", "name", "attention");
    QCommandLineOption cell("cell", "Open up this weight of the shown map (query row, key column; 0-based).",
                            "row,column");
    QCommandLineOption step("step", "Decoding step shown in the Decoding tab (0-based).", "n", "0");
    QCommandLineOption lesson("lesson", "Open this lesson (JSON, docs/lessons.md); PageDown / PageUp step through it.",
                              "file");
    QCommandLineOption lessonStep("lesson-step", "The lesson's step to show first (1-based).", "n", "1");
    QCommandLineOption presenter("presenter", "Start in presenter mode (full screen, large text, high contrast).");
    QCommandLineOption heads("heads",
                             "Heads tab page: statistics (over the model's examples), ablation (with --ablate) or "
                             "alignment (the first example with its gold).",
                             "page");
    QCommandLineOption ablate("ablate", "Switch these heads off: kind:layer:head, comma-separated (0-based).", "heads");
    QCommandLineOption threads("threads",
                               "LibTorch threads (wins over ATTNLAB_THREADS); default: by the work of a decoding "
                               "step (the model's size x the sentences and beam it carries), one thread for small "
                               "models' sentences, every core for large batches.",
                               "n", "0");
    QCommandLineOption noLive("no-live",
                              "Translate on Enter only, not as you type (this run; the Live box remembers).");
    QCommandLineOption allowDownload("allow-download",
                                     "With --export / --screenshot: get the Hugging Face model a lesson or a session "
                                     "names when the cache lacks it (the window asks first instead).");
    parser.addOptions({model,     text,       textSize, device, view,          layer,           head,       exportTo,
                       animation, screenshot, tab,      cell,   step,          lesson,          lessonStep, presenter,
                       heads,     ablate,     threads,  noLive, allowDownload, screenshotSteps, method});
    parser.process(app);

    if (const auto error = readView(parser, o.view)) return error;
    o.heads_page = parser.value(heads);
    if (!o.heads_page.isEmpty() && !QStringList{"statistics", "ablation", "alignment"}.contains(o.heads_page))
        return QString("--heads '%1' is not one of statistics, ablation, alignment").arg(o.heads_page);
    try {
        o.ablate = attnlab::parseHeadList(parser.value(ablate).toStdString());
    } catch (const attnlab::Error& e) {
        return QString("--ablate: %1").arg(QString::fromUtf8(e.what()));
    }
    if (!o.ablate.empty() && o.heads_page != "ablation") return QString("--ablate goes with --heads ablation");
    o.lesson = parser.value(lesson);
    o.presenter = parser.isSet(presenter);
    bool lesson_step_ok = false;
    o.lesson_step = parser.value(lessonStep).toInt(&lesson_step_ok);
    if (!lesson_step_ok || o.lesson_step < 1)
        return QString("--lesson-step '%1' is not a step number (1, 2, ...)").arg(parser.value(lessonStep));
    o.model = parser.value(model);
    try {
        // A Hugging Face name the cache lacks is got by the window, with progress (ViewContext::openModel);
        // everything else is resolved here: a folder, a bundled name, a name the cache holds.
        const bool got_later = attnlab::ui::ViewContext::needsFetch(o.model);
        if (!got_later)
            o.model = QString::fromStdString(o.model.isEmpty() ? attnlab::defaultModelDir()
                                                               : attnlab::resolveModelArgument(o.model.toStdString()));
        // Without --text, the model's first example (examples.tsv) is translated at start.
        const auto examples = o.model.isEmpty() || got_later ? std::vector<attnlab::Example>{}
                                                             : attnlab::readExamples(o.model.toStdString());
        o.text = parser.isSet(text) ? parser.value(text)
                 : examples.empty() ? QString()
                                    : QString::fromStdString(examples[0].source);
    } catch (const attnlab::Error& e) {
        return QString::fromUtf8(e.what());
    }
    if (parser.isSet(textSize)) {
        bool ok = false;
        o.text_size = parser.value(textSize).toDouble(&ok);
        using attnlab::ui::ViewContext;
        if (!ok || o.text_size < ViewContext::kMinTextSize || o.text_size > ViewContext::kMaxTextSize)
            return QString("--text-size '%1' is not a size in points from %2 to %3")
                .arg(parser.value(textSize))
                .arg(ViewContext::kMinTextSize)
                .arg(ViewContext::kMaxTextSize);
    }
    o.device = parser.value(device);
    o.no_live = parser.isSet(noLive);
    o.allow_download = parser.isSet(allowDownload);
    bool threads_ok = false;
    o.threads = parser.value(threads).toInt(&threads_ok);
    if (!threads_ok || o.threads < 0 || o.threads > 4096)
        return QString("--threads '%1' is not a thread count (0-4096)").arg(parser.value(threads));
    o.export_to = parser.value(exportTo);
    o.animation = parser.value(animation);
    o.screenshot = parser.value(screenshot);
    o.screenshot_steps = parser.value(screenshotSteps);
    if (!o.screenshot_steps.isEmpty() && o.lesson.isEmpty()) return QString("--screenshot-steps goes with --lesson");
    if (!o.export_to.isEmpty() && o.view.tab.value_or("attention") == "attention" && o.text.isEmpty())
        return QString("--export of the attention view needs a sentence: --text \"...\" (or --tab positional)");
    return std::nullopt;
}

// Lets queued results, and the work they start (an explanation, a token, statistics), all arrive.
void settle(attnlab::ui::TranslationController& controller, attnlab::ui::MainWindow& window) {
    do {
        controller.waitForIdle();
        QApplication::processEvents();
    } while (controller.busy() || (window.lessons()->pending() && window.context()->lastError().isEmpty()));
}

// The view options against the model: layer and head in range, a cell on one head.
std::optional<QString> viewProblem(const attnlab::ViewState& v, const attnlab::ModelInfo& info) {
    const auto& m = info.config.model;
    const int n_layers = int(v.kind ? m.layers(*v.kind) : std::max(m.encoderLayers(), m.decoderLayers()));
    const int n_head = int(m.n_head);
    if (v.layer.value_or(0) >= n_layers)
        return QString("--layer %1 is out of range: the model has %2 layers (0-%3)")
            .arg(*v.layer)
            .arg(n_layers)
            .arg(n_layers - 1);
    if (v.head.value_or(0) > n_head)
        return QString("--head %1 is out of range: the model has %2 heads (0-%3, and %2 for the mean)")
            .arg(*v.head)
            .arg(n_head)
            .arg(n_head - 1);
    if (v.cell_query && v.head.value_or(0) == n_head)
        return "--cell needs one head (--head 0.." + QString::number(n_head - 1) + ")";
    return std::nullopt;
}

// Without a window nobody can be asked before a lesson's or a session's model is downloaded: only
// --allow-download gets it; without, the run stops with a message naming the flag.
void answerDownloadsHeadlessly(attnlab::ui::MainWindow& window, bool allowed) {
    attnlab::ui::ViewContext* context = window.context();
    window.lessons()->setAskToGet([context, allowed](const QString& name, const QString& origin, auto answer) {
        if (allowed) return answer(true);
        context->reportFailure(attnlab::ui::Operation::GetModel,
                               QString("%1: model: %2 is not in the cache, and a run without a window gets no model "
                                       "a lesson or a session names unasked: pass --allow-download to get it")
                                   .arg(origin, name));
        answer(false);
    });
}

// Results arrive as queued signals, and the text they set re-lays out the window through further
// posted events: every round of them runs before a grab.
void layOut() {
    for (int round = 0; round < 5; ++round) {
        QApplication::processEvents();
        QApplication::sendPostedEvents(nullptr, QEvent::LayoutRequest);
    }
}

// --screenshot-steps DIR: the lesson shown, each of its steps from the first shown on, as PageDown
// reaches it, saved as DIR/step-NN.png (1-based, as the pane counts).
int screenshotSteps(attnlab::ui::TranslationController& controller, attnlab::ui::MainWindow& window, const Options& o) {
    if (!QDir().mkpath(o.screenshot_steps)) return fail(QString("%1: cannot make this folder").arg(o.screenshot_steps));
    attnlab::ui::LessonController* lessons = window.lessons();
    for (int step = o.lesson_step - 1; step < lessons->pane()->count(); ++step) {
        if (step != o.lesson_step - 1) {
            if (const auto error = lessons->goToStep(step)) return fail(*error);
            settle(controller, window);
            if (!window.context()->lastError().isEmpty()) return fail(window.context()->lastError());
            layOut();
        }
        const QString file = QDir(o.screenshot_steps).filePath(QString("step-%1.png").arg(step + 1, 2, 10, QChar('0')));
        if (const auto error = attnlab::ui::saveImage(file, window.grab().toImage())) return fail(*error);
    }
    return 0;
}

// --export / --screenshot: wait for the model and the translation, show the view (or the lesson's
// step) the options name, render, quit.
int renderHeadless(attnlab::ui::TranslationController& controller, attnlab::ui::MainWindow& window, const Options& o,
                   const QString& load_error) {
    attnlab::ui::ViewContext* context = window.context();
    window.show();
    controller.waitForIdle();
    if (!load_error.isEmpty()) return fail(load_error);
    if (!context->lastError().isEmpty()) return fail(context->lastError());
    const auto info = controller.modelInfo();
    if (!info) return fail("no model: pass --model DIR");
    if (o.presenter) window.lessons()->setPresenterMode(true);  // the screen's size, as in front of a class
    if (!o.lesson.isEmpty()) {
        if (const auto error = window.lessons()->openLesson(o.lesson, o.lesson_step - 1)) return fail(*error);
    } else {
        if (const auto error = viewProblem(o.view, *info)) return fail(*error);
        window.lessons()->applyView(o.view);
    }
    settle(controller, window);
    if (!load_error.isEmpty()) return fail(load_error);  // the lesson's model: refused, not got, not loaded
    if (!context->lastError().isEmpty()) return fail(context->lastError());
    if (!o.heads_page.isEmpty()) {
        context->showHeadLab(o.heads_page, o.ablate);
        settle(controller, window);
        if (!context->lastError().isEmpty()) return fail(context->lastError());
    }
    layOut();
    if (!o.export_to.isEmpty())
        if (const auto error = window.exportCurrentView(o.export_to)) return fail(*error);
    if (!o.animation.isEmpty())
        if (const auto error = window.exportCurrentAnimation(o.animation)) return fail(*error);
    if (!o.screenshot.isEmpty())
        if (const auto error = attnlab::ui::saveImage(o.screenshot, window.grab().toImage())) return fail(*error);
    if (!o.screenshot_steps.isEmpty()) return screenshotSteps(controller, window, o);
    return 0;
}
}  // namespace

int main(int argc, char** argv) {
    if (!displayAvailable()) {
        if (!needsNoScreen(argc, argv)) {
            std::fprintf(
                stderr,
                "attnlab: no display to open a window on (DISPLAY and WAYLAND_DISPLAY are unset). Run it in a "
                "desktop session, under a virtual display (xvfb-run attnlab ...), or headless: attnlab --text "
                "\"...\" --export figure.png | --screenshot window.png. attnlab-cli translates without one.\n");
            return kNoDisplay;
        }
        qputenv("QT_QPA_PLATFORM", "offscreen");  // a figure or a screenshot needs no screen
    }
    QApplication app(argc, argv);
    QApplication::setApplicationName("AttnLab");
    QApplication::setOrganizationName("AttnLab");
    QApplication::setApplicationVersion(attnlab::version());
    QApplication::setWindowIcon(QIcon(":/attnlab.svg"));
    Options o;
    if (const auto error = parseOptions(app, o)) return fail(*error);
    if (o.headless() && !o.model.isEmpty() && !QFileInfo::exists(o.model)) {
        try {  // a Hugging Face name not in the cache yet: got now (no window to show progress in)
            o.model = QString::fromStdString(attnlab::resolveModelArgument(o.model.toStdString()));
            const auto examples = attnlab::readExamples(o.model.toStdString());
            if (o.text.isEmpty() && !examples.empty()) o.text = QString::fromStdString(examples[0].source);
        } catch (const attnlab::Error& e) {
            return fail(QString::fromUtf8(e.what()));
        }
    }

    attnlab::ui::TranslationController controller;
    controller.setThreads(o.threads);
    attnlab::ui::MainWindow window(&controller, /*error_dialogs=*/!o.headless());
    attnlab::ui::ViewContext* context = window.context();
    window.resize(1400, 900);
    if (o.text_size > 0) context->setTextSize(o.text_size, /*remember=*/false);
    if (o.no_live) context->setLiveTranslation(false, /*remember=*/false);
    QString load_error;  // the first failure is the one to report headlessly
    QObject::connect(
        context, &attnlab::ui::ViewContext::failed, &window, [&](attnlab::ui::Operation op, const QString& m) {
            const bool model = op == attnlab::ui::Operation::LoadModel || op == attnlab::ui::Operation::GetModel;
            if (model && load_error.isEmpty()) load_error = m;
        });
    context->setDevice(o.device);  // as given: "cuda:1", or an error when the model loads
    if (!o.model.isEmpty()) context->openModel(o.model);
    if (context->fetching()) {
        // The model is being got: the sentence (or its first example) once it has loaded.
        QObject::connect(
            context, &attnlab::ui::ViewContext::modelChanged, &window,
            [context, text = o.text](attnlab::ui::ModelInfoPtr info) {
                std::vector<attnlab::Example> examples;
                try {
                    examples = attnlab::readExamples(info->package_dir);
                } catch (const attnlab::Error&) {  // a bad examples.tsv: no sentence to start with
                }
                const QString sentence = !text.isEmpty()    ? text
                                         : examples.empty() ? QString()
                                                            : QString::fromStdString(examples[0].source);
                if (!sentence.isEmpty()) context->translateSentence(sentence);
            },
            Qt::SingleShotConnection);
    } else if (!o.text.isEmpty()) {
        context->translateSentence(o.text);
    }
    if (o.view.tab) context->showView(*o.view.tab);
    if (o.headless()) {
        answerDownloadsHeadlessly(window, o.allow_download);
        return renderHeadless(controller, window, o, load_error);
    }

    window.show();
    if (!o.lesson.isEmpty()) {
        // A bad lesson is reported; the window stays open with what it has.
        if (const auto error = window.lessons()->openLesson(o.lesson, o.lesson_step - 1)) fail(*error);
    } else {
        QObject::connect(
            context, &attnlab::ui::ViewContext::resultChanged, &window,
            [&](attnlab::ui::ResultPtr) { window.lessons()->applyView(o.view); }, Qt::SingleShotConnection);
    }
    if (!o.heads_page.isEmpty())
        QObject::connect(
            context, &attnlab::ui::ViewContext::resultChanged, &window,
            [&](attnlab::ui::ResultPtr) { context->showHeadLab(o.heads_page, o.ablate); }, Qt::SingleShotConnection);
    if (o.presenter) window.lessons()->setPresenterMode(true);
    return app.exec();
}
