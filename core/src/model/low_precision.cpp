#include "model/low_precision.h"

#include <attnlab/errors.h>

#include <torch/torch.h>

#ifdef ATTNLAB_HAVE_DNNL
#include <dnnl.hpp>
#endif

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

namespace attnlab::model {

ComputeType parseComputeType(const std::string& name) {
    if (name == "float32") return ComputeType::Float32;
    if (name == "int8") return ComputeType::Int8;
    if (name == "bfloat16") return ComputeType::BFloat16;
    throw ConfigError("compute type '" + name + "' is not one of float32 | int8 | bfloat16");
}

std::string computeTypeName(ComputeType t) {
    switch (t) {
    case ComputeType::Int8: return "int8";
    case ComputeType::BFloat16: return "bfloat16";
    case ComputeType::Float32: break;
    }
    return "float32";
}

std::optional<std::string> computeTypeUnavailable(ComputeType t) {
    if (t == ComputeType::Float32) return std::nullopt;
#ifndef ATTNLAB_HAVE_DNNL
    return "this build has no oneDNN (libdnnl-dev), which computes in " + computeTypeName(t);
#else
#if !defined(__x86_64__)
    return computeTypeName(t) + " is implemented for x86-64 processors only";
#else
    // oneDNN would emulate these on older processors, slower than float32: refused there instead.
    if (t == ComputeType::BFloat16 && !__builtin_cpu_supports("avx512bf16"))
        return std::string(
            "this processor has no bfloat16 instructions (AVX512_BF16): bfloat16 would be slower "
            "than float32 here");
    if (t == ComputeType::Int8 && !__builtin_cpu_supports("avx512vnni") && !__builtin_cpu_supports("avx2"))
        return std::string("this processor has neither AVX2 nor AVX512-VNNI: int8 would be slower than float32 here");
    return std::nullopt;
#endif
#endif
}

// Loops compiled for AVX-512 and AVX2 besides the baseline, chosen at run time; with GCC the min/max
// reductions also assume finite inputs, without which they are not vectorised (clang has no such
// per-function option: there they run unvectorised, as correct).
#if !defined(__x86_64__)
#define ATTNLAB_VECTORISED_FINITE
#define ATTNLAB_VECTORISED
#elif defined(__clang__)
#define ATTNLAB_VECTORISED_FINITE __attribute__((target_clones("avx512f", "avx2", "default")))
#define ATTNLAB_VECTORISED __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define ATTNLAB_VECTORISED __attribute__((target_clones("avx512f", "avx2", "default")))
#define ATTNLAB_VECTORISED_FINITE \
    __attribute__((target_clones("avx512f", "avx2", "default"), optimize("finite-math-only", "no-signed-zeros")))
#endif

namespace {
thread_local bool t_exact = false;
}  // namespace
ExactProducts::ExactProducts() : m_before(t_exact) { t_exact = true; }
ExactProducts::~ExactProducts() { t_exact = m_before; }
bool ExactProducts::active() { return t_exact; }

namespace {
std::string number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3g", v);
    return buf;
}

// Rows first.. of a weight whose largest magnitudes are `amax` [n], `cols` wide: refused (ConfigError naming
// the row) when int8's scale amax / 127 would mean nothing, the row not finite or so large that its product
// with an input of ones (|x| <= 1, a normalised input's order) could overflow float32. One comparison over
// the amax quantizeRows computes anyway.
void checkInt8Range(const torch::Tensor& amax, int64_t first, int64_t cols) {
    const double limit = double(FLT_MAX) / double(std::max<int64_t>(1, cols));
    const torch::Tensor bad = (amax > limit).logical_or_(amax.isnan());
    if (!bad.any().item<bool>()) return;
    const int64_t row = bad.nonzero()[0][0].item<int64_t>();
    throw ConfigError("row " + std::to_string(first + row) + " reaches " + number(amax[row].item<double>()) +
                      ", too large for int8 (at most " + number(limit) + " in a row of " + std::to_string(cols) +
                      "): its products with inputs of magnitude 1 could overflow float32");
}

// A weight rounded to bfloat16 (`held`): refused when an element became infinite (|w| above bfloat16's
// largest, 3.39e38). aminmax reduces without a mask the size of the weight.
void checkBFloat16Range(const torch::Tensor& held) {
    if (held.numel() == 0) return;
    const auto [lo, hi] = torch::aminmax(held);
    if (std::isfinite(lo.item<float>()) && std::isfinite(hi.item<float>())) return;
    const int64_t row = torch::isfinite(held).logical_not_().nonzero()[0][0].item<int64_t>();
    throw ConfigError("row " + std::to_string(row) +
                      " is not finite in bfloat16 (a weight beyond its largest value, 3.39e38)");
}

// LowPrecisionMatmul::quantizeRows of `m`, rows [first_row, first_row + rows) of a weight (a chunk of its rows:
// the row a refusal names is the weight's).
std::pair<torch::Tensor, torch::Tensor> quantizedRows(const torch::Tensor& m, int64_t first_row) {
    torch::NoGradGuard no_grad;
    // A chunk of rows at a time: the float32 temporaries of a whole output projection would be several
    // times its size at the peak of a load.
    constexpr int64_t kChunkElements = int64_t(1) << 22;
    const int64_t rows = m.size(0), chunk = std::max<int64_t>(1, kChunkElements / std::max<int64_t>(1, m.size(1)));
    torch::Tensor q = torch::empty({rows, m.size(1)}, torch::kInt8), scale = torch::empty({rows});
    for (int64_t r = 0; r < rows; r += chunk) {
        const int64_t n = std::min(chunk, rows - r);
        const torch::Tensor part = m.narrow(0, r, n);
        const torch::Tensor amax = part.abs().amax(1);
        checkInt8Range(amax, first_row + r, m.size(1));
        const torch::Tensor s = torch::where(amax > 0, amax / 127.0, torch::ones_like(amax));
        q.narrow(0, r, n).copy_((part / s.unsqueeze(1)).round_().clamp_(-127, 127));
        scale.narrow(0, r, n).copy_(s);
    }
    return {q, scale};
}
}  // namespace

