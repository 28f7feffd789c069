#include "formats/huggingface/hf_weights.h"

#include "formats/safetensors/safetensors.h"
#include "formats/safetensors/tensor_copy.h"
#include "formats/torch/torch_bin.h"
#include "package/package_io.h"
#include "util/json_parse.h"
#include "util/small_file.h"
#include "util/text.h"

#include <attnlab/errors.h>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>

namespace attnlab::package {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr size_t kMaxShards = 4096;

// A file `git clone` left as a Git LFS pointer (git-lfs not installed, or not pulled).
void refuseLfsPointer(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::string head(24, '\0');
    in.read(head.data(), std::streamsize(head.size()));
    if (head.rfind("version https://git-lfs", 0) == 0)
        throw PackageError(path +
                           ": is a Git LFS pointer, not the weights: install git-lfs and run `git lfs pull` in "
                           "the model's directory");
}

// The shards an index lists, in the order they are first named; each must be a plain file name.
std::vector<std::string> shardsOf(const std::string& dir, const std::string& index_path) {
    const json j = util::parseJson(util::readSmallFile(index_path, kMaxWeightsIndexBytes), index_path);
    if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
        throw PackageError(index_path + ": expected an object with a \"weight_map\" of tensor names to files");
    std::vector<std::string> files;
    std::set<std::string> seen;
    for (const auto& [name, file] : j["weight_map"].items()) {
        if (!file.is_string())
            throw PackageError(index_path + ": the file of '" + util::forMessage(name) + "' is " + file.dump() +
                               ", not a file name");
        const std::string f = file.get<std::string>();
        if (f.empty() || f == "." || f == ".." || f.find('/') != std::string::npos ||
            f.find('\\') != std::string::npos || f.find('\0') != std::string::npos)
            throw PackageError(index_path + ": '" + util::forMessage(f) +
                               "' is not a file name in the model's directory (a shard must lie beside the index)");
        if (seen.insert(f).second) {
            files.push_back((fs::path(dir) / f).string());
            if (files.size() > kMaxShards)
                throw PackageError(index_path + ": names more than " + std::to_string(kMaxShards) + " shards");
        }
    }
    if (files.empty()) throw PackageError(index_path + ": the weight_map names no tensor");
    for (const auto& f : files) util::requireFile(f);
    return files;
}

std::string dtypeName(torch::ScalarType t) {
    return t == torch::kFloat32 ? "F32" : t == torch::kFloat16 ? "F16" : t == torch::kBFloat16 ? "BF16" : "";
}

// One stored tensor: where it is and how it is copied into a parameter of the same element count.
struct Stored {
    std::string file;
    std::vector<int64_t> shape;
    std::string dtype;
    std::function<bool(torch::Tensor& dst)> copy_into;  // converts on the way; false: a NaN or infinity
    model::RowReader rows;                              // as TensorFill::rows
    std::function<torch::Tensor()> read;                // the whole tensor as stored (tied copies compared)
};
using StoredMap = std::map<std::string, Stored>;  // by name, without the "model." prefix

void put(StoredMap& out, const std::string& path, const std::string& stored, Stored s) {
    const std::string name = stored.rfind("model.", 0) == 0 ? stored.substr(6) : stored;
    s.file = path;
    if (!out.emplace(name, std::move(s)).second)
        throw PackageError(path + ": '" + util::forMessage(name) +
                           "' is stored twice (with and without the 'model.' prefix, or in two shards)");
}

// A safetensors file: every tensor copied in chunks of kChunkBytes straight from the file.
void listSafetensors(const std::string& path, StoredMap& out) {
    auto header = std::make_shared<const safetensors::Header>(safetensors::readHeader(path));
    for (const auto& t : header->tensors) {
        if (t.dtype != "F32" && t.dtype != "F16" && t.dtype != "BF16")
            throw PackageError(path + ": tensor '" + util::forMessage(t.name) + "' has dtype " + t.dtype +
                               "; expected F32, F16 or BF16");
        const safetensors::TensorInfo* info = &t;
        Stored s;
        s.shape = t.shape;
        s.dtype = t.dtype;
        s.copy_into = [header, info](torch::Tensor& dst) { return copyStoredTensor(*header, *info, dst); };
        s.rows = [header, info](int64_t first, int64_t n) { return readStoredRows(*header, *info, first, n); };
        s.read = [header, info] {
            std::vector<char> bytes = safetensors::readTensorBytes(*header, *info);
            return torch::from_blob(bytes.data(), info->shape, storedDtype(info->dtype)).clone();
        };
        put(out, path, t.name, std::move(s));
    }
}

// A pytorch_model.bin: LibTorch's zip reader gives the whole state dict (a held weight is then quantized from
// that whole tensor a chunk of rows at a time: the file's tensors are in memory anyway).
void listTorchBin(const std::string& path, StoredMap& out) {
    for (auto& [name, stored] : readTorchBin(path)) {
        const torch::Tensor tensor = stored;  // a lambda may not capture a structured binding (C++17)
        const std::string dtype = dtypeName(tensor.scalar_type());
        if (dtype.empty())
            throw PackageError(path + ": tensor '" + util::forMessage(name) + "' is " +
                               std::string(c10::toString(tensor.scalar_type())) + ", not F32, F16 or BF16");
        Stored s;
        s.shape = tensor.sizes().vec();
        s.dtype = dtype;
        s.copy_into = [tensor](torch::Tensor& dst) {
            if (!allFinite(tensor)) return false;
            dst.view({-1}).copy_(tensor.reshape({-1}));
            return true;
        };
        s.rows = [tensor](int64_t first, int64_t n) {
            const torch::Tensor rows = tensor.narrow(0, first, n).reshape({n, -1}).to(torch::kFloat32);
            return allFinite(rows) ? rows : torch::Tensor();
        };
        s.read = [tensor] { return tensor; };
        put(out, path, name, std::move(s));
    }
}

StoredMap listAll(const std::string& dir) {
    StoredMap out;
    for (const auto& file : hfWeightFiles(dir)) {
        refuseLfsPointer(file);
        const bool bin = file.size() >= 4 && file.compare(file.size() - 4, 4, ".bin") == 0;
        if (bin)
            listTorchBin(file, out);
        else
            listSafetensors(file, out);
    }
    return out;
}

// Hugging Face's names inside one layer -> AttnLab's (the reference's module names).
const std::vector<std::pair<std::string, std::string>>& layerNames() {
    static const std::vector<std::pair<std::string, std::string>> names = {
        {"self_attn.q_proj", "slf_attn.w_qs"},
        {"self_attn.k_proj", "slf_attn.w_ks"},
        {"self_attn.v_proj", "slf_attn.w_vs"},
        {"self_attn.out_proj", "slf_attn.fc"},
        {"self_attn_layer_norm", "slf_attn.layer_norm"},
        {"encoder_attn.q_proj", "enc_attn.w_qs"},
        {"encoder_attn.k_proj", "enc_attn.w_ks"},
        {"encoder_attn.v_proj", "enc_attn.w_vs"},
        {"encoder_attn.out_proj", "enc_attn.fc"},
        {"encoder_attn_layer_norm", "enc_attn.layer_norm"},
        {"fc1", "pos_ffn.w_1"},
        {"fc2", "pos_ffn.w_2"},
        {"final_layer_norm", "pos_ffn.layer_norm"},
    };
    return names;
}

// A stack's own tensors: Hugging Face's final "layer_norm" is AttnLab's final_layer_norm, and its
// "layernorm_embedding" (mBART) is AttnLab's layer_norm on the embeddings (the reference's).
const std::vector<std::pair<std::string, std::string>>& stackNames() {
    static const std::vector<std::pair<std::string, std::string>> names = {
        {"layer_norm", "final_layer_norm"},
        {"layernorm_embedding", "layer_norm"},
        {"embed_positions", "position_enc"},
    };
    return names;
}

std::string renameLayer(const std::string& name, bool to_attnlab) {
    for (const char* stack : {"encoder.", "decoder."}) {
        const std::string from_prefix = std::string(stack) + (to_attnlab ? "layers." : "layer_stack.");
        const std::string to_prefix = std::string(stack) + (to_attnlab ? "layer_stack." : "layers.");
        if (name.rfind(from_prefix, 0) != 0) continue;
        const size_t dot = name.find('.', from_prefix.size());
        if (dot == std::string::npos) return {};
        const std::string index = name.substr(from_prefix.size(), dot - from_prefix.size());
        const std::string rest = name.substr(dot + 1);
        for (const auto& [hf, ours] : layerNames()) {
            const std::string& a = to_attnlab ? hf : ours;
            const std::string& b = to_attnlab ? ours : hf;
            if (rest.rfind(a + ".", 0) == 0) return to_prefix + index + "." + b + rest.substr(a.size());
        }
    }
    return {};
}

std::string renameStack(const std::string& name, bool to_attnlab) {
    for (const char* stack : {"encoder.", "decoder."}) {
        if (name.rfind(stack, 0) != 0) continue;
        const std::string rest = name.substr(std::string(stack).size());
        for (const auto& [hf, ours] : stackNames()) {
            const std::string& a = to_attnlab ? hf : ours;
            const std::string& b = to_attnlab ? ours : hf;
            if (rest == a + ".weight" && a == "embed_positions") return stack + b + ".pos_table";
            if (rest == a + ".pos_table" && a == "position_enc") return stack + b + ".weight";
            if (a.find("embed_positions") == std::string::npos && a != "position_enc" && rest.rfind(a + ".", 0) == 0)
                return stack + b + rest.substr(a.size());
        }
    }
    return {};
}

// The Hugging Face names that may hold one of AttnLab's tied or embedding tensors, in the order
// they are taken; every other one present must be equal to the first.
std::map<std::string, std::vector<std::string>> embeddingSources(const ModelConfig& c) {
    std::map<std::string, std::vector<std::string>> s;
    auto& target = s["decoder.trg_word_emb.weight"];
    target = {"decoder.embed_tokens.weight", "shared.weight"};
    if (c.emb_src_trg_weight_sharing)
        target.push_back("encoder.embed_tokens.weight");
    else
        s["encoder.src_word_emb.weight"] = {"encoder.embed_tokens.weight"};
    if (c.trg_emb_prj_weight_sharing)
        target.push_back("lm_head.weight");
    else
        s["trg_word_prj.weight"] = {"lm_head.weight"};
    return s;
}

int64_t numel(const std::vector<int64_t>& shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
}

// Whether two stored tensors hold the same values, compared a chunk of rows at a time (a tied embedding stored
// twice: two float32 copies of NLLB's would be 2 GiB at the peak of an int8 load). A NaN is equal to nothing.
bool sameValues(const Stored& a, const Stored& b) {
    if (a.shape != b.shape) return false;
    const int64_t rows = a.shape.empty() ? 1 : a.shape[0], cols = rows == 0 ? 1 : numel(a.shape) / rows;
    const int64_t chunk = std::max<int64_t>(1, int64_t(kChunkBytes / 4) / std::max<int64_t>(1, cols));
    for (int64_t r = 0; r < rows; r += chunk) {
        const int64_t n = std::min(chunk, rows - r);
        const torch::Tensor x = a.rows(r, n), y = b.rows(r, n);
        if (!x.defined() || !y.defined() || !torch::equal(x, y)) return false;
    }
    return true;
}

struct Mapped {
    std::map<std::string, const Stored*> ours;  // AttnLab name -> stored tensor
    std::set<std::string> dtypes;
};

// Every stored tensor given its AttnLab name (or recognised as one AttnLab recomputes), tied
// copies compared; a tensor of no known name is an error naming it.
Mapped mapNames(const StoredMap& file, const ModelConfig& config, const std::string& family,
                const std::string& origin) {
    Mapped m;
    std::set<std::string> used;
    auto fail = [&](const std::string& name, const std::string& why) {
        throw PackageError(file.at(name).file + ": " + why);
    };
    for (const auto& [name, sources] : embeddingSources(config)) {
        std::string first;
        for (const auto& s : sources) {
            auto it = file.find(s);
            if (it == file.end()) continue;
            used.insert(s);
            if (first.empty()) {
                first = s;
                m.ours[name] = &it->second;
            } else if (!sameValues(it->second, file.at(first))) {
                fail(s, "'" + s + "' differs from '" + first + "', though config.json ties them");
            }
        }
        if (first.empty())
            throw PackageError(origin + ": missing tensor '" + sources.front() + "' (or any of its tied copies)");
    }
    for (const auto& [name, stored] : file) {
        m.dtypes.insert(stored.dtype);
        if (used.count(name)) continue;
        if (name == "final_logits_bias") {
            // Older M2M100 conversions stored a bias of zeros that the model no longer has.
            if (!config.logits_bias && stored.read().abs().max().item<float>() == 0.0f) continue;
            if (!config.logits_bias) fail(name, "final_logits_bias is not zero, but a " + family + " adds none");
            m.ours[name] = &stored;
            continue;
        }
        const bool positions = name == "encoder.embed_positions.weight" || name == "decoder.embed_positions.weight";
        // Sinusoidal positions are recomputed (Marian stores them; fairseq's conversions leave a
        // _float_tensor placeholder behind).
        if ((positions && config.pos_encoding != "learned") ||
            name.find("embed_positions._float_tensor") != std::string::npos ||
            name == "encoder.embed_positions.weights" || name == "decoder.embed_positions.weights")
            continue;
        std::string mine = renameLayer(name, true);
        if (mine.empty()) mine = renameStack(name, true);
        if (mine.empty()) fail(name, "unexpected tensor '" + util::forMessage(name) + "': not part of a " + family);
        m.ours[mine] = &stored;
    }
    return m;
}

// The name a message gives an AttnLab tensor: Hugging Face's where there is one.
std::string hfName(const std::string& ours) {
    const std::string hf = renameHfTensor(ours, false);
    return hf.empty() ? ours : hf;
}

// Every expected name present with its shape (a learned position table and final_logits_bias
// may be stored with a leading 1 or without), and nothing more: checked before the model is built,
// so that a config that disagrees with its weights cannot make the loader allocate what it asks for.
void checkAgainstConfig(const Mapped& m, const ModelConfig& config, const std::string& origin) {
    auto fail = [&](const std::string& why) { throw PackageError(origin + ": " + why); };
    const TensorShapes expected = expectedTensors(config);
    std::set<std::string> names;
    for (const auto& [name, shape] : expected) {
        names.insert(name);
        const bool table = name.size() > 10 && name.compare(name.size() - 10, 10, ".pos_table") == 0;
        auto it = m.ours.find(name);
        if (it == m.ours.end()) {
            if (table && config.pos_encoding != "learned") continue;  // recomputed
            if (name == "final_logits_bias") continue;                // a buffer some savers leave out: zeros
            fail("missing tensor '" + hfName(name) + "'");
        }
        const auto& stored = it->second->shape;
        const bool squeezed =
            (table || name == "final_logits_bias") && numel(stored) == numel(shape) && stored.back() == shape.back();
        if (stored != shape && !squeezed)
            fail("tensor '" + hfName(name) + "' has shape " + util::shapeString(stored) + " but config.json needs " +
                 util::shapeString(shape));
    }
    for (const auto& [name, stored] : m.ours)
        if (!names.count(name))
            fail("unexpected tensor '" + hfName(name) + "' (config.json's layers have no such tensor)");
}
}  // namespace

