#pragma once
// Compute devices and threads, in std types (the GUI's device menu, the CLI's --device/--threads).
#include <cstddef>
#include <optional>
#include <string>

namespace attnlab {

// True when LibTorch sees a CUDA device (false on Debian's CPU-only LibTorch).
bool cudaAvailable();

// True for the device names AttnLab takes (translator, trainer, --device): "auto" (CUDA when
// available, else the CPU), "cpu", "cuda", "cuda:N". Whether that device exists is checked when a
// model is put on it.
bool isDeviceName(const std::string& name);
inline constexpr const char* kDeviceNames = "auto, cpu, cuda, cuda:N";

// Why this build or this processor cannot compute in `compute_type` (TranslatorOptions::compute_type:
// float32 | int8 | bfloat16); nothing when it can. What the GUI's compute-type switch offers.
std::optional<std::string> computeTypeUnavailable(const std::string& compute_type);

// Sets LibTorch's intra-op thread count (0 = $OMP_NUM_THREADS when set, else every core);
// returns the count set.
int setComputeThreads(int threads);

// The thread policy (docs/benchmarks.md, "Under load"): LibTorch's OpenMP threads spin while they
// wait for each other, which costs nothing on an idle machine and 70-100x when another process
// holds the other core. So:
//  - in the desktop app, waiting threads sleep (OMP_WAIT_POLICY=passive) unless the user set a
//    policy; libgomp reads it once, when it starts, so the app calls this first thing in main() and
//    runs itself again once with the variable set (execv of /proc/self/exe; if that fails, or the
//    program was started through another one such as ld.so or valgrind, it goes on as it is). The
//    CLI does not (its start would take twice as long in every script): with one thread for small
//    work nothing waits there, and batches on every core are where spinning pays;
//  - work of one or two sentences (what a person types) runs on one thread, larger work on every
//    core (threadsFor), counted per call, not per batch: a file translated with --batch-size 1 is large
//    work. One thread keeps a typed sentence fast on a busy machine (int8 at OPUS-MT base size: 51 ms
//    idle on one thread, 41 ms on two; under two busy processes 87 ms on one, 184 ms on two).
void relaunchWithPassiveThreads(char** argv);

// The threads a piece of work of `sentences` sentences at a time (a batch) gets: `requested` when > 0 (--threads, then
// $ATTNLAB_THREADS, then $OMP_NUM_THREADS: requestedThreads), else the policy above.
int threadsFor(int requested, size_t sentences);
// --threads when > 0, else $ATTNLAB_THREADS, else $OMP_NUM_THREADS, else 0 (the policy).
int requestedThreads(int option);
// Work of at most this many sentences is interactive (one thread).
inline constexpr size_t kInteractiveSentences = 2;

}  // namespace attnlab