std::pair<torch::Tensor, torch::Tensor> LowPrecisionMatmul::quantizeRows(const torch::Tensor& m) {
    return quantizedRows(m, 0);
}

namespace {
// One row of an input: its range [min(x, 0), max(x, 0)] in 255 steps, 0 on a step (zero padding stays
// zero). Plain loops the compiler vectorises, compiled for AVX-512 and AVX2 besides the baseline and
// chosen at run time (a decoding step's few rows would spend longer in the dispatch of a chain of
// tensor operations than in the arithmetic).
ATTNLAB_VECTORISED_FINITE void quantizeRow(const float* row, int64_t cols, float levels, uint8_t* out, float* scale,
                                           int32_t* zero) {
    float lo = 0.0f, hi = 0.0f;
    for (int64_t k = 0; k < cols; ++k) {
        lo = row[k] < lo ? row[k] : lo;
        hi = row[k] > hi ? row[k] : hi;
    }
    // (a range below FLT_MIN would make 1/s infinite: such a row is zeros to float32 anyway)
    const float s = hi - lo > FLT_MIN * levels ? (hi - lo) / levels : 1.0f;
    const float z = std::nearbyint(-lo / s);
    const float inv = 1.0f / s;
    // x / s + z lies in [0, levels] up to rounding: clamped, then rounded half up (a truncation).
    for (int64_t k = 0; k < cols; ++k) {
        float v = row[k] * inv + z;
        v = v < 0.0f ? 0.0f : v;
        v = v > levels ? levels : v;
        out[k] = static_cast<uint8_t>(static_cast<int32_t>(v + 0.5f));
    }
    *scale = s;
    *zero = static_cast<int32_t>(z);
}

// One row of a product: y = s · w_s · (acc - z · Σq_w) + bias, the correction in int32 (exact:
// 255 · 127 · K fits for K < 66,000), then one conversion (vectorised as quantizeRow).
ATTNLAB_VECTORISED void dequantizeRow(const int32_t* acc, int64_t n, float s, int32_t z, const float* ws,
                                      const int32_t* wsum, const float* bias, float* out) {
    if (bias) {
        for (int64_t c = 0; c < n; ++c) out[c] = s * ws[c] * float(acc[c] - z * wsum[c]) + bias[c];
    } else {
        for (int64_t c = 0; c < n; ++c) out[c] = s * ws[c] * float(acc[c] - z * wsum[c]);
    }
}

// The input's steps: 256 where the processor multiplies u8 × s8 in 32 bits (VNNI); elsewhere oneDNN's
// u8 × s8 adds pairs into 16 bits that saturate beyond 32,767 (2 · 255 · 127 does not fit), so inputs
// get 128 steps there (2 · 127 · 127 = 32,258 fits).
float inputLevels() {
#if defined(__x86_64__)
    static const float levels = __builtin_cpu_supports("avx512vnni") ? 255.0f : 127.0f;
    return levels;
#else
    return 127.0f;
#endif
}

// Whether a row holds only finite numbers: no element with every exponent bit set (an integer max,
// vectorised; quantizeRow assumes finite inputs and would turn an infinity or a NaN into numbers).
ATTNLAB_VECTORISED bool rowFinite(const float* row, int64_t cols) {
    uint32_t exponent = 0;
    for (int64_t k = 0; k < cols; ++k) {
        uint32_t bits;
        std::memcpy(&bits, row + k, sizeof bits);
        exponent = std::max(exponent, bits & 0x7F800000u);
    }
    return exponent != 0x7F800000u;
}
}  // namespace

