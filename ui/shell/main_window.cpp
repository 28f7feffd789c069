#include "shell/main_window.h"

#include "document/file_save.h"

#include "dialogs/download_question.h"
#include "dialogs/get_model_dialog.h"
#include "dialogs/text_translation.h"
#include "dialogs/toy_trainer_dialog.h"
#include "document/recent_models.h"
#include "lessons/lesson_controller.h"
#include "shell/status_bar.h"
#include "shell/translate_panel.h"
#include "shell/view_registry.h"
#include "widgets/download_panel.h"

#include <attnlab/errors.h>
#include <attnlab/hub.h>

#include <QActionGroup>
#include <QApplication>
#include <QDragEnterEvent>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QSettings>
#include <QStandardPaths>
#include <QStatusBar>
#include <QVBoxLayout>

#include <functional>

namespace attnlab::ui {

MainWindow::MainWindow(TranslationController* controller, bool error_dialogs, QWidget* parent)
    : QMainWindow(parent), m_context(new ViewContext(controller, this)), m_error_dialogs(error_dialogs) {
    setWindowTitle(tr("AttnLab"));
    setAcceptDrops(true);
    m_download = new DownloadPanel(m_context, this);
    m_translate = new TranslatePanel(m_context, this);
    m_views = new ViewTabs(m_context, this);
    auto* central = new QWidget(this);
    auto* layout = new QVBoxLayout(central);
    layout->addWidget(m_download);
    layout->addWidget(m_translate);
    layout->addWidget(m_views, 1);
    setCentralWidget(central);
    setStatusBar(new StatusBar(this));  // messages in a room of their own, beside the model label
    m_status_model = new QLabel(tr("no model"), this);
    statusBar()->addPermanentWidget(m_status_model);
    follow();  // first: the status bar and title update before what a loaded model sets off
    m_lessons = new LessonController(m_context, m_views, this);
    // A lesson's or a session's model that the cache lacks: asked in the window before it is got.
    m_lessons->setAskToGet([this](const QString& name, const QString& origin, std::function<void(bool)> answer) {
        DownloadQuestion::ask(m_context, name, origin, this, std::move(answer));
    });
    buildFileMenu();
    buildViewMenu();
    m_lessons->fillMenu(menuBar()->addMenu(tr("&Lesson")));
    buildHelpMenu();
    restoreAppearance();
}

void MainWindow::follow() {
    connect(m_context, &ViewContext::failed, this, &MainWindow::report);
    connect(m_context, &ViewContext::status, statusBar(), &QStatusBar::showMessage);
    connect(m_context, &ViewContext::translationRequested, this, [this](const QString&, bool forced) {
        statusBar()->showMessage(forced ? tr("Translating with a forced beginning…") : tr("Translating…"));
    });
    connect(m_context, &ViewContext::resultChanged, this, [this](ResultPtr r) {
        if (r) statusBar()->showMessage(tr("Translated in %1 ms").arg(r->seconds * 1000, 0, 'f', 0), 5000);
    });
    connect(m_context, &ViewContext::modelLoading, this,
            [this](const QString& dir) { statusBar()->showMessage(tr("Loading %1…").arg(dir)); });
    connect(m_context, &ViewContext::modelChanged, this, [this](ModelInfoPtr info) {
        const QString dir = QString::fromStdString(info->package_dir);
        // Which compute type finds the translations shown (an int8 one's maps are rounded).
        const QString compute = info->compute_type == "float32"
                                    ? QString()
                                    : QStringLiteral(" · ") + QString::fromStdString(info->compute_type);
        const QString name = RecentModels::displayName(dir);
        m_status_model->setText(tr("%1 · %2%3 · loaded in %4 s")
                                    .arg(name, QString::fromStdString(info->device), compute)
                                    .arg(info->load_seconds, 0, 'f', 2));
        setWindowTitle(tr("AttnLab — %1").arg(name));
        RecentModels::remember(dir);
        rebuildRecentMenu();
        for (QAction* a : m_models_menu->actions())
            a->setChecked(a->data().toString() == QFileInfo(dir).canonicalFilePath());
        statusBar()->showMessage(tr("Model loaded"), 5000);
    });
    connect(m_context, &ViewContext::paletteChanged, this,
            [this](Palette p) { m_palette_actions.value(int(p))->setChecked(true); });
    connect(m_context, &ViewContext::textSizeChanged, this,
            [this](double pt) { statusBar()->showMessage(tr("Text size %1 pt").arg(pt), 3000); });
}

// The one place failures are reported: the status bar always (views show their own where the user
// asked), a message box for what was asked in a menu or a dialog.
void MainWindow::report(Operation op, const QString& message) {
    statusBar()->showMessage(tr("%1: %2").arg(operationTitle(op), message), 8000);
    if (!m_error_dialogs || !operationNeedsDialog(op)) return;
    const bool kept = op == Operation::LoadModel && m_context->model();
    QMessageBox::warning(this, operationTitle(op),
                         message + (kept ? tr("\n\nThe previous model stays loaded.") : QString()));
}

void MainWindow::buildFileMenu() {
    QMenu* file = menuBar()->addMenu(tr("&File"));
    file->addAction(tr("&Open model…"), QKeySequence::Open, this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(
            this, tr("Open a model package, a Hugging Face (OPUS-MT, NLLB, M2M100, mBART) or a CTranslate2 folder"));
        if (!dir.isEmpty()) m_context->loadModel(dir);
    });
    file->addAction(tr("Open &Argos Translate package…"), this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Open an Argos Translate package"), QString(),
                                                          tr("Argos Translate packages (*.argosmodel *.zip)"));
        if (!path.isEmpty()) m_context->loadModel(path);
    });
    file->addAction(tr("&Get a model…"), QKeySequence(tr("Ctrl+Shift+O")), this, &MainWindow::showGetModelDialog);
    m_models_menu = file->addMenu(tr("&Models"));
    fillModelsMenu();
    file->addAction(tr("Translate a &text…"), this, [this] { TextTranslationDialog::showFor(m_context, this); });
    file->addAction(tr("&Train a small model…"), this, [this] {
        if (!m_toy) {
            const QString work = QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + "/toy";
            m_toy = new ToyTrainerDialog(m_context, work, this);
        }
        m_toy->show();
        m_toy->raise();
    });
    m_recent = file->addMenu(tr("&Recent models"));
    rebuildRecentMenu();
    file->addSeparator();
    file->addAction(tr("Export view as &PNG…"), QKeySequence(tr("Ctrl+E")), this, [this] {
        exportTo(tr("Export PNG"), "attention.png", tr("PNG images (*.png)"), &MainWindow::exportCurrentView);
    });
    file->addAction(tr("Export view as P&DF…"), QKeySequence(tr("Ctrl+Shift+E")), this, [this] {
        exportTo(tr("Export PDF"), "attention.pdf", tr("PDF documents (*.pdf)"), &MainWindow::exportCurrentView);
    });
    file->addAction(tr("Export attention as &JSON…"), QKeySequence(tr("Ctrl+J")), this, [this] {
        exportTo(tr("Export attention"), "attention.json", tr("JSON (*.json)"), &MainWindow::exportAttentionJson);
    });
    file->addAction(tr("Export &animation (GIF)…"), this, [this] {
        const QString path =
            askExportPath(this, tr("Export animation"), "training.gif", tr("Animated GIF (*.gif);;PNG series (*.png)"));
        if (path.isEmpty()) return;
        if (const auto problem = exportCurrentAnimation(path)) m_context->reportFailure(Operation::Export, *problem);
    });
    file->addSeparator();
    file->addAction(tr("&Quit"), QKeySequence::Quit, qApp, &QApplication::quit);
}

