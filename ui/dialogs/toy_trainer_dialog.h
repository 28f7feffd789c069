#pragma once
// ToyTrainerDialog (File > Train a small model…, issue 28): trains a small Transformer on a toy task
// (attnlab/toy.h) on a thread of its own while the window stays usable: the loss curve and the
// newest recorded cross-attention of a probe input update as it learns; Pause stops it at a
// checkpoint and Continue resumes it exactly; when it is done its accuracy is shown, Open loads the
// model (the Training tab then replays how its attention formed) and Save keeps a copy of the
// package where the user says (the next run of the same task replaces the working one).

#include "document/view_context.h"

#include <attnlab/toy.h>

#include <QDialog>
#include <QThread>

#include <atomic>
#include <memory>

class QComboBox;
class QCustomPlot;
class QLabel;
class QPushButton;
class QSpinBox;

namespace attnlab::ui {

class AttentionView;

class ToyTrainerDialog : public QDialog {
    Q_OBJECT
public:
    // Runs go under `work_dir` (one folder per task).
    ToyTrainerDialog(ViewContext* context, const QString& work_dir, QWidget* parent = nullptr);
    ~ToyTrainerDialog() override;

    void setTask(ToyTask task);
    void setSteps(int steps);
    void start();  // or continue after a pause
    void pause();
    bool running() const { return m_running; }
    QString packageDir() const;  // the finished model's; empty before
    // Copies the finished model's package to `dir` (attnlab::copyPackage: a new or empty folder, or
    // a package replaced whole); the status line says where, or why not. False when it failed.
    bool saveModelTo(const QString& dir);
    double accuracy() const { return m_accuracy; }

    QCustomPlot* curve() const { return m_curve; }
    AttentionView* map() const { return m_map; }
    QString statusText() const;

Q_SIGNALS:
    void finished(const QString& package_dir, double accuracy);

private Q_SLOTS:
    void showProgress(int64_t step, double loss, const QString& message);
    void showDone(const QString& package_dir, double accuracy, bool stopped, const QString& error);

private:
    void showNewestMap();
    ViewContext* m_context;
    QString m_work_dir;
    QThread m_thread;
    QObject* m_worker = nullptr;
    std::atomic<bool> m_stop{false};
    bool m_running = false, m_paused = false;
    QString m_package;
    double m_accuracy = -1;
    QComboBox* m_task;
    QSpinBox* m_steps;
    QPushButton* m_start;
    QPushButton* m_open;
    QPushButton* m_save;
    QLabel* m_status;
    QCustomPlot* m_curve;
    AttentionView* m_map;
};

}  // namespace attnlab::ui