int LowPrecisionMatmul::inputSteps() { return static_cast<int>(inputLevels()); }

// A row that is not finite, or whose range overflows float32 (an infinite scale), gets a NaN scale: every
// output of its product is NaN, as float32's would not be finite, so that the search's check of every step
// (decoding/search.cpp) names the layer as it does in float32 instead of translating numbers made up here.
LowPrecisionMatmul::Activations LowPrecisionMatmul::quantizeActivations(const torch::Tensor& m) {
    const torch::Tensor x = m.to(torch::kFloat32).contiguous();
    const int64_t rows = x.size(0), cols = x.size(1);
    Activations a{torch::empty({rows, cols}, torch::kUInt8), torch::empty({rows}), torch::empty({rows}, torch::kInt32)};
    const float* in = x.data_ptr<float>();
    uint8_t* q = a.q.data_ptr<uint8_t>();
    float* scale = a.scale.data_ptr<float>();
    int32_t* zero = a.zero.data_ptr<int32_t>();
    const float levels = inputLevels();
    for (int64_t r = 0; r < rows; ++r) {
        const bool finite = rowFinite(in + r * cols, cols);
        if (finite) quantizeRow(in + r * cols, cols, levels, q + r * cols, scale + r, zero + r);
        if (!finite || !std::isfinite(scale[r])) {
            std::memset(q + r * cols, 0, size_t(cols));
            scale[r] = std::nanf("");
            zero[r] = 0;
        }
    }
    return a;
}

