"""CTranslate2's converters of Marian (and M2M100 / NLLB) models, followed line by line, for AttnLab's tests (no
CTranslate2, no transformers: Debian's python3 + numpy + torch + yaml). Used through scripts/ct2_reference.py:

  ct2_reference.py convert-transformers --from HF_MARIAN_DIR --out CT2_DIR [--quantization Q]
      what `ct2-transformers-converter --model HF_MARIAN_DIR` writes (python/ctranslate2/converters/
      transformers.py: TransformersConverter._load, MarianMTLoader(BartLoader), ModelLoader.__call__;
      specs/model_spec.py save/_serialize/_alias_variables/_quantize): a post-norm TransformerSpec revision 7,
      scale_embeddings = the module's embed_scale (a float), the stored position tables, the decoder's
      start_from_zero_embedding, the <pad> row removed from the embeddings, the projection and its bias
      (_remove_pad_weights), the projection bias only where final_logits_bias is not all zero; config.json
      with eos </s>, unk <unk>, decoder_start_token </s> (MarianMTLoader.set_config) and nothing appended to
      the source (the caller tokenizes with MarianTokenizer, which appends </s>); shared_vocabulary.json =
      vocab.json's tokens by id without the trailing <pad> (MarianMTLoader.get_vocabulary).
  ct2_reference.py convert-transformers --from HF_M2M100_OR_NLLB_DIR --out CT2_DIR
      the same for hf_multilingual_reference.py's folders (M2M100Loader: pre-norm, the final layer norms, the
      position table from row offset 2 on, the tokenizer's ids + its language tokens + M2M100Tokenizer's
      num_madeup_words madeupwords (NLLB: up to vocab_size), decoder_start_token = the token of
      decoder_start_token_id (BartLoader.set_config; mBART: MBartLoader.set_config's </s>, null for mBART-25);
      nothing added to the source).
  ct2_reference.py pad-row --dir HF_MARIAN_DIR [--pad-logit X]
      marian_reference.py make's folder with the <pad> row zero, as convert_marian_to_pytorch leaves a real one.
  ct2_reference.py marian-npz --from HF_MARIAN_DIR --out NPZ_DIR
      the Marian model that HF folder was converted from (the inverse of transformers'
      convert_marian_to_pytorch: Wemb without the <pad> row it appends, W as [in, out], biases [1, n],
      post-norm layer norms *_Wo_ln_scale / *_ffn_ffn_ln_scale, decoder_ff_logit_out_b, special:model.yml,
      vocab.yml), with source.spm beside it.
  ct2_reference.py convert-marian --model-path NPZ_DIR/model.npz --vocab-paths NPZ_DIR/vocab.yml --out CT2_DIR
      [--copy-spm NPZ_DIR/source.spm] [--quantization Q]
      what `ct2-marian-converter` writes (converters/marian.py MarianConverter._load and set_*):
      TransformerSpec.from_config((enc-depth, dec-depth), transformer-heads, pre_norm, activation,
      alignment_layer, alignment_heads=1, layernorm_embedding), scale_embeddings left True (an int8 flag),
      Wpos or the sinusoid table of _make_sinusoidal_position_encodings(dim, 2048), the projection reusing the
      decoder's embeddings, config.add_source_eos = True and config.json's default decoder_start_token <s>
      (which a Marian vocabulary lacks: CTranslate2 looks it up as <unk>; the decoder starts from zero).
      --copy-spm puts source.spm beside it as sentencepiece.model, as LibreTranslate's Locomotive
      opus_mt_convert.py packs it for Argos.
"""
import collections
import json
import math
import os
import re
import shutil

import numpy as np
import yaml

import ct2_reference as R
from marian_reference import marian_sinusoids, read_safetensors, write_safetensors

# transformers.py _SUPPORTED_ACTIVATIONS (HF names) and marian.py's (Marian's names) -> ct2_reference's
HF_ACTIVATIONS = {"gelu": "gelu", "gelu_fast": "gelutanh", "gelu_new": "gelutanh", "gelu_python": "gelu",
                  "gelu_pytorch_tanh": "gelutanh", "quick_gelu": "gelusigmoid", "relu": "relu", "silu": "swish",
                  "swish": "swish"}
MARIAN_ACTIVATIONS = {"gelu": "gelu", "relu": "relu", "swish": "swish"}


