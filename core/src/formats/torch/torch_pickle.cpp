#include "formats/torch/torch_pickle.h"

#include "formats/safetensors/safetensors.h"

#include <attnlab/errors.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <map>
#include <set>
#include <string_view>
#include <utility>

namespace attnlab::package {

namespace {

// Bounds (docs/reliability.md, "Bounds on what readers allocate"). A state dict of 100,000 tensors
// pickles to about 20 MB and builds about 1.5 M objects holding some 2 M values. Every value held
// costs at least one byte of pickle, so what the unpickler holds grows with its input; the caps
// keep it under about 1 GB whatever the input (a value is 32 bytes, a memo entry about 80):
// the stack (transient: torch.save's pickler pushes 1,000 items between a MARK and its
// APPENDS/SETITEMS, LibTorch's own a whole dict's), the values held in lists, tuples and dicts
// and in the memo together, and the objects (strings, containers, storages, tensors).
constexpr size_t kMaxPickle = size_t(256) << 20;
constexpr size_t kMaxStack = size_t(1) << 20;
constexpr size_t kMaxMarks = 256;
constexpr size_t kMaxHeld = size_t(1) << 22;
constexpr size_t kMaxObjects = size_t(1) << 22;
constexpr size_t kMaxDims = 32;
constexpr size_t kMaxGlobalPart = 256;
constexpr size_t kMaxKey = 64;
constexpr uint64_t kMaxBytes = uint64_t(1) << 62;

// What a value on the stack is. Containers, strings, storages and tensors live in the
// unpickler's arenas and a value refers to them by index: copying one (BINGET) costs nothing,
// a container may contain itself without a reference cycle, and nothing is destroyed
// recursively.
enum class Kind : uint8_t { None, Bool, Int, Float, Str, Tuple, List, Dict, Global, Storage, Tensor };

const char* kindName(Kind k) {
    switch (k) {
    case Kind::None: return "None";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::Str: return "str";
    case Kind::Tuple: return "tuple";
    case Kind::List: return "list";
    case Kind::Dict: return "dict";
    case Kind::Global: return "global";
    case Kind::Storage: return "storage";
    case Kind::Tensor: return "tensor";
    }
    return "?";
}

// "an int", "a dict", "None": for messages.
std::string described(Kind k) {
    if (k == Kind::None) return "None";
    return std::string(k == Kind::Int ? "an " : "a ") + kindName(k);
}

// The globals a state dict uses; anything else is refused when the pickle names it.
enum class Fn : uint8_t { OrderedDict, RebuildTensorV2, RebuildParameter, RebuildParameterWithState, StorageType };

struct StorageType {
    const char* name;
    const char* dtype;
};
constexpr StorageType kStorageTypes[] = {
    {"FloatStorage", "F32"}, {"HalfStorage", "F16"},  {"BFloat16Storage", "BF16"}, {"DoubleStorage", "F64"},
    {"LongStorage", "I64"},  {"IntStorage", "I32"},   {"ShortStorage", "I16"},     {"CharStorage", "I8"},
    {"ByteStorage", "U8"},   {"BoolStorage", "BOOL"},
};

struct Value {
    Kind kind = Kind::None;
    int64_t i = 0;     // Bool, Int; Global: the Fn
    double f = 0;      // Float
    uint32_t ref = 0;  // index into the arena of its kind; Global StorageType: into kStorageTypes
};

struct Storage {
    std::string key;
    const char* dtype;
};

const char* opName(uint8_t op) {
    switch (op) {
    case '(': return "MARK";
    case '.': return "STOP";
    case '0': return "POP";
    case '1': return "POP_MARK";
    case '2': return "DUP";
    case 'F': return "FLOAT";
    case 'I': return "INT";
    case 'J': return "BININT";
    case 'K': return "BININT1";
    case 'L': return "LONG";
    case 'M': return "BININT2";
    case 'N': return "NONE";
    case 'P': return "PERSID";
    case 'Q': return "BINPERSID";
    case 'R': return "REDUCE";
    case 'S': return "STRING";
    case 'T': return "BINSTRING";
    case 'U': return "SHORT_BINSTRING";
    case 'V': return "UNICODE";
    case 'X': return "BINUNICODE";
    case 'a': return "APPEND";
    case 'b': return "BUILD";
    case 'c': return "GLOBAL";
    case 'd': return "DICT";
    case '}': return "EMPTY_DICT";
    case 'e': return "APPENDS";
    case 'g': return "GET";
    case 'h': return "BINGET";
    case 'i': return "INST";
    case 'j': return "LONG_BINGET";
    case 'l': return "LIST";
    case ']': return "EMPTY_LIST";
    case 'o': return "OBJ";
    case 'p': return "PUT";
    case 'q': return "BINPUT";
    case 'r': return "LONG_BINPUT";
    case 's': return "SETITEM";
    case 't': return "TUPLE";
    case ')': return "EMPTY_TUPLE";
    case 'u': return "SETITEMS";
    case 'G': return "BINFLOAT";
    case 'B': return "BINBYTES";
    case 'C': return "SHORT_BINBYTES";
    case 0x80: return "PROTO";
    case 0x81: return "NEWOBJ";
    case 0x82: return "EXT1";
    case 0x83: return "EXT2";
    case 0x84: return "EXT4";
    case 0x85: return "TUPLE1";
    case 0x86: return "TUPLE2";
    case 0x87: return "TUPLE3";
    case 0x88: return "NEWTRUE";
    case 0x89: return "NEWFALSE";
    case 0x8a: return "LONG1";
    case 0x8b: return "LONG4";
    case 0x8c: return "SHORT_BINUNICODE";
    case 0x8d: return "BINUNICODE8";
    case 0x8e: return "BINBYTES8";
    case 0x8f: return "EMPTY_SET";
    case 0x90: return "ADDITEMS";
    case 0x91: return "FROZENSET";
    case 0x92: return "NEWOBJ_EX";
    case 0x93: return "STACK_GLOBAL";
    case 0x94: return "MEMOIZE";
    case 0x95: return "FRAME";
    case 0x96: return "BYTEARRAY8";
    case 0x97: return "NEXT_BUFFER";
    case 0x98: return "READONLY_BUFFER";
    default: return nullptr;
    }
}

std::string hex(unsigned v) {
    const char* digits = "0123456789abcdef";
    return std::string("0x") + digits[(v >> 4) & 15] + digits[v & 15];
}

// Strict UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF.
bool validUtf8(std::string_view s) {
    size_t i = 0;
    while (i < s.size()) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x80) {
            ++i;
            continue;
        }
        size_t n;
        uint32_t cp;
        if ((c & 0xE0) == 0xC0) {
            n = 2, cp = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            n = 3, cp = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            n = 4, cp = c & 0x07;
        } else {
            return false;
        }
        if (i + n > s.size()) return false;
        for (size_t k = 1; k < n; ++k) {
            const auto cc = static_cast<unsigned char>(s[i + k]);
            if ((cc & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (cc & 0x3F);
        }
        if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += n;
    }
    return true;
}

// A name from the file as it may appear in a message: control bytes (and, where the text is not
// checked UTF-8, every byte above ASCII) escaped, at most 200 bytes.
std::string printable(std::string_view s, bool utf8 = true) {
    std::string out;
    for (size_t i = 0; i < s.size() && out.size() < 200; ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x20 || c == 0x7f || c == '\'' || c == '\\' || (c >= 0x80 && !utf8))
            out += "\\x" + hex(c).substr(2);
        else
            out += char(c);
    }
    if (out.size() >= 200) out += "...";
    return out;
}

bool validKey(const std::string& k) {
    if (k.empty() || k.size() > kMaxKey) return false;
    for (char c : k)
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_')) return false;
    return true;
}

class Unpickler {
public:
    Unpickler(const std::string& bytes, const std::string& origin) : m_b(bytes), m_origin(origin) {}