namespace {
// A tensor's rows as a RowReader (in float32).
RowReader rowsOf(const torch::Tensor& m) {
    return [m = m.detach()](int64_t first, int64_t n) { return m.narrow(0, first, n).to(torch::kFloat32); };
}

// f(part, first) over a weight's rows read a chunk at a time (part: rows [first, first + n)): each of f's
// results [n, ...] copied into its rows of a tensor [rows, ...] (quantized while reading, issue 53: no float32
// copy of a whole output projection). f treats each row on its own, so that the result is the same as f over
// the whole weight; `first` numbers the rows an error names as the weight's.
template <typename F>
std::vector<torch::Tensor> byRows(int64_t rows, int64_t cols, const RowReader& read, F&& f) {
    constexpr int64_t kChunkElements = int64_t(1) << 22;  // 16 MiB of float32
    const int64_t chunk = std::max<int64_t>(1, kChunkElements / std::max<int64_t>(1, cols));
    if (rows == 0) return f(torch::empty({0, cols}), int64_t(0));
    std::vector<torch::Tensor> out;
    for (int64_t r = 0; r < rows; r += chunk) {
        const int64_t n = std::min(chunk, rows - r);
        const torch::Tensor part = read(r, n);
        if (part.dim() != 2 || part.size(0) != n || part.size(1) != cols || part.scalar_type() != torch::kFloat32)
            throw InternalError("a row reader gave " + std::to_string(part.dim()) + " dimensions, not float32 [" +
                                std::to_string(n) + ", " + std::to_string(cols) + "]");
        const std::vector<torch::Tensor> got = f(part, r);
        if (out.empty())
            for (const torch::Tensor& g : got) {
                auto sizes = g.sizes().vec();
                sizes[0] = rows;
                out.push_back(torch::empty(sizes, g.options()));
            }
        for (size_t i = 0; i < got.size(); ++i) out[i].narrow(0, r, n).copy_(got[i]);
    }
    return out;
}
}  // namespace

#ifdef ATTNLAB_HAVE_DNNL
namespace {
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

dnnl::engine& cpuEngine() {
    static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    return engine;
}
}  // namespace

namespace {
// Where logical element pos of a blocked oneDNN descriptor lies, in elements (oneDNN's
// memory_desc_wrapper::off_v): the inner blocks from the innermost out, then the outer strides.
int64_t blockedOffset(const dnnl_memory_desc_t& d, std::array<int64_t, 2> pos) {
    const dnnl_blocking_desc_t& blk = d.format_desc.blocking;
    int64_t offset = 0, stride = 1;
    for (int i = blk.inner_nblks - 1; i >= 0; --i) {
        const int dim = int(blk.inner_idxs[i]);
        offset += (pos[size_t(dim)] % blk.inner_blks[i]) * stride;
        pos[size_t(dim)] /= blk.inner_blks[i];
        stride *= blk.inner_blks[i];
    }
    return offset + pos[0] * blk.strides[0] + pos[1] * blk.strides[1];
}
}  // namespace

struct LowPrecisionMatmul::Impl {
    ComputeType type;
    int64_t in = 0, out = 0;
    dt src_dt, dst_dt;
    dnnl::memory weights;           // in oneDNN's layout for these K, N (the same for every row count)
    torch::Tensor weight_scale;     // int8: [out] float32, amax / 127
    torch::Tensor weight_sum;       // int8: [out] int32, Σ_k q_w (the zero points' correction)
    torch::Tensor bias;             // [out] float32 or undefined
    std::vector<int64_t> k_offset;  // where element (k, 0) of the held weights lies (heldRows)

    // A user scratchpad: oneDNN's own is shared by every execution of a primitive, which may run on
    // several threads at once here (the head lab, the app's worker and a test).
    dnnl::matmul::primitive_desc describe(int64_t rows, const dnnl::memory::desc& w) const {
        const dnnl::memory::desc src({rows, in}, src_dt, tag::ab), dst({rows, out}, dst_dt, tag::ab);
        dnnl::primitive_attr attr;
        attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
        return dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, w, dst), attr, cpuEngine());
    }
    struct Primitive {
        dnnl::matmul matmul;
        dnnl::memory::desc scratchpad;
    };
    std::mutex mutex;  // the cache of primitives, one per row count
    std::map<int64_t, Primitive> primitives;
    static constexpr size_t kMaxPrimitives = 64;
    Primitive primitive(int64_t rows) {
        std::lock_guard<std::mutex> lock(mutex);
        auto it = primitives.find(rows);
        if (it != primitives.end()) return it->second;
        if (primitives.size() >= kMaxPrimitives) primitives.clear();
        const auto pd = describe(rows, weights.get_desc());
        return primitives.emplace(rows, Primitive{dnnl::matmul(pd), pd.scratchpad_desc()}).first->second;
    }
};