void MainWindow::exportTo(const QString& title, const QString& name, const QString& filter,
                          std::optional<QString> (MainWindow::*write)(const QString&) const) {
    const QString path = askExportPath(this, title, name, filter);
    if (path.isEmpty()) return;
    if (const auto problem = (this->*write)(path)) m_context->reportFailure(Operation::Export, *problem);
}

void MainWindow::buildViewMenu() {
    QMenu* view = menuBar()->addMenu(tr("&View"));
    view->addActions(m_views->menuActions());
    view->addSeparator();
    // Bigger type for projectors: one size for the widgets and every plot (they follow the font).
    view->addAction(tr("Larger text"), QKeySequence::ZoomIn, this,
                    [this] { m_context->setTextSize(m_context->textSize() + 2); });
    view->addAction(tr("Smaller text"), QKeySequence::ZoomOut, this,
                    [this] { m_context->setTextSize(m_context->textSize() - 2); });
    view->addAction(tr("Default text size"), QKeySequence(tr("Ctrl+0")), this,
                    [this] { m_context->setTextSize(m_default_text_size); });
    QMenu* colours = view->addMenu(tr("Colour map"));
    auto* group = new QActionGroup(this);
    for (int i = 0; i < kPaletteCount; ++i) {
        QAction* a =
            colours->addAction(paletteName(Palette(i)), this, [this, i] { m_context->setPalette(Palette(i)); });
        a->setCheckable(true);
        group->addAction(a);
        m_palette_actions << a;
    }
}

