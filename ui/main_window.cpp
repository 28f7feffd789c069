#include "main_window.h"

#include "attention_explorer.h"
#include "attention_view.h"
#include "model_panel.h"
#include "positional_view.h"
#include "translate_panel.h"

#include <attnlab/errors.h>
#include <attnlab/result_json.h>

#include <qcustomplot.h>

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

namespace attnlab::ui {

MainWindow::MainWindow(TranslationController* controller, bool error_dialogs, QWidget* parent)
    : QMainWindow(parent), m_controller(controller), m_error_dialogs(error_dialogs) {
    setWindowTitle(tr("AttnLab"));
    setAcceptDrops(true);
    m_translate = new TranslatePanel(this);
    m_explorer = new AttentionExplorer(this);
    m_positional = new PositionalEncodingView(this);
    m_model = new ModelPanel(this);
    m_tabs = new QTabWidget(this);
    m_tabs->addTab(m_explorer, tr("&Attention"));
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

    connect(m_translate, &TranslatePanel::translateRequested, this, [this](const QString& s, const DecodingOptions& o) {
        m_result_options = o;
        statusBar()->showMessage(tr("Translating…"));
        m_controller->translate(s, o);
    });
    connect(m_controller, &TranslationController::translationProgress, m_translate, &TranslatePanel::showProgress);
    connect(m_controller, &TranslationController::translationFinished, this, [this](ResultPtr r) {
        m_result = r;
        m_last_error.clear();
        m_translate->showResult(r);
        m_explorer->setResult(r);
        statusBar()->showMessage(tr("Translated in %1 ms").arg(r->seconds * 1000, 0, 'f', 0), 5000);
    });
    connect(m_controller, &TranslationController::translationFailed, this, [this](const QString& m) {
        m_last_error = m;
        // The maps of the previous sentence would now sit under a sentence they do not belong to.
        m_result.reset();
        m_explorer->setResult(nullptr);
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
        statusBar()->showMessage(tr("Model loaded"), 5000);
    });
    connect(m_controller, &TranslationController::modelFailed, this, [this](const QString& m) {
        m_last_error = m;
        showError(tr("Cannot open the model"),
                  m + (m_controller->modelInfo() ? tr("\n\nThe previous model stays loaded.") : QString()));
    });
    connect(m_controller, &TranslationController::busyChanged, m_translate, &TranslatePanel::setBusy);
    connect(m_translate, &TranslatePanel::deviceChanged, this, [this] {
        if (auto info = m_controller->modelInfo()) openModel(QString::fromStdString(info->package_dir));
    });
}

void MainWindow::buildMenus() {
    QMenu* file = menuBar()->addMenu(tr("&File"));
    file->addAction(tr("&Open model…"), QKeySequence::Open, this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Open a model package"));
        if (!dir.isEmpty()) openModel(dir);
    });
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

    QMenu* view = menuBar()->addMenu(tr("&View"));
    for (auto k : {AttentionKind::EncoderSelf, AttentionKind::DecoderSelf, AttentionKind::Cross}) {
        view->addAction(kindName(k), QKeySequence(tr("Ctrl+%1").arg(int(k) + 1)), this, [this, k] {
            m_tabs->setCurrentWidget(m_explorer);
            m_explorer->select(k, m_explorer->layer(), m_explorer->head());
        });
    }
    view->addAction(tr("Positional encoding"), QKeySequence(tr("Ctrl+4")), this,
                    [this] { m_tabs->setCurrentWidget(m_positional); });
    view->addAction(tr("Model"), QKeySequence(tr("Ctrl+5")), this, [this] { m_tabs->setCurrentWidget(m_model); });
    view->addSeparator();
    // Bigger type for projectors: the whole window follows the application font.
    auto zoom = [](double factor) {
        QFont f = QApplication::font();
        f.setPointSizeF(std::clamp(f.pointSizeF() * factor, 6.0, 48.0));
        QApplication::setFont(f);
    };
    view->addAction(tr("Larger text"), QKeySequence::ZoomIn, this, [zoom] { zoom(1.2); });
    view->addAction(tr("Smaller text"), QKeySequence::ZoomOut, this, [zoom] { zoom(1 / 1.2); });

    QMenu* help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&About AttnLab"), this, [this] {
        QMessageBox::about(this, tr("About AttnLab"),
                           tr("<h3>AttnLab</h3><p>Translate with a Transformer and see every head's attention "
                              "and the positional encoding.</p>"));
    });
}

void MainWindow::openModel(const QString& dir) {
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
    case Tab::Positional: m_tabs->setCurrentWidget(m_positional); break;
    case Tab::Model: m_tabs->setCurrentWidget(m_model); break;
    }
}

std::optional<QString> MainWindow::exportCurrentView(const QString& path) {
    QCustomPlot* plot = nullptr;
    if (m_tabs->currentWidget() == m_explorer)
        plot = m_explorer->figure();
    else if (m_tabs->currentWidget() == m_positional)
        plot = m_positional->figure();
    else if (m_tabs->currentWidget() == m_model)
        plot = m_model->figure();
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
