// The safetensors reader: round trip, and each malformed file with its own message.
#include "fixtures.h"
#include "formats/safetensors/safetensors.h"

#include <attnlab/errors.h>

#include <QtTest/QtTest>

#include <cstring>

namespace st = attnlab::safetensors;

namespace {
std::string fileWithHeader(const std::string& header, size_t data_bytes) {
    std::string out(8, '\0');
    uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xff);
    return out + header + std::string(data_bytes, '\x01');
}
}  // namespace

class TestSafetensors : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void roundTrip();
    void malformed_data();
    void malformed();
    void hugeClaimedHeaderIsNotAllocated();
};

void TestSafetensors::roundTrip() {
    QTemporaryDir dir;
    const std::string path = dir.path().toStdString() + "/t.safetensors";
    std::vector<float> a{1.5f, -2.f, 3.25f, 0.f, 7.f, 8.f};
    std::vector<uint16_t> b{0x3c00, 0xc000};  // 1.0, -2.0 in half precision
    st::write(path, {{"a.weight", "F32", {2, 3}, a.data(), a.size() * 4}, {"b", "F16", {2}, b.data(), 4}},
              {{"producer", "test"}});
    const auto h = st::readHeader(path);
    QCOMPARE(h.tensors.size(), size_t(2));
    QCOMPARE(h.metadata.at("producer"), std::string("test"));
    QCOMPARE(h.data_offset % 8, uint64_t(0));
    const auto* ta = h.find("a.weight");
    QVERIFY(ta);
    QCOMPARE(ta->shape, (std::vector<int64_t>{2, 3}));
    auto bytes = st::readTensorBytes(h, *ta);
    QCOMPARE(std::memcmp(bytes.data(), a.data(), 24), 0);
    auto bb = st::readTensorBytes(h, *h.find("b"));
    QCOMPARE(std::memcmp(bb.data(), b.data(), 4), 0);
}

void TestSafetensors::malformed_data() {
    QTest::addColumn<QByteArray>("file");
    QTest::addColumn<QString>("message");
    auto row = [](const char* name, const std::string& file, const char* msg) {
        QTest::newRow(name) << QByteArray(file.data(), int(file.size())) << QString(msg);
    };
    row("too short", std::string("\x05\x00", 2), "too short for a safetensors header");
    row("header past end", fileWithHeader("{}", 0).substr(0, 9), "runs past the end of the file");
    {
        std::string f = fileWithHeader("{}", 0);
        f[5] = '\x7f';  // claims ~ 2^47 bytes
        row("header over limit", f, "exceeds the 100 MB limit");
    }
    row("not json", fileWithHeader("{nope", 0), "malformed header JSON");
    row("not object", fileWithHeader("[1,2]", 0), "header is not a JSON object");
    row("unknown dtype", fileWithHeader(R"({"x":{"dtype":"Q7","shape":[1],"data_offsets":[0,4]}})", 4),
        "unknown dtype 'Q7'");
    row("missing shape", fileWithHeader(R"({"x":{"dtype":"F32","data_offsets":[0,4]}})", 4),
        "missing or non-array shape");
    row("negative dim", fileWithHeader(R"({"x":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4),
        "shape entries must be non-negative integers");
    row("size mismatch", fileWithHeader(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", 4),
        "needs 8 bytes but data_offsets span 4");
    row("out of range", fileWithHeader(R"({"x":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8),
        "out of range: the data section has 8 bytes");
    row("begin after end", fileWithHeader(R"({"x":{"dtype":"F32","shape":[0],"data_offsets":[8,4]}})", 8),
        "data_offsets begin > end");
    row("overlap",
        fileWithHeader(
            R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"y":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
            8),
        "overlaps the tensor before it");
    row("hole", fileWithHeader(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8), "hole of 4 bytes");
    row("trailing bytes", fileWithHeader(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 12),
        "8 bytes after the last tensor");
    row("huge shape",
        fileWithHeader(R"({"x":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})", 4),
        "shape is too large");
    row("bad metadata", fileWithHeader(R"({"__metadata__":{"a":1}})", 0), "__metadata__ value 'a' is not a string");
}

void TestSafetensors::malformed() {
    QFETCH(QByteArray, file);
    QFETCH(QString, message);
    QTemporaryDir dir;
    const std::string path = dir.path().toStdString() + "/bad.safetensors";
    attnlab::testing::writeFile(path, file.toStdString());
    try {
        st::readHeader(path);
        QFAIL("no exception");
    } catch (const attnlab::PackageError& e) {
        QVERIFY2(QString(e.what()).contains(message), e.what());
        QVERIFY2(QString(e.what()).startsWith(QString::fromStdString(path)), "the message names the file");
    }
}

void TestSafetensors::hugeClaimedHeaderIsNotAllocated() {
    // 90 MB claimed, 20 bytes present: rejected from the file size before any allocation.
    std::string f = fileWithHeader("{}", 10);
    const uint64_t n = 90ull << 20;
    for (int i = 0; i < 8; ++i) f[i] = static_cast<char>((n >> (8 * i)) & 0xff);
    QTemporaryDir dir;
    const std::string path = dir.path().toStdString() + "/claim.safetensors";
    attnlab::testing::writeFile(path, f);
    QVERIFY_THROWS_EXCEPTION(attnlab::PackageError, st::readHeader(path));
}

QTEST_APPLESS_MAIN(TestSafetensors)
#include "tst_safetensors.moc"
