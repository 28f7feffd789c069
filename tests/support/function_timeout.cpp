// Qt Test's limit per test function for this executable (300 s unless QTEST_FUNCTION_TIMEOUT says
// otherwise), sized to the executable's work in tests/CMakeLists.txt (ATTNLAB_TEST_TIMEOUT_S) and set
// before Qt Test first reads it, so that a test run by hand (build/bin/tst_training) has the same room
// for a busy machine as under CTest. A value in the environment wins.
#include <QByteArray>
#include <QtGlobal>

#ifndef ATTNLAB_TEST_TIMEOUT_S
#error "ATTNLAB_TEST_TIMEOUT_S: the test's time-out in seconds, set by tests/CMakeLists.txt"
#endif

namespace {
[[maybe_unused]] const bool kFunctionTimeoutSet = [] {
    if (!qEnvironmentVariableIsSet("QTEST_FUNCTION_TIMEOUT"))
        qputenv("QTEST_FUNCTION_TIMEOUT", QByteArray::number(qint64(ATTNLAB_TEST_TIMEOUT_S) * 1000));
    return true;
}();
}  // namespace
