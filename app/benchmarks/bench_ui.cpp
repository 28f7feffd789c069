// Desktop-app timings (issue 4): model load, all maps drawn after a translation, head switch, the
// Training tab's slider when the model has a history (issue 28); the
// translation and its maps also with two busy processes beside the app (issue 25: seven sentences
// idle, the model loaded again to empty the controller's cache, the same seven under load).
//   QT_QPA_PLATFORM=offscreen build/bin/bench_ui --model DIR [--text S] [--repeat N]
// Prints one line per measurement: medians over seven captions for the translation lines, over
// --repeat rounds for the others. Offscreen rendering goes through
// the same QCustomPlot and QPainter code as on screen.
#include "busy_load.h"
#include "document/translation_controller.h"
#include "headlab/ablation_panel.h"
#include "headlab/head_lab_view.h"
#include "plots/attention_grid.h"
#include "plots/attention_view.h"
#include "shell/main_window.h"
#include "shell/translate_panel.h"
#include "shell/view_registry.h"
#include "views/attention_explorer.h"
#include "views/decoding_view.h"
#include "views/training_view.h"
#include "views/weight_view.h"

#include <attnlab/package.h>

#include <qcustomplot.h>

#include <QApplication>
#include <QCommandLineParser>
#include <QElapsedTimer>
#include <QSignalSpy>
#include <QTest>
#include <QThread>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

using namespace attnlab::ui;

namespace {
// Milliseconds since the kernel started this process (exec, dynamic loading of Qt and LibTorch
// included), from /proc/self/stat's start time and /proc/uptime; 10 ms resolution. -1 if unknown.
double msSinceProcessStart() {
    std::ifstream stat("/proc/self/stat"), up("/proc/uptime");
    std::string all((std::istreambuf_iterator<char>(stat)), {});
    const auto close = all.rfind(')');
    if (close == std::string::npos) return -1;
    std::istringstream rest(all.substr(close + 2));
    std::string field;
    for (int i = 3; i <= 22 && rest >> field; ++i) {
    }
    double uptime = 0;
    if (!(up >> uptime)) return -1;
    return (uptime - std::stod(field) / double(sysconf(_SC_CLK_TCK))) * 1000;
}
double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[v.size() / 2];
}
// Waits in an event loop (as the app does), not in a processEvents() spin that would take a core
// from the translation thread.
void waitFor(QSignalSpy& spy) {
    while (spy.count() == 0) spy.wait(10000);
}

struct Options {
    QString dir;   // the package
    QString text;  // --text (or the default caption)
    bool text_given = false;
    int repeat = 5;
};

Options parseOptions(const QApplication& app) {
    QCommandLineParser p;
    QCommandLineOption model("model", "package", "dir"),
        text("text", "sentence", "s",
             "Ein Mann mit einer roten Jacke fährt mit seinem Fahrrad über eine alte Brücke in der Stadt.");
    QCommandLineOption repeat("repeat", "runs", "n", "5");
    p.addOptions({model, text, repeat});
    p.process(app);
    Options o;
    o.dir = p.value(model);
    if (o.dir.isEmpty()) o.dir = QString::fromStdString(attnlab::defaultModelDir());
    o.text = p.value(text);
    o.text_given = p.isSet(text);
    o.repeat = p.value(repeat).toInt();
    return o;
}

[[noreturn]] void fail(const QList<QVariant>& why) {
    std::fprintf(stderr, "bench_ui: %s\n", qPrintable(why.at(1).toString()));
    std::exit(2);
}

// One translation as the window asks for it, then every map drawn: {request -> result on the GUI
// thread, result -> maps drawn, inside the translator} in ms.
struct Typed {
    std::vector<double> translate, draw, inside, pieces;
};

// The window, its controller and the measurements, each a function of its own; every line is printed
// where it is measured.
class Bench {
public:
    explicit Bench(Options o) : m_o(std::move(o)), m_window(&m_controller, /*error_dialogs=*/false) {}

