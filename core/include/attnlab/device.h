#pragma once
// Compute devices and threads, in std types (the GUI's device menu, the CLI's --device/--threads).
#include <string>

namespace attnlab {

// True when LibTorch sees a CUDA device (false on Debian's CPU-only LibTorch).
bool cudaAvailable();

// Sets LibTorch's intra-op thread count (0 = $OMP_NUM_THREADS when set, else every core);
// returns the count set.
int setComputeThreads(int threads);

}  // namespace attnlab