LowPrecisionMatmul::LowPrecisionMatmul(const torch::Tensor& weight, const torch::Tensor& bias, ComputeType type)
    : LowPrecisionMatmul(weight.size(0), weight.size(1), rowsOf(weight), bias, type) {}

LowPrecisionMatmul::LowPrecisionMatmul(int64_t out, int64_t in, const RowReader& read, const torch::Tensor& bias,
                                       ComputeType type)
    : m(std::make_unique<Impl>()) {
    torch::NoGradGuard no_grad;
    if (auto why = computeTypeUnavailable(type)) throw ConfigError(*why);
    m->type = type;
    m->out = out;
    m->in = in;
    m->src_dt = type == ComputeType::Int8 ? dt::u8 : dt::bf16;
    m->dst_dt = type == ComputeType::Int8 ? dt::s32 : dt::f32;
    if (bias.defined()) m->bias = bias.detach().to(torch::kFloat32).contiguous();
    // The stored copy, row-major [out, in] = oneDNN's (K, N) weights in "ba", reordered once into the
    // layout the primitive prefers.
    torch::Tensor stored;
    if (type == ComputeType::Int8) {
        const auto qs = byRows(out, in, read, [](const torch::Tensor& part, int64_t first) {
            auto [q, scale] = quantizedRows(part, first);
            return std::vector<torch::Tensor>{q, scale};
        });
        const torch::Tensor &q = qs[0], &scale = qs[1];
        stored = q.contiguous();
        m->weight_scale = scale.contiguous();
        m->weight_sum = torch::empty({m->out}, torch::kInt32);
        for (int64_t r = 0; r < m->out; r += 4096) {  // Σ_k q_w, without an int32 copy of the whole weight
            const int64_t n = std::min<int64_t>(4096, m->out - r);
            m->weight_sum.narrow(0, r, n).copy_(q.narrow(0, r, n).to(torch::kInt32).sum(1));
        }
    } else {
        stored = byRows(out, in, read, [](const torch::Tensor& part, int64_t) {
                     return std::vector<torch::Tensor>{part.to(torch::kBFloat16)};
                 }).front();
        checkBFloat16Range(stored);
    }
    const dt weights_dt = type == ComputeType::Int8 ? dt::s8 : dt::bf16;
    const dnnl::memory::desc plain({m->in, m->out}, weights_dt, tag::ba);
    const auto pd = m->describe(1, dnnl::memory::desc({m->in, m->out}, weights_dt, tag::any));
    dnnl::memory user(plain, cpuEngine(), stored.data_ptr());
    m->weights = dnnl::memory(pd.weights_desc(), cpuEngine());
    dnnl::stream s(cpuEngine());
    dnnl::reorder(user, m->weights).execute(s, user, m->weights);
    s.wait();
    const dnnl_memory_desc_t& held = m->weights.get_desc().data;
    if (held.format_kind != dnnl_blocked) throw InternalError("oneDNN chose a weight layout that is not blocked");
    m->k_offset.resize(size_t(m->in));
    for (int64_t k = 0; k < m->in; ++k) m->k_offset[size_t(k)] = blockedOffset(held, {k, 0});
}

LowPrecisionMatmul::~LowPrecisionMatmul() = default;
ComputeType LowPrecisionMatmul::type() const { return m->type; }
int64_t LowPrecisionMatmul::storedBytes() const { return int64_t(m->weights.get_desc().get_size()); }
int64_t LowPrecisionMatmul::rowsHeld() const { return m->out; }

