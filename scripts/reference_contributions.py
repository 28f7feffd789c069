#!/usr/bin/env python3
"""An independent float64 implementation of ALTI+ (Ferrando et al. 2022, "Towards Opening the Black Box of Neural
Machine Translation: Source and Target Contributions in the Transformer"), written from the paper and the authors'
code (mt-upc/transformer-contributions-nmt, wrappers/transformer_wrapper.py: __get_contributions_module,
normalize_contrib('min_sum'), get_contribution_rollout), not from AttnLab's C++, to check AttnLab's numbers.

Reads an AttnLab package (config.json + model.safetensors: every family AttnLab opens is one of these layer
structures: post-norm as the paper and Marian, pre-norm with final layer norms as M2M100 / NLLB / mBART, mBART's
layer norm on the embeddings, OpenNMT-py / CTranslate2's relative positions), runs its own teacher-forced forward
pass in float64 over each sentence and writes every layer's contribution matrices and their rollout:

  python3 scripts/reference_contributions.py --model DIR --input in.json --output out.json
in.json:  {"sentences": [{"source_ids": [...], "decoder_input_ids": [...], "target_ids": [...],
                          "ablate": [["encoder"|"decoder"|"cross", layer, head], ...]}]}
out.json: {"sentences": [{"encoder_self": [layer][s][s], "decoder_self": [layer][t][t], "cross": [layer][t][s],
                          "cross_residual": [layer][t], "source": [t][s], "target": [t][t],
                          "source_by_layer": [decoder layer][t][s] (the rollout's source part after each layer),
                          "log_probs": [t] (of target_ids, a check of the forward pass)}]}
Needs numpy and Debian's python3-torch (and reference_forward.py beside it, for the safetensors reader).

Two choices, the same as AttnLab's (docs/contributions.md): a post-norm block's layer norm is decomposed with the
layer norm's own standard deviation, sqrt(Var(z) + eps) (the authors' code divides by (z + eps).std(), the unbiased
deviation of z + eps: an approximation of it); with relative positions, the value vector a^V of the offset between
query i and key j is counted with key j, as the value projection's bias is.
"""
import argparse, json, math, os, sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference_forward import load_safetensors  # noqa: E402  (float32 tensors; used here in float64)


