#include "model/low_precision.h"

#include <attnlab/errors.h>

#include <torch/torch.h>

#ifdef ATTNLAB_HAVE_DNNL
#include <dnnl.hpp>
#endif

#include <algorithm>
#include <cfloat>
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

std::pair<torch::Tensor, torch::Tensor> LowPrecisionMatmul::quantizeRows(const torch::Tensor& m) {
    torch::NoGradGuard no_grad;
    const torch::Tensor amax = m.abs().amax(1);
    const torch::Tensor scale = torch::where(amax > 0, amax / 127.0, torch::ones_like(amax));
    const torch::Tensor q = (m / scale.unsqueeze(1)).round().clamp(-127, 127).to(torch::kInt8);
    return {q, scale};
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
}  // namespace

int LowPrecisionMatmul::inputSteps() { return static_cast<int>(inputLevels()); }

LowPrecisionMatmul::Activations LowPrecisionMatmul::quantizeActivations(const torch::Tensor& m) {
    const torch::Tensor x = m.to(torch::kFloat32).contiguous();
    const int64_t rows = x.size(0), cols = x.size(1);
    Activations a{torch::empty({rows, cols}, torch::kUInt8), torch::empty({rows}), torch::empty({rows}, torch::kInt32)};
    const float* in = x.data_ptr<float>();
    uint8_t* q = a.q.data_ptr<uint8_t>();
    float* scale = a.scale.data_ptr<float>();
    int32_t* zero = a.zero.data_ptr<int32_t>();
    const float levels = inputLevels();
    for (int64_t r = 0; r < rows; ++r) quantizeRow(in + r * cols, cols, levels, q + r * cols, scale + r, zero + r);
    return a;
}

#ifdef ATTNLAB_HAVE_DNNL
namespace {
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

dnnl::engine& cpuEngine() {
    static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    return engine;
}
}  // namespace

struct LowPrecisionMatmul::Impl {
    ComputeType type;
    int64_t in = 0, out = 0;
    dt src_dt, dst_dt;
    dnnl::memory weights;        // in oneDNN's layout for these K, N (the same for every row count)
    torch::Tensor weight_scale;  // int8: [out] float32, amax / 127
    torch::Tensor weight_sum;    // int8: [out] int32, Σ_k q_w (the zero points' correction)
    torch::Tensor bias;          // [out] float32 or undefined

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
    : m(std::make_unique<Impl>()) {
    torch::NoGradGuard no_grad;
    if (auto why = computeTypeUnavailable(type)) throw ConfigError(*why);
    m->type = type;
    m->out = weight.size(0);
    m->in = weight.size(1);
    m->src_dt = type == ComputeType::Int8 ? dt::u8 : dt::bf16;
    m->dst_dt = type == ComputeType::Int8 ? dt::s32 : dt::f32;
    if (bias.defined()) m->bias = bias.detach().to(torch::kFloat32).contiguous();
    // The stored copy, row-major [out, in] = oneDNN's (K, N) weights in "ba", reordered once into the
    // layout the primitive prefers.
    torch::Tensor stored;
    if (type == ComputeType::Int8) {
        auto [q, scale] = quantizeRows(weight.detach().to(torch::kFloat32));
        stored = q.contiguous();
        m->weight_scale = scale.contiguous();
        m->weight_sum = q.to(torch::kInt32).sum(1).to(torch::kInt32).contiguous();
    } else {
        stored = weight.detach().to(torch::kBFloat16).contiguous();
    }
    const dt weights_dt = type == ComputeType::Int8 ? dt::s8 : dt::bf16;
    const dnnl::memory::desc plain({m->in, m->out}, weights_dt, tag::ba);
    const auto pd = m->describe(1, dnnl::memory::desc({m->in, m->out}, weights_dt, tag::any));
    dnnl::memory user(plain, cpuEngine(), stored.data_ptr());
    m->weights = dnnl::memory(pd.weights_desc(), cpuEngine());
    dnnl::stream s(cpuEngine());
    dnnl::reorder(user, m->weights).execute(s, user, m->weights);
    s.wait();
}

LowPrecisionMatmul::~LowPrecisionMatmul() = default;
ComputeType LowPrecisionMatmul::type() const { return m->type; }
int64_t LowPrecisionMatmul::storedBytes() const { return int64_t(m->weights.get_desc().get_size()); }

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

torch::Tensor LowPrecisionMatmul::forward(const torch::Tensor& x) {
    torch::NoGradGuard no_grad;
    const int64_t rows = x.numel() / m->in;
    const torch::Tensor x2 = x.reshape({rows, m->in});
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
    if (int8) dequantize(scratch.acc.data(), a, y);
    // A batch's products are not kept for the rest of the thread's life.
    if (scratch.acc.size() > kKeptScratch || scratch.pad.size() > kKeptScratch) scratch = Scratch();
    if (!int8 && m->bias.defined()) y.add_(m->bias);
    auto sizes = x.sizes().vec();
    sizes.back() = m->out;
    return y.view(sizes);
}

// y = s_x · s_w · (acc - z · Σq_w) + bias, in one pass over the int32 products.
void LowPrecisionMatmul::dequantize(const int32_t* acc, const Activations& a, torch::Tensor& y) const {
    const int64_t rows = y.size(0), n = y.size(1);
    float* out = y.data_ptr<float>();
    const float* ws = m->weight_scale.data_ptr<float>();
    const int32_t* wsum = m->weight_sum.data_ptr<int32_t>();
    const float* bias = m->bias.defined() ? m->bias.data_ptr<float>() : nullptr;
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
LowPrecisionMatmul::~LowPrecisionMatmul() = default;
ComputeType LowPrecisionMatmul::type() const { return ComputeType::Float32; }
int64_t LowPrecisionMatmul::storedBytes() const { return 0; }
torch::Tensor LowPrecisionMatmul::forward(const torch::Tensor&) { return {}; }

#endif

}  // namespace attnlab::model
