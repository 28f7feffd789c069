#include "formats/safetensors/safetensors.h"

#include "util/atomic_file.h"
#include "util/small_file.h"

#include <attnlab/errors.h>

#include "util/text.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

namespace attnlab::safetensors {
using nlohmann::json;

namespace {
constexpr uint64_t kMaxHeader = 100u * 1024 * 1024;  // the limit the reference library uses

[[noreturn]] void fail(const std::string& origin, const std::string& m) { throw PackageError(origin + ": " + m); }
}  // namespace

uint64_t TensorInfo::numel() const {
    uint64_t n = 1;
    for (auto d : shape) n *= static_cast<uint64_t>(d);
    return n;
}

const TensorInfo* Header::find(const std::string& name) const {
    for (const auto& t : tensors)
        if (t.name == name) return &t;
    return nullptr;
}

size_t dtypeSize(const std::string& d) {
    if (d == "F64" || d == "I64" || d == "U64") return 8;
    if (d == "F32" || d == "I32" || d == "U32") return 4;
    if (d == "F16" || d == "BF16" || d == "I16" || d == "U16") return 2;
    if (d == "I8" || d == "U8" || d == "BOOL") return 1;
    return 0;
}

Header parseHeader(const std::string& bytes, const std::string& origin, uint64_t file_size) {
    if (file_size < 8)
        fail(origin, "file is " + std::to_string(file_size) + " bytes, too short for a safetensors header");
    if (bytes.size() < 8) fail(origin, "cannot read the header length");
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[i]);
    if (n > kMaxHeader)
        fail(origin, "header length " + std::to_string(n) + " exceeds the 100 MB limit (corrupt file?)");
    if (n > file_size - 8)
        fail(origin, "header length " + std::to_string(n) + " runs past the end of the file (" +
                         std::to_string(file_size) + " bytes): truncated file?");
    if (n < 2) fail(origin, "header length " + std::to_string(n) + " is too small for a JSON object");
    if (bytes.size() < 8 + n) fail(origin, "header is truncated");

    Header h;
    h.path = origin;
    h.data_offset = 8 + n;
    h.data_size = file_size - h.data_offset;
    json j;
    try {
        j = json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<std::ptrdiff_t>(n));
    } catch (const json::exception& e) {
        fail(origin, std::string("malformed header JSON: ") + e.what());
    }
    if (!j.is_object()) fail(origin, "header is not a JSON object");
    for (auto it = j.begin(); it != j.end(); ++it) {
        const std::string& key = it.key();
        const json& v = it.value();
        if (key == "__metadata__") {
            if (!v.is_object()) fail(origin, "__metadata__ is not an object");
            for (auto m = v.begin(); m != v.end(); ++m) {
                if (!m.value().is_string())
                    fail(origin, "__metadata__ value '" + util::forMessage(m.key()) + "' is not a string");
                h.metadata[m.key()] = m.value().get<std::string>();
            }
            continue;
        }
        const std::string what = "tensor '" + util::forMessage(key) + "'";
        if (!v.is_object()) fail(origin, what + ": entry is not an object");
        if (!v.contains("dtype") || !v["dtype"].is_string()) fail(origin, what + ": missing or non-string dtype");
        if (!v.contains("shape") || !v["shape"].is_array()) fail(origin, what + ": missing or non-array shape");
        if (!v.contains("data_offsets") || !v["data_offsets"].is_array() || v["data_offsets"].size() != 2)
            fail(origin, what + ": data_offsets must be an array of two integers");
        TensorInfo t;
        t.name = key;
        t.dtype = v["dtype"].get<std::string>();
        const size_t item = dtypeSize(t.dtype);
        if (item == 0) fail(origin, what + ": unknown dtype '" + util::forMessage(t.dtype) + "'");
        if (v["shape"].size() > 8) fail(origin, what + ": more than 8 dimensions");
        uint64_t numel = 1;
        for (const auto& d : v["shape"]) {
            if (!d.is_number_unsigned()) fail(origin, what + ": shape entries must be non-negative integers");
            const uint64_t dim = d.get<uint64_t>();
            if (dim > (uint64_t(1) << 40) || (dim && numel > std::numeric_limits<uint64_t>::max() / 16 / dim))
                fail(origin, what + ": shape is too large");
            numel *= dim;
            t.shape.push_back(static_cast<int64_t>(dim));
        }
        for (const auto& o : v["data_offsets"])
            if (!o.is_number_unsigned()) fail(origin, what + ": data_offsets must be non-negative integers");
        t.begin = v["data_offsets"][0].get<uint64_t>();
        t.end = v["data_offsets"][1].get<uint64_t>();
        if (t.begin > t.end) fail(origin, what + ": data_offsets begin > end");
        if (t.end > h.data_size)
            fail(origin, what + ": data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) +
                             "] out of range: the data section has " + std::to_string(h.data_size) +
                             " bytes (truncated file?)");
        if (t.end - t.begin != numel * item)
            fail(origin, what + ": shape " + util::shapeString(t.shape) + " of " + t.dtype + " needs " +
                             std::to_string(numel * item) + " bytes but data_offsets span " +
                             std::to_string(t.end - t.begin));
        h.tensors.push_back(std::move(t));
    }
    std::sort(h.tensors.begin(), h.tensors.end(), [](const TensorInfo& a, const TensorInfo& b) {
        return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    uint64_t cursor = 0;
    for (const auto& t : h.tensors) {
        if (t.begin < cursor) fail(origin, "tensor '" + util::forMessage(t.name) + "' overlaps the tensor before it");
        if (t.begin > cursor)
            fail(origin, "hole of " + std::to_string(t.begin - cursor) + " bytes before tensor '" +
                             util::forMessage(t.name) + "'");
        cursor = t.end;
    }
    if (cursor != h.data_size)
        fail(origin, "data section has " + std::to_string(h.data_size - cursor) +
                         " bytes after the last tensor (oversized or corrupt file)");
    return h;
}

Header readHeader(const std::string& path) {
    auto [in, size] = util::openRegularFile(path);
    std::string bytes(std::min<uint64_t>(size, 8), '\0');
    in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (size >= 8) {
        uint64_t n = 0;
        for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[i]);
        // Validate the claimed length before allocating for it.
        if (n <= kMaxHeader && n <= size - 8) {
            bytes.resize(8 + n);
            in.read(bytes.data() + 8, static_cast<std::streamsize>(n));
            if (!in) fail(path, "cannot read the header");
        }
    }
    return parseHeader(bytes, path, size);
}

