#include "dialogs/toy_trainer_dialog.h"

#include "plots/attention_view.h"

#include <attnlab/attention_history.h>
#include <attnlab/errors.h>
#include <attnlab/package.h>

#include <qcustomplot.h>

#include <QComboBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QMetaObject>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

namespace attnlab::ui {

ToyTrainerDialog::ToyTrainerDialog(ViewContext* context, const QString& work_dir, QWidget* parent)
    : QDialog(parent), m_context(context), m_work_dir(work_dir) {
    setWindowTitle(tr("Train a small model"));
    m_task = new QComboBox(this);
    for (const auto t : toyTasks()) m_task->addItem(QString::fromStdString(toyTaskName(t)), int(t));
    m_task->setCurrentIndex(m_task->findData(int(ToyTask::Reverse)));
    m_steps = new QSpinBox(this);
    m_steps->setRange(50, 100000);
    m_steps->setSingleStep(250);
    m_steps->setValue(1500);
    m_start = new QPushButton(tr("Start"), this);
    m_open = new QPushButton(tr("Open the model"), this);
    m_open->setEnabled(false);
    m_save = new QPushButton(tr("Save the model as…"), this);
    m_save->setEnabled(false);
    m_status = new QLabel(tr("Sequences of 3 to 10 tokens 0-9; reverse: 3 1 4 -> 4 1 3. About 80 s for 1,500 steps on "
                             "two cores."),
                          this);
    m_status->setWordWrap(true);
    m_curve = new QCustomPlot(this);
    m_curve->addGraph();
    m_curve->graph(0)->setPen(QPen(QColor(31, 119, 180), 2));
    m_curve->xAxis->setLabel(tr("step"));
    m_curve->yAxis->setLabel(tr("training loss per token"));
    followTextSize(m_curve);
    m_map = new AttentionView(this);
    m_map->clear(tr("The cross-attention of the last layer (mean over heads) appears here as it is learned"));

    auto* form = new QFormLayout;
    form->addRow(tr("Task"), m_task);
    form->addRow(tr("Steps"), m_steps);
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(m_start);
    buttons->addWidget(m_open);
    buttons->addWidget(m_save);
    buttons->addStretch();
    auto* plots = new QHBoxLayout;
    plots->addWidget(m_curve, 1);
    plots->addWidget(m_map, 1);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addLayout(buttons);
    layout->addWidget(m_status);
    layout->addLayout(plots, 1);
    resize(1000, 600);

    connect(m_start, &QPushButton::clicked, this, [this] { m_running ? pause() : start(); });
    connect(m_open, &QPushButton::clicked, this, [this] {
        m_context->loadModel(m_package);
        m_context->showView("training");
    });
    connect(m_save, &QPushButton::clicked, this, [this] {
        const QString dir = QFileDialog::getSaveFileName(this, tr("Save the model as (a new folder)"),
                                                         QDir::home().filePath("toy-" + m_task->currentText()),
                                                         QString(), nullptr, QFileDialog::ShowDirsOnly);
        if (!dir.isEmpty()) saveModelTo(dir);
    });
    m_worker = new QObject;
    m_worker->moveToThread(&m_thread);
    connect(&m_thread, &QThread::finished, m_worker, &QObject::deleteLater);
    m_thread.setObjectName("attnlab-toy-training");
    m_thread.start();
}

ToyTrainerDialog::~ToyTrainerDialog() {
    m_stop.store(true);  // the trainer writes its checkpoint and returns
    m_thread.quit();
    m_thread.wait();
}

void ToyTrainerDialog::setTask(ToyTask task) { m_task->setCurrentIndex(m_task->findData(int(task))); }
void ToyTrainerDialog::setSteps(int steps) { m_steps->setValue(steps); }
QString ToyTrainerDialog::packageDir() const { return m_package; }
QString ToyTrainerDialog::statusText() const { return m_status->text(); }

bool ToyTrainerDialog::saveModelTo(const QString& dir) {
    if (m_package.isEmpty()) return false;
    try {
        copyPackage(m_package.toStdString(), dir.toStdString());
    } catch (const std::exception& e) {
        m_status->setText(tr("Not saved: %1").arg(QString::fromStdString(e.what())));
        return false;
    }
    m_status->setText(tr("Saved: %1 opens like any model (File › Open model…).").arg(dir));
    return true;
}

void ToyTrainerDialog::start() {
    if (m_running) return;
    ToyOptions o;
    o.task = static_cast<ToyTask>(m_task->currentData().toInt());
    o.steps = m_steps->value();
    o.output_dir = QDir(m_work_dir).filePath("toy-" + m_task->currentText()).toStdString();
    o.package_dir = o.output_dir + "-model";
    o.resume = m_paused;
    if (!m_paused) m_curve->graph(0)->data()->clear();
    m_running = true;
    m_paused = false;
    m_stop.store(false);
    m_task->setEnabled(false);
    m_steps->setEnabled(false);
    m_open->setEnabled(false);
    m_save->setEnabled(false);
    m_start->setText(tr("Pause"));
    m_status->setText(tr("Training…"));
    QMetaObject::invokeMethod(m_worker, [this, o] {
        QString package, error;
        double accuracy = -1;
        bool stopped = false;
        try {
            const ToyResult r = trainToy(
                o,
                [this](const TrainingProgress& p) {
                    QMetaObject::invokeMethod(
                        this,
                        [this, step = p.step, loss = p.loss, m = QString::fromStdString(p.message)] {
                            showProgress(step, loss, m);
                        },
                        Qt::QueuedConnection);
                },
                &m_stop);
            stopped = r.training.stopped_early;
            package = QString::fromStdString(r.training.package_dir);
            accuracy = r.accuracy;
        } catch (const std::exception& e) {
            error = QString::fromStdString(e.what());
        }
        QMetaObject::invokeMethod(
            this, [this, package, accuracy, stopped, error] { showDone(package, accuracy, stopped, error); },
            Qt::QueuedConnection);
    });
}

void ToyTrainerDialog::pause() {
    if (!m_running) return;
    m_stop.store(true);
    m_status->setText(tr("Pausing at a checkpoint…"));
}

void ToyTrainerDialog::showProgress(int64_t step, double loss, const QString& message) {
    if (!message.isEmpty()) {
        if (message.startsWith("epoch") || message.startsWith("recording")) m_status->setText(message);
        return showNewestMap();
    }
    m_curve->graph(0)->addData(double(step), loss);
    m_curve->rescaleAxes();
    m_curve->replot();
    m_status->setText(tr("step %1 of %2 · loss %3").arg(step).arg(m_steps->value()).arg(loss, 0, 'f', 3));
    showNewestMap();
}

// The run's history file holds the newest point (a few kilobytes for this model).
void ToyTrainerDialog::showNewestMap() {
    const QString file =
        QDir(m_work_dir)
            .filePath("toy-" + m_task->currentText() + "/" + QString::fromUtf8(package_files::kAttentionHistory));
    if (!QFileInfo::exists(file)) return;
    try {
        const AttentionHistory h = readAttentionHistory(file.toStdString());
        if (h.points.empty() || h.probes.empty()) return;
        const auto& layer = h.points.back().maps[0].cross.back();
        Matrix mean = layer[0];
        for (size_t r = 0; r < mean.size(); ++r)
            for (size_t c = 0; c < mean[r].size(); ++c) {
                float sum = 0;
                for (const auto& head : layer) sum += head[r][c];
                mean[r][c] = sum / float(layer.size());
            }
        m_map->setMap(mean, toQStringList(h.probes[0].target_pieces), toQStringList(h.probes[0].source_pieces),
                      tr("%1 → %2 — step %3")
                          .arg(QString::fromStdString(h.probes[0].source), QString::fromStdString(h.probes[0].target))
                          .arg(h.points.back().step));
    } catch (const Error&) {
        // a file being replaced between two reads: the next point shows
    }
}

void ToyTrainerDialog::showDone(const QString& package_dir, double accuracy, bool stopped, const QString& error) {
    m_running = false;
    m_start->setText(stopped ? tr("Continue") : tr("Start"));
    m_paused = stopped && error.isEmpty();
    m_task->setEnabled(!m_paused);
    m_steps->setEnabled(!m_paused);
    showNewestMap();
    if (!error.isEmpty()) {
        m_status->setText(tr("Training failed: %1").arg(error));
        m_context->reportFailure(Operation::TrainToy, error);
        return;
    }
    if (stopped) {
        m_status->setText(tr("Paused: Continue resumes from the checkpoint."));
        return;
    }
    m_package = package_dir;
    m_accuracy = accuracy;
    m_open->setEnabled(true);
    m_save->setEnabled(true);
    m_status->setText(tr("Done: %1 % of 200 fresh sequences exactly right. The model is in %2.")
                          .arg(100 * accuracy, 0, 'f', 1)
                          .arg(package_dir));
    Q_EMIT finished(package_dir, accuracy);
}

}  // namespace attnlab::ui
