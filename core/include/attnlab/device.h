#pragma once
// Compute devices and threads, in std types (the GUI's device menu, the CLI's --device/--threads).
#include <cstddef>
#include <cstdint>
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

struct ModelConfig;

// The thread policy (docs/benchmarks.md, "Threads by measured work (issue 53)"):
//  - threads by the work of a call, not by where its lines come from: LibTorch's threads share each
//    product of a decoding step, which pays only when the step is large beside the threads' meeting
//    at its end. The work is the multiply-adds of one step (stepMultiplyAdds: the rows a step carries,
//    a batch's sentences x the beam, times the decoder's weights and the output projection). A call
//    gets one thread until that work reaches secondThreadFrom(compute type), then one thread for
//    every multiplyAddsPerThread(compute type) of it, at least two, at most every core. The first
//    figure is where a second thread began to make a step faster on an idle machine whose waiting
//    threads sleep (scripts/bench_threads.sh: a wake-up through the kernel at every parallel region is
//    paid back only by large steps); the bundled model's sentences and batches stay on one thread, a
//    batch of 32 of OPUS-MT base shape at beam 5 uses every core.
//  - waiting threads sleep (OMP_WAIT_POLICY=passive, for libgomp and so for LibTorch, OpenBLAS and
//    oneDNN, which use its threads here) in every executable: attnlab-cli, attnlab, bench_ui and
//    bench_decoding are a small launcher (app/launcher) that sets it, unless the user set a policy,
//    and runs the real program beside it (<name>.real) in its place. libgomp reads the variable once,
//    before main(), so a program could otherwise only run itself again, loading LibTorch twice.
//    Spinning threads cost little on an idle machine and tens of times the work when another process
//    holds the other core.

// The multiply-adds of one decoding step of `model` carrying `rows` hypotheses (a batch's sentences x
// the beam): per row, each decoder layer's self-attention (q, k, v, out), cross-attention (q, out: its
// keys and values are computed once per sentence) and feed-forward pair, then the output projection.
double stepMultiplyAdds(const ModelConfig& model, int64_t rows);
// The multiply-adds a step needs per thread computing in `compute_type` (float32 | int8 | bfloat16;
// TranslatorOptions::compute_type), from the table in device.cpp.
double multiplyAddsPerThread(const std::string& compute_type);
// The multiply-adds of a step from which a call computing in `compute_type` gets a second thread.
double secondThreadFrom(const std::string& compute_type);

// The threads for a call of `model` whose steps carry `rows` hypotheses: `requested` when > 0
// (--threads, then $ATTNLAB_THREADS, then $OMP_NUM_THREADS: requestedThreads), else the policy above.
int threadsFor(int requested, const ModelConfig& model, int64_t rows, const std::string& compute_type);
// --threads when > 0, else $ATTNLAB_THREADS, else $OMP_NUM_THREADS, else 0 (the policy).
int requestedThreads(int option);

}  // namespace attnlab
