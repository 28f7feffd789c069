#!/usr/bin/env python3
"""An independent float64 implementation of value zeroing (Mohebbi et al. 2023, "Quantifying Context Mixing in
Transformers", EACL 2023; the authors' code: hmohebbi/ValueZeroing scoring/value_zeroing.py, and for
encoder-decoders hmohebbi/ContextMixingASR scoring/valueZeroing.py) and of the logit lens on the decoder, over an
AttnLab package, used to check AttnLab's C++ numbers (tests/tst_value_zeroing.cpp, tests/tst_logit_lens.cpp), and of
value zeroing measured on a contrastive difference (docs/contributions.md "Contrastive").

  python3 scripts/reference_value_zeroing.py --input cases.json --output out.json
cases.json: {"cases": [{"model": DIR, "source_ids": [...], "decoder_input_ids": [...], "target_ids": [...],
             "ablated": [{"kind": "encoder"|"decoder"|"cross", "layer": L, "head": H}, ...], "top": K,
             "contrast": {"step": t, "chosen": id, "alternative": id}  (optional)}]}
out.json:   {"cases": [{"encoder_self": [layer][src][src], "decoder_self": [layer][tgt][tgt],
             "cross": [layer][tgt][src], "source": [tgt][src], "target": [tgt][tgt],
             "lens": [layer][position] {"chosen_log_prob", "chosen_rank", "chosen_rank_range", "top_ids",
             "top_log_probs"},
             "contrastive" (with "contrast"): {"difference", "encoder_self": [layer][src], "decoder_self": [layer][tgt],
             "cross": [layer][src]}}]}

The model is written here from its architecture's definition (Vaswani et al. 2017 with the variants AttnLab's
config.json names: post- or pre-layer-norm blocks (Xiong et al. 2020), an embedding layer norm and final layer
norms (mBART / M2M100), biases, the feed-forward's activation, Shaw et al. 2018's relative positions as
CTranslate2 clips them, the decoder's zero first input), reading the package's config.json and model.safetensors
(the stored positional tables included), in float64. Value zeroing, as the authors' code does it: for each layer
and each key token j, the layer recomputed from its clean input with v_j = W_V x_j + b_V set to zero in every head
(the relative value vectors a^V_ij are the offset's, not the token's, and stay); the cosine distance
(scikit-learn's cosine_distances: 1 - cosine, clipped to [0, 2]) of each query's output from the clean output
(after the last layer: through the final layer norm), below 1e-12 taken as 0 (rounding, not a change); in the
decoder's self-attention only queries i >= j (a
query never sees a later key); each row divided by its sum (0 stays 0). The aggregation over the model is the
rollout of docs/contributions.md, written here from that text. The contrastive maps: the difference
D = log p(chosen) - log p(alternative) at target step t of the whole model, and for each layer of each attention
kind and each key j, D minus D of the whole model run again with j's value vectors zeroed in every head of that one
attention (every position of the decoder's input given, the later ones included). Needs python3-torch and numpy only.
"""
import argparse, json, math, os, sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference_forward import load_safetensors  # noqa: E402

# docs/contributions.md: a distance below 1e-12 is rounding, not a change (an angle of 1.4e-6), and scores 0
UNCHANGED = 1e-12


def read_safetensors(path):
    """The package's tensors in float64 (reference_forward's reader gives float32, which float64 holds exactly)."""
    return {name: t.double() for name, t in load_safetensors(path).items()}