class _Arch:
    """The attributes ct2_reference.scalar_attributes reads, for a TransformerSpec of these converters."""

    def __init__(self, d_model, layers, decoder_layers, heads, activation, pre_norm, scale_float, scale):
        self.d_model, self.layers, self.decoder_layers, self.heads = d_model, layers, decoder_layers, heads
        self.activation, self.norm = activation, "pre" if pre_norm else "post"
        self.scale_embeddings_float, self.scale_embeddings = scale_float, scale
        self.multi_query = self.alibi = self.rotary = self.relative_position = False
        self.layernorm_embedding = False


def _f32(t):
    return np.ascontiguousarray(np.asarray(t, dtype=np.float64).astype(np.float32))


def _attention(V, scope, q, k, v, out, ln, self_attention):
    """set_attention (transformers.py BartLoader) / set_multi_head_attention (marian.py): (weight, bias) pairs,
    fused with utils.fuse_linear (concatenated rows)."""
    if self_attention:
        V[f"{scope}/linear_0/weight"] = np.concatenate([q[0], k[0], v[0]])
        V[f"{scope}/linear_0/bias"] = np.concatenate([q[1], k[1], v[1]])
        V[f"{scope}/linear_1/weight"], V[f"{scope}/linear_1/bias"] = out
    else:
        V[f"{scope}/linear_0/weight"], V[f"{scope}/linear_0/bias"] = q
        V[f"{scope}/linear_1/weight"] = np.concatenate([k[0], v[0]])
        V[f"{scope}/linear_1/bias"] = np.concatenate([k[1], v[1]])
        V[f"{scope}/linear_2/weight"], V[f"{scope}/linear_2/bias"] = out
    V[f"{scope}/layer_norm/gamma"], V[f"{scope}/layer_norm/beta"] = ln


def _ffn(V, scope, lin0, lin1, ln):
    V[f"{scope}/linear_0/weight"], V[f"{scope}/linear_0/bias"] = lin0
    V[f"{scope}/linear_1/weight"], V[f"{scope}/linear_1/bias"] = lin1
    V[f"{scope}/layer_norm/gamma"], V[f"{scope}/layer_norm/beta"] = ln


def _save(out_dir, arch, W, cfg, src_vocab, tgt_vocab, quantization, spm_path=None, zero_start=True):
    """SequenceToSequenceModelSpec.validate + save: the vocabularies (shared when equal, json indent 2), model.bin
    (optimize: _alias_variables, _quantize; _serialize), config.json (sort_keys, indent 2)."""
    if len(src_vocab) != W["encoder/embeddings_0/weight"].shape[0] or \
            len(tgt_vocab) != W["decoder/embeddings/weight"].shape[0]:
        raise SystemExit("convert: the vocabularies do not fit the embeddings (validate)")
    if os.path.exists(out_dir):
        shutil.rmtree(out_dir)
    os.makedirs(out_dir)
    V = collections.OrderedDict((n, R.to_storage(_f32(a), "float32")) for n, a in W.items())
    V.update(R.scalar_attributes(arch, 7))
    V["decoder/start_from_zero_embedding"] = R.scalar(int(zero_start), "int8")
    aliases = R.alias_variables(V, "equal")
    variables = R.quantize_variables(V, aliases, quantization)
    R.write_model_bin(os.path.join(out_dir, "model.bin"), "TransformerSpec", 7, variables, aliases, 6)
    if src_vocab == tgt_vocab:
        R.write_vocabulary(os.path.join(out_dir, "shared_vocabulary"), src_vocab, "json")
    else:
        R.write_vocabulary(os.path.join(out_dir, "source_vocabulary"), src_vocab, "json")
        R.write_vocabulary(os.path.join(out_dir, "target_vocabulary"), tgt_vocab, "json")
    R.write_config(os.path.join(out_dir, "config.json"), cfg)
    if spm_path:
        shutil.copyfile(spm_path, os.path.join(out_dir, "sentencepiece.model"))
    print(f"convert: {out_dir}: TransformerSpec revision 7, {quantization}, {len(variables)} variables, "
          f"{len(aliases)} aliases, vocabulary {len(src_vocab)}/{len(tgt_vocab)}, start_from_zero_embedding "
          f"{zero_start}, config {json.dumps(cfg, sort_keys=True)}")


