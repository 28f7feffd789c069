// Presenter mode on the screen it is on: the real window, every step of every bundled lesson, at
// the presenter text size. CTest runs it on a 1920 x 1080 and a 1280 x 720 offscreen screen
// (QT_QPA_PLATFORM=offscreen:configfile=…); the window's minimum size must fit the screen and the
// caption pane must lie inside the window, and the part of the view that the step names (its
// focus; without one, the view's first part) must be in sight, none of it scrolled away or cut
// off, and be the widest pane of every side-by-side splitter it sits in. The ordinary window's
// minimum fits 1366 x 768.
#include "document/view.h"
#include "lessons/lesson_controller.h"
#include "lessons/lesson_pane.h"
#include "plots/attention_grid.h"
#include "plots/attention_view.h"
#include "shell/main_window.h"
#include "shell/view_registry.h"
#include "views/attention_explorer.h"
#include "views/logit_lens_view.h"

#include <attnlab/lesson.h>

#include <qcustomplot.h>
#include <QDockWidget>
#include <QElapsedTimer>
#include <QHeaderView>
#include <QMenuBar>
#include <QScreen>
#include <QScrollArea>
#include <QSplitter>
#include <QStatusBar>
#include <QStyle>
#include <QTabBar>
#include <QTableView>
#include <QTableWidget>
#include <QTreeView>
#include <QtTest/QtTest>

#include <algorithm>

using namespace attnlab::ui;