class Model:
    def __init__(self, directory, ablated):
        self.c = json.load(open(f"{directory}/config.json"))
        self.w = read_safetensors(f"{directory}/model.safetensors")
        c = self.c
        self.d = c["d_model"]
        self.H = c["n_head"]
        self.eps = c["layer_norm_eps"]
        self.pre = c["norm_position"] == "pre"
        self.k_rel = c["max_relative_positions"]
        tied_prj = c["trg_emb_prj_weight_sharing"]
        scale_emb = c["emb_scale"] == "sqrt_d_model" or (c["emb_scale"] == "auto" and tied_prj and
                                                          c["scale_emb_or_prj"] == "emb")
        self.emb_scale = math.sqrt(self.d) if scale_emb else 1.0
        self.prj_scale = self.d ** -0.5 if tied_prj and c["scale_emb_or_prj"] == "prj" else 1.0
        self.trg_emb = self.w["decoder.trg_word_emb.weight"]
        self.src_emb = self.trg_emb if c["emb_src_trg_weight_sharing"] else self.w["encoder.src_word_emb.weight"]
        self.prj = self.trg_emb if tied_prj else self.w["trg_word_prj.weight"]
        self.flb = self.w.get("final_logits_bias")
        # head switched off: its output multiplied by 0 before the output projection
        self.keep = {}
        for a in ablated:
            self.keep.setdefault((a["kind"], a["layer"]), torch.ones(self.H, dtype=torch.float64))[a["head"]] = 0.0

    # ---- building blocks ----
    def ln(self, x, p):
        return F.layer_norm(x, (self.d,), self.w[p + ".weight"], self.w[p + ".bias"], self.eps)

    def lin(self, x, p):
        return F.linear(x, self.w[p + ".weight"], self.w.get(p + ".bias"))

    def act(self, x):
        a = self.c["ffn_activation"]
        if a == "swish":
            return x * torch.sigmoid(x)
        if a == "gelu":
            return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))
        if a == "gelu_tanh":
            return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
        return torch.clamp(x, min=0.0)

    def embed(self, side, ids):
        table = self.src_emb if side == "encoder" else self.trg_emb
        x = table[torch.tensor(ids)] * self.emb_scale
        if side == "decoder" and self.c["start_from_zero_embedding"]:
            x[0] = 0.0
        if self.c["pos_encoding"] != "none":  # the stored table; token i adds row pos_offset + i
            pos = self.w[f"{side}.position_enc.pos_table"][0]
            x = x + pos[self.c["pos_offset"]: self.c["pos_offset"] + len(ids)]
        if self.c["emb_layer_norm"]:
            x = self.ln(x, f"{side}.layer_norm")
        return x

    def attention(self, p, kind, layer, x, memory, causal, zero_key=None):
        """One attention sub-layer with its residual and layer norm. x [Tq, d]; memory [Tk, d] (None: self).
        zero_key: the key whose value vectors are zeroed in every head."""
        H = self.H
        q_in = self.ln(x, p + ".layer_norm") if self.pre else x
        kv_in = q_in if memory is None else memory
        q = self.lin(q_in, p + ".w_qs").view(len(x), H, -1).transpose(0, 1) / math.sqrt(self.c["d_k"])
        k = self.lin(kv_in, p + ".w_ks").view(len(kv_in), H, -1).transpose(0, 1)
        v = self.lin(kv_in, p + ".w_vs").view(len(kv_in), H, -1).transpose(0, 1)
        if zero_key is not None:
            v = v.clone()
            v[:, zero_key, :] = 0.0
        s = q @ k.transpose(1, 2)  # [H, Tq, Tk]
        relative = memory is None and self.k_rel > 0
        if relative:  # Shaw et al.: the clipped offset j - i picks a learned key and value vector
            Tq, Tk = len(x), len(kv_in)
            idx = [[min(max(j - i, -self.k_rel), self.k_rel) + self.k_rel for j in range(Tk)] for i in range(Tq)]
            aK = self.w[p + ".relative_position_keys"][torch.tensor(idx)]  # [Tq, Tk, dk]
            aV = self.w[p + ".relative_position_values"][torch.tensor(idx)]
            s = s + torch.einsum("hid,ijd->hij", q, aK)
        if causal:
            s = s.masked_fill(torch.triu(torch.ones(s.shape[1], s.shape[2], dtype=torch.bool), 1), float("-inf"))
        a = torch.softmax(s, -1)
        o = a @ v
        if relative:
            o = o + torch.einsum("hij,ijd->hid", a, aV)
        o = o * self.keep.get((kind, layer), torch.ones(H, dtype=torch.float64))[:, None, None]
        o = self.lin(o.transpose(0, 1).reshape(len(x), -1), p + ".fc")
        return x + o if self.pre else self.ln(x + o, p + ".layer_norm")

    def ffn(self, p, x):
        h = self.ln(x, p + ".layer_norm") if self.pre else x
        y = self.lin(self.act(self.lin(h, p + ".w_1")), p + ".w_2")
        return x + y if self.pre else self.ln(x + y, p + ".layer_norm")

    def after_last(self, side, x):
        return self.ln(x, f"{side}.final_layer_norm") if self.c["final_layer_norm"] else x

    def encoder_layer(self, l, x, zero_key=None):
        p = f"encoder.layer_stack.{l}"
        return self.ffn(p + ".pos_ffn", self.attention(p + ".slf_attn", "encoder", l, x, None, False, zero_key))

    def decoder_layer(self, l, y, memory, zero_self=None, zero_cross=None):
        p = f"decoder.layer_stack.{l}"
        h = self.attention(p + ".slf_attn", "decoder", l, y, None, True, zero_self)
        h = self.attention(p + ".enc_attn", "cross", l, h, memory, False, zero_cross)
        return self.ffn(p + ".pos_ffn", h)

    def logits(self, y):
        out = (y @ self.prj.t()) * self.prj_scale
        return out + self.flb if self.flb is not None else out


