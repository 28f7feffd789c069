#!/usr/bin/env python3
"""An independent Python implementation of Hugging Face's MarianMT (OPUS-MT) model directories: the
tokenizer (MarianTokenizer), the model (MarianMTModel) and greedy generate(), written from Hugging Face's
documented behaviour (transformers' models/marian/{modeling,tokenization,configuration}_marian.py and
generation/{utils,logits_process}.py), used to check AttnLab's C++ loader of such directories.

  make     --from DIR --out DIR [options]    a Hugging Face MarianMT directory with random (seeded) weights:
                                             config.json, source.spm, target.spm, vocab.json, and
                                             model.safetensors or pytorch_model.bin (+ generation_config.json)
  run      --model DIR --sentences FILE --out OUT.json [--max-length N]
                                             tokenize, greedy-translate (num_beams=1), and the attention maps
  selftest                                   checks this script against itself and against torch.nn

Computes in float64 (weights stored as F16/BF16 are upcast). Needs Debian's python3-torch, numpy and
python3-sentencepiece (use /usr/bin/python3); nothing is downloaded. See `--help` of each subcommand.

Output of run (JSON), one entry a line of the sentences file (split on "\n" only):
  {"config_used": {eos_token_id, pad_token_id, decoder_start_token_id, bad_words_ids, forced_eos_token_id,
                   num_beams (configured; greedy uses 1), max_length (effective, counts the start token),
                   max_length_source, tokenizer ids, model dims, positions ("stored"/"sinusoidal"), ...},
   "sentences": [{"source", "source_pieces" (MarianTokenizer.tokenize: no </s>),
                  "source_ids" (pieces through vocab.json, missing -> <unk>, then </s>),
                  "greedy_ids" (after the start token, with the final eos when reached),
                  "stop_reason" ("eos" | "forced_eos" (ForcedEOS at max_length - 1) | "max_length"),
                  "text" (decode(skip_special_tokens=True)), "text_clean_up" (+ the pre-4.45 default
                  clean_up_tokenization), "first_step_log_probs_top5" ([id, log-prob] among ids not banned),
                  "step_log_probs" (log_softmax of the raw logits at each chosen id),
                  "step_log_probs_processed" (log_softmax after the logits processors = renormalize_logits),
                  "step_top2_margin" (best - second-best processed score; null where forced),
                  "attentions": {"encoder": [layer][head][q][k], "decoder": [layer][head][t][t],
                                 "cross": [layer][head][t][src]}  (7 significant digits, teacher-forced pass
                                 over [start] + greedy_ids[:-1])}]}
"""
import argparse
import collections
import json
import math
import os
import re
import shutil
import struct
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn.functional as F

try:
    import sentencepiece as spm
except ImportError:  # pragma: no cover
    sys.exit("marian_reference.py needs python3-sentencepiece (apt-get install python3-sentencepiece) "
             "and Debian's /usr/bin/python3")

# MarianConfig's defaults (configuration_marian.py, MarianConfig.__init__), for keys a config.json leaves out;
# max_length / num_beams / bad_words_ids come from PretrainedConfig's generation defaults.
MARIAN_DEFAULTS = {
    "vocab_size": 58101, "decoder_vocab_size": None, "max_position_embeddings": 1024,
    "encoder_layers": 12, "encoder_ffn_dim": 4096, "encoder_attention_heads": 16,
    "decoder_layers": 12, "decoder_ffn_dim": 4096, "decoder_attention_heads": 16,
    "activation_function": "gelu", "d_model": 1024, "decoder_start_token_id": 58100,
    "scale_embedding": False, "pad_token_id": 58100, "eos_token_id": 0, "forced_eos_token_id": 0,
    "share_encoder_decoder_embeddings": True, "tie_word_embeddings": True,
    "max_length": 20, "num_beams": 1, "bad_words_ids": None, "bos_token_id": None,
}
# GenerationConfig()'s defaults, for keys a generation_config.json leaves out.
GENERATION_DEFAULTS = {
    "max_length": 20, "num_beams": 1, "bad_words_ids": None, "forced_eos_token_id": None,
    "eos_token_id": None, "pad_token_id": None, "decoder_start_token_id": None, "bos_token_id": None,
}
LN_EPS = 1e-5  # nn.LayerNorm(embed_dim) in MarianEncoderLayer / MarianDecoderLayer: PyTorch's default eps
SPIECE_UNDERLINE = "\u2581"


# ----------------------------------------------------------------------------------------------------------
# safetensors, written and read by hand
# ----------------------------------------------------------------------------------------------------------
def _to_bytes(arr, dtype):
    """float array -> (raw little-endian bytes) in dtype F32 / F16 / BF16 (round to nearest even)."""
    t = torch.as_tensor(np.ascontiguousarray(arr, dtype=np.float32))
    if dtype == "F32":
        return t.numpy().astype("<f4").tobytes()
    if dtype == "F16":
        return t.to(torch.float16).view(torch.int16).numpy().astype("<i2").tobytes()
    if dtype == "BF16":
        return t.to(torch.bfloat16).view(torch.int16).numpy().astype("<i2").tobytes()
    raise ValueError(dtype)


