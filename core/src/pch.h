// Precompiled header of attnlab_core (and of the tests that reuse it): LibTorch's headers
// cost ~40 s per translation unit without it.
#pragma once
#include <torch/torch.h>

#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <string>
#include <vector>
