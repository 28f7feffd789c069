#pragma once
// Hugging Face MarianMT directories (OPUS-MT and every model saved by MarianMTModel): config.json
// with "model_type": "marian", model.safetensors or pytorch_model.bin, source.spm, target.spm,
// vocab.json, optional generation_config.json and tokenizer_config.json.
//
// They become an AttnLab PackageConfig (the architecture fields say what Marian does differently
// from the reference: swish, attention biases, layer-norm epsilon 1e-5, no embedding layer norm,
// sqrt(d_model) embedding scale, half-split sinusoids, final_logits_bias, eos/pad/start ids) and a
// model::Transformer with the weights renamed to AttnLab's keys. docs/marian.md lists the mapping.

#include "model/transformer.h"

#include <attnlab/config.h>

#include <optional>
#include <string>
#include <vector>

namespace attnlab::package {

// Whether `dir` holds a Hugging Face model (a config.json with a "model_type" key) rather than an
// AttnLab package.
bool isHuggingFaceDirectory(const std::string& dir);

// config.json (+ generation_config.json, tokenizer_config.json, vocab.json) -> PackageConfig.
// Throws PackageError naming the file and the problem: another model_type, pre-layer-norm,
// different encoder and decoder head counts, an unknown activation, ...
PackageConfig readMarianConfig(const std::string& dir);
// The part of it that config.json alone decides (the fuzz target): languages "src"/"tgt", unk 1.
PackageConfig marianConfigFromJson(const std::string& json_text, const std::string& origin);

// The weights file of the directory: model.safetensors when present, else pytorch_model.bin.
std::string marianWeightsPath(const std::string& dir);

// Reads the weights (F32, F16 or BF16), renames and checks them against `config` (a missing or
// misshapen tensor is an error naming it; tied tensors stored once or several times are both
// accepted, but several copies must be equal), and returns the model on the CPU in eval mode.
// *stored_dtype receives "F32" / "F16" / "BF16" (joined with '+' when mixed). held: as loadHfWeights'.
model::Transformer loadMarianWeights(const std::string& dir, const PackageConfig& config,
                                     std::string* stored_dtype = nullptr,
                                     model::ComputeType held = model::ComputeType::Float32);

// A few lines for the model card of an imported package: where it came from and what was mapped.
std::string marianModelCard(const std::string& dir, const PackageConfig& config);

}  // namespace attnlab::package