# ----------------------------------------------------------------------------------------------------------
# ct2-transformers-converter, MarianMTLoader
# ----------------------------------------------------------------------------------------------------------
def _hf_folder(path):
    with open(os.path.join(path, "config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    sd, _ = read_safetensors(os.path.join(path, "model.safetensors"))
    sd = {k: v.numpy() for k, v in sd.items()}
    shared = sd["model.shared.weight"]
    for name in ("model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight"):
        sd.setdefault(name, shared)
    if cfg.get("tie_word_embeddings", True):
        sd.setdefault("lm_head.weight", shared)
    sd.setdefault("final_logits_bias", np.zeros((1, cfg["vocab_size"])))
    for side in ("encoder", "decoder"):  # MarianSinusoidalPositionalEmbedding: made at init when not stored
        sd.setdefault(f"model.{side}.embed_positions.weight",
                      marian_sinusoids(cfg["max_position_embeddings"], cfg["d_model"]))
    with open(os.path.join(path, "vocab.json"), encoding="utf-8") as f:
        vocab = json.load(f)
    return cfg, sd, vocab


def _hf_linear(sd, p):
    return sd[p + ".weight"], sd[p + ".bias"]


def _hf_ln(sd, p):
    return sd[p + ".weight"], sd[p + ".bias"]


def _hf_stack(W, sd, side, n, decoder):
    s, m = ("decoder" if decoder else "encoder"), f"model.{side}"
    W[f"{s}/embeddings/weight" if decoder else f"{s}/embeddings_0/weight"] = sd[f"{m}.embed_tokens.weight"]
    W[f"{s}/position_encodings/encodings"] = sd[f"{m}.embed_positions.weight"]
    for i in range(n):
        p, q = f"{m}.layers.{i}", f"{s}/layer_{i}"
        a = f"{p}.self_attn"
        _attention(W, f"{q}/self_attention", _hf_linear(sd, a + ".q_proj"), _hf_linear(sd, a + ".k_proj"),
                   _hf_linear(sd, a + ".v_proj"), _hf_linear(sd, a + ".out_proj"),
                   _hf_ln(sd, p + ".self_attn_layer_norm"), True)
        if decoder:
            a = f"{p}.encoder_attn"
            _attention(W, f"{q}/attention", _hf_linear(sd, a + ".q_proj"), _hf_linear(sd, a + ".k_proj"),
                       _hf_linear(sd, a + ".v_proj"), _hf_linear(sd, a + ".out_proj"),
                       _hf_ln(sd, p + ".encoder_attn_layer_norm"), False)
        _ffn(W, f"{q}/ffn", _hf_linear(sd, p + ".fc1"), _hf_linear(sd, p + ".fc2"), _hf_ln(sd, p + ".final_layer_norm"))


def cmd_convert_transformers(a):
    with open(os.path.join(a.src, "config.json"), encoding="utf-8") as f:
        raw = json.load(f)
    if raw.get("model_type") in ("m2m_100", "mbart"):
        return cmd_convert_m2m100(a, raw)
    if raw.get("model_type") != "marian":
        raise SystemExit(f"convert-transformers: model_type {raw.get('model_type')!r}: this writer follows "
                         "MarianMTLoader and M2M100Loader")
    cfg, sd, vocab = _hf_folder(a.src)
    d = cfg["d_model"]
    embed_scale = math.sqrt(d) if cfg.get("scale_embedding", False) else 1.0  # MarianEncoder.embed_scale
    arch = _Arch(d, cfg["encoder_layers"], cfg["decoder_layers"], cfg["encoder_attention_heads"],
                 HF_ACTIVATIONS[cfg["activation_function"]], False, True, embed_scale != 1.0)
    W = collections.OrderedDict()
    _hf_stack(W, sd, "encoder", cfg["encoder_layers"], False)
    _hf_stack(W, sd, "decoder", cfg["decoder_layers"], True)
    W["decoder/projection/weight"] = sd["lm_head.weight"]  # set_linear(spec.decoder.projection, model.lm_head)
    flb = np.asarray(sd["final_logits_bias"])
    if np.count_nonzero(flb):  # BartLoader.get_model_spec: only a nonzero final_logits_bias
        W["decoder/projection/bias"] = flb.reshape(-1)
    # _remove_pad_weights: the last row of the embeddings, the projection and its bias
    n = W["encoder/embeddings_0/weight"].shape[0] - 1
    for name in ("encoder/embeddings_0/weight", "decoder/embeddings/weight", "decoder/projection/weight",
                 "decoder/projection/bias"):
        if name in W and W[name].shape[0] == n + 1:
            W[name] = W[name][:-1]
    # ModelLoader.get_vocabulary: tokenizer.get_vocab() by id; BartLoader.get_vocabulary: at most vocab_size of
    # them; MarianMTLoader.get_vocabulary: without the trailing <pad>
    tokens = [t for t, _ in sorted(vocab.items(), key=lambda item: item[1])][:cfg["vocab_size"]]
    if tokens[-1] == "<pad>":
        tokens.pop()
    config = collections.OrderedDict(R.DEFAULT_CONFIG)  # TransformerConfig(); MarianMTLoader.set_config:
    config.update(eos_token="</s>", unk_token="<unk>", decoder_start_token="</s>")
    config["multi_query_attention"] = False  # TransformerSpec.__init__ add_attribute
    _save(a.out, arch, W, config, tokens, tokens, a.quantization)


# ----------------------------------------------------------------------------------------------------------
# ct2-transformers-converter, M2M100Loader (M2M100 and NLLB: both M2M100Config)
# ----------------------------------------------------------------------------------------------------------
def _hf_get_vocab(tok):
    """tokenizer.get_vocab() of hf_multilingual_reference.py's tokenizers: {token: id} over the tokenizer's ids
    (M2M100Tokenizer: vocab.json + the language tokens; NllbTokenizer: fairseq's specials, SentencePiece's pieces
    at their id + 1, the language codes, <mask>; added_tokens_decoder's ids where it moves them)."""
    if hasattr(tok, "vocab"):
        d = dict(tok.vocab)
    else:
        d = {tok.sp.id_to_piece(j): j + 1 for j in range(3, len(tok.sp))}
    d.update(tok.added)
    return d


def cmd_convert_m2m100(a, cfg):
    """M2M100Loader, and MBartLoader for mBART-50 (BartLoader: normalize_before and normalize_embedding from
    config.json, the learned positions from offset 2 on, a nonzero final_logits_bias as the projection's bias)."""
    import hf_multilingual_reference as H
    mbart = cfg["model_type"] == "mbart"
    sd = {k: v.numpy() for k, v in H.read_weights(a.src)[0].items()}
    shared = sd["model.shared.weight"]
    for name in ("model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight", "lm_head.weight"):
        sd.setdefault(name, shared)
    full = dict(H.CONFIG_DEFAULTS[cfg["model_type"]])
    full.update(cfg)
    d, pad = full["d_model"], full["pad_token_id"]
    for side in ("encoder", "decoder"):
        if mbart:  # ModelLoader.set_position_encodings: module.weight[offset:] (MBartLearnedPositionalEmbedding)
            sd[f"model.{side}.embed_positions.weight"] = sd[f"model.{side}.embed_positions.weight"][2:]
        else:  # M2M100Loader.set_position_encodings: module.weights[module.offset:] of max_position_embeddings
            # + offset (2) rows, whose row pad + 1 + i is token i's
            sd[f"model.{side}.embed_positions.weight"] = \
                H.m2m100_sinusoids(full["max_position_embeddings"] + 2, d, pad).numpy()[2:]
    embed_scale = math.sqrt(d) if full["scale_embedding"] else 1.0
    arch = _Arch(d, full["encoder_layers"], full["decoder_layers"], full["encoder_attention_heads"],
                 HF_ACTIVATIONS[full["activation_function"]], True, True, embed_scale != 1.0)
    arch.layernorm_embedding = mbart
    W = collections.OrderedDict()
    _hf_stack(W, sd, "encoder", full["encoder_layers"], False)
    _hf_stack(W, sd, "decoder", full["decoder_layers"], True)
    for side in ("encoder", "decoder"):  # set_common_layers: the module's layer_norm (pre-norm: the final one)
        W[f"{side}/layer_norm/gamma"], W[f"{side}/layer_norm/beta"] = _hf_ln(sd, f"model.{side}.layer_norm")
        if mbart:
            W[f"{side}/layernorm_embedding/gamma"], W[f"{side}/layernorm_embedding/beta"] = \
                _hf_ln(sd, f"model.{side}.layernorm_embedding")
    W["decoder/projection/weight"] = sd["lm_head.weight"]
    flb = np.asarray(sd.get("final_logits_bias", np.zeros(1)))
    if np.count_nonzero(flb):
        W["decoder/projection/bias"] = flb.reshape(-1)
    tok = H.load_tokenizer(a.src)
    vocab = _hf_get_vocab(tok)
    tokens = [t for t, _ in sorted(vocab.items(), key=lambda item: item[1])]
    V = full["vocab_size"]
    tokens = tokens[:V]  # BartLoader.get_vocabulary
    if tokens[-1] == "<unk>":  # M2M100Loader: the workaround of CTranslate2 issue 1039
        tokens.insert(tok.unk_id, tokens.pop())
    for t in tok.lang_codes if hasattr(tok, "vocab") else []:  # additional_special_tokens not in the vocabulary
        if f"__{t}__" not in tokens:
            tokens.append(f"__{t}__")
    # num_madeup_words = getattr(tokenizer, "num_madeup_words", vocab_size - len(tokens)): M2M100Tokenizer has the
    # attribute (its tokenizer_config.json's, 8 by default), NllbTokenizer and MBart50Tokenizer have not
    madeup = int(tok.tcfg.get("num_madeup_words", 8)) if isinstance(tok, H.M2M100Tok) else V - len(tokens)
    tokens += ["madeupword%d" % i for i in range(madeup)]
    config = collections.OrderedDict(R.DEFAULT_CONFIG)
    inv = {i: t for t, i in vocab.items()}
    if mbart:  # MBartLoader.set_config: mBART-25 (tokenizer_class MBartTokenizer or none) passes the language
        # code as the start token (null, which AttnLab refuses by name); mBART-50 starts with </s>
        start = None if full.get("tokenizer_class") in ("MBartTokenizer", None) else "</s>"
    else:  # BartLoader.set_config: convert_ids_to_tokens(decoder_start_token_id)
        start = inv[full["decoder_start_token_id"]]
    config.update(bos_token="<s>", eos_token="</s>", unk_token="<unk>", decoder_start_token=start)
    config["multi_query_attention"] = False
    _save(a.out, arch, W, config, tokens, tokens, a.quantization, zero_start=False)


# ----------------------------------------------------------------------------------------------------------
# the Marian model behind an HF folder, and ct2-marian-converter
# ----------------------------------------------------------------------------------------------------------
def _marian_yaml(cfg, act):
    return yaml.safe_dump({
        "type": "transformer", "enc-depth": cfg["encoder_layers"], "dec-depth": cfg["decoder_layers"],
        "transformer-heads": cfg["encoder_attention_heads"], "transformer-ffn-activation": act,
        "transformer-preprocess": "", "transformer-postprocess": "dan", "transformer-postprocess-emb": "d",
        "transformer-postprocess-top": "", "transformer-decoder-autoreg": "self-attention",
        "transformer-no-projection": False, "transformer-guided-alignment-layer": "last",
        "dim-emb": cfg["d_model"]})


def cmd_marian_npz(a):
    cfg, sd, vocab = _hf_folder(a.src)
    pad = cfg["pad_token_id"]
    if pad != cfg["vocab_size"] - 1 or not cfg.get("tie_word_embeddings", True):
        raise SystemExit("marian-npz: the <pad> must be the last id (convert_marian_to_pytorch appends it) and "
                         "the projection tied to the embeddings")
    act = {"swish": "swish", "silu": "swish", "gelu": "gelu", "relu": "relu"}[cfg["activation_function"]]
    npz = {"Wemb": _f32(sd["model.shared.weight"][:pad])}

    def lin(prefix, hf, suffix):
        npz[f"{prefix}_W{suffix}"] = _f32(sd[hf + ".weight"]).T.copy()
        npz[f"{prefix}_b{suffix}"] = _f32(sd[hf + ".bias"])[None, :]

    def ln(prefix, hf):
        npz[prefix + "_ln_scale"] = _f32(sd[hf + ".weight"])[None, :]
        npz[prefix + "_ln_bias"] = _f32(sd[hf + ".bias"])[None, :]

    for side, n in (("encoder", cfg["encoder_layers"]), ("decoder", cfg["decoder_layers"])):
        for i in range(n):
            p, m = f"{side}_l{i + 1}", f"model.{side}.layers.{i}"
            attns = [("self", "self_attn")] + ([("context", "encoder_attn")] if side == "decoder" else [])
            for mine, hf in attns:
                for x, y in (("q", "q_proj"), ("k", "k_proj"), ("v", "v_proj"), ("o", "out_proj")):
                    lin(f"{p}_{mine}", f"{m}.{hf}.{y}", x)
                ln(f"{p}_{mine}_Wo", f"{m}.{hf}_layer_norm")
            lin(f"{p}_ffn", f"{m}.fc1", "1")
            lin(f"{p}_ffn", f"{m}.fc2", "2")
            ln(f"{p}_ffn_ffn", f"{m}.final_layer_norm")
    npz["decoder_ff_logit_out_b"] = _f32(sd["final_logits_bias"]).reshape(1, -1)[:, :pad]
    npz["special:model.yml"] = np.frombuffer(_marian_yaml(cfg, act).encode() + b"\0", dtype=np.int8)
    os.makedirs(a.out, exist_ok=True)
    np.savez(os.path.join(a.out, "model.npz"), **npz)
    tokens = [t for t, _ in sorted(vocab.items(), key=lambda item: item[1])][:pad]
    with open(os.path.join(a.out, "vocab.yml"), "w", encoding="utf-8") as f:
        for i, t in enumerate(tokens):
            f.write(json.dumps(t, ensure_ascii=False) + f": {i}\n")
    shutil.copyfile(os.path.join(a.src, "source.spm"), os.path.join(a.out, "source.spm"))
    print(f"marian-npz: {a.out}: model.npz ({len(npz)} arrays), vocab.yml ({len(tokens)} tokens), source.spm")


def _load_marian_vocab(path):
    """marian.py _load_vocab: `token: id` lines, quoted tokens unescaped, sorted by id."""
    tokens = []
    with open(path, encoding="utf-8") as vocab:
        for line in vocab:
            line = line.rstrip("\n\r")
            if not line:
                continue
            token, idx = line.rsplit(":", 1)
            if token.startswith('"') and token.endswith('"'):
                token = re.sub(r"\\(.)", r"\1", token)[1:-1]
            elif token.startswith("'") and token.endswith("'"):
                token = token[1:-1].replace("''", "'")
            tokens.append((int(idx.strip()), token))
    return [t for _, t in sorted(tokens, key=lambda item: item[0])]


def _marian_sinusoids(dim, num_positions=2048):
    """marian.py _make_sinusoidal_position_encodings (float64; the spec stores float32)."""
    j = np.arange(dim)
    position_enc = np.arange(num_positions, dtype=np.float64)[:, None] / np.power(10000, 2 * (j // 2) / dim)
    table = np.zeros_like(position_enc)
    table[:, : dim // 2] = np.sin(position_enc[:, 0::2])
    table[:, dim // 2:] = np.cos(position_enc[:, 1::2])
    return table


def _marian_layers(W, w, scope, n, decoder):
    s = "decoder" if decoder else "encoder"

    def linear(prefix, suffix):
        return w[f"{prefix}_W{suffix}"].T, w[f"{prefix}_b{suffix}"].squeeze()

    def ln_auto(prefix):  # set_layer_norm_auto: the pre-norm names first
        key = prefix + "_ln_scale_pre" if prefix + "_ln_scale_pre" in w else prefix + "_ln_scale"
        return w[key].squeeze(), w[key.replace("_ln_scale", "_ln_bias")].squeeze()

    for i in range(n):
        p, q = f"{scope}_l{i + 1}", f"{s}/layer_{i}"
        _ffn(W, f"{q}/ffn", linear(f"{p}_ffn", "1"), linear(f"{p}_ffn", "2"), ln_auto(f"{p}_ffn_ffn"))
        mine = [("self", "self_attention", True)] + ([("context", "attention", False)] if decoder else [])
        for m, spec, self_attention in mine:
            a = f"{p}_{m}"
            _attention(W, f"{q}/{spec}", linear(a, "q"), linear(a, "k"), linear(a, "v"), linear(a, "o"),
                       ln_auto(a + "_Wo"), self_attention)


def cmd_convert_marian(a):
    w = dict(np.load(a.model_path))
    config = yaml.safe_load(w["special:model.yml"][:-1].tobytes())
    vocabs = [_load_marian_vocab(p) for p in a.vocab_paths]
    pre_norm = "n" in config["transformer-preprocess"]
    if config["type"] != "transformer" or config["transformer-decoder-autoreg"] != "self-attention" or \
            config["transformer-no-projection"] or "n" in config["transformer-postprocess-emb"]:
        raise SystemExit("convert-marian: this writer follows the post-norm Transformer without layernorm_embedding")
    d = (w["encoder_Wemb"] if "encoder_Wemb" in w else w["Wemb"]).shape[1]
    arch = _Arch(d, config["enc-depth"], config["dec-depth"], config["transformer-heads"],
                 MARIAN_ACTIVATIONS[config["transformer-ffn-activation"]], pre_norm, False, True)
    W = collections.OrderedDict()
    for side in ("encoder", "decoder"):  # set_common_layers
        emb = w.get(f"{side}_Wemb", w.get("Wemb"))
        W[f"{side}/embeddings_0/weight" if side == "encoder" else f"{side}/embeddings/weight"] = emb
        W[f"{side}/position_encodings/encodings"] = w.get("Wpos", _marian_sinusoids(emb.shape[1]))
    _marian_layers(W, w, "encoder", config["enc-depth"], False)
    _marian_layers(W, w, "decoder", config["dec-depth"], True)
    # set_linear(spec.projection, weights, "decoder_ff_logit_out", reuse_weight=spec.embeddings.weight)
    out_w = w.get("decoder_ff_logit_out_W")
    W["decoder/projection/weight"] = W["decoder/embeddings/weight"] if out_w is None else out_w.T
    if "decoder_ff_logit_out_b" in w:
        W["decoder/projection/bias"] = w["decoder_ff_logit_out_b"].squeeze()
    cfg = collections.OrderedDict(R.DEFAULT_CONFIG)  # TransformerConfig() defaults; decoder_start_token <s>
    cfg["add_source_eos"] = True  # model_spec.config.add_source_eos = True
    cfg["multi_query_attention"] = False
    _save(a.out, arch, W, cfg, vocabs[0], vocabs[-1], a.quantization, a.copy_spm)


def cmd_pad_row(a):
    """An HF MarianMT folder (marian_reference.py make: random weights everywhere) as a real OPUS-MT folder is:
    transformers' convert_marian_to_pytorch appends a zero row for <pad> to the embeddings (MarianMTModel's
    _init_weights zeroes padding_idx too), and <pad> is also the decoder's start token there. With --pad-logit, the
    <pad> entry of final_logits_bias: <pad>'s logit then (its row is zero); the folder's softmax has a column for it
    that the converted model's has not (_remove_pad_weights)."""
    path = os.path.join(a.dir, "model.safetensors")
    with open(os.path.join(a.dir, "config.json"), encoding="utf-8") as f:
        pad = json.load(f)["pad_token_id"]
    sd, dtypes = read_safetensors(path)
    out = collections.OrderedDict()
    for name, t in sd.items():
        v = t.numpy().astype(np.float32)
        if name.endswith("shared.weight") or name.endswith("embed_tokens.weight") or name == "lm_head.weight":
            v[pad] = 0
        if name == "final_logits_bias" and a.pad_logit is not None:
            v[0, pad] = a.pad_logit
        out[name] = v
    write_safetensors(path, out, next(iter(dtypes.values())))
    print(f"pad-row: {path}: row {pad} of the embeddings zero"
          + (f", final_logits_bias[{pad}] = {a.pad_logit}" if a.pad_logit is not None else ""))


def add_parsers(sub):
    z = sub.add_parser("pad-row", help="an HF MarianMT folder's <pad> row zeroed, as a real OPUS-MT folder's is")
    z.add_argument("--dir", required=True)
    z.add_argument("--pad-logit", type=float, default=None)
    z.set_defaults(fn=cmd_pad_row)
    c = sub.add_parser("convert-transformers",
                       help="what ct2-transformers-converter writes for a MarianMT, M2M100 or NLLB folder")
    c.add_argument("--from", dest="src", required=True)
    c.add_argument("--out", required=True)
    c.add_argument("--quantization", choices=R.QUANTIZATIONS, default="float32")
    c.set_defaults(fn=cmd_convert_transformers)
    n = sub.add_parser("marian-npz", help="the Marian model.npz + vocab.yml a MarianMT folder was converted from")
    n.add_argument("--from", dest="src", required=True)
    n.add_argument("--out", required=True)
    n.set_defaults(fn=cmd_marian_npz)
    m = sub.add_parser("convert-marian", help="what ct2-marian-converter writes for a Marian model.npz")
    m.add_argument("--model-path", required=True)
    m.add_argument("--vocab-paths", nargs="+", required=True)
    m.add_argument("--out", required=True)
    m.add_argument("--copy-spm", default=None, help="copied as sentencepiece.model (an Argos package's tokenizer)")
    m.add_argument("--quantization", choices=R.QUANTIZATIONS, default="float32")
    m.set_defaults(fn=cmd_convert_marian)