    void loadModel(const QElapsedTimer& since_start);
    void typedTranslations();
    void switchHeads();
    void decodingSlider();
    void trainingSlider();
    void openCells();
    void toggleHeads();

private:
    void reload();
    Typed typed();
    void redrawAttention();
    double openCell(int layer, int query);
    QStringList typedSentences() const;

    Options m_o;
    TranslationController m_controller;
    MainWindow m_window;
    AttentionExplorer* m_explorer = nullptr;
};

void Bench::loadModel(const QElapsedTimer& since_start) {
    m_window.resize(1400, 900);
    m_window.show();
    QSignalSpy loaded(&m_controller, &TranslationController::modelLoaded);
    QSignalSpy failed(&m_controller, &TranslationController::failed);
    m_controller.loadModel(m_o.dir, "cpu", "float32");
    while (loaded.count() == 0 && failed.count() == 0) loaded.wait(100);
    if (failed.count()) fail(failed.first());
    const double start_ms = since_start.nsecsElapsed() / 1e6;
    std::printf(
        "start to model loaded: %.0f ms from process start, %.0f ms from main() (load inside the controller %.0f ms)\n",
        msSinceProcessStart(), start_ms, m_controller.modelInfo()->load_seconds * 1000);
    m_explorer = m_window.views()->find<AttentionExplorer>();
}

// Sentences of typical caption length, each translated once per phase: the controller answers a
// sentence it has translated from its cache, which a new load of the model empties.
// (--text given: that sentence alone, for a model of another language.)
QStringList Bench::typedSentences() const {
    if (m_o.text_given) return {m_o.text};
    return {m_o.text,
            QStringLiteral("Zwei kleine Kinder spielen am Strand mit einem großen gelben Ball."),
            QStringLiteral("Eine Frau in einem blauen Kleid sitzt auf einer Bank und liest ein Buch."),
            QStringLiteral("Ein brauner Hund rennt mit einem Stock im Maul über eine grüne Wiese."),
            QStringLiteral("Mehrere Arbeiter in orangefarbenen Westen reparieren eine Straße."),
            QStringLiteral("Ein älterer Mann verkauft Obst und Gemüse auf einem Markt."),
            QStringLiteral("Ein Mädchen mit einem Helm fährt Skateboard in einem Park.")};
}

// The model loaded again (the cache emptied), then one sentence outside the list translated, so
// that the weights are packed and the worker is warm before the clock runs.
void Bench::reload() {
    QSignalSpy again(&m_controller, &TranslationController::modelLoaded);
    QSignalSpy failed_now(&m_controller, &TranslationController::failed);
    m_controller.loadModel(m_o.dir, "cpu", "float32");
    while (again.count() == 0 && failed_now.count() == 0) again.wait(100);
    if (failed_now.count()) fail(failed_now.first());
    QSignalSpy warm(&m_controller, &TranslationController::translationFinished);
    m_controller.translate(m_o.text + " " + m_o.text, m_window.translatePanel()->options());
    while (warm.count() == 0 && failed_now.count() == 0) warm.wait(100);
    if (failed_now.count()) fail(failed_now.first());
}

void Bench::redrawAttention() {
    m_explorer->view()->plot()->replot(QCustomPlot::rpImmediateRefresh);
    m_explorer->grid()->repaint();
}

Typed Bench::typed() {
    Typed out;
    for (const QString& sentence : typedSentences()) {
        QSignalSpy done(&m_controller, &TranslationController::translationFinished);
        QSignalSpy failed_now(&m_controller, &TranslationController::failed);
        QElapsedTimer t;
        t.start();
        m_controller.translate(sentence, m_window.translatePanel()->options());
        while (done.count() == 0 && failed_now.count() == 0) done.wait(100);
        if (failed_now.count()) fail(failed_now.first());
        const double at_result = t.nsecsElapsed() / 1e6;
        // The window's handler has already run (queued to this thread before the spy fired is not
        // guaranteed): process events until the explorer shows the new result, then force a paint.
        QApplication::processEvents();
        redrawAttention();
        out.draw.push_back(t.nsecsElapsed() / 1e6 - at_result);
        out.translate.push_back(at_result);
        out.inside.push_back(m_window.context()->result()->seconds * 1000);
        out.pieces.push_back(double(m_window.context()->result()->source_pieces.size()));
    }
    return out;
}

