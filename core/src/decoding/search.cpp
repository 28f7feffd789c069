#include "decoding/search.h"

#include "model/masks.h"

#include <attnlab/errors.h>

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace attnlab::decoding {

namespace {

class CachedStepper final : public Stepper {
public:
    CachedStepper(model::Transformer& m, const torch::Tensor& src, bool reference_projection)
        : m_model(m), m_as_trained(!reference_projection), m_src(src) {
        auto src_mask = model::padMask(src, m->config().src_pad_idx);
        auto enc = m->encoder(src, src_mask);
        m_state = m->decoder->initState(enc, src_mask);
    }
    torch::Tensor logProbs(const torch::Tensor& prefix) override {
        TORCH_CHECK(prefix.size(1) == m_state.length + 1, "cached stepper fed out of order");
        auto out = m_model->decoder->step(prefix.select(1, prefix.size(1) - 1), m_state);
        return torch::log_softmax(m_model->project(out.squeeze(1), m_as_trained), -1);
    }
    void select(const torch::Tensor& index) override {
        m_state.select(index);
        m_src = m_src.index_select(0, index);
    }
    torch::Device device() const override { return m_state.src_mask.device(); }
    std::string whereNonFinite(const torch::Tensor& prefix) override {
        return m_model->firstNonFiniteStage(m_src, prefix, m_as_trained);
    }

private:
    model::Transformer& m_model;
    bool m_as_trained;
    torch::Tensor m_src;  // the rows' sources, for whereNonFinite
    model::DecoderState m_state;
};

class FullStepper final : public Stepper {
public:
    FullStepper(model::Transformer& m, const torch::Tensor& src, bool reference_projection)
        : m_model(m), m_as_trained(!reference_projection), m_src(src) {
        m_src_mask = model::padMask(src, m->config().src_pad_idx);
        m_enc = m->encoder(src, m_src_mask);
    }
    torch::Tensor logProbs(const torch::Tensor& prefix) override {
        // As the reference's translator: decoder and projection over the whole prefix, softmax,
        // and only then the last position.
        auto trg_mask = model::decoderMask(prefix, m_model->config().trg_pad_idx);
        auto dec = m_model->decoder(prefix, trg_mask, m_enc, m_src_mask);
        auto logp = torch::log_softmax(m_model->project(dec, m_as_trained), -1);
        return logp.select(1, prefix.size(1) - 1);
    }
    void select(const torch::Tensor& index) override {
        m_enc = m_enc.index_select(0, index);
        m_src_mask = m_src_mask.index_select(0, index);
        m_src = m_src.index_select(0, index);
    }
    torch::Device device() const override { return m_enc.device(); }
    std::string whereNonFinite(const torch::Tensor& prefix) override {
        return m_model->firstNonFiniteStage(m_src, prefix, m_as_trained);
    }

private:
    model::Transformer& m_model;
    bool m_as_trained;
    torch::Tensor m_src, m_enc, m_src_mask;
};

void checkOptions(const SearchOptions& o, int64_t n) {
    if (static_cast<int64_t>(o.max_lengths.size()) != n)
        throw InternalError("search: max_lengths has " + std::to_string(o.max_lengths.size()) + " entries for " +
                            std::to_string(n) + " sentences");
    for (int l : o.max_lengths)
        if (l < 1) throw InternalError("search: max length < 1");
}

void report(const SearchOptions& o, int step, int max_steps) {
    if (o.on_step && !o.on_step(step, max_steps)) throw CancelledError();
}

// The stepper's log-probabilities for `prefix` at `step` (0-based), checked: one sum and one host
// sync per step (log-probabilities are at most 0 and a normal model's far above -1e30, so only a
// non-finite element makes the sum non-finite); the slow search for the stage to blame only when the check fails.
torch::Tensor checkedLogProbs(Stepper& stepper, const torch::Tensor& prefix, int step) {
    auto logp = stepper.logProbs(prefix);
    // The sum is NaN or infinite when any element is; unlike isfinite() it allocates no [rows, vocab] mask.
    if (std::isfinite(logp.sum(torch::kDouble).item<double>())) return logp;
    const std::string where = stepper.whereNonFinite(prefix);
    throw NumericError("decoding step " + std::to_string(step + 1) + ": " +
                       (where.empty() ? std::string("the log-probabilities") : where) +
                       " produced non-finite values (weights too large?)");
}

// The stepper's log-probabilities with the blocked tokens at -inf and, during a forced prefix,
// every token but the forced one at -inf. The index of the blocked tokens is built once per
// search, on the stepper's device, not at every step.
class NextLogProbs {
public:
    NextLogProbs(Stepper& stepper, const SearchOptions& o)
        : m_stepper(stepper), m_forced(o.forced), m_min_length(o.min_length) {
        if (!o.blocked.empty())
            m_blocked = torch::tensor(o.blocked, torch::TensorOptions().dtype(torch::kInt64)).to(stepper.device());
        std::vector<int64_t> early = o.blocked;
        early.push_back(o.eos);
        m_blocked_early = torch::tensor(early, torch::TensorOptions().dtype(torch::kInt64)).to(stepper.device());
    }
    torch::Tensor operator()(const torch::Tensor& prefix, int step) {
        auto logp = checkedLogProbs(m_stepper, prefix, step);
        if (step < static_cast<int>(m_forced.size())) {
            auto index =
                torch::full({1}, m_forced[step], torch::TensorOptions().dtype(torch::kInt64).device(logp.device()));
            auto forced = torch::full_like(logp, -std::numeric_limits<double>::infinity());
            return forced.index_copy_(1, index, logp.index_select(1, index));
        }
        // Before min_length, </s> too (not renormalised: the log-probabilities stay the model's).
        const torch::Tensor& blocked = step < m_min_length ? m_blocked_early : m_blocked;
        if (!blocked.defined()) return logp;
        return logp.index_fill(1, blocked, -std::numeric_limits<double>::infinity());
    }

private:
    Stepper& m_stepper;
    std::vector<int64_t> m_forced;
    int m_min_length;
    torch::Tensor m_blocked, m_blocked_early;
};

std::vector<TraceSteps>* startTraces(const SearchOptions& o, int64_t n) {
    if (o.traces) o.traces->assign(n, {});
    return o.traces;
}

void finish(std::vector<Hyp>& hyps, int nbest) {
    std::stable_sort(hyps.begin(), hyps.end(), [](const Hyp& a, const Hyp& b) { return a.normalized > b.normalized; });
    if (static_cast<int>(hyps.size()) > nbest) hyps.resize(nbest);
}

}  // namespace

double normalizedScore(double score, size_t length, double alpha) {
    return alpha == 0.0 ? score : score / std::pow(static_cast<double>(std::max<size_t>(length, 1)), alpha);
}

std::unique_ptr<Stepper> makeStepper(StepperKind kind, model::Transformer& m, const torch::Tensor& src,
                                     bool reference_projection) {
    if (kind == StepperKind::Cached) return std::make_unique<CachedStepper>(m, src, reference_projection);
    return std::make_unique<FullStepper>(m, src, reference_projection);
}

std::vector<std::vector<Hyp>> greedySearch(Stepper& stepper, int64_t n, const SearchOptions& o) {
    checkOptions(o, n);
    const auto i64 = torch::TensorOptions().dtype(torch::kInt64).device(stepper.device());
    std::vector<std::vector<Hyp>> results(n);
    std::vector<Hyp> running(n);
    std::vector<int64_t> active(n);  // sentence index of each row
    for (int64_t i = 0; i < n; ++i) active[i] = i;
    const int max_steps = *std::max_element(o.max_lengths.begin(), o.max_lengths.end());
    auto prefix = torch::full({n, 1}, o.bos, i64);
    NextLogProbs nextLogProbs(stepper, o);
    auto* traces = startTraces(o, n);
    for (int step = 0;; ++step) {
        auto [best, arg] = nextLogProbs(prefix, step).max(-1);
        auto best_cpu = best.to(torch::kCPU, torch::kFloat64);
        auto arg_cpu = arg.to(torch::kCPU);
        auto bp = best_cpu.accessor<double, 1>();
        auto ap = arg_cpu.accessor<int64_t, 1>();
        std::vector<int64_t> keep, next_active;
        for (size_t r = 0; r < active.size(); ++r) {
            Hyp& h = running[active[r]];
            h.tokens.push_back(ap[r]);
            h.token_scores.push_back(bp[r]);
            h.score += bp[r];
            const bool eos = ap[r] == o.eos;
            if (traces) {
                TraceNode node{step == 0 ? -1 : 0, ap[r], bp[r], h.score, 0.0, eos, false};
                node.normalized = normalizedScore(h.score, h.tokens.size(), o.length_penalty);
                (*traces)[active[r]].push_back({node});
            }
            if (eos || static_cast<int>(h.tokens.size()) >= o.max_lengths[active[r]]) {
                h.finished = eos;
                h.normalized = normalizedScore(h.score, h.tokens.size(), o.length_penalty);
                results[active[r]].push_back(h);
            } else {
                keep.push_back(static_cast<int64_t>(r));
                next_active.push_back(active[r]);
            }
        }
        report(o, step, max_steps);
        if (keep.empty()) break;
        auto index = torch::tensor(keep, torch::kInt64).to(stepper.device());
        prefix = torch::cat({prefix.index_select(0, index), arg.index_select(0, index).unsqueeze(1)}, 1);
        stepper.select(index);
        active = std::move(next_active);
    }
    return results;
}

namespace {
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// The best `width` continuations of each active sentence over its K beams x vocabulary, best
// first: a top-k per row, then one over K x per_row candidates (much cheaper than one top-k over
// K x V). Scores accumulate in double precision. Index = beam * V + token.
struct Continuations {
    torch::Tensor values, index;  // [A, width], on the CPU
    int64_t width = 0, vocab = 0;
};

Continuations bestContinuations(const torch::Tensor& logp, const std::vector<double>& scores, int64_t A, int K) {
    Continuations c;
    c.vocab = logp.size(1);
    c.width = std::min<int64_t>(2 * K, K * c.vocab);
    const int64_t per_row = std::min<int64_t>(c.width, c.vocab);
    auto [row_vals, row_idx] = logp.topk(per_row, 1);  // [A*K, per_row]
    auto score_t = torch::tensor(scores, torch::TensorOptions().dtype(torch::kFloat64)).to(logp.device());
    auto cand = (row_vals.to(torch::kFloat64) + score_t.unsqueeze(1)).view({A, K * per_row});
    auto [vals, pos] = cand.topk(c.width, 1);
    // Back to indices over K x V: beam = pos / per_row, token = row_idx[beam row, pos % per_row].
    auto beam_of = pos.div(per_row, "floor");
    auto rows = beam_of + torch::arange(A, pos.options()).unsqueeze(1) * K;
    auto tok = row_idx.index({rows.reshape(-1), pos.remainder(per_row).reshape(-1)}).view({A, c.width});
    c.values = vals.to(torch::kCPU);
    c.index = (beam_of * c.vocab + tok).to(torch::kCPU);
    return c;
}

// What a beam row has generated: tokens and the log-probability of each.
struct Prefix {
    std::vector<int64_t> tokens;
    std::vector<double> token_scores;
    Prefix extended(int64_t token, double token_score) const {
        Prefix p = *this;
        p.tokens.push_back(token);
        p.token_scores.push_back(token_score);
        return p;
    }
};

// `score` is the row's cumulative score after `token`; `parent_score` before it.
Hyp makeHyp(const Prefix& parent, double parent_score, int64_t token, double score, bool finished, double alpha) {
    Hyp h;
    Prefix p = parent.extended(token, score - parent_score);
    h.tokens = std::move(p.tokens);
    h.token_scores = std::move(p.token_scores);
    h.score = score;
    h.finished = finished;
    h.normalized = normalizedScore(score, h.tokens.size(), alpha);
    return h;
}

// The rows of the search (sentence-major, K beams each) and what each has generated.
struct BeamRows {
    torch::Tensor prefix;          // [rows, t] on the stepper's device
    std::vector<double> scores;    // per row
    std::vector<Prefix> prefixes;  // per row: generated tokens
    std::vector<int64_t> active;   // sentence of each group of K rows
    std::vector<int> nodes;        // per row: its node in the current step of its sentence's trace
};

// One sentence's next beam: its best continuations that do not end; those that end with </s>
// within the beam width leave the beam as finished hypotheses (as in fairseq).
struct NextBeam {
    std::vector<int64_t> rows, toks;
    std::vector<double> scores;
    std::vector<int> nodes;  // trace node of each (-1 without a trace)
};

// `trace`, when given, receives every finite candidate of this step with what became of it.
NextBeam nextBeam(const Continuations& c, int64_t a, int K, const BeamRows& b, std::vector<Hyp>& finished,
                  const SearchOptions& o, int step, std::vector<TraceNode>* trace) {
    NextBeam next;
    auto vp = c.values.accessor<double, 2>();
    auto ip = c.index.accessor<int64_t, 2>();
    for (int64_t j = 0; j < c.width; ++j) {
        const double v = vp[a][j];
        if (!std::isfinite(v)) break;
        const bool beam_full = static_cast<int>(next.rows.size()) >= K;
        if (beam_full && !trace) break;
        const int64_t beam = ip[a][j] / c.vocab, tok = ip[a][j] % c.vocab;
        const int64_t row = a * K + beam;
        const bool eos = tok == o.eos;
        const bool ends = eos && j < K && !beam_full;
        const bool kept = !eos && !beam_full;
        if (trace) {
            const size_t length = b.prefixes[row].tokens.size() + 1;
            trace->push_back({step == 0 ? -1 : b.nodes[row], tok, v - b.scores[row], v,
                              normalizedScore(v, length, o.length_penalty), ends, !ends && !kept});
        }
        if (ends) finished.push_back(makeHyp(b.prefixes[row], b.scores[row], tok, v, true, o.length_penalty));
        if (!kept) continue;
        next.rows.push_back(row);
        next.toks.push_back(tok);
        next.scores.push_back(v);
        next.nodes.push_back(trace ? static_cast<int>(trace->size()) - 1 : -1);
    }
    return next;
}
}  // namespace

std::vector<std::vector<Hyp>> beamSearch(Stepper& stepper, int64_t n, const SearchOptions& o) {
    checkOptions(o, n);
    const int K = o.beam_size;
    const auto i64 = torch::TensorOptions().dtype(torch::kInt64);
    std::vector<std::vector<Hyp>> finished(n);
    const int max_steps = *std::max_element(o.max_lengths.begin(), o.max_lengths.end());
    BeamRows b;
    for (int64_t i = 0; i < n; ++i) b.active.push_back(i);
    NextLogProbs nextLogProbs(stepper, o);
    auto* traces = startTraces(o, n);
    for (int step = 0;; ++step) {
        torch::Tensor logp;
        if (step == 0) {
            // The stepper holds one row per sentence: score them once, then expand to K rows, of
            // which only beam 0 is live at first.
            auto first = nextLogProbs(torch::full({n, 1}, o.bos, i64.device(stepper.device())), 0);
            auto expand = torch::arange(n, i64.device(first.device())).repeat_interleave(K);
            stepper.select(expand);
            logp = first.index_select(0, expand);
            b.prefix = torch::full({n * K, 1}, o.bos, i64.device(first.device()));
            b.scores.assign(n * K, kNegInf);
            for (int64_t s = 0; s < n; ++s) b.scores[s * K] = 0.0;
            b.prefixes.assign(n * K, {});
            b.nodes.assign(n * K, -1);
        } else {
            logp = nextLogProbs(b.prefix, step);
        }
        const auto c = bestContinuations(logp, b.scores, static_cast<int64_t>(b.active.size()), K);
        BeamRows next;
        std::vector<int64_t> sel_rows, sel_tokens;  // rows (old numbering) extended, and their tokens
        for (int64_t a = 0; a < static_cast<int64_t>(b.active.size()); ++a) {
            const int64_t s = b.active[a];
            std::vector<TraceNode>* trace = nullptr;
            if (traces) trace = &(*traces)[s].emplace_back();
            NextBeam beam = nextBeam(c, a, K, b, finished[s], o, step, trace);
            const bool at_cap = step + 1 >= o.max_lengths[s];
            if (static_cast<int>(finished[s].size()) >= K || at_cap || beam.rows.empty()) {
                // The search ends for this sentence: live rows that do not become final are dropped.
                if (trace && !at_cap)
                    for (int node : beam.nodes) (*trace)[node].pruned = true;
                // At the length cap unfinished beams compete with what has finished.
                if (at_cap)
                    for (size_t k = 0; k < beam.rows.size(); ++k)
                        finished[s].push_back(makeHyp(b.prefixes[beam.rows[k]], b.scores[beam.rows[k]], beam.toks[k],
                                                      beam.scores[k], false, o.length_penalty));
                finish(finished[s], o.nbest);
                continue;
            }
            // Fewer than K live candidates (tiny vocabularies): pad with dead copies.
            while (static_cast<int>(beam.rows.size()) < K) {
                beam.rows.push_back(beam.rows.front());
                beam.toks.push_back(beam.toks.front());
                beam.scores.push_back(kNegInf);
                beam.nodes.push_back(-1);
            }
            for (int k = 0; k < K; ++k) {
                sel_rows.push_back(beam.rows[k]);
                sel_tokens.push_back(beam.toks[k]);
                const int64_t row = beam.rows[k];
                next.scores.push_back(beam.scores[k]);
                next.prefixes.push_back(b.prefixes[row].extended(beam.toks[k], beam.scores[k] - b.scores[row]));
                next.nodes.push_back(beam.nodes[k]);
            }
            next.active.push_back(s);
        }
        report(o, step, max_steps);
        if (next.active.empty()) break;
        auto index = torch::tensor(sel_rows, i64).to(b.prefix.device());
        auto new_tok = torch::tensor(sel_tokens, i64).to(b.prefix.device()).unsqueeze(1);
        next.prefix = torch::cat({b.prefix.index_select(0, index), new_tok}, 1);
        stepper.select(index);
        b = std::move(next);
    }
    return finished;
}

Hyp referenceBeamSearch(Stepper& stepper, const SearchOptions& o) {
    checkOptions(o, 1);
    const int64_t K = o.beam_size;
    const int max_seq_len = o.max_lengths[0] + 1;  // the reference's positions, <s> included
    const auto i64 = torch::TensorOptions().dtype(torch::kInt64).device(stepper.device());
    // _get_init_state: the first step's top K start the K rows.
    auto [v0, t0] = checkedLogProbs(stepper, torch::full({1, 1}, o.bos, i64), 0).topk(K, -1);
    stepper.select(torch::zeros({K}, i64));
    std::vector<Prefix> rows(K);
    std::vector<double> scores(K);
    auto v0c = v0.to(torch::kCPU, torch::kFloat64), t0c = t0.to(torch::kCPU);
    for (int64_t k = 0; k < K; ++k) {
        scores[k] = v0c[0][k].item<double>();
        rows[k] = Prefix{}.extended(t0c[0][k].item<int64_t>(), scores[k]);
    }
    auto prefix = torch::cat({torch::full({K, 1}, o.bos, i64), t0.view({K, 1})}, 1);
    // Position of <s> is 1 in the reference's len_map: a row whose first </s> is generated token
    // j (0-based) has length j + 2; a row without </s> has length max_seq_len.
    auto length = [&](const Prefix& row) {
        const auto it = std::find(row.tokens.begin(), row.tokens.end(), o.eos);
        return it == row.tokens.end() ? max_seq_len : int(it - row.tokens.begin()) + 2;
    };
    int64_t answer = 0;
    for (int step = 2; step < max_seq_len; ++step) {
        // _get_the_best_score_and_idx: top K per row, then the top K of the K x K sums.
        auto [v2, t2] = checkedLogProbs(stepper, prefix, step - 1).topk(K, -1);
        auto score_t = torch::tensor(scores, torch::TensorOptions().dtype(torch::kFloat64)).to(v2.device());
        auto [vals, pos] = (v2.to(torch::kFloat64) + score_t.unsqueeze(1)).view(-1).topk(K);
        auto r = pos.div(K, "floor"), c = pos.remainder(K);
        auto tok = t2.index({r, c});
        auto rc = r.to(torch::kCPU), tc = tok.to(torch::kCPU);
        auto vc = vals.to(torch::kCPU);
        std::vector<Prefix> next(K);
        std::vector<double> next_scores(K);
        for (int64_t k = 0; k < K; ++k) {
            const int64_t parent = rc[k].item<int64_t>();
            next_scores[k] = vc[k].item<double>();
            next[k] = rows[parent].extended(tc[k].item<int64_t>(), next_scores[k] - scores[parent]);
        }
        rows = std::move(next);
        scores = std::move(next_scores);
        stepper.select(r);
        prefix = torch::cat({prefix.index_select(0, r), tok.unsqueeze(1)}, 1);
        report(o, step, max_seq_len - 1);
        bool all_finished = true;
        for (const auto& row : rows) all_finished = all_finished && length(row) < max_seq_len;
        if (all_finished) {
            double best = -std::numeric_limits<double>::infinity();
            for (int64_t k = 0; k < K; ++k) {
                const double v = scores[k] / std::pow(double(length(rows[k])), o.length_penalty);
                if (v > best) best = v, answer = k;
            }
            break;
        }
    }
    Hyp h;
    const int len = length(rows[answer]);
    const size_t kept = std::min<size_t>(rows[answer].tokens.size(), size_t(len - 1));
    h.tokens.assign(rows[answer].tokens.begin(), rows[answer].tokens.begin() + kept);
    h.token_scores.assign(rows[answer].token_scores.begin(), rows[answer].token_scores.begin() + kept);
    h.finished = !h.tokens.empty() && h.tokens.back() == o.eos;
    h.score = scores[answer];
    h.normalized = h.score / std::pow(double(len), o.length_penalty);
    return h;
}

}  // namespace attnlab::decoding
