#include "model/positional_encoding.h"

#include "util/tensor_convert.h"

#include <attnlab/config.h>
#include <attnlab/errors.h>
#include <attnlab/positional.h>

#include <torch/torch.h>

#include <cmath>

namespace attnlab::model {

torch::Tensor sinusoidTable(int64_t n_position, int64_t d_hid) {
    auto opts = torch::TensorOptions().dtype(torch::kFloat64);
    auto pos = torch::arange(n_position, opts).unsqueeze(1);  // [P, 1]
    auto hid = torch::arange(d_hid, torch::TensorOptions().dtype(torch::kInt64));
    auto exponent = (hid.div(2, "floor") * 2).to(torch::kFloat64) / static_cast<double>(d_hid);
    auto angles = pos / torch::pow(10000.0, exponent).unsqueeze(0);  // [P, D]
    auto table = angles.clone();
    using torch::indexing::Slice;
    table.index_put_({Slice(), Slice(0, torch::indexing::None, 2)},
                     angles.index({Slice(), Slice(0, torch::indexing::None, 2)}).sin());
    table.index_put_({Slice(), Slice(1, torch::indexing::None, 2)},
                     angles.index({Slice(), Slice(1, torch::indexing::None, 2)}).cos());
    return table.to(torch::kFloat32);
}

torch::Tensor halfSinusoidTable(int64_t n_position, int64_t d_hid) {
    const auto t = sinusoidTable(n_position, d_hid);
    using torch::indexing::None;
    using torch::indexing::Slice;
    return torch::cat({t.index({Slice(), Slice(0, None, 2)}), t.index({Slice(), Slice(1, None, 2)})}, 1);
}

torch::Tensor fairseqSinusoidTable(int64_t n_position, int64_t d_hid) {
    const int64_t half = d_hid / 2;
    auto f32 = torch::TensorOptions().dtype(torch::kFloat32);
    const double step = std::log(10000.0) / double(std::max<int64_t>(half - 1, 1));
    auto freq =
        torch::exp(torch::arange(half, torch::TensorOptions().dtype(torch::kInt64)).to(torch::kFloat32) * -step);
    auto angles = torch::arange(n_position, f32).unsqueeze(1) * freq.unsqueeze(0);
    auto table = torch::cat({torch::sin(angles), torch::cos(angles)}, 1);
    if (d_hid % 2 == 1) table = torch::cat({table, torch::zeros({n_position, 1}, f32)}, 1);
    return table;
}

PositionLayout positionLayout(const std::string& name) {
    if (name == "interleaved") return PositionLayout::Interleaved;
    if (name == "half") return PositionLayout::Half;
    if (name == "fairseq") return PositionLayout::Fairseq;
    if (name == "learned") return PositionLayout::Learned;
    if (name == "none") return PositionLayout::None;
    throw ConfigError("pos_encoding '" + name + "' is not one of interleaved | half | fairseq | learned | none");
}

namespace {
torch::Tensor tableOf(PositionLayout layout, int64_t rows, int64_t d_hid) {
    switch (layout) {
    case PositionLayout::Half: return halfSinusoidTable(rows, d_hid);
    case PositionLayout::Fairseq: return fairseqSinusoidTable(rows, d_hid);
    case PositionLayout::Learned:
    case PositionLayout::None: return torch::zeros({rows, d_hid});
    case PositionLayout::Interleaved: break;
    }
    return sinusoidTable(rows, d_hid);
}
}  // namespace

PositionalEncodingImpl::PositionalEncodingImpl(int64_t d_hid, int64_t n_position, PositionLayout layout, int64_t offset)
    : first_position(offset), adds(layout != PositionLayout::None) {
    pos_table = register_buffer("pos_table", tableOf(layout, n_position + offset, d_hid).unsqueeze(0));
}

torch::Tensor PositionalEncodingImpl::forward(const torch::Tensor& x) { return forwardAt(x, 0); }

torch::Tensor PositionalEncodingImpl::forwardAt(const torch::Tensor& x, int64_t offset) {
    if (!adds) return x;
    return x + pos_table.narrow(1, first_position + offset, x.size(1)).detach();
}

}  // namespace attnlab::model

namespace attnlab {
namespace {
// The public positional functions allocate from user-chosen sizes (the GUI's lab): bound them.
torch::Tensor checkedTable(int n_position, int d_hid, int64_t max_positions, bool half = false) {
    if (n_position < 1 || d_hid < 1 || n_position > max_positions ||
        int64_t(n_position) * d_hid > kMaxPositionalTableEntries)
        throw ConfigError("positional table: " + std::to_string(n_position) + " x " + std::to_string(d_hid) +
                          " is empty or too large (at most " + std::to_string(kMaxPositionalTableEntries) +
                          " entries)");
    return half ? model::halfSinusoidTable(n_position, d_hid) : model::sinusoidTable(n_position, d_hid);
}
}  // namespace

std::vector<std::vector<float>> sinusoidTable(int n_position, int d_hid) {
    return util::toMatrix(checkedTable(n_position, d_hid, kMaxPositionalTableEntries));
}

std::vector<std::vector<float>> halfSinusoidTable(int n_position, int d_hid) {
    return util::toMatrix(checkedTable(n_position, d_hid, kMaxPositionalTableEntries, /*half=*/true));
}

std::vector<std::vector<float>> positionalDotProducts(int n_position, int d_hid) {
    auto t = checkedTable(n_position, d_hid, 8192);  // the result is n_position^2
    return util::toMatrix(torch::mm(t, t.t()));
}

}  // namespace attnlab
