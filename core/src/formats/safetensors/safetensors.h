#pragma once
// A checked reader and a writer of the safetensors format (huggingface/safetensors):
//   8 bytes little-endian header length N | N bytes of JSON header | data section.
// The reader trusts nothing the file claims: the header length is checked against the file size
// (and a 100 MB cap) before anything is allocated, every tensor's dtype, shape and offsets are
// checked, and the data section must be covered exactly (no overlap, no hole, no trailing bytes).
// Torch-free on purpose: the fuzz test and the CLI can use it without LibTorch.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace attnlab::safetensors {

struct TensorInfo {
    std::string name;
    std::string dtype;  // "F32", "F16", "BF16", "F64", "I64", "I32", "I16", "I8", "U8", "BOOL"
    std::vector<int64_t> shape;
    uint64_t begin = 0, end = 0;  // offsets into the data section
    uint64_t numel() const;
};

struct Header {
    std::string path;
    uint64_t data_offset = 0;  // 8 + N
    uint64_t data_size = 0;
    std::vector<TensorInfo> tensors;  // in file order of their offsets
    std::map<std::string, std::string> metadata;
    const TensorInfo* find(const std::string& name) const;
};

// Bytes per element of a dtype, 0 when unknown.
size_t dtypeSize(const std::string& dtype);

// Parses and validates the header; throws PackageError("<path>: <problem>").
Header readHeader(const std::string& path);
// Same checks on an in-memory file (used by tests and the fuzzer).
Header parseHeader(const std::string& bytes, const std::string& origin, uint64_t file_size);
// Reads one tensor's bytes (the header must come from readHeader on the same, unchanged file).
std::vector<char> readTensorBytes(const Header& header, const TensorInfo& tensor);
// Reads `count` bytes of one tensor from byte `offset` of it into `out` (a chunk of a large tensor).
void readTensorRange(const Header& header, const TensorInfo& tensor, uint64_t offset, uint64_t count, char* out);

struct TensorView {
    std::string name;
    std::string dtype;
    std::vector<int64_t> shape;
    const void* data = nullptr;
    size_t nbytes = 0;
};

// Writes the file (not atomically: callers write to a temporary name and rename).
void write(const std::string& path, const std::vector<TensorView>& tensors,
           const std::map<std::string, std::string>& metadata = {});

}  // namespace attnlab::safetensors