torch::Tensor LowPrecisionMatmul::heldRows(const torch::Tensor& ids) const {
    const torch::Tensor flat = ids.reshape({-1}).to(torch::kInt64).contiguous();
    const dnnl_memory_desc_t& d = m->weights.get_desc().data;
    const int64_t n = flat.numel(), in = m->in;
    torch::Tensor out = torch::empty({n, in});
    float* o = out.data_ptr<float>();
    const int64_t* id = flat.data_ptr<int64_t>();
    const bool int8 = m->type == ComputeType::Int8;
    const auto* q = static_cast<const int8_t*>(m->weights.get_data_handle());
    const auto* b = static_cast<const c10::BFloat16*>(m->weights.get_data_handle());
    for (int64_t r = 0; r < n; ++r) {
        if (id[r] < 0 || id[r] >= m->out) throw InputError("token id " + std::to_string(id[r]) + " is out of range");
        // The layout separates into a part along K and one along N (the rows are N here).
        const int64_t base = d.offset0 + blockedOffset(d, {0, id[r]});
        const float scale = int8 ? m->weight_scale.data_ptr<float>()[id[r]] : 1.0f;
        for (int64_t k = 0; k < in; ++k)
            o[r * in + k] =
                int8 ? float(q[base + m->k_offset[size_t(k)]]) * scale : float(b[base + m->k_offset[size_t(k)]]);
    }
    auto sizes = ids.sizes().vec();
    sizes.push_back(in);
    return out.view(sizes);
}

torch::Tensor LowPrecisionMatmul::heldRows(int64_t first, int64_t n) const {
    return heldRows(torch::arange(first, first + n, torch::kInt64));
}

torch::Tensor LowPrecisionMatmul::dequantizedWeight() const {
    torch::NoGradGuard no_grad;
    const bool int8 = m->type == ComputeType::Int8;
    torch::Tensor plain = torch::empty({m->out, m->in}, int8 ? torch::kInt8 : torch::kBFloat16);
    dnnl::memory user({{m->in, m->out}, int8 ? dt::s8 : dt::bf16, tag::ba}, cpuEngine(), plain.data_ptr());
    dnnl::stream s(cpuEngine());
    dnnl::reorder(m->weights, user).execute(s, m->weights, user);
    s.wait();
    torch::Tensor w = plain.to(torch::kFloat32);
    return int8 ? w.mul_(m->weight_scale.unsqueeze(1)) : w;
}

namespace {
// Each thread's scratch: oneDNN's scratchpad and the int32 products, grown as needed and kept, so that
// a decoding step does not map fresh pages for them on every product (a 4 x 54,688 product is 875 kB).
struct Scratch {
    std::vector<char> pad;
    std::vector<int32_t> acc;
};
constexpr size_t kKeptScratch = size_t(16) << 20;  // elements / bytes kept between products
Scratch& threadScratch() {
    thread_local Scratch s;
    return s;
}
}  // namespace

torch::Tensor LowPrecisionMatmul::forward(const torch::Tensor& x, bool exact) {
    torch::NoGradGuard no_grad;
    const int64_t rows = x.numel() / m->in;
    torch::Tensor rest = x.reshape({rows, m->in}).to(torch::kFloat32);
    // Exact: x = Σ_p x_p, each pass rounding what the ones before left over (255 steps of a residual at
    // most half a step of the last: 3 passes hold 24 bits, float32's; 4 without VNNI's 255; bfloat16's 8
    // bits: 3 passes). The products are exact (int32, or bfloat16 × bfloat16 into float32), so the sum is
    // x · W_heldᵀ up to float32 rounding, reading the small weights 3-4 times instead of a float32 copy.
    const int passes = exact ? (m->type == ComputeType::Int8 ? (inputLevels() >= 255.0f ? 3 : 4) : 3) : 1;
    torch::Tensor y;
    for (int p = 0; p < passes; ++p) {
        const bool last = p + 1 == passes;
        torch::Tensor part = multiplyOnce(rest, /*with_bias=*/p == 0, last ? nullptr : &rest);
        y = p == 0 ? part : y.add_(part);
    }
    auto sizes = x.sizes().vec();
    sizes.back() = m->out;
    return y.view(sizes);
}

