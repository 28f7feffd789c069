// Engine::saliency, Engine::headGateGradients (attnlab/gradients.h) and Engine::contrastive (attnlab/contributions.h;
// its value zeroing: contributions/value_zeroing.cpp):
// what the gradients of a teacher-forced pass say. Each runs the model with autograd on (its inference shortcuts,
// packed weights and the fused attention step, stand aside then) and takes the gradient with respect to tensors put
// into the pass for that purpose, never to the weights.
#include "contributions/value_zeroing.h"
#include "decoding/engine.h"
#include "model/low_precision.h"
#include "util/device.h"
#include "util/text.h"
#include "util/torch_errors.h"

#include <attnlab/errors.h>

#include <torch/torch.h>

#include <algorithm>

namespace attnlab::decoding {

namespace {
// Every attention module of the model, [kind][layer] in AttentionKind's order.
std::vector<std::vector<model::MultiHeadAttention>> attentionModules(model::Transformer& m) {
    std::vector<std::vector<model::MultiHeadAttention>> out;
    for (AttentionKind kind : attentionKinds()) {
        out.emplace_back();
        for (int64_t l = 0; l < m->config().layers(kind); ++l) out.back().push_back(m->attention(kind, l));
    }
    return out;
}

// Puts a [batch, heads] gate of ones, needing a gradient, on every head for one pass; takes them
// off (back to every head kept) when destroyed.
class HeadGates {
public:
    HeadGates(model::Transformer& m, int64_t batch, torch::Device device) : m_modules(attentionModules(m)) {
        for (auto& kind : m_modules)
            for (auto& module : kind) {
                auto gate =
                    torch::ones({batch, module->n_head}, torch::TensorOptions().device(device).requires_grad(true));
                module->head_keep = gate;
                m_gates.push_back(gate);
            }
    }
    ~HeadGates() {
        for (auto& kind : m_modules)
            for (auto& module : kind) module->head_keep = torch::Tensor();
    }
    HeadGates(const HeadGates&) = delete;
    HeadGates& operator=(const HeadGates&) = delete;
    const std::vector<torch::Tensor>& gates() const { return m_gates; }  // [kind][layer] flattened

private:
    std::vector<std::vector<model::MultiHeadAttention>> m_modules;
    std::vector<torch::Tensor> m_gates;
};

// Points the encoder's and decoder's `embedded` at two tensors for one pass.
class EmbeddingTap {
public:
    explicit EmbeddingTap(model::Transformer& m) : m_model(m) {
        m->encoder->embedded = &source;
        m->decoder->embedded = &target;
    }
    ~EmbeddingTap() {
        m_model->encoder->embedded = nullptr;
        m_model->decoder->embedded = nullptr;
    }
    EmbeddingTap(const EmbeddingTap&) = delete;
    EmbeddingTap& operator=(const EmbeddingTap&) = delete;
    torch::Tensor source, target;

private:
    model::Transformer& m_model;
};

Matrix toMatrix(const torch::Tensor& t) {
    auto c = t.detach().to(torch::kCPU, torch::kFloat32).contiguous();
    Matrix out(static_cast<size_t>(c.size(0)));
    for (int64_t i = 0; i < c.size(0); ++i)
        out[size_t(i)].assign(c[i].data_ptr<float>(), c[i].data_ptr<float>() + c.size(1));
    return out;
}
}  // namespace

Saliency Engine::saliency(const TranslationResult& r) const {
    if (r.source_ids.empty() || r.best.ids.empty()) throw InputError("saliency: the translation is empty");
    return util::translatingTorchErrors("computing saliency", [&] {
        const int64_t T = static_cast<int64_t>(r.best.ids.size());
        util::ThreadScope threads(threadsForRows(T * T));  // T copies of the pair, T positions each
        torch::AutoGradMode grad(true);
        Source src, trg;
        src.ids = r.source_ids;
        trg.ids = r.best.ids;
        // One copy of the pair per target token: row t's loss is log p(y_t), so one backward pass
        // gives every token's gradient (the rows do not interact).
        const std::vector<const Source*> srcs(size_t(T), &src), trgs(size_t(T), &trg);
        auto [src_t, trg_in, gold] = forcedTensors(srcs, trgs);
        model::Transformer model = m_model;
        const auto ablation = ablateHeads(r.ablated);  // the model whose output the translation is
        EmbeddingTap tap(model);
        auto logp = torch::log_softmax(model->forwardFull(src_t, trg_in).to(torch::kFloat32), -1);
        auto rows = torch::arange(T, torch::TensorOptions().dtype(torch::kInt64).device(m_device));
        auto chosen = logp.index({rows, rows, gold.index({rows, rows})});  // log p(y_t) of row t
        auto grads = torch::autograd::grad({chosen.sum()}, {tap.source, tap.target});
        Saliency s;
        s.source = toMatrix((grads[0] * tap.source).sum(-1));  // [T, source length]
        s.target = toMatrix((grads[1] * tap.target).sum(-1));  // [T, T]: the decoder's input positions
        return s;
    });
}

HeadGateGradients Engine::headGateGradients(const std::vector<std::string>& sources,
                                            const std::vector<std::string>& targets, const DecodingOptions& o,
                                            const StepCallback& on_batch) const {
    o.validate();
    std::vector<Source> src, trg;
    preparePairs(sources, targets, languageIds(o), src, trg);
    const auto order = lengthOrder(src, trg);
    util::ThreadScope threads(threadsForRows(forcedRows(trg, o.max_batch_size)));
    return util::translatingTorchErrors("computing head gradients", [&] {
        torch::AutoGradMode grad(true);
        model::Transformer model = m_model;
        HeadGateGradients out;
        const auto& cfg = m_config.model;
        for (AttentionKind kind : attentionKinds())
            for (int l = 0; l < int(cfg.layers(kind)); ++l)
                for (int h = 0; h < int(cfg.n_head); ++h) out.heads.push_back({kind, l, h});
        out.per_pair.assign(src.size(), {});
        out.loss.assign(src.size(), 0.0);
        const size_t batch_size = static_cast<size_t>(o.max_batch_size);
        for (size_t begin = 0; begin < order.size(); begin += batch_size) {
            const size_t end = std::min(order.size(), begin + batch_size);
            if (on_batch) {
                StepProgress p{static_cast<int>(begin), static_cast<int>(end), static_cast<int>(order.size()), 0, 1};
                if (!on_batch(p)) throw CancelledError();
            }
            std::vector<const Source*> bs, bt;
            for (size_t i = begin; i < end; ++i) bs.push_back(&src[order[i]]), bt.push_back(&trg[order[i]]);
            auto [src_t, trg_in, gold] = forcedTensors(bs, bt);
            HeadGates gates(model, static_cast<int64_t>(bs.size()), m_device);
            auto logp = torch::log_softmax(model->forwardFull(src_t, trg_in).to(torch::kFloat32), -1);
            auto nll = -logp.gather(2, gold.unsqueeze(2)).squeeze(2) * gold.ne(cfg.trg_pad_idx);
            auto loss = nll.sum(1);  // [b]: each pair's own loss, so d(sum)/d gate[i] is pair i's
            auto grads = torch::autograd::grad({loss.sum()}, gates.gates());
            auto all = torch::cat(grads, 1).abs().to(torch::kCPU, torch::kFloat64).contiguous();  // [b, heads]
            auto losses = loss.detach().to(torch::kCPU, torch::kFloat64).contiguous();
            for (size_t i = 0; i < bs.size(); ++i) {
                const double* row = all[int64_t(i)].data_ptr<double>();
                out.per_pair[order[begin + i]].assign(row, row + all.size(1));
                out.loss[order[begin + i]] = losses[int64_t(i)].item<double>();
            }
        }
        return out;
    });
}

namespace {
const std::string kSpmWordStart = "\xE2\x96\x81";  // SentencePiece's "▁": the piece starts a word

bool startsWord(const std::string& piece) { return piece.rfind(kSpmWordStart, 0) == 0; }

// The target vocabulary's id of `piece`, or of "▁" + piece (a word typed without SentencePiece's marker), looked up
// in the vocabulary (TextCodec::pieceToId). A SentencePiece vocabulary holds "▁dog" and "dog" apart: where the
// chosen piece starts a word, a word typed in its place means the word-initial piece, so "▁" + piece comes first;
// within a word the bare piece comes first. -1 when the vocabulary has neither.
int targetPieceId(const TextCodec& codec, const std::string& piece, const std::string& chosen) {
    if (startsWord(piece)) return codec.pieceToId(piece);
    const std::string marked = kSpmWordStart + piece;
    const bool word = startsWord(chosen);
    for (const std::string* wanted : {word ? &marked : &piece, word ? &piece : &marked})
        if (const int id = codec.pieceToId(*wanted); id >= 0) return id;
    return -1;
}

// The alternative's id for query `q` at a translation's step whose chosen id is `chosen`; throws InputError for an
// empty alternative, one the vocabulary lacks, and the chosen piece itself.
int alternativeId(const TextCodec& codec, const ContrastiveQuery& q, int chosen) {
    if (q.alternative.empty())
        throw InputError("contrastive: no alternative piece was given (a piece of the target vocabulary, or a word)");
    const int alternative = targetPieceId(codec, q.alternative, codec.idToPiece(chosen));
    if (alternative < 0)
        throw InputError("contrastive: '" + util::forMessage(q.alternative) +
                         "' is not a piece of the target vocabulary");
    if (alternative == chosen) {
        const std::string piece = codec.idToPiece(chosen);
        throw InputError("contrastive: '" + util::forMessage(q.alternative) + "' is " +
                         (piece == q.alternative ? "" : "'" + util::forMessage(piece) + "', ") +
                         "the piece chosen at step " + std::to_string(q.step));
    }
    return alternative;
}
}  // namespace

Contrastive Engine::contrastive(const TranslationResult& r, const ContrastiveQuery& q) const {
    if (r.source_ids.empty() || r.best.ids.empty()) throw InputError("contrastive: the translation is empty");
    const int64_t T = static_cast<int64_t>(r.best.ids.size());
    if (q.step < 0 || q.step >= T)
        throw InputError("contrastive: step " + std::to_string(q.step) + " is out of range: the translation has " +
                         std::to_string(T) + " pieces (0-based: 0.." + std::to_string(T - 1) + ")");
    const int chosen = r.best.ids[size_t(q.step)];
    const int alternative = alternativeId(*m_tokenizer, q, chosen);
    return util::translatingTorchErrors("computing contrastive saliency", [&] {
        util::ThreadScope threads(threadsForRows(T));
        Source src, trg;
        src.ids = r.source_ids;
        trg.ids = r.best.ids;
        auto [src_t, trg_in, gold] = forcedTensors({&src}, {&trg});
        model::Transformer model = m_model;
        const auto ablation = ablateHeads(r.ablated);  // the model whose output the translation is
        Contrastive c;
        c.query = q;
        c.chosen = m_tokenizer->idToPiece(chosen);
        c.alternative = m_tokenizer->idToPiece(alternative);
        {
            torch::AutoGradMode grad(true);
            EmbeddingTap tap(model);
            const auto logp = torch::log_softmax(model->forwardFull(src_t, trg_in).to(torch::kFloat32), -1)[0][q.step];
            const auto difference = logp[chosen] - logp[alternative];
            const auto grads = torch::autograd::grad({difference}, {tap.source, tap.target});
            c.chosen_log_probability = logp[chosen].item<double>();
            c.alternative_log_probability = logp[alternative].item<double>();
            c.saliency_source = toMatrix((grads[0] * tap.source).sum(-1)).front();  // [1, S] -> S
            c.saliency_target = toMatrix((grads[1] * tap.target).sum(-1)).front();
        }
        // Value zeroing on the difference, with the products of Engine::contributions (float32 from the weights the
        // model holds).
        torch::NoGradGuard no_grad;
        const model::ExactProducts exact;
        contributions::contrastiveZeroing({model, src_t, trg_in}, q.step, chosen, alternative, c);
        return c;
    });
}

}  // namespace attnlab::decoding

namespace attnlab {
Contrastive Translator::contrastive(const TranslationResult& result, const ContrastiveQuery& query) const {
    return m_engine->contrastive(result, query);
}
}  // namespace attnlab
