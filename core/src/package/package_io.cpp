#include "package/package_io.h"

#include "formats/safetensors/tensor_copy.h"

#include "formats/safetensors/safetensors.h"
#include "util/atomic_file.h"
#include "util/text.h"

#include <attnlab/errors.h>
#include <attnlab/package.h>

#include <torch/torch.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

namespace attnlab::package {
namespace fs = std::filesystem;

TensorShapes expectedTensors(const ModelConfig& c) {
    TensorShapes t;
    const int64_t D = c.d_model, hk = c.n_head * c.d_k, hv = c.n_head * c.d_v;
    auto ln = [&](const std::string& p) {
        t.push_back({p + ".weight", {D}});
        t.push_back({p + ".bias", {D}});
    };
    auto linear = [&](const std::string& p, int64_t out, int64_t in, bool bias) {
        t.push_back({p + ".weight", {out, in}});
        if (bias) t.push_back({p + ".bias", {out}});
    };
    auto mha = [&](const std::string& p) {
        linear(p + ".w_qs", hk, D, c.attn_bias);
        linear(p + ".w_ks", hk, D, c.attn_bias);
        linear(p + ".w_vs", hv, D, c.attn_bias);
        linear(p + ".fc", D, hv, c.attn_bias);
        ln(p + ".layer_norm");
    };
    // Format 5: the relative position tables of a self-attention, one row per offset -k..k.
    auto relative = [&](const std::string& p) {
        if (!c.relativePositions()) return;
        t.push_back({p + ".relative_position_keys", {2 * c.max_relative_positions + 1, c.d_k}});
        t.push_back({p + ".relative_position_values", {2 * c.max_relative_positions + 1, c.d_v}});
    };
    auto ffn = [&](const std::string& p, int64_t inner) {
        linear(p + ".w_1", inner, D, true);
        linear(p + ".w_2", D, inner, true);
        ln(p + ".layer_norm");
    };
    t.push_back({"decoder.trg_word_emb.weight", {c.n_trg_vocab, c.d_word_vec}});
    for (int64_t i = 0; i < c.decoderLayers(); ++i) {
        const std::string p = "decoder.layer_stack." + std::to_string(i);
        mha(p + ".slf_attn");
        relative(p + ".slf_attn");
        mha(p + ".enc_attn");
        ffn(p + ".pos_ffn", c.decoderInner());
    }
    if (c.emb_layer_norm) ln("decoder.layer_norm");
    if (c.final_layer_norm) ln("decoder.final_layer_norm");
    if (!c.emb_src_trg_weight_sharing) t.push_back({"encoder.src_word_emb.weight", {c.n_src_vocab, c.d_word_vec}});
    for (int64_t i = 0; i < c.encoderLayers(); ++i) {
        const std::string p = "encoder.layer_stack." + std::to_string(i);
        mha(p + ".slf_attn");
        relative(p + ".slf_attn");
        ffn(p + ".pos_ffn", c.d_inner);
    }
    if (c.emb_layer_norm) ln("encoder.layer_norm");
    if (c.final_layer_norm) ln("encoder.final_layer_norm");
    if (!c.trg_emb_prj_weight_sharing) t.push_back({"trg_word_prj.weight", {c.n_trg_vocab, D}});
    if (c.logits_bias) t.push_back({"final_logits_bias", {c.n_trg_vocab}});
    const int64_t rows = c.n_position + c.pos_offset;
    t.push_back({"decoder.position_enc.pos_table", {1, rows, c.d_word_vec}});
    t.push_back({"encoder.position_enc.pos_table", {1, rows, c.d_word_vec}});
    return t;
}

namespace {
bool isBuffer(const std::string& name) {
    return name.size() > 10 && name.compare(name.size() - 10, 10, ".pos_table") == 0;
}

std::string tiedNote(const std::string& name, const ModelConfig& c) {
    if ((name == "trg_word_prj.weight" && c.trg_emb_prj_weight_sharing) ||
        (name == "encoder.src_word_emb.weight" && c.emb_src_trg_weight_sharing))
        return " (the config ties it to decoder.trg_word_emb.weight, which must store it once)";
    return "";
}
}  // namespace

void fillModel(model::TransformerImpl& model, const std::map<std::string, TensorFill>& tensors,
               const std::function<void(const std::string& name)>& nonFinite) {
    torch::NoGradGuard no_grad;
    std::map<std::string, torch::Tensor> targets;
    for (const auto& p : model.named_parameters()) targets[p.key()] = p.value();
    for (const auto& b : model.named_buffers()) targets[b.key()] = b.value();
    std::vector<std::pair<int64_t, std::string>> held;  // (-elements, name): the largest first
    for (const auto& [name, fill] : tensors) {
        auto it = targets.find(name);
        if (it == targets.end()) throw InternalError("fillModel: the model has no tensor '" + name + "'");
        if (model.holdsWeight(name))
            held.emplace_back(-it->second.numel(), name);
        else if (!fill.copy_into(it->second))
            nonFinite(name);
    }
    std::sort(held.begin(), held.end());
    for (const auto& [size, name] : held) {
        const TensorFill& fill = tensors.at(name);
        model.holdWeight(name, [&, name = name](int64_t first, int64_t n) {
            torch::Tensor rows = fill.rows(first, n);
            if (!rows.defined()) nonFinite(name);
            return rows;
        });
    }
    if (model.heldType() != model::ComputeType::Float32) model.finishHolding();
}

namespace {
// A safetensors tensor of `header` as TensorFill reads it.
TensorFill storedFill(const std::shared_ptr<const safetensors::Header>& header, const safetensors::TensorInfo& t) {
    const safetensors::TensorInfo* info = &t;
    return {[header, info](torch::Tensor& dst) { return copyStoredTensor(*header, *info, dst); },
            [header, info](int64_t first, int64_t n) { return readStoredRows(*header, *info, first, n); }};
}
}  // namespace

model::Transformer loadWeights(const std::string& dir, const PackageConfig& config, std::string* stored_dtype,
                               model::ComputeType held) {
    const std::string path = (fs::path(dir) / package_files::kWeights).string();
    const auto shared_header = std::make_shared<const safetensors::Header>(safetensors::readHeader(path));
    const safetensors::Header& header = *shared_header;
    auto fail = [&](const std::string& m) { throw PackageError(path + ": " + m); };

    // Check names, shapes and dtypes against the config before building anything.
    const TensorShapes expected = expectedTensors(config.model);
    std::set<std::string> expected_names;
    for (const auto& [name, shape] : expected) {
        expected_names.insert(name);
        const auto* t = header.find(name);
        if (!t) {
            if (isBuffer(name) && config.model.pos_encoding != "learned") continue;  // derivable from the config
            fail("missing tensor '" + name + "'");
        }
        if (t->shape != shape)
            fail("tensor '" + name + "' has shape " + util::shapeString(t->shape) + " but the config needs " +
                 util::shapeString(shape));
        if (t->dtype != "F32" && t->dtype != "F16" && t->dtype != "BF16")
            fail("tensor '" + name + "' has dtype " + t->dtype + "; expected F32, F16 or BF16");
    }
    for (const auto& t : header.tensors)
        if (!expected_names.count(t.name))
            fail("unexpected tensor '" + util::forMessage(t.name) + "'" + tiedNote(t.name, config.model));

    model::Transformer model(config.model, /*initialize=*/false, held);  // every tensor is read next
    model->eval();
    std::map<std::string, TensorFill> tensors;
    std::set<std::string> dtypes;
    for (const auto& t : header.tensors) {
        tensors[t.name] = storedFill(shared_header, t);
        dtypes.insert(t.dtype);
    }
    fillModel(*model, tensors,
              [&](const std::string& name) { fail("tensor '" + name + "' contains NaN or infinite values"); });
    if (stored_dtype) {
        std::string d;
        for (const auto& x : dtypes) d += (d.empty() ? "" : "+") + x;
        *stored_dtype = d;
    }
    return model;
}

namespace {
void writeText(const fs::path& p, const std::string& text) {
    util::NewFileWriter out(p.string());
    out.write(text.data(), text.size());
    out.finish();
}
}  // namespace

namespace {
void writeWeights(const fs::path& path, model::Transformer& model, const std::string& dtype) {
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> keep_alive;
    std::vector<safetensors::TensorView> views;
    auto add = [&](const std::string& name, const torch::Tensor& value, bool is_buffer) {
        auto t = value.detach().to(torch::kCPU);
        t = (is_buffer || dtype == "F32") ? t.to(torch::kFloat32) : t.to(torch::kFloat16);
        t = t.contiguous();
        keep_alive.push_back(t);
        views.push_back({name, t.scalar_type() == torch::kFloat16 ? "F16" : "F32",
                         std::vector<int64_t>(t.sizes().begin(), t.sizes().end()), t.data_ptr(), t.nbytes()});
    };
    for (const auto& p : model->named_parameters()) add(p.key(), p.value(), false);
    for (const auto& b : model->named_buffers()) add(b.key(), b.value(), true);
    safetensors::write(path.string(), views, {{"format", "pt"}, {"producer", "attnlab"}});
}
}  // namespace

void savePackage(const std::string& dir, const PackageConfig& config, model::Transformer& model,
                 const std::string& tokenizer_model, const SaveOptions& options) {
    config.validate();
    if (options.dtype != "F32" && options.dtype != "F16")
        throw ConfigError("package save: dtype '" + options.dtype + "' is not F32 or F16");
    if (const std::string why = whyNotReplaceable(dir); !why.empty()) throw PackageError(why);
    util::writeDirectory(dir, [&](const std::string& staged) {
        const fs::path tmp(staged);
        writeText(tmp / package_files::kConfig, packageConfigToJson(config));
        writeWeights(tmp / package_files::kWeights, model, options.dtype);
        if (!tokenizer_model.empty()) util::copyFile(tokenizer_model, (tmp / package_files::kTokenizer).string());
        for (const auto& f : options.copied_files) util::copyFile(f, (tmp / fs::path(f).filename()).string());
        for (const auto& [name, f] : options.copied_as) util::copyFile(f, (tmp / name).string());
        for (const auto& [name, content] : options.extra_files) writeText(tmp / name, content);
    });
}

}  // namespace attnlab::package