class Model:
    """The Transformer's forward pass from its config fields (config.json), recording what ALTI+ needs: every
    attention block's input, weights and values."""

    def __init__(self, directory):
        self.c = json.load(open(directory + "/config.json"))
        self.w = {k: v.double() for k, v in load_safetensors(directory + "/model.safetensors").items()}
        c = self.c
        self.pre = c["norm_position"] == "pre"
        self.eps = c["layer_norm_eps"]
        self.k_rel = c["max_relative_positions"]
        tied_prj = c["trg_emb_prj_weight_sharing"]
        if c["emb_scale"] == "sqrt_d_model" or (c["emb_scale"] == "auto" and tied_prj and c["scale_emb_or_prj"] == "emb"):
            self.emb_scale = math.sqrt(c["d_model"])
        else:
            self.emb_scale = 1.0
        self.prj_scale = c["d_model"] ** -0.5 if tied_prj and c["scale_emb_or_prj"] == "prj" else 1.0
        self.trg_emb = self.w["decoder.trg_word_emb.weight"]
        self.src_emb = self.trg_emb if c["emb_src_trg_weight_sharing"] else self.w["encoder.src_word_emb.weight"]
        self.prj = self.trg_emb if tied_prj else self.w["trg_word_prj.weight"]

    def ln(self, name, x):
        mu = x.mean(-1, keepdim=True)
        var = ((x - mu) ** 2).mean(-1, keepdim=True)
        return (x - mu) / torch.sqrt(var + self.eps) * self.w[name + ".weight"] + self.w[name + ".bias"]

    def linear(self, name, x):
        y = x @ self.w[name + ".weight"].T
        b = self.w.get(name + ".bias")
        return y if b is None else y + b

    def embed(self, stack, ids, table):
        x = table[torch.tensor(ids)] * self.emb_scale
        if stack == "decoder" and self.c["start_from_zero_embedding"]:
            x[0] = 0.0  # the first step's vector is zero (CTranslate2's zero_first_timestep); its position is added
        rows = torch.arange(len(ids)) + self.c["pos_offset"]
        x = x + self.w[stack + ".position_enc.pos_table"][0][rows]
        if self.c["emb_layer_norm"]:
            x = self.ln(stack + ".layer_norm", x)
        return x

    def attention(self, name, x, memory, allowed, keep, relative):
        """One attention block: returns its output and a record of what ALTI+ decomposes."""
        c = self.c
        h, dk, dv = c["n_head"], c["d_k"], c["d_v"]
        q_in = self.ln(name + ".layer_norm", x) if self.pre else x
        kv_in = memory if memory is not None else q_in
        lq, lk = q_in.shape[0], kv_in.shape[0]
        q = self.linear(name + ".w_qs", q_in).view(lq, h, dk).transpose(0, 1) / math.sqrt(dk)
        k = self.linear(name + ".w_ks", kv_in).view(lk, h, dk).transpose(0, 1)
        v = self.linear(name + ".w_vs", kv_in).view(lk, h, dv).transpose(0, 1)  # v_proj(in_v), bias included
        scores = q @ k.transpose(1, 2)
        a_v = None
        if relative and self.k_rel > 0:
            # Shaw et al.: key j of query i uses the table row of clip(j - i, -k, k) + k (queries the last lq keys)
            i = torch.arange(lq).unsqueeze(1) + (lk - lq)
            rows = torch.clamp(torch.arange(lk).unsqueeze(0) - i, -self.k_rel, self.k_rel) + self.k_rel
            a_k = self.w[name + ".relative_position_keys"][rows]  # [lq, lk, dk]
            a_v = self.w[name + ".relative_position_values"][rows]  # [lq, lk, dv]
            scores = scores + torch.einsum("hqd,qkd->hqk", q, a_k)
        scores = scores.masked_fill(~allowed, -1e9)
        p = torch.softmax(scores, -1) * keep.view(h, 1, 1)  # an ablated head's output is zero
        heads = p @ v
        if a_v is not None:
            heads = heads + torch.einsum("hqk,qkd->hqd", p, a_v)
        out = self.linear(name + ".fc", heads.transpose(0, 1).reshape(lq, h * dv))
        y = x + out if self.pre else self.ln(name + ".layer_norm", x + out)
        record = {"name": name, "p": p, "v": v, "a_v": a_v, "residual": x, "output": y}
        return y, record

    def ffn(self, name, x):
        act = {"relu": torch.relu, "swish": torch.nn.functional.silu, "gelu": torch.nn.functional.gelu,
               "gelu_tanh": lambda t: torch.nn.functional.gelu(t, approximate="tanh")}[self.c["ffn_activation"]]
        inner = self.ln(name + ".layer_norm", x) if self.pre else x
        y = self.linear(name + ".w_2", act(self.linear(name + ".w_1", inner)))
        return x + y if self.pre else self.ln(name + ".layer_norm", x + y)

    def forward(self, src, trg_in, ablate):
        c = self.c
        h = c["n_head"]
        n_dec = c["n_dec_layers"] or c["n_layers"]

        def keep(kind, layer):
            k = torch.ones(h)
            for a_kind, a_layer, a_head in ablate:
                if a_kind == kind and a_layer == layer:
                    k[a_head] = 0.0
            return k

        src_keys = torch.tensor(src) != c["src_pad_idx"]
        trg_keys = torch.tensor(trg_in) != c["trg_pad_idx"]
        blocks = {"encoder": [], "decoder": [], "cross": []}
        x = self.embed("encoder", src, self.src_emb)
        enc_allowed = src_keys.view(1, 1, -1).expand(1, len(src), len(src))
        for l in range(c["n_layers"]):
            p = "encoder.layer_stack.%d" % l
            x, r = self.attention(p + ".slf_attn", x, None, enc_allowed, keep("encoder", l), True)
            blocks["encoder"].append(r)
            x = self.ffn(p + ".pos_ffn", x)
        if c["final_layer_norm"]:
            x = self.ln("encoder.final_layer_norm", x)
        memory = x
        t = len(trg_in)
        dec_allowed = (torch.tril(torch.ones(t, t)).bool() & trg_keys.view(1, -1)).view(1, t, t)
        cross_allowed = src_keys.view(1, 1, -1).expand(1, t, len(src))
        x = self.embed("decoder", trg_in, self.trg_emb)
        for l in range(n_dec):
            p = "decoder.layer_stack.%d" % l
            x, r = self.attention(p + ".slf_attn", x, None, dec_allowed, keep("decoder", l), True)
            blocks["decoder"].append(r)
            x, r = self.attention(p + ".enc_attn", x, memory, cross_allowed, keep("cross", l), False)
            blocks["cross"].append(r)
            x = self.ffn(p + ".pos_ffn", x)
        if c["final_layer_norm"]:
            x = self.ln("decoder.final_layer_norm", x)
        logits = x @ self.prj.T * self.prj_scale
        if "final_logits_bias" in self.w:
            logits = logits + self.w["final_logits_bias"]
        return torch.log_softmax(logits, -1), blocks

    def block_contributions(self, r, cross):
        """__get_contributions_module (l1) then normalize_contrib('min_sum'): [lq, lk] for a self-attention,
        [lq, lk + 1] for a cross-attention (its residual as one more value vector, last)."""
        c = self.c
        h, dv, d = c["n_head"], c["d_v"], c["d_model"]
        name = r["name"]
        w_o = self.w[name + ".fc.weight"].view(d, h, dv).permute(1, 2, 0)  # 'out_d (n_h h_d) -> n_h h_d out_d'
        attn_v_wo = torch.einsum("hqk,hke,hef->qkf", r["p"], r["v"], w_o)
        if r["a_v"] is not None:
            attn_v_wo = attn_v_wo + torch.einsum("hqk,qke,hef->qkf", r["p"], r["a_v"], w_o)
        x = r["residual"]
        if cross:
            out_qv_pre_ln = torch.cat((attn_v_wo, x.unsqueeze(1)), dim=1)
        else:
            out_qv_pre_ln = attn_v_wo + torch.einsum("sk,sd->skd", torch.eye(x.shape[0]), x)
        b_o = self.w.get(name + ".fc.bias", torch.zeros(d))
        out_q_pre_ln = out_qv_pre_ln.sum(1) + b_o
        if self.pre:
            transformed, resultant = out_qv_pre_ln, out_q_pre_ln
        else:
            w_ln, b_ln = self.w[name + ".layer_norm.weight"], self.w[name + ".layer_norm.bias"]
            mean_transf = torch.eye(d) - torch.ones(d, d) / d  # l_transform: (x - mean(x)) * w_ln
            z = out_q_pre_ln
            std = torch.sqrt(((z - z.mean(-1, keepdim=True)) ** 2).mean(-1) + self.eps).view(-1, 1, 1)
            transformed = torch.einsum("qke,ef,f->qkf", out_qv_pre_ln, mean_transf, w_ln) / std
            dense_bias = torch.einsum("e,ef,f->f", b_o, mean_transf, w_ln) / std.view(-1, 1)
            resultant = transformed.sum(1) + dense_bias + b_ln
        assert torch.allclose(resultant, r["output"], atol=1e-9), name + ": the decomposition does not add up"
        distance = (transformed - resultant.unsqueeze(1)).abs().sum(-1)  # -F.pairwise_distance(p=1), negated
        norm = resultant.abs().sum(-1, keepdim=True)
        contributions = torch.clip(norm - distance, min=0)
        return contributions / contributions.sum(-1, keepdim=True)

    def alti_plus(self, blocks, s):
        enc = [self.block_contributions(r, False) for r in blocks["encoder"]]
        dec = [self.block_contributions(r, False) for r in blocks["decoder"]]
        cross = [self.block_contributions(r, True) for r in blocks["cross"]]
        # compute_joint_attention: the encoder's rollout, its last layer
        joint = enc[0]
        for layer in enc[1:]:
            joint = layer @ joint
        # rollout(): each decoder layer [cross x encoder rollout ; self x the cross-attention's residual share]
        c_roll = [torch.cat([cr[:, :s] @ joint, sa * cr[:, s:s + 1]], dim=-1) for sa, cr in zip(dec, cross)]
        accum = c_roll[0]
        by_layer = [accum[:, :s].tolist()]
        for i in range(1, len(c_roll)):
            sa_new = c_roll[i][:, s:] @ accum[:, s:]
            ed_new = c_roll[i][:, s:] @ accum[:, :s] + c_roll[i][:, :s]
            accum = torch.cat([ed_new, sa_new], dim=-1)
            accum = accum / accum.sum(-1, keepdim=True)
            by_layer.append(accum[:, :s].tolist())
        return {"encoder_self": [m.tolist() for m in enc], "decoder_self": [m.tolist() for m in dec],
                "cross": [m[:, :s].tolist() for m in cross], "cross_residual": [m[:, s].tolist() for m in cross],
                "source": accum[:, :s].tolist(), "target": accum[:, s:].tolist(), "source_by_layer": by_layer}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--input", required=True)
    ap.add_argument("--output", required=True)
    args = ap.parse_args()
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)  # every tensor made here (eye, ones, zeros) in float64
    try:
        run(args)
    finally:
        torch.set_default_dtype(before)


def run(args):
    model = Model(args.model)
    out = {"sentences": []}
    with torch.no_grad():
        for sentence in json.load(open(args.input))["sentences"]:
            src, trg_in = sentence["source_ids"], sentence["decoder_input_ids"]
            log_probs, blocks = model.forward(src, trg_in, sentence.get("ablate", []))
            result = model.alti_plus(blocks, len(src))
            targets = sentence.get("target_ids", [])
            result["log_probs"] = [log_probs[i][t].item() for i, t in enumerate(targets)]
            out["sentences"].append(result)
    json.dump(out, open(args.output, "w"))


if __name__ == "__main__":
    main()
