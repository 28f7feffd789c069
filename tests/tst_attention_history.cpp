// The attention history file (attnlab/attention_history.h): its documented layout read from bytes
// built here by hand, the round trip within the quantization step, errors that name the problem.
#include <attnlab/attention_history.h>
#include <attnlab/errors.h>

#include "memory_limit.h"

#include <nlohmann/json.hpp>

#include <QtTest/QtTest>

#include <zlib.h>

#include <cmath>
#include <random>

using namespace attnlab;

class TestAttentionHistory : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void theDocumentedLayoutReads();
    void theCompressedLayoutReads();
    void roundTripWithinHalfAStep();
    void malformedFilesAreNamed_data();
    void malformedFilesAreNamed();
    void headStatisticsAndLargestChange();
    void manySmallMapsAreRefusedUnderAMemoryLimit();
};

namespace {
nlohmann::json header(int points) {
    nlohmann::json pts = nlohmann::json::array();
    for (int i = 0; i < points; ++i)
        pts.push_back({{"stage", 0},
                       {"step", 10 * i},
                       {"epoch", i},
                       {"train_loss", 1.5},
                       {"valid_loss", -1},
                       {"valid_bleu", -1}});
    return {{"format", "attnlab-attention-history"},
            {"version", 1},
            {"n_layers", 1},
            {"n_head", 2},
            {"record_every", 10},
            {"probes",
             {{{"source", "a"},
               {"target", "b c"},
               {"source_pieces", {"_a", "</s>"}},
               {"target_pieces", {"_b", "_c", "</s>"}},
               {"decoder_input_pieces", {"<s>", "_b", "_c"}}}}},
            {"points", pts}};
}

std::string file(const nlohmann::json& h, const std::string& maps) {
    const std::string text = h.dump();
    std::string out = "ATTNHIST";
    for (int i = 0; i < 8; ++i) out.push_back(char((uint64_t(text.size()) >> (8 * i)) & 0xff));
    return out + text + maps;
}

// Version 2 of the same: each point's maps one zlib stream, its length in the point's map_bytes.
std::string compressedFile(nlohmann::json h, const std::vector<std::string>& points) {
    h["version"] = 2;
    h["compression"] = "zlib, one stream per point";
    std::string streams;
    for (size_t i = 0; i < points.size(); ++i) {
        uLongf size = compressBound(uLong(points[i].size()));
        std::string z(size, '\0');
        compress2(reinterpret_cast<Bytef*>(z.data()), &size, reinterpret_cast<const Bytef*>(points[i].data()),
                  uLong(points[i].size()), 9);
        z.resize(size);
        h["points"][i]["map_bytes"] = z.size();
        streams += z;
    }
    return file(h, streams);
}

// One point of the header above: per head 2x2 encoder + 3x3 decoder + 3x2 cross = 19 bytes, 2 heads.
constexpr size_t kPointBytes = 2 * 19;

std::string errorOf(const std::string& bytes) {
    try {
        parseAttentionHistory(bytes, "h.bin");
    } catch (const PackageError& e) {
        return e.what();
    }
    return "no error";
}
}  // namespace

void TestAttentionHistory::theDocumentedLayoutReads() {
    std::string maps(kPointBytes, '\0');
    for (size_t i = 0; i < maps.size(); ++i) maps[i] = char(i * 7);
    const AttentionHistory h = parseAttentionHistory(file(header(1), maps), "h.bin");
    QCOMPARE(h.n_layers, 1);
    QCOMPARE(h.n_head, 2);
    QCOMPARE(h.points.size(), size_t(1));
    QCOMPARE(h.probes[0].target_pieces.size(), size_t(3));
    const ProbeMaps& m = h.points[0].maps.at(0);
    // The encoder maps of every head first (head 0: bytes 0..3, head 1: 4..7), then the decoder's
    // (8..16, 17..25), then the cross-attention (26..31, 32..37); each row by row.
    QCOMPARE(m.encoder_self[0][0][0][1], float(7 / 255.0));
    QCOMPARE(m.encoder_self[0][1][1][1], float(((7 * 7) & 0xff) / 255.0));
    QCOMPARE(m.decoder_self[0][0][0][0], float(((8 * 7) & 0xff) / 255.0));
    QCOMPARE(m.cross[0][0][2][1], float(((8 + 18 + 5) * 7 & 0xff) / 255.0));
    QCOMPARE(m.cross[0][1][2][1], float(((8 + 18 + 11) * 7 & 0xff) / 255.0));
    QCOMPARE(h.points[0].train_loss, 1.5);
}

