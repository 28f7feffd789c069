#pragma once
// The fixture that needs LibTorch's types: a model with random weights. Apart from fixtures.h so that the
// tests that only run programs, read files or use core's public headers compile without torch headers and
// without the torch precompiled header (tests/CMakeLists.txt, attnlab_torch_free_tests).

#include "fixtures.h"
#include "model/transformer.h"

namespace attnlab::testing {

// A model with random (Xavier) weights, seeded; eval mode.
model::Transformer randomModel(const ModelConfig& config, uint64_t seed);

}  // namespace attnlab::testing
