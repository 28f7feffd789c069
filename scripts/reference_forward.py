#!/usr/bin/env python3
"""An independent implementation of the reference Transformer (jadore801120/attention-is-all-you-need-pytorch,
transformer/Models.py + SubLayers.py + Modules.py), written from the paper and the seed documents in plain
PyTorch, used to check AttnLab's C++ numbers.

Reads a model package, runs one teacher-forced forward pass per sentence with return_attns, and writes JSON:
  {"sentences": [{"probs_of_targets": [...], "encoder_self": [[[...]]], "decoder_self": ..., "cross": ...}]}

  python3 scripts/reference_forward.py --model DIR --input in.json --output out.json
in.json: {"sentences": [{"source_ids": [...], "decoder_input_ids": [...], "target_ids": [...]}]}
With "reference_beam": {"beam", "alpha", "max_seq_len", "bos", "eos"} in in.json, each sentence is also
translated by the reference's own beam search (Translator.translate_sentence): "reference_beam": {"ids", "score"}.
Each sentence's "probs" / "batch_probs" hold whole next-token distributions (alone / in one padded batch).
Needs Debian's python3-torch (and numpy); nothing else.
"""
import argparse, json, math, struct

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def load_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    dtypes = {"F32": np.float32, "F16": np.float16}
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        b, e = t["data_offsets"]
        arr = np.frombuffer(data[b:e], dtype=dtypes[t["dtype"]]).reshape(t["shape"])
        out[name] = torch.from_numpy(arr.astype(np.float32))
    return out


