#pragma once
// The one probe of the Python a test's reference scripts need (scripts/*_reference.py, ct2_converters.py):
// which modules that Python cannot import, and the rule for a test that needs them: skipped with a message on a
// developer's machine, failed under CI=true, where scripts/setup.sh installs them and the cross-check must run.

#include <QString>
#include <QStringList>
#include <QtTest/QtTest>

namespace attnlab::testing {

// Why `python` cannot run a script that imports `modules` ("python3-torch, python3-yaml cannot be imported by
// /usr/bin/python3", Debian's package names), or "" when it can. One process, waited for up to 60 s.
QString pythonProblem(const QString& python, const QStringList& modules);

}  // namespace attnlab::testing

// In initTestCase: skips the test when `python` cannot import `modules`, and fails it under CI=true. `what` names
// the cross-check in the message.
#define ATTNLAB_REQUIRE_PYTHON(python, modules, what)                                        \
    do {                                                                                     \
        const QString problem_ = attnlab::testing::pythonProblem(python, modules);           \
        if (!problem_.isEmpty()) {                                                           \
            if (qEnvironmentVariable("CI") == "true")                                        \
                QFAIL(qPrintable("CI=true but " + problem_ + ": the cross-check must run")); \
            QSKIP(qPrintable(problem_ + ": " + QString(what) + " skipped"));                 \
        }                                                                                    \
    } while (false)
