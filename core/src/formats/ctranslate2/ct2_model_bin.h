#pragma once
// A checked reader of CTranslate2's model.bin (the layout of python/ctranslate2/specs/model_spec.py
// `_serialize`, read as src/models/model.cc reads it), binary versions 2 to 6:
//
//   u32 binary_version
//   string spec name, u32 spec revision                               (version >= 2)
//   u32 variable count, then per variable:
//     string name, u8 rank, u32 dims[rank],
//     u8 dtype id, u32 byte count                                     (version >= 4)
//     u8 item size, u32 element count (1: int8, 2: int16, 4: float32) (version <= 3)
//     the bytes
//   u32 alias count, then per alias: string alias, string variable    (version >= 3)
//
// where a string is u16 length (with its NUL) + bytes + NUL, all little-endian. The dtype ids are
// CTranslate2's DataType: 0 float32, 1 int8, 2 int16, 3 int32, 4 float16, 5 bfloat16. Scalars
// (rank 0) are the spec's attributes (num_heads, pre_norm, activation, ...).
//
// Nothing the file claims is trusted: counts, ranks, sizes and offsets are checked against the
// file's size before anything is allocated, and byte counts against shape x dtype. Only the
// header and the scalars are read here; tensors are read later, a range at a time. Torch-free (the
// fuzz target links it alone).

#include <cstdint>
#include <istream>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace attnlab::package::ct2 {

enum class DType : uint8_t { Float32 = 0, Int8 = 1, Int16 = 2, Int32 = 3, Float16 = 4, BFloat16 = 5 };
size_t dtypeSize(DType d);
const char* dtypeName(DType d);  // "float32", "int8", ... (CTranslate2's names)

struct Variable {
    std::string name;
    std::vector<int64_t> shape;
    DType dtype = DType::Float32;
    uint64_t offset = 0;  // of its bytes in the file
    uint64_t nbytes = 0;
    std::vector<char> scalar;  // a rank-0 variable's bytes, or a short int8 vector's (a string attribute)
    int64_t numel() const;
    bool isScalar() const { return shape.empty(); }
};

struct ModelBin {
    std::string path;
    uint32_t binary_version = 0;
    uint64_t file_size = 0;
    std::string spec;  // "TransformerSpec", "TransformerBase", "TransformerBig", ...
    uint32_t spec_revision = 1;
    std::vector<Variable> variables;                // in file order
    std::map<std::string, std::string> aliases;     // alias -> the variable it stands for
    std::unordered_map<std::string, size_t> index;  // name -> its place in `variables`

    // The variable of this name, through an alias when it is one; null when there is none.
    const Variable* find(const std::string& name) const;
    // The name a variable is stored under (itself, or what its alias names).
    std::string resolve(const std::string& name) const;
    // A scalar attribute as a number (int8/int16/int32/float32), when present.
    std::optional<double> number(const std::string& name) const;
    // A string attribute (an int8 vector of UTF-8 bytes: binary versions < 6 stored the special
    // tokens so), when present.
    std::optional<std::string> text(const std::string& name) const;
};

inline constexpr uint32_t kOldestBinaryVersion = 2;
inline constexpr uint32_t kNewestBinaryVersion = 6;
inline constexpr uint32_t kMaxVariables = 1u << 20;
// Aliases read at most: one per name of a 1,000-layer Transformer (a 6-layer one has about 200
// names; CTranslate2 aliases a variable equal to another, so a model of many equal tensors has many).
inline constexpr uint32_t kMaxAliases = 1u << 16;
inline constexpr int kMaxRank = 8;

// Reads and checks the header of `path`; throws PackageError("<path>: <problem>").
ModelBin readModelBin(const std::string& path);
// The same from a stream of `size` bytes (tests, the fuzzer); `origin` names it in messages.
ModelBin parseModelBin(std::istream& in, uint64_t size, const std::string& origin);

// `count` bytes of `v` from byte `offset` of it (bounds checked against the variable).
void readVariableRange(const ModelBin& bin, const Variable& v, uint64_t offset, uint64_t count, char* out);

}  // namespace attnlab::package::ct2