def sinusoid_table(n_position, d_hid):
    table = np.array([[pos / np.power(10000, 2 * (j // 2) / d_hid) for j in range(d_hid)] for pos in range(n_position)])
    table[:, 0::2] = np.sin(table[:, 0::2])
    table[:, 1::2] = np.cos(table[:, 1::2])
    return torch.FloatTensor(table).unsqueeze(0)


class MultiHead(nn.Module):
    def __init__(self, n_head, d_model, d_k, d_v):
        super().__init__()
        self.n_head, self.d_k, self.d_v = n_head, d_k, d_v
        self.w_qs = nn.Linear(d_model, n_head * d_k, bias=False)
        self.w_ks = nn.Linear(d_model, n_head * d_k, bias=False)
        self.w_vs = nn.Linear(d_model, n_head * d_v, bias=False)
        self.fc = nn.Linear(n_head * d_v, d_model, bias=False)
        self.layer_norm = nn.LayerNorm(d_model, eps=1e-6)

    def forward(self, q, k, v, mask):
        b, lq, lk = q.size(0), q.size(1), k.size(1)
        residual = q
        q = self.w_qs(q).view(b, lq, self.n_head, self.d_k).transpose(1, 2)
        k = self.w_ks(k).view(b, lk, self.n_head, self.d_k).transpose(1, 2)
        v = self.w_vs(v).view(b, lk, self.n_head, self.d_v).transpose(1, 2)
        attn = torch.matmul(q / self.d_k ** 0.5, k.transpose(2, 3))
        attn = attn.masked_fill(mask.unsqueeze(1) == 0, -1e9)
        attn = F.softmax(attn, dim=-1)
        out = torch.matmul(attn, v).transpose(1, 2).contiguous().view(b, lq, -1)
        return self.layer_norm(self.fc(out) + residual), attn


class FFN(nn.Module):
    def __init__(self, d_in, d_hid):
        super().__init__()
        self.w_1, self.w_2 = nn.Linear(d_in, d_hid), nn.Linear(d_hid, d_in)
        self.layer_norm = nn.LayerNorm(d_in, eps=1e-6)

    def forward(self, x):
        return self.layer_norm(self.w_2(F.relu(self.w_1(x))) + x)


class Layer(nn.Module):
    def __init__(self, c, decoder):
        super().__init__()
        self.slf_attn = MultiHead(c["n_head"], c["d_model"], c["d_k"], c["d_v"])
        if decoder:
            self.enc_attn = MultiHead(c["n_head"], c["d_model"], c["d_k"], c["d_v"])
        self.pos_ffn = FFN(c["d_model"], c["d_inner"])


class Stack(nn.Module):
    def __init__(self, c, decoder):
        super().__init__()
        self.layer_stack = nn.ModuleList([Layer(c, decoder) for _ in range(c["n_layers"])])
        self.layer_norm = nn.LayerNorm(c["d_model"], eps=1e-6)
        self.register_buffer("pos_table", sinusoid_table(c["n_position"], c["d_word_vec"]))

    def embed(self, emb_weight, seq, pad, scale):
        x = F.embedding(seq, emb_weight, padding_idx=pad)
        if scale:
            x = x * scale
        return self.layer_norm(x + self.pos_table[:, : seq.size(1)])


def run(c, w, src, trg_in, translator=False):
    """Teacher-forced forward pass. translator=True computes what the reference's Translator._model_decode
    does: a target mask without the pad part, and the projection without the "prj" d_model^-0.5."""
    shared_prj, shared_emb = c["trg_emb_prj_weight_sharing"], c["emb_src_trg_weight_sharing"]
    scale_emb = math.sqrt(c["d_model"]) if shared_prj and c["scale_emb_or_prj"] == "emb" else None
    scale_prj = shared_prj and c["scale_emb_or_prj"] == "prj"
    enc, dec = Stack(c, False), Stack(c, True)
    for prefix, stack in (("encoder.", enc), ("decoder.", dec)):
        sd = {k[len(prefix):]: v for k, v in w.items() if k.startswith(prefix) and "word_emb" not in k and "pos_table" not in k}
        missing, unexpected = stack.load_state_dict(sd, strict=False)
        assert not unexpected and all(m == "pos_table" for m in missing), (missing, unexpected)
    trg_emb = w["decoder.trg_word_emb.weight"]
    src_emb = trg_emb if shared_emb else w["encoder.src_word_emb.weight"]
    prj = trg_emb if shared_prj else w["trg_word_prj.weight"]
    src_mask = (src != c["src_pad_idx"]).unsqueeze(-2)
    n = trg_in.size(1)
    trg_mask = (1 - torch.triu(torch.ones((1, n, n)), diagonal=1)).bool()
    if not translator:
        trg_mask = (trg_in != c["trg_pad_idx"]).unsqueeze(-2) & trg_mask
    x = enc.embed(src_emb, src, c["src_pad_idx"], scale_emb)
    enc_attn = []
    for layer in enc.layer_stack:
        x, a = layer.slf_attn(x, x, x, src_mask)
        x = layer.pos_ffn(x)
        enc_attn.append(a)
    y = dec.embed(trg_emb, trg_in, c["trg_pad_idx"], scale_emb)
    slf, cross = [], []
    for layer in dec.layer_stack:
        y, a = layer.slf_attn(y, y, y, trg_mask)
        y, b = layer.enc_attn(y, x, x, src_mask)
        y = layer.pos_ffn(y)
        slf.append(a)
        cross.append(b)
    logits = F.linear(y, prj)
    if scale_prj and not translator:
        logits = logits * c["d_model"] ** -0.5
    return F.softmax(logits, dim=-1), enc_attn, slf, cross


def reference_translate(c, w, src_ids, beam, alpha, max_seq_len, bos, eos):
    """The reference's Translator.translate_sentence (transformer/Translator.py), step for step."""
    pad = c["trg_pad_idx"]
    src = torch.tensor([src_ids])

    def decode(seq):
        probs, _, _, _ = run(c, w, src.repeat(seq.size(0), 1), seq, translator=True)
        return probs

    dec = decode(torch.tensor([[bos]]))
    best_k_probs, best_k_idx = dec[:, -1, :].topk(beam)
    scores = torch.log(best_k_probs).view(beam)
    gen_seq = torch.full((beam, max_seq_len), pad, dtype=torch.long)
    gen_seq[:, 0] = bos
    gen_seq[:, 1] = best_k_idx[0]
    len_map = torch.arange(1, max_seq_len + 1, dtype=torch.long).unsqueeze(0)
    ans_idx, seq_lens = 0, None
    for step in range(2, max_seq_len):
        dec = decode(gen_seq[:, :step])
        best_k2_probs, best_k2_idx = dec[:, -1, :].topk(beam)
        s = torch.log(best_k2_probs).view(beam, -1) + scores.view(beam, 1)
        scores, best_k_idx_in_k2 = s.view(-1).topk(beam)
        r, col = best_k_idx_in_k2 // beam, best_k_idx_in_k2 % beam
        best_k_idx = best_k2_idx[r, col]
        gen_seq[:, :step] = gen_seq[r, :step]
        gen_seq[:, step] = best_k_idx
        eos_locs = gen_seq == eos
        seq_lens, _ = len_map.masked_fill(~eos_locs, max_seq_len).min(1)
        if (eos_locs.sum(1) > 0).sum(0).item() == beam:
            _, ans_idx = scores.div(seq_lens.float() ** alpha).max(0)
            ans_idx = ans_idx.item()
            break
    n = seq_lens[ans_idx].item() if seq_lens is not None else max_seq_len
    return {"ids": gen_seq[ans_idx][:n].tolist(), "score": scores[ans_idx].item()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--input", required=True)
    ap.add_argument("--output", required=True)
    a = ap.parse_args()
    torch.set_grad_enabled(False)
    c = json.load(open(a.model + "/config.json"))
    w = load_safetensors(a.model + "/model.safetensors")
    out = []
    for s in json.load(open(a.input))["sentences"]:
        probs, e, d, x = run(c, w, torch.tensor([s["source_ids"]]), torch.tensor([s["decoder_input_ids"]]))
        out.append({
            "probs_of_targets": [probs[0, i, t].item() for i, t in enumerate(s["target_ids"])],
            "encoder_self": [t[0].tolist() for t in e],
            "decoder_self": [t[0].tolist() for t in d],
            "cross": [t[0].tolist() for t in x],
        })
    if "reference_beam" in json.load(open(a.input)):
        rb = json.load(open(a.input))["reference_beam"]
        for i, s in enumerate(json.load(open(a.input))["sentences"]):
            out[i]["reference_beam"] = reference_translate(c, w, s["source_ids"], rb["beam"], rb["alpha"],
                                                           rb["max_seq_len"], rb["bos"], rb["eos"])
    # The same sentences as one padded batch (different lengths, padded with the pad ids): the
    # whole next-token distribution of every real (non-pad) decoder position.
    sents = json.load(open(a.input))["sentences"]
    ls = max(len(s["source_ids"]) for s in sents)
    lt = max(len(s["decoder_input_ids"]) for s in sents)
    src = torch.tensor([s["source_ids"] + [c["src_pad_idx"]] * (ls - len(s["source_ids"])) for s in sents])
    trg = torch.tensor([s["decoder_input_ids"] + [c["trg_pad_idx"]] * (lt - len(s["decoder_input_ids"])) for s in sents])
    probs, _, _, _ = run(c, w, src, trg)
    for i, s in enumerate(sents):
        out[i]["batch_probs"] = probs[i, : len(s["decoder_input_ids"])].tolist()
        single, _, _, _ = run(c, w, torch.tensor([s["source_ids"]]), torch.tensor([s["decoder_input_ids"]]))
        out[i]["probs"] = single[0].tolist()
    json.dump({"sentences": out}, open(a.output, "w"))


if __name__ == "__main__":
    main()