    std::vector<PickledTensor> run() {
        if (m_b.size() > kMaxPickle)
            fail("is " + std::to_string(m_b.size()) + " bytes, over the " + std::to_string(kMaxPickle >> 20) +
                 " MB limit for a state dict's pickle");
        if (m_b.empty()) fail("is empty");
        while (true) {
            if (m_pos >= m_b.size())
                fail("truncated: ends after " + std::to_string(m_b.size()) + " bytes without a STOP opcode");
            m_at = m_pos;
            m_op = byte();
            if (m_op == '.') break;
            step();
        }
        const Value top = pop();
        if (m_pos != m_b.size())
            fail(std::to_string(m_b.size() - m_pos) + " bytes follow the STOP opcode at byte " + std::to_string(m_at));
        return stateDict(top);
    }

private:
    const std::string& m_b;
    const std::string& m_origin;
    size_t m_pos = 0;
    size_t m_at = 0;  // where the current opcode starts
    uint8_t m_op = 0;
    std::vector<Value> m_stack;
    std::vector<size_t> m_marks;       // stack sizes at each open MARK
    std::map<uint32_t, Value> m_memo;  // ordered: a crafted set of indices cannot make it slow
    // arenas
    std::vector<std::string> m_strings;
    std::vector<std::vector<Value>> m_seqs;  // tuples, lists, dicts (key, value, key, value ...)
    std::vector<Storage> m_storages;
    std::vector<PickledTensor> m_tensors;
    std::map<std::string, const char*> m_storage_dtypes;  // key -> dtype, one per storage
    size_t m_held = 0;                                    // values in containers and memo entries, together (kMaxHeld)

