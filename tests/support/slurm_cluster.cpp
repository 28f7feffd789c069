#include "slurm_cluster.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QProcess>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QThread>

#include <unistd.h>

#include <algorithm>

namespace attnlab::testing {

namespace {
const QString kScript = ATTNLAB_SOURCE_DIR "/scripts/local_slurm.sh";

QString findProgram(const QString& name) {
    QStringList dirs = qEnvironmentVariable("PATH").split(':', Qt::SkipEmptyParts);
    dirs << "/usr/sbin"
         << "/sbin";
    return QStandardPaths::findExecutable(name, dirs);
}

QString tail(const QString& file, int lines) {
    QFile f(file);
    if (!f.open(QIODevice::ReadOnly)) return {};
    const QStringList all = QString::fromUtf8(f.readAll()).split('\n');
    return "--- " + file + "\n" + all.mid(std::max<qsizetype>(0, all.size() - lines - 1)).join('\n') + "\n";
}

// `program args` with `env`, waited for up to `seconds`: its exit status (-1 when it did not end normally) and
// its stdout then stderr.
SlurmCluster::Run runWaiting(const QString& program, const QStringList& args, const QProcessEnvironment& env,
                             int seconds) {
    QProcess p;
    p.setProcessEnvironment(env);
    p.start(program, args);
    SlurmCluster::Run r;
    if (!p.waitForFinished(seconds * 1000)) {
        p.kill();
        p.waitForFinished(5000);
        r.out = QString("%1 did not end in %2 s\n").arg(program).arg(seconds);
    }
    r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.out += QString::fromUtf8(p.readAllStandardOutput() + p.readAllStandardError());
    return r;
}
}  // namespace

QString SlurmCluster::unavailable() {
    if (geteuid() != 0)
        return QString(
                   "a Slurm cluster of its own starts as root only (slurmd runs jobs as their users); this is "
                   "uid %1")
            .arg(geteuid());
    QStringList missing;
    for (const char* p : {"munged", "slurmctld", "slurmd", "sbatch", "sinfo", "squeue", "scontrol", "scancel"})
        if (findProgram(p).isEmpty()) missing << p;
    if (!missing.isEmpty())
        return missing.join(", ") + " not found (Debian 12's slurm-wlm and munge: scripts/install_packages.sh)";
    return {};
}

SlurmCluster::SlurmCluster(const QString& dir) : m_dir(QDir(dir).absolutePath()) { QDir().mkpath(m_dir); }

SlurmCluster::~SlurmCluster() {
    stop();
    QDir(m_dir).removeRecursively();
}

QProcessEnvironment SlurmCluster::environment() const {
    auto env = QProcessEnvironment::systemEnvironment();
    env.insert("SLURM_CONF", m_dir + "/slurm.conf");
    return env;
}

QString SlurmCluster::start(int seconds) {
    if (auto why = unavailable(); !why.isEmpty()) return why;
    auto env = QProcessEnvironment::systemEnvironment();
    env.insert("WAIT", QString::number(seconds));
    m_started = true;  // stop() from here on: the script may have started some daemons before it failed
    const Run r = runWaiting("/bin/bash", {kScript, "start", m_dir, "2"}, env, seconds + 60);
    return r.code == 0 ? QString() : QString("local_slurm.sh start failed (%1):\n%2").arg(r.code).arg(r.out);
}

void SlurmCluster::stop() {
    if (!m_started) return;
    m_started = false;
    runWaiting("/bin/bash", {kScript, "stop", m_dir}, QProcessEnvironment::systemEnvironment(), 120);
}

SlurmCluster::Run SlurmCluster::command(const QString& program, const QStringList& args) const {
    const QString path = findProgram(program);
    if (path.isEmpty()) return {-1, program + " not found"};
    return runWaiting(path, args, environment(), 60);
}

QString SlurmCluster::waitForJob(const QString& id, int seconds) const {
    static const QRegularExpression state_field("JobState=(\\S+)");
    static const QStringList waiting{"PENDING",  "RUNNING",  "CONFIGURING", "COMPLETING", "SUSPENDED",
                                     "REQUEUED", "RESIZING", "SIGNALING",   "STAGE_OUT"};
    QElapsedTimer waited;
    waited.start();
    QStringList states;
    while (true) {
        states.clear();
        auto m = state_field.globalMatch(command("scontrol", {"-o", "show", "job", id}).out);
        while (m.hasNext()) states << m.next().captured(1);
        const bool ended = !states.isEmpty() && std::none_of(states.begin(), states.end(),
                                                             [](const QString& s) { return waiting.contains(s); });
        if (ended) return states.join(' ');
        if (waited.elapsed() > seconds * 1000) break;
        QThread::msleep(500);
    }
    return QString("still %1 after %2 s").arg(states.join(' ')).arg(seconds);
}

QString SlurmCluster::logs() const {
    QString all;
    for (const char* f :
         {"munge/munged.log", "slurmctld.log", "slurmd.log", "munged.out", "slurmctld.out", "slurmd.out"})
        all += tail(m_dir + "/" + f, 15);
    return all;
}

}  // namespace attnlab::testing
