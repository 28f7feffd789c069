// Engine::teacherForce: results for given targets (attnlab/translator.h, engine.h).
#include "decoding/engine.h"
#include "util/device.h"
#include "util/tensor_convert.h"
#include "util/torch_errors.h"

#include <attnlab/confidence.h>
#include <attnlab/errors.h>

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

namespace attnlab::decoding {

Engine::Source Engine::prepareTarget(const std::string& sentence, int target_language) const {
    Cleaned c;
    if (auto why = inputProblem(sentence, c, /*target=*/true)) throw InputError("target: " + *why);
    Source t;
    t.text = sentence;
    if (target_language >= 0) t.ids.push_back(target_language);
    t.ids.insert(t.ids.end(), c.encoding.ids.begin(), c.encoding.ids.end());
    t.ids.push_back(static_cast<int>(m_config.eos_idx));
    for (int id : t.ids) t.pieces.push_back(m_tokenizer->idToPiece(id));
    if (!c.word_of_piece.empty()) {
        if (target_language >= 0) t.word_of_piece.push_back(-1);
        t.word_of_piece.insert(t.word_of_piece.end(), c.word_of_piece.begin(), c.word_of_piece.end());
        t.word_of_piece.push_back(-1);  // </s>
    }
    if (!c.left_out.empty()) {
        std::string chars;
        for (const auto& ch : c.left_out) chars += (chars.empty() ? "" : " ") + ch;
        t.warnings.push_back("target characters not in the vocabulary, left out: " + chars);
    }
    return t;
}

void Engine::preparePairs(const std::vector<std::string>& sources, const std::vector<std::string>& targets,
                          const LanguageIds& languages, std::vector<Source>& src, std::vector<Source>& trg) const {
    if (sources.size() != targets.size())
        throw InputError(std::to_string(sources.size()) + " sources but " + std::to_string(targets.size()) +
                         " targets");
    src.assign(sources.size(), {});
    trg.assign(targets.size(), {});
    for (size_t i = 0; i < sources.size(); ++i) {
        try {
            src[i] = prepare(sources[i], languages.source);
            trg[i] = prepareTarget(targets[i], languages.target);
        } catch (const InputError& e) {
            throw InputError("pair " + std::to_string(i + 1) + ": " + e.what());
        }
    }
}

std::vector<size_t> Engine::lengthOrder(const std::vector<Source>& src, const std::vector<Source>& trg) {
    std::vector<size_t> order(src.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return src[a].ids.size() + trg[a].ids.size() < src[b].ids.size() + trg[b].ids.size();
    });
    return order;
}

std::vector<TranslationResult> Engine::teacherForce(const std::vector<std::string>& sources,
                                                    const std::vector<std::string>& targets, const DecodingOptions& o,
                                                    const StepCallback& on_batch) const {
    o.validate();
    std::vector<Source> src, trg;
    preparePairs(sources, targets, languageIds(o), src, trg);
    util::ThreadScope threads(threadsForRows(forcedRows(trg, o.max_batch_size)));
    return forceAll(src, trg, o, on_batch);
}

std::vector<TranslationResult> Engine::teacherForce(const std::vector<TranslationResult>& results,
                                                    const DecodingOptions& o, const StepCallback& on_batch) const {
    o.validate();
    std::vector<Source> src(results.size()), trg(results.size());
    const int source_language = languageIds(o).source;
    for (size_t i = 0; i < results.size(); ++i) {
        const auto& r = results[i];
        src[i] = prepare(r.source_text, source_language);
        if (r.best.ids.empty()) throw InputError("result " + std::to_string(i + 1) + " has no target tokens");
        trg[i].text = r.best.text;
        trg[i].ids = r.best.ids;
        trg[i].pieces = r.best.pieces;
    }
    util::ThreadScope threads(threadsForRows(forcedRows(trg, o.max_batch_size)));
    return forceAll(src, trg, o, on_batch);
}