    [[noreturn]] void fail(const std::string& m) const { throw PackageError(m_origin + ": " + m); }
    // A problem with the current opcode: names it and where it is.
    [[noreturn]] void failOp(const std::string& m) const {
        fail(std::string(opName(m_op) ? opName(m_op) : "opcode") + " at byte " + std::to_string(m_at) + ": " + m);
    }

    uint8_t byte() { return static_cast<uint8_t>(m_b[m_pos++]); }
    std::string_view take(uint64_t n) {
        if (n > m_b.size() - m_pos)
            fail(std::string("truncated: ") + opName(m_op) + " at byte " + std::to_string(m_at) + " needs " +
                 std::to_string(n) + " bytes, " + std::to_string(m_b.size() - m_pos) + " are left");
        std::string_view s(m_b.data() + m_pos, size_t(n));
        m_pos += size_t(n);
        return s;
    }
    uint64_t le(size_t n) {
        const auto s = take(n);
        uint64_t v = 0;
        for (size_t k = n; k-- > 0;) v = (v << 8) | static_cast<unsigned char>(s[k]);
        return v;
    }

    size_t floor() const { return m_marks.empty() ? 0 : m_marks.back(); }
    void push(const Value& v) {
        if (m_stack.size() >= kMaxStack) failOp("the stack grows past " + std::to_string(kMaxStack) + " entries");
        m_stack.push_back(v);
    }
    Value pop() {
        if (m_stack.size() <= floor()) failOp("stack underflow");
        Value v = m_stack.back();
        m_stack.pop_back();
        return v;
    }
    Value& top() {
        if (m_stack.size() <= floor()) failOp("stack underflow");
        return m_stack.back();
    }
    std::vector<Value> popMark() {
        if (m_marks.empty()) failOp("no MARK to pop to");
        const size_t m = m_marks.back();
        m_marks.pop_back();
        std::vector<Value> items(m_stack.begin() + std::ptrdiff_t(m), m_stack.end());
        m_stack.resize(m);
        return items;
    }

    void checkObjects() const {
        if (m_strings.size() + m_seqs.size() + m_storages.size() + m_tensors.size() >= kMaxObjects)
            failOp("more than " + std::to_string(kMaxObjects) + " objects");
    }
    Value str(std::string_view s) {
        if (!validUtf8(s)) failOp("string is not valid UTF-8");
        checkObjects();
        m_strings.emplace_back(s);
        return {Kind::Str, 0, 0, uint32_t(m_strings.size() - 1)};
    }
    // Counts `n` more values held in containers or the memo, before they are stored.
    void hold(size_t n) {
        if (n > kMaxHeld - m_held)
            failOp("the lists, tuples, dicts and memo grow past " + std::to_string(kMaxHeld) + " values");
        m_held += n;
    }
    Value seq(Kind kind, std::vector<Value> items = {}) {
        checkObjects();
        hold(items.size());
        m_seqs.push_back(std::move(items));
        return {kind, 0, 0, uint32_t(m_seqs.size() - 1)};
    }
    Value integer(int64_t v) { return {Kind::Int, v, 0, 0}; }

