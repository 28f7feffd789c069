#pragma once
// A restricted unpickler for the data.pkl of a `torch.save`d state dict (the zip archive a
// Hugging Face `pytorch_model.bin` is). It is not Python's unpickler: it runs no code and builds
// no object of the file's choosing. It knows only the opcodes torch 1.x/2.x write for a state dict
// (protocols 2 to 5) and only the globals a state dict uses — collections.OrderedDict,
// torch._utils._rebuild_tensor_v2, _rebuild_parameter(_with_state) and the torch.*Storage types —
// and refuses anything else by name (`refuses global 'posix.system'`). Like the safetensors reader
// it trusts nothing the bytes say: string lengths are checked against the input, the memo, the
// stack and the marks are bounded, every tensor's shape, stride and offset are checked against
// int64 overflow, and a storage key is one torch could have written.
// Torch-free on purpose: the fuzzer and the tests use it without LibTorch (torch_bin.h reads the
// storages).

#include <cstdint>
#include <string>
#include <vector>

namespace attnlab::package {

struct PickledTensor {
    std::string name;         // the state dict's key
    std::string storage_key;  // the storage's record: <archive>/data/<storage_key>
    std::string dtype;        // "F32", "F16", "BF16", "F64", "I64", "I32", "I16", "I8", "U8", "BOOL"
    std::vector<int64_t> shape, stride;
    int64_t storage_offset = 0;  // in elements
};

// Parses data.pkl and returns the state dict's tensors in its order. A name that appears twice is
// refused; names that share a storage (tied weights) each come back. Throws
// PackageError("<origin>: <problem>").
std::vector<PickledTensor> parseStateDictPickle(const std::string& bytes, const std::string& origin);

// The bytes of its storage that a tensor parseStateDictPickle returned reaches:
// (storage_offset + 1 + sum (shape[i] - 1) * stride[i]) * element size, or 0 for an empty tensor.
// parseStateDictPickle has checked that this does not overflow (it is at most 2^62).
uint64_t storageBytesNeeded(const PickledTensor& tensor);

}  // namespace attnlab::package