torch::Tensor LowPrecisionMatmul::multiplyOnce(const torch::Tensor& x2, bool with_bias, torch::Tensor* rest) {
    const int64_t rows = x2.size(0);
    const bool int8 = m->type == ComputeType::Int8;
    Activations a;
    if (int8)
        a = quantizeActivations(x2);
    else
        a.q = x2.to(torch::kBFloat16).contiguous();
    torch::Tensor y = torch::empty({rows, m->out});
    Scratch& scratch = threadScratch();
    if (int8) scratch.acc.resize(size_t(rows * m->out));
    if (rows > 0) {
        const auto p = m->primitive(rows);
        scratch.pad.resize(std::max(scratch.pad.size(), p.scratchpad.get_size()));
        dnnl::memory src({{rows, m->in}, m->src_dt, tag::ab}, cpuEngine(), a.q.data_ptr());
        dnnl::memory d({{rows, m->out}, m->dst_dt, tag::ab}, cpuEngine(),
                       int8 ? static_cast<void*>(scratch.acc.data()) : y.data_ptr());
        dnnl::memory pad(p.scratchpad, cpuEngine(), scratch.pad.data());
        dnnl::stream s(cpuEngine());
        p.matmul.execute(
            s, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, m->weights}, {DNNL_ARG_DST, d}, {DNNL_ARG_SCRATCHPAD, pad}});
        s.wait();
    }
    if (int8) dequantize(scratch.acc.data(), a, y, with_bias);
    // A batch's products are not kept for the rest of the thread's life.
    if (scratch.acc.size() > kKeptScratch || scratch.pad.size() > kKeptScratch) scratch = Scratch();
    if (!int8 && with_bias && m->bias.defined()) y.add_(m->bias);
    if (rest) {  // what this pass's rounding left out of x2: the next pass's input
        const torch::Tensor held =
            int8 ? (a.q.to(torch::kFloat32) - a.zero.unsqueeze(1)) * a.scale.unsqueeze(1) : a.q.to(torch::kFloat32);
        *rest = x2 - held;
    }
    return y;
}

// y = s_x · s_w · (acc - z · Σq_w) + bias, in one pass over the int32 products.
void LowPrecisionMatmul::dequantize(const int32_t* acc, const Activations& a, torch::Tensor& y, bool with_bias) const {
    const int64_t rows = y.size(0), n = y.size(1);
    float* out = y.data_ptr<float>();
    const float* ws = m->weight_scale.data_ptr<float>();
    const int32_t* wsum = m->weight_sum.data_ptr<int32_t>();
    const float* bias = with_bias && m->bias.defined() ? m->bias.data_ptr<float>() : nullptr;
    for (int64_t r = 0; r < rows; ++r) {
        const float s = a.scale.data_ptr<float>()[r];
        const int32_t z = a.zero.data_ptr<int32_t>()[r];
        const int32_t* row = acc + r * n;
        float* o = out + r * n;
        dequantizeRow(row, n, s, z, ws, wsum, bias, o);
    }
}

#else

struct LowPrecisionMatmul::Impl {};
LowPrecisionMatmul::LowPrecisionMatmul(const torch::Tensor&, const torch::Tensor&, ComputeType type) {
    throw ConfigError(*computeTypeUnavailable(type));
}
LowPrecisionMatmul::LowPrecisionMatmul(int64_t, int64_t, const RowReader&, const torch::Tensor&, ComputeType type) {
    throw ConfigError(*computeTypeUnavailable(type));
}
LowPrecisionMatmul::~LowPrecisionMatmul() = default;
ComputeType LowPrecisionMatmul::type() const { return ComputeType::Float32; }
int64_t LowPrecisionMatmul::storedBytes() const { return 0; }
int64_t LowPrecisionMatmul::rowsHeld() const { return 0; }
torch::Tensor LowPrecisionMatmul::dequantizedWeight() const { return {}; }
torch::Tensor LowPrecisionMatmul::heldRows(const torch::Tensor&) const { return {}; }
torch::Tensor LowPrecisionMatmul::heldRows(int64_t, int64_t) const { return {}; }
torch::Tensor LowPrecisionMatmul::forward(const torch::Tensor&, bool) { return {}; }

