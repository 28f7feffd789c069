#pragma once
// A real single-node Slurm cluster in a folder of its own, for tests (issue 55, tst_slurm): scripts/local_slurm.sh
// (the one owner of its configuration: munged with its key and socket in the folder, slurmctld -D and slurmd -D
// on free ports of 127.0.0.1, proctrack/linuxproc, task/none, one node of 2 CPUs in partition "debug"). The
// object is the guard: its destructor cancels what is still queued, stops the daemons and removes the folder,
// also when the test failed. Debian 12's slurm-wlm and munge (scripts/install_packages.sh); starts as root.
// Torch-free.
#include <QProcessEnvironment>
#include <QString>
#include <QStringList>

namespace attnlab::testing {

class SlurmCluster {
public:
    // Why no cluster can start here (not root; munged, slurmctld, slurmd or a Slurm command not found), or an
    // empty string when one can.
    static QString unavailable();

    explicit SlurmCluster(const QString& dir);  // made if needed; removed by the destructor
    ~SlurmCluster();
    SlurmCluster(const SlurmCluster&) = delete;
    SlurmCluster& operator=(const SlurmCluster&) = delete;

    // Starts the daemons and waits until sinfo shows the node idle (up to `seconds`, sized for a busy machine).
    // Returns the problem, with the daemons' logs' last lines, or an empty string.
    QString start(int seconds = 120);
    void stop();

    // The environment that reaches this cluster (SLURM_CONF): what sbatch, squeue, scontrol and the programs
    // that call them run with.
    QProcessEnvironment environment() const;
    // A Slurm command (sinfo, scontrol, sbatch, ...) run against this cluster, waited for up to 60 s: its exit
    // status (-1 when it did not end) and its output, stderr after stdout.
    struct Run {
        int code = -1;
        QString out;
    };
    Run command(const QString& program, const QStringList& args) const;
    // Waits until job `id` (every task of an array) has ended (`scontrol show job`: no JobState PENDING, RUNNING,
    // CONFIGURING, COMPLETING, ...), up to `seconds`; returns the states, one per task, space-separated
    // ("COMPLETED", "COMPLETED FAILED COMPLETED"), or "still <states> after N s".
    QString waitForJob(const QString& id, int seconds) const;
    // The last lines of the daemons' logs, for a failure's message.
    QString logs() const;

private:
    QString m_dir;
    bool m_started = false;
};

}  // namespace attnlab::testing