// Issue 25: idle, then with two busy processes (busy_load.h) started and stopped here.
void Bench::typedTranslations() {
    reload();
    const Typed idle = typed();
    reload();
    Typed busy;
    int busy_processes = 0;
    {
        attnlab::bench::BusyLoad load(2, 120);
        busy_processes = load.started();
        QThread::msleep(200);
        busy = typed();
    }
    std::printf("%zu sentence(s) of %.0f-%.0f source pieces, each once per phase\n", idle.pieces.size(),
                *std::min_element(idle.pieces.begin(), idle.pieces.end()),
                *std::max_element(idle.pieces.begin(), idle.pieces.end()));
    std::printf(
        "translation (beam 5), request to result on the GUI thread: median %.0f ms idle, %.0f ms with %d busy "
        "processes (%.1fx); inside the translator %.0f / %.0f ms\n",
        median(idle.translate), median(busy.translate), busy_processes, median(busy.translate) / median(idle.translate),
        median(idle.inside), median(busy.inside));
    std::printf("result to all maps drawn: median %.1f ms idle, %.1f ms with %d busy processes\n", median(idle.draw),
                median(busy.draw), busy_processes);
}

void Bench::switchHeads() {
    std::vector<double> sw;
    for (int i = 0; i < m_o.repeat; ++i)
        for (int k = 0; k < 3; ++k)
            for (int h = 0; h < 4; ++h) {
                QElapsedTimer s;
                s.start();
                m_explorer->select(static_cast<attnlab::AttentionKind>(k), 1, h);
                redrawAttention();
                sw.push_back(s.nsecsElapsed() / 1e6);
            }
    std::printf("switch kind/head and redraw: median %.1f ms, max %.1f ms over %zu switches\n", median(sw),
                *std::max_element(sw.begin(), sw.end()), sw.size());
}

// Issue 11: the Decoding tab's step slider (candidates, tree, cross rows redrawn).
void Bench::decodingSlider() {
    m_window.views()->showView("decoding");
    auto* dv = m_window.views()->find<DecodingView>();
    QApplication::processEvents();
    std::vector<double> slide;
    for (int i = 0; i < m_o.repeat; ++i)
        for (int step = 0; step < dv->stepCount(); ++step) {
            QElapsedTimer s;
            s.start();
            dv->setStep(step);
            dv->repaint();
            slide.push_back(s.nsecsElapsed() / 1e6);
        }
    std::printf("decoding step slider, one step redrawn: median %.1f ms, max %.1f ms over %zu moves\n", median(slide),
                *std::max_element(slide.begin(), slide.end()), slide.size());
}

// Issue 28: the Training tab's slider, point to point, every map and curve of the tab redrawn
// (for a model that carries an attention history, e.g. attnlab-cli toy's package).
void Bench::trainingSlider() {
    auto* tv = m_window.views()->find<TrainingView>();
    for (int i = 0; i < 300 && !tv->history(); ++i) QTest::qWait(10);  // read on the worker after the load
    if (!tv->history() || tv->history()->points.empty()) {
        std::printf("training tab: the model has no attention history (not measured)\n");
        return;
    }
    m_window.views()->showView("training");
    QApplication::processEvents();
    std::vector<double> moves;
    const int points = int(tv->history()->points.size());
    for (int i = 0; i < m_o.repeat; ++i)
        for (int k = 0; k < points; ++k) {
            QElapsedTimer s;
            s.start();
            tv->showPoint((k + 1) % points);
            tv->repaint();
            moves.push_back(s.nsecsElapsed() / 1e6);
        }
    std::printf(
        "training tab, slider to the next recorded point, all redrawn: median %.1f ms, max %.1f ms over %zu "
        "moves (%d points)\n",
        median(moves), *std::max_element(moves.begin(), moves.end()), moves.size(), points);
    m_window.views()->showView("decoding");
}

