#include "main_window.h"

#include "attention_explorer.h"
#include "attention_view.h"
#include "bar_plot.h"
#include "decoding_view.h"
#include "head_lab_view.h"
#include "head_stats_panel.h"
#include "ablation_panel.h"
#include "alignment_panel.h"
#include "inputs_view.h"
#include "lesson_pane.h"
#include "pair_view.h"
#include "weight_view.h"
#include "model_panel.h"
#include "positional_view.h"
#include "translate_panel.h"

#include <attnlab/errors.h>
#include <attnlab/package.h>
#include <attnlab/result_json.h>

#include <qcustomplot.h>

#include <QActionGroup>
#include <QApplication>

#include <QDragEnterEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QSettings>
#include <QStatusBar>
#include <QTabWidget>
#include <QVBoxLayout>
#include <algorithm>
#include <functional>

namespace attnlab::ui {

namespace {
// The bundled models as (label, canonical directory): "de → en  (multi30k-de-en)".
QList<QPair<QString, QString>> bundledModelList() {
    QList<QPair<QString, QString>> out;
    for (const auto& m : bundledModels())
        out.append({QStringLiteral("%1 → %2  (%3)")
                        .arg(QString::fromStdString(m.source_lang), QString::fromStdString(m.target_lang),
                             QString::fromStdString(m.name)),
                    QFileInfo(QString::fromStdString(m.dir)).canonicalFilePath()});
    return out;
}

QString noModelMessage() {
    return MainWindow::tr("No model loaded: File > Open model… (or drop a package folder here)");
}
}  // namespace

MainWindow::MainWindow(TranslationController* controller, bool error_dialogs, QWidget* parent)
    : QMainWindow(parent), m_controller(controller), m_error_dialogs(error_dialogs) {
    setWindowTitle(tr("AttnLab"));
    setAcceptDrops(true);
    m_translate = new TranslatePanel(this);
    m_explorer = new AttentionExplorer(this);
    m_positional = new PositionalEncodingView(this);
    m_model = new ModelPanel(this);
    m_decoding = new DecodingView(this);
    m_weight = new WeightView(this);
    m_inputs = new InputsView(this);
    m_pairs = new PairView(this);
    m_heads = new HeadLabView(this);
    m_tabs = new QTabWidget(this);
    m_tabs->addTab(m_explorer, tr("&Attention"));
    m_tabs->addTab(m_decoding, tr("&Decoding"));
    m_tabs->addTab(m_weight, tr("&Weight"));
    m_tabs->addTab(m_inputs, tr("&Inputs"));
    m_tabs->addTab(m_pairs, tr("Minimal pai&rs"));
    m_tabs->addTab(m_heads, tr("&Heads"));
    m_tabs->addTab(m_positional, tr("&Positional encoding"));
    m_tabs->addTab(m_model, tr("&Model"));
    auto* central = new QWidget(this);
    auto* layout = new QVBoxLayout(central);
    layout->addWidget(m_translate);
    layout->addWidget(m_tabs, 1);
    setCentralWidget(central);
    m_status_model = new QLabel(tr("no model"), this);
    statusBar()->addPermanentWidget(m_status_model);
    buildMenus();
    restoreAppearance();
    m_explorer->setEmptyMessage(noModelMessage());

    connect(m_translate, &TranslatePanel::translateRequested, this,
            [this](const QString& s, const DecodingOptions& o) { translateSentence(s, o); });
    connect(m_controller, &TranslationController::translationProgress, m_translate, &TranslatePanel::showProgress);
    connect(m_controller, &TranslationController::translationFinished, this, [this](ResultPtr r) {
        m_result = r;
        m_last_error.clear();
        m_translate->showResult(r);
        m_explorer->setResult(r);
        m_decoding->setResult(r);
        m_inputs->setResult(r);
        m_inputs_stale = true;
        refreshInputs();
        if (m_weight->explanation()) m_weight->clear(tr("The translation changed: click a cell of a map again."));
        statusBar()->showMessage(tr("Translated in %1 ms").arg(r->seconds * 1000, 0, 'f', 0), 5000);
    });
    connect(m_controller, &TranslationController::translationFailed, this, [this](const QString& m) {
        m_last_error = m;
        // The maps of the previous sentence would now sit under a sentence they do not belong to.
        m_result.reset();
        m_explorer->setResult(nullptr);
        m_decoding->clear(m);
        m_translate->showError(m);
        statusBar()->showMessage(tr("Translation failed"), 5000);
    });
    connect(m_controller, &TranslationController::modelLoaded, this, [this](ModelInfoPtr info) {
        m_last_error.clear();
        m_model->showModel(*info);
        m_positional->setShape(static_cast<int>(info->config.model.n_position),
                               static_cast<int>(info->config.model.d_model));
        const QString dir = QString::fromStdString(info->package_dir);
        m_status_model->setText(tr("%1 · %2 · loaded in %3 s")
                                    .arg(QFileInfo(dir).fileName(), QString::fromStdString(info->device))
                                    .arg(info->load_seconds, 0, 'f', 2));
        setWindowTitle(tr("AttnLab — %1").arg(QFileInfo(dir).fileName()));
        rememberRecent(dir);
        QStringList examples;
        for (const auto& e : info->examples) examples << QString::fromStdString(e.source);
        m_translate->setExamples(examples);
        m_inputs->setSecondSentence(examples.value(1));
        m_translate->setModels(bundledModelList(), QFileInfo(dir).canonicalFilePath());
        for (QAction* a : m_models_menu->actions())
            a->setChecked(a->data().toString() == QFileInfo(dir).canonicalFilePath());
        m_explorer->setEmptyMessage(tr("Type a sentence above and press Enter (or pick one from Examples)"));
        statusBar()->showMessage(tr("Model loaded"), 5000);
        if (m_pending_lesson_step >= 0) {
            const int step = std::exchange(m_pending_lesson_step, -1);
            try {
                checkLessonFitsModel(m_lesson->lesson(), int(info->config.model.n_layers),
                                     int(info->config.model.n_head), m_lesson->origin().toStdString());
                m_lesson->show(step);
            } catch (const attnlab::Error& e) {
                m_last_error = QString::fromStdString(e.what());
                showError(tr("Cannot show the lesson"), m_last_error);
            }
        }
    });
    connect(m_controller, &TranslationController::modelFailed, this, [this](const QString& m) {
        m_last_error = m;
        if (!m_controller->modelInfo()) m_explorer->setEmptyMessage(noModelMessage());
        showError(tr("Cannot open the model"),
                  m + (m_controller->modelInfo() ? tr("\n\nThe previous model stays loaded.") : QString()));
    });
    connect(m_controller, &TranslationController::busyChanged, m_translate, &TranslatePanel::setBusy);
    connect(m_translate, &TranslatePanel::modelChosen, this, &MainWindow::openModel);
    wireTeaching();
    wireInputs();
    wireHeads();
    connect(m_translate, &TranslatePanel::deviceChanged, this, [this] {
        if (auto info = m_controller->modelInfo()) openModel(QString::fromStdString(info->package_dir));
    });
}

// The trace is always recorded (the Decoding tab shows it).
void MainWindow::translateSentence(const QString& sentence, const DecodingOptions& options) {
    m_result_options = options;
    m_result_options.record_trace = true;
    m_result_options.ablate = m_heads->ablation()->ablated();  // the Heads tab's switched-off heads
    statusBar()->showMessage(options.force_prefix.empty() && options.force_prefix_ids.empty()
                                 ? tr("Translating…")
                                 : tr("Translating with a forced beginning…"));
    m_controller->translate(sentence, m_result_options);
}

// The Decoding tab's what-if requests and the Weight tab's explanations.
void MainWindow::wireTeaching() {
    connect(m_decoding, &DecodingView::forceRequested, this, [this](const std::vector<int>& ids, const QString& text) {
        DecodingOptions o = m_translate->options();
        o.force_prefix = text.toStdString();
        o.force_prefix_ids = ids;
        // The sentence the steps belong to, even when the field has been edited since.
        const auto shown = m_decoding->freeResult() ? m_decoding->freeResult() : m_result;
        translateSentence(shown ? QString::fromStdString(shown->source_text) : m_translate->sentence(), o);
    });
    connect(m_explorer, &AttentionExplorer::cellChosen, this, &MainWindow::explainCell);
    connect(m_controller, &TranslationController::explained, m_weight, &WeightView::setExplanation);
    connect(m_controller, &TranslationController::explainFailed, this, [this](const QString& m) {
        m_last_error = m;
        m_weight->clear(tr("Cannot explain this weight: %1").arg(m));
    });
}

void MainWindow::wireInputs() {
    connect(m_tabs, &QTabWidget::currentChanged, this, [this] { refreshInputs(); });
    connect(m_inputs, &InputsView::tokenRequested, this, [this](bool target, int position) {
        m_controller->inspectToken(m_result, target, position);
    });
    connect(m_inputs, &InputsView::masksRequested, this, [this](const QString& second) {
        DecodingOptions o = m_result_options;
        o.force_prefix.clear();
        o.force_prefix_ids.clear();
        o.record_trace = false;
        m_controller->inspectMasks(m_result, second, o);
    });
    connect(m_controller, &TranslationController::tokenInspected, m_inputs, &InputsView::showToken);
    connect(m_pairs, &PairView::compareRequested, this, [this](const QString& a, const QString& b) {
        DecodingOptions o = m_translate->options();
        m_controller->translatePair(a, b, o);
    });
    connect(m_controller, &TranslationController::pairTranslated, m_pairs, &PairView::setPair);
    connect(m_controller, &TranslationController::masksReady, m_inputs, &InputsView::showMasks);
    connect(m_controller, &TranslationController::inspectFailed, this, [this](const QString& m) {
        m_last_error = m;
        statusBar()->showMessage(tr("Inputs: %1").arg(m), 8000);
    });
}

void MainWindow::refreshInputs() {
    if (!m_inputs_stale || !m_result || m_tabs->currentWidget() != m_inputs) return;
    m_inputs_stale = false;
    m_inputs->selectToken(m_inputs->selectedTarget(), m_inputs->selectedPosition());
    Q_EMIT m_inputs->masksRequested(m_inputs->secondSentence());
}

void MainWindow::explainCell(const CellRef& cell) {
    m_tabs->setCurrentWidget(m_weight);
    if (!m_result) {
        m_weight->clear(tr("Translate a sentence first."));
        return;
    }
    m_weight->clear(tr("Computing…"));
    m_controller->explain(m_result, cell);
}

void MainWindow::buildMenus() {
    QMenu* file = menuBar()->addMenu(tr("&File"));
    file->addAction(tr("&Open model…"), QKeySequence::Open, this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Open a model package"));
        if (!dir.isEmpty()) openModel(dir);
    });
    m_models_menu = file->addMenu(tr("&Models"));
    for (const auto& [label, dir] : bundledModelList()) {
        QAction* a = m_models_menu->addAction(label, this, [this, dir] { openModel(dir); });
        a->setData(dir);
        a->setCheckable(true);
    }
    m_models_menu->setEnabled(!m_models_menu->isEmpty());
    m_recent = file->addMenu(tr("Open &recent"));
    rebuildRecentMenu();
    file->addSeparator();
    file->addAction(tr("Export view as &PNG…"), QKeySequence(tr("Ctrl+E")), this, [this] {
        const QString path =
            QFileDialog::getSaveFileName(this, tr("Export PNG"), "attention.png", tr("PNG images (*.png)"));
        if (path.isEmpty()) return;
        if (const auto error = exportCurrentView(path)) showError(tr("Export failed"), *error);
    });
    file->addAction(tr("Export view as P&DF…"), QKeySequence(tr("Ctrl+Shift+E")), this, [this] {
        const QString path =
            QFileDialog::getSaveFileName(this, tr("Export PDF"), "attention.pdf", tr("PDF documents (*.pdf)"));
        if (path.isEmpty()) return;
        if (const auto error = exportCurrentView(path)) showError(tr("Export failed"), *error);
    });
    file->addAction(tr("Export attention as &JSON…"), QKeySequence(tr("Ctrl+J")), this, [this] {
        const QString path =
            QFileDialog::getSaveFileName(this, tr("Export attention"), "attention.json", tr("JSON (*.json)"));
        if (path.isEmpty()) return;
        if (const auto error = exportAttentionJson(path)) showError(tr("Export failed"), *error);
    });
    file->addSeparator();
    file->addAction(tr("&Quit"), QKeySequence::Quit, qApp, &QApplication::quit);

