// The pytorch_model.bin reader: the restricted unpickler on hand-made pickles, and readTorchBin
// on files torch.save wrote (Debian's python3-torch, run as /usr/bin/python3), with the values
// read back compared to what Python wrote; then each file it must refuse, by its message.
// The tests that need python3-torch are skipped, with a message, where it is not installed,
// except under CI (CI=true), where that fails.
#include "formats/torch/torch_bin.h"
#include "formats/torch/torch_pickle.h"

#include <attnlab/errors.h>

#include "memory_limit.h"
#include "python_probe.h"

#include <QtTest/QtTest>

#include <nlohmann/json.hpp>

#include <zlib.h>

#include <fstream>

namespace pkg = attnlab::package;

namespace {

// Writes pickle opcodes by hand (protocol 2, as torch.save does).
struct Pickle {
    std::string b = std::string("\x80\x02", 2);
    Pickle& op(char c) {
        b += c;
        return *this;
    }
    Pickle& str(const std::string& s) {
        b += 'X';
        for (int i = 0; i < 4; ++i) b += char((s.size() >> (8 * i)) & 0xff);
        b += s;
        return *this;
    }
    Pickle& integer(int64_t v) {  // LONG1 of 8 bytes
        b += '\x8a';
        b += char(8);
        for (int i = 0; i < 8; ++i) b += char((uint64_t(v) >> (8 * i)) & 0xff);
        return *this;
    }
    Pickle& global(const std::string& module, const std::string& name) {
        b += 'c' + module + '\n' + name + '\n';
        return *this;
    }
    Pickle& ints(const std::vector<int64_t>& v) {
        op('(');
        for (auto x : v) integer(x);
        return op('t');
    }
    Pickle& orderedDict() { return global("collections", "OrderedDict").op(')').op('R'); }
    // _rebuild_tensor_v2(('storage', torch.<type>, key, 'cpu', numel), offset, size, stride, False,
    // OrderedDict()[, metadata]); `metadata` is the opcodes of torch 2.x's 7th argument, a dict.
    Pickle& tensor(const std::string& type, const std::string& key, int64_t numel, int64_t offset,
                   const std::vector<int64_t>& size, const std::vector<int64_t>& stride,
                   const std::string& metadata = "") {
        global("torch._utils", "_rebuild_tensor_v2").op('(');
        op('(').str("storage").global("torch", type).str(key).str("cpu").integer(numel).op('t').op('Q');
        integer(offset).ints(size).ints(stride).op('\x89').orderedDict();
        b += metadata;
        return op('t').op('R');
    }
    std::string stop() const { return b + '.'; }
};

// A state dict {name: tensor(...)} with one F32 tensor of the given geometry.
std::string oneTensor(const std::string& name, int64_t offset, const std::vector<int64_t>& size,
                      const std::vector<int64_t>& stride, const std::string& type = "FloatStorage",
                      const std::string& key = "0") {
    Pickle p;
    p.orderedDict().op('(').str(name).tensor(type, key, 16, offset, size, stride).op('u');
    return p.stop();
}

std::string readAll(const QString& path) {
    std::ifstream in(path.toStdString(), std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The message readTorchBin throws for `path`, or "" when it reads the file.
QString readError(const QString& path) {
    try {
        (void)pkg::readTorchBin(path.toStdString());
    } catch (const attnlab::PackageError& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

QString pickleError(const std::string& bytes) {
    try {
        (void)pkg::parseStateDictPickle(bytes, "t.pkl");
    } catch (const attnlab::PackageError& e) {
        return QString::fromStdString(e.what());
    }
    return {};
}

// A zip archive laid out as torch.save lays one out, built here byte by byte so that its end can
// be forged (APPNOTE.TXT 4.3: local headers and data, the central directory, the end records).
void put(std::string& b, uint64_t v, int n) {
    for (int i = 0; i < n; ++i) b += char((v >> (8 * i)) & 0xff);
}

struct ZipRecord {
    std::string name;  // under "archive/"
    std::string data;  // as stored: the deflated stream where `method` is 8
    uint16_t method = 0;
    uint64_t size = 0;  // declared uncompressed size
    uint32_t crc = 0;
    uint64_t offset = 0;  // of its local header, set by ForgedZip::add
    bool zip64 = false;   // sizes in a zip64 extra field, all ones in the 32-bit fields
};

ZipRecord stored(const std::string& name, const std::string& data) {
    return {name, data, 0, data.size(),
            uint32_t(crc32(0, reinterpret_cast<const Bytef*>(data.data()), uInt(data.size())))};
}

struct ForgedZip {
    std::string bytes;
    void add(ZipRecord& r) {
        r.offset = bytes.size();
        const std::string name = "archive/" + r.name;
        put(bytes, 0x04034b50, 4), put(bytes, 20, 2), put(bytes, 0, 2), put(bytes, r.method, 2), put(bytes, 0, 4);
        put(bytes, r.crc, 4), put(bytes, r.data.size(), 4), put(bytes, r.size, 4), put(bytes, name.size(), 2);
        put(bytes, 0, 2);
        bytes += name + r.data;
    }
    // The central directory's entry for `r`.
    static std::string entry(const ZipRecord& r) {
        const std::string name = "archive/" + r.name;
        std::string e, extra;
        if (r.zip64) put(extra, 1, 2), put(extra, 16, 2), put(extra, r.size, 8), put(extra, r.data.size(), 8);
        put(e, 0x02014b50, 4), put(e, 45, 2), put(e, 45, 2), put(e, 0, 2), put(e, r.method, 2), put(e, 0, 4);
        put(e, r.crc, 4), put(e, r.zip64 ? 0xFFFFFFFFu : r.data.size(), 4), put(e, r.zip64 ? 0xFFFFFFFFu : r.size, 4);
        put(e, name.size(), 2), put(e, extra.size(), 2), put(e, 0, 2), put(e, 0, 2), put(e, 0, 2), put(e, 0, 4);
        put(e, r.offset, 4);
        return e + name + extra;
    }
    // Appends a central directory of `records` and returns its offset.
    uint64_t directory(const std::vector<ZipRecord>& records) {
        const uint64_t at = bytes.size();
        for (const auto& r : records) bytes += entry(r);
        return at;
    }
    void end(uint64_t entries, uint64_t cd_at, uint64_t cd_size) {
        put(bytes, 0x06054b50, 4), put(bytes, 0, 4), put(bytes, entries, 2), put(bytes, entries, 2);
        put(bytes, cd_size, 4), put(bytes, cd_at, 4), put(bytes, 0, 2);
    }
    void zip64End(uint64_t entries, uint64_t cd_at, uint64_t cd_size) {
        const uint64_t at = bytes.size();
        put(bytes, 0x06064b50, 4), put(bytes, 44, 8), put(bytes, 45, 2), put(bytes, 45, 2), put(bytes, 0, 8);
        put(bytes, entries, 8), put(bytes, entries, 8), put(bytes, cd_size, 8), put(bytes, cd_at, 8);
        put(bytes, 0x07064b50, 4), put(bytes, 0, 4), put(bytes, at, 8), put(bytes, 1, 4);  // the locator
    }
};

// 63 x 64 MiB of zeros (3.9 GB, under 4 GiB so that the 32-bit sizes hold it) as one raw deflate
// stream of some 4 MB: 64 MiB deflated once and ended by a full flush, so that each copy stands
// alone, repeated, then an empty final block. What the old reader inflated whole.
ZipRecord bombRecord(const std::string& name) {
    const std::string zeros(size_t(64) << 20, '\0');
    z_stream z{};
    deflateInit2(&z, 9, Z_DEFLATED, -15, 9, Z_DEFAULT_STRATEGY);
    std::string chunk(deflateBound(&z, uLong(zeros.size())) + 64, '\0');
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(zeros.data()));
    z.avail_in = uInt(zeros.size());
    z.next_out = reinterpret_cast<Bytef*>(chunk.data());
    z.avail_out = uInt(chunk.size());
    deflate(&z, Z_FULL_FLUSH);
    chunk.resize(chunk.size() - z.avail_out);
    deflateEnd(&z);
    constexpr int kCopies = 63;
    ZipRecord r{name, "", 8, uint64_t(kCopies) * zeros.size(), 0};
    const uLong piece = crc32(0, reinterpret_cast<const Bytef*>(zeros.data()), uInt(zeros.size()));
    for (int i = 0; i < kCopies; ++i) {
        r.data += chunk;
        r.crc = uint32_t(i == 0 ? piece : crc32_combine(r.crc, piece, z_off_t(zeros.size())));
    }
    r.data += std::string("\x03\x00", 2);  // a final fixed-Huffman block holding only its end
    return r;
}

// How a forged file ends.
enum class ForgedEnd { Plain, TrailingSignature, Zip64, Zip64WithDecoy };

// A state dict of one tensor on storage "1", the 3.9 GB deflated record: the central directory
// the reader reads lists it; a decoy one (Zip64WithDecoy) lists only the harmless records.
std::string disguisedBomb(ForgedEnd how, const ZipRecord& bomb) {
    std::vector<ZipRecord> records = {stored("version", "3\n"),
                                      stored("data.pkl", oneTensor("w", 0, {4, 4}, {4, 1}, "FloatStorage", "1")), bomb};
    ForgedZip z;
    for (auto& r : records) z.add(r);
    if (how == ForgedEnd::Zip64WithDecoy) {
        const std::vector<ZipRecord> harmless(records.begin(), records.begin() + 2);
        const uint64_t decoy_at = z.directory(harmless);
        const uint64_t decoy_size = z.bytes.size() - decoy_at;
        const uint64_t cd_at = z.directory(records);
        z.zip64End(records.size(), cd_at, z.bytes.size() - cd_at);
        z.end(harmless.size(), decoy_at, decoy_size);
        return z.bytes;
    }
    const uint64_t cd_at = z.directory(records), cd_size = z.bytes.size() - cd_at;
    if (how == ForgedEnd::Zip64) {
        z.zip64End(records.size(), cd_at, cd_size);
        z.end(0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF);
        return z.bytes;
    }
    z.end(records.size(), cd_at, cd_size);
    if (how == ForgedEnd::TrailingSignature) z.bytes += std::string("PK\x05\x06\0\0\0\0\0\0", 10);
    return z.bytes;
}

void writeFile(const QString& path, const std::string& bytes) {
    std::ofstream out(path.toStdString(), std::ios::binary);
    out.write(bytes.data(), std::streamsize(bytes.size()));
}

// Writes every fixture into argv[1]: what torch.save wrote, and expect.json with each tensor's
// dtype, shape and values (logical order, as Python sees them).
const char* kMakeFixtures = R"(
import collections, json, os, pickle, sys, zipfile, torch
d = sys.argv[1]
p = lambda name: os.path.join(d, name)
torch.manual_seed(3)
sd = collections.OrderedDict()
sd["f32"] = torch.randn(3, 4)
sd["f16"] = torch.randn(5).half()
sd["bf16"] = torch.randn(2, 3).bfloat16()
sd["i64"] = torch.tensor([1, -2, 2**40, -2**62, 2**62], dtype=torch.int64)
sd["transposed"] = torch.randn(4, 3).t()        # a non-contiguous view: stride (1, 3)
sd["offset"] = torch.randn(10)[5:9]              # a view at storage offset 5 of a larger storage
w = torch.randn(6, 2)
sd["emb.weight"] = w
sd["prj.weight"] = w.detach()                    # another tensor on the same storage (tied)
sd["same.weight"] = w                            # the same tensor object again (a memo reference)
sd["param"] = torch.nn.Parameter(torch.randn(2))
sd["mask"] = torch.tensor([True, False, True])
sd["scalar"] = torch.tensor(2.5)
sd["empty"] = torch.zeros(0, 3)
sd._metadata = collections.OrderedDict([("", {"version": 1}), ("emb", {"version": 2})])
names = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.int64: "I64", torch.bool: "BOOL"}
expect = collections.OrderedDict()
for k, v in sd.items():
    v = v.detach()
    values = v.long() if v.dtype in (torch.int64, torch.bool) else v.double()
    expect[k] = {"dtype": names[v.dtype], "shape": list(v.shape), "values": values.flatten().tolist()}
json.dump(expect, open(p("expect.json"), "w"))
torch.save(sd, p("state.bin"))
with zipfile.ZipFile(p("state.bin")) as z:
    open(p("state.pkl"), "wb").write(z.read([n for n in z.namelist() if n.endswith("/data.pkl")][0]))
torch.save(sd, p("protocol4.bin"), pickle_protocol=4)
torch.save(sd, p("legacy.bin"), _use_new_zipfile_serialization=False)
data = open(p("state.bin"), "rb").read()
open(p("truncated.bin"), "wb").write(data[: len(data) // 2])
# A deflated record of 64 MB zeros in a few KB: what a zip bomb looks like to the reader.
with zipfile.ZipFile(p("state.bin")) as zin, zipfile.ZipFile(p("bomb.bin"), "w", zipfile.ZIP_DEFLATED) as zout:
    for info in zin.infolist():
        zout.writestr(info.filename, zin.read(info.filename))
    zout.writestr(zin.namelist()[0].split("/")[0] + "/data/99", bytes(64 << 20))

def rewrite(src, dst, replace, add={}):
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            for suffix, new in replace.items():
                if info.filename.endswith(suffix):
                    data = new
            zout.writestr(info.filename, data)
        prefix = zin.namelist()[0].split("/")[0]
        for name, data in add.items():
            zout.writestr(prefix + "/" + name, data)

class Evil:
    def __reduce__(self):
        return (os.system, ("touch " + p("pwned"),))

torch.save(collections.OrderedDict(big=torch.randn(4, 4)), p("small.bin"))
rewrite(p("small.bin"), p("evil.bin"), {"/data.pkl": pickle.dumps(collections.OrderedDict(w=Evil()), protocol=2)})
rewrite(p("small.bin"), p("short.bin"), {"/data/0": torch.randn(4).numpy().tobytes()})
rewrite(p("small.bin"), p("little.bin"), {}, {"byteorder": b"little"})  # as torch 2.x writes
rewrite(p("small.bin"), p("big-endian.bin"), {}, {"byteorder": b"big"})
)";

}  // namespace

class TestTorchBin : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    // the unpickler alone, on hand-made bytes
    void parsesHandMadeStateDict();
    void refusesMalformedPickle_data();
    void refusesMalformedPickle();
    // files torch.save wrote
    void readsStateDict();
    void readsViews();
    void readsTiedWeights();
    void acceptsMetadataAttribute();
    void readsProtocol4();
    void refusesLegacyFormat();
    void refusesTruncatedFile();
    void refusesCompressedRecords();
    void refusesForbiddenGlobal();
    void refusesShortStorage();
    void checksByteOrder();
    void refusesOtherFiles();
    // files forged here, read under a memory limit
    void refusesDisguisedZipBombs();
    void refusesSizesBeyondTheFile();
    void refusesAmplifyingPickle();

private:
    bool havePython();
    void checkAgainstExpected(const QString& file);
    QTemporaryDir m_dir;
    bool m_python = false;
    QString m_python_problem;
};

#define REQUIRE_PYTHON()                                                                                    \
    do {                                                                                                    \
        if (!havePython()) {                                                                                \
            if (qEnvironmentVariable("CI") == "true") QFAIL(qPrintable("CI=true but " + m_python_problem)); \
            QSKIP(qPrintable(m_python_problem + " (apt-get install python3-torch): test skipped"));         \
        }                                                                                                   \
    } while (0)

void TestTorchBin::initTestCase() {
    QVERIFY(m_dir.isValid());
    m_python_problem = attnlab::testing::pythonProblem("/usr/bin/python3", {"torch"});
    if (!m_python_problem.isEmpty()) return;
    QProcess make;
    make.start("/usr/bin/python3", {"-c", kMakeFixtures, m_dir.path()});
    QVERIFY(make.waitForFinished(120000));
    QVERIFY2(make.exitCode() == 0, make.readAllStandardError().constData());
    m_python = true;
}

bool TestTorchBin::havePython() { return m_python; }

void TestTorchBin::parsesHandMadeStateDict() {
    Pickle p;
    p.orderedDict().op('q').op('\x00').op('(');
    p.str("a").tensor("HalfStorage", "7", 12, 2, {2, 3}, {1, 2});
    const std::string unset = Pickle().op('}').str("neg").op('\x89').op('s').b.substr(2);
    p.str("b").tensor("LongStorage", "k_1", 3, 0, {}, {}, unset);
    p.str("c").global("torch._utils", "_rebuild_parameter").op('(');
    p.tensor("HalfStorage", "7", 12, 0, {0, 5}, {5, 1}).op('\x88').orderedDict().op('t').op('R');
    p.op('u');
    // BUILD with the _metadata attribute, as torch writes it
    p.op('}')
        .str("_metadata")
        .op('}')
        .str("")
        .op('}')
        .str("version")
        .op('K')
        .op('\x01')
        .op('s')
        .op('s')
        .op('s')
        .op('b');
    const auto ts = pkg::parseStateDictPickle(p.stop(), "t.pkl");
    QCOMPARE(ts.size(), size_t(3));
    QCOMPARE(ts[0].name, std::string("a"));
    QCOMPARE(ts[0].storage_key, std::string("7"));
    QCOMPARE(ts[0].dtype, std::string("F16"));
    QCOMPARE(ts[0].shape, (std::vector<int64_t>{2, 3}));
    QCOMPARE(ts[0].stride, (std::vector<int64_t>{1, 2}));
    QCOMPARE(ts[0].storage_offset, int64_t(2));
    QCOMPARE(pkg::storageBytesNeeded(ts[0]), uint64_t((2 + 1 + 1 + 4) * 2));
    QCOMPARE(ts[1].dtype, std::string("I64"));
    QVERIFY(ts[1].shape.empty());
    QCOMPARE(pkg::storageBytesNeeded(ts[1]), uint64_t(8));
    QCOMPARE(ts[2].name, std::string("c"));
    QCOMPARE(pkg::storageBytesNeeded(ts[2]), uint64_t(0));
    // an empty plain dict is an empty state dict
    QCOMPARE(pkg::parseStateDictPickle(Pickle().op('}').stop(), "t.pkl").size(), size_t(0));
}

void TestTorchBin::refusesMalformedPickle_data() {
    QTest::addColumn<QByteArray>("bytes");
    QTest::addColumn<QString>("message");
    auto row = [](const char* name, const std::string& b, const char* msg) {
        QTest::newRow(name) << QByteArray(b.data(), int(b.size())) << QString(msg);
    };
    const std::string h("\x80\x02", 2);
    row("empty", "", "t.pkl: is empty");
    row("unknown opcode", h + "\xff", "t.pkl: unknown opcode 0xff at byte 2");
    row("unsupported opcode", h + "i__main__\nX\n", "t.pkl: unsupported opcode INST (0x69) at byte 2");
    row("protocol 1", "\x80\x01}.", "PROTO at byte 0: protocol 1 (2 to 5 are read)");
    row("no stop", h + "}", "t.pkl: truncated: ends after 3 bytes without a STOP opcode");
    row("truncated argument", h + "}q", "t.pkl: truncated: BINPUT at byte 3 needs 1 bytes, 0 are left");
    row("string past the end", h + "X\xff\xff\xff\x7f" + "abc",
        "t.pkl: truncated: BINUNICODE at byte 2 needs 2147483647 bytes, 3 are left");
    row("stack underflow", h + "s.", "t.pkl: SETITEM at byte 2: stack underflow");
    row("underflow below a mark", h + "}(s.", "t.pkl: SETITEM at byte 4: stack underflow");
    row("stop on empty stack", h + ".", "t.pkl: STOP at byte 2: stack underflow");
    row("no mark", h + "}u.", "t.pkl: SETITEMS at byte 3: no MARK to pop to");
    row("too many marks", h + std::string(300, '('), "more than 256 open MARKs");
    row("undefined memo", h + "h\x05.", "t.pkl: BINGET at byte 2: memo entry 5 is not defined");
    row("trailing bytes", h + "}.junk", "t.pkl: 4 bytes follow the STOP opcode at byte 3");
    row("bad utf-8", h + "X" + std::string("\x01\0\0\0", 4) + "\xff",
        "BINUNICODE at byte 2: string is not valid UTF-8");
    row("long integer", h + "\x8a\x09" + std::string(9, '\x01'), "LONG1 at byte 2: integer of 9 bytes is too large");
    row("os.system", Pickle().global("posix", "system").op('(').str("true").op('t').op('R').stop(),
        "t.pkl: refuses global 'posix.system' (only a state dict's tensors are read)");
    row("global without end of line", h + "ccollections", "t.pkl: truncated: GLOBAL at byte 2 has no end of line");
    row("long global name", h + "c" + std::string(300, 'a') + "\nb\n.", "GLOBAL at byte 2: name longer than 256 bytes");
    row("eval", h + "cbuiltins\neval\n.", "t.pkl: refuses global 'builtins.eval'");
    row("stack global", h + "\x8c\x02os\x8c\x06system\x93.", "t.pkl: refuses global 'os.system'");
    row("complex storage", h + "ctorch\nComplexFloatStorage\n.", "'torch.ComplexFloatStorage' are not supported");
    row("calling a storage", h + "ctorch\nFloatStorage\n)R.", "refuses to call 'torch.FloatStorage'");
    row("not a dict", h + "].", "t.pkl: holds a list, not a state dict");
    row("not a tensor", Pickle().op('}').str("a").op('K').op('\x01').op('s').stop(),
        "t.pkl: entry 'a' is an int, not a tensor");
    row("int key", h + "}K\x01K\x01s.", "SETITEM at byte 7: a dict key is an int, not a str");
    row("nested checkpoint", Pickle().op('}').str("model").op('}').op('s').stop(),
        "entry 'model' is a dict, not a tensor (a training");
    {
        Pickle p;
        p.orderedDict().op('(').str("a").tensor("FloatStorage", "0", 4, 0, {2}, {1});
        p.str("a").tensor("FloatStorage", "0", 4, 2, {2}, {1}).op('u');
        row("duplicate name", p.stop(), "t.pkl: tensor 'a' appears twice");
    }
    {
        Pickle p;
        p.orderedDict().op('(').str("a").tensor("FloatStorage", "0", 4, 0, {2}, {1});
        p.str("b").tensor("HalfStorage", "0", 4, 0, {2}, {1}).op('u');
        row("one storage, two dtypes", p.stop(), "storage '0' is declared both as F32 and as F16");
    }
    row("shape overflow", oneTensor("w", 0, {int64_t(1) << 40, int64_t(1) << 40}, {1, 1}),
        "shape [1099511627776, 1099511627776] has too many elements");
    row("extent overflow", oneTensor("w", 0, {3}, {int64_t(1) << 61}),
        "size [3], stride [2305843009213693952] and offset 0 reach past any storage");
    {
        Pickle p;
        const std::string set = Pickle().op('}').str("neg").op('\x88').op('s').b.substr(2);
        p.orderedDict().op('(').str("a").tensor("FloatStorage", "0", 4, 0, {2}, {1}, set).op('u');
        row("metadata bit set", p.stop(), "tensor metadata 'neg' is set (not supported)");
    }
    row("negative offset", oneTensor("w", -1, {2}, {1}), "negative storage offset -1");
    row("negative size", oneTensor("w", 0, {-2}, {1}), "the size has a negative entry -2");
    row("size and stride differ", oneTensor("w", 0, {2, 2}, {1}), "size has 2 dimensions but stride 1");
    row("too many dimensions", oneTensor("w", 0, std::vector<int64_t>(33, 1), std::vector<int64_t>(33, 1)),
        "the size has more than 32 dimensions");
    row("storage key with a path", oneTensor("w", 0, {2}, {1}, "FloatStorage", "../x"),
        "storage key '../x' is not 1 to 64 letters, digits or underscores");
    {
        Pickle p;
        p.orderedDict().op('}').str("evil").op('N').op('s').op('b');
        row("other attribute", p.stop(), "sets attribute 'evil' of a dict (only '_metadata' is accepted)");
    }
    {
        Pickle p;
        p.global("collections", "OrderedDict").op('(').op(']').op('t').op('R');
        row("OrderedDict with arguments", p.stop(), "OrderedDict is called with arguments");
    }
    {
        Pickle p;  // a persistent id that is not a storage
        p.orderedDict().op('(').str("w").str("x").op('Q').op('u');
        row("persistent id", p.stop(), "BINPERSID at byte 42: the persistent id is a str, not a tuple");
    }
}

void TestTorchBin::refusesMalformedPickle() {
    QFETCH(QByteArray, bytes);
    QFETCH(QString, message);
    const QString error = pickleError(bytes.toStdString());
    QVERIFY2(error.contains(message), qPrintable("got: " + (error.isEmpty() ? "no error" : error)));
}

void TestTorchBin::checkAgainstExpected(const QString& file) {
    const auto tensors = pkg::readTorchBin(m_dir.filePath(file).toStdString());
    const auto expect = nlohmann::ordered_json::parse(readAll(m_dir.filePath("expect.json")));
    QCOMPARE(tensors.size(), expect.size());
    size_t i = 0;
    for (auto it = expect.begin(); it != expect.end(); ++it, ++i) {
        const auto& [name, t] = tensors[i];
        QCOMPARE(name, it.key());
        const auto& e = it.value();
        const std::string dtype = e["dtype"];
        const std::map<std::string, torch::Dtype> dtypes = {{"F32", torch::kFloat},
                                                            {"F16", torch::kHalf},
                                                            {"BF16", torch::kBFloat16},
                                                            {"I64", torch::kLong},
                                                            {"BOOL", torch::kBool}};
        QVERIFY2(t.scalar_type() == dtypes.at(dtype), qPrintable(QString::fromStdString(name)));
        QCOMPARE(t.sizes().vec(), e["shape"].get<std::vector<int64_t>>());
        QVERIFY(t.is_contiguous());
        QVERIFY(t.device().is_cpu());
        // a tensor of its own: its storage holds just its elements
        QCOMPARE(t.storage().nbytes(), size_t(t.numel() * t.element_size()));
        const torch::Tensor flat = t.flatten();
        const auto& values = e["values"];
        QCOMPARE(size_t(flat.numel()), values.size());
        for (size_t k = 0; k < values.size(); ++k) {
            if (dtype == "I64" || dtype == "BOOL")
                QCOMPARE(flat[int64_t(k)].to(torch::kLong).item<int64_t>(), values[k].get<int64_t>());
            else  // exact: F16 and BF16 widen to double without rounding, as Python's .double() does
                QCOMPARE(flat[int64_t(k)].to(torch::kDouble).item<double>(), values[k].get<double>());
        }
    }
}

void TestTorchBin::readsStateDict() {
    REQUIRE_PYTHON();
    checkAgainstExpected("state.bin");
}

void TestTorchBin::readsViews() {
    REQUIRE_PYTHON();
    // what the file says: the transposed view has stride (1, 3), the offset view offset 5
    const auto pickled = pkg::parseStateDictPickle(readAll(m_dir.filePath("state.pkl")), "state.pkl");
    std::map<std::string, pkg::PickledTensor> by;
    for (const auto& t : pickled) by[t.name] = t;
    QCOMPARE(by.at("transposed").stride, (std::vector<int64_t>{1, 3}));
    QCOMPARE(by.at("offset").storage_offset, int64_t(5));
    QCOMPARE(pkg::storageBytesNeeded(by.at("offset")), uint64_t(9 * 4));
    // and their values, in logical order, are checked against Python's by readsStateDict
    const auto tensors = pkg::readTorchBin(m_dir.filePath("state.bin").toStdString());
    for (const auto& [name, t] : tensors)
        if (name == "transposed" || name == "offset") QVERIFY(t.is_contiguous());
}

void TestTorchBin::readsTiedWeights() {
    REQUIRE_PYTHON();
    const auto pickled = pkg::parseStateDictPickle(readAll(m_dir.filePath("state.pkl")), "state.pkl");
    std::map<std::string, pkg::PickledTensor> by;
    for (const auto& t : pickled) by[t.name] = t;
    QCOMPARE(by.at("prj.weight").storage_key, by.at("emb.weight").storage_key);
    QCOMPARE(by.at("same.weight").storage_key, by.at("emb.weight").storage_key);
    std::map<std::string, torch::Tensor> t;
    for (auto& [name, tensor] : pkg::readTorchBin(m_dir.filePath("state.bin").toStdString())) t[name] = tensor;
    QVERIFY(torch::equal(t.at("emb.weight"), t.at("prj.weight")));
    QVERIFY(torch::equal(t.at("emb.weight"), t.at("same.weight")));
    // separate tensors: writing one leaves the others alone
    QVERIFY(t.at("emb.weight").data_ptr() != t.at("prj.weight").data_ptr());
    t.at("prj.weight").fill_(0);
    QVERIFY(!torch::equal(t.at("emb.weight"), t.at("prj.weight")));
}

void TestTorchBin::acceptsMetadataAttribute() {
    REQUIRE_PYTHON();
    const std::string pickle = readAll(m_dir.filePath("state.pkl"));
    // torch wrote the attribute: BUILD ('b') of {'_metadata': ...} just before STOP
    QVERIFY(pickle.find("_metadata") != std::string::npos);
    QCOMPARE(pickle.substr(pickle.size() - 2), std::string("b."));
    QCOMPARE(pkg::parseStateDictPickle(pickle, "state.pkl").size(), size_t(13));
}

void TestTorchBin::readsProtocol4() {
    REQUIRE_PYTHON();  // FRAME, SHORT_BINUNICODE, MEMOIZE, STACK_GLOBAL
    checkAgainstExpected("protocol4.bin");
}

void TestTorchBin::refusesLegacyFormat() {
    REQUIRE_PYTHON();
    const QString e = readError(m_dir.filePath("legacy.bin"));
    QVERIFY2(e.startsWith(m_dir.filePath("legacy.bin") + ": is in PyTorch's legacy (non-zip) format"), qPrintable(e));
    QVERIFY2(e.contains("torch.save(torch.load('pytorch_model.bin', weights_only=True), 'pytorch_model.bin')"),
             qPrintable(e));
}

void TestTorchBin::refusesCompressedRecords() {
    REQUIRE_PYTHON();
    const QString e = readError(m_dir.filePath("bomb.bin"));
    QVERIFY2(e.startsWith(m_dir.filePath("bomb.bin") + ": record '") && e.contains("is compressed"), qPrintable(e));
}

void TestTorchBin::refusesTruncatedFile() {
    REQUIRE_PYTHON();
    const QString e = readError(m_dir.filePath("truncated.bin"));
    QVERIFY2(e.startsWith(m_dir.filePath("truncated.bin") + ": is truncated or damaged"), qPrintable(e));
}

void TestTorchBin::refusesForbiddenGlobal() {
    REQUIRE_PYTHON();
    const QString e = readError(m_dir.filePath("evil.bin"));
    QCOMPARE(e, m_dir.filePath("evil.bin") +
                    ": data.pkl: refuses global 'posix.system' (only a state dict's tensors are read)");
    QVERIFY2(!QFile::exists(m_dir.filePath("pwned")), "the pickle's code ran");
}

void TestTorchBin::refusesShortStorage() {
    REQUIRE_PYTHON();
    QVERIFY(readError(m_dir.filePath("small.bin")).isEmpty());
    const QString e = readError(m_dir.filePath("short.bin"));
    QVERIFY2(e.startsWith(m_dir.filePath("short.bin") + ": tensor 'big' (F32, shape [4, 4], stride [4, 1], offset 0) "
                                                        "needs 64 bytes of storage data/0, which holds 16"),
             qPrintable(e));
}

void TestTorchBin::checksByteOrder() {
    REQUIRE_PYTHON();
    QVERIFY2(readError(m_dir.filePath("little.bin")).isEmpty(), qPrintable(readError(m_dir.filePath("little.bin"))));
    const QString big = m_dir.filePath("big-endian.bin");
    QCOMPARE(readError(big), big + ": stores its tensors in 'big' byte order (only little-endian is read)");
}

void TestTorchBin::refusesOtherFiles() {
    const QString missing = m_dir.filePath("missing.bin");
    QCOMPARE(readError(missing), missing + ": missing file");
    const QString text = m_dir.filePath("text.bin");
    {
        QFile f(text);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("not a checkpoint at all");
    }
    QVERIFY2(readError(text).startsWith(text + ": is not a PyTorch checkpoint"), qPrintable(readError(text)));
    const QString pickle = m_dir.filePath("bare.pkl");
    {
        QFile f(pickle);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("\x80\x02}q\x00.");
    }
    QVERIFY2(readError(pickle).startsWith(pickle + ": is a bare pickle"), qPrintable(readError(pickle)));
}

// The issue's disguised zip bombs: a 4 MB file whose one deflated record declares 3.9 GB, its
// central directory found past a trailing end signature with fewer than 22 bytes after it, or
// through a zip64 end record (with and without a decoy classic one). Each is refused before
// anything inflates; read with 1 GiB of address space to spare, where the old reader, which
// allocated the 3.9 GB and inflated them, failed for memory (or, without the limit, read it).
void TestTorchBin::refusesDisguisedZipBombs() {
    const ZipRecord bomb = bombRecord("data/1");
    QVERIFY2(bomb.data.size() < (size_t(6) << 20), qPrintable(QString::number(bomb.data.size())));
    const std::pair<ForgedEnd, const char*> ends[] = {{ForgedEnd::Plain, "plain.bin"},
                                                      {ForgedEnd::TrailingSignature, "trailing.bin"},
                                                      {ForgedEnd::Zip64, "zip64.bin"},
                                                      {ForgedEnd::Zip64WithDecoy, "decoy.bin"}};
    for (const auto& [how, name] : ends) {
        const QString path = m_dir.filePath(name);
        writeFile(path, disguisedBomb(how, bomb));
        const AddressSpaceLimit limit(uint64_t(1) << 30);
        QVERIFY(limit.active());
        const QString e = readError(path);
        QVERIFY2(e.startsWith(path + ": record 'archive/data/1' is compressed; torch.save stores records uncompressed"),
                 qPrintable(e));
    }
}

// Stored records that claim more than the file holds: a zip64 size of 3.9 GB on a 64-byte record
// (LibTorch allocated the declared size before reading), records that overlap (40 central
// directory entries on one record's bytes), and one storage named by 40 tensors, each copied.
void TestTorchBin::refusesSizesBeyondTheFile() {
    const AddressSpaceLimit limit(uint64_t(1) << 30);
    QVERIFY(limit.active());
    ZipRecord claim = stored("data/1", std::string(64, '\0'));
    claim.size = uint64_t(63) << 26;
    claim.zip64 = true;
    {
        std::vector<ZipRecord> records = {stored("version", "3\n"),
                                          stored("data.pkl", oneTensor("w", 0, {4, 4}, {4, 1}, "FloatStorage", "1")),
                                          claim};
        ForgedZip z;
        for (auto& r : records) z.add(r);
        const uint64_t at = z.directory(records);
        z.end(records.size(), at, z.bytes.size() - at);
        const QString path = m_dir.filePath("claims.bin");
        writeFile(path, z.bytes);
        const QString e = readError(path);
        QVERIFY2(e.startsWith(path + ": record 'archive/data/1' claims 4227858432 bytes, more than the file's "),
                 qPrintable(e));
    }
    constexpr int kTensors = 40;
    constexpr int64_t kFloats = 1 << 16;  // 256 KiB a storage
    auto forged = [&](bool overlap) {
        Pickle p;
        p.orderedDict().op('(');
        for (int i = 0; i < kTensors; ++i)
            p.str("w" + std::to_string(i))
                .tensor("FloatStorage", overlap ? std::to_string(i) : "0", kFloats, 0, {kFloats}, {1});
        std::vector<ZipRecord> records = {stored("version", "3\n"), stored("data.pkl", p.op('u').stop()),
                                          stored("data/0", std::string(size_t(kFloats) * 4, '\0'))};
        ForgedZip z;
        for (auto& r : records) z.add(r);
        for (int i = 1; overlap && i < kTensors; ++i) {  // more entries on data/0's bytes
            records.push_back(records[2]);
            records.back().name = "data/" + std::to_string(i);
        }
        const uint64_t at = z.directory(records);
        z.end(records.size(), at, z.bytes.size() - at);
        return z.bytes;
    };
    const QString overlapping = m_dir.filePath("overlap.bin");
    writeFile(overlapping, forged(true));
    QString e = readError(overlapping);
    QVERIFY2(e.startsWith(overlapping + ": its records claim ") && e.contains("records overlap"), qPrintable(e));
    const QString shared = m_dir.filePath("shared.bin");
    writeFile(shared, forged(false));
    e = readError(shared);
    QVERIFY2(e.startsWith(shared + ": its tensors up to tensor 'w") &&
                 e.contains("more than 8 times the file's size (one storage shared by too many tensors)"),
             qPrintable(e));
    // A stride of 0 repeats one stored float a billion times: 4 bytes of storage, 4 GB copied.
    Pickle p;
    p.orderedDict().op('(');
    p.str("w").tensor("FloatStorage", "0", 1, 0, {int64_t(1) << 30}, {0});
    std::vector<ZipRecord> records = {stored("version", "3\n"), stored("data.pkl", p.op('u').stop()),
                                      stored("data/0", std::string(4, '\0'))};
    ForgedZip z;
    for (auto& r : records) z.add(r);
    const uint64_t at = z.directory(records);
    z.end(records.size(), at, z.bytes.size() - at);
    const QString repeated = m_dir.filePath("stride0.bin");
    writeFile(repeated, z.bytes);
    e = readError(repeated);
    QVERIFY2(e.startsWith(repeated + ": its tensors up to tensor 'w") && e.contains("more than 8 times"),
             qPrintable(e));
}

// The issue's 64 MB pickle of NONEs appended to a list 1,000 at a time: 2.6 GB before the old
// unpickler refused it. Now the values held in containers are counted and refused past 4 M, some
// 4 MB into the pickle; read with 1 GiB of address space to spare.
void TestTorchBin::refusesAmplifyingPickle() {
    std::string b = std::string("\x80\x02]", 3);
    const std::string batch = "(" + std::string(1000, 'N') + "e";
    b.reserve(size_t(64) << 20);
    while (b.size() < (size_t(64) << 20)) b += batch;
    b += '.';
    const AddressSpaceLimit limit(uint64_t(1) << 30);
    QVERIFY(limit.active());
    const QString e = pickleError(b);
    QVERIFY2(e.startsWith("t.pkl: APPENDS at byte ") &&
                 e.endsWith(": the lists, tuples, dicts and memo grow past 4194304 values"),
             qPrintable(e));
}

QTEST_GUILESS_MAIN(TestTorchBin)
#include "tst_torch_bin.moc"