namespace {
// The widgets whose minimum width is largest, for the failure message.
QString widest(const QWidget* top) {
    QList<QWidget*> all = top->findChildren<QWidget*>();
    all.erase(std::remove_if(all.begin(), all.end(), [](QWidget* w) { return !w->isVisible(); }), all.end());
    std::sort(all.begin(), all.end(),
              [](QWidget* a, QWidget* b) { return a->minimumSizeHint().width() > b->minimumSizeHint().width(); });
    QStringList out;
    for (int i = 0; i < std::min<int>(8, all.size()); ++i)
        out << QStringLiteral("%1 '%2' %3x%4")
                   .arg(all[i]->metaObject()->className(), all[i]->objectName())
                   .arg(all[i]->minimumSizeHint().width())
                   .arg(all[i]->minimumSizeHint().height());
    return out.join("; ");
}

// Where a side-by-side splitter around `part` gives the pane that holds it less width than another
// pane (the focus squeezed to a corner); empty when it is the widest in every one it sits in.
QString squeezed(const QWidget* part) {
    for (const QWidget* pane = part; pane; pane = pane->parentWidget()) {
        const auto* splitter = qobject_cast<const QSplitter*>(pane->parentWidget());
        if (!splitter || splitter->orientation() != Qt::Horizontal) continue;
        const QList<int> sizes = splitter->sizes();
        const int at = splitter->indexOf(const_cast<QWidget*>(pane));
        if (at >= 0 && *std::max_element(sizes.begin(), sizes.end()) > sizes[at])
            return QStringLiteral("pane %1 of a splitter of sizes %2").arg(at).arg([&] {
                QStringList s;
                for (int i = 0; i < sizes.size(); ++i)
                    s << QStringLiteral("%1 (%2 at least)")
                             .arg(sizes[i])
                             .arg(std::max(splitter->widget(i)->minimumSizeHint().width(),
                                           splitter->widget(i)->minimumWidth()));
                return s.join(", ");
            }());
    }
    return {};
}

bool fits(QSize size, QSize room) { return size.width() <= room.width() && size.height() <= room.height(); }

// Where `part` is cut off: by the window, or by a scroll area's viewport around it; empty when all
// of it is in sight.
QString cutOff(const QWidget* part, const QWidget* window) {
    if (!part->isVisible()) return QStringLiteral("hidden");
    const QRect in_window(part->mapTo(window, QPoint(0, 0)), part->size());
    if (!window->rect().contains(in_window)) return QStringLiteral("outside the window");
    for (const QWidget* w = part->parentWidget(); w && w != window; w = w->parentWidget()) {
        const auto* area = qobject_cast<const QScrollArea*>(w);
        if (!area) continue;
        const QRect in_viewport(part->mapTo(area->viewport(), QPoint(0, 0)), part->size());
        if (!area->viewport()->rect().contains(in_viewport))
            return QStringLiteral("%1x%2 at (%3, %4) in a %5x%6 viewport")
                .arg(in_viewport.width())
                .arg(in_viewport.height())
                .arg(in_viewport.x())
                .arg(in_viewport.y())
                .arg(area->viewport()->width())
                .arg(area->viewport()->height());
    }
    return {};
}

// Whether any of `w` is on the screen: shown, and not wholly scrolled out of every scroll area
// around it.
bool inSight(const QWidget* w, const QWidget* window) {
    if (!w->isVisible() || w->width() == 0 || w->height() == 0) return false;
    if (!window->rect().intersects(QRect(w->mapTo(window, QPoint(0, 0)), w->size()))) return false;
    for (const QWidget* p = w->parentWidget(); p && p != window; p = p->parentWidget())
        if (const auto* area = qobject_cast<const QScrollArea*>(p))
            if (!area->viewport()->rect().intersects(QRect(w->mapTo(area->viewport(), QPoint(0, 0)), w->size())))
                return false;
    return true;
}

// Where the logit lens's strip cuts a text (issue 54): a cell's top piece or a position's or layer's
// label wider than its column or row header; empty when every text is drawn whole.
QString lensCut(const QTableWidget* t) {
    const int margin = 2 * t->style()->pixelMetric(QStyle::PM_FocusFrameHMargin, nullptr, t);
    for (int p = 0; p < t->columnCount(); ++p) {
        const int width = t->columnWidth(p);
        const QString label = t->horizontalHeaderItem(p)->text();
        if (t->horizontalHeader()->fontMetrics().horizontalAdvance(label) + margin > width)
            return QStringLiteral("the label of position %1 (%2) in %3 px").arg(p + 1).arg(label).arg(width);
        for (int l = 0; l < t->rowCount(); ++l) {
            const QTableWidgetItem* item = t->item(l, p);
            const int text = QFontMetrics(item->font()).horizontalAdvance(item->text());
            if (text + margin > width || QFontMetrics(item->font()).height() > t->rowHeight(l))
                return QStringLiteral("layer %1's cell at position %2 (%3: %4 px) in %5x%6 px")
                    .arg(l + 1)
                    .arg(p + 1)
                    .arg(item->text())
                    .arg(text)
                    .arg(width)
                    .arg(t->rowHeight(l));
        }
    }
    const QHeaderView* rows = t->verticalHeader();
    for (int l = 0; l < t->rowCount(); ++l)
        if (rows->fontMetrics().horizontalAdvance(t->verticalHeaderItem(l)->text()) + margin > rows->width())
            return QStringLiteral("the label of layer %1 in %2 px").arg(l + 1).arg(rows->width());
    return {};
}

// The horizontal header of a table or a tree (the beam search's), or null.
const QHeaderView* columnsOf(const QAbstractItemView* table) {
    if (const auto* t = qobject_cast<const QTableView*>(table)) return t->horizontalHeader();
    if (const auto* t = qobject_cast<const QTreeView*>(table)) return t->isHeaderHidden() ? nullptr : t->header();
    return nullptr;
}
}  // namespace

class TestPresenter : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void theOrdinaryWindowFits();
    void everyStepFitsTheScreen();
    void aStepWithoutAFocusIsReadable();
    void aStepWithALTIPlusAndTheLogitLens();  // issue 54

private:
    void settle();
    void checkStep(const QString& lesson, int step);
    std::unique_ptr<TranslationController> m_controller;
    std::unique_ptr<MainWindow> m_window;
    attnlab::Lesson m_lesson;  // the lesson whose steps are checked
};

void TestPresenter::initTestCase() {
    QStandardPaths::setTestModeEnabled(true);
    m_controller = std::make_unique<TranslationController>();
    m_window = std::make_unique<MainWindow>(m_controller.get(), /*error_dialogs=*/false);
    m_window->show();
    qInfo("screen %dx%d", m_window->screen()->size().width(), m_window->screen()->size().height());
}

