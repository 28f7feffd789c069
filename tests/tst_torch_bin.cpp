// The pytorch_model.bin reader: the restricted unpickler on hand-made pickles, and readTorchBin
// on files torch.save wrote (Debian's python3-torch, run as /usr/bin/python3), with the values
// read back compared to what Python wrote; then each file it must refuse, by its message.
// The tests that need python3-torch are skipped, with a message, where it is not installed,
// except under CI (CI=true), where that fails.
#include "package/torch_bin.h"
#include "package/torch_pickle.h"

#include <attnlab/errors.h>

#include <QtTest/QtTest>

#include <nlohmann/json.hpp>

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
    QProcess probe;
    probe.start("/usr/bin/python3", {"-c", "import torch"});
    if (!probe.waitForFinished(60000) || probe.exitStatus() != QProcess::NormalExit || probe.exitCode() != 0) {
        m_python_problem = "python3-torch cannot be imported by /usr/bin/python3";
        return;
    }
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

QTEST_GUILESS_MAIN(TestTorchBin)
#include "tst_torch_bin.moc"
