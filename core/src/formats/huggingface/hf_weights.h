#pragma once
// The weights of a Hugging Face encoder-decoder directory (MarianMT, M2M100 / NLLB-200, mBART), as
// transformers saves them: model.safetensors, pytorch_model.bin, or their shards listed by
// model.safetensors.index.json / pytorch_model.bin.index.json ({"weight_map": {name: file}}).
//
// Hugging Face's names become AttnLab's (the reference's module names; docs/marian.md and
// docs/multilingual.md list the mapping), each name and shape is checked against the config
// before the model is built, and the tensors are copied into the model's parameters one by one:
// a safetensors tensor in chunks of at most 64 MB, converted on the way, so that loading peaks at
// the model's size plus a chunk (a .bin file is read whole by LibTorch's zip reader).

#include "formats/huggingface/hf_config.h"  // kHfWeightFiles
#include "model/transformer.h"

#include <attnlab/config.h>

#include <string>
#include <vector>

namespace attnlab::package {

// The weight files, the first of kHfWeightFiles present (an index: its shards, each a plain file name in
// `dir`). Throws PackageError naming what is missing or wrong.
std::vector<std::string> hfWeightFiles(const std::string& dir);

// Reads, renames and checks the weights (F32, F16 or BF16), and returns the model on the CPU in
// eval mode. `family` names the model class in messages ("MarianMTModel"). Tied tensors stored
// once or several times are both accepted; several copies must be equal. *stored_dtype receives
// "F32" / "F16" / "BF16" (joined with '+' when mixed). held int8 / bfloat16: the weights the model holds in
// that type read straight into it, a chunk of rows at a time (as loadWeights).
model::Transformer loadHfWeights(const std::string& dir, const PackageConfig& config, const std::string& family,
                                 std::string* stored_dtype = nullptr,
                                 model::ComputeType held = model::ComputeType::Float32);

// "encoder.layers.3.fc1.weight" <-> "encoder.layer_stack.3.pos_ffn.w_1.weight", and the stacks'
// own tensors ("encoder.layer_norm" <-> "encoder.final_layer_norm", "encoder.layernorm_embedding"
// <-> "encoder.layer_norm"); empty when the name is neither a layer's nor a stack's.
std::string renameHfTensor(const std::string& name, bool to_attnlab);

}  // namespace attnlab::package