    void memoPut(uint64_t index) {
        const Value v = top();
        if (index > UINT32_MAX) failOp("memo index out of range");
        if (!m_memo.count(uint32_t(index))) hold(1);
        m_memo[uint32_t(index)] = v;
    }
    void memoGet(uint64_t index) {
        const auto it = m_memo.find(uint32_t(index));
        if (index > UINT32_MAX || it == m_memo.end()) failOp("memo entry " + std::to_string(index) + " is not defined");
        push(it->second);
    }

    void global(std::string_view module, std::string_view name) {
        const std::string full = std::string(module) + "." + std::string(name);
        Value v{Kind::Global, 0, 0, 0};
        if (module == "collections" && name == "OrderedDict") {
            v.i = int64_t(Fn::OrderedDict);
        } else if (module == "torch._utils" && name == "_rebuild_tensor_v2") {
            v.i = int64_t(Fn::RebuildTensorV2);
        } else if (module == "torch._utils" && name == "_rebuild_parameter") {
            v.i = int64_t(Fn::RebuildParameter);
        } else if (module == "torch._utils" && name == "_rebuild_parameter_with_state") {
            v.i = int64_t(Fn::RebuildParameterWithState);
        } else if (module == "torch" && name.size() > 7 && name.substr(name.size() - 7) == "Storage") {
            v.i = int64_t(Fn::StorageType);
            bool found = false;
            for (size_t k = 0; k < std::size(kStorageTypes) && !found; ++k)
                if (name == kStorageTypes[k].name) v.ref = uint32_t(k), found = true;
            if (!found)
                fail("tensors of 'torch." + printable(name, false) +
                     "' are not supported (only float, half, bfloat16, double, integer and bool tensors are read)");
        } else {
            fail("refuses global '" + printable(full, false) + "' (only a state dict's tensors are read)");
        }
        push(v);
    }

    std::string_view line() {
        const size_t span = std::min(m_b.size() - m_pos, kMaxGlobalPart + 1);
        const void* nl = std::memchr(m_b.data() + m_pos, '\n', span);
        if (!nl) {
            if (span > kMaxGlobalPart) failOp("name longer than " + std::to_string(kMaxGlobalPart) + " bytes");
            fail("truncated: GLOBAL at byte " + std::to_string(m_at) + " has no end of line");
        }
        const size_t end = size_t(static_cast<const char*>(nl) - m_b.data());
        std::string_view s(m_b.data() + m_pos, end - m_pos);
        m_pos = end + 1;
        return s;
    }

    const std::string& strOf(const Value& v, const char* what) {
        if (v.kind != Kind::Str) failOp(std::string(what) + " is " + described(v.kind) + ", not a str");
        return m_strings[v.ref];
    }
    int64_t intOf(const Value& v, const char* what) {
        if (v.kind != Kind::Int) failOp(std::string(what) + " is " + described(v.kind) + ", not an int");
        return v.i;
    }
    const std::vector<Value>& tupleOf(const Value& v, const char* what) {
        if (v.kind != Kind::Tuple) failOp(std::string(what) + " is " + described(v.kind) + ", not a tuple");
        return m_seqs[v.ref];
    }
    const std::vector<Value>& dictOf(const Value& v, const char* what) {
        if (v.kind != Kind::Dict) failOp(std::string(what) + " is " + described(v.kind) + ", not a dict");
        return m_seqs[v.ref];
    }

    // A persistent id: ('storage', torch.<T>Storage, key, location, numel).
    void persistentId() {
        const Value pid = pop();
        const auto& t = tupleOf(pid, "the persistent id");
        if (t.size() != 5 || t[0].kind != Kind::Str || m_strings[t[0].ref] != "storage")
            failOp("the persistent id is not ('storage', type, key, location, size)");
        if (t[1].kind != Kind::Global || t[1].i != int64_t(Fn::StorageType))
            failOp("the storage's type is " + described(t[1].kind) + ", not a torch storage type");
        const char* dtype = kStorageTypes[t[1].ref].dtype;
        const std::string& key = strOf(t[2], "the storage key");
        if (!validKey(key))
            failOp("storage key '" + printable(key) + "' is not 1 to " + std::to_string(kMaxKey) +
                   " letters, digits or underscores");
        (void)strOf(t[3], "the storage location");
        const int64_t numel = intOf(t[4], "the storage size");
        if (numel < 0 || uint64_t(numel) > kMaxBytes / safetensors::dtypeSize(dtype))
            failOp("storage '" + key + "' claims " + std::to_string(numel) + " elements");
        const auto [it, inserted] = m_storage_dtypes.emplace(key, dtype);
        if (!inserted && std::strcmp(it->second, dtype) != 0)
            failOp("storage '" + key + "' is declared both as " + it->second + " and as " + dtype);
        checkObjects();
        m_storages.push_back({key, dtype});
        push({Kind::Storage, 0, 0, uint32_t(m_storages.size() - 1)});
    }

