#include "formats/ctranslate2/ct2_model_bin.h"

#include "util/small_file.h"
#include "util/text.h"

#include <attnlab/errors.h>

#include <cstring>
#include <fstream>
#include <limits>

namespace attnlab::package::ct2 {

size_t dtypeSize(DType d) {
    switch (d) {
    case DType::Int8: return 1;
    case DType::Int16:
    case DType::Float16:
    case DType::BFloat16: return 2;
    case DType::Float32:
    case DType::Int32: return 4;
    }
    return 0;
}

const char* dtypeName(DType d) {
    switch (d) {
    case DType::Float32: return "float32";
    case DType::Int8: return "int8";
    case DType::Int16: return "int16";
    case DType::Int32: return "int32";
    case DType::Float16: return "float16";
    case DType::BFloat16: return "bfloat16";
    }
    return "?";
}

int64_t Variable::numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
}

std::string ModelBin::resolve(const std::string& name) const {
    auto it = aliases.find(name);
    return it == aliases.end() ? name : it->second;
}

const Variable* ModelBin::find(const std::string& name) const {
    auto it = index.find(resolve(name));
    return it == index.end() ? nullptr : &variables[it->second];
}

std::optional<double> ModelBin::number(const std::string& name) const {
    const Variable* v = find(name);
    if (!v || !v->isScalar()) return std::nullopt;
    const char* b = v->scalar.data();
    switch (v->dtype) {
    case DType::Int8: return double(int8_t(b[0]));
    case DType::Int16: {
        int16_t x;
        std::memcpy(&x, b, 2);
        return double(x);
    }
    case DType::Int32: {
        int32_t x;
        std::memcpy(&x, b, 4);
        return double(x);
    }
    case DType::Float32: {
        float x;
        std::memcpy(&x, b, 4);
        return double(x);
    }
    default: return std::nullopt;
    }
}

std::optional<std::string> ModelBin::text(const std::string& name) const {
    const Variable* v = find(name);
    if (!v || v->dtype != DType::Int8 || v->shape.size() != 1 || v->scalar.size() != v->nbytes) return std::nullopt;
    return std::string(v->scalar.begin(), v->scalar.end());
}

namespace {
constexpr uint64_t kMaxStringAttribute = 1024;

// Reads the header fields in order, every read checked against the bytes left.
class Cursor {
public:
    Cursor(std::istream& in, uint64_t size, std::string origin) : m_in(in), m_size(size), m_origin(std::move(origin)) {}

    [[noreturn]] void fail(const std::string& what) const { throw PackageError(m_origin + ": " + what); }

    void bytes(char* out, uint64_t n, const char* what) {
        if (n > m_size - m_pos)
            fail("is truncated: " + std::string(what) + " at byte " + std::to_string(m_pos) + " needs " +
                 std::to_string(n) + " bytes, " + std::to_string(m_size - m_pos) + " are left");
        m_in.read(out, std::streamsize(n));
        if (!m_in) fail("cannot be read at byte " + std::to_string(m_pos));
        m_pos += n;
    }
    template <typename T>
    T value(const char* what) {
        T v;
        bytes(reinterpret_cast<char*>(&v), sizeof v, what);
        return v;
    }
    std::string string(const char* what) {
        const auto n = value<uint16_t>(what);
        if (n == 0) fail(std::string(what) + " at byte " + std::to_string(m_pos - 2) + " has length 0 (no NUL)");
        std::string s(n, '\0');
        bytes(s.data(), n, what);
        if (s.back() != '\0')
            fail(std::string(what) + " at byte " + std::to_string(m_pos - n) + " does not end in NUL");
        s.pop_back();
        if (s.find('\0') != std::string::npos)
            fail(std::string(what) + " '" + util::forMessage(s) + "' holds a NUL byte");
        return s;
    }
    void skip(uint64_t n, const std::string& what) {
        if (n > m_size - m_pos)
            fail("is truncated: " + what + " needs " + std::to_string(n) + " bytes at byte " + std::to_string(m_pos) +
                 ", " + std::to_string(m_size - m_pos) + " are left");
        m_in.seekg(std::streamoff(n), std::ios::cur);
        if (!m_in) fail("cannot seek past " + what);
        m_pos += n;
    }
    uint64_t position() const { return m_pos; }
    uint64_t left() const { return m_size - m_pos; }

private:
    std::istream& m_in;
    uint64_t m_size, m_pos = 0;
    std::string m_origin;
};

DType dtypeOf(Cursor& c, uint32_t version, const std::string& name, uint64_t* nbytes) {
    const auto id = c.value<uint8_t>("a dtype");
    const auto count = c.value<uint32_t>("a byte count");
    if (version >= 4) {
        if (id > 5)
            c.fail("variable '" + util::forMessage(name) + "' has dtype id " + std::to_string(id) + " (0-5 known)");
        *nbytes = count;
        return static_cast<DType>(id);
    }
    // Versions 2 and 3 stored the item size: CTranslate2's model.cc reads 4 as float32, 2 as int16, 1 as int8.
    const DType d = id == 4 ? DType::Float32 : id == 2 ? DType::Int16 : id == 1 ? DType::Int8 : DType::Int32;
    if (d == DType::Int32) c.fail("variable '" + util::forMessage(name) + "' has item size " + std::to_string(id));
    *nbytes = uint64_t(count) * id;
    return d;
}

Variable readVariable(Cursor& c, uint32_t version) {
    Variable v;
    v.name = c.string("a variable name");
    const auto rank = c.value<uint8_t>("a rank");
    if (rank > kMaxRank)
        c.fail("variable '" + util::forMessage(v.name) + "' has rank " + std::to_string(rank) + " (at most " +
               std::to_string(kMaxRank) + ")");
    // The element count, computed without overflow: a count past any file is refused below.
    constexpr uint64_t kSaturated = uint64_t(1) << 62;
    uint64_t numel = 1;
    for (int i = 0; i < rank; ++i) {
        const auto d = c.value<uint32_t>("a dimension");
        v.shape.push_back(d);
        numel = d == 0 ? 0 : (numel > kSaturated / d ? kSaturated : numel * d);
    }
    v.dtype = dtypeOf(c, version, v.name, &v.nbytes);
    if (numel >= kSaturated || numel * dtypeSize(v.dtype) != v.nbytes)
        c.fail("variable '" + util::forMessage(v.name) + "' of shape " + util::shapeString(v.shape) + " and dtype " +
               dtypeName(v.dtype) + " says it has " + std::to_string(v.nbytes) + " bytes");
    v.offset = c.position();
    if (v.isScalar() || (v.dtype == DType::Int8 && v.shape.size() == 1 && v.nbytes <= kMaxStringAttribute)) {
        v.scalar.resize(v.nbytes);
        c.bytes(v.scalar.data(), v.nbytes, "a scalar");
    } else {
        c.skip(v.nbytes, "variable '" + util::forMessage(v.name) + "'");
    }
    return v;
}

}  // namespace

