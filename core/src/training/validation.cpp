#include "training/validation.h"

#include "decoding/engine.h"
#include "training/objective.h"

#include <attnlab/metrics.h>

#include <torch/torch.h>

#include <cmath>

namespace attnlab::training {

namespace {
void teacherForced(model::Transformer& model, const PackageConfig& pc, const Tokenizer& tok,
                   const data::ParallelCorpus& valid, const TrainingOptions& o, ValidationResult& v) {
    const auto enc = encode(tok, valid, static_cast<int>(pc.model.n_position) - 2);
    const auto batches = data::makeBatches(enc.examples, o.batch_tokens);
    double loss = 0;
    int64_t tokens = 0, correct = 0;
    for (const auto& b : batches) {
        auto t = toTensors(enc.examples, b, pc.model.trg_pad_idx, pc.bos_idx, pc.eos_idx, model->device());
        auto r = labelSmoothedLoss(model->forward(t.src, t.trg_in), t.gold.view(-1), 0.0, pc.model.trg_pad_idx);
        loss += r.loss_sum.item<double>();
        tokens += r.tokens;
        correct += r.correct;
    }
    v.loss = loss / double(std::max<int64_t>(tokens, 1));
    v.ppl = std::exp(v.loss);
    v.accuracy = double(correct) / double(std::max<int64_t>(tokens, 1));
}

void translated(const decoding::Engine& engine, const data::ParallelCorpus& valid, const TrainingOptions& o,
                ValidationResult& v) {
    std::vector<std::string> srcs, refs;
    const size_t n =
        o.valid_bleu_sentences > 0 ? std::min<size_t>(o.valid_bleu_sentences, valid.src.size()) : valid.src.size();
    for (size_t i = 0; i < n; ++i)
        if (!engine.inputProblem(valid.src[i])) {
            srcs.push_back(valid.src[i]);
            refs.push_back(valid.tgt[i]);
        }
    DecodingOptions d;
    d.beam_size = o.valid_beam;
    d.return_attention = false;
    d.top_k_candidates = 0;
    d.max_batch_size = 64;
    std::vector<std::string> hyps;
    for (const auto& r : engine.translate(srcs, d)) hyps.push_back(r.best.text);
    const auto bleu = corpusBleu(hyps, refs);
    v.bleu = bleu.score;
    v.signature = bleu.signature;
    v.chrf = corpusChrf(hyps, refs);
}
}  // namespace

ValidationResult validate(model::Transformer& model, const PackageConfig& pc, const std::string& tokenizer_model,
                          const data::ParallelCorpus& valid, const TrainingOptions& o) {
    ValidationResult v;
    torch::NoGradGuard ng;
    model->eval();
    decoding::Engine engine(pc, model, std::make_unique<Tokenizer>(tokenizer_model));
    teacherForced(model, pc, engine.tokenizer(), valid, o, v);
    translated(engine, valid, o, v);
    model->train();
    return v;
}

}  // namespace attnlab::training