    buildViewMenu();
    buildLessonMenu();

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&Keyboard shortcuts"), QKeySequence::HelpContents, this,
                    [this] { QMessageBox::information(this, tr("Keyboard shortcuts"), shortcutsHtml()); });
    help->addAction(tr("&About AttnLab"), this, [this] {
        QMessageBox::about(this, tr("About AttnLab"),
                           tr("<h3>AttnLab</h3><p>Translate with a Transformer and see every head's attention "
                              "and the positional encoding.</p>"));
    });
}

void MainWindow::buildViewMenu() {
    QMenu* view = menuBar()->addMenu(tr("&View"));
    for (auto k : {AttentionKind::EncoderSelf, AttentionKind::DecoderSelf, AttentionKind::Cross}) {
        // Ctrl+1/2/3 and Alt+1/2/3: window-wide, so they work with the focus in the sentence field.
        auto* a = view->addAction(kindName(k), this, [this, k] {
            m_tabs->setCurrentWidget(m_explorer);
            m_explorer->setKind(k);
        });
        a->setShortcuts({QKeySequence(tr("Ctrl+%1").arg(int(k) + 1)), QKeySequence(tr("Alt+%1").arg(int(k) + 1))});
    }
    view->addAction(tr("Positional encoding"), QKeySequence(tr("Ctrl+4")), this,
                    [this] { m_tabs->setCurrentWidget(m_positional); });
    view->addAction(tr("Model"), QKeySequence(tr("Ctrl+5")), this, [this] { m_tabs->setCurrentWidget(m_model); });
    view->addSeparator();
    auto step = [this](auto f) {
        return [this, f] {
            m_tabs->setCurrentWidget(m_explorer);
            f();
        };
    };
    view->addAction(tr("Previous layer"), QKeySequence(tr("Alt+Up")), this,
                    step([this] { m_explorer->stepLayer(-1); }));
    view->addAction(tr("Next layer"), QKeySequence(tr("Alt+Down")), this, step([this] { m_explorer->stepLayer(1); }));
    view->addAction(tr("Previous head"), QKeySequence(tr("Alt+Left")), this,
                    step([this] { m_explorer->stepHead(-1); }));
    view->addAction(tr("Next head"), QKeySequence(tr("Alt+Right")), this, step([this] { m_explorer->stepHead(1); }));
    view->addSeparator();
    // Bigger type for projectors: one size for the widgets and every plot (they follow the font).
    view->addAction(tr("Larger text"), QKeySequence::ZoomIn, this, [this] { setTextSize(textSize() + 2); });
    view->addAction(tr("Smaller text"), QKeySequence::ZoomOut, this, [this] { setTextSize(textSize() - 2); });
    view->addAction(tr("Default text size"), QKeySequence(tr("Ctrl+0")), this,
                    [this] { setTextSize(m_default_text_size); });
    QMenu* colours = view->addMenu(tr("Colour map"));
    auto* group = new QActionGroup(this);
    for (int i = 0; i < kPaletteCount; ++i) {
        QAction* a = colours->addAction(paletteName(Palette(i)), this, [this, i] { setColorMap(Palette(i)); });
        a->setCheckable(true);
        group->addAction(a);
        m_palette_actions << a;
    }
}

