#pragma once
// The weights of a CTranslate2 model.bin into AttnLab's Transformer (formats/ctranslate2/ct2_model.h says where
// each tensor is): float32, float16 and bfloat16 converted, int8 and int16 dequantized (q / scale:
// a scale per output row for int8, one for int16), the fused projections split; every shape checked
// against the config before the model is built, and each variable copied in chunks of rows (at
// most kChunkBytes), so that loading peaks at the model's size plus a chunk.

#include "formats/ctranslate2/ct2_model.h"
#include "model/transformer.h"

namespace attnlab::package {

// held int8 / bfloat16: the weights the model holds in that type read straight into it, a chunk of rows at a
// time (TransformerImpl's `held`; quantized while reading, issue 53), so that loading peaks at about what the
// model holds afterwards.
// Throws PackageError naming model.bin and the variable: a shape that disagrees with the config, a
// dtype the reader does not convert (int32), NaN or infinite values.
model::Transformer loadCt2Weights(const Ct2Model& m, model::ComputeType held = model::ComputeType::Float32);

}  // namespace attnlab::package
