// Cached (incremental, keys/values kept) beam search against full-prefix recomputation (what the
// reference's translator does), on the same model and sentences, beam 5, 20-token sources and
// outputs of up to 20 tokens. Both variants run in this one process, one after the other, and
// their outputs are compared: a mismatch aborts the benchmark.
//
// Model: ATTNLAB_BENCH_MODEL=<package dir> to use a trained package; otherwise a random model of
// the bundled model's shape (3+3 layers, d_model 256, 8 heads, d_inner 1024, vocabulary 8000).
//
// BM_TypedSentence (issue 25): one typed sentence through the public Translator (beam 5, maps and
// candidates, one thread as the app's policy gives one sentence), with the weights packed once
// (the default) and with at::linear, each on the idle machine and with two busy processes that the
// benchmark starts and stops around its own runs (busy_load.h).
//
//   build/bin/bench_decoding --benchmark_repetitions=3
//   build/bin/bench_decoding --benchmark_filter=TypedSentence
#include "busy_load.h"
#include "decoding/engine.h"
#include "decoding/search.h"

#include <attnlab/attention_flow.h>
#include <attnlab/package.h>
#include <attnlab/translator.h>

#include <benchmark/benchmark.h>
#include <torch/torch.h>

#include <cstdlib>
#include <iostream>
#include <memory>

namespace {
using namespace attnlab;

struct Setup {
    model::Transformer model{nullptr};
    std::unique_ptr<decoding::Engine> engine;
    torch::Tensor src;  // [8, 20]
    decoding::SearchOptions options;
    std::vector<std::vector<decoding::Hyp>> cached_result;
};

Setup& setup() {
    static Setup shared = [] {
        Setup s;
        const char* threads = std::getenv("ATTNLAB_THREADS");
        setComputeThreads(threads ? std::atoi(threads) : 0);
        int64_t vocab = 8000;
        if (const char* dir = std::getenv("ATTNLAB_BENCH_MODEL"); dir && *dir) {
            s.engine = std::make_unique<decoding::Engine>(dir, TranslatorOptions{"cpu"});
            s.model = s.engine->model();
            vocab = s.model->config().n_trg_vocab;
        } else {
            ModelConfig c;
            c.n_src_vocab = c.n_trg_vocab = vocab;
            c.d_word_vec = c.d_model = 256;
            c.d_inner = 1024;
            c.n_layers = 3;
            c.n_head = 8;
            c.d_k = c.d_v = 32;
            c.scale_emb_or_prj = "emb";
            torch::manual_seed(1);
            s.model = model::Transformer(c);
        }
        s.model->eval();
        torch::manual_seed(2);
        s.src = torch::randint(4, vocab, {32, 20});
        s.src.select(1, 19).fill_(3);  // </s>
        s.options.beam_size = 5;
        s.options.nbest = 1;
        s.options.max_lengths.assign(32, 20);
        return s;
    }();
    return shared;
}

std::vector<std::vector<decoding::Hyp>> run(decoding::StepperKind kind, int64_t sentences) {
    Setup& s = setup();
    torch::NoGradGuard g;
    auto src = s.src.slice(0, 0, sentences);
    auto stepper = decoding::makeStepper(kind, s.model, src);
    auto o = s.options;
    o.max_lengths.resize(sentences);
    return decoding::beamSearch(*stepper, sentences, o);
}

void BM_BeamSearch(benchmark::State& state) {
    const auto kind = state.range(0) == 0 ? decoding::StepperKind::Cached : decoding::StepperKind::Full;
    const int64_t batch = state.range(1);
    std::vector<std::vector<decoding::Hyp>> out;
    for (auto _ : state) out = run(kind, batch);
    // Identical outputs: compare with the cached search on the same sentences.
    auto reference = run(decoding::StepperKind::Cached, batch);
    for (size_t i = 0; i < out.size(); ++i)
        if (out[i][0].tokens != reference[i][0].tokens) {
            state.SkipWithError("cached and full recomputation disagree");
            return;
        }
    int64_t tokens = 0;
    for (const auto& h : out) tokens += static_cast<int64_t>(h[0].tokens.size());
    state.counters["sentences/s"] = benchmark::Counter(double(batch), benchmark::Counter::kIsIterationInvariantRate);
    state.counters["out_tokens"] = double(tokens);
}

// A whole translation through the public Translator (search, attention maps, candidates) with and
// without the search's trace (issue 11: the trace should add at most 10 %). The bundled model, or
// ATTNLAB_BENCH_MODEL.
Translator makeTranslator(bool packed) {
    const char* dir = std::getenv("ATTNLAB_BENCH_MODEL");
    const char* threads = std::getenv("ATTNLAB_THREADS");
    TranslatorOptions o{"cpu", threads ? std::atoi(threads) : 0};
    o.packed_weights = packed;
    return Translator(dir && *dir ? dir : defaultModelDir(), o);
}

const Translator& translator(bool packed = true) {
    static const Translator with = makeTranslator(true), without = makeTranslator(false);
    return packed ? with : without;
}

const char* const kCaption =
    "Ein Mann mit einer roten Jacke fährt mit seinem Fahrrad über eine alte Brücke in der Stadt.";

// Args: {1 = weights packed once (default), 0 = at::linear}, {busy processes beside it}.
void BM_TypedSentence(benchmark::State& state) {
    const Translator& t = translator(state.range(0) == 1);
    t.translate(kCaption);  // the packing, and the first call's allocations, before the clock
    bench::BusyLoad load(int(state.range(1)));
    if (load.started()) usleep(200000);  // let the scheduler spread them
    size_t pieces = 0;
    for (auto _ : state) pieces = t.translate(kCaption).best.pieces.size();
    state.counters["out_pieces"] = double(pieces);
}

void BM_TranslateTrace(benchmark::State& state) {
    DecodingOptions o;
    o.record_trace = state.range(0) == 1;
    size_t nodes = 0;
    for (auto _ : state) {
        const auto r = translator().translate(kCaption, o);
        nodes = 0;
        for (const auto& step : r.trace) nodes += step.hypotheses.size();
    }
    state.counters["trace_nodes"] = double(nodes);
}

// A translation with its maps, alone (0) and with the value-norm and rollout maps of issue 27 (1):
// value norms need one more teacher-forced pass with every attention module captured. Two captions
// in turn, so that the pass explain() and valueNorms() keep for one translation is never reused.
void BM_MapsBeyondWeights(benchmark::State& state) {
    const Translator& t = translator();
    DecodingOptions o;
    size_t cells = 0;
    const char* const captions[2] = {kCaption,
                                     "Zwei Hunde spielen mit einem roten Ball auf einer grünen Wiese im Park."};
    int turn = 0;
    for (auto _ : state) {
        const auto r = t.translate(captions[turn ^= 1], o);
        if (state.range(0) == 0) continue;
        const auto norms = t.valueNorms(r);
        const auto weighted = weightedByValueNorms(r.cross, norms.cross);
        const auto encoder = attentionRollout(r.encoder_self);
        const auto cross = crossRollout(r.cross, encoder.back());
        const auto decoder = attentionRollout(r.decoder_self);
        cells = weighted.size() + cross.size() + decoder.size();
    }
    state.counters["maps"] = double(cells);
}

// Gradient x input of every source and previous target piece for every produced piece (issue 27:
// at most 1 s for a 20-piece sentence on two cores): one forward and one backward pass over as many
// copies of the pair as it has target pieces. The translation is made once, outside the clock.
void BM_Saliency(benchmark::State& state) {
    const Translator& t = translator();
    const auto r = t.translate(kCaption);
    size_t cells = 0;
    for (auto _ : state) {
        const auto s = t.saliency(r);
        cells = s.source.size() * (s.source.front().size() + s.target.front().size());
    }
    state.counters["target_pieces"] = double(r.best.ids.size());
    state.counters["source_pieces"] = double(r.source_ids.size());
    state.counters["cells"] = double(cells);
}

// A typed sentence's translation (beam 4, every map: what the app shows; Arg -1) against its ALTI+ contributions
// (issue 54, Arg 0: one teacher-forced pass and the decomposition of every attention block) and its value zeroing
// (Arg 1: every layer recomputed once per key with that key's values zeroed) and a contrastive question (Arg 2),
// side by side in one run: scripts/bench_contributions.sh reports the ratio at OPUS-MT base shape
// (ATTNLAB_BENCH_MODEL; the sentence ATTNLAB_BENCH_SENTENCE, the output capped at ATTNLAB_BENCH_MAX_LEN). The
// translation is made once, outside the clock, for the contributions.
void BM_Contributions(benchmark::State& state) {
    const Translator& t = translator();
    DecodingOptions o;
    o.beam_size = 4;
    if (const char* cap = std::getenv("ATTNLAB_BENCH_MAX_LEN"); cap && *cap) o.max_length = std::atoi(cap);
    const char* text = std::getenv("ATTNLAB_BENCH_SENTENCE");
    const std::string sentence = text && *text ? text : kCaption;
    const auto r = t.translate(sentence, o);
    // Method 2: contrastive (the saliency and the value zeroing of the difference) at the middle step, against the
    // step's runner-up.
    const int step = int(r.best.ids.size()) / 2;
    const auto& candidates = r.steps.at(size_t(step)).candidates;
    const ContrastiveQuery question{step, candidates.at(candidates.at(0).id == r.best.ids[size_t(step)] ? 1 : 0).piece};
    for (auto _ : state) {
        if (state.range(0) < 0)
            benchmark::DoNotOptimize(t.translate(sentence, o));
        else if (state.range(0) == 2)
            benchmark::DoNotOptimize(t.contrastive(r, question));
        else
            benchmark::DoNotOptimize(t.contributions(r, kContributionMethods[state.range(0)]));
    }
    state.counters["target_pieces"] = double(r.best.ids.size());
    state.counters["source_pieces"] = double(r.source_ids.size());
}

}  // namespace

