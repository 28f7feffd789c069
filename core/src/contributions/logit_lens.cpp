// The logit lens on the decoder (attnlab/contributions.h, issue 54; docs/contributions.md "The logit lens"): each
// decoder layer's output at every target position sent through what the model puts after its last layer and its
// output projection. After the last layer the model applies its final layer norm (pre-norm M2M100 / NLLB / mBART:
// ModelConfig::final_layer_norm) and nothing else (post-norm Marian and the reference: every layer ends in its own
// layer norm already), so every layer's output goes through exactly that: the last layer's row is the model's own
// distribution. project() brings scale_emb_or_prj "prj"'s d_model^-0.5 and final_logits_bias, as the search's.
#include "decoding/engine.h"
#include "model/masks.h"
#include "util/device.h"
#include "util/torch_errors.h"

#include <attnlab/errors.h>
#include <attnlab/translator.h>

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace attnlab {

LogitLens Translator::logitLens(const TranslationResult& result, int top) const {
    return m_engine->logitLens(result, top);
}

namespace decoding {
namespace {
// Each decoder layer's output [tgt, d_model] in a teacher-forced pass, through the final layer norm where the model
// has one.
std::vector<torch::Tensor> lensInputs(model::Transformer& m, const torch::Tensor& src, const torch::Tensor& trg_in) {
    const ModelConfig& cfg = m->config();
    const auto src_mask = model::padMask(src, cfg.src_pad_idx);
    const auto trg_mask = model::decoderMask(trg_in, cfg.trg_pad_idx);
    const auto memory = m->encode(src);
    auto& dec = m->decoder;
    auto y = dec->embed(trg_in, 0);
    std::vector<torch::Tensor> out;
    for (const auto& layer : *dec->layer_stack) {
        y = std::get<0>(layer->as<model::DecoderLayer>()->forward(y, memory, trg_mask, src_mask));
        out.push_back((dec->final_layer_norm ? dec->final_layer_norm(y) : y)[0]);
    }
    return out;
}

// Positions projected at a time: the logits of a chunk, [positions, vocabulary] in float32, are at most 32 MB for
// NLLB's 256,206 pieces, however long the translation.
constexpr int64_t kLensPositions = 32;

// The cells of positions first.. of one layer from their logits [n, vocabulary]: the `top` most probable pieces, the
// chosen piece's probability and its rank (how many pieces are more probable). Only the n x top numbers and the n
// chosen ones leave the model's device.
void addCells(std::vector<LogitLensCell>& cells, const torch::Tensor& logits, const std::vector<int>& chosen,
              size_t first, int top, const TextCodec& codec) {
    const auto logp = torch::log_softmax(logits.to(torch::kFloat32), -1);
    const int64_t n = logp.size(0);
    const std::vector<int64_t> ids(chosen.begin() + long(first), chosen.begin() + long(first) + n);
    const auto chosen_logp = logp.gather(1, torch::tensor(ids, torch::kInt64).to(logp.device()).unsqueeze(1));
    const auto ranks = (logp > chosen_logp).sum(-1).to(torch::kCPU);
    const auto chosen_cpu = chosen_logp.to(torch::kCPU, torch::kFloat64);
    const auto [top_logp, top_ids] = logp.topk(top, -1);
    const auto top_cpu = top_logp.to(torch::kCPU, torch::kFloat64), ids_cpu = top_ids.to(torch::kCPU);
    for (int64_t i = 0; i < n; ++i) {
        LogitLensCell cell;
        cell.chosen_probability = std::exp(chosen_cpu[i][0].item<double>());
        cell.chosen_rank = static_cast<int>(ranks[i].item<int64_t>());
        for (int k = 0; k < top; ++k) {
            const int id = static_cast<int>(ids_cpu[i][k].item<int64_t>());
            cell.top.push_back({codec.idToPiece(id), id, std::exp(top_cpu[i][k].item<double>())});
        }
        cells.push_back(std::move(cell));
    }
}
}  // namespace

LogitLens Engine::logitLens(const TranslationResult& r, int top) const {
    if (r.source_ids.empty() || r.best.ids.empty()) throw InputError("logit lens: the translation is empty");
    const int64_t vocab = m_config.model.n_trg_vocab;
    if (top < 1 || top > vocab)
        throw InputError("logit lens: top " + std::to_string(top) + " is out of range: 1.." + std::to_string(vocab));
    return util::translatingTorchErrors("computing the logit lens", [&] {
        util::ThreadScope threads(threadsForRows(int64_t(r.best.ids.size())));
        torch::NoGradGuard no_grad;
        Source src, trg;
        src.ids = r.source_ids;
        trg.ids = r.best.ids;
        const auto tensors = forcedTensors({&src}, {&trg});
        const auto ablation = ablateHeads(r.ablated);  // the model whose output the translation is
        model::Transformer model = m_model;
        LogitLens lens;
        lens.pieces = r.best.pieces;
        for (const auto& h : lensInputs(model, tensors.src, tensors.trg_in)) {
            std::vector<LogitLensCell> cells;
            for (int64_t first = 0; first < h.size(0); first += kLensPositions)
                addCells(cells, model->project(h.narrow(0, first, std::min(kLensPositions, h.size(0) - first))),
                         r.best.ids, size_t(first), top, *m_tokenizer);
            lens.layers.push_back(std::move(cells));
        }
        return lens;
    });
}

}  // namespace decoding
}  // namespace attnlab