// Opening a cell in the Weight tab (explained in the core on the worker, then drawn), in ms.
double Bench::openCell(int layer, int query) {
    QSignalSpy explained(&m_controller, &TranslationController::explained);
    QElapsedTimer s;
    s.start();
    // Layer and head kept inside a smaller model (the toy's 2 layers).
    const auto shown = m_window.context()->result();
    const int layers = int(shown->cross.size()), heads = layers ? int(shown->cross[0].size()) : 1;
    m_window.context()->explainCell({attnlab::AttentionKind::Cross, layer % layers, std::min(3, heads - 1), query, 1});
    waitFor(explained);
    QApplication::processEvents();
    m_window.views()->find<WeightView>()->repaint();
    return s.nsecsElapsed() / 1e6;
}

// The first cell opened after a translation runs the model's teacher-forced pass (capturing every
// attention module); every further cell of that translation, in any map, reuses it.
void Bench::openCells() {
    const auto r = m_window.context()->result();  // the cells' queries: of the translation shown before
    std::vector<double> first, cell;
    const QStringList sentences{
        m_o.text_given ? m_o.text + " " + m_o.text : QStringLiteral("Zwei Hunde spielen im Schnee."), m_o.text};
    for (int i = 0; i < 2 * m_o.repeat; ++i) {
        QSignalSpy done(&m_controller, &TranslationController::translationFinished);
        m_controller.translate(sentences[i % 2], m_window.translatePanel()->options());
        waitFor(done);
        QApplication::processEvents();
        first.push_back(openCell(i % 3, 1));
    }
    for (int i = 0; i < m_o.repeat; ++i)
        for (int q = 0; q < int(r->best.ids.size()); q += 3) cell.push_back(openCell(2, q));  // layer 3 (or the last)
    std::printf(
        "open the first cell after a translation (model pass + Weight tab drawn): median %.1f ms, max %.1f ms "
        "over %zu\n",
        median(first), *std::max_element(first.begin(), first.end()), first.size());
    std::printf("open another cell of the same translation: median %.1f ms, max %.1f ms over %zu cells\n", median(cell),
                *std::max_element(cell.begin(), cell.end()), cell.size());
}

// Issue 12: toggling a head in the Heads tab's ablation grid -> the sentence translated again
// with it off (beam 5) -> the new translation and every map drawn.
void Bench::toggleHeads() {
    m_window.views()->showView("heads");
    AblationPanel* ablation = m_window.views()->find<HeadLabView>()->ablation();
    std::vector<double> toggle;
    for (int i = 0; i < m_o.repeat; ++i)
        for (int h = 0; h < 4; ++h) {
            QSignalSpy done(&m_controller, &TranslationController::translationFinished);
            QElapsedTimer s;
            s.start();
            const int last = int(m_window.context()->result()->cross.size()) - 1;
            ablation->toggle({attnlab::AttentionKind::Cross, std::min(2, last), h})
                ->click();  // on -> off, or off -> on
            waitFor(done);
            QApplication::processEvents();
            redrawAttention();
            ablation->repaint();
            toggle.push_back(s.nsecsElapsed() / 1e6);
        }
    std::printf("toggle a head -> new translation and maps drawn: median %.1f ms, max %.1f ms over %zu toggles\n",
                median(toggle), *std::max_element(toggle.begin(), toggle.end()), toggle.size());
}

}  // namespace

int main(int argc, char** argv) {
    QElapsedTimer since_start;
    since_start.start();
    QApplication app(argc, argv);
    Bench bench(parseOptions(app));
    bench.loadModel(since_start);
    bench.typedTranslations();
    bench.switchHeads();
    bench.decodingSlider();
    bench.trainingSlider();
    bench.openCells();
    bench.toggleHeads();
    return 0;
}
