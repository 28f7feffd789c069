// Engine's explanations (attnlab/explain.h): one attention weight opened up, one token before the
// first layer, the masks of a batch. Every number comes from the model's own modules and forward
// pass; the only arithmetic here is what the explanation shows step by step (q*k, the dot).
#include "decoding/engine.h"
#include "util/device.h"

#include "model/masks.h"
#include "util/torch_errors.h"

#include <attnlab/errors.h>

#include <torch/torch.h>

#include <algorithm>
#include <cmath>

namespace attnlab {

namespace {
// Where two piece sequences line up: the pieces of a longest common subsequence, and between two
// such anchors the pieces position by position when both gaps are equally long (a changed word of
// the same length in pieces); unequal gaps are left out.
std::vector<std::pair<size_t, size_t>> alignPieces(const std::vector<std::string>& a,
                                                   const std::vector<std::string>& b) {
    const size_t n = a.size(), m = b.size();
    std::vector<std::vector<int>> lcs(n + 1, std::vector<int>(m + 1, 0));
    for (size_t i = n; i-- > 0;)
        for (size_t j = m; j-- > 0;)
            lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
    std::vector<std::pair<size_t, size_t>> anchors;
    for (size_t i = 0, j = 0; i < n && j < m;) {
        if (a[i] == b[j])
            anchors.emplace_back(i++, j++);
        else if (lcs[i + 1][j] >= lcs[i][j + 1])
            ++i;
        else
            ++j;
    }
    anchors.emplace_back(n, m);  // the end closes the last gap
    std::vector<std::pair<size_t, size_t>> out;
    size_t pi = 0, pj = 0;
    for (const auto& [i, j] : anchors) {
        if (i - pi == j - pj)
            for (size_t k = 0; k < i - pi; ++k) out.emplace_back(pi + k, pj + k);
        if (i < n) out.emplace_back(i, j);
        pi = i + 1, pj = j + 1;
    }
    return out;
}

std::string pairedLabel(const std::string& x, const std::string& y) { return x == y ? x : x + "/" + y; }
}  // namespace

MapDifference compareMaps(const Matrix& a, const Matrix& b, const std::vector<std::string>& a_rows,
                          const std::vector<std::string>& b_rows, const std::vector<std::string>& a_columns,
                          const std::vector<std::string>& b_columns) {
    MapDifference d;
    d.same_shape = a.size() == b.size() && (a.empty() || a[0].size() == b[0].size());
    if (a.size() != a_rows.size() || b.size() != b_rows.size() || (!a.empty() && a[0].size() != a_columns.size()) ||
        (!b.empty() && b[0].size() != b_columns.size()))
        throw InputError("compareMaps: the labels do not match the maps' sizes");
    const auto rows = alignPieces(a_rows, b_rows);
    const auto cols = alignPieces(a_columns, b_columns);
    for (const auto& [i, k] : rows) {
        std::vector<float> row;
        for (const auto& [j, l] : cols) row.push_back(a[i][j] - b[k][l]);
        d.difference.push_back(std::move(row));
        d.rows.push_back(pairedLabel(a_rows[i], b_rows[k]));
    }
    for (const auto& [j, l] : cols) d.columns.push_back(pairedLabel(a_columns[j], b_columns[l]));
    return d;
}

}  // namespace attnlab

