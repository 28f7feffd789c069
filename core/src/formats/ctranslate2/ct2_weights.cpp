#include "formats/ctranslate2/ct2_weights.h"

#include "formats/safetensors/tensor_copy.h"
#include "package/package_io.h"
#include "util/text.h"

#include <attnlab/errors.h>

#include <torch/torch.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>

namespace attnlab::package {
namespace {
using ct2::DType;
using ct2::Variable;

// A bias CTranslate2 may leave out (OpenNMT-py's add_ffnbias / add_qkvbias = False): zeros.
bool mayBeAbsent(const std::string& ours) {
    return util::endsWith(ours, ".bias") && ours.find("layer_norm") == std::string::npos;
}

torch::ScalarType floatType(DType d) {
    return d == DType::Float16 ? torch::kFloat16 : d == DType::BFloat16 ? torch::kBFloat16 : torch::kFloat32;
}

// The dequantization scales of a quantized variable, as float32: one per row (int8) or one (int16).
torch::Tensor scaleOf(const ct2::ModelBin& bin, const Variable& v) {
    const Variable* s = bin.find(v.name + "_scale");
    if (!s) {
        if (v.dtype == DType::Int16) return torch::full({1}, 1000.0f);  // ops::Quantize::global_int16_scale
        throw PackageError(bin.path + ": the int8 variable '" + v.name + "' has no '" + v.name + "_scale'");
    }
    if (s->dtype != DType::Float32 && s->dtype != DType::Float16 && s->dtype != DType::BFloat16)
        throw PackageError(bin.path + ": '" + s->name + "' is " + ct2::dtypeName(s->dtype) + ", not a float");
    const int64_t expected = v.dtype == DType::Int8 ? v.shape.at(0) : 1;
    if (s->numel() != expected)
        throw PackageError(bin.path + ": '" + s->name + "' has " + std::to_string(s->numel()) + " values; '" + v.name +
                           "' needs " + std::to_string(expected));
    std::vector<char> bytes = s->isScalar() ? s->scalar : std::vector<char>(s->nbytes);
    if (!s->isScalar()) ct2::readVariableRange(bin, *s, 0, s->nbytes, bytes.data());
    torch::Tensor t = torch::from_blob(bytes.data(), {expected}, floatType(s->dtype)).to(torch::kFloat32).clone();
    if (!(t.abs() > 0).all().item<bool>() || !allFinite(t))
        throw PackageError(bin.path + ": '" + s->name + "' holds a zero, NaN or infinite scale");
    return t;
}

torch::ScalarType storedType(const ct2::ModelBin& bin, const Variable& v) {
    switch (v.dtype) {
    case DType::Int8: return torch::kInt8;
    case DType::Int16: return torch::kInt16;
    case DType::Int32: throw PackageError(bin.path + ": '" + v.name + "' is int32, not a weight AttnLab reads");
    default: return floatType(v.dtype);
    }
}

// Rows [row_begin, row_begin + rows) of `v` as float32, dequantized (read into a tensor that owns them).
torch::Tensor readRows(const ct2::ModelBin& bin, const Variable& v, const torch::Tensor& scale, int64_t row_begin,
                       int64_t rows) {
    const int64_t row_elems = v.shape.size() > 1 ? v.numel() / v.shape[0] : 1;
    const size_t item = ct2::dtypeSize(v.dtype);
    torch::Tensor raw = torch::empty({rows, row_elems}, storedType(bin, v));
    ct2::readVariableRange(bin, v, uint64_t(row_begin * row_elems) * item, uint64_t(rows * row_elems) * item,
                           static_cast<char*>(raw.data_ptr()));
    if (v.dtype == DType::Int8) return raw.to(torch::kFloat32) / scale.narrow(0, row_begin, rows).unsqueeze(1);
    if (v.dtype == DType::Int16) return raw.to(torch::kFloat32) / scale[0];
    return raw.to(torch::kFloat32);
}

// Copies the source's rows into `dst` a chunk at a time; false at a NaN or infinite value.
bool copySource(const ct2::ModelBin& bin, const TensorSource& src, torch::Tensor& dst) {
    const Variable& v = *bin.find(src.variable);
    const int64_t all_rows = v.isScalar() ? 1 : v.shape[0];
    const int64_t rows = src.rows < 0 ? all_rows : src.rows;
    const int64_t row_elems = v.shape.size() > 1 ? v.numel() / all_rows : 1;
    const torch::Tensor scale = v.dtype == DType::Int8 || v.dtype == DType::Int16 ? scaleOf(bin, v) : torch::Tensor();
    const int64_t chunk = std::max<int64_t>(1, int64_t(kChunkBytes / (uint64_t(row_elems) * 4)));
    torch::Tensor flat = dst.view({-1});
    for (int64_t r = 0; r < rows; r += chunk) {
        const int64_t n = std::min(chunk, rows - r);
        const torch::Tensor part = readRows(bin, v, scale, src.row_begin + r, n);
        if (!allFinite(part)) return false;
        flat.narrow(0, r * row_elems, n * row_elems).copy_(part.view({-1}));
    }
    return true;
}

// Rows [first, first + n) of AttnLab's tensor from `src` as float32 [n, row elements]; rows past the source's
// (the <pad> row AttnLab appends, `padding_rows`) are zero. Undefined at a NaN or infinite value. `scale`: an
// int8 / int16 variable's dequantization scales, read by the first call that needs them and kept by the caller
// (one read of the `_scale` variable a weight, not one a chunk).
torch::Tensor sourceRows(const ct2::ModelBin& bin, const TensorSource& src, torch::Tensor& scale, int64_t first,
                         int64_t n) {
    const Variable& v = *bin.find(src.variable);
    const int64_t all_rows = v.isScalar() ? 1 : v.shape[0];
    const int64_t have = src.rows < 0 ? all_rows : src.rows;
    const int64_t row_elems = v.shape.size() > 1 ? v.numel() / all_rows : 1;
    const int64_t k = std::clamp<int64_t>(have - first, 0, n);
    torch::Tensor part;
    if (k > 0) {
        if (!scale.defined() && (v.dtype == DType::Int8 || v.dtype == DType::Int16)) scale = scaleOf(bin, v);
        part = readRows(bin, v, scale, src.row_begin + first, k);
        if (!allFinite(part)) return {};
        if (k == n) return part;
    }
    torch::Tensor out = torch::zeros({n, row_elems});
    if (k > 0) out.narrow(0, 0, k).copy_(part);
    return out;
}

// What the model's tensor `name` (of `shape`) is read from: `src`, or zeros without one. padded: its last row
// AttnLab's <pad>'s (zero; a logit of kPaddingLogit in final_logits_bias).
TensorFill fillOf(const Ct2Model& m, const std::string& name, const std::vector<int64_t>& shape,
                  const TensorSource* src, bool padded) {
    const bool logits = name == "final_logits_bias";
    TensorFill f;
    f.copy_into = [&m, src, padded, logits](torch::Tensor& dst) {
        if (!src)
            dst.zero_();
        else if (!copySource(m.bin, *src, dst))
            return false;
        if (padded) {
            if (logits)
                dst[-1] = kPaddingLogit;
            else
                dst[-1].zero_();
        }
        return true;
    };
    const int64_t row_elems = shape.size() > 1 ? shape[1] : 1;
    f.rows = [&m, src, row_elems, scale = std::make_shared<torch::Tensor>()](int64_t first, int64_t n) {
        return src ? sourceRows(m.bin, *src, *scale, first, n) : torch::zeros({n, row_elems});
    };
    return f;
}

// The shape a source gives: the variable's, with its rows narrowed.
std::vector<int64_t> sourceShape(const ct2::ModelBin& bin, const TensorSource& src) {
    std::vector<int64_t> shape = bin.find(src.variable)->shape;
    if (src.rows >= 0 && !shape.empty()) {
        if (src.row_begin + src.rows > shape[0]) return {-1};
        shape[0] = src.rows;
    }
    return shape;
}

// Every tensor's source checked against the shape the config gives it, before anything is allocated.
void checkShapes(const Ct2Model& m) {
    const auto& bin = m.bin;
    std::set<std::string> expected_names;
    const TensorShapes expected = expectedTensors(m.config.model);
    // Aliases let a small file name one tensor many times: what the model would take is bounded by
    // what the file holds (int8 read as float32 is 4 bytes for 1; the computed tables are small).
    uint64_t floats = 0;
    for (const auto& [name, shape] : expected) {
        uint64_t n = 1;
        for (int64_t d : shape) n *= uint64_t(d);
        floats += n;
    }
    if (floats * 4 > 8 * bin.file_size + (uint64_t(256) << 20))
        throw PackageError(bin.path + ": the model it describes takes " + std::to_string((floats * 4) >> 20) +
                           " MiB as float32, more than a model.bin of " + std::to_string(bin.file_size >> 20) +
                           " MiB can hold (aliases naming one tensor many times?)");
    for (const auto& [name, shape] : expected) {
        expected_names.insert(name);
        auto it = m.sources.find(name);
        const bool table = util::endsWith(name, ".pos_table");
        const bool padded = m.padding_rows.count(name) > 0;  // its last row AttnLab's <pad>'s
        if (it == m.sources.end()) {
            if ((table && m.config.model.pos_encoding != "learned") || mayBeAbsent(name) || padded) continue;
            throw PackageError(bin.path + ": no variable holds AttnLab's '" + name + "'");
        }
        std::vector<int64_t> want = shape;
        if (table) want.erase(want.begin());  // [1, rows, d] here, [rows, d] there
        if (padded) want[0] -= 1;
        const auto got = sourceShape(bin, it->second);
        const std::string fused = it->second.rows >= 0 ? " (rows " + std::to_string(it->second.row_begin) + "+" +
                                                             std::to_string(it->second.rows) + " of it)"
                                                       : "";
        if (got != want)
            throw PackageError(bin.path + ": variable '" + it->second.variable + "' has shape " +
                               util::shapeString(bin.find(it->second.variable)->shape) + fused +
                               " but the model needs " + util::shapeString(want) + " for " + name);
    }
    for (const auto& [name, src] : m.sources)
        if (!expected_names.count(name))
            throw PackageError(bin.path + ": '" + src.variable + "' maps to " + name +
                               ", which the config does not have");
}

}  // namespace

model::Transformer loadCt2Weights(const Ct2Model& m, model::ComputeType held) {
    checkShapes(m);
    model::Transformer model(m.config.model, /*initialize=*/false, held);  // every tensor is read or zeroed next
    model->eval();
    std::map<std::string, std::vector<int64_t>> names;  // -> shape
    for (const auto& p : model->named_parameters()) names[p.key()] = p.value().sizes().vec();
    for (const auto& b : model->named_buffers()) names[b.key()] = b.value().sizes().vec();
    // The <pad> AttnLab appended (padding_rows): a zero embedding, and a logit far below any other, whose share
    // of the softmax is 0 in float32 (CTranslate2's vocabulary has no such row).
    std::map<std::string, TensorFill> tensors;
    for (const auto& [name, shape] : names) {
        auto it = m.sources.find(name);
        const bool padded = m.padding_rows.count(name) > 0;
        if (it != m.sources.end() || padded || mayBeAbsent(name))  // else a computed position table
            tensors[name] = fillOf(m, name, shape, it != m.sources.end() ? &it->second : nullptr, padded);
    }
    fillModel(*model, tensors, [&](const std::string& name) {
        throw PackageError(m.bin.path + ": variable '" + m.sources.at(name).variable +
                           "' contains NaN or infinite values");
    });
    return model;
}

}  // namespace attnlab::package