void TestPresenter::settle() {
    QElapsedTimer waited;
    waited.start();
    do {
        m_controller->waitForIdle();
        QCoreApplication::processEvents();
    } while ((m_controller->busy() || m_window->lessons()->pending()) && waited.elapsed() < 60000);
    QVERIFY2(!m_window->lessons()->pending(), "a lesson step still waits after 60 s");
}

void TestPresenter::theOrdinaryWindowFits() {
    const QSize min = m_window->minimumSizeHint();
    qInfo("ordinary window: minimum %dx%d", min.width(), min.height());
    QVERIFY2(fits(min, {1366, 768}), qPrintable(widest(m_window.get())));
}

void TestPresenter::checkStep(const QString& lesson, int step) {
    const QSize screen = m_window->screen()->size();
    const QSize min = m_window->minimumSizeHint();
    const View* view = m_window->views()->currentView();
    qInfo("%s step %d: minimum %dx%d; %s needs %dx%d, has %dx%d", qPrintable(lesson), step + 1, min.width(),
          min.height(), qPrintable(view->objectName()), view->minimumSizeHint().width(),
          view->minimumSizeHint().height(), view->parentWidget()->width(), view->parentWidget()->height());
    QVERIFY2(fits(min, screen), qPrintable(QStringLiteral("%1 step %2: minimum %3x%4 on %5x%6: %7")
                                               .arg(lesson)
                                               .arg(step + 1)
                                               .arg(min.width())
                                               .arg(min.height())
                                               .arg(screen.width())
                                               .arg(screen.height())
                                               .arg(widest(m_window.get()))));
    QCOMPARE(m_window->size(), screen);
    auto* dock = m_window->lessons()->pane()->parentWidget();
    QVERIFY(dock->isVisible());
    const QRect pane(dock->mapTo(m_window.get(), QPoint(0, 0)), dock->size());
    QVERIFY2(m_window->rect().contains(pane), qPrintable(lesson));
    // The room goes to the view and the caption: the menu, status and tab bars are folded away.
    QVERIFY(!m_window->menuBar()->isVisible() && !m_window->statusBar()->isVisible());
    QVERIFY(!m_window->views()->tabBar()->isVisible());
    // What the step's caption is about, all of it in sight without scrolling: its focus, or the
    // view's first part.
    const ViewTabs* tabs = m_window->views();
    const auto& state = m_lesson.steps[size_t(step)].view;
    const auto parts = view->parts();
    if (parts.empty()) return;
    const std::string name = state.focus.value_or(parts.front().first);
    const QWidget* part = tabs->part(tabs->currentName(), name);
    QVERIFY2(part, name.c_str());
    const QString cut = cutOff(part, m_window.get());
    QVERIFY2(cut.isEmpty(), qPrintable(QStringLiteral("%1 step %2: %3 of %4 is cut off: %5")
                                           .arg(lesson)
                                           .arg(step + 1)
                                           .arg(QString::fromStdString(name), view->objectName(), cut)));
    // ... and not squeezed beside the view's other parts (the Training tab's map, a quarter of its
    // row on a 1280 x 720 projector, showed a title of eight lines above a heatmap one pixel high).
    // Every map of the focus, and every strip on the screen with it, readable on both screens:
    // each row (up to 24) as tall as a label of the caption's size share (15 px at 720p, 22 px at
    // 1080p: the larger screen gives the focus no fewer pixels a row than the smaller), every piece
    // labelled at that size.
    QList<AttentionView*> maps = part->findChildren<AttentionView*>();
    if (auto* itself = qobject_cast<AttentionView*>(const_cast<QWidget*>(part))) maps << itself;
    // Beside the focus, a strip (the Decoding tab's every head's row, its object named so) is read
    // as a list of labels: it keeps them too. Other maps give the focus their room.
    for (AttentionView* map : view->findChildren<AttentionView*>())
        if (!maps.contains(map) && map->objectName() == "strip" && inSight(map, m_window.get())) maps << map;
    const double text_pt = presenterTextSize(screen.height());
    for (const AttentionView* map : std::as_const(maps)) {
        const int rows = int(map->map().size());
        if (!map->isVisible() || rows == 0 || rows > 24) continue;
        const double row_px = map->plot()->axisRect()->height() / double(rows);
        const int columns = int(map->map().front().size());
        const double label_pt = map->plot()->yAxis->tickLabelFont().pointSizeF();
        qInfo(
            "%s step %d: a map of %d rows: %.1f px a row (%d needed), %d labelled at %.1f pt; %d columns, %d "
            "labelled",
            qPrintable(lesson), step + 1, rows, row_px, map->readableRowPx(), int(map->shownQueryLabels().size()),
            label_pt, columns, int(map->shownKeyLabels().size()));
        // A column narrower than a line of text cannot carry a label of its own: there (the four
        // masks side by side on 1280 x 720, 9 px a column) every other one is labelled, the
        // tooltip naming each cell.
        const double column_px = map->plot()->axisRect()->width() / double(columns);
        const int labels_needed = column_px >= map->readableRowPx() ? columns : (columns + 1) / 2;
        // The labels' font steps by half a point.
        QVERIFY2(row_px >= map->readableRowPx() && map->shownQueryLabels().size() == rows &&
                     map->shownKeyLabels().size() >= labels_needed &&
                     label_pt >= AttentionView::kReadableLabelShare * text_pt - 0.5,
                 qPrintable(QStringLiteral("%1 step %2: a map of %3 rows: %4 px a row (%5 needed), %6 labelled at %7 "
                                           "pt (%8 pt text); %9 of %10 columns labelled (%11)")
                                .arg(lesson)
                                .arg(step + 1)
                                .arg(rows)
                                .arg(row_px, 0, 'f', 1)
                                .arg(map->readableRowPx())
                                .arg(map->shownQueryLabels().size())
                                .arg(label_pt, 0, 'f', 1)
                                .arg(text_pt, 0, 'f', 1)
                                .arg(map->shownKeyLabels().size())
                                .arg(columns)
                                .arg(map->title())));
        // Its key labels in sight, not under the fold of a scrolled view (tour steps 12-14: the strip's
        // slanted source pieces cut off at the bottom of the Decoding tab, on both screens): below the
        // axis rect, the ticks, their padding and the labels' extent at their angle.
        const QCPAxis* keys = map->plot()->xAxis;
        const QFontMetrics key_fm(keys->tickLabelFont());
        int widest = 0;
        for (const QString& k : map->shownKeyLabels()) widest = std::max(widest, key_fm.horizontalAdvance(k));
        const double angle = keys->tickLabelRotation() * M_PI / 180;
        const int labels_end = map->plot()->axisRect()->bottom() + keys->offset() + keys->tickLengthOut() +
                               keys->tickLabelPadding() +
                               int(std::ceil(widest * std::sin(angle) + key_fm.height() * std::cos(angle)));
        const int seen_end = map->plot()->visibleRegion().boundingRect().bottom();
        QVERIFY2(
            labels_end <= seen_end + 2,
            qPrintable(
                QStringLiteral(
                    "%1 step %2: %3: its key labels end at %4 px, %5 px of it are in sight (rotated %6, plot %7 px)")
                    .arg(lesson)
                    .arg(step + 1)
                    .arg(map->title())
                    .arg(labels_end)
                    .arg(seen_end)
                    .arg(keys->tickLabelRotation())
                    .arg(map->plot()->height())));
    }
    // A grid's captions and a table's text: at the labels' share of the text size at least (the issue asks
    // it of every strip, grid and table on a step's screen; the font steps by half a point).
    const auto readable = [&](const QWidget* w) {
        return w->font().pointSizeF() >= AttentionView::kReadableLabelShare * text_pt - 0.5;
    };
    const auto small_text = [&](const char* what, const QWidget* w) {
        return QStringLiteral("%1 step %2: %3 at %4 pt (%5 pt text)")
            .arg(lesson)
            .arg(step + 1)
            .arg(what)
            .arg(w->font().pointSizeF())
            .arg(text_pt);
    };
    // Every layer x head grid on the screen: each caption drawn whole at the text size.
    for (const AttentionGrid* grid : view->findChildren<AttentionGrid*>()) {
        if (!inSight(grid, m_window.get()) || grid->layers() == 0) continue;
        qInfo("%s step %d: a grid of %d x %d, cells %dx%d, captions at %.1f pt", qPrintable(lesson), step + 1,
              grid->layers(), grid->heads(), grid->cellRect(grid->firstShownLayer(), 0).width(),
              grid->cellRect(grid->firstShownLayer(), 0).height(), grid->font().pointSizeF());
        QVERIFY2(grid->captionsFit() && !grid->layerText(grid->firstShownLayer()).isEmpty() &&
                     !grid->headerText(0).isEmpty(),
                 qPrintable(QStringLiteral("%1 step %2: a grid's captions are cut").arg(lesson).arg(step + 1)));
        QVERIFY2(readable(grid), qPrintable(small_text("a grid's captions", grid)));
    }
    // A table (or the beam search's tree) with all its columns in sight (the beam table's kept /
    // pruned column had been scrolled off), the focus's and every other one on the screen.
    for (const QAbstractItemView* table : view->findChildren<QAbstractItemView*>()) {
        const QHeaderView* header = columnsOf(table);
        if (!header || !table->model() || !inSight(table, m_window.get())) continue;
        const int columns = table->model()->columnCount();
        const int width = header->length();
        qInfo("%s step %d: a table of %d columns, %d px wide in a %d px view", qPrintable(lesson), step + 1, columns,
              width, table->viewport()->width());
        QVERIFY2(readable(table), qPrintable(small_text("a table's text", table)));
        QVERIFY2(width <= table->viewport()->width(),
                 qPrintable(QStringLiteral("%1 step %2: a table of %3 columns, %4 px wide in a %5 px view")
                                .arg(lesson)
                                .arg(step + 1)
                                .arg(columns)
                                .arg(width)
                                .arg(table->viewport()->width())));
    }
    // The logit lens's strip: every cell's piece and every label drawn whole.
    for (const LogitLensView* lens : m_window->findChildren<LogitLensView*>()) {
        if (!inSight(lens->table(), m_window.get())) continue;
        const QString lens_cut = lensCut(lens->table());
        QVERIFY2(
            lens_cut.isEmpty(),
            qPrintable(QStringLiteral("%1 step %2: the logit lens cuts %3").arg(lesson).arg(step + 1).arg(lens_cut)));
    }
    // The caption read whole, without scrolling.
    const LessonPane* pane_widget = m_window->lessons()->pane();
    QVERIFY2(!pane_widget->captionScrolls(), qPrintable(QStringLiteral("%1 step %2: the caption scrolls at %3 pt")
                                                            .arg(lesson)
                                                            .arg(step + 1)
                                                            .arg(pane_widget->captionTextSize())));
    const QString small = squeezed(part);
    QVERIFY2(small.isEmpty(), qPrintable(QStringLiteral("%1 step %2: %3 of %4 is squeezed: %5")
                                             .arg(lesson)
                                             .arg(step + 1)
                                             .arg(QString::fromStdString(name), view->objectName(), small)));
}