std::vector<char> readTensorBytes(const Header& h, const TensorInfo& t) {
    std::ifstream in(h.path, std::ios::binary);
    if (!in) fail(h.path, "cannot be opened");
    std::vector<char> out(t.end - t.begin);
    in.seekg(static_cast<std::streamoff>(h.data_offset + t.begin));
    in.read(out.data(), static_cast<std::streamsize>(out.size()));
    if (!in || static_cast<size_t>(in.gcount()) != out.size())
        fail(h.path, "tensor '" + util::forMessage(t.name) + "' is truncated");
    return out;
}

void readTensorRange(const Header& h, const TensorInfo& t, uint64_t offset, uint64_t count, char* out) {
    if (offset > t.end - t.begin || count > t.end - t.begin - offset)
        throw InternalError("safetensors: a range outside tensor '" + t.name + "'");
    std::ifstream in(h.path, std::ios::binary);
    if (!in) fail(h.path, "cannot be opened");
    in.seekg(static_cast<std::streamoff>(h.data_offset + t.begin + offset));
    in.read(out, static_cast<std::streamsize>(count));
    if (!in || static_cast<uint64_t>(in.gcount()) != count)
        fail(h.path, "tensor '" + util::forMessage(t.name) + "' is truncated");
}

void write(const std::string& path, const std::vector<TensorView>& tensors,
           const std::map<std::string, std::string>& metadata) {
    json j = json::object();
    if (!metadata.empty()) j["__metadata__"] = metadata;
    uint64_t offset = 0;
    for (const auto& t : tensors) {
        const size_t item = dtypeSize(t.dtype);
        uint64_t numel = 1;
        for (auto d : t.shape) numel *= static_cast<uint64_t>(d);
        if (item == 0 || numel * item != t.nbytes)
            throw InternalError("safetensors write: tensor '" + t.name + "' has inconsistent dtype/shape/size");
        j[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.nbytes}}};
        offset += t.nbytes;
    }
    std::string header = j.dump();
    header.append((8 - header.size() % 8) % 8, ' ');  // align the data section to 8 bytes
    util::NewFileWriter out(path);
    unsigned char len[8];
    uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>((n >> (8 * i)) & 0xff);
    out.write(len, 8);
    out.write(header.data(), header.size());
    // Tensors are written in the order given; JSON object keys are sorted by nlohmann, which is
    // fine: offsets, not key order, place the data.
    for (const auto& t : tensors) out.write(t.data, t.nbytes);
    out.finish();
}

}  // namespace attnlab::safetensors