// The same maps compressed (version 2, what the trainer writes) read the same as version 1, and
// writing them back gives version 2 whatever was read.
void TestAttentionHistory::theCompressedLayoutReads() {
    std::string a(kPointBytes, '\0'), b(kPointBytes, '\0');
    for (size_t i = 0; i < kPointBytes; ++i) a[i] = char(i * 7), b[i] = char(255 - i);
    const AttentionHistory raw = parseAttentionHistory(file(header(2), a + b), "v1.bin");
    const AttentionHistory packed = parseAttentionHistory(compressedFile(header(2), {a, b}), "v2.bin");
    QCOMPARE(packed.points.size(), size_t(2));
    QCOMPARE(packed.points[1].maps[0].cross[0][1][2][1], raw.points[1].maps[0].cross[0][1][2][1]);
    QCOMPARE(packed.points[1].maps[0].cross[0][1][2][1], float((255 - (8 + 18 + 11)) / 255.0));
    QCOMPARE(packed.points[0].maps[0].encoder_self[0][0][0][1], float(7 / 255.0));
    const std::string written = attentionHistoryBytes(raw);
    QCOMPARE(written, attentionHistoryBytes(packed));
    const uint64_t n = *reinterpret_cast<const uint64_t*>(written.data() + 8);  // x86-64: little-endian
    const auto h = nlohmann::json::parse(written.substr(16, n));
    QCOMPARE(h.at("version").get<int>(), kAttentionHistoryVersion);
    QCOMPARE(h.at("points")[1].at("map_bytes").get<size_t>() + h.at("points")[0].at("map_bytes").get<size_t>(),
             written.size() - 16 - n);
    // Attention maps are mostly near 0: typical rows shrink to well under half.
    std::string sparse(kPointBytes, '\0');
    for (size_t i = 0; i < kPointBytes; i += 3) sparse[i] = '\xff';
    AttentionHistory many = parseAttentionHistory(file(header(0), ""), "h.bin");
    const AttentionHistory one = parseAttentionHistory(file(header(1), sparse), "s.bin");
    for (int i = 0; i < 40; ++i) {
        many.points.push_back(one.points[0]);
        many.points.back().step = i;
    }
    const std::string small = attentionHistoryBytes(many);
    const uint64_t header_bytes = *reinterpret_cast<const uint64_t*>(small.data() + 8);
    QVERIFY2(small.size() - 16 - header_bytes < 40 * kPointBytes / 2, qPrintable(QString::number(small.size())));
}

void TestAttentionHistory::roundTripWithinHalfAStep() {
    AttentionHistory h = parseAttentionHistory(file(header(0), ""), "h.bin");
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> u(0.f, 1.f);
    auto maps = [&](size_t rows, size_t cols) {
        LayerHeadMaps m(1, std::vector<Matrix>(2, Matrix(rows, std::vector<float>(cols))));
        for (auto& head : m[0])
            for (auto& row : head)
                for (float& w : row) w = u(rng);
        return m;
    };
    for (int i = 0; i < 3; ++i) {
        HistoryPoint p;
        p.step = 5 * i;
        p.epoch = i;
        p.valid_bleu = i == 2 ? 12.5 : -1;
        p.maps.push_back({maps(2, 2), maps(3, 3), maps(3, 2)});
        h.points.push_back(p);
    }
    QTemporaryDir dir;
    const std::string path = dir.filePath("h.bin").toStdString();
    writeAttentionHistory(path, h);
    const AttentionHistory back = readAttentionHistory(path);
    QCOMPARE(back.points.size(), size_t(3));
    QCOMPARE(back.points[2].valid_bleu, 12.5);
    double worst = 0;
    for (size_t i = 0; i < 3; ++i)
        for (size_t h2 = 0; h2 < 2; ++h2)
            for (size_t r = 0; r < 3; ++r)
                for (size_t c = 0; c < 2; ++c)
                    worst = std::max(worst, double(std::abs(back.points[i].maps[0].cross[0][h2][r][c] -
                                                            h.points[i].maps[0].cross[0][h2][r][c])));
    QVERIFY2(worst <= kHistoryQuantizationStep / 2 + 1e-7, qPrintable(QString::number(worst)));
    QVERIFY(worst > 0);  // it is quantized
    // A weight that is not a number (a diverged run) is stored as 0, not as undefined behaviour.
    h.points[0].maps[0].cross[0][0][0][0] = std::nanf("");
    QCOMPARE(parseAttentionHistory(attentionHistoryBytes(h), "nan").points[0].maps[0].cross[0][0][0][0], 0.0f);
    QCOMPARE(attentionHistoryBytes(back), attentionHistoryBytes(readAttentionHistory(path)));
    const auto exported = nlohmann::json::parse(attentionHistoryJson(back));
    QCOMPARE(exported.at("points").size(), size_t(3));
    QCOMPARE(exported.at("points")[1].at("maps")[0].at("cross")[0][1][2][1].get<double>(),
             double(back.points[1].maps[0].cross[0][1][2][1]));
}