namespace attnlab::decoding {

namespace {
std::vector<float> toVector(const torch::Tensor& t) {
    auto c = t.detach().to(torch::kCPU, torch::kFloat32).contiguous().reshape(-1);
    return {c.data_ptr<float>(), c.data_ptr<float>() + c.numel()};
}

// e.g. "layer 5 is out of range: there are 2 layers (0-based: 0..1)".
void requireIndex(const char* what, int value, int64_t size, const std::string& things) {
    if (value < 0 || value >= size)
        throw InputError(std::string(what) + " " + std::to_string(value) + " is out of range: there are " +
                         std::to_string(size) + " " + things + " (0-based: 0.." + std::to_string(size - 1) + ")");
}

// Points one attention module's capture at a struct for one forward pass.
class CaptureGuard {
public:
    CaptureGuard(model::MultiHeadAttention m, model::AttentionCapture& c) : m_module(std::move(m)) {
        m_module->capture = &c;
    }
    ~CaptureGuard() { m_module->capture = nullptr; }
    CaptureGuard(const CaptureGuard&) = delete;
    CaptureGuard& operator=(const CaptureGuard&) = delete;

private:
    model::MultiHeadAttention m_module;
};

// The relative term of one score (a self-attention with relative positions), from the pass's own tensors: the
// key vector a^K of the clipped offset, q . a^K and its scaled value, the row's relative scores, a^V.
void explainRelative(AttentionExplanation& e, const model::AttentionCapture& cap, int64_t k) {
    const int h = e.cell.head, i = e.cell.query, j = e.cell.key;
    e.relative = true;
    e.max_relative_positions = static_cast<int>(k);
    e.relative_offset = j - i;
    e.relative_clipped = static_cast<int>(std::clamp<int64_t>(j - i, -k, k));
    e.relative_key = toVector(cap.relative_keys[i][j]);
    for (size_t d = 0; d < e.query_vector.size(); ++d) {
        e.relative_products.push_back(double(e.query_vector[d]) * double(e.relative_key.at(d)));
        e.relative_dot += e.relative_products.back();
    }
    e.relative_scaled = e.relative_dot / e.temperature;
    e.score = e.scaled + e.relative_scaled;
    e.row_relative_scaled = toVector(cap.relative_scores[0][h][i]);
    e.relative_value = toVector(cap.relative_values[i][j]);
}

// The decoder's input for a result: <s> then the best hypothesis's tokens but the last.
std::vector<int64_t> decoderInput(const TranslationResult& r, int64_t bos) {
    std::vector<int64_t> ids{bos};
    for (size_t i = 0; i + 1 < r.best.ids.size(); ++i) ids.push_back(r.best.ids[i]);
    return ids;
}
}  // namespace

// Every attention module's numbers from one teacher-forced pass over a translation's tokens:
// [kind][layer], kinds in AttentionKind's order.
struct Engine::CaptureCache {
    std::vector<int> source_ids, target_ids;
    std::vector<HeadRef> ablated;  // the heads switched off in that pass, as in the translation
    std::vector<std::vector<model::AttentionCapture>> captures;
    std::vector<std::vector<int64_t>> d_k;
    std::vector<std::vector<torch::Tensor>> output_weight;  // each module's fc.weight [d_model, heads x d_v]
};

const Engine::CaptureCache& Engine::captured(const TranslationResult& r) const {
    const auto& c = m_capture_cache;
    if (c && c->source_ids == r.source_ids && c->target_ids == r.best.ids && c->ablated == r.ablated) return *c;
    const auto& cfg = m_config.model;
    model::Transformer model = m_model;
    auto fresh = std::make_shared<CaptureCache>();
    fresh->source_ids = r.source_ids;
    fresh->target_ids = r.best.ids;
    fresh->ablated = r.ablated;
    const int64_t n_enc = cfg.encoderLayers(), n_dec = cfg.decoderLayers();
    const std::vector<size_t> layers{size_t(n_enc), size_t(n_dec), size_t(n_dec)};
    for (size_t k = 0; k < 3; ++k) {
        fresh->captures.emplace_back(layers[k]);
        fresh->d_k.emplace_back(layers[k]);
        fresh->output_weight.emplace_back(layers[k]);
    }
    std::vector<std::unique_ptr<CaptureGuard>> guards;
    for (size_t k = 0; k < 3; ++k)
        for (size_t l = 0; l < layers[k]; ++l) {
            model::MultiHeadAttention module = model->attention(attentionKinds()[k], int64_t(l));
            guards.push_back(std::make_unique<CaptureGuard>(module, fresh->captures[k][l]));
            fresh->d_k[k][l] = module->d_k;
            fresh->output_weight[k][l] = module->fc->floatWeight();
        }
    const auto i64 = torch::TensorOptions().dtype(torch::kInt64);
    std::vector<int64_t> src_ids(r.source_ids.begin(), r.source_ids.end());
    auto src = torch::tensor(src_ids, i64).unsqueeze(0).to(m_device);
    auto trg = torch::tensor(decoderInput(r, m_config.bos_idx), i64).unsqueeze(0).to(m_device);
    const auto ablation = ablateHeads(r.ablated);  // the pass the translation's maps came from
    model->forwardFull(src, trg);
    guards.clear();
    m_capture_cache = fresh;
    return *fresh;
}

ValueNorms Engine::valueNorms(const TranslationResult& r) const {
    if (r.source_ids.empty() || r.best.ids.empty()) throw InputError("value norms: the translation is empty");
    // With relative values key j adds p_ij W_O (v_j + a^V_ij) to query i (attention.cpp relativeAttention): its
    // length depends on the query, so one norm per key, which every value-norm map multiplies by, would be wrong.
    if (const int64_t k = m_config.model.max_relative_positions; k > 0)
        throw InputError(
            "value norms: this model's self-attention adds relative position values "
            "(max_relative_positions " +
            std::to_string(k) +
            "): what key j adds to query i, "
            "p_ij W_O (v_j + a^V_ij), depends on the query, so the weight x value norm measure (one "
            "norm per key) is not available for it; use the weights or the rollout");
    return util::translatingTorchErrors("computing value norms", [&] {
        util::ThreadScope threads(threadsForRows(int64_t(r.best.ids.size())));
        torch::NoGradGuard no_grad;
        const CaptureCache& cache = captured(r);
        ValueNorms out;
        HeadKeyNorms* kinds[3] = {&out.encoder_self, &out.decoder_self, &out.cross};
        for (size_t k = 0; k < 3; ++k)
            for (size_t l = 0; l < cache.captures[k].size(); ++l) {
                const torch::Tensor& v = cache.captures[k][l].v;  // [1, heads, keys, d_v]
                const torch::Tensor& w = cache.output_weight[k][l];
                const int64_t heads = v.size(1), dv = v.size(3);
                std::vector<std::vector<float>> layer;
                for (int64_t h = 0; h < heads; ++h) {
                    // f_h(x_j) = W_O[:, h d_v:(h+1) d_v] v_h(j), for every key j at once: [keys, d_model]
                    const auto f = torch::matmul(v[0][h], w.narrow(1, h * dv, dv).t());
                    layer.push_back(toVector(f.norm(2, -1)));
                }
                kinds[k]->push_back(std::move(layer));
            }
        return out;
    });
}

AttentionExplanation Engine::explain(const TranslationResult& r, const CellRef& cell) const {
    const auto& cfg = m_config.model;
    const auto src_len = static_cast<int64_t>(r.source_ids.size());
    const auto trg_in = decoderInput(r, m_config.bos_idx);
    const auto trg_len = static_cast<int64_t>(trg_in.size());
    if (src_len == 0 || r.best.ids.empty()) throw InputError("explain: the translation is empty");
    requireIndex("layer", cell.layer, cfg.layers(cell.kind), "layers");
    requireIndex("head", cell.head, cfg.n_head, "heads per layer");
    const bool queries_source = cell.kind == AttentionKind::EncoderSelf;
    const bool keys_source = cell.kind != AttentionKind::DecoderSelf;
    requireIndex("query", cell.query, queries_source ? src_len : trg_len,
                 queries_source ? "source pieces" : "target pieces");
    requireIndex("key", cell.key, keys_source ? src_len : trg_len,
                 keys_source ? "source pieces" : "decoder input pieces");

    return util::translatingTorchErrors("explaining an attention weight", [&] {
        util::ThreadScope threads(threadsForRows(int64_t(r.best.ids.size())));
        torch::NoGradGuard no_grad;
        const CaptureCache& cache = captured(r);
        const model::AttentionCapture& cap = cache.captures[int(cell.kind)][cell.layer];
        const int h = cell.head, i = cell.query, j = cell.key;
        AttentionExplanation e;
        e.cell = cell;
        e.query_piece = queries_source ? r.source_pieces.at(i) : r.best.pieces.at(i);
        e.key_piece = keys_source ? r.source_pieces.at(j) : m_tokenizer->idToPiece(static_cast<int>(trg_in[j]));
        e.query_vector = toVector(cap.q[0][h][i]);
        e.key_vector = toVector(cap.k[0][h][j]);
        for (size_t d = 0; d < e.query_vector.size(); ++d) {
            e.products.push_back(double(e.query_vector[d]) * double(e.key_vector[d]));
            e.dot += e.products.back();
        }
        e.temperature = std::sqrt(double(cache.d_k[int(cell.kind)][cell.layer]));
        e.scaled = e.dot / e.temperature;
        e.row_scaled = toVector(cap.scores[0][h][i]);
        for (int64_t k = 0; k < int64_t(e.row_scaled.size()); ++k)
            e.row_pieces.push_back(keys_source ? r.source_pieces.at(k)
                                               : m_tokenizer->idToPiece(static_cast<int>(trg_in.at(k))));
        auto allowed = cap.mask.defined() ? cap.mask.expand_as(cap.scores)[0][h][i].to(torch::kCPU)
                                          : torch::ones({cap.scores.size(3)}, torch::kBool);
        auto ap = allowed.accessor<bool, 1>();
        for (int64_t k = 0; k < allowed.size(0); ++k) e.row_masked.push_back(!ap[k]);
        e.masked = e.row_masked.at(j);
        if (e.masked) e.mask_reason = cell.kind == AttentionKind::DecoderSelf && j > i ? "future position" : "padding";
        e.row_weights = toVector(cap.weights[0][h][i]);
        e.weight = e.row_weights.at(j);
        for (int64_t k = 0; k < cap.v.size(2); ++k) e.value_vectors.push_back(toVector(cap.v[0][h][k]));
        e.head_output = toVector(cap.heads_out[0][h][i]);
        e.score = e.scaled;
        if (cap.relative_scores.defined()) explainRelative(e, cap, cfg.max_relative_positions);
        return e;
    });
}

TokenInside Engine::tokenInside(const TranslationResult& r, bool target, int position) const {
    const auto trg_in = decoderInput(r, m_config.bos_idx);
    const std::vector<int64_t> src_ids(r.source_ids.begin(), r.source_ids.end());
    const auto& ids = target ? trg_in : src_ids;
    requireIndex("position", position, static_cast<int64_t>(ids.size()),
                 target ? "decoder input pieces" : "source pieces");
    return util::translatingTorchErrors("explaining a token", [&] {
        torch::NoGradGuard no_grad;
        model::Transformer model = m_model;
        TokenInside t;
        t.target = target;
        t.position = position;
        t.token_id = static_cast<int>(ids[position]);
        t.piece = target ? m_tokenizer->idToPiece(t.token_id) : m_tokenizer->sourcePiece(t.token_id);
        const auto& table = target ? model->decoder->position_enc->pos_table : model->encoder->position_enc->pos_table;
        auto norm = target ? model->decoder->layer_norm : model->encoder->layer_norm;  // null: no layer norm there
        const auto id = torch::tensor({ids[position]}, torch::kInt64).to(m_device);
        auto emb = (target ? model->decoder->wordEmbedding(id) : model->encoder->wordEmbedding(id))[0];
        if (target && position == 0 && r.decoder_starts_from_zero) {  // as DecoderImpl::embed: a zero vector
            emb = torch::zeros_like(emb);
            t.piece = kZeroStartPiece;
        }
        t.scale = m_config.model.scaleEmb() ? std::sqrt(double(m_config.model.d_model)) : 1.0;
        // As the model's forward: the scaled embedding (the multiply skipped when the scale is 1), plus the table row.
        auto scaled = t.scale != 1.0 ? emb * t.scale : emb;
        // pos_encoding "none" (relative positions only): the table holds zeros and nothing is added.
        auto pe = table[0][position + m_config.model.pos_offset];
        auto sum = scaled + pe;
        t.embedding = toVector(emb);
        t.scaled = toVector(scaled);
        t.positional = toVector(pe);
        t.sum = toVector(sum);
        t.absolute_positions = m_config.model.pos_encoding != "none";
        t.max_relative_positions = static_cast<int>(m_config.model.max_relative_positions);
        t.normalized = norm ? toVector(norm(sum.view({1, 1, -1}))) : t.sum;
        t.sum_mean = sum.mean().item<double>();
        t.sum_std = std::sqrt(sum.var(/*unbiased=*/false).item<double>() + m_config.model.layer_norm_eps);
        return t;
    });
}

BatchMasks Engine::masks(const std::vector<TranslationResult>& results) const {
    BatchMasks m;
    if (results.empty()) return m;
    size_t ls = 0, lt = 0;
    for (const auto& r : results) {
        ls = std::max(ls, r.source_ids.size());
        lt = std::max(lt, decoderInput(r, m_config.bos_idx).size());
    }
    const auto n = static_cast<int64_t>(results.size());
    const auto& cfg = m_config.model;
    auto src = torch::full({n, int64_t(ls)}, cfg.src_pad_idx, torch::kInt64);
    auto trg = torch::full({n, int64_t(lt)}, cfg.trg_pad_idx, torch::kInt64);
    for (int64_t b = 0; b < n; ++b) {
        const auto& r = results[b];
        const auto din = decoderInput(r, m_config.bos_idx);
        std::vector<std::string> sp, tp;
        for (size_t j = 0; j < ls; ++j) {
            const int id = j < r.source_ids.size() ? r.source_ids[j] : static_cast<int>(cfg.src_pad_idx);
            src[b][int64_t(j)] = id;
            sp.push_back(m_tokenizer->sourcePiece(id));
        }
        for (size_t j = 0; j < lt; ++j) {
            const int id = j < din.size() ? static_cast<int>(din[j]) : static_cast<int>(cfg.trg_pad_idx);
            trg[b][int64_t(j)] = id;
            tp.push_back(m_tokenizer->idToPiece(id));
        }
        m.source_pieces.push_back(std::move(sp));
        m.target_pieces.push_back(std::move(tp));
    }
    // The model's own mask functions (model/masks.h), as the forward pass calls them.
    auto src_mask = model::padMask(src, cfg.src_pad_idx);      // [n,1,ls]
    auto dec_mask = model::decoderMask(trg, cfg.trg_pad_idx);  // [n,lt,lt]
    auto toRows = [](const torch::Tensor& t) {
        std::vector<std::vector<bool>> rows(t.size(0), std::vector<bool>(t.size(1)));
        auto a = t.accessor<bool, 2>();
        for (int64_t i = 0; i < t.size(0); ++i)
            for (int64_t j = 0; j < t.size(1); ++j) rows[i][j] = a[i][j];
        return rows;
    };
    for (int64_t b = 0; b < n; ++b) {
        m.encoder.push_back(toRows(src_mask[b].expand({int64_t(ls), int64_t(ls)}).contiguous()));
        m.decoder.push_back(toRows(dec_mask[b].contiguous()));
        m.cross.push_back(toRows(src_mask[b].expand({int64_t(lt), int64_t(ls)}).contiguous()));
    }
    return m;
}

}  // namespace attnlab::decoding