void MainWindow::restoreAppearance() {
    m_default_text_size = QApplication::font().pointSizeF();
    QSettings s;
    if (s.contains("textSize")) setTextSize(s.value("textSize").toDouble(), false);
    setColorMap(paletteFromKey(s.value("colorMap").toString()), false);
}

double MainWindow::textSize() const { return QApplication::font().pointSizeF(); }

void MainWindow::setTextSize(double points, bool remember) {
    points = std::clamp(points, kMinTextSize, kMaxTextSize);
    QFont f = QApplication::font();
    f.setPointSizeF(points);
    QApplication::setFont(f);
    if (remember) QSettings().setValue("textSize", points);
    statusBar()->showMessage(tr("Text size %1 pt").arg(points), 3000);
}

void MainWindow::setColorMap(Palette palette, bool remember) {
    m_palette = palette;
    m_explorer->setColorMap(palette);
    m_decoding->setColorMap(palette);
    m_inputs->setColorMap(palette);
    m_pairs->setColorMap(palette);
    m_heads->statistics()->setColorMap(palette);
    m_heads->alignment()->setColorMap(palette);
    m_palette_actions.value(int(palette))->setChecked(true);
    if (remember) QSettings().setValue("colorMap", paletteKey(palette));
}

QString MainWindow::shortcutsHtml() const {
    QString rows;
    auto row = [&](const QString& keys, const QString& what) {
        rows +=
            QStringLiteral("<tr><td><b>%1</b></td><td>%2</td></tr>").arg(keys.toHtmlEscaped(), what.toHtmlEscaped());
    };
    std::function<void(const QList<QAction*>&)> walk = [&](const QList<QAction*>& actions) {
        for (QAction* a : actions) {
            if (a->menu()) walk(a->menu()->actions());
            QStringList keys;
            for (const QKeySequence& k : a->shortcuts()) keys << k.toString(QKeySequence::NativeText);
            if (!keys.isEmpty()) row(keys.join(tr(" or ")), a->text().remove('&'));
        }
    };
    walk(menuBar()->actions());
    row(tr("Up / Down"), tr("Previous / next layer (focus in the attention view)"));
    row(tr("Left / Right"), tr("Previous / next head (focus in the attention view)"));
    row(tr("1 / 2 / 3"), tr("Encoder / decoder / cross-attention (focus in the attention view)"));
    row(tr("Enter"), tr("Translate the sentence (focus in the sentence field)"));
    return QStringLiteral("<table cellspacing='6'>%1</table>").arg(rows);
}

