#!/usr/bin/env python3
"""An independent implementation of the reference Transformer (jadore801120/attention-is-all-you-need-pytorch,
transformer/Models.py + SubLayers.py + Modules.py), written from the paper and the seed documents in plain
PyTorch, used to check AttnLab's C++ numbers.

Reads a model package, runs one teacher-forced forward pass per sentence with return_attns, and writes JSON:
  {"sentences": [{"probs_of_targets": [...], "encoder_self": [[[...]]], "decoder_self": ..., "cross": ...}]}

  python3 scripts/reference_forward.py --model DIR --input in.json --output out.json
in.json: {"sentences": [{"source_ids": [...], "decoder_input_ids": [...], "target_ids": [...]}]}
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


def run(c, w, src, trg_in):
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
    trg_mask = (trg_in != c["trg_pad_idx"]).unsqueeze(-2) & (1 - torch.triu(torch.ones((1, n, n)), diagonal=1)).bool()
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
    if scale_prj:
        logits = logits * c["d_model"] ** -0.5
    return F.softmax(logits, dim=-1), enc_attn, slf, cross


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
