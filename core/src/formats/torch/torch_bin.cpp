#include "formats/torch/torch_bin.h"

#include "util/small_file.h"

#include "formats/safetensors/safetensors.h"
#include "formats/torch/torch_pickle.h"
#include "util/text.h"

#include <attnlab/errors.h>

#include <caffe2/serialize/inline_container.h>

#include <algorithm>
#include <cstdint>
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

// The tensors read may share storages (tied weights: Marian's embeddings are one storage under up
// to four names), and each is copied into memory of its own: together they may take at most this
// many times the file's size, so that a pickle naming one storage a million times is refused.
constexpr uint64_t kMaxTensorBytesPerFileByte = 8;

void checkStoredEntries(const std::string& path, uint64_t file_size);

// What the first bytes say the file is, before LibTorch's zip reader sees it; returns its size.
uint64_t checkKind(const std::string& path) {
    auto [in, size] = util::openRegularFile(path);
    std::string head(16, '\0');
    in.read(head.data(), std::streamsize(head.size()));
    head.resize(size_t(in.gcount()));
    if (head.compare(0, 4, "PK\x03\x04", 4) == 0) {
        checkStoredEntries(path, size);
        return size;
    }
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
// LibTorch's zip reader (miniz) before anything could check its size (a 1 MB file can claim
// gigabytes), and LibTorch allocates a record's declared size before it reads it. So the zip's
// central directory is read first, the one miniz reads and any other the file's end points to:
// every entry must be stored, and the sizes it declares (its zip64 ones included) must fit in the
// file, alone and all together (docs/reliability.md, "Bounds on what readers allocate").
uint64_t le(const std::string& b, size_t at, size_t n) {
    uint64_t v = 0;
    for (size_t k = n; k-- > 0;) v = (v << 8) | uint8_t(b[at + k]);
    return v;
}
uint32_t le32(const std::string& b, size_t at) { return uint32_t(le(b, at, 4)); }
uint16_t le16(const std::string& b, size_t at) { return uint16_t(le(b, at, 2)); }

constexpr uint32_t kEndSig = 0x06054b50, kZip64EndSig = 0x06064b50, kZip64LocatorSig = 0x07064b50,
                   kEntrySig = 0x02014b50;
constexpr size_t kEndSize = 22, kZip64EndSize = 56, kZip64LocatorSize = 20, kEntrySize = 46;
// How far from its end miniz looks for the end record (its 64 KB comment and one 4 KB read).
constexpr uint64_t kEndSearch = kEndSize + 0xFFFF + 4096;
// A central directory entry takes about 100 bytes: 64 MiB is some 500,000 records (a state dict of
// 100,000 tensors has fewer than 100,000 storages).
constexpr uint64_t kMaxCentralDirectory = uint64_t(64) << 20;

std::string readAt(std::ifstream& in, uint64_t at, uint64_t n) {
    std::string b(size_t(n), '\0');
    in.clear();
    in.seekg(std::streamoff(at));
    in.read(b.data(), std::streamsize(n));
    b.resize(size_t(in.gcount()));
    return b;
}

struct Span {
    uint64_t offset = 0, size = 0;
    const char* what = "";
};

// The central directories the file's end points to: the classic end record's, found as miniz
// finds it (the last signature with a whole record after it), and the zip64 record's that a
// locator right before it names, which miniz reads instead. Both are checked: a decoy in either
// is refused.
std::vector<Span> centralDirectories(const std::string& path, std::ifstream& in, uint64_t file_size) {
    const uint64_t tail_at = file_size - std::min(file_size, kEndSearch);
    const std::string tail = readAt(in, tail_at, file_size - tail_at);
    size_t end = std::string::npos;
    for (size_t i = tail.size() >= kEndSize ? tail.size() - kEndSize + 1 : 0; i-- > 0;)
        if (le32(tail, i) == kEndSig) {
            end = i;
            break;
        }
    if (end == std::string::npos)
        fail(path,
             "is truncated or damaged: its zip archive has no central directory (no end record; the end of the "
             "file is missing?)");
    std::vector<Span> dirs;
    const uint64_t cd_size = le32(tail, end + 12), cd_offset = le32(tail, end + 16);
    if (cd_size != 0xFFFFFFFFu && cd_offset != 0xFFFFFFFFu) dirs.push_back({cd_offset, cd_size, "end record"});
    const uint64_t end_at = tail_at + end;
    if (end_at >= kZip64LocatorSize + kZip64EndSize) {
        const std::string locator = readAt(in, end_at - kZip64LocatorSize, kZip64LocatorSize);
        const bool found = locator.size() == kZip64LocatorSize && le32(locator, 0) == kZip64LocatorSig;
        const uint64_t record_at = found ? le(locator, 8, 8) : file_size;
        if (found && record_at <= file_size - kZip64EndSize) {
            const std::string record = readAt(in, record_at, kZip64EndSize);
            if (record.size() == kZip64EndSize && le32(record, 0) == kZip64EndSig)
                dirs.push_back({le(record, 48, 8), le(record, 40, 8), "zip64 end record"});
        }
    }
    for (const Span& d : dirs) {
        if (d.size > kMaxCentralDirectory)
            fail(path, "its " + std::string(d.what) + " declares a central directory of " + std::to_string(d.size) +
                           " bytes, over the " + std::to_string(kMaxCentralDirectory >> 20) +
                           " MiB limit (about 500,000 records)");
        if (d.offset > file_size || d.size > file_size - d.offset)
            fail(path, "is truncated or damaged: its " + std::string(d.what) + " places the central directory at " +
                           std::to_string(d.offset) + " (" + std::to_string(d.size) + " bytes), beyond its " +
                           std::to_string(file_size) + " bytes");
    }
    return dirs;
}

// An entry's sizes as miniz takes them: a field of all ones is read from the entry's zip64 extra
// field, in the order uncompressed size, compressed size, local header offset.
struct EntrySizes {
    uint64_t unpacked = 0, packed = 0;
};
EntrySizes entrySizes(const std::string& cd, size_t at, size_t extra_at, size_t extra_len) {
    EntrySizes s{le32(cd, at + 24), le32(cd, at + 20)};
    for (size_t p = extra_at; p + 4 <= extra_at + extra_len;) {
        const size_t id = le16(cd, p), len = le16(cd, p + 2);
        if (p + 4 + len > extra_at + extra_len) break;
        if (id == 0x0001) {
            size_t w = p + 4;
            for (uint64_t* field : {&s.unpacked, &s.packed})
                if (*field == 0xFFFFFFFFu && w + 8 <= p + 4 + len) *field = le(cd, w, 8), w += 8;
            break;
        }
        p += 4 + len;
    }
    return s;
}

void checkEntries(const std::string& path, const std::string& cd, uint64_t file_size) {
    uint64_t total = 0;
    for (size_t at = 0; at + kEntrySize <= cd.size() && le32(cd, at) == kEntrySig;) {
        const size_t name_len = le16(cd, at + 28), extra_len = le16(cd, at + 30);
        const size_t skip = kEntrySize + name_len + extra_len + le16(cd, at + 32);
        const std::string name = cd.substr(at + kEntrySize, std::min(name_len, cd.size() - at - kEntrySize));
        if (le16(cd, at + 10) != 0)
            fail(path, "record '" + name +
                           "' is compressed; torch.save stores records uncompressed, and a "
                           "compressed one is not read");
        const size_t extra_at = std::min(cd.size(), at + kEntrySize + name_len);
        const EntrySizes s = entrySizes(cd, at, extra_at, std::min(extra_len, cd.size() - extra_at));
        const uint64_t claimed = std::max(s.unpacked, s.packed);
        if (claimed > file_size)
            fail(path, "record '" + name + "' claims " + std::to_string(claimed) + " bytes, more than the file's " +
                           std::to_string(file_size));
        total += claimed;  // each at most the file's size, and fewer entries than bytes: no wrap
        if (total > file_size)
            fail(path, "its records claim " + std::to_string(total) + " bytes together (up to '" + name +
                           "'), more than the file's " + std::to_string(file_size) + ": records overlap");
        at += skip;
    }
}

void checkStoredEntries(const std::string& path, uint64_t file_size) {
    std::ifstream in(path, std::ios::binary);
    for (const Span& d : centralDirectories(path, in, file_size))
        checkEntries(path, readAt(in, d.offset, d.size), file_size);
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
    const uint64_t file_size = checkKind(path);
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
    uint64_t tensor_bytes = 0;
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
        // What the copy below allocates: every element, however few bytes of storage the strides
        // reach (a stride of 0 repeats one element as often as the shape says). Saturating.
        uint64_t allocated = safetensors::dtypeSize(t.dtype);
        for (const int64_t d : t.shape) {
            const uint64_t n = uint64_t(std::max<int64_t>(d, 0));
            allocated = n != 0 && allocated > UINT64_MAX / n ? UINT64_MAX : allocated * n;
        }
        allocated = std::max(allocated, needed);
        tensor_bytes = allocated > UINT64_MAX - tensor_bytes ? UINT64_MAX : tensor_bytes + allocated;
        if (tensor_bytes > kMaxTensorBytesPerFileByte * file_size)
            fail(path, "its tensors up to " + what + " take " + std::to_string(tensor_bytes) + " bytes, more than " +
                           std::to_string(kMaxTensorBytesPerFileByte) +
                           " times the file's size (one storage shared by too many tensors)");
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