void MainWindow::openModel(const QString& dir) {
    if (!m_controller->modelInfo()) m_explorer->setEmptyMessage(tr("Loading the model…"));
    statusBar()->showMessage(tr("Loading %1…").arg(dir));
    m_controller->loadModel(dir, m_translate->device());
}

void MainWindow::rememberRecent(const QString& dir) {
    QSettings s;
    QStringList recent = s.value("recentModels").toStringList();
    recent.removeAll(dir);
    recent.prepend(dir);
    while (recent.size() > 8) recent.removeLast();
    s.setValue("recentModels", recent);
    rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu() {
    if (!m_recent) return;
    m_recent->clear();
    const QStringList recent = QSettings().value("recentModels").toStringList();
    for (const QString& dir : recent) m_recent->addAction(dir, this, [this, dir] { openModel(dir); });
    m_recent->setEnabled(!recent.isEmpty());
}

void MainWindow::showError(const QString& title, const QString& message) {
    statusBar()->showMessage(title, 8000);
    if (m_error_dialogs) QMessageBox::warning(this, title, message);
}

void MainWindow::showTab(Tab tab) {
    switch (tab) {
    case Tab::Attention: m_tabs->setCurrentWidget(m_explorer); break;
    case Tab::Decoding: m_tabs->setCurrentWidget(m_decoding); break;
    case Tab::Weight: m_tabs->setCurrentWidget(m_weight); break;
    case Tab::Inputs: m_tabs->setCurrentWidget(m_inputs); break;
    case Tab::Pairs: m_tabs->setCurrentWidget(m_pairs); break;
    case Tab::Heads: m_tabs->setCurrentWidget(m_heads); break;
    case Tab::Positional: m_tabs->setCurrentWidget(m_positional); break;
    case Tab::Model: m_tabs->setCurrentWidget(m_model); break;
    }
}

QWidget* MainWindow::tabNamed(const std::string& name) const {
    const std::vector<std::pair<std::string, QWidget*>> tabs = {
        {"attention", m_explorer}, {"decoding", m_decoding}, {"weight", m_weight},  {"inputs", m_inputs},
        {"pairs", m_pairs},        {"heads", m_heads},           {"positional", m_positional}, {"model", m_model}};
    for (const auto& [n, w] : tabs)
        if (n == name) return w;
    return nullptr;
}

std::string MainWindow::tabName(const QWidget* tab) const {
    for (const auto& name : lessonTabs())
        if (tabNamed(name) == tab) return name;
    return {};
}

std::optional<QString> MainWindow::exportCurrentView(const QString& path) {
    QCustomPlot* plot = nullptr;
    if (m_tabs->currentWidget() == m_explorer)
        plot = m_explorer->figure();
    else if (m_tabs->currentWidget() == m_positional)
        plot = m_positional->figure();
    else if (m_tabs->currentWidget() == m_model)
        plot = m_model->figure();
    else if (m_tabs->currentWidget() == m_decoding && m_decoding->stepCount() > 0)
        plot = m_decoding->candidates()->plot();
    else if (m_tabs->currentWidget() == m_weight && m_weight->explanation())
        plot = m_weight->weights()->plot();
    else if (m_tabs->currentWidget() == m_inputs && m_inputs->token())
        plot = m_inputs->normalized()->plot();
    if (!plot && m_tabs->currentWidget() == m_explorer)
        return tr("translate a sentence first: the attention view is empty");
    if (!plot) return tr("this tab has no figure to export");
    const bool pdf = path.endsWith(".pdf", Qt::CaseInsensitive);
    const bool ok = pdf ? plot->savePdf(path, 1200, 900) : plot->savePng(path, 1200, 900, 2.0);
    if (!ok) return tr("cannot write %1").arg(path);
    return std::nullopt;
}

std::optional<QString> MainWindow::exportAttentionJson(const QString& path) {
    if (!m_result || !m_controller->modelInfo()) return tr("translate a sentence first");
    try {
        writeAttentionJson(path.toStdString(), {*m_result}, *m_controller->modelInfo(), m_result_options);
        return std::nullopt;
    } catch (const attnlab::Error& e) {
        return QString::fromStdString(e.what());
    }
}

void MainWindow::dragEnterEvent(QDragEnterEvent* e) {
    if (e->mimeData()->hasUrls()) e->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* e) {
    const auto urls = e->mimeData()->urls();
    if (!urls.isEmpty() && urls.first().isLocalFile()) {
        const QString p = urls.first().toLocalFile();
        openModel(QFileInfo(p).isDir() ? p : QFileInfo(p).absolutePath());
    }
}

}  // namespace attnlab::ui
