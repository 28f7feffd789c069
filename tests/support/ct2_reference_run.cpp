#include "ct2_reference_run.h"

#include "fixtures.h"

#include <QProcess>

#include <atomic>

namespace attnlab::testing {

QString makeCt2Model(const QString& python, const QString& dir, const QString& name, const QStringList& options) {
    const QString out = dir + "/" + name;
    runScript(python, "ct2_reference.py", QStringList{"make", "--out", out} + options);
    return out;
}

nlohmann::json runCt2Reference(const QString& python, const QString& dir, const QString& model,
                               const std::vector<std::string>& sentences, int max_length) {
    static std::atomic<int> n{0};
    const QString in = dir + QString("/sentences-%1.txt").arg(++n), out = in + ".json";
    std::string text;
    for (const auto& s : sentences) text += s + "\n";
    writeFile(in.toStdString(), text);
    runScript(python, "ct2_reference.py",
              {"run", "--model", model, "--sentences", in, "--out", out, "--max-length", QString::number(max_length)});
    return nlohmann::json::parse(readFile(out.toStdString()));
}

DecodingOptions referenceGreedy(int max_length) {
    DecodingOptions o;
    o.beam_size = 1;
    o.max_length = max_length;
    o.max_length_ratio = 0;
    o.top_k_candidates = 0;
    return o;
}

}  // namespace attnlab::testing
