#!/usr/bin/env python3
"""Turns a checkpoint of the reference implementation's train.py ({'settings': opt, 'model': state_dict}) into
an AttnLab model package. The model must have been trained on SentencePiece ids of the given tokenizer.

  python3 scripts/convert_reference_checkpoint.py model.chkpt spm.model OUT_DIR [--src de --tgt en]
Needs Debian's python3-torch; nothing else. The lines that matter are the README's.
"""
import argparse, json, os, shutil, struct

import torch


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("checkpoint")
    ap.add_argument("tokenizer", help="the SentencePiece .model the ids come from")
    ap.add_argument("out")
    ap.add_argument("--src", default="de")
    ap.add_argument("--tgt", default="en")
    ap.add_argument("--no-source-bos", action="store_true", help="the source sentences had no <s> in training")
    a = ap.parse_args()

    # The reference's checkpoints hold its argparse settings, which PyTorch 2.6+ refuses to unpickle
    # by default (weights_only); the argument exists since 1.13, Debian's.
    ck = torch.load(a.checkpoint, map_location="cpu", weights_only=False); o, sd = ck["settings"], ck["model"]
    tied = (["trg_word_prj.weight"] if o.proj_share_weight else []) + (["encoder.src_word_emb.weight"] if o.embs_share_weight else [])
    ts = {k: v.float().contiguous() for k, v in sd.items() if k not in tied}; hdr, off = {}, 0
    for k, v in ts.items(): hdr[k] = {"dtype": "F32", "shape": list(v.shape), "data_offsets": [off, off + 4 * v.numel()]}; off += 4 * v.numel()
    h = json.dumps(hdr).encode(); h += b" " * (-len(h) % 8)
    os.makedirs(a.out, exist_ok=True)
    open(os.path.join(a.out, "model.safetensors"), "wb").write(struct.pack("<Q", len(h)) + h + b"".join(v.numpy().tobytes() for v in ts.values()))
    n_position = sd["encoder.position_enc.pos_table"].shape[1] if "encoder.position_enc.pos_table" in sd else 200
    json.dump(dict(format_version=1, source_lang=a.src, target_lang=a.tgt, n_src_vocab=o.src_vocab_size, n_trg_vocab=o.trg_vocab_size,
                   src_pad_idx=o.src_pad_idx, trg_pad_idx=o.trg_pad_idx, d_word_vec=o.d_word_vec, d_model=o.d_model, d_inner=o.d_inner_hid,
                   n_layers=o.n_layers, n_head=o.n_head, d_k=o.d_k, d_v=o.d_v, dropout=o.dropout, n_position=n_position,
                   trg_emb_prj_weight_sharing=o.proj_share_weight, emb_src_trg_weight_sharing=o.embs_share_weight,
                   scale_emb_or_prj=o.scale_emb_or_prj, bos_idx=2, eos_idx=3, unk_idx=1, source_bos=not a.no_source_bos),
              open(os.path.join(a.out, "config.json"), "w"), indent=2)
    shutil.copyfile(a.tokenizer, os.path.join(a.out, "tokenizer.model"))
    print("wrote", a.out)


if __name__ == "__main__":
    main()