std::vector<TranslationResult> Engine::forceAll(const std::vector<Source>& src, const std::vector<Source>& trg,
                                                const DecodingOptions& o, const StepCallback& on_batch) const {
    const auto order = lengthOrder(src, trg);
    std::vector<TranslationResult> results(src.size());
    return util::translatingTorchErrors("teacher forcing", [&] {
        torch::NoGradGuard no_grad;
        const auto ablation = ablateHeads(o.ablate);
        const size_t batch_size = static_cast<size_t>(o.max_batch_size);
        for (size_t begin = 0; begin < order.size(); begin += batch_size) {
            const size_t end = std::min(order.size(), begin + batch_size);
            if (on_batch) {
                StepProgress p{static_cast<int>(begin), static_cast<int>(end), static_cast<int>(order.size()), 0, 1};
                if (!on_batch(p)) throw CancelledError();
            }
            const auto t0 = std::chrono::steady_clock::now();
            std::vector<const Source*> bs, bt;
            for (size_t i = begin; i < end; ++i) {
                bs.push_back(&src[order[i]]);
                bt.push_back(&trg[order[i]]);
            }
            auto out = teacherForceBatch(bs, bt, o);
            const double per =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / double(end - begin);
            for (size_t i = begin; i < end; ++i) {
                results[order[i]] = std::move(out[i - begin]);
                results[order[i]].seconds = per;
            }
        }
        return results;
    });
}

Engine::ForcedTensors Engine::forcedTensors(const std::vector<const Source*>& sources,
                                            const std::vector<const Source*>& targets) const {
    const auto i64 = torch::TensorOptions().dtype(torch::kInt64);
    int64_t lt = 0;
    for (const auto* t : targets) lt = std::max<int64_t>(lt, static_cast<int64_t>(t->ids.size()));
    const int64_t b = static_cast<int64_t>(targets.size());
    auto trg_in = torch::full({b, lt}, m_config.model.trg_pad_idx, i64);
    auto gold = torch::full({b, lt}, m_config.model.trg_pad_idx, i64);
    auto a = trg_in.accessor<int64_t, 2>();
    auto g = gold.accessor<int64_t, 2>();
    for (int64_t i = 0; i < b; ++i) {
        a[i][0] = m_config.bos_idx;
        const auto& ids = targets[i]->ids;
        for (size_t j = 0; j < ids.size(); ++j) {
            if (j + 1 < ids.size()) a[i][j + 1] = ids[j];
            g[i][j] = ids[j];
        }
    }
    return {sourceTensor(sources), trg_in.to(m_device), gold.to(m_device)};
}

std::vector<TranslationResult> Engine::teacherForceBatch(const std::vector<const Source*>& sources,
                                                         const std::vector<const Source*>& targets,
                                                         const DecodingOptions& o) const {
    const auto [src, trg_in, gold] = forcedTensors(sources, targets);
    const int64_t b = static_cast<int64_t>(targets.size());
    model::Attentions attns;
    model::Transformer model = m_model;
    auto logits = model->forwardFull(src, trg_in, o.return_attention ? &attns : nullptr);
    auto logp = torch::log_softmax(logits.to(torch::kFloat32), -1).gather(2, gold.unsqueeze(2)).squeeze(2);
    logp = logp.to(torch::kCPU).to(torch::kFloat64);
    auto lp = logp.accessor<double, 2>();

    DecodingOptions plain = o;
    plain.return_attention = false;
    plain.top_k_candidates = 0;
    std::vector<TranslationResult> results(static_cast<size_t>(b));
    for (int64_t i = 0; i < b; ++i) {
        const auto& ids = targets[i]->ids;
        Hyp h;
        h.finished = ids.back() == m_config.eos_idx;
        for (size_t j = 0; j < ids.size(); ++j) {
            h.tokens.push_back(ids[j]);
            h.token_scores.push_back(lp[i][j]);
            h.score += lp[i][j];
        }
        h.normalized = h.score / std::pow(double(ids.size()), o.length_penalty);
        auto& r = results[static_cast<size_t>(i)];
        fillResult(r, *sources[i], {h}, plain);
        // The given target, not its pieces decoded again (which lack the characters left out): the
        // words that target_piece_words and gold alignments count.
        r.best.text = r.nbest.front().text = targets[i]->text;
        r.target_piece_words = targets[i]->word_of_piece;
        r.warnings.insert(r.warnings.end(), targets[i]->warnings.begin(), targets[i]->warnings.end());
        r.ablated = o.ablate;
        if (!o.return_attention) continue;
        const int64_t ls = static_cast<int64_t>(sources[i]->ids.size()), n = static_cast<int64_t>(ids.size());
        using torch::indexing::Slice;
        for (const auto& a : attns.encoder_self)
            r.encoder_self.push_back(util::toLayerHeads(a[i].index({Slice(), Slice(0, ls), Slice(0, ls)})));
        for (const auto& a : attns.decoder_self)
            r.decoder_self.push_back(util::toLayerHeads(a[i].index({Slice(), Slice(0, n), Slice(0, n)})));
        for (const auto& a : attns.cross)
            r.cross.push_back(util::toLayerHeads(a[i].index({Slice(), Slice(0, n), Slice(0, ls)})));
    }
    return results;
}

}  // namespace attnlab::decoding