def cosine_distances(x, y):
    """Row i of x against row i of y, as sklearn.metrics.pairwise.cosine_distances(x, y).diagonal()."""
    num = (x * y).sum(-1)
    den = x.norm(dim=-1) * y.norm(dim=-1)
    d = torch.clamp(1.0 - num / den, 0.0, 2.0)
    return torch.where(d < UNCHANGED, torch.zeros_like(d), d)


def normalised(m):
    s = m.sum(-1, keepdim=True)
    return torch.where(s > 0, m / torch.where(s > 0, s, torch.ones_like(s)), torch.zeros_like(m))


def value_zeroing(model, src, dec_in):
    n_enc, n_dec = model.c["n_layers"], model.c["n_dec_layers"] or model.c["n_layers"]
    S, T = len(src), len(dec_in)
    # encoder: layer l from its clean input, each key j zeroed in turn
    x = model.embed("encoder", src)
    enc = []
    for l in range(n_enc):
        last = l == n_enc - 1
        out = model.encoder_layer(l, x)
        clean = model.after_last("encoder", out) if last else out
        m = torch.zeros(S, S, dtype=torch.float64)
        for j in range(S):
            changed = model.encoder_layer(l, x, zero_key=j)
            m[:, j] = cosine_distances(model.after_last("encoder", changed) if last else changed, clean)
        enc.append(m)
        x = out
    memory = model.after_last("encoder", x)
    # decoder: the self-attention's keys, then the cross-attention's, each from the layer's clean input
    y = model.embed("decoder", dec_in)
    dec_self, dec_cross = [], []
    for l in range(n_dec):
        last = l == n_dec - 1
        fin = (lambda t: model.after_last("decoder", t)) if last else (lambda t: t)
        out = model.decoder_layer(l, y, memory)
        clean = fin(out)
        ms = torch.zeros(T, T, dtype=torch.float64)
        for j in range(T):
            d = cosine_distances(fin(model.decoder_layer(l, y, memory, zero_self=j)), clean)
            ms[j:, j] = d[j:]  # queries before j have not seen j
        mc = torch.zeros(T, S, dtype=torch.float64)
        for j in range(S):
            mc[:, j] = cosine_distances(fin(model.decoder_layer(l, y, memory, zero_cross=j)), clean)
        dec_self.append(ms)
        dec_cross.append(mc)
        y = out
    return enc, dec_self, dec_cross, (y, fin)


def rollout(enc, dec_self, dec_cross):
    """docs/contributions.md: the encoder's normalised maps multiplied (joint_l = A_l joint_{l-1}); in each decoder
    layer a row's raw scores divided by the sum over its self- and cross-attention keys together; target = the
    product of the self shares, source_l = self_share_l source_{l-1} + cross_share_l encoder_rollout. A row that
    nothing changed is the identity's row (the piece keeps its own representation)."""
    S, T = dec_cross[0].shape[1], dec_self[0].shape[0]
    R = np.eye(S)
    for a in enc:
        a = a.numpy()
        s = a.sum(1)
        A = np.zeros_like(a)
        for i in range(S):
            if s[i] > 0:
                A[i] = a[i] / s[i]
            else:
                A[i, i] = 1.0
        R = A @ R
    target, source = np.eye(T), np.zeros((T, S))
    for ms, mc in zip(dec_self, dec_cross):
        ms, mc = ms.numpy(), mc.numpy()
        Ds, Dc = np.zeros_like(ms), np.zeros_like(mc)
        for i in range(T):
            z = ms[i].sum() + mc[i].sum()
            if z > 0:
                Ds[i], Dc[i] = ms[i] / z, mc[i] / z
            else:
                Ds[i, i] = 1.0
        source = Ds @ source + Dc @ R
        target = Ds @ target
    return source, target