void TestPresenter::everyStepFitsTheScreen() {
    const auto lessons = attnlab::bundledLessons();
    QVERIFY(!lessons.empty());
    QStringList too_wide;  // the ordinary window after a lesson, wider than 1366 x 768
    for (const auto& l : lessons) {
        const QString path = QString::fromStdString(l.path);
        m_lesson = attnlab::readLesson(l.path);
        QVERIFY2(!m_window->lessons()->openLesson(path), qPrintable(path));
        settle();
        m_window->lessons()->setPresenterMode(true);
        QVERIFY(m_window->windowState() & Qt::WindowFullScreen);
        const QString name = QFileInfo(path).fileName();
        for (int step = 0; step < m_window->lessons()->pane()->count(); ++step) {
            QVERIFY(!m_window->lessons()->goToStep(step));
            settle();
            QTest::qWait(10);  // layouts settle
            checkStep(name, step);
        }
        m_window->lessons()->setPresenterMode(false);
        // The application's font change reaches the widgets through the event loop: measured before
        // it, the window still had the presenter's text size (18 pt at 1080p) and was too wide.
        settle();
        const QSize min = m_window->minimumSizeHint();  // the ordinary window, the lesson pane shown
        if (!fits(min, {1366, 768}))                    // said once every lesson has been presented
            too_wide << QStringLiteral("after %1: minimum %2x%3: %4")
                            .arg(name)
                            .arg(min.width())
                            .arg(min.height())
                            .arg(widest(m_window.get()));
    }
    QVERIFY2(too_wide.isEmpty(), qPrintable(too_wide.join("\n")));
}