#endif

// ---------------------------------------------------------------- LowPrecisionRows
LowPrecisionRows::LowPrecisionRows(const torch::Tensor& m, ComputeType type)
    : LowPrecisionRows(m.size(0), m.size(1), rowsOf(m), type) {}

LowPrecisionRows::LowPrecisionRows(int64_t n, int64_t cols, const RowReader& read, ComputeType type) {
    torch::NoGradGuard no_grad;
    if (type == ComputeType::Int8) {
        const auto qs = byRows(n, cols, read, [](const torch::Tensor& part, int64_t first) {
            auto [q, scale] = quantizedRows(part, first);
            return std::vector<torch::Tensor>{q, scale};
        });
        m_values = qs[0].contiguous();
        m_scale = qs[1].contiguous();
    } else if (type == ComputeType::BFloat16) {
        m_values = byRows(n, cols, read, [](const torch::Tensor& part, int64_t) {
                       return std::vector<torch::Tensor>{part.to(torch::kBFloat16)};
                   }).front();
        checkBFloat16Range(m_values);
    } else {
        throw InternalError("LowPrecisionRows: float32 rows are the model's own");
    }
}

LowPrecisionRows::LowPrecisionRows(std::shared_ptr<const LowPrecisionMatmul> held) : m_held(std::move(held)) {}

int64_t LowPrecisionRows::count() const { return m_held ? m_held->rowsHeld() : m_values.size(0); }

torch::Tensor LowPrecisionRows::lookup(const torch::Tensor& ids) const {
    torch::NoGradGuard no_grad;
    if (m_held) return m_held->heldRows(ids);
    const torch::Tensor flat = ids.reshape({-1});
    torch::Tensor x = m_values.index_select(0, flat).to(torch::kFloat32);
    if (m_scale.defined()) x.mul_(m_scale.index_select(0, flat).unsqueeze(1));
    auto sizes = ids.sizes().vec();
    sizes.push_back(m_values.size(1));
    return x.view(sizes);
}

torch::Tensor LowPrecisionRows::rows(int64_t first, int64_t n) const {
    if (m_held) return m_held->heldRows(first, n);
    torch::Tensor x = m_values.narrow(0, first, n).to(torch::kFloat32);
    return m_scale.defined() ? x.mul_(m_scale.narrow(0, first, n).unsqueeze(1)) : x;
}

torch::Tensor LowPrecisionRows::linear(const torch::Tensor& x) const {
    constexpr int64_t kChunk = 8192;  // 32 MiB of float32 at d_model 1024
    const int64_t n = count();
    std::vector<torch::Tensor> parts;
    for (int64_t first = 0; first < n; first += kChunk) {
        torch::Tensor chunk;
        {
            torch::NoGradGuard no_grad;  // the rows are constants; x keeps its graph
            chunk = rows(first, std::min(kChunk, n - first));
        }
        parts.push_back(torch::matmul(x, chunk.t()));
    }
    return parts.size() == 1 ? parts.front() : torch::cat(parts, -1);
}

int64_t LowPrecisionRows::storedBytes() const {
    if (m_held) return 0;  // the product's copy
    return m_values.numel() * int64_t(m_values.element_size()) +
           (m_scale.defined() ? m_scale.numel() * int64_t(sizeof(float)) : 0);
}

}  // namespace attnlab::model
