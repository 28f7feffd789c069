#pragma once
// fake_hub.py (tests/support) in a process of its own, serving repositories from a folder on 127.0.0.1:
// the stand-in for the Hugging Face hub that tst_hub and tst_ui talk to (no test reaches the internet).
// Torch-free, so that the ui tests can use it.

#include <nlohmann/json.hpp>

#include <QProcess>
#include <QString>

#include <map>
#include <string>
#include <vector>

namespace attnlab::testing {

using Files = std::map<std::string, std::string>;  // file name in the repository -> bytes

class FakeHub {
public:
    explicit FakeHub(const QString& dir);  // its root, faults file, port file and log go under `dir`
    ~FakeHub();
    std::string root() const { return m_dir + "/root"; }
    void addRepo(const std::string& repo, const Files& files) const;
    // The faults file (fake_hub.py's docstring), read again on every request.
    void setFaults(const nlohmann::json& faults) const;
    void start();  // QVERIFY-fails the calling test when the server does not come up
    void stop();
    std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(m_port); }
    int port() const { return m_port; }
    std::vector<nlohmann::json> requests() const;  // one per request, in order
    void clearLog() const;

private:
    std::string m_dir;
    QProcess m_process;
    int m_port = 0;
};

// Writes `bytes` to `path`, making the folders it goes into.
void writeInto(const std::string& path, const std::string& bytes);

}  // namespace attnlab::testing
