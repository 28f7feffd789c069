#pragma once
// Model package weights: load (checked against the config before anything is allocated) and
// save (atomically: written under a temporary name, then renamed).

#include "model/transformer.h"

#include <attnlab/config.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace attnlab::package {

using TensorShapes = std::vector<std::pair<std::string, std::vector<int64_t>>>;

// The tensors a package holds for this config, with shapes, computed from the config alone
// (parameters, then the two pos_table buffers, which are optional in a file).
TensorShapes expectedTensors(const ModelConfig& config);

// Reads <dir>/model.safetensors into a new model built from `config` (on the CPU, eval mode).
// Throws PackageError naming the file and the problem. *stored_dtype receives "F32"/"F16"/"BF16".
model::Transformer loadWeights(const std::string& dir, const PackageConfig& config,
                               std::string* stored_dtype = nullptr);

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