std::vector<std::string> hfWeightFiles(const std::string& dir) {
    std::optional<PackageError> incomplete;  // an index whose shards are not all there: the next format, else this
    for (const char* name : kHfWeightFiles) {
        const fs::path p = fs::path(dir) / name;
        if (!util::optionalFilePresent(p.string())) continue;  // (it names a folder or FIFO there)
        const std::string n = name, suffix = ".index.json";
        const bool index = n.size() > suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0;
        if (!index) return {p.string()};
        try {
            return shardsOf(dir, p.string());
        } catch (const PackageError& e) {
            if (!incomplete) incomplete = e;
        }
    }
    if (incomplete) throw *incomplete;
    throw PackageError(dir +
                       ": has neither model.safetensors nor pytorch_model.bin nor a sharded index of either (the "
                       "weights; with git, `git lfs pull` fetches them)");
}

std::string renameHfTensor(const std::string& name, bool to_attnlab) {
    std::string r = renameLayer(name, to_attnlab);
    return r.empty() ? renameStack(name, to_attnlab) : r;
}

model::Transformer loadHfWeights(const std::string& dir, const PackageConfig& config, const std::string& family,
                                 std::string* stored_dtype, model::ComputeType held) {
    const StoredMap file = listAll(dir);
    const std::string origin = file.empty() ? dir : file.begin()->second.file;
    if (file.empty()) throw PackageError(dir + ": the weights hold no tensor");
    Mapped m = mapNames(file, config.model, family, origin);
    checkAgainstConfig(m, config.model, origin);

    model::Transformer model(config.model, /*initialize=*/false, held);  // every tensor is read next
    model->eval();
    std::map<std::string, TensorFill> tensors;
    for (const auto& [name, stored] : m.ours) tensors[name] = {stored->copy_into, stored->rows};
    if (!m.ours.count("final_logits_bias") && model->final_logits_bias.defined())  // a buffer some savers leave out
        tensors["final_logits_bias"].copy_into = [](torch::Tensor& dst) { return dst.zero_().defined(); };
    fillModel(*model, tensors, [&](const std::string& name) {
        throw PackageError(m.ours.at(name)->file + ": tensor '" + hfName(name) + "' contains NaN or infinite values");
    });
    if (stored_dtype) {
        std::string d;
        for (const auto& x : m.dtypes) d += (d.empty() ? "" : "+") + x;
        *stored_dtype = d;
    }
    return model;
}

}  // namespace attnlab::package