// Issue 52: a step written in the app had no focus; presented, a Decoding step showed its strip at
// about 4 px a row, its axis title cut to "layer,". A step without a focus is laid out around its
// view's first part, and every strip beside it keeps readable rows.
void TestPresenter::aStepWithoutAFocusIsReadable() {
    QTemporaryDir dir;
    const QString path = dir.filePath("written.json");
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(R"({"format": "attnlab-lesson", "version": 1, "model": "de-en", "steps": [
        {"title": "Decoding", "caption": "Step by step.",
         "view": {"tab": "decoding", "sentence": "Zwei Hunde spielen im Schnee.", "step": 1}},
        {"title": "Maps", "caption": "Every head.", "view": {"tab": "attention", "kind": "cross"}},
        {"title": "Training", "caption": "Learned.", "view": {"tab": "training", "point": 1}}]})");
    f.close();
    m_lesson = attnlab::readLesson(path.toStdString());
    QVERIFY(!m_window->lessons()->openLesson(path));
    settle();
    m_window->lessons()->setPresenterMode(true);
    for (int step = 0; step < int(m_lesson.steps.size()); ++step) {
        QVERIFY(!m_window->lessons()->goToStep(step));
        settle();
        QTest::qWait(10);
        checkStep("written.json", step);
        if (QTest::currentTestFailed()) break;
    }
    m_window->lessons()->setPresenterMode(false);
}