    std::vector<int64_t> ints(const Value& v, const char* what) {
        const auto& t = tupleOf(v, what);
        if (t.size() > kMaxDims)
            failOp(std::string(what) + " has more than " + std::to_string(kMaxDims) + " dimensions");
        std::vector<int64_t> out;
        for (const auto& e : t) {
            const int64_t x = intOf(e, what);
            if (x < 0) failOp(std::string(what) + " has a negative entry " + std::to_string(x));
            out.push_back(x);
        }
        return out;
    }

    // _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata])
    // `a` lives in m_seqs, which nothing here adds to.
    Value rebuildTensor(const std::vector<Value>& a) {
        if (a.size() != 6 && a.size() != 7)
            failOp("_rebuild_tensor_v2 takes 6 or 7 arguments, not " + std::to_string(a.size()));
        if (a[0].kind != Kind::Storage)
            failOp("_rebuild_tensor_v2's storage is " + described(a[0].kind) + ", not a storage");
        PickledTensor t;
        t.storage_key = m_storages[a[0].ref].key;
        t.dtype = m_storages[a[0].ref].dtype;
        t.storage_offset = intOf(a[1], "the storage offset");
        if (t.storage_offset < 0) failOp("negative storage offset " + std::to_string(t.storage_offset));
        t.shape = ints(a[2], "the size");
        t.stride = ints(a[3], "the stride");
        if (t.shape.size() != t.stride.size())
            failOp("size has " + std::to_string(t.shape.size()) + " dimensions but stride " +
                   std::to_string(t.stride.size()));
        if (a[4].kind != Kind::Bool) failOp("requires_grad is " + described(a[4].kind) + ", not a bool");
        if (!dictOf(a[5], "backward_hooks").empty()) failOp("the tensor has backward hooks");
        if (a.size() == 7) {
            // torch 2.x: {"conj": bool, "neg": bit, ...}; a set bit would change the values.
            const auto& meta = dictOf(a[6], "the tensor metadata");
            if (meta.size() > 32) failOp("the tensor metadata has more than 16 entries");
            for (size_t k = 0; k + 1 < meta.size(); k += 2)
                if (!(meta[k + 1].kind == Kind::Bool && meta[k + 1].i == 0))
                    failOp("tensor metadata '" + printable(m_strings[meta[k].ref]) + "' is set (not supported)");
        }
        // The extent in bytes, checked against overflow: numel * size and the last element reached.
        const uint64_t item = safetensors::dtypeSize(t.dtype);
        uint64_t numel = 1;
        for (const int64_t d : t.shape)
            if (__builtin_mul_overflow(numel, uint64_t(d), &numel) || numel > kMaxBytes / item)
                failOp("shape " + shapeText(t.shape) + " has too many elements");
        if (numel > 0) {
            uint64_t last = uint64_t(t.storage_offset);
            for (size_t k = 0; k < t.shape.size(); ++k) {
                uint64_t span;
                if (__builtin_mul_overflow(uint64_t(t.shape[k] - 1), uint64_t(t.stride[k]), &span) ||
                    __builtin_add_overflow(last, span, &last) || last >= kMaxBytes / item)
                    failOp("size " + shapeText(t.shape) + ", stride " + shapeText(t.stride) + " and offset " +
                           std::to_string(t.storage_offset) + " reach past any storage");
            }
        }
        checkObjects();
        m_tensors.push_back(std::move(t));
        return {Kind::Tensor, 0, 0, uint32_t(m_tensors.size() - 1)};
    }

    static std::string shapeText(const std::vector<int64_t>& s) {
        std::string r = "[";
        for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
        return r + "]";
    }

