#!/usr/bin/env python3
"""Training throughput of the same model, batches and thread count through PyTorch's Python API
(Debian's python3-torch: the same LibTorch 1.13 as attnlab-cli), for docs/benchmarks.md.

  python3 scripts/bench_train_python.py --spm RUN/spm.model --data DIR [--batch-tokens 4096] [--steps 60] [--threads 2]

Tokenizes train.de/train.en with the `spm_encode` tool (package sentencepiece) and builds batches
with the algorithm of core/src/data/corpus.cpp (sorted by length, sentences x longest side <=
batch tokens), then times --steps optimiser steps after --warmup-steps untimed ones and prints
target tokens per second (target tokens = target pieces + </s>, as attnlab-cli train counts them).
The model is the reference's (post-LN, 3+3 layers, d_model 256, 8 heads, d_inner 1024, all
embeddings shared, scale_emb_or_prj=emb, dropout 0.1, attention dropout 0.1), the loss the same
label-smoothed cross-entropy (eps/(V-1) on the other classes) without a dense one-hot.
"""
import argparse, gzip, math, os, random, subprocess, sys, tempfile, time

import torch
import torch.nn as nn
import torch.nn.functional as F


def read(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [l.rstrip("\n") for l in f]


def find(data, stem):
    for p in (os.path.join(data, stem), os.path.join(data, stem + ".gz")):
        if os.path.exists(p):
            return p
    sys.exit(f"{stem}(.gz) missing in {data}")


def encode(spm, lines):
    with tempfile.NamedTemporaryFile("w", delete=False, encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    out = subprocess.run(["spm_encode", f"--model={spm}", "--output_format=id", f.name], capture_output=True, text=True, check=True).stdout
    os.unlink(f.name)
    return [[int(x) for x in l.split()] for l in out.splitlines()]


def batches(examples, batch_tokens):
    order = sorted(range(len(examples)), key=lambda i: (len(examples[i][0]), len(examples[i][1])))
    out, cur, s_len, t_len = [], [], 0, 0
    for i in order:
        s, t = len(examples[i][0]), len(examples[i][1]) + 1
        ns, nt = max(s_len, s), max(t_len, t)
        if cur and (len(cur) + 1) * max(ns, nt) > batch_tokens:
            out.append(cur); cur, s_len, t_len = [], 0, 0
            ns, nt = s, t
        cur.append(i); s_len, t_len = ns, nt
    if cur:
        out.append(cur)
    return out


class MHA(nn.Module):
    def __init__(s, h, d, dk, dv, p):
        super().__init__()
        s.h, s.dk, s.dv = h, dk, dv
        s.w_qs, s.w_ks = nn.Linear(d, h * dk, bias=False), nn.Linear(d, h * dk, bias=False)
        s.w_vs, s.fc = nn.Linear(d, h * dv, bias=False), nn.Linear(h * dv, d, bias=False)
        s.attn_dropout, s.dropout = nn.Dropout(0.1), nn.Dropout(p)
        s.layer_norm = nn.LayerNorm(d, eps=1e-6)

    def forward(s, q, k, v, mask):
        b, lq, lk = q.size(0), q.size(1), k.size(1)
        res = q
        q = s.w_qs(q).view(b, lq, s.h, s.dk).transpose(1, 2)
        k = s.w_ks(k).view(b, lk, s.h, s.dk).transpose(1, 2)
        v = s.w_vs(v).view(b, lk, s.h, s.dv).transpose(1, 2)
        a = torch.matmul(q / s.dk ** 0.5, k.transpose(2, 3)).masked_fill(mask.unsqueeze(1) == 0, -1e9)
        a = s.attn_dropout(F.softmax(a, dim=-1))
        o = torch.matmul(a, v).transpose(1, 2).contiguous().view(b, lq, -1)
        return s.layer_norm(s.dropout(s.fc(o)) + res)


class FFN(nn.Module):
    def __init__(s, d, di, p):
        super().__init__()
        s.w_1, s.w_2, s.dropout, s.layer_norm = nn.Linear(d, di), nn.Linear(di, d), nn.Dropout(p), nn.LayerNorm(d, eps=1e-6)

    def forward(s, x):
        return s.layer_norm(s.dropout(s.w_2(F.relu(s.w_1(x)))) + x)


class Model(nn.Module):
    def __init__(s, V, pad, d=256, di=1024, L=3, h=8, dk=32, p=0.1, n_position=200):
        super().__init__()
        s.pad, s.d = pad, d
        s.emb = nn.Embedding(V, d, padding_idx=pad)
        tab = torch.tensor([[pos / math.pow(10000, 2 * (j // 2) / d) for j in range(d)] for pos in range(n_position)])
        tab[:, 0::2], tab[:, 1::2] = tab[:, 0::2].sin(), tab[:, 1::2].cos()
        s.register_buffer("pos", tab.unsqueeze(0))
        s.enc = nn.ModuleList([nn.ModuleList([MHA(h, d, dk, dk, p), FFN(d, di, p)]) for _ in range(L)])
        s.dec = nn.ModuleList([nn.ModuleList([MHA(h, d, dk, dk, p), MHA(h, d, dk, dk, p), FFN(d, di, p)]) for _ in range(L)])
        s.enc_ln, s.dec_ln, s.drop = nn.LayerNorm(d, eps=1e-6), nn.LayerNorm(d, eps=1e-6), nn.Dropout(p)
        for w in s.parameters():
            if w.dim() > 1:
                nn.init.xavier_uniform_(w)

    def embed(s, seq, ln):
        return ln(s.drop(s.emb(seq) * s.d ** 0.5 + s.pos[:, : seq.size(1)]))

    def forward(s, src, trg):
        sm = (src != s.pad).unsqueeze(-2)
        n = trg.size(1)
        tm = (trg != s.pad).unsqueeze(-2) & (1 - torch.triu(torch.ones((1, n, n)), diagonal=1)).bool()
        x = s.embed(src, s.enc_ln)
        for a, f in s.enc:
            x = f(a(x, x, x, sm))
        y = s.embed(trg, s.dec_ln)
        for a, c, f in s.dec:
            y = f(c(a(y, y, y, tm), x, x, sm))
        return F.linear(y, s.emb.weight)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spm", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--batch-tokens", type=int, default=4096)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--warmup-steps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--profile", action="store_true", help="print the operators that took the most time")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    src = encode(a.spm, read(find(a.data, "train.de")))
    tgt = encode(a.spm, read(find(a.data, "train.en")))
    pad, bos, eos, V = 0, 2, 3, 8000
    V = max(max(max(x) for x in src if x), max(max(x) for x in tgt if x)) + 1
    V = max(V, 8000)
    ex = [(s + [eos], t) for s, t in zip(src, tgt) if s and t and len(s) + 1 <= 100 and len(t) + 1 <= 100]
    bs = batches(ex, a.batch_tokens)
    random.Random(a.seed).shuffle(bs)
    model = Model(V, pad)
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.98), eps=1e-9)
    eps_ls = 0.1
    tokens, t0 = 0, None
    prof = torch.autograd.profiler.profile() if a.profile else None
    for step in range(a.warmup_steps + a.steps):
        if step == a.warmup_steps:
            tokens, t0 = 0, time.perf_counter()
            if prof:
                prof.__enter__()
        b = bs[step % len(bs)]
        S = max(len(ex[i][0]) for i in b); T = max(len(ex[i][1]) for i in b) + 1
        s = torch.full((len(b), S), pad); ti = torch.full((len(b), T), pad); g = torch.full((len(b), T), pad)
        for r, i in enumerate(b):
            ss, tt = ex[i]
            s[r, : len(ss)] = torch.tensor(ss)
            ti[r, 0] = bos; ti[r, 1 : len(tt) + 1] = torch.tensor(tt)
            g[r, : len(tt)] = torch.tensor(tt); g[r, len(tt)] = eos
            tokens += len(tt) + 1
        opt.zero_grad()
        logp = F.log_softmax(model(s, ti).view(-1, V), -1)
        gold = g.view(-1); keep = gold != pad
        gl = logp.gather(1, gold.unsqueeze(1)).squeeze(1)
        loss = (-(1 - eps_ls) * gl - eps_ls / (V - 1) * (logp.sum(1) - gl))[keep].sum() / keep.sum()
        loss.backward()
        opt.step()
    dt = time.perf_counter() - t0
    if prof:
        prof.__exit__(None, None, None)
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25))
    print(f"python: {a.steps} steps, {tokens} target tokens, {dt:.1f} s, {tokens / dt:.0f} target tokens/s ({a.threads} threads)")


if __name__ == "__main__":
    main()
