#include "package/torch_bin.h"

#include "util/small_file.h"

#include "package/safetensors.h"
#include "package/torch_pickle.h"
#include "util/text.h"

#include <attnlab/errors.h>

#include <caffe2/serialize/inline_container.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <new>

namespace attnlab::package {

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& m) { throw PackageError(path + ": " + m); }

const char* kConvertHint =
    "convert it once, in the model's directory, with: python3 -c \"import torch; "
    "torch.save(torch.load('pytorch_model.bin', weights_only=True), 'pytorch_model.bin')\"";

void checkStoredEntries(const std::string& path, uint64_t file_size);

// What the first bytes say the file is, before LibTorch's zip reader sees it.
void checkKind(const std::string& path) {
    auto [in, size] = util::openRegularFile(path);
    std::string head(16, '\0');
    in.read(head.data(), std::streamsize(head.size()));
    head.resize(size_t(in.gcount()));
    if (head.compare(0, 4, "PK\x03\x04", 4) == 0) return checkStoredEntries(path, size);
    // torch.save(..., _use_new_zipfile_serialization=False): a pickle of the magic number
    // 0x1950a86a20f9469cfc6c (PROTO n, LONG1 10 bytes) followed by more pickles and raw storages.
    static const char magic[] = "\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19";
    if (head.size() >= 14 && uint8_t(head[0]) == 0x80 && head.compare(2, 12, magic, 12) == 0)
        fail(path, std::string("is in PyTorch's legacy (non-zip) format, which is not read; ") + kConvertHint);
    if (size < 4) fail(path, "is " + std::to_string(size) + " bytes: too short for a PyTorch checkpoint");
    if (!head.empty() && uint8_t(head[0]) == 0x80)
        fail(path, "is a bare pickle, not the zip archive torch.save writes");
    fail(path, "is not a PyTorch checkpoint (neither the zip archive torch.save writes nor its legacy format)");
}

// torch.save stores every record uncompressed. A compressed record would be inflated whole by
// LibTorch's reader before anything could check its size (a 1 MB file can claim gigabytes), so the
// zip's central directory is read first: every entry must be stored, and no larger than the file.
uint32_t le32(const std::string& b, size_t at) {
    return uint32_t(uint8_t(b[at])) | uint32_t(uint8_t(b[at + 1])) << 8 | uint32_t(uint8_t(b[at + 2])) << 16 |
           uint32_t(uint8_t(b[at + 3])) << 24;
}
uint16_t le16(const std::string& b, size_t at) { return uint16_t(uint8_t(b[at]) | uint8_t(b[at + 1]) << 8); }

void checkStoredEntries(const std::string& path, uint64_t file_size) {
    std::ifstream in(path, std::ios::binary);
    const uint64_t tail_size = std::min<uint64_t>(file_size, 22 + 65535);  // the end record and its comment
    std::string tail(size_t(tail_size), '\0');
    in.seekg(std::streamoff(file_size - tail_size));
    in.read(tail.data(), std::streamsize(tail.size()));
    const size_t eocd = tail.rfind(std::string("PK\x05\x06", 4));
    if (!in || eocd == std::string::npos || eocd + 22 > tail.size()) return;  // the zip reader reports it
    const uint32_t cd_size = le32(tail, eocd + 12), cd_offset = le32(tail, eocd + 16);
    if (cd_offset == 0xFFFFFFFFu || uint64_t(cd_offset) + cd_size > file_size) return;  // zip64: checked by size below
    std::string cd(cd_size, '\0');
    in.seekg(std::streamoff(cd_offset));
    in.read(cd.data(), std::streamsize(cd.size()));
    for (size_t at = 0; in && at + 46 <= cd.size() && le32(cd, at) == 0x02014b50u;) {
        const uint16_t method = le16(cd, at + 10);
        const uint32_t unpacked = le32(cd, at + 24);
        const size_t name_len = le16(cd, at + 28), skip = 46 + name_len + le16(cd, at + 30) + le16(cd, at + 32);
        const std::string name = cd.substr(at + 46, std::min(name_len, cd.size() - at - 46));
        if (method != 0)
            fail(path, "record '" + name +
                           "' is compressed; torch.save stores records uncompressed, and a "
                           "compressed one is not read");
        if (unpacked != 0xFFFFFFFFu && unpacked > file_size)
            fail(path, "record '" + name + "' claims " + std::to_string(unpacked) + " bytes, more than the file");
        at += skip;
    }
}