void MainWindow::buildHelpMenu() {
    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&Keyboard shortcuts"), QKeySequence::HelpContents, this,
                    [this] { QMessageBox::information(this, tr("Keyboard shortcuts"), shortcutsHtml()); });
    help->addAction(tr("&About AttnLab"), this, [this] {
        QMessageBox::about(this, tr("About AttnLab"),
                           tr("<h3>AttnLab</h3><p>Translate with a Transformer and see every head's attention "
                              "and the positional encoding.</p>"));
    });
}

void MainWindow::restoreAppearance() {
    m_default_text_size = m_context->textSize();
    QSettings s;
    if (s.contains("textSize")) m_context->setTextSize(s.value("textSize").toDouble(), false);
    m_context->setPalette(paletteFromKey(s.value("colorMap").toString()), false);
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
    for (const auto& [keys, what] : TranslatePanel::keyList()) row(keys, what);
    return QStringLiteral("<table cellspacing='6'>%1</table>").arg(rows);
}

void MainWindow::rebuildRecentMenu() {
    m_recent->clear();
    const QStringList recent = RecentModels::entries();
    for (int i = 0; i < recent.size(); ++i) {
        const QString entry = recent[i];
        QAction* a = m_recent->addAction(QStringLiteral("&%1  %2").arg(i + 1).arg(RecentModels::label(entry)), this,
                                         [this, entry] { m_context->openModel(entry); });
        a->setData(entry);
        a->setShortcut(QKeySequence(tr("Ctrl+Shift+%1").arg(i + 1)));
    }
    m_recent->setEnabled(!recent.isEmpty());
}

// The bundled models and the installed Argos packages, the current one checked (again after an install or a
// removal, as the sentence row's direction switch).
void MainWindow::fillModelsMenu() {
    m_models_menu->clear();
    const ModelInfoPtr info = m_context->model();
    const QString current = info ? QFileInfo(QString::fromStdString(info->package_dir)).canonicalFilePath() : QString();
    for (const auto& [label, dir] : bundledModelChoices()) {
        QAction* a = m_models_menu->addAction(label, this, [this, dir = dir] { m_context->loadModel(dir); });
        a->setData(dir);
        a->setCheckable(true);
        a->setChecked(dir == current);
    }
    m_models_menu->setEnabled(!m_models_menu->isEmpty());
    m_translate->refreshModels();
}

void MainWindow::showGetModelDialog() {
    const std::string path = bundledHubCatalogPath();
    try {
        if (path.empty())
            throw PackageError(std::string("the catalog of models (") + kHubCatalogFile + ") is not installed");
        QFile file(QString::fromStdString(path));
        if (!file.open(QIODevice::ReadOnly)) throw PackageError(path + ": " + file.errorString().toStdString());
        if (file.size() > (qint64(4) << 20)) throw PackageError(path + ": larger than 4 MB, not a catalog");
        GetModelDialog dialog(m_context, parseHubCatalog(file.readAll().toStdString(), path), this);
        connect(&dialog, &GetModelDialog::argosPackagesChanged, this, &MainWindow::fillModelsMenu);
        dialog.exec();
    } catch (const Error& e) {
        report(Operation::GetModel, QString::fromUtf8(e.what()));
    }
}

std::optional<QString> MainWindow::exportCurrentView(const QString& path) const { return m_views->exportCurrent(path); }

std::optional<QString> MainWindow::exportCurrentAnimation(const QString& path) {
    return m_views->exportCurrentAnimation(path);
}

std::optional<QString> MainWindow::exportAttentionJson(const QString& path) const {
    return m_context->exportAttentionJson(path);
}

void MainWindow::dragEnterEvent(QDragEnterEvent* e) {
    if (e->mimeData()->hasUrls()) e->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* e) {
    const auto urls = e->mimeData()->urls();
    if (urls.isEmpty() || !urls.first().isLocalFile()) return;
    const QString p = urls.first().toLocalFile();
    // A folder, an Argos Translate package (a file), or a file inside a model's folder.
    const bool argos = p.endsWith(QStringLiteral(".argosmodel"), Qt::CaseInsensitive) ||
                       p.endsWith(QStringLiteral(".zip"), Qt::CaseInsensitive);
    m_context->loadModel(QFileInfo(p).isDir() || argos ? p : QFileInfo(p).absolutePath());
}

}  // namespace attnlab::ui
