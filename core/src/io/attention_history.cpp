// The attention history file (attnlab/attention_history.h, docs/attention-history.md): the one
// place its bytes and JSON keys are read and written.
#include <attnlab/attention_history.h>
#include <attnlab/errors.h>

#include "util/atomic_file.h"
#include "util/small_file.h"

#include <nlohmann/json.hpp>

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace attnlab {
using nlohmann::json;

namespace {
constexpr char kMagic[8] = {'A', 'T', 'T', 'N', 'H', 'I', 'S', 'T'};
constexpr const char* kFormat = "attnlab-attention-history";
constexpr size_t kMaxBytes = size_t(1) << 30;
constexpr int kMaxLayers = 64, kMaxHeads = 256;
constexpr size_t kMaxPieces = 4096;
// Version 1 stored every point's maps as they are; version 2 (written since) one zlib stream per
// point, its length in the point's "map_bytes": the bundled model's 44 points take 4.7 MB, not 10.3.
constexpr int kRawVersion = 1;
constexpr const char* kCompression = "zlib, one stream per point";
// deflate never shrinks data more than about 1032:1 (zlib's technical details): a header that
// claims more raw maps than that is refused before anything is allocated for them.
constexpr uint64_t kMaxDeflateRatio = 1032;

// What the maps take in memory (docs/reliability.md, "Bounds on what readers allocate"): a map is
// a vector of rows and each row a vector of floats, allocations of their own (at least 32 bytes,
// 16 of them malloc's), so a header of many small maps costs far more than their bytes: 50 M
// one-piece maps held in a 165 KB file took 4.5 GB. The whole history's maps are held at once.
constexpr uint64_t kMaxMapMemory = uint64_t(2) << 30;
// The JSON header is read into a document of its own, several times its size; the bundled
// models' headers take 12 KB.
constexpr uint64_t kMaxHeaderBytes = uint64_t(16) << 20;

uint64_t mapMemory(uint64_t rows, uint64_t cols) {
    const uint64_t row = std::max<uint64_t>(32, cols * sizeof(float) + 16);
    return sizeof(Matrix) + 16 + rows * (sizeof(std::vector<float>) + row);
}

// Memory one probe's maps take at one point, as mapMemory counts it.
uint64_t probeMemory(const HistoryProbe& p, int layers, int heads) {
    const uint64_t s = p.source_pieces.size(), t = p.target_pieces.size();
    const uint64_t lists = 3 * (sizeof(LayerHeadMaps) + uint64_t(layers) * (sizeof(std::vector<Matrix>) + 16));
    return lists + uint64_t(layers) * uint64_t(heads) * (mapMemory(s, s) + mapMemory(t, t) + mapMemory(t, s));
}

// Bytes one probe takes at one point: every head's three maps.
uint64_t probeBytes(const HistoryProbe& p, int layers, int heads) {
    const uint64_t s = p.source_pieces.size(), t = p.target_pieces.size();
    return uint64_t(layers) * uint64_t(heads) * (s * s + t * t + t * s);
}

uint8_t quantize(float w) {
    if (!(w >= 0.0f)) return 0;  // NaN too
    const double q = std::round(std::min(double(w), 1.0) * 255.0);
    return static_cast<uint8_t>(q);
}

void putMaps(std::string& out, const LayerHeadMaps& maps, size_t rows, size_t cols, int layers, int heads) {
    if (int(maps.size()) != layers) throw InternalError("attention history: a point has the wrong number of layers");
    for (const auto& layer : maps) {
        if (int(layer.size()) != heads) throw InternalError("attention history: a point has the wrong number of heads");
        for (const auto& m : layer) {
            if (m.size() != rows) throw InternalError("attention history: a map has the wrong number of rows");
            for (const auto& row : m) {
                if (row.size() != cols) throw InternalError("attention history: a map has the wrong number of columns");
                for (float w : row) out.push_back(static_cast<char>(quantize(w)));
            }
        }
    }
}

LayerHeadMaps takeMaps(const std::string& bytes, size_t& at, size_t rows, size_t cols, int layers, int heads) {
    LayerHeadMaps maps(size_t(layers), std::vector<Matrix>(size_t(heads), Matrix{}));
    for (auto& layer : maps)
        for (auto& m : layer) {
            m.assign(rows, std::vector<float>(cols));
            for (auto& row : m)
                for (float& w : row) w = float(static_cast<unsigned char>(bytes[at++]) / 255.0);
        }
    return maps;
}

// The header; `map_bytes` (one per point, version 2) is left out of the JSON export.
json headerJson(const AttentionHistory& h, const std::vector<size_t>* map_bytes) {
    json probes = json::array(), points = json::array();
    for (const auto& p : h.probes)
        probes.push_back({{"source", p.source},
                          {"target", p.target},
                          {"source_pieces", p.source_pieces},
                          {"target_pieces", p.target_pieces},
                          {"decoder_input_pieces", p.decoder_input_pieces}});
    for (size_t i = 0; i < h.points.size(); ++i) {
        const HistoryPoint& p = h.points[i];
        points.push_back({{"stage", p.stage},
                          {"step", p.step},
                          {"epoch", p.epoch},
                          {"train_loss", p.train_loss},
                          {"valid_loss", p.valid_loss},
                          {"valid_bleu", p.valid_bleu}});
        if (map_bytes) points.back()["map_bytes"] = map_bytes->at(i);
    }
    json j = {{"format", kFormat},
              {"version", kAttentionHistoryVersion},
              {"n_layers", h.n_layers},
              {"n_head", h.n_head},
              {"record_every", h.record_every},
              {"stage", h.stage},
              {"stage_step", h.stage_step},
              {"stage_epoch", h.stage_epoch},
              {"quantization", "uint8: weight = byte / 255"},
              {"probes", probes},
              {"points", points}};
    if (map_bytes) j["compression"] = kCompression;
    return j;
}

// Reads the header's fields with errors that name them.
struct HeaderReader {
    const std::string& origin;
    [[noreturn]] void fail(const std::string& what) const { throw PackageError(origin + ": " + what); }
    const json& field(const json& obj, const char* key, const std::string& in) const {
        if (!obj.is_object() || !obj.contains(key)) fail(in + key + ": missing");
        return obj.at(key);
    }
    int64_t integer(const json& obj, const char* key, int64_t lo, int64_t hi, const std::string& in = "") const {
        const json& v = field(obj, key, in);
        if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
            fail(in + key + ": expected a whole number from " + std::to_string(lo) + " to " + std::to_string(hi));
        return v.get<int64_t>();
    }
    double number(const json& obj, const char* key, const std::string& in) const {
        const json& v = field(obj, key, in);
        if (!v.is_number() || !std::isfinite(v.get<double>())) fail(in + key + ": expected a number");
        return v.get<double>();
    }
    std::vector<std::string> pieces(const json& obj, const char* key, const std::string& in) const {
        const json& v = field(obj, key, in);
        if (!v.is_array() || v.empty() || v.size() > kMaxPieces)
            fail(in + key + ": expected a list of 1 to " + std::to_string(kMaxPieces) + " pieces");
        std::vector<std::string> out;
        for (const auto& p : v) {
            if (!p.is_string()) fail(in + key + ": expected pieces (strings)");
            out.push_back(p.get<std::string>());
        }
        return out;
    }
    std::string text(const json& obj, const char* key, const std::string& in) const {
        const json& v = field(obj, key, in);
        if (!v.is_string()) fail(in + key + ": expected a string");
        return v.get<std::string>();
    }
};

// The header's fields; `map_bytes` gets each point's compressed length (version 2), or stays empty.
AttentionHistory readHeader(const json& j, const HeaderReader& r, std::vector<uint64_t>& map_bytes) {
    if (!j.is_object() || !j.contains("format") || !j.at("format").is_string() || j.at("format") != kFormat)
        r.fail("format: expected \"" + std::string(kFormat) + "\"");
    const int64_t version = r.integer(j, "version", 0, 1 << 20);
    if (version != kRawVersion && version != kAttentionHistoryVersion)
        r.fail("version: expected " + std::to_string(kRawVersion) + " or " + std::to_string(kAttentionHistoryVersion));
    const bool compressed = version != kRawVersion;
    if (compressed && r.text(j, "compression", "") != kCompression)
        r.fail("compression: expected \"" + std::string(kCompression) + "\"");
    AttentionHistory h;
    h.n_layers = int(r.integer(j, "n_layers", 1, kMaxLayers));
    h.n_head = int(r.integer(j, "n_head", 1, kMaxHeads));
    h.record_every = int(r.integer(j, "record_every", 0, 1 << 30));
    if (j.contains("stage")) {
        h.stage = int(r.integer(j, "stage", 0, 1 << 20));
        h.stage_step = r.integer(j, "stage_step", 0, int64_t(1) << 48);
        h.stage_epoch = int(r.integer(j, "stage_epoch", 0, 1 << 24));
    }
    const json& probes = r.field(j, "probes", "");
    if (!probes.is_array() || probes.empty() || probes.size() > 1024)
        r.fail("probes: expected a list of 1 to 1024 probes");
    for (size_t i = 0; i < probes.size(); ++i) {
        const std::string in = "probe " + std::to_string(i + 1) + ": ";
        HistoryProbe p;
        p.source = r.text(probes[i], "source", in);
        p.target = r.text(probes[i], "target", in);
        p.source_pieces = r.pieces(probes[i], "source_pieces", in);
        p.target_pieces = r.pieces(probes[i], "target_pieces", in);
        p.decoder_input_pieces = r.pieces(probes[i], "decoder_input_pieces", in);
        if (p.decoder_input_pieces.size() != p.target_pieces.size())
            r.fail(in + "decoder_input_pieces: " + std::to_string(p.decoder_input_pieces.size()) + " pieces, but " +
                   std::to_string(p.target_pieces.size()) + " target pieces");
        h.probes.push_back(std::move(p));
    }
    const json& points = r.field(j, "points", "");
    if (!points.is_array()) r.fail("points: expected a list");
    for (size_t i = 0; i < points.size(); ++i) {
        const std::string in = "point " + std::to_string(i + 1) + ": ";
        HistoryPoint p;
        p.stage = int(r.integer(points[i], "stage", 0, 1 << 20, in));
        p.step = r.integer(points[i], "step", 0, int64_t(1) << 48, in);
        p.epoch = int(r.integer(points[i], "epoch", 0, 1 << 24, in));
        p.train_loss = r.number(points[i], "train_loss", in);
        p.valid_loss = r.number(points[i], "valid_loss", in);
        p.valid_bleu = r.number(points[i], "valid_bleu", in);
        if (compressed) map_bytes.push_back(uint64_t(r.integer(points[i], "map_bytes", 1, int64_t(kMaxBytes), in)));
        if (i > 0 && p.step <= h.points.back().step)
            r.fail(in + "step " + std::to_string(p.step) + " does not follow step " +
                   std::to_string(h.points.back().step));
        h.points.push_back(std::move(p));
    }
    return h;
}
}  // namespace

namespace {
// One point's maps as version 1 stored them: probe by probe, encoder, decoder, cross.
std::string rawPointMaps(const AttentionHistory& h, const HistoryPoint& point) {
    if (point.maps.size() != h.probes.size()) throw InternalError("attention history: a point lacks probes");
    std::string out;
    for (size_t k = 0; k < h.probes.size(); ++k) {
        const size_t s = h.probes[k].source_pieces.size(), t = h.probes[k].target_pieces.size();
        putMaps(out, point.maps[k].encoder_self, s, s, h.n_layers, h.n_head);
        putMaps(out, point.maps[k].decoder_self, t, t, h.n_layers, h.n_head);
        putMaps(out, point.maps[k].cross, t, s, h.n_layers, h.n_head);
    }
    return out;
}

std::string deflated(const std::string& raw) {
    uLongf size = compressBound(uLong(raw.size()));
    std::string out(size, '\0');
    const int rc = compress2(reinterpret_cast<Bytef*>(out.data()), &size, reinterpret_cast<const Bytef*>(raw.data()),
                             uLong(raw.size()), Z_DEFAULT_COMPRESSION);
    if (rc != Z_OK)
        throw InternalError("attention history: zlib could not compress a point (" + std::to_string(rc) + ")");
    out.resize(size);
    return out;
}

// The `index`th point's stream, which must inflate to exactly `size` bytes and end where it ends.
std::string inflated(const std::string& bytes, size_t at, uint64_t stream, uint64_t size, size_t index,
                     const HeaderReader& r) {
    const std::string in = "point " + std::to_string(index + 1) + ": ";
    if (size > stream * kMaxDeflateRatio)
        r.fail(in + std::to_string(stream) + " compressed bytes cannot hold the " + std::to_string(size) +
               " bytes of maps its probes need");
    std::string raw(size, '\0');
    uLongf out = uLongf(size);
    uLong used = uLong(stream);
    const int rc = uncompress2(reinterpret_cast<Bytef*>(raw.data()), &out,
                               reinterpret_cast<const Bytef*>(bytes.data() + at), &used);
    if (rc != Z_OK || out != size || used != stream)
        r.fail(in + "its " + std::to_string(stream) + " bytes of maps are not one zlib stream of " +
               std::to_string(size) + " bytes" + (rc == Z_OK ? "" : " (zlib error " + std::to_string(rc) + ")"));
    return raw;
}

void takePoint(HistoryPoint& point, const AttentionHistory& h, const std::string& raw, size_t at) {
    for (const auto& probe : h.probes) {
        const size_t s = probe.source_pieces.size(), t = probe.target_pieces.size();
        ProbeMaps m;
        m.encoder_self = takeMaps(raw, at, s, s, h.n_layers, h.n_head);
        m.decoder_self = takeMaps(raw, at, t, t, h.n_layers, h.n_head);
        m.cross = takeMaps(raw, at, t, s, h.n_layers, h.n_head);
        point.maps.push_back(std::move(m));
    }
}
}  // namespace

std::string attentionHistoryBytes(const AttentionHistory& h) {
    std::vector<std::string> streams;
    std::vector<size_t> sizes;
    for (const auto& point : h.points) {
        streams.push_back(deflated(rawPointMaps(h, point)));
        sizes.push_back(streams.back().size());
    }
    const std::string header = headerJson(h, &sizes).dump();
    std::string out(kMagic, sizeof kMagic);
    uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
    out += header;
    for (const auto& stream : streams) out += stream;
    return out;
}

AttentionHistory parseAttentionHistory(const std::string& bytes, const std::string& origin) {
    const HeaderReader r{origin};
    if (bytes.size() < 16 || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
        r.fail("not an attention history (it does not begin with ATTNHIST)");
    uint64_t n = 0;
    for (int i = 0; i < 8; ++i) n |= uint64_t(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
    if (n > bytes.size() - 16) r.fail("truncated: the header says " + std::to_string(n) + " bytes of JSON");
    if (n > kMaxHeaderBytes)
        r.fail("its header of " + std::to_string(n) + " bytes is over the " + std::to_string(kMaxHeaderBytes >> 20) +
               " MiB limit");
    json j;
    try {
        j = json::parse(bytes.substr(16, n));
    } catch (const json::exception& e) {
        r.fail(std::string("header: not valid JSON: ") + e.what());
    }
    std::vector<uint64_t> map_bytes;
    AttentionHistory h = readHeader(j, r, map_bytes);
    uint64_t per_point = 0, memory = 0;  // at most 1,024 probes of 4,096 pieces and 64 x 256 heads: no wrap
    for (const auto& p : h.probes) {
        per_point += probeBytes(p, h.n_layers, h.n_head);
        memory += probeMemory(p, h.n_layers, h.n_head);
    }
    if (!h.points.empty() && memory > kMaxMapMemory / h.points.size())
        r.fail(std::to_string(h.points.size()) + " point(s) of " + std::to_string(h.probes.size()) + " probes x " +
               std::to_string(h.n_layers) + " layers x " + std::to_string(h.n_head) + " heads would take " +
               std::to_string(memory / (1 << 20)) + " MiB of memory each as maps, over the " +
               std::to_string(kMaxMapMemory >> 30) + " GiB limit for a history's maps");
    const uint64_t maps = bytes.size() - 16 - n;
    size_t at = 16 + n;
    if (map_bytes.size() != h.points.size()) {  // version 1: the maps as they are
        // Divided, not multiplied: a point count times a point's size could wrap around.
        const bool fits = per_point == 0 ? maps == 0 : maps % per_point == 0 && maps / per_point == h.points.size();
        if (!fits)
            r.fail(std::to_string(h.points.size()) + " points of " + std::to_string(per_point) + " bytes need " +
                   std::to_string(per_point * h.points.size()) + " bytes of maps, the file has " +
                   std::to_string(maps));
        for (auto& point : h.points) {
            takePoint(point, h, bytes, at);
            at += per_point;
        }
        return h;
    }
    uint64_t total = 0;  // each at most 1 GiB, and there are fewer points than header bytes: no wrap
    for (uint64_t b : map_bytes) total += b;
    if (total != maps)
        r.fail("the points' map_bytes add up to " + std::to_string(total) + " bytes, the file has " +
               std::to_string(maps) + " bytes of maps");
    if (!h.points.empty() && per_point > kMaxBytes / h.points.size())
        r.fail(std::to_string(h.points.size()) + " points of " + std::to_string(per_point) +
               " bytes of maps would take more than 1 GiB");
    for (size_t i = 0; i < h.points.size(); ++i) {
        takePoint(h.points[i], h, inflated(bytes, at, map_bytes[i], per_point, i, r), 0);
        at += map_bytes[i];
    }
    return h;
}

AttentionHistory readAttentionHistory(const std::string& path) {
    return parseAttentionHistory(util::readSmallFile(path, kMaxBytes), path);
}

void writeAttentionHistory(const std::string& path, const AttentionHistory& history) {
    util::saveToFile(path, attentionHistoryBytes(history));
}

std::string attentionHistoryJson(const AttentionHistory& h) {
    json j = headerJson(h, nullptr);
    json& points = j["points"];
    for (size_t i = 0; i < h.points.size(); ++i) {
        json maps = json::array();
        for (const auto& m : h.points[i].maps)
            maps.push_back({{"encoder", m.encoder_self}, {"decoder", m.decoder_self}, {"cross", m.cross}});
        points[i]["maps"] = std::move(maps);
    }
    return j.dump();
}

void writeAttentionHistoryJson(const std::string& path, const AttentionHistory& history) {
    util::saveToFile(path, attentionHistoryJson(history));
}

namespace {
const LayerHeadMaps& mapsOf(const ProbeMaps& m, AttentionKind kind) {
    return kind == AttentionKind::EncoderSelf   ? m.encoder_self
           : kind == AttentionKind::DecoderSelf ? m.decoder_self
                                                : m.cross;
}
}  // namespace

std::vector<HeadStatsReport> historyHeadStatistics(const AttentionHistory& history) {
    std::vector<HeadStatsReport> reports;
    for (const auto& point : history.points) {
        HeadStatsAccumulator acc;
        for (size_t k = 0; k < history.probes.size(); ++k) {
            TranslationResult r;  // the probe as the head statistics read a teacher-forced result
            r.source_pieces = history.probes[k].source_pieces;
            r.best.pieces = history.probes[k].target_pieces;
            r.decoder_input_pieces = history.probes[k].decoder_input_pieces;
            r.encoder_self = point.maps[k].encoder_self;
            r.decoder_self = point.maps[k].decoder_self;
            r.cross = point.maps[k].cross;
            acc.add(r);
        }
        reports.push_back(acc.report(/*teacher_forced=*/true));
    }
    return reports;
}

int historyLargestChange(const AttentionHistory& history, const HeadRef& head) {
    int best = -1;
    double most = -1;
    for (size_t i = 1; i < history.points.size(); ++i) {
        double change = 0;
        for (size_t k = 0; k < history.probes.size(); ++k) {
            const Matrix& now =
                mapsOf(history.points[i].maps[k], head.kind).at(size_t(head.layer)).at(size_t(head.head));
            const Matrix& before =
                mapsOf(history.points[i - 1].maps[k], head.kind).at(size_t(head.layer)).at(size_t(head.head));
            for (size_t r = 0; r < now.size(); ++r)
                for (size_t c = 0; c < now[r].size(); ++c) change += std::abs(double(now[r][c]) - double(before[r][c]));
        }
        if (change > most) most = change, best = int(i);
    }
    return best;
}

}  // namespace attnlab
