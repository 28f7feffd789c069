#include "python_probe.h"

#include <QProcess>

namespace attnlab::testing {

QString pythonProblem(const QString& python, const QStringList& modules) {
    // Each module imported, not only found: a python3-torch that is installed but broken is missing too.
    static const char* kProbe =
        "import importlib, sys\n"
        "bad = []\n"
        "for m in sys.argv[1:]:\n"
        "    try:\n"
        "        importlib.import_module(m)\n"
        "    except Exception:\n"
        "        bad.append(m)\n"
        "print(' '.join(bad))\n"
        "sys.exit(1 if bad else 0)\n";
    QProcess probe;
    probe.start(python, QStringList{"-c", kProbe} + modules);
    if (!probe.waitForFinished(60000) || probe.exitStatus() != QProcess::NormalExit)
        return python + " did not run (or took over 60 s) to import " + modules.join(", ");
    if (probe.exitCode() == 0) return {};
    QStringList missing;
    for (const QString& m : QString::fromUtf8(probe.readAllStandardOutput()).split(' ', Qt::SkipEmptyParts))
        missing << "python3-" + m.trimmed();
    if (missing.isEmpty()) missing << modules.join(", ");
    return missing.join(", ") + " cannot be imported by " + python;
}

}  // namespace attnlab::testing