QTEST_MAIN(TestPresenter)
// Issue 54: a lesson step whose maps are ALTI+ (the Method), written as the lesson editor writes it, read
// back and shown in presenter mode: the Attention tab draws the computed ALTI+ maps, one per layer, and the
// next step's logit lens shows every cell whole.
void TestPresenter::aStepWithALTIPlusAndTheLogitLens() {
    attnlab::Lesson written;
    written.model = "de-en";
    attnlab::LessonStep alti;
    alti.title = "ALTI+";
    alti.caption = "What reaches the output.";
    alti.view.tab = "attention";
    alti.view.focus = "map";
    alti.view.sentence = "Zwei Hunde spielen im Schnee.";
    alti.view.kind = attnlab::AttentionKind::Cross;
    alti.view.layer = 1;
    alti.view.measure = attnlab::MapMeasure::AltiPlus;
    attnlab::LessonStep lens;
    lens.title = "Logit lens";
    lens.caption = "Every layer's prediction.";
    lens.view.tab = "lens";
    lens.view.focus = "strip";
    written.steps = {alti, lens};
    QTemporaryDir dir;
    const QString path = dir.filePath("alti.json");
    attnlab::writeLesson(path.toStdString(), written);
    m_lesson = attnlab::readLesson(path.toStdString());
    QCOMPARE(m_lesson.steps[0].view.measure, std::optional(attnlab::MapMeasure::AltiPlus));
    QVERIFY(!m_window->lessons()->openLesson(path));
    settle();
    m_window->lessons()->setPresenterMode(true);
    QVERIFY(!m_window->lessons()->goToStep(0));
    settle();
    QTest::qWait(10);
    QCOMPARE(m_window->context()->measure(), attnlab::MapMeasure::AltiPlus);
    const auto* explorer = m_window->views()->find<AttentionExplorer>();
    QVERIFY(explorer->grid()->maps().size() > 1 && explorer->grid()->maps()[0].size() == 1);  // a map per layer
    QVERIFY2(explorer->view()->title().contains("layer 2, ALTI+"), qPrintable(explorer->view()->title()));
    QVERIFY(explorer->view()->map() == explorer->grid()->maps()[1][0]);
    checkStep("alti.json", 0);
    QVERIFY(!m_window->lessons()->goToStep(1));
    settle();
    QTest::qWait(10);
    const auto* strip = m_window->views()->find<LogitLensView>();
    QVERIFY2(strip->lens() && strip->table()->rowCount() > 1, qPrintable(strip->message()));
    checkStep("alti.json", 1);
    m_window->lessons()->setPresenterMode(false);
    m_window->context()->setMeasure(attnlab::MapMeasure::Weights);
    settle();
}

#include "tst_presenter.moc"