    void reduce() {
        const Value args = pop();
        const Value fn = pop();
        if (fn.kind != Kind::Global) failOp("calls " + described(fn.kind) + ", not a function");
        const auto& a = tupleOf(args, "the arguments");
        switch (Fn(fn.i)) {
        case Fn::OrderedDict:
            if (!a.empty()) failOp("OrderedDict is called with arguments");
            push(seq(Kind::Dict));
            return;
        case Fn::RebuildTensorV2: push(rebuildTensor(a)); return;
        case Fn::RebuildParameter:
        case Fn::RebuildParameterWithState: {
            const size_t n = Fn(fn.i) == Fn::RebuildParameter ? 3 : 4;
            if (a.size() != n || a[0].kind != Kind::Tensor || a[1].kind != Kind::Bool)
                failOp(std::string(Fn(fn.i) == Fn::RebuildParameter ? "_rebuild_parameter"
                                                                    : "_rebuild_parameter_with_state") +
                       " takes (tensor, requires_grad, hooks" + (n == 4 ? ", state)" : ")"));
            if (!dictOf(a[2], "backward_hooks").empty()) failOp("the parameter has backward hooks");
            push(a[0]);
            return;
        }
        case Fn::StorageType:
            failOp("refuses to call 'torch." + std::string(kStorageTypes[fn.ref].name) +
                   "' (storages are read from the archive)");
        }
    }

    void setItems(const std::vector<Value>& items) {
        Value& d = top();
        if (d.kind != Kind::Dict) failOp("sets items on " + described(d.kind) + ", not a dict");
        if (items.size() % 2) failOp("odd number of keys and values");
        for (size_t k = 0; k < items.size(); k += 2)
            if (items[k].kind != Kind::Str) failOp("a dict key is " + described(items[k].kind) + ", not a str");
        hold(items.size());
        auto& target = m_seqs[d.ref];
        target.insert(target.end(), items.begin(), items.end());
    }

    void appendItems(const std::vector<Value>& items) {
        Value& l = top();
        if (l.kind != Kind::List) failOp("appends to " + described(l.kind) + ", not a list");
        hold(items.size());
        auto& target = m_seqs[l.ref];
        target.insert(target.end(), items.begin(), items.end());
    }

    // BUILD on the state dict: torch sets the `_metadata` attribute (module versions), ignored.
    void build() {
        const Value state = pop();
        const Value& target = top();
        if (target.kind != Kind::Dict) failOp("sets the state of " + described(target.kind));
        const auto& s = dictOf(state, "the state");
        // Bounded before it is looked at: a state reused through the memo costs no more each time.
        if (s.size() > 2) failOp("sets " + std::to_string(s.size() / 2) + " attributes of a dict (only '_metadata')");
        for (size_t k = 0; k < s.size(); k += 2)
            if (m_strings[s[k].ref] != "_metadata")
                failOp("sets attribute '" + printable(m_strings[s[k].ref]) +
                       "' of a dict (only '_metadata' is accepted)");
    }

