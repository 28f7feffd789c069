#pragma once
// A reader of Hugging Face `pytorch_model.bin` files: the zip archive `torch.save` writes
// (<archive>/data.pkl, <archive>/data/<key>, <archive>/version, [<archive>/byteorder]), read with
// no Python and no code from the file ever run. The archive is opened with LibTorch's
// caffe2::serialize::PyTorchStreamReader, data.pkl is parsed by the restricted unpickler of
// torch_pickle.h (a state dict's tensors, nothing else), and every tensor's extent is checked
// against its storage record before a byte of it is read.
// PyTorch's legacy (non-zip) format is refused with the one-line command that converts it.

#include <torch/torch.h>

#include <string>
#include <utility>
#include <vector>

namespace attnlab::package {

// The state dict's tensors in the file's order, each a contiguous CPU tensor of its own (a copy:
// tensors that share a storage, such as tied weights, come back as separate tensors with equal
// values). F16 and BF16 keep their dtype; the caller converts. Throws PackageError("<path>: <problem>").
std::vector<std::pair<std::string, torch::Tensor>> readTorchBin(const std::string& path);

}  // namespace attnlab::package