def logit_lens(model, src, dec_in, targets, top):
    """Each decoder layer's output through the final layer norm (where the model has one) and the projection."""
    n_dec = model.c["n_dec_layers"] or model.c["n_layers"]
    x = model.embed("encoder", src)
    for l in range(model.c["n_layers"]):
        x = model.encoder_layer(l, x)
    memory = model.after_last("encoder", x)
    y = model.embed("decoder", dec_in)
    layers = []
    for l in range(n_dec):
        y = model.decoder_layer(l, y, memory)
        logp = torch.log_softmax(model.logits(model.after_last("decoder", y)), -1)
        row = []
        for t, gold in enumerate(targets):
            values, ids = torch.topk(logp[t], top)
            chosen = logp[t, gold].item()
            # the rank (pieces more probable than the chosen one) and its range under a change of 1e-5
            row.append({"chosen_log_prob": chosen, "chosen_rank": int((logp[t] > chosen).sum().item()),
                        "chosen_rank_range": [int((logp[t] > chosen + 1e-5).sum().item()),
                                              int((logp[t] > chosen - 1e-5).sum().item())],
                        "top_ids": ids.tolist(), "top_log_probs": values.tolist()})
        layers.append(row)
    return layers


def contrastive_log_probs(model, src, dec_in, zero=None):
    """log p [T, vocab] of the whole model; zero = (kind, layer, key): that key's value vectors zeroed in every head
    of that one attention ("encoder": the encoder's self-attention, "decoder": the decoder's, "cross")."""
    kind, layer, key = zero if zero else (None, -1, None)
    n_dec = model.c["n_dec_layers"] or model.c["n_layers"]
    pick = lambda k, l: key if (kind == k and layer == l) else None  # noqa: E731
    x = model.embed("encoder", src)
    for l in range(model.c["n_layers"]):
        x = model.encoder_layer(l, x, zero_key=pick("encoder", l))
    memory = model.after_last("encoder", x)
    y = model.embed("decoder", dec_in)
    for l in range(n_dec):
        y = model.decoder_layer(l, y, memory, zero_self=pick("decoder", l), zero_cross=pick("cross", l))
    return torch.log_softmax(model.logits(model.after_last("decoder", y)), -1)


def contrastive(model, src, dec_in, contrast):
    t, a, b = contrast["step"], contrast["chosen"], contrast["alternative"]
    diff = lambda lp: (lp[t, a] - lp[t, b]).item()  # noqa: E731
    full = diff(contrastive_log_probs(model, src, dec_in))
    n_dec = model.c["n_dec_layers"] or model.c["n_layers"]
    maps = {}
    for name, kind, layers, keys in (("encoder_self", "encoder", model.c["n_layers"], len(src)),
                                     ("decoder_self", "decoder", n_dec, len(dec_in)),
                                     ("cross", "cross", n_dec, len(src))):
        maps[name] = [[full - diff(contrastive_log_probs(model, src, dec_in, (kind, l, j))) for j in range(keys)]
                      for l in range(layers)]
    maps["difference"] = full
    return maps


def run_case(case):
    model = Model(case["model"], case.get("ablated", []))
    src, dec_in = case["source_ids"], case["decoder_input_ids"]
    enc, ds, dc, _ = value_zeroing(model, src, dec_in)
    source, target = rollout(enc, ds, dc)
    return {"encoder_self": [normalised(m).tolist() for m in enc],
            "decoder_self": [normalised(m).tolist() for m in ds],
            "cross": [normalised(m).tolist() for m in dc],
            "source": source.tolist(), "target": target.tolist(),
            "lens": logit_lens(model, src, dec_in, case["target_ids"], case.get("top", 5)),
            **({"contrastive": contrastive(model, src, dec_in, case["contrast"])} if "contrast" in case else {})}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--input", required=True)
    ap.add_argument("--output", required=True)
    a = ap.parse_args()
    torch.set_grad_enabled(False)
    cases = json.load(open(a.input))["cases"]
    json.dump({"cases": [run_case(c) for c in cases]}, open(a.output, "w"))


if __name__ == "__main__":
    main()