    void step() {
        switch (m_op) {
        case 0x80: {  // PROTO
            const uint8_t v = uint8_t(le(1));
            if (v < 2 || v > 5) failOp("protocol " + std::to_string(v) + " (2 to 5 are read)");
            return;
        }
        case 0x95: {  // FRAME: announces the length of the opcodes that follow, read as usual
            const uint64_t n = le(8);
            if (n > m_b.size() - m_pos)
                fail("truncated: FRAME at byte " + std::to_string(m_at) + " announces " + std::to_string(n) +
                     " bytes, " + std::to_string(m_b.size() - m_pos) + " are left");
            return;
        }
        case '(':
            if (m_marks.size() >= kMaxMarks) failOp("more than " + std::to_string(kMaxMarks) + " open MARKs");
            m_marks.push_back(m_stack.size());
            return;
        case 'N': push({}); return;
        case 0x88: push({Kind::Bool, 1, 0, 0}); return;
        case 0x89: push({Kind::Bool, 0, 0, 0}); return;
        case 'J': push(integer(int32_t(uint32_t(le(4))))); return;
        case 'K': push(integer(int64_t(le(1)))); return;
        case 'M': push(integer(int64_t(le(2)))); return;
        case 0x8a: {  // LONG1: n bytes of little-endian two's complement
            const size_t n = size_t(le(1));
            if (n > 8) failOp("integer of " + std::to_string(n) + " bytes is too large");
            uint64_t v = le(n);
            if (n > 0 && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~uint64_t(0) << (8 * n);  // sign-extend
            push(integer(int64_t(v)));
            return;
        }
        case 'G': {  // BINFLOAT: big-endian double
            const auto s = take(8);
            uint64_t bits = 0;
            for (char c : s) bits = (bits << 8) | static_cast<unsigned char>(c);
            Value v{Kind::Float, 0, 0, 0};
            std::memcpy(&v.f, &bits, 8);
            push(v);
            return;
        }
        case 'X': push(str(take(le(4)))); return;
        case 0x8c: push(str(take(le(1)))); return;
        case 0x8d: push(str(take(le(8)))); return;
        case 'c': {
            const auto module = line();
            const auto name = line();
            global(module, name);
            return;
        }
        case 0x93: {  // STACK_GLOBAL
            const Value name = pop();
            const Value module = pop();
            global(strOf(module, "the module"), strOf(name, "the name"));
            return;
        }
        case ')': push(seq(Kind::Tuple)); return;
        case 0x85:
        case 0x86:
        case 0x87: {
            const size_t n = size_t(m_op - 0x84);
            std::vector<Value> items(n);
            for (size_t k = n; k-- > 0;) items[k] = pop();
            push(seq(Kind::Tuple, std::move(items)));
            return;
        }
        case 't': push(seq(Kind::Tuple, popMark())); return;
        case ']': push(seq(Kind::List)); return;
        case 'a': {
            const Value v = pop();
            appendItems({v});
            return;
        }
        case 'e': appendItems(popMark()); return;
        case '}': push(seq(Kind::Dict)); return;
        case 's': {
            const Value v = pop();
            const Value k = pop();
            setItems({k, v});
            return;
        }
        case 'u': setItems(popMark()); return;
        case 'q': memoPut(le(1)); return;
        case 'r': memoPut(le(4)); return;
        case 0x94: memoPut(m_memo.size()); return;
        case 'h': memoGet(le(1)); return;
        case 'j': memoGet(le(4)); return;
        case 'Q': persistentId(); return;
        case 'R': reduce(); return;
        case 'b': build(); return;
        default: break;
        }
        if (const char* name = opName(m_op))
            fail(std::string("unsupported opcode ") + name + " (" + hex(m_op) + ") at byte " + std::to_string(m_at) +
                 ": torch.save writes no such opcode for a state dict");
        fail("unknown opcode " + hex(m_op) + " at byte " + std::to_string(m_at) + " (not a pickle, or a damaged one)");
    }

    std::vector<PickledTensor> stateDict(const Value& top) {
        if (top.kind != Kind::Dict) fail("holds " + described(top.kind) + ", not a state dict (a dict of tensors)");
        const auto& items = m_seqs[top.ref];
        std::vector<PickledTensor> out;
        std::set<std::string> names;
        for (size_t k = 0; k + 1 < items.size(); k += 2) {
            const std::string& name = m_strings[items[k].ref];
            const Value& v = items[k + 1];
            if (v.kind != Kind::Tensor)
                fail("entry '" + printable(name) + "' is " + described(v.kind) + ", not a tensor" +
                     (v.kind == Kind::Dict ? " (a training checkpoint? only a state dict of tensors is read)" : ""));
            if (!names.insert(name).second) fail("tensor '" + printable(name) + "' appears twice");
            out.push_back(m_tensors[v.ref]);
            out.back().name = name;
        }
        return out;
    }
};

}  // namespace

std::vector<PickledTensor> parseStateDictPickle(const std::string& bytes, const std::string& origin) {
    return Unpickler(bytes, origin).run();
}

uint64_t storageBytesNeeded(const PickledTensor& t) {
    uint64_t last = uint64_t(t.storage_offset);
    for (size_t k = 0; k < t.shape.size(); ++k) {
        if (t.shape[k] == 0) return 0;
        last += uint64_t(t.shape[k] - 1) * uint64_t(t.stride[k]);
    }
    return (last + 1) * safetensors::dtypeSize(t.dtype);
}

}  // namespace attnlab::package