void TestAttentionHistory::malformedFilesAreNamed_data() {
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<QString>("message");
    const std::string good = file(header(1), std::string(kPointBytes, '\x10'));
    auto row = [](const char* name, const std::string& b, const char* m) {
        QTest::newRow(name) << QByteArray(b.data(), int(b.size())) << QString(m);
    };
    row("magic", "NOTAHIST" + good.substr(8), "h.bin: not an attention history (it does not begin with ATTNHIST)");
    row("empty", "", "h.bin: not an attention history");
    row("truncated header", good.substr(0, 40), "h.bin: truncated: the header says");
    row("maps short", good.substr(0, good.size() - 1),
        "h.bin: 1 points of 38 bytes need 38 bytes of maps, the file has 37");
    row("maps long", good + "x", "h.bin: 1 points of 38 bytes need 38 bytes of maps, the file has 39");
    auto h = header(1);
    h.erase("n_head");
    row("missing field", file(h, std::string(kPointBytes, 0)), "h.bin: n_head: missing");
    h = header(1);
    h["version"] = 3;
    row("version", file(h, std::string(kPointBytes, 0)), "h.bin: version: expected 1 or 2");
    const std::string point(kPointBytes, '\x20');
    const std::string v2 = compressedFile(header(1), {point});
    row("stream short", v2.substr(0, v2.size() - 1), "h.bin: the points' map_bytes add up to");
    std::string corrupt = v2;
    corrupt[corrupt.size() - 3] ^= 0x55;  // inside the stream's checksum
    row("stream corrupt", corrupt, "h.bin: point 1: its ");
    auto two = header(2);
    row("stream of the wrong size", compressedFile(two, {point, point + "x"}),
        "bytes of maps are not one zlib stream of 38 bytes (zlib error -5)");  // Z_BUF_ERROR: more than 38
    auto bomb = header(1);
    bomb["probes"][0]["source_pieces"] = nlohmann::json(std::vector<std::string>(4000, "_a"));
    row("claims too much", compressedFile(bomb, {point}),
        "compressed bytes cannot hold the 32024018 bytes of maps its probes need");
    h = header(1);
    h["version"] = 2;
    row("no compression", file(h, std::string(kPointBytes, 0)), "h.bin: compression: missing");
    h = header(1);
    h["probes"][0]["decoder_input_pieces"] = {"<s>"};
    row("decoder pieces", file(h, std::string(kPointBytes, 0)),
        "h.bin: probe 1: decoder_input_pieces: 1 pieces, but 3 target pieces");
    h = header(2);
    h["points"][1]["step"] = 0;
    row("order", file(h, std::string(2 * kPointBytes, 0)), "h.bin: point 2: step 0 does not follow step 0");
    h = header(1);
    h["n_layers"] = 1000;
    row("layers", file(h, ""), "h.bin: n_layers: expected a whole number from 1 to 64");
    row("json", file(header(1), "").replace(16, 1, "["), "h.bin: header: not valid JSON");
    h = header(1);
    h["format"] = 5;
    row("format type", file(h, std::string(kPointBytes, 0)), "h.bin: format: expected \"attnlab-attention-history\"");
}

