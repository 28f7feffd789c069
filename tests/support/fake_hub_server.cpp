#include "fake_hub_server.h"

#include <QtTest/QtTest>

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;

namespace attnlab::testing {

namespace {
std::string readAll(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
}  // namespace

void writeInto(const std::string& path, const std::string& bytes) {
    fs::create_directories(fs::path(path).parent_path());
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

FakeHub::FakeHub(const QString& dir) : m_dir(dir.toStdString()) {
    fs::create_directories(root());
    setFaults(nlohmann::json::object());
}

FakeHub::~FakeHub() { stop(); }

void FakeHub::addRepo(const std::string& repo, const Files& files) const {
    for (const auto& [name, bytes] : files) writeInto(root() + "/" + repo + "/" + name, bytes);
}

void FakeHub::setFaults(const nlohmann::json& faults) const { writeInto(m_dir + "/faults.json", faults.dump()); }

void FakeHub::start() {
    const QString python = qEnvironmentVariable("ATTNLAB_PYTHON", "/usr/bin/python3");
    const QString port_file = QString::fromStdString(m_dir + "/port");
    m_process.setProcessChannelMode(QProcess::ForwardedErrorChannel);
    m_process.start(python, {ATTNLAB_SOURCE_DIR "/tests/support/fake_hub.py", "--root", QString::fromStdString(root()),
                             "--port-file", port_file, "--faults", QString::fromStdString(m_dir + "/faults.json"),
                             "--log", QString::fromStdString(m_dir + "/log.jsonl")});
    QVERIFY2(m_process.waitForStarted(10000), "fake_hub.py did not start");
    QElapsedTimer waited;
    waited.start();
    while (!QFile::exists(port_file) && waited.elapsed() < 15000) QThread::msleep(10);
    QVERIFY2(QFile::exists(port_file), "fake_hub.py wrote no port");
    m_port = std::stoi(readAll(port_file.toStdString()));
}

void FakeHub::stop() {
    if (m_process.state() == QProcess::NotRunning) return;
    m_process.closeWriteChannel();  // the server exits at the end of its standard input
    if (!m_process.waitForFinished(5000)) m_process.kill(), m_process.waitForFinished(5000);
}

std::vector<nlohmann::json> FakeHub::requests() const {
    std::vector<nlohmann::json> lines;
    std::ifstream in(m_dir + "/log.jsonl");
    for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
    return lines;
}

void FakeHub::clearLog() const { fs::remove(m_dir + "/log.jsonl"); }

}  // namespace attnlab::testing