ModelBin parseModelBin(std::istream& in, uint64_t size, const std::string& origin) {
    Cursor c(in, size, origin);
    ModelBin bin;
    bin.path = origin;
    bin.file_size = size;
    bin.binary_version = c.value<uint32_t>("the binary version");
    if (bin.binary_version < kOldestBinaryVersion || bin.binary_version > kNewestBinaryVersion)
        c.fail("has binary version " + std::to_string(bin.binary_version) + "; AttnLab reads CTranslate2's versions " +
               std::to_string(kOldestBinaryVersion) + " to " + std::to_string(kNewestBinaryVersion) +
               (bin.binary_version > kNewestBinaryVersion ? " (a newer CTranslate2 wrote it)" : ""));
    bin.spec = c.string("the spec name");
    bin.spec_revision = c.value<uint32_t>("the spec revision");
    const auto count = c.value<uint32_t>("the variable count");
    // Each variable takes at least 2 + 1 + 1 + 4 + 1 bytes: a count the file cannot hold is refused
    // before anything is reserved.
    if (count > kMaxVariables || uint64_t(count) * 9 > c.left())
        c.fail("claims " + std::to_string(count) + " variables, more than its " + std::to_string(c.left()) +
               " remaining bytes can hold");
    bin.variables.reserve(count);
    auto& index = bin.index;
    for (uint32_t i = 0; i < count; ++i) {
        bin.variables.push_back(readVariable(c, bin.binary_version));
        if (!index.emplace(bin.variables.back().name, i).second)
            c.fail("variable '" + util::forMessage(bin.variables.back().name) + "' is stored twice");
    }
    if (bin.binary_version >= 3) {
        const auto aliases = c.value<uint32_t>("the alias count");
        if (aliases > kMaxAliases)
            c.fail("claims " + std::to_string(aliases) + " aliases; AttnLab reads at most " +
                   std::to_string(kMaxAliases) + " (a Transformer encoder-decoder has far fewer names)");
        if (uint64_t(aliases) * 6 > c.left())
            c.fail("claims " + std::to_string(aliases) + " aliases, more than its remaining bytes can hold");
        for (uint32_t i = 0; i < aliases; ++i) {
            std::string alias = c.string("an alias");
            std::string target = c.string("an alias's variable");
            // model.cc ignores an alias of a variable that does not exist; AttnLab says so instead.
            if (!index.count(target))
                c.fail("alias '" + util::forMessage(alias) + "' names '" + util::forMessage(target) +
                       "', which is not stored");
            if (index.count(alias) || !bin.aliases.emplace(alias, target).second)
                c.fail("'" + util::forMessage(alias) + "' is both stored and an alias, or an alias twice");
        }
    }
    if (c.left() != 0)
        c.fail("has " + std::to_string(c.left()) + " bytes after its last " +
               (bin.binary_version >= 3 ? "alias" : "variable") + " (not a model.bin, or a damaged one)");
    return bin;
}

ModelBin readModelBin(const std::string& path) {
    util::OpenedFile f = util::openRegularFile(path);
    return parseModelBin(f.in, f.size, path);
}

void readVariableRange(const ModelBin& bin, const Variable& v, uint64_t offset, uint64_t count, char* out) {
    if (offset > v.nbytes || count > v.nbytes - offset)
        throw PackageError(bin.path + ": bytes " + std::to_string(offset) + "+" + std::to_string(count) +
                           " are outside variable '" + util::forMessage(v.name) + "'");
    std::ifstream in(bin.path, std::ios::binary);
    in.seekg(std::streamoff(v.offset + offset));
    in.read(out, std::streamsize(count));
    if (!in)
        throw PackageError(bin.path + ": cannot read variable '" + util::forMessage(v.name) +
                           "' (the file changed or shrank since it was opened)");
}

}  // namespace attnlab::package::ct2