BENCHMARK(BM_Contributions)
    ->ArgNames({"method"})
    ->Arg(-1)
    ->Arg(0)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(3.0)
    ->UseRealTime();

BENCHMARK(BM_Saliency)->Unit(benchmark::kMillisecond)->MinTime(3.0)->UseRealTime();

BENCHMARK(BM_MapsBeyondWeights)
    ->ArgNames({"value_norm_and_rollout"})
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(3.0)
    ->UseRealTime();

BENCHMARK(BM_TypedSentence)
    ->ArgNames({"packed", "busy"})
    ->Args({1, 0})
    ->Args({1, 2})
    ->Args({0, 0})
    ->Args({0, 2})
    ->Unit(benchmark::kMillisecond)
    ->MinTime(3.0)
    ->UseRealTime();

BENCHMARK(BM_TranslateTrace)
    ->ArgNames({"trace"})
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(3.0)
    ->UseRealTime();

// Args: {0 = cached, 1 = full recomputation}, {sentences per batch}.
BENCHMARK(BM_BeamSearch)
    ->ArgNames({"full", "batch"})
    ->Args({0, 1})
    ->Args({1, 1})
    ->Args({0, 8})
    ->Args({1, 8})
    ->Args({0, 32})
    ->Args({1, 32})
    ->Unit(benchmark::kMillisecond)
    ->MinTime(2.0)
    ->UseRealTime();

BENCHMARK_MAIN();