def write_safetensors(path, tensors, dtype="F32", sort_names=False):
    """tensors: name -> float array (written in the order given; sort_names: sorted by name, the order in which
    the safetensors library writes tensors of one dtype). 8-byte LE header length, JSON header (dtype, shape,
    data_offsets relative to the data block, __metadata__ {"format": "pt"}), padded with spaces to a multiple
    of 8 as the safetensors library does, then the data."""
    header, blobs, off = {"__metadata__": {"format": "pt"}}, [], 0
    for name in (sorted(tensors) if sort_names else tensors):
        arr = tensors[name]
        b = _to_bytes(arr, dtype)
        header[name] = {"dtype": dtype, "shape": list(np.shape(arr)), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    """name -> float64 torch tensor; also returns name -> stored dtype."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out, dtypes = {}, {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        b, e = t["data_offsets"]
        raw = data[b:e]
        dt = t["dtype"]
        if dt == "F32":
            a = np.frombuffer(raw, dtype="<f4").astype(np.float64)
        elif dt == "F64":
            a = np.frombuffer(raw, dtype="<f8").astype(np.float64)
        elif dt == "F16":
            a = np.frombuffer(raw, dtype="<f2").astype(np.float64)
        elif dt == "BF16":
            a = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        else:
            raise ValueError(f"{path}: tensor {name} has unsupported dtype {dt}")
        if a.size != int(np.prod(t["shape"])):
            raise ValueError(f"{path}: tensor {name}: {a.size} values for shape {t['shape']}")
        out[name] = torch.from_numpy(a.reshape(t["shape"]).copy())
        dtypes[name] = dt
    return out, dtypes


# ----------------------------------------------------------------------------------------------------------
# positions
# ----------------------------------------------------------------------------------------------------------
def marian_sinusoids(n_pos, dim):
    """MarianSinusoidalPositionalEmbedding._init_weight: angle(pos, j) = pos / 10000^(2*(j//2)/dim) computed
    in float64 (numpy), sin of the even-j angles in the first half of the dimensions [0, ceil(dim/2)), cos of
    the odd-j angles in the second half (not interleaved), stored as float32 (torch.FloatTensor). Returned as
    float32 numpy."""
    j = np.arange(dim)
    pos = np.arange(n_pos, dtype=np.float64)[:, None]
    angle = pos / np.power(10000, 2 * (j // 2) / dim)[None, :]
    sentinel = dim // 2 if dim % 2 == 0 else dim // 2 + 1
    out = np.empty((n_pos, dim), dtype=np.float32)
    out[:, :sentinel] = np.sin(angle[:, 0::2]).astype(np.float32)
    out[:, sentinel:] = np.cos(angle[:, 1::2]).astype(np.float32)
    return out


# ----------------------------------------------------------------------------------------------------------
# make
# ----------------------------------------------------------------------------------------------------------
def _make_weights(cfg, rng, untied, flb, eos_bias, eos_id, with_positions):
    """MarianMTModel's state_dict (keys and shapes), random: embeddings (and an untied lm_head, a random
    final_logits_bias) N(0, 0.5); q/k projections N(0, 2/sqrt(d_model)) (0.5 at d_model 16: peaked, not
    uniform attention); v/out/fc1/fc2 N(0, 1/sqrt(fan_in)); biases N(0, 0.2); layer norms 1 + N(0, 0.1) and
    N(0, 0.1). Order as state_dict() gives it: the final_logits_bias buffer, model.*, lm_head.weight.
    Returns name -> float32 numpy (tied names share one array object)."""
    d, V = cfg["d_model"], cfg["vocab_size"]

    def w(*shape, std=0.5):
        return (rng.standard_normal(shape) * std).astype(np.float32)

    sd = collections.OrderedDict()
    bias = w(1, V, std=0.5)  # always drawn, so that the other weights do not depend on --final-logits-bias
    if not flb:
        bias[:] = 0
    if eos_bias:
        bias[0, eos_id] += np.float32(eos_bias)
    sd["final_logits_bias"] = bias
    shared = w(V, d)
    sd["model.shared.weight"] = shared
    pos = marian_sinusoids(cfg["max_position_embeddings"], d)

    def attn(prefix):  # also "<prefix>_layer_norm": self_attn_layer_norm / encoder_attn_layer_norm
        for p in ("k_proj", "v_proj", "q_proj", "out_proj"):
            sd[f"{prefix}.{p}.weight"] = w(d, d, std=(2.0 if p in ("q_proj", "k_proj") else 1.0) / math.sqrt(d))
            sd[f"{prefix}.{p}.bias"] = w(d, std=0.2)
        sd[f"{prefix}_layer_norm.weight"] = 1 + w(d, std=0.1)
        sd[f"{prefix}_layer_norm.bias"] = w(d, std=0.1)

    def ffn(prefix, n_ffn):
        sd[f"{prefix}.fc1.weight"] = w(n_ffn, d, std=1 / math.sqrt(d))
        sd[f"{prefix}.fc1.bias"] = w(n_ffn, std=0.2)
        sd[f"{prefix}.fc2.weight"] = w(d, n_ffn, std=1 / math.sqrt(n_ffn))
        sd[f"{prefix}.fc2.bias"] = w(d, std=0.2)
        sd[f"{prefix}.final_layer_norm.weight"] = 1 + w(d, std=0.1)
        sd[f"{prefix}.final_layer_norm.bias"] = w(d, std=0.1)

    sd["model.encoder.embed_tokens.weight"] = shared
    if with_positions:
        sd["model.encoder.embed_positions.weight"] = pos
    for i in range(cfg["encoder_layers"]):
        attn(f"model.encoder.layers.{i}.self_attn")
        ffn(f"model.encoder.layers.{i}", cfg["encoder_ffn_dim"])
    sd["model.decoder.embed_tokens.weight"] = shared
    if with_positions:
        sd["model.decoder.embed_positions.weight"] = pos.copy()
    for i in range(cfg["decoder_layers"]):
        attn(f"model.decoder.layers.{i}.self_attn")
        attn(f"model.decoder.layers.{i}.encoder_attn")
        ffn(f"model.decoder.layers.{i}", cfg["decoder_ffn_dim"])
    sd["lm_head.weight"] = w(V, d) if untied else shared  # drawn last: the rest is the same as tied
    return sd


def cmd_make(a):
    src = a.src
    cfg = json.load(open(os.path.join(src, "config.json")), object_pairs_hook=collections.OrderedDict)
    vocab = json.load(open(os.path.join(src, "vocab.json")))
    os.makedirs(a.out, exist_ok=True)
    if a.format == "bin" and a.dtype != "F32":
        sys.exit("make: --dtype F16/BF16 is for --format safetensors only")
    if a.format == "bin" and a.tied_once:
        sys.exit("make: --tied-once is for --format safetensors only")
    if a.d_model % a.heads or a.d_model % (a.decoder_heads or a.heads):
        sys.exit("make: --d-model must be a multiple of the number of heads")

    V = cfg["vocab_size"]
    pad = cfg["pad_token_id"]
    if len(vocab) != V:
        print(f"make: note: vocab.json has {len(vocab)} pieces, config vocab_size {V}", file=sys.stderr)
    eos = cfg.get("eos_token_id", 0)
    if a.eos_id is not None:
        n = a.eos_id
        if not 0 <= n < V or n == pad:
            sys.exit(f"make: --eos-id must be in [0, {V}) and not the pad id {pad}")
        old = vocab["</s>"]
        inv = {i: p for p, i in vocab.items()}
        # </s> gets id n, the piece that had n gets </s>'s old id (0 in OPUS-MT vocabularies)
        if n in inv and inv[n] != "</s>":
            vocab[inv[n]] = old
        vocab["</s>"] = n
        eos = n
    # config.json: the real one, small dimensions substituted, options applied
    dec_heads = a.decoder_heads or a.heads
    dec_ffn = a.decoder_ffn or a.ffn
    for k, v in (("d_model", a.d_model), ("encoder_layers", a.encoder_layers),
                 ("decoder_layers", a.decoder_layers), ("num_hidden_layers", a.encoder_layers),
                 ("encoder_attention_heads", a.heads), ("decoder_attention_heads", dec_heads),
                 ("encoder_ffn_dim", a.ffn), ("decoder_ffn_dim", dec_ffn),
                 ("activation_function", a.activation)):
        cfg[k] = v
    if a.eos_id is not None:
        cfg["eos_token_id"] = eos
        cfg["forced_eos_token_id"] = eos  # else MarianConfig's default 0 would force the old id at max_length
    if a.max_length is not None:
        cfg["max_length"] = a.max_length
    if a.untied:
        cfg["tie_word_embeddings"] = False
    cfg["torch_dtype"] = {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}[a.dtype]
    full = dict(MARIAN_DEFAULTS)
    full.update(cfg)

    rng = np.random.default_rng(a.seed)
    sd = _make_weights(full, rng, a.untied, a.final_logits_bias, a.eos_bias, eos, not a.no_positions)

    for f in ("model.safetensors", "pytorch_model.bin", "generation_config.json"):
        if os.path.exists(os.path.join(a.out, f)):
            os.remove(os.path.join(a.out, f))
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    for f in ("source.spm", "target.spm"):
        shutil.copyfile(os.path.join(src, f), os.path.join(a.out, f))
    if a.eos_id is None:
        shutil.copyfile(os.path.join(src, "vocab.json"), os.path.join(a.out, "vocab.json"))
    else:
        with open(os.path.join(a.out, "vocab.json"), "w") as f:
            json.dump(vocab, f)
    if a.generation_config:
        gc = collections.OrderedDict([
            ("bad_words_ids", cfg.get("bad_words_ids", [[pad]])), ("bos_token_id", cfg.get("bos_token_id", 0)),
            ("decoder_start_token_id", cfg["decoder_start_token_id"]), ("eos_token_id", eos),
            ("forced_eos_token_id", eos), ("max_length", 40), ("num_beams", 3), ("pad_token_id", pad),
            ("renormalize_logits", True), ("transformers_version", "4.40.0")])
        with open(os.path.join(a.out, "generation_config.json"), "w") as f:
            json.dump(gc, f, indent=2)
            f.write("\n")

    tied_names = ["model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight"]
    if not a.untied:
        tied_names.append("lm_head.weight")
    if a.format == "safetensors":
        out = collections.OrderedDict()
        for k, v in sd.items():
            if a.tied_once and k in tied_names:
                continue
            out[k] = v
        path = os.path.join(a.out, "model.safetensors")
        write_safetensors(path, out, a.dtype)
        stored = len(out)
    else:
        # torch.save of the state_dict: tied names are one tensor (one storage), as save_pretrained does
        tensors, od = {}, collections.OrderedDict()
        for k, v in sd.items():
            if id(v) not in tensors:
                tensors[id(v)] = torch.from_numpy(v)
            od[k] = tensors[id(v)]
        path = os.path.join(a.out, "pytorch_model.bin")
        torch.save(od, path)
        stored = len(od)
    print(f"made {a.out}: d_model {a.d_model}, layers {a.encoder_layers}+{a.decoder_layers}, heads "
          f"{a.heads}/{dec_heads}, ffn {a.ffn}/{dec_ffn}, {a.activation}, vocab {V}, "
          f"{os.path.basename(path)} {a.dtype} ({stored} tensors, "
          f"{'untied lm_head' if a.untied else 'tied'}{', tied stored once' if a.tied_once else ''}"
          f"{', no positions' if a.no_positions else ''}{', final_logits_bias' if a.final_logits_bias else ''}), "
          f"eos {eos}, pad {pad}, max_length {cfg.get('max_length')}"
          f"{', generation_config.json (num_beams 3, max_length 40)' if a.generation_config else ''}, seed {a.seed}")


# ----------------------------------------------------------------------------------------------------------
# tokenizer (MarianTokenizer, shared vocabulary)
# ----------------------------------------------------------------------------------------------------------
class MarianTok:
    def __init__(self, model_dir):
        self.vocab = json.load(open(os.path.join(model_dir, "vocab.json")))
        self.inv = {i: p for p, i in self.vocab.items()}
        self.src = spm.SentencePieceProcessor(model_file=os.path.join(model_dir, "source.spm"))
        self.tgt = spm.SentencePieceProcessor(model_file=os.path.join(model_dir, "target.spm"))
        if "<unk>" not in self.vocab:
            raise KeyError("<unk> token must be in vocab.json")
        self.unk_id = self.vocab["<unk>"]
        self.eos_id = self.vocab.get("</s>", self.unk_id)
        self.pad_id = self.vocab.get("<pad>", self.unk_id)
        self.special_tokens = ["</s>", "<unk>", "<pad>"]
        self.special_ids = {self.vocab[t] for t in self.special_tokens if t in self.vocab}
        # PreTrainedTokenizer.tokenize splits the text on the special tokens first (longest match first)
        self._split_re = re.compile("(" + "|".join(re.escape(t) for t in sorted(self.special_tokens, key=len,
                                                                                reverse=True)) + ")")

    def _tokenize(self, text):
        """MarianTokenizer._tokenize: a leading ">>xx<<" language code (up to the first "<<") is one token,
        the rest goes through the source SentencePiece model as pieces."""
        code = []
        if text.startswith(">>"):
            end = text.find("<<")
            if end != -1:
                code, text = [text[:end + 2]], text[end + 2:]
        return code + self.src.encode(text, out_type=str)

    def tokenize(self, text):
        pieces = []
        for chunk in self._split_re.split(text):
            if not chunk:
                continue
            if chunk in self.special_tokens:
                pieces.append(chunk)
            else:
                pieces.extend(self._tokenize(chunk))
        return pieces

    def encode(self, text):
        """(pieces, ids): ids are the pieces through vocab.json (a missing piece -> <unk>), then </s>; no bos."""
        pieces = self.tokenize(text)
        return pieces, [self.vocab.get(p, self.unk_id) for p in pieces] + [self.eos_id]

    def decode(self, ids):
        """decode(ids, skip_special_tokens=True): special ids dropped, the rest as pieces (an id missing from
        vocab.json -> "<unk>"), target spm decode_pieces, then "▁" -> " " and strip
        (MarianTokenizer.convert_tokens_to_string). Returns (text, text with the legacy
        clean_up_tokenization applied, the default of transformers < 4.45)."""
        tokens = [self.inv.get(i, "<unk>") for i in ids if i not in self.special_ids]
        # convert_tokens_to_string: special tokens (only "<unk>" for an id missing from vocab.json can be
        # left here) are not decoded by sentencepiece but written out, followed by a space
        out, cur = "", []
        for t in tokens:
            if t in self.special_tokens:
                out += self.tgt.decode_pieces(cur) + t + " "
                cur = []
            else:
                cur.append(t)
        out += self.tgt.decode_pieces(cur)
        text = out.replace(SPIECE_UNDERLINE, " ").strip()
        return text, clean_up_tokenization(text)


def clean_up_tokenization(s):
    """PreTrainedTokenizerBase.clean_up_tokenization (applied when clean_up_tokenization_spaces)."""
    return (s.replace(" .", ".").replace(" ?", "?").replace(" !", "!").replace(" ,", ",").replace(" ' ", "'")
            .replace(" n't", "n't").replace(" 'm", "'m").replace(" 's", "'s").replace(" 've", "'ve")
            .replace(" 're", "'re"))


# ----------------------------------------------------------------------------------------------------------
# model (MarianMTModel), functional, float64
# ----------------------------------------------------------------------------------------------------------
def _act(name):
    """transformers.activations.ACT2FN"""
    if name in ("swish", "silu"):
        return F.silu
    if name == "relu":
        return F.relu
    if name in ("gelu", "gelu_python"):
        return F.gelu  # exact (erf)
    if name == "gelu_new":
        return lambda x: 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))
    if name == "gelu_fast":
        return lambda x: 0.5 * x * (1.0 + torch.tanh(x * 0.7978845608 * (1.0 + 0.044715 * x * x)))
    if name == "quick_gelu":
        return lambda x: x * torch.sigmoid(1.702 * x)
    if name == "tanh":
        return torch.tanh
    if name == "sigmoid":
        return torch.sigmoid
    if name == "linear":
        return lambda x: x
    raise KeyError(f"activation_function {name!r} is not in ACT2FN")


def _ln(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b, LN_EPS)


class EncoderDecoderBlocks:
    """What a functional float64 encoder-decoder of the BART family (MarianMTModel here; M2M100 / mBART in
    hf_multilingual_reference.py, whose Seq2Seq builds on this class) has in common, whatever the layer-norm
    placement: the tied token embedding, the per-layer weight dicts (_layer), projections, the head split,
    attention and generate()'s effective max_length. Uses self.w (name -> tensor), self.notes, self.c (config
    with defaults) and self.g / self.gen_source (generation settings)."""

    # False: the scores q k^T are scaled by head_dim^-0.5 in _attend (as here for MarianMTModel); True: the query
    # arrives already scaled (M2M100Attention / MBartAttention scale the query projection)
    q_scaled = False

    def _shared_embedding(self):
        """model.shared is the encoder's and decoder's embed_tokens (the tied names all point at one Parameter):
        the first of model.shared.weight / model.encoder.embed_tokens.weight / model.decoder.embed_tokens.weight
        that is stored; a stored copy that differs is noted in self.notes and not used. Returns (name, matrix)."""
        w = self.w
        names = ["model.shared.weight", "model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight"]
        present = [n for n in names if n in w]
        if not present:
            raise KeyError("no token embedding (model.shared.weight / model.*.embed_tokens.weight)")
        emb = w[present[0]]
        for n in present[1:]:
            if not torch.equal(w[n], emb):
                self.notes.append(f"{n} differs from {present[0]} although tied; using {present[0]}")
        return present[0], emb

    def _layer(self, p, decoder):
        w = self.w
        parts = ["self_attn"] + (["encoder_attn"] if decoder else [])
        L = {}
        for a in parts:
            for proj in ("q_proj", "k_proj", "v_proj", "out_proj"):
                L[f"{a}.{proj}.w"] = w[f"{p}.{a}.{proj}.weight"]
                L[f"{a}.{proj}.b"] = w[f"{p}.{a}.{proj}.bias"]
            L[f"{a}.ln.w"] = w[f"{p}.{a}_layer_norm.weight"]
            L[f"{a}.ln.b"] = w[f"{p}.{a}_layer_norm.bias"]
        for k in ("fc1", "fc2"):
            L[f"{k}.w"], L[f"{k}.b"] = w[f"{p}.{k}.weight"], w[f"{p}.{k}.bias"]
        L["final.ln.w"], L["final.ln.b"] = w[f"{p}.final_layer_norm.weight"], w[f"{p}.final_layer_norm.bias"]
        return L

    # ---- building blocks ----
    @staticmethod
    def _proj(x, L, name):
        return F.linear(x, L[name + ".w"], L[name + ".b"])

    @staticmethod
    def _heads(x, H):  # [T, d] -> [H, T, hd]
        return x.view(x.shape[0], H, -1).transpose(0, 1)

    def _attend(self, q, k, v, L, a, causal_offset=None):
        """q [H, Tq, hd], k/v [H, Tk, hd]. MarianAttention: scores = (q k^T) * head_dim^-0.5 (+ mask) (with
        q_scaled: q k^T (+ mask), q being scaled already), softmax, weights @ v, heads concatenated, out_proj.
        causal_offset: query i sees keys <= offset + i."""
        s = torch.matmul(q, k.transpose(1, 2))
        if not self.q_scaled:
            s = s * q.shape[-1] ** -0.5
        if causal_offset is not None:
            tq, tk = s.shape[1], s.shape[2]
            allowed = torch.arange(tk)[None, :] <= (causal_offset + torch.arange(tq))[:, None]
            s = s.masked_fill(~allowed, float("-inf"))
        p = torch.softmax(s, dim=-1)
        o = torch.matmul(p, v).transpose(0, 1).reshape(q.shape[1], -1)
        return self._proj(o, L, f"{a}.out_proj"), p

    # ---- greedy generate (num_beams=1) ----
    def max_length(self, cap=None):
        """generation_config.max_length; GenerationMixin._prepare_generated_length: a max_length left at
        GenerationConfig's default 20 means 20 new tokens (+ the decoder start), at most
        max_position_embeddings; then capped by --max-length."""
        m, src = self.g["max_length"], self.gen_source
        if m == GENERATION_DEFAULTS["max_length"]:
            m = min(m + 1, self.c["max_position_embeddings"])
            src += " (default 20 + 1 start token)"
        if cap is not None and cap < m:
            m, src = cap, "--max-length"
        return m, src


class Marian(EncoderDecoderBlocks):
    def __init__(self, model_dir, ignore_stored_positions=False):
        self.dir = model_dir
        raw = json.load(open(os.path.join(model_dir, "config.json")))
        c = dict(MARIAN_DEFAULTS)
        c.update(raw)
        if c["decoder_vocab_size"] is None:
            c["decoder_vocab_size"] = c["vocab_size"]
        self.raw_config, self.c = raw, c
        self.d = c["d_model"]
        self.act = _act(c["activation_function"])
        self.scale = math.sqrt(self.d) if c["scale_embedding"] else 1.0
        st = os.path.join(model_dir, "model.safetensors")
        binf = os.path.join(model_dir, "pytorch_model.bin")
        if os.path.exists(st):  # from_pretrained prefers safetensors
            w, dtypes = read_safetensors(st)
            self.weights_file, self.dtypes = "model.safetensors", sorted(set(dtypes.values()))
        elif os.path.exists(binf):
            sd = torch.load(binf, map_location="cpu")
            w = {k: v.to(torch.float64) for k, v in sd.items()}
            self.weights_file, self.dtypes = "pytorch_model.bin", sorted({str(v.dtype) for v in sd.values()})
        else:
            raise FileNotFoundError(f"{model_dir}: neither model.safetensors nor pytorch_model.bin")
        self.w = w
        self.notes = []
        # token embeddings: MarianModel uses self.shared for encoder and decoder when
        # share_encoder_decoder_embeddings (the default); the tied names all point at one Parameter.
        if c["share_encoder_decoder_embeddings"]:
            self.enc_emb = self.dec_emb = self._shared_embedding()[1]
        else:
            self.enc_emb = w["model.encoder.embed_tokens.weight"]
            self.dec_emb = w["model.decoder.embed_tokens.weight"]
        if c["tie_word_embeddings"]:
            self.lm_head = self.dec_emb
            if "lm_head.weight" in w and not torch.equal(w["lm_head.weight"], self.lm_head):
                self.notes.append("lm_head.weight differs from the embeddings but tie_word_embeddings: using "
                                  "the embeddings")
        else:
            self.lm_head = w["lm_head.weight"]
        V = c["decoder_vocab_size"] if not c["share_encoder_decoder_embeddings"] else c["vocab_size"]
        self.flb = w.get("final_logits_bias", torch.zeros(1, V, dtype=torch.float64))[0]
        # positions: a stored embed_positions tensor is loaded like any parameter; a missing one is
        # initialised by _init_weights -> MarianSinusoidalPositionalEmbedding._init_weight
        sin = torch.from_numpy(marian_sinusoids(c["max_position_embeddings"], self.d).astype(np.float64))
        self.pos_source = {}
        self.pos = {}
        for side in ("encoder", "decoder"):
            k = f"model.{side}.embed_positions.weight"
            if k in w and not ignore_stored_positions:
                self.pos[side] = w[k]
                self.pos_source[side] = "stored"
                diff = (w[k] - sin).abs().max().item() if w[k].shape == sin.shape else float("inf")
                if diff > 1e-6:
                    self.notes.append(f"stored {k} differs from the sinusoids by {diff:.3g} (used as stored)")
            else:
                self.pos[side] = sin
                self.pos_source[side] = "sinusoidal"
        self.enc_layers = [self._layer(f"model.encoder.layers.{i}", False) for i in range(c["encoder_layers"])]
        self.dec_layers = [self._layer(f"model.decoder.layers.{i}", True) for i in range(c["decoder_layers"])]
        self.enc_heads, self.dec_heads = c["encoder_attention_heads"], c["decoder_attention_heads"]
        self._gen_settings()

    def _gen_settings(self):
        """model.generation_config: generation_config.json when present (missing keys: GenerationConfig()'s
        defaults), else GenerationConfig.from_model_config(config.json + MarianConfig defaults)."""
        gpath = os.path.join(self.dir, "generation_config.json")
        if os.path.exists(gpath):
            g = dict(GENERATION_DEFAULTS)
            g.update(json.load(open(gpath)))
            self.gen_source = "generation_config.json"
        else:
            g = {k: self.c.get(k) for k in GENERATION_DEFAULTS}
            self.gen_source = "config.json"
        if g["decoder_start_token_id"] is None:  # _prepare_special_tokens: falls back to bos for enc-dec
            g["decoder_start_token_id"] = g["bos_token_id"]
        self.g = g

    # ---- building blocks (and those of EncoderDecoderBlocks) ----
    def _ffn(self, x, L):
        h = self._proj(x, L, "fc1")
        h = self.act(h)
        return _ln(x + self._proj(h, L, "fc2"), L["final.ln.w"], L["final.ln.b"])

    def _check_len(self, n, side):
        if n > self.pos[side].shape[0]:
            raise ValueError(f"{side} sequence of {n} tokens is longer than max_position_embeddings "
                             f"{self.pos[side].shape[0]}")

    # ---- encoder ----
    def encode(self, ids):
        """ids: list of source ids (with eos). Returns (hidden [S, d], attentions [L][H, S, S])."""
        self._check_len(len(ids), "encoder")
        x = self.enc_emb[torch.tensor(ids)] * self.scale + self.pos["encoder"][: len(ids)]
        attns = []
        for L in self.enc_layers:
            H = self.enc_heads
            q = self._heads(self._proj(x, L, "self_attn.q_proj"), H)
            k = self._heads(self._proj(x, L, "self_attn.k_proj"), H)
            v = self._heads(self._proj(x, L, "self_attn.v_proj"), H)
            o, p = self._attend(q, k, v, L, "self_attn")
            x = _ln(x + o, L["self_attn.ln.w"], L["self_attn.ln.b"])
            x = self._ffn(x, L)
            attns.append(p)
        return x, attns

    # ---- decoder, whole prefix (no cache) ----
    def decode_full(self, dec_ids, enc, logits=True):
        """Teacher-forced decoder over dec_ids from position 0. Returns (logits [T, V] (None when not
        logits), self [L][H, T, T], cross [L][H, T, S])."""
        self._check_len(len(dec_ids), "decoder")
        y = self.dec_emb[torch.tensor(dec_ids)] * self.scale + self.pos["decoder"][: len(dec_ids)]
        sa, ca = [], []
        H = self.dec_heads
        for L in self.dec_layers:
            q = self._heads(self._proj(y, L, "self_attn.q_proj"), H)
            k = self._heads(self._proj(y, L, "self_attn.k_proj"), H)
            v = self._heads(self._proj(y, L, "self_attn.v_proj"), H)
            o, p = self._attend(q, k, v, L, "self_attn", causal_offset=0)
            y = _ln(y + o, L["self_attn.ln.w"], L["self_attn.ln.b"])
            q = self._heads(self._proj(y, L, "encoder_attn.q_proj"), H)
            k = self._heads(self._proj(enc, L, "encoder_attn.k_proj"), H)
            v = self._heads(self._proj(enc, L, "encoder_attn.v_proj"), H)
            o, pc = self._attend(q, k, v, L, "encoder_attn")
            y = _ln(y + o, L["encoder_attn.ln.w"], L["encoder_attn.ln.b"])
            y = self._ffn(y, L)
            sa.append(p)
            ca.append(pc)
        if not logits:
            return None, sa, ca
        if y.shape[0] == 1:
            return torch.addmv(self.flb, self.lm_head, y[0])[None], sa, ca
        return F.linear(y, self.lm_head) + self.flb, sa, ca

    # ---- decoder, one step with a key/value cache ----
    def new_cache(self, enc):
        H = self.dec_heads
        cache = {"past": 0, "self_k": [], "self_v": [], "cross_k": [], "cross_v": []}
        for L in self.dec_layers:
            cache["self_k"].append(None)
            cache["self_v"].append(None)
            cache["cross_k"].append(self._heads(self._proj(enc, L, "encoder_attn.k_proj"), H))
            cache["cross_v"].append(self._heads(self._proj(enc, L, "encoder_attn.v_proj"), H))
        return cache

    def decode_step(self, token, cache):
        """One new decoder token at position cache["past"] (positions continue from the past length).
        Returns (logits [V], self rows [L][H, past+1], cross rows [L][H, S])."""
        t = cache["past"]
        self._check_len(t + 1, "decoder")
        y = self.dec_emb[token][None, :] * self.scale + self.pos["decoder"][t: t + 1]
        H = self.dec_heads
        sa, ca = [], []
        for i, L in enumerate(self.dec_layers):
            q = self._heads(self._proj(y, L, "self_attn.q_proj"), H)
            k = self._heads(self._proj(y, L, "self_attn.k_proj"), H)
            v = self._heads(self._proj(y, L, "self_attn.v_proj"), H)
            if cache["self_k"][i] is not None:
                k = torch.cat([cache["self_k"][i], k], dim=1)
                v = torch.cat([cache["self_v"][i], v], dim=1)
            cache["self_k"][i], cache["self_v"][i] = k, v
            o, p = self._attend(q, k, v, L, "self_attn")
            y = _ln(y + o, L["self_attn.ln.w"], L["self_attn.ln.b"])
            q = self._heads(self._proj(y, L, "encoder_attn.q_proj"), H)
            o, pc = self._attend(q, cache["cross_k"][i], cache["cross_v"][i], L, "encoder_attn")
            y = _ln(y + o, L["encoder_attn.ln.w"], L["encoder_attn.ln.b"])
            y = self._ffn(y, L)
            sa.append(p[:, 0])
            ca.append(pc[:, 0])
        cache["past"] = t + 1
        return torch.addmv(self.flb, self.lm_head, y[0]), sa, ca

    # ---- greedy generate (num_beams=1; max_length() from EncoderDecoderBlocks) ----
    def greedy(self, src_ids, max_length, cached=True, enc=None):
        """GenerationMixin greedy search: input_ids = [decoder_start]; each step the next-token logits go
        through the logits processors (NoBadWordsLogitsProcessor: bad_words_ids -> -inf, eos ids never
        banned; ForcedEOSTokenLogitsProcessor: at cur_len == max_length - 1 everything -inf but
        forced_eos_token_id); argmax; stop when eos is produced or len(input_ids) >= max_length."""
        g = self.g
        if max_length < 2:
            raise ValueError("max_length must be >= 2 (it counts the decoder start token)")
        if enc is None:
            enc, _ = self.encode(src_ids)
        eos = g["eos_token_id"]
        eos_list = [] if eos is None else (list(eos) if isinstance(eos, (list, tuple)) else [eos])
        bad = [list(b) for b in (g["bad_words_ids"] or []) if not (len(b) == 1 and b[0] in eos_list)]
        forced = g["forced_eos_token_id"]
        forced_list = [] if forced is None else (list(forced) if isinstance(forced, (list, tuple)) else [forced])
        ids = [g["decoder_start_token_id"]]
        cache = self.new_cache(enc) if cached else None
        out_ids, raw_lp, proc_lp, margins, first_top5, steps = [], [], [], [], None, []
        stop = "max_length"
        while True:
            cur_len = len(ids)
            if cached:
                logits, sa, ca = self.decode_step(ids[-1], cache)
            else:
                full, sa_f, ca_f = self.decode_full(ids, enc)
                logits = full[-1]  # (the whole prefix recomputed, the last row used)
                sa = [p[:, -1] for p in sa_f]
                ca = [p[:, -1] for p in ca_f]
            lp = torch.log_softmax(logits, dim=-1)
            scores = logits.clone()
            banned = []
            for b in bad:
                if len(b) == 1 or (len(ids) >= len(b) - 1 and ids[len(ids) - (len(b) - 1):] == b[:-1]):
                    banned.append(b[-1])
            if banned:
                scores[torch.tensor(banned)] = float("-inf")
            if first_top5 is None:
                allowed = lp.clone()
                if banned:
                    allowed[torch.tensor(banned)] = float("-inf")
                v, i = torch.topk(allowed, 5)
                first_top5 = [[int(a), float(b)] for a, b in zip(i, v)]
            forced_now = bool(forced_list) and cur_len == max_length - 1
            if forced_now:
                scores = torch.full_like(scores, float("-inf"))
                scores[torch.tensor(forced_list)] = 0.0
            nxt = int(torch.argmax(scores))
            ids.append(nxt)
            out_ids.append(nxt)
            raw_lp.append(float(lp[nxt]))
            proc_lp.append(float(torch.log_softmax(scores, dim=-1)[nxt]))
            top2 = torch.topk(scores, 2).values
            margins.append(float(top2[0] - top2[1]) if torch.isfinite(top2[1]) else None)
            steps.append((sa, ca))
            if nxt in eos_list:
                stop = "forced_eos" if forced_now else "eos"
                break
            if len(ids) >= max_length:
                stop = "forced_eos(not eos)" if forced_now else "max_length"
                break
        return {"greedy_ids": out_ids, "stop_reason": stop, "step_log_probs": raw_lp,
                "step_log_probs_processed": proc_lp, "step_top2_margin": margins,
                "first_step_log_probs_top5": first_top5, "_steps": steps}


# ----------------------------------------------------------------------------------------------------------
# run
# ----------------------------------------------------------------------------------------------------------
# A selftest's tally, shared with hf_multilingual_reference.py and ct2_reference.py.
class _Checker:
    def __init__(self):
        self.passed, self.failed = 0, []

    def __call__(self, name, ok, detail=""):
        if ok:
            self.passed += 1
        else:
            self.failed.append(name)
        print(f"  {'ok  ' if ok else 'FAIL'}  {name}" + (f"  ({detail})" if detail else ""))


# Whether `fn` refused (SystemExit): a selftest's check of a refusal.
def _refused(fn):
    try:
        fn()
    except SystemExit:
        return True
    return False


def round7(t):
    """nested lists of a tensor's values, each rounded to 7 significant digits (vectorised: m / 10^k with
    m = round(x * 10^k), the double nearest to the 7-digit decimal; '%.7g' where 10^k is not exact)"""
    a = np.asarray(t.detach().cpu().numpy(), dtype=np.float64)
    out = a.copy()
    nz = np.isfinite(a) & (a != 0)
    e = np.zeros(a.shape, dtype=np.int64)
    e[nz] = np.floor(np.log10(np.abs(a[nz]))).astype(np.int64)
    k = 6 - e
    fast = nz & (k >= -22) & (k <= 22)
    p = np.power(10.0, np.abs(k[fast]))
    kf = k[fast]
    out[fast] = np.where(kf >= 0, np.round(a[fast] * p) / p, np.round(a[fast] / p) * p)
    for idx in zip(*np.nonzero(nz & ~fast)):
        out[idx] = float("%.7g" % a[idx])
    return out.tolist()


def translate(model, tok, sentences, max_length, attentions=True, check_recompute=False):
    results = []
    for s in sentences:
        pieces, ids = tok.encode(s)
        enc, enc_attn = model.encode(ids)
        r = model.greedy(ids, max_length, cached=True, enc=enc)
        item = collections.OrderedDict()
        item["source"] = s
        item["source_pieces"] = pieces
        item["source_ids"] = ids
        item["greedy_ids"] = r["greedy_ids"]
        item["stop_reason"] = r["stop_reason"]
        item["text"], item["text_clean_up"] = tok.decode(r["greedy_ids"])
        item["first_step_log_probs_top5"] = r["first_step_log_probs_top5"]
        item["step_log_probs"] = r["step_log_probs"]
        item["step_log_probs_processed"] = r["step_log_probs_processed"]
        item["step_top2_margin"] = r["step_top2_margin"]
        dec_in = [model.g["decoder_start_token_id"]] + r["greedy_ids"][:-1]
        _, sa, ca = model.decode_full(dec_in, enc, logits=False)
        if attentions:
            item["attentions"] = {"encoder": [round7(p) for p in enc_attn], "decoder": [round7(p) for p in sa],
                                  "cross": [round7(p) for p in ca]}
        if check_recompute:
            f = model.greedy(ids, max_length, cached=False, enc=enc)
            item["recompute_check"] = {
                "same_ids": f["greedy_ids"] == r["greedy_ids"],
                "max_abs_log_prob_diff": max(abs(a - b) for a, b in zip(f["step_log_probs"], r["step_log_probs"]))
                if f["greedy_ids"] == r["greedy_ids"] else None}
        item["_internal"] = {"enc_attn": enc_attn, "self": sa, "cross": ca, "steps": r["_steps"], "enc": enc}
        results.append(item)
    return results


def config_used(model, tok, max_length, max_length_source):
    g, c = model.g, model.c
    return collections.OrderedDict([
        ("eos_token_id", g["eos_token_id"]), ("pad_token_id", g["pad_token_id"]),
        ("decoder_start_token_id", g["decoder_start_token_id"]), ("bad_words_ids", g["bad_words_ids"]),
        ("forced_eos_token_id", g["forced_eos_token_id"]), ("num_beams", g["num_beams"]),
        ("num_beams_used", 1), ("max_length", max_length), ("max_length_source", max_length_source),
        ("generation_settings_from", model.gen_source),
        ("tokenizer", {"eos_id": tok.eos_id, "unk_id": tok.unk_id, "pad_id": tok.pad_id,
                       "special_ids_skipped_in_text": sorted(tok.special_ids)}),
        ("model", {"d_model": c["d_model"], "encoder_layers": c["encoder_layers"],
                   "decoder_layers": c["decoder_layers"], "encoder_attention_heads": c["encoder_attention_heads"],
                   "decoder_attention_heads": c["decoder_attention_heads"],
                   "activation_function": c["activation_function"], "scale_embedding": c["scale_embedding"],
                   "embed_scale": model.scale, "layer_norm_eps": LN_EPS,
                   "tie_word_embeddings": c["tie_word_embeddings"],
                   "share_encoder_decoder_embeddings": c["share_encoder_decoder_embeddings"],
                   "vocab_size": c["vocab_size"], "max_position_embeddings": c["max_position_embeddings"]}),
        ("positions", model.pos_source), ("weights_file", model.weights_file), ("stored_dtypes", model.dtypes),
        ("notes", model.notes),
    ])


def _public(item):
    return collections.OrderedDict((k, v) for k, v in item.items() if not k.startswith("_"))


def read_sentences(path):
    """The lines of a UTF-8 file, split on "\\n" only; a final empty line dropped, a trailing "\\r" removed."""
    with open(path, encoding="utf-8", newline="") as f:
        sentences = f.read().split("\n")  # "\n" only (str.splitlines would also split on U+2028 etc.)
    if sentences and sentences[-1] == "":
        sentences.pop()
    return [s[:-1] if s.endswith("\r") else s for s in sentences]


def cmd_run(a):
    torch.set_grad_enabled(False)
    t0 = time.time()
    model = Marian(a.model, ignore_stored_positions=a.ignore_stored_positions)
    tok = MarianTok(a.model)
    sentences = read_sentences(a.sentences)
    m, msrc = model.max_length(a.max_length)
    res = translate(model, tok, sentences, m, attentions=not a.no_attentions, check_recompute=a.check_recompute)
    out = {"config_used": config_used(model, tok, m, msrc), "sentences": [_public(r) for r in res]}
    with open(a.out, "w", encoding="utf-8") as f:
        f.write(json.dumps(out, ensure_ascii=False))  # json.dumps: the C encoder (json.dump is pure Python)
    print(f"run: {len(res)} sentences -> {a.out} (max_length {m} from {msrc}; "
          f"{sum(len(r['greedy_ids']) for r in res)} tokens generated; {time.time() - t0:.2f} s)")


# ----------------------------------------------------------------------------------------------------------
# selftest
# ----------------------------------------------------------------------------------------------------------
def _make_args(src, out, **kw):
    a = argparse.Namespace(src=src, out=out, d_model=16, encoder_layers=2, decoder_layers=2, heads=4, ffn=32,
                           decoder_heads=None, decoder_ffn=None, activation="swish", format="safetensors",
                           dtype="F32", untied=False, tied_once=False, no_positions=False, final_logits_bias=False,
                           eos_bias=0.0, eos_id=None, seed=0, generation_config=False, max_length=None)
    for k, v in kw.items():
        setattr(a, k, v)
    return a


def _torch_nn_check(model, src_ids, dec_ids):
    """The same forward pass through torch.nn.TransformerEncoderLayer / TransformerDecoderLayer (post-LN,
    eps 1e-5, dropout 0), loaded with the Marian weights: an implementation this script does not share."""
    nn = torch.nn
    c = model.c
    d = model.d
    act = model.act

    def mha(m, L, a):
        m.in_proj_weight.copy_(torch.cat([L[f"{a}.q_proj.w"], L[f"{a}.k_proj.w"], L[f"{a}.v_proj.w"]]))
        m.in_proj_bias.copy_(torch.cat([L[f"{a}.q_proj.b"], L[f"{a}.k_proj.b"], L[f"{a}.v_proj.b"]]))
        m.out_proj.weight.copy_(L[f"{a}.out_proj.w"])
        m.out_proj.bias.copy_(L[f"{a}.out_proj.b"])

    def common(layer, L):
        layer.linear1.weight.copy_(L["fc1.w"]); layer.linear1.bias.copy_(L["fc1.b"])
        layer.linear2.weight.copy_(L["fc2.w"]); layer.linear2.bias.copy_(L["fc2.b"])

    x = model.enc_emb[torch.tensor(src_ids)] * model.scale + model.pos["encoder"][: len(src_ids)]
    x = x[None]
    for L in model.enc_layers:
        layer = nn.TransformerEncoderLayer(d, c["encoder_attention_heads"], c["encoder_ffn_dim"], dropout=0.0,
                                           activation=act, layer_norm_eps=LN_EPS, batch_first=True,
                                           norm_first=False).double().eval()
        mha(layer.self_attn, L, "self_attn")
        common(layer, L)
        layer.norm1.weight.copy_(L["self_attn.ln.w"]); layer.norm1.bias.copy_(L["self_attn.ln.b"])
        layer.norm2.weight.copy_(L["final.ln.w"]); layer.norm2.bias.copy_(L["final.ln.b"])
        x = layer(x)
    enc = x
    T = len(dec_ids)
    y = model.dec_emb[torch.tensor(dec_ids)] * model.scale + model.pos["decoder"][:T]
    y = y[None]
    causal = torch.triu(torch.full((T, T), float("-inf"), dtype=torch.float64), diagonal=1)
    for L in model.dec_layers:
        layer = nn.TransformerDecoderLayer(d, c["decoder_attention_heads"], c["decoder_ffn_dim"], dropout=0.0,
                                           activation=act, layer_norm_eps=LN_EPS, batch_first=True,
                                           norm_first=False).double().eval()
        mha(layer.self_attn, L, "self_attn")
        mha(layer.multihead_attn, L, "encoder_attn")
        common(layer, L)
        layer.norm1.weight.copy_(L["self_attn.ln.w"]); layer.norm1.bias.copy_(L["self_attn.ln.b"])
        layer.norm2.weight.copy_(L["encoder_attn.ln.w"]); layer.norm2.bias.copy_(L["encoder_attn.ln.b"])
        layer.norm3.weight.copy_(L["final.ln.w"]); layer.norm3.bias.copy_(L["final.ln.b"])
        y = layer(y, enc, tgt_mask=causal)
    logits = F.linear(y[0], model.lm_head) + model.flb
    return enc[0], logits


def cmd_selftest(a):
    torch.set_grad_enabled(False)
    src = a.src
    passed, failed = [0], []

    def check(name, ok, detail=""):
        if ok:
            passed[0] += 1
            print(f"  ok    {name}" + (f"  ({detail})" if detail else ""))
        else:
            failed.append(name)
            print(f"  FAIL  {name}" + (f"  ({detail})" if detail else ""))

    t0 = time.time()
    tmp = tempfile.mkdtemp(prefix="marian_selftest_")
    try:
        sentences = ["Hello world.", "The cat sat on the mat, said \u65e5\u672c \u2603 to me.",
                     ">>fr<< A test</s>with a special token inside"]
        sfile = os.path.join(tmp, "s.txt")
        with open(sfile, "w", encoding="utf-8") as f:
            f.write("\n".join(sentences) + "\n")

        # (a) tied model, run on 3 sentences; with this seed and eos bias the first sentence stops on eos at
        # once, the third after 3 tokens and the second runs to max_length (eos forced)
        m1 = os.path.join(tmp, "tied")
        cmd_make(_make_args(src, m1, eos_bias=6.5, final_logits_bias=True, seed=3))
        model, tok = Marian(m1), MarianTok(m1)
        check("tied: encoder, decoder and lm_head use one matrix",
              model.enc_emb is model.dec_emb and model.lm_head is model.dec_emb and not model.notes,
              "; ".join(model.notes))
        ml, msrc = model.max_length(14)
        check("max_length capped by --max-length", (ml, msrc) == (14, "--max-length"), f"{ml} from {msrc}")
        res = translate(model, tok, sentences, ml)
        stops = [r["stop_reason"] for r in res]
        worst, same = 0.0, True
        for s, r in zip(sentences, res):
            f = model.greedy(r["source_ids"], ml, cached=False)
            same &= f["greedy_ids"] == r["greedy_ids"]
            if f["greedy_ids"] == r["greedy_ids"]:
                worst = max([worst] + [abs(x - y) for x, y in zip(f["step_log_probs"], r["step_log_probs"])]
                            + [abs(x - y) for x, y in zip(f["step_log_probs_processed"],
                                                          r["step_log_probs_processed"])])
            # the cached step's attention rows against the full recompute's rows
            for st_c, st_f in zip(r["_internal"]["steps"], f["_steps"]):
                for pc, pf in zip(st_c[0] + st_c[1], st_f[0] + st_f[1]):
                    worst = max(worst, (pc - pf).abs().max().item())
        check("cached greedy == full-recompute greedy (ids)", same, f"stop reasons {stops}")
        check("cached vs recompute: max |d log-prob| and |d attention| < 1e-9", worst < 1e-9, f"{worst:.2e}")
        check("greedy stopped at eos (also after several tokens) and at max_length (forced eos)",
              "eos" in stops and "forced_eos" in stops and
              any(r["stop_reason"] == "eos" and len(r["greedy_ids"]) > 1 for r in res),
              f"{[(len(r['greedy_ids']), r['stop_reason']) for r in res]}")
        for r in res:
            if r["stop_reason"] in ("eos", "forced_eos"):
                check("  ends with eos, eos not elsewhere", r["greedy_ids"][-1] == model.g["eos_token_id"]
                      and model.g["eos_token_id"] not in r["greedy_ids"][:-1])
        check("no bad word (pad) generated", all(model.c["pad_token_id"] not in r["greedy_ids"] for r in res))
        check("length <= max_length - 1", all(len(r["greedy_ids"]) <= ml - 1 for r in res))
        # forced eos at max_length: without the eos bias the model never says eos by itself
        m0 = os.path.join(tmp, "plain")
        cmd_make(_make_args(src, m0, seed=3))
        model0 = Marian(m0)
        r0 = model0.greedy(tok.encode("Hello world.")[1], 9)
        check("max_length 9: 8 tokens, the last one forced eos", len(r0["greedy_ids"]) == 8
              and r0["greedy_ids"][-1] == 0 and r0["stop_reason"] == "forced_eos"
              and r0["step_log_probs_processed"][-1] == 0.0, f"{r0['greedy_ids']} {r0['stop_reason']}")

        # (b) attention maps: rows sum to 1, shapes, causal
        ok_sum, ok_shape, ok_causal, ok_rows = True, True, True, True
        for r in res:
            S, T = len(r["source_ids"]), len(r["greedy_ids"])
            it = r["_internal"]
            for p in it["enc_attn"]:
                ok_shape &= tuple(p.shape) == (model.enc_heads, S, S)
                ok_sum &= (p.sum(-1) - 1).abs().max().item() < 1e-12
            for p in it["self"]:
                ok_shape &= tuple(p.shape) == (model.dec_heads, T, T)
                ok_sum &= (p.sum(-1) - 1).abs().max().item() < 1e-12
                ok_causal &= bool((torch.triu(p, diagonal=1) == 0).all())
            for p in it["cross"]:
                ok_shape &= tuple(p.shape) == (model.dec_heads, T, S)
                ok_sum &= (p.sum(-1) - 1).abs().max().item() < 1e-12
            js = r["attentions"]
            ok_shape &= (len(js["encoder"]) == model.c["encoder_layers"] and len(js["decoder"]) ==
                         model.c["decoder_layers"] and len(js["cross"]) == model.c["decoder_layers"])
            ok_shape &= all(len(h) == T and all(len(row) == S for row in h) for l in js["cross"] for h in l)
            ok_shape &= all(len(h) == T and all(len(row) == T for row in h) for l in js["decoder"] for h in l)
            ok_sum &= all(abs(sum(row) - 1) < 1e-5 for l in js["cross"] + js["decoder"] + js["encoder"]
                          for h in l for row in h)
            # the full pass's row t is what step t saw
            for t, (sa, ca) in enumerate(it["steps"]):
                for li in range(len(sa)):
                    ok_rows &= (sa[li] - it["self"][li][:, t, : t + 1]).abs().max().item() < 1e-12
                    ok_rows &= (ca[li] - it["cross"][li][:, t]).abs().max().item() < 1e-12
        check("attention rows sum to 1 (float64 and the 7-digit JSON)", ok_sum)
        check("shapes: encoder [L][H][S][S], decoder [L][H][T][T], cross [L][H][T][S]", ok_shape)
        check("decoder self-attention is causal", ok_causal)
        check("full-pass attention rows == the rows each generation step saw", ok_rows)

        # (c) the layers against torch.nn's Transformer layers
        r = res[1]
        dec_in = [model.g["decoder_start_token_id"]] + r["greedy_ids"][:-1]
        enc_ref, logits_ref = _torch_nn_check(model, r["source_ids"], dec_in)
        logits, _, _ = model.decode_full(dec_in, r["_internal"]["enc"])
        de = (enc_ref - r["_internal"]["enc"]).abs().max().item()
        dl = (logits_ref - logits).abs().max().item()
        check("encoder output == torch.nn.TransformerEncoderLayer stack", de < 1e-10, f"{de:.2e}")
        check("logits == torch.nn.TransformerDecoderLayer stack", dl < 1e-10, f"{dl:.2e}")
        for act in ("relu", "gelu"):
            mg = os.path.join(tmp, act)
            cmd_make(_make_args(src, mg, activation=act, decoder_layers=3, decoder_heads=2, decoder_ffn=24))
            mm = Marian(mg)
            ids = tok.encode("Hello world.")[1]
            e2, _ = mm.encode(ids)
            e_ref, l_ref = _torch_nn_check(mm, ids, [mm.g["decoder_start_token_id"], 5, 6])
            l2, _, _ = mm.decode_full([mm.g["decoder_start_token_id"], 5, 6], e2)
            dd = max((e_ref - e2).abs().max().item(), (l_ref - l2).abs().max().item())
            check(f"{act}, 2+3 layers, decoder heads/ffn differ: == torch.nn", dd < 1e-10, f"{dd:.2e}")

        # sinusoids: first half sin, second half cos, positions from 0
        tab = marian_sinusoids(512, 16).astype(np.float64)
        pos, i = 7, 3
        ok = (abs(tab[pos, i] - math.sin(pos / 10000 ** (2 * i / 16))) < 1e-6 and
              abs(tab[pos, 8 + i] - math.cos(pos / 10000 ** (2 * i / 16))) < 1e-6 and
              tab[0, :8].tolist() == [0.0] * 8 and tab[0, 8:].tolist() == [1.0] * 8)
        check("sinusoids: sin(pos/10000^(2i/d)) in [0, d/2), cos in [d/2, d)", ok)

        # (d) formats: the same seed as .bin, safetensors, tied-once and no-positions gives the same numbers
        base = None
        for name, kw in (("safetensors", {}), ("bin", {"format": "bin"}), ("tied-once", {"tied_once": True}),
                         ("no-positions", {"no_positions": True})):
            d = os.path.join(tmp, "fmt_" + name)
            cmd_make(_make_args(src, d, seed=11, final_logits_bias=True, eos_bias=8.0, **kw))
            mm = Marian(d)
            out = [mm.greedy(tok.encode(s)[1], 10) for s in sentences]
            sig = [(o["greedy_ids"], o["step_log_probs"]) for o in out]
            if base is None:
                base = sig
            else:
                check(f"format {name} gives exactly the safetensors F32 result", sig == base)
            if name == "tied-once":
                with open(os.path.join(d, "model.safetensors"), "rb") as f:
                    n = struct.unpack("<Q", f.read(8))[0]
                    keys = set(json.loads(f.read(n))) - {"__metadata__"}
                check("tied-once stores model.shared.weight only", "model.shared.weight" in keys and not
                      keys & {"lm_head.weight", "model.encoder.embed_tokens.weight",
                              "model.decoder.embed_tokens.weight"})
            if name == "no-positions":
                check("no stored positions -> sinusoids", mm.pos_source == {"encoder": "sinusoidal",
                                                                            "decoder": "sinusoidal"})
        for dt, tol in (("F16", 2 ** -11), ("BF16", 2 ** -8)):
            d = os.path.join(tmp, "dt_" + dt)
            cmd_make(_make_args(src, d, seed=11, final_logits_bias=True, eos_bias=8.0, dtype=dt))
            ref, _ = read_safetensors(os.path.join(tmp, "fmt_safetensors", "model.safetensors"))
            got, dts = read_safetensors(os.path.join(d, "model.safetensors"))
            rel = max(((got[k] - ref[k]).abs() / ref[k].abs().clamp_min(1e-3)).max().item() for k in ref)
            check(f"{dt} safetensors round trip within {dt} rounding", set(dts.values()) == {dt} and rel <= tol,
                  f"max rel {rel:.2e}")
            mm = Marian(d)
            check(f"{dt} model runs", len(mm.greedy(tok.encode("Hello world.")[1], 6)["greedy_ids"]) >= 1)

        # (e) untied lm_head, eos id moved, generation_config.json
        d = os.path.join(tmp, "eos")
        cmd_make(_make_args(src, d, untied=True, eos_id=5, generation_config=True))
        mm, tk = Marian(d), MarianTok(d)
        cfg = json.load(open(os.path.join(d, "config.json")))
        check("untied: lm_head is its own matrix", mm.lm_head is not mm.dec_emb and
              not torch.equal(mm.lm_head, mm.dec_emb) and cfg["tie_word_embeddings"] is False)
        p, ids = tk.encode("Hello world.")
        check("eos id 5: vocab.json </s> = 5, old piece 5 -> 0, appended to the source",
              tk.vocab["</s>"] == 5 and tk.vocab["\u2581ny"] == 0 and ids[-1] == 5 and cfg["eos_token_id"] == 5,
              f"{p} {ids}")
        ml, msrc = mm.max_length()
        check("generation_config.json overrides config.json (max_length 40, num_beams 3)",
              (ml, msrc, mm.g["num_beams"]) == (40, "generation_config.json", 3), f"{ml} {msrc}")
        check("pad stays the last id = decoder start = bad word",
              mm.g["pad_token_id"] == mm.g["decoder_start_token_id"] == 54687 and mm.g["bad_words_ids"] == [[54687]])
        r = mm.greedy(ids, 6)
        check("forced eos uses the moved eos id", r["greedy_ids"][-1] == 5, f"{r['greedy_ids']}")

        # tokenizer details
        p, ids = tok.encode(sentences[2])
        check("language code kept as one token (unknown -> <unk>), </s> inside the text is the eos token",
              p[0] == ">>fr<<" and ids[0] == tok.unk_id and "</s>" in p and ids[p.index("</s>")] == tok.eos_id,
              f"{p}")
        p, ids = tok.encode(sentences[1])
        check("characters outside vocab.json -> <unk>", tok.unk_id in ids and ids[-1] == tok.eos_id, f"{p}")
        text, _ = tok.decode([tok.vocab["\u2581the"], tok.vocab["\u2581cat"], tok.vocab["."], tok.eos_id, 54687])
        check("decode drops special ids, joins pieces", text == "the cat.", repr(text))

        # the command line end to end (the subprocess-free path of run)
        outj = os.path.join(tmp, "r.json")
        cmd_run(argparse.Namespace(model=m1, sentences=sfile, out=outj, max_length=14, no_attentions=False,
                                   ignore_stored_positions=False, check_recompute=True))
        js = json.load(open(outj, encoding="utf-8"))
        check("run writes config_used and one entry per sentence", len(js["sentences"]) == 3 and
              js["config_used"]["max_length"] == 14 and all(s["recompute_check"]["same_ids"] for s in js["sentences"]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"selftest ({time.time() - t0:.1f} s): {passed[0]} passed, {len(failed)} failed")
    if failed:
        print("failed: " + "; ".join(failed))
        sys.exit(1)


# ----------------------------------------------------------------------------------------------------------
def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make", help="write a MarianMT directory with random weights")
    m.add_argument("--from", dest="src", required=True, help="a real OPUS-MT directory (config.json, "
                   "source.spm, target.spm, vocab.json), e.g. ../shared/data/opus-mt-en-mg")
    m.add_argument("--out", required=True)
    m.add_argument("--d-model", type=int, default=16)
    m.add_argument("--encoder-layers", type=int, default=2)
    m.add_argument("--decoder-layers", type=int, default=2)
    m.add_argument("--heads", type=int, default=4, help="encoder (and decoder) attention heads")
    m.add_argument("--decoder-heads", type=int, default=None, help="decoder attention heads (default --heads)")
    m.add_argument("--ffn", type=int, default=32, help="encoder (and decoder) ffn dim")
    m.add_argument("--decoder-ffn", type=int, default=None, help="decoder ffn dim (default --ffn)")
    m.add_argument("--activation", default="swish", help="relu | swish | gelu (any ACT2FN name)")
    m.add_argument("--format", choices=["safetensors", "bin"], default="safetensors")
    m.add_argument("--dtype", choices=["F32", "F16", "BF16"], default="F32", help="safetensors only")
    m.add_argument("--untied", action="store_true", help="lm_head has its own weights; tie_word_embeddings false")
    m.add_argument("--tied-once", action="store_true",
                   help="safetensors: store the tied matrix only as model.shared.weight")
    m.add_argument("--no-positions", action="store_true", help="leave out the embed_positions tensors")
    m.add_argument("--final-logits-bias", action="store_true", help="random nonzero final_logits_bias")
    m.add_argument("--eos-bias", type=float, default=0.0,
                   help="add this to final_logits_bias[eos] (so that greedy search stops on eos by itself)")
    m.add_argument("--eos-id", type=int, default=None,
                   help="</s> gets this id in vocab.json (its piece gets 0); config eos/forced_eos updated")
    m.add_argument("--max-length", type=int, default=None, help="config.json max_length (default: as --from)")
    m.add_argument("--seed", type=int, default=0)
    g = m.add_mutually_exclusive_group()
    g.add_argument("--generation-config", dest="generation_config", action="store_true",
                   help="write generation_config.json (num_beams 3, max_length 40)")
    g.add_argument("--no-generation-config", dest="generation_config", action="store_false", help="(default)")
    m.set_defaults(generation_config=False)

    r = sub.add_parser("run", help="tokenize, greedy-translate and write the attention maps as JSON")
    r.add_argument("--model", required=True)
    r.add_argument("--sentences", required=True, help="UTF-8 text, one source sentence a line")
    r.add_argument("--out", required=True)
    r.add_argument("--max-length", type=int, default=None,
                   help="cap on generation max_length (which counts the decoder start token)")
    r.add_argument("--no-attentions", action="store_true", help="leave out the attention maps")
    r.add_argument("--ignore-stored-positions", action="store_true",
                   help="use the computed sinusoids even where embed_positions tensors are stored")
    r.add_argument("--check-recompute", action="store_true",
                   help="also greedy-decode without the cache and report the difference per sentence")

    s = sub.add_parser("selftest", help="check the script against itself and torch.nn")
    s.add_argument("--from", dest="src", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                             "..", "..", "shared", "data", "opus-mt-en-mg"))
    a = ap.parse_args()
    torch.set_num_threads(1)
    {"make": cmd_make, "run": cmd_run, "selftest": cmd_selftest}[a.cmd](a)


if __name__ == "__main__":
    main()
