#pragma once
// Model package weights: load (checked against the config before anything is allocated) and
// save (atomically: written under a temporary name, then renamed).

#include "model/transformer.h"

#include <attnlab/config.h>

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace attnlab::package {

using TensorShapes = std::vector<std::pair<std::string, std::vector<int64_t>>>;

// The tensors a package holds for this config, with shapes, computed from the config alone
// (parameters, then the two pos_table buffers, which are optional in a file).
TensorShapes expectedTensors(const ModelConfig& config);

// One tensor as a loader reads it into a new model (loadWeights, loadHfWeights, loadCt2Weights).
struct TensorFill {
    // Copies it whole into a float32 tensor of the model (of as many elements); false at a NaN or infinite value.
    std::function<bool(torch::Tensor& dst)> copy_into;
    // Rows [first, first + n) as float32 [n, columns], for a weight the model holds in int8 / bfloat16 (read a
    // chunk at a time into that copy: TransformerImpl::holdWeight); undefined at a NaN or infinite value.
    model::RowReader rows;
};

// Fills a model a loader built (in float32, or for a held compute type: TransformerImpl's `held`) from
// `tensors` (by the model's names): every tensor copied whole first, biases and norms included; then the
// held weights read a chunk of rows at a time, the largest first (an int8 output projection's plain copy and
// oneDNN's stand side by side while little else is held), then TransformerImpl::finishHolding. A tensor
// with a NaN or an infinite value: nonFinite(name) throws the loader's error.
void fillModel(model::TransformerImpl& model, const std::map<std::string, TensorFill>& tensors,
               const std::function<void(const std::string& name)>& nonFinite);

// Reads <dir>/model.safetensors into a new model built from `config` (on the CPU, eval mode), for `held`
// (float32: every weight in float32; int8 / bfloat16: those it holds in that type read straight into it).
// Throws PackageError naming the file and the problem. *stored_dtype receives "F32"/"F16"/"BF16".
model::Transformer loadWeights(const std::string& dir, const PackageConfig& config, std::string* stored_dtype = nullptr,
                               model::ComputeType held = model::ComputeType::Float32);

struct SaveOptions {
    std::string dtype = "F32";                       // "F32" or "F16" (halves the size; upcast on load)
    std::map<std::string, std::string> extra_files;  // name -> content (MODEL_CARD.md, logs ...)
    std::vector<std::string> copied_files;           // files copied in under their own names (an
                                                     // imported model's source.spm, target.spm, vocab.json)
    std::map<std::string, std::string> copied_as;    // name in the package -> the file copied there
};

// Writes config.json, model.safetensors and a copy of tokenizer_model (unless empty: the "marian"
// layout copies its files through options.copied_files) into `dir`, replacing it
// when it exists and may be replaced (whyNotReplaceable; PackageError otherwise). The package is assembled in a sibling
// temporary directory and renamed into place, so a crash never leaves a half-written package under `dir`.
void savePackage(const std::string& dir, const PackageConfig& config, model::Transformer& model,
                 const std::string& tokenizer_model, const SaveOptions& options = {});

}  // namespace attnlab::package