at::ScalarType scalarType(const std::string& dtype) {
    if (dtype == "F32") return at::kFloat;
    if (dtype == "F16") return at::kHalf;
    if (dtype == "BF16") return at::kBFloat16;
    if (dtype == "F64") return at::kDouble;
    if (dtype == "I64") return at::kLong;
    if (dtype == "I32") return at::kInt;
    if (dtype == "I16") return at::kShort;
    if (dtype == "I8") return at::kChar;
    if (dtype == "U8") return at::kByte;
    if (dtype == "BOOL") return at::kBool;
    throw InternalError("readTorchBin: no scalar type for dtype " + dtype);
}

struct Record {
    at::DataPtr data;
    size_t size = 0;
};

std::vector<std::pair<std::string, torch::Tensor>> read(const std::string& path) {
    checkKind(path);
    std::unique_ptr<caffe2::serialize::PyTorchStreamReader> reader;
    try {
        reader = std::make_unique<caffe2::serialize::PyTorchStreamReader>(path);
    } catch (const c10::Error& e) {
        const std::string what = e.what_without_backtrace();
        if (what.find("central directory") != std::string::npos)
            fail(path,
                 "is truncated or damaged: its zip archive has no central directory (the end of the file "
                 "is missing?)");
        fail(path, "cannot be read as the zip archive torch.save writes: " + what);
    }
    if (!reader->hasRecord("data.pkl")) fail(path, "is a zip archive without data.pkl: not a file torch.save wrote");
    if (reader->hasRecord("byteorder")) {
        auto [data, size] = reader->getRecord("byteorder");
        const std::string order(static_cast<const char*>(data.get()), size);
        if (order != "little")
            fail(path, "stores its tensors in '" + order.substr(0, 16) + "' byte order (only little-endian is read)");
    }
    std::string pickle;
    {
        auto [data, size] = reader->getRecord("data.pkl");
        pickle.assign(static_cast<const char*>(data.get()), size);
    }
    const std::vector<PickledTensor> tensors = parseStateDictPickle(pickle, path + ": data.pkl");

    // Each storage record is read once and released after the last tensor that uses it.
    std::map<std::string, size_t> last_use;
    for (size_t i = 0; i < tensors.size(); ++i) last_use[tensors[i].storage_key] = i;
    std::map<std::string, Record> records;
    std::vector<std::pair<std::string, torch::Tensor>> out;
    out.reserve(tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
        const PickledTensor& t = tensors[i];
        const std::string what = "tensor '" + t.name + "'";
        const std::string name = "data/" + t.storage_key;
        auto it = records.find(t.storage_key);
        if (it == records.end()) {
            if (!reader->hasRecord(name)) fail(path, what + ": its storage record " + name + " is missing");
            auto [data, size] = reader->getRecord(name);
            if (t.dtype == "BOOL") {
                const auto* p = static_cast<const unsigned char*>(data.get());
                for (size_t k = 0; k < size; ++k)
                    if (p[k] > 1) fail(path, what + ": bool storage " + name + " holds a byte other than 0 and 1");
            }
            it = records.emplace(t.storage_key, Record{std::move(data), size}).first;
        }
        const Record& r = it->second;
        const uint64_t needed = storageBytesNeeded(t);
        if (needed > r.size)
            fail(path, what + " (" + t.dtype + ", shape " + util::shapeString(t.shape) + ", stride " +
                           util::shapeString(t.stride) + ", offset " + std::to_string(t.storage_offset) + ") needs " +
                           std::to_string(needed) + " bytes of storage " + name + ", which holds " +
                           std::to_string(r.size) + " (truncated or damaged file?)");
        const auto options = torch::TensorOptions().dtype(scalarType(t.dtype)).device(torch::kCPU);
        torch::Tensor tensor;
        if (needed == 0) {
            tensor = torch::empty(t.shape, options);
        } else {
            auto* base = static_cast<char*>(r.data.get()) + t.storage_offset * int64_t(safetensors::dtypeSize(t.dtype));
            // A view of the record, copied into a contiguous tensor that owns its memory.
            tensor = torch::from_blob(base, t.shape, t.stride, options).clone(at::MemoryFormat::Contiguous);
        }
        out.emplace_back(t.name, std::move(tensor));
        if (last_use[t.storage_key] == i) records.erase(it);
    }
    return out;
}

}  // namespace

std::vector<std::pair<std::string, torch::Tensor>> readTorchBin(const std::string& path) {
    try {
        return read(path);
    } catch (const c10::Error& e) {
        fail(path, std::string("LibTorch could not read it: ") + e.what_without_backtrace());
    } catch (const std::bad_alloc&) {
        fail(path, "out of memory while reading it (a damaged record claiming a huge size?)");
    }
}

}  // namespace attnlab::package