void TestAttentionHistory::malformedFilesAreNamed() {
    QFETCH(QByteArray, bytes);
    QFETCH(QString, message);
    const std::string e = errorOf(bytes.toStdString());
    // The origin first, then the message (the compressed sizes in some depend on zlib's version).
    QVERIFY2(e.rfind("h.bin: ", 0) == 0 && e.find(message.toStdString()) != std::string::npos, e.c_str());
}

// Uniform rows everywhere, then (point 1) head cross:0:1 puts all its weight on the first key: its
// entropy falls from ln 2 to 0 there, and that is where it changed most.
void TestAttentionHistory::headStatisticsAndLargestChange() {
    AttentionHistory h = parseAttentionHistory(file(header(0), ""), "h.bin");
    auto uniform = [](size_t rows, size_t cols) {
        return LayerHeadMaps(1, std::vector<Matrix>(2, Matrix(rows, std::vector<float>(cols, 1.0f / float(cols)))));
    };
    for (int i = 0; i < 3; ++i) {
        HistoryPoint p;
        p.step = i;
        p.maps.push_back({uniform(2, 2), uniform(3, 3), uniform(3, 2)});
        if (i >= 1)
            for (auto& row : p.maps[0].cross[0][1]) row = {1.0f, 0.0f};
        h.points.push_back(p);
    }
    const auto reports = historyHeadStatistics(h);
    QCOMPARE(reports.size(), size_t(3));
    const HeadRef moved{AttentionKind::Cross, 0, 1}, still{AttentionKind::Cross, 0, 0};
    QVERIFY(std::abs(reports[0].find(moved)->value(HeadStatistic::Entropy) - std::log(2.0)) < 1e-6);
    QVERIFY(std::abs(reports[1].find(moved)->value(HeadStatistic::Entropy)) < 1e-6);
    QVERIFY(std::abs(reports[2].find(still)->value(HeadStatistic::Entropy) - std::log(2.0)) < 1e-6);
    QCOMPARE(reports[1].sentences, 1);
    QCOMPARE(historyLargestChange(h, moved), 1);
    h.points.resize(1);
    QCOMPARE(historyLargestChange(h, moved), -1);
}

// The amplified file: one point, 1,024 probes of one piece each, 64 layers x 256 heads:
// 50 M maps of one byte each, 50 MB of maps in a file of some 50 KB (compressed) or 50 MB (raw).
// Read as vectors of vectors they took 4.5 GB; the reader now counts what they would take and
// refuses the header before allocating a map. Run with 1 GiB of address space to spare: far more
// than the refusal needs, far less than the 4.5 GB the old reader took (it failed with bad_alloc).
void TestAttentionHistory::manySmallMapsAreRefusedUnderAMemoryLimit() {
    nlohmann::json h = header(1);
    h["n_layers"] = 64;
    h["n_head"] = 256;
    const nlohmann::json probe = {{"source", "a"},
                                  {"target", "b"},
                                  {"source_pieces", {"_a"}},
                                  {"target_pieces", {"_b"}},
                                  {"decoder_input_pieces", {"<s>"}}};
    h["probes"] = nlohmann::json(std::vector<nlohmann::json>(1024, probe));
    const std::string maps(size_t(1024) * 64 * 256 * 3, '\x80');
    const std::string compressed = compressedFile(h, {maps});
    QVERIFY2(compressed.size() < 400'000, qPrintable(QString::number(compressed.size())));
    const std::string raw = file(h, maps);
    const std::string expected = "h.bin: 1 point(s) of 1024 probes x 64 layers x 256 heads would take ";
    const AddressSpaceLimit limit(uint64_t(1) << 30);
    QVERIFY(limit.active());
    for (const std::string* bytes : {&compressed, &raw}) {
        const std::string e = errorOf(*bytes);
        QVERIFY2(e.rfind(expected, 0) == 0 && e.find("over the 2 GiB limit for a history's maps") != std::string::npos,
                 e.c_str());
    }
}

QTEST_APPLESS_MAIN(TestAttentionHistory)
#include "tst_attention_history.moc"
