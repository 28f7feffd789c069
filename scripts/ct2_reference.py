#!/usr/bin/env python3
"""An independent Python implementation of CTranslate2's Transformer encoder-decoder model directories
(spec "TransformerSpec", and the older "TransformerBase" / "TransformerBig"): the model.bin format, the
vocabularies and config.json, the forward pass, greedy translate_batch and score_batch, plus a writer of such
directories (and of Argos Translate packages) with seeded random weights. Written from CTranslate2's own source
(OpenNMT/CTranslate2: python/ctranslate2/specs/*, python/ctranslate2/converters/*, src/models/*, src/layers/*,
src/ops/*, src/decoding.cc, src/scoring.cc, src/vocabulary.cc) and Argos Translate's (argosopentech/
argos-translate: argostranslate/package.py, translate.py, tokenizer.py); used to check AttnLab's C++ loader of
CTranslate2 directories.

  make     --out DIR [options]               a CTranslate2 model directory with seeded random weights: model.bin
                                             (written byte by byte here), config.json, shared_vocabulary.json|txt
                                             or source_/target_vocabulary.*, [sentencepiece.model]; optionally an
                                             Argos Translate package (.argosmodel zip and/or the installed folder)
  run      --model DIR --sentences FILE --out OUT.json [--max-length N] [--min-length N]
                                             tokenize, greedy-translate (translate_batch, beam_size=1) and the
                                             attention maps of the teacher-forced pass
  score    --model DIR --sources FILE --targets FILE --out OUT.json
                                             teacher-forced log-probabilities as score_batch computes them
  selftest                                   checks the script against itself and against torch.nn

--model may be a CTranslate2 directory, an installed Argos package folder (metadata.json, model/,
sentencepiece.model) or a .argosmodel zip. Computes in float64 from the stored values (float16 / bfloat16 upcast,
int8 / int16 weights dequantized as q / scale; CTranslate2 itself would also quantize the activations on the fly
when it runs int8 / int16 GEMMs, which this reference does not). Needs Debian's python3-torch, numpy and
python3-sentencepiece (/usr/bin/python3); nothing is downloaded. round7 / read_sentences come from
marian_reference.py next to this script.

Output of run (JSON), one entry per line of the sentences file (split on "\\n" only):
  {"config_used": {format {binary_version, spec, spec_revision, stored_dtypes, compute_type_inferred,
                   aliases}, config {source ("config.json" | "model.bin attributes (binary version < 6)" |
                   "defaults (no config.json)"), unk/bos/eos_token, add_source_bos, add_source_eos,
                   decoder_start_token}, vocabulary {files, source_size, target_size, unk_appended},
                   special_ids {source_unk, source_bos, source_eos, target_unk, target_bos, target_eos,
                   decoder_start}, layer_norm_epsilon {value, source}, encoder / decoder {num_heads, layers,
                   d_model, ffn, head_dim, pre_norm, activation, activation_id, final_norm,
                   layernorm_embedding, embeddings_scale, positions {kind: "sinusoidal" (generated) |
                   "stored" | "none (relative positions)", rows, row_of_position_0 (generated: row r is
                   position r + 1), decoder_step_offset}, queries_scale, features}, decoder.projection_bias,
                   decoding {beam_size 1, max_decoding_length, min_decoding_length, end_token,
                   alignment_layer, alignment_heads}, tokenizer, notes},
   "sentences": [{"source",
                  "source_tokens"      (whitespace split, or SentencePiece pieces as Argos encodes them),
                  "source_ids"         (the encoder input: [bos] + ids + [eos] as add_source_bos/eos say;
                                        unknown tokens -> unk id),
                  "target_ids"         (every generated id, the final eos included when reached; the decoder
                                        start token excluded),
                  "target_tokens"      (tokens of target_ids),
                  "hypothesis_tokens"  (translate_batch's result: trailing eos removed, return_end_token=False),
                  "decoder_input_ids"  ([start] + target_ids[:-1]: the teacher-forced pass of the maps),
                  "stop_reason"        ("eos" | "max_length" | "empty_source"),
                  "text"               (whitespace model: hypothesis tokens joined by spaces; SentencePiece:
                                        Argos' decoding: replace_unknowns as Argos asks for it, "".join(pieces)
                                        .replace("\u2581", " "), one leading space removed),
                  "text_without_replace_unknowns",
                  "step_log_probs"     (log_softmax of the raw logits at each target_ids entry),
                  "step_log_probs_ct2" (what CTranslate2 accumulates with return_scores: log_softmax after
                                        min_decoding_length disabled the end token; differs at step 0 only),
                  "score"              (translate_batch's score: sum(step_log_probs_ct2) / len(hypothesis)),
                  "ct2_attention"      (translate_batch(return_attention=True): cross-attention of the
                                        alignment layer averaged over its first alignment_heads heads, one row
                                        per hypothesis token, bos/eos columns removed),
                  "attentions": {"encoder": [layer][head][q][k], "decoder": [layer][head][t][t],
                                 "cross": [layer][head][t][src]}  (7 significant digits; src counts the
                                 source bos/eos; t = len(target_ids))}]}
Output of score (JSON): {"config_used": {...}, "pairs": [{"source", "target", "source_tokens", "source_ids",
  "target_tokens" (ScoringResult.tokens: the vocabulary's token of each scored id, unknown words as the unk
  token, the eos last), "target_ids" (target ids + [eos], the scored tokens), "decoder_input_ids" ([start] +
  target),
  "token_log_probs", "mean" (sum / len: ScoringResult.normalized_score), "attentions" {...as above}}]}.

CTranslate2 semantics implemented here (file each comes from):
  model.bin (specs/model_spec.py _serialize; src/models/model.cc Model::load): little-endian uint32 binary
    version; for version >= 2 the spec name (uint16 length incl. the NUL, UTF-8, NUL) and uint32 spec revision
    (version 1: revision 1, no name); uint32 variable count; per variable (names in sorted order) name, uint8
    rank, rank x uint32 dims, then version >= 4: uint8 dtype id (float32 0, int8 1, int16 2, int32 3,
    float16 4, bfloat16 5) + uint32 byte count, version < 4: uint8 item size (4 float32, 2 int16, 1 int8:
    get_dtype_from_item_size) + uint32 element count; the raw data. Version >= 3: uint32 alias count and
    (alias, target) string pairs; the reader also aliases alias + "_scale" -> target + "_scale". Duplicate
    names: the first is kept (emplace). Scalars (rank 0) are spec attributes: bool -> int8, float -> float32,
    str -> int8 array of its UTF-8 bytes.
  Aliases (model_spec.py _alias_variables): over the sorted names, each non-scalar variable equal (dtype, shape,
    values) to an earlier one becomes an alias of the first such; this runs before _quantize.
  Quantization (model_spec.py _quantize): a variable with a "<key>_scale" attribute in its spec (Linear and
    Embeddings "weight") is int16: scale = float32(2^10 / max|W|), W*scale rounded (rint), clipped; int8*:
    per output row scale = 127 / max|row| (0 -> 127), rint, stored as "<name>_scale" float32 [rows]; float16 /
    bfloat16 / float32: cast. Other float variables (biases, norms, position tables): float16 for float16 and
    int8_float16, bfloat16 for bfloat16 / int8_bfloat16, float32 for float32 / int16 / int8_float32, unchanged
    for int8. Dequantization (ops/dequantize_cpu.cc): q * (1 / scale) per row (int8) or per tensor (int16; an
    int16 weight without a scale gets ops::Quantize::global_int16_scale = 1000, model.cc ensure_dtype).
  Layout by spec revision (transformer_spec.py history; src/models/transformer.cc TransformerModel::initialize):
    7 (current): encoder/{num_heads int16, pre_norm, activation, embeddings_merge, scale_embeddings,
      multi_query_attention}, decoder/{num_heads, pre_norm, activation, alignment_layer int16, alignment_heads
      int16, scale_embeddings, alibi, alibi_use_positive_positions, scale_alibi, start_from_zero_embedding},
      encoder/embeddings_0/weight; 5 and 6: the same without multi_query_attention and the three alibi flags
      (the revision-5 transformer_spec.py; what revision 6 added is not visible in the stored history, see
      the report); 4: top-level num_heads int8, pre_norm, activation, alignment_layer, alignment_heads,
      with_relative_position, embeddings_merge, layernorm_embedding, scoped scale_embeddings; the C++ aliases
      encoder/num_heads -> num_heads etc. when revision < 5; 3: top-level num_heads int8, with_relative_position,
      pre_norm, activation, encoder/embeddings/weight (no _0), no scale_embeddings (an absent flag means
      sqrt(d)); 2: the heads come from the spec name (TransformerBase 8, TransformerBig 16; registered when
      revision < 3), defaults pre_norm true, relu (revision-2 models had no pre_norm / activation attributes;
      make writes them top-level only for post-norm or another activation, where the C++ loader's revision < 5
      aliases read them: a layout no real revision-2 model has).
  Variables: <s>/layer_<i>/self_attention/{layer_norm/{gamma,beta}, linear_0 (fused [q; k; v] rows, torch's
    in_proj layout), linear_1 (output)}; decoder/layer_<i>/attention/{layer_norm, linear_0 (q), linear_1 (fused
    [k; v]), linear_2 (output)}; <s>/layer_<i>/ffn/{layer_norm, linear_0, [linear_0_noact], linear_1}; <s>/
    layer_norm (final, pre-norm only), <s>/layernorm_embedding, <s>/position_encodings/encodings,
    decoder/projection/{weight, bias}. Heads: split_heads takes consecutive head_dim slices (attention.cc).
  Layer norm (layers/common.cc LayerNorm): eps = config.json layer_norm_epsilon (read as float32) when present
    and not null, else 1e-5 (with beta) / 1e-6 (RMS norm: gamma only, x / sqrt(mean(x^2) + eps) * gamma).
  Embedding scale (layers/transformer.cc build_embeddings_scale): <s>/scale_embeddings, else (older models)
    <s>/embeddings/multiply_by_sqrt_depth; absent or int8 true -> sqrt(d); a float value != 1 -> that value
    (fairseq converter: embed_scale); int8 false or 1.0 -> none. sqrt(d) and 1 / sqrt(head_dim) are exact here;
    CTranslate2 computes them in float32 (relative difference < 6e-8); layer_norm_epsilon is read as float32
    as the C++ does (config.json value -> get<float>).
  Positions (layers/transformer.cc build_position_encoder, layers/common.cc, ops/position_encodings_add_cpu.cc):
    none when layer 0's self-attention has relative positions / rotary / alibi; a stored
    <s>/position_encodings/encodings table: row t added at input position t (decoder step s: row s);
    otherwise generated (OpenNMT-tf): timescale_j = exp(-j * ln(10000) / (d/2 - 1)), row r = [sin((r+1) ts) |
    cos((r+1) ts)], so row 0 is position 1. The OpenNMT-py converter stores OpenNMT-py's own table (interleaved
    sin / cos, pe[p, 2i] = sin(p / 10000^(2i/d)), row 0 = position 0); the fairseq converter stores its table
    from row padding_idx + 1. Order: embedding * scale, + positions, layernorm_embedding (encoder, decoder).
  Attention (layers/attention.cc, attention_layer.cc): pre-norm: out = x + Wo(attn(LN(x))); post-norm:
    out = LN(x + Wo(attn(x))); without a layer_norm no residual. scores = (q k^T) * queries_scale (the
    <scope>/queries_scale attribute, default 1 / sqrt(head_dim)), causal mask in decoder self-attention,
    softmax, weights v. Cross-attention keys / values come from the encoder output (the final-normed memory),
    layer norm on the queries only. Relative positions (Shaw): pos(i, j) = clip(j - i - (Tk - Tq), -N, N) + N,
    scores += queries_scale * q . K_rel[pos], output += sum_j p_ij V_rel[pos]; computed with OpenNMT-py's
    generate_relative_positions_matrix and relative_matmul (onmt/utils/misc.py, copied as written: the full
    matrix, or the cache=True row of a decoding step, decode_incremental); make --relative-position N writes
    the values as the converter does (an alias of the keys), --relative-separate-values a table of their own. Multi-query (num_heads_kv 1):
    one k / v head shared by all query heads (self: fused [q (d); k (hd); v (hd)]; cross: [k; v]).
  FFN (layers/transformer.cc FeedForwardNetwork): linear_1(act(linear_0(x)) [* linear_0_noact(x)]) with the
    same pre/post-norm residual rule. Activations (ops/activation.cc, common_spec.Activation): 0 relu, 1 gelu
    tanh approximation, 2 swish x*sigmoid(x), 3 gelu (erf), 4 gelu sigmoid x*sigmoid(1.702x), 5 tanh, 6 sigmoid.
  Decoder (TransformerDecoder::decode): embeddings (start_from_zero_embedding), scale, project_in, positions
    from the step offset, layernorm_embedding, layers, final layer_norm, project_out, scale_outputs,
    projection (+ bias).
  Vocabularies (models/sequence_to_sequence.cc load_vocabularies, src/vocabulary.cc): shared_vocabulary.*,
    else target_vocabulary.* + source_vocabulary.* (or source_1_vocabulary.* ...); .json (a JSON list; tried
    first here) or .txt (one token a line, a trailing CR removed only when every line has one); the unk token
    is appended when missing; unknown tokens map to unk. The converter writes .json since CTranslate2 3.16
    (json.dump, indent 2, non-ASCII as \\u escapes), .txt before.
  config.json (specs/model_spec.py SequenceToSequenceModelConfig, transformer_spec.py TransformerConfig):
    unk_token "<unk>", bos_token "<s>", eos_token "</s>", decoder_start_token "<s>", add_source_bos false,
    add_source_eos false, layer_norm_epsilon null, multi_query_attention; the OpenNMT-py converter keeps
    these, the fairseq converter sets decoder_start_token = eos_token and add_source_eos = true. Binary version
    < 6 (sequence_to_sequence.cc initialize): these keys come from model.bin attributes (unk_token, bos_token,
    eos_token strings; flags with_source_bos, with_source_eos, with_target_bos (start = bos, else eos),
    user_decoder_start_tokens (no start token)) with those defaults, whatever config.json says.
  translate_batch (sequence_to_sequence.cc run_translation, decoding.cc GreedySearch): source ids = [bos] +
    tokens + [eos] per config; decoding starts from decoder_start_token; each step one token; the end token is
    disabled (logit -inf) while step < min_decoding_length (default 1); argmax; finished on the end token or
    when step + 1 == max_decoding_length (default 256; it counts the generated tokens, the end token
    included); the end token is removed from the hypothesis (return_end_token=False); a source without
    content tokens (get_source_length without bos / eos) is not run (empty translation); score = sum of the
    log-probs (end token included) / len(hypothesis)^1. Not modelled: max_input_length 1024 truncation.
  score_batch (scoring.cc score_sequences, sequence_to_sequence.cc skip_scoring): sequence = [decoder_start] +
    target + [eos]; decoder input all but the last, log_softmax, the log-prob of each next token (the eos
    included); an empty source (even with its special tokens) gets 0 for every token without a run.
  Argos Translate (argos-translate package.py, translate.py, tokenizer.py; argos-train argostrain/train.py,
    config.yml): a zip (shutil.make_archive) of one top-level folder translate-<from>_<to>-<version, "." ->
    "_"> holding metadata.json (package_version, argos_version, from_code, from_name, to_code, to_name; indent
    4), README.md, sentencepiece.model, model/ (the CTranslate2 directory) and stanza/ (a sentence splitter,
    not written here); install = extract into the packages folder; translation: SentencePiece
    encode(out_type=str), translate_batch(replace_unknowns=True, ...), decode = "".join(tokens).replace("\u2581",
    " "), one leading space removed. (Argos itself uses beam_size 4, length_penalty 0.2 and sentence
    splitting; this reference translates each line whole with greedy search.) argos-train's models are
    OpenNMT-py transformers (pre-norm, position_encoding: the stored OpenNMT-py table, share_vocab,
    share_embeddings, share_decoder_embeddings, 8 heads) converted with --quantization int8; the same layout
    here: make --spm --positions stored-sinusoidal --share-embeddings --tie-projection --dtype int8 --heads 8.
"""
import argparse
import collections
import json
import math
import os
import shutil
import struct
import sys
import tempfile
import time
import zipfile

import numpy as np
import torch
import torch.nn.functional as F

try:
    import sentencepiece as spm
except ImportError:  # pragma: no cover
    sys.exit("ct2_reference.py needs python3-sentencepiece (apt-get install python3-sentencepiece) "
             "and Debian's /usr/bin/python3")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from marian_reference import _Checker, _public, _refused, read_sentences, round7  # noqa: E402

CURRENT_BINARY_VERSION = 6  # specs/model_spec.py CURRENT_BINARY_VERSION
CURRENT_REVISION = 7        # transformer_spec.py TransformerSpec.revision
DTYPES = ("float32", "int8", "int16", "int32", "float16", "bfloat16")  # the DataType ids of types.h
STORAGE = {"float32": "<f4", "int8": "<i1", "int16": "<i2", "int32": "<i4", "float16": "<f2", "bfloat16": "<u2"}
FLOAT_DTYPES = ("float32", "float16", "bfloat16")
ITEM_SIZE_DTYPE = {4: "float32", 2: "int16", 1: "int8"}  # model.cc get_dtype_from_item_size (binary < 4)
QUANTIZATIONS = ("float32", "float16", "bfloat16", "int16", "int8", "int8_float32", "int8_float16", "int8_bfloat16")
ACTIVATIONS = collections.OrderedDict([("relu", 0), ("gelutanh", 1), ("swish", 2), ("gelu", 3),
                                       ("gelusigmoid", 4), ("tanh", 5), ("sigmoid", 6)])
GLOBAL_INT16_SCALE = 1000.0  # ops/quantize.cc Quantize::global_int16_scale
SPEC_NAME_HEADS = {"": 8, "TransformerBase": 8, "TransformerBig": 16}  # transformer.cc / model_factory.cc
DEFAULT_CONFIG = collections.OrderedDict([  # SequenceToSequenceModelConfig + TransformerConfig defaults
    ("unk_token", "<unk>"), ("bos_token", "<s>"), ("eos_token", "</s>"), ("decoder_start_token", "<s>"),
    ("add_source_bos", False), ("add_source_eos", False), ("layer_norm_epsilon", None)])
DEFAULT_SPECIALS = "<blank> <unk> <s> </s>"
SPIECE = "\u2581"
LANG_NAMES = {"en": "English", "de": "German", "fr": "French", "es": "Spanish", "it": "Italian", "mg": "Malagasy",
              "pt": "Portuguese", "nl": "Dutch", "ru": "Russian", "ja": "Japanese", "zh": "Chinese"}


class RefusedError(Exception):
    """A model this reference does not run (rotary, alibi, relative attention bias, ...)."""


# ----------------------------------------------------------------------------------------------------------
# storage: a variable is (dtype name, little-endian numpy array of what model.bin holds)
# ----------------------------------------------------------------------------------------------------------
def to_storage(values, dtype):
    a = np.asarray(values)
    if dtype == "bfloat16":  # torch rounds to nearest even, as PyTorchVariable.to("bfloat16") does
        t = torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32)).to(torch.bfloat16)
        return dtype, t.view(torch.int16).numpy().view("<u2").copy()
    return dtype, np.ascontiguousarray(a.astype(STORAGE[dtype]))


def decode_storage(var):
    """(dtype, array) -> float64 numpy array of its values (not dequantized)."""
    dtype, a = var
    if dtype == "bfloat16":
        return (a.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return a.astype(np.float64)


def string_attribute(s):
    """A str spec attribute: int8 array of its UTF-8 bytes (LayerSpec.validate)."""
    return "int8", np.frombuffer(s.encode("utf-8"), dtype=np.int8).copy()


def scalar(value, dtype):
    return dtype, np.array(value, dtype=STORAGE[dtype])


# ----------------------------------------------------------------------------------------------------------
# model.bin
# ----------------------------------------------------------------------------------------------------------
def _pack_string(s):
    b = s.encode("utf-8")
    return struct.pack("<H", len(b) + 1) + b + b"\0"


def _pack_variable(name, var, binary_version):
    dtype, a = var
    out = [_pack_string(name), struct.pack("<B", a.ndim), struct.pack("<%dI" % a.ndim, *a.shape)]
    if binary_version >= 4:
        out += [struct.pack("<B", DTYPES.index(dtype)), struct.pack("<I", a.nbytes)]
    else:
        if ITEM_SIZE_DTYPE.get(a.itemsize) != dtype:
            raise ValueError(f"binary version {binary_version} cannot store {name} ({dtype}): the item size "
                             f"{a.itemsize} would be read as {ITEM_SIZE_DTYPE.get(a.itemsize)}")
        out += [struct.pack("<B", a.itemsize), struct.pack("<I", a.size)]
    out.append(a.tobytes())
    return b"".join(out)


def write_model_bin(path, spec_name, revision, variables, aliases, binary_version):
    """variables: name -> (dtype, array); aliases: alias -> target. Written in sorted order (_serialize)."""
    if binary_version < 3 and aliases:
        raise ValueError("binary versions < 3 have no alias section")
    out = [struct.pack("<I", binary_version)]
    if binary_version >= 2:
        out += [_pack_string(spec_name), struct.pack("<I", revision)]
    out.append(struct.pack("<I", len(variables)))
    out += [_pack_variable(n, variables[n], binary_version) for n in sorted(variables)]
    if binary_version >= 3:
        out.append(struct.pack("<I", len(aliases)))
        out += [_pack_string(a) + _pack_string(aliases[a]) for a in sorted(aliases)]
    with open(path, "wb") as f:
        f.write(b"".join(out))


class _Bytes:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, fmt):
        n = struct.calcsize(fmt)
        if self.pos + n > len(self.data):
            raise ValueError(f"model.bin is incomplete: failed to read {n} bytes at position {self.pos}")
        v = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += n
        return v if len(v) > 1 else v[0]

    def raw(self, n):
        if self.pos + n > len(self.data):
            raise ValueError(f"model.bin is incomplete: failed to read a buffer of size {n} at {self.pos}")
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def string(self):  # consume<std::string>: std::string(c_str) stops at the first NUL
        return self.raw(self.take("<H")).split(b"\0", 1)[0].decode("utf-8")


def _read_variable(r, binary_version):
    name = r.string()
    rank = r.take("<B")
    shape = tuple(struct.unpack("<%dI" % rank, r.raw(4 * rank)))
    if binary_version >= 4:
        dtype, nbytes = DTYPES[r.take("<B")], r.take("<I")
    else:
        item = r.take("<B")
        if item not in ITEM_SIZE_DTYPE:
            raise ValueError(f"unknown data type of width {item}")
        dtype, nbytes = ITEM_SIZE_DTYPE[item], r.take("<I") * item
    a = np.frombuffer(r.raw(nbytes), dtype=STORAGE[dtype]).copy()
    if a.size != int(np.prod(shape)):
        raise ValueError(f"{name}: {a.size} values for shape {shape}")
    return name, (dtype, a.reshape(shape))


def read_model_bin(path):
    with open(path, "rb") as f:
        r = _Bytes(f.read())
    out = {"binary_version": r.take("<I"), "spec": "", "revision": 1}
    if out["binary_version"] > CURRENT_BINARY_VERSION:
        raise ValueError(f"unsupported binary version {out['binary_version']}")
    if out["binary_version"] >= 2:
        out["spec"], out["revision"] = r.string(), r.take("<I")
    variables, order = collections.OrderedDict(), []
    for _ in range(r.take("<I")):
        name, var = _read_variable(r, out["binary_version"])
        order.append(name)
        variables.setdefault(name, var)  # emplace: the first of duplicate names is kept
    out["variables"], out["file_order"], out["aliases"] = variables, order, []
    if out["binary_version"] >= 3:
        out["aliases"] = [(r.string(), r.string()) for _ in range(r.take("<I"))]
    out["trailing_bytes"] = len(r.data) - r.pos
    return out


# ----------------------------------------------------------------------------------------------------------
# the converter's optimize(): aliases, then quantization
# ----------------------------------------------------------------------------------------------------------
def alias_variables(variables, mode="equal", tied=()):
    """model_spec.py _alias_variables. mode "equal": every non-scalar variable equal to an earlier (sorted) one
    becomes an alias of the first such; "tied": only pairs listed in `tied` (sets of names); "none"."""
    names, aliases = sorted(variables), {}
    if mode == "none":
        return aliases
    for name in reversed(names):
        dtype, a = variables[name]
        if a.ndim == 0:
            continue
        for other in names:
            if other == name:
                break
            odt, b = variables[other]
            if odt == dtype and a.shape == b.shape and np.array_equal(a, b):
                if mode == "equal" or any(name in g and other in g for g in tied):
                    aliases[name] = other
                    break
    return aliases


def _quantize_weight(values, quantization):
    v = values.astype(np.float32)
    if quantization == "int16":
        scale = np.float32(2 ** 10 / np.amax(np.absolute(v)))
        q = np.clip(np.rint(v * scale), np.iinfo(np.int16).min, np.iinfo(np.int16).max).astype(np.int16)
        return ("int16", q), ("float32", np.array(scale, dtype="<f4"))
    amax = np.amax(np.absolute(v), axis=1)
    amax[amax == 0] = 127.0
    scale = (127.0 / amax).astype(np.float32)
    q = np.rint(v * np.expand_dims(scale, 1)).astype(np.int8)
    return ("int8", q), ("float32", scale.astype("<f4"))


def _convert_other(var, quantization):
    if quantization in ("float16", "int8_float16"):
        target = "float16"
    elif quantization in ("bfloat16", "int8_bfloat16"):
        target = "bfloat16"
    elif quantization in ("float32", "int16", "int8_float32"):
        target = "float32"
    else:  # int8: other floats keep their type
        return var
    return var if var[0] == target else to_storage(decode_storage(var), target)


def quantize_variables(variables, aliases, quantization):
    """model_spec.py _quantize on the non-aliased variables: "weight" variables (LinearSpec / EmbeddingsSpec,
    which have a weight_scale attribute) are quantized or cast, other float variables converted."""
    out = collections.OrderedDict()
    for name in sorted(variables):
        var = variables[name]
        if name in aliases or var[1].ndim == 0 or var[0] not in FLOAT_DTYPES:
            if name not in aliases:
                out[name] = var
            continue
        if name.rsplit("/", 1)[-1] == "weight":
            if quantization in ("int16", "int8", "int8_float32", "int8_float16", "int8_bfloat16"):
                out[name], out[name + "_scale"] = _quantize_weight(decode_storage(var), quantization)
            else:
                out[name] = to_storage(decode_storage(var), quantization) if var[0] != quantization else var
        else:
            out[name] = _convert_other(var, quantization)
    return out


# ----------------------------------------------------------------------------------------------------------
# make: architecture, weights, layout per revision
# ----------------------------------------------------------------------------------------------------------
def opennmt_py_sinusoids(rows, d):
    """OpenNMT-py's PositionalEncoding.pe (onmt/modules/embeddings.py): pe[p, 0::2] = sin(p * div),
    pe[p, 1::2] = cos(p * div), div = exp(-(2i) ln(10000) / d), row p = position p (from 0); float32."""
    pe = np.zeros((rows, d), dtype=np.float32)
    position = np.arange(rows, dtype=np.float32)[:, None]
    div = np.exp(np.arange(0, d, 2, dtype=np.float32) * -(math.log(10000.0) / d)).astype(np.float32)
    pe[:, 0::2] = np.sin(position * div)
    pe[:, 1::2] = np.cos(position * div)
    return pe


def ct2_sinusoids(rows, d):
    """CTranslate2's generated table (layers/common.cc generate_sinusoidal_position_encoding), float64:
    row r = [sin((r+1) ts_j) | cos((r+1) ts_j)], ts_j = exp(-j ln(10000) / (d/2 - 1))."""
    half = d // 2
    ts = np.exp(-np.arange(half) * (math.log(10000.0) / (half - 1)))
    t = (np.arange(rows)[:, None] + 1.0) * ts[None, :]
    return np.concatenate([np.sin(t), np.cos(t)], axis=1)


class _WeightMaker:
    """Builds the float32 tensors of the architecture `A` (an argparse namespace) with the current names."""

    def __init__(self, A, rng):
        self.A, self.rng, self.W = A, rng, collections.OrderedDict()
        self.hd = A.d_model // A.heads
        self.kv = self.hd if A.multi_query else A.d_model

    def normal(self, shape, std):
        return (self.rng.standard_normal(shape) * std).astype(np.float32)

    def norm(self, p):
        self.W[p + "/gamma"] = (1.0 + self.normal(self.A.d_model, 0.1)).astype(np.float32)
        if not self.A.rms_norm:
            self.W[p + "/beta"] = self.normal(self.A.d_model, 0.1)

    def linear(self, p, n_out, n_in, bias, gain=1.5):
        self.W[p + "/weight"] = self.normal((n_out, n_in), gain / math.sqrt(n_in))
        if bias:
            self.W[p + "/bias"] = self.normal(n_out, 0.1)

    def attention(self, p, self_attention):
        d, A = self.A.d_model, self.A
        self.norm(p + "/layer_norm")
        if self_attention:
            self.linear(p + "/linear_0", d + 2 * self.kv, d, A.attn_bias)
            self.linear(p + "/linear_1", d, d, A.attn_bias)
            if A.relative_position:
                keys = self.normal((2 * A.relative_position + 1, self.hd), 0.5)
                self.W[p + "/relative_position_keys"] = keys
                # opennmt_py.py: values = keys; the spec allows two tables (--relative-separate-values)
                self.W[p + "/relative_position_values"] = (self.normal(keys.shape, 0.5) if A.relative_separate_values
                                                           else keys.copy())
        else:
            self.linear(p + "/linear_0", d, d, A.attn_bias)
            self.linear(p + "/linear_1", 2 * self.kv, d, A.attn_bias)
            self.linear(p + "/linear_2", d, d, A.attn_bias)

    def ffn(self, p):
        d, A = self.A.d_model, self.A
        self.norm(p + "/layer_norm")
        self.linear(p + "/linear_0", A.ffn, d, A.ffn_bias)
        if A.ffn_glu:
            self.linear(p + "/linear_0_noact", A.ffn, d, A.ffn_bias)
        self.linear(p + "/linear_1", d, A.ffn, A.ffn_bias, gain=1.0)

    def positions(self, p):
        A = self.A
        if A.positions == "stored-sinusoidal":
            self.W[p + "/position_encodings/encodings"] = opennmt_py_sinusoids(A.max_positions, A.d_model)
        elif A.positions == "learned":
            self.W[p + "/position_encodings/encodings"] = self.normal((A.max_positions, A.d_model), 0.5)

    def stack(self, side, n_layers):
        A = self.A
        if not A.relative_position and not (side == "decoder" and (A.rotary or A.alibi)):
            self.positions(side)
        if A.norm == "pre" and not A.no_final_norm:
            self.norm(side + "/layer_norm")
        if A.layernorm_embedding:
            self.norm(side + "/layernorm_embedding")
        for i in range(n_layers):
            self.attention(f"{side}/layer_{i}/self_attention", True)
            if side == "decoder":
                self.attention(f"{side}/layer_{i}/attention", False)
            self.ffn(f"{side}/layer_{i}/ffn")


def make_weights(A, rng, n_src, n_tgt, eos_id):
    """name -> float32 array (current names); also the sets of names that are tied."""
    m = _WeightMaker(A, rng)
    emb_std = 1.0 / math.sqrt(A.d_model) if A.scale_embeddings else 1.0
    m.W["decoder/embeddings/weight"] = m.normal((n_tgt, A.d_model), emb_std)
    m.W["encoder/embeddings_0/weight"] = (m.W["decoder/embeddings/weight"].copy() if A.share_embeddings
                                          else m.normal((n_src, A.d_model), emb_std))
    m.stack("encoder", A.layers)
    m.stack("decoder", A.decoder_layers)
    m.W["decoder/projection/weight"] = (m.W["decoder/embeddings/weight"].copy() if A.tie_projection
                                        else m.normal((n_tgt, A.d_model), 2.0 / math.sqrt(A.d_model)))
    if A.projection_bias:
        b = m.normal(n_tgt, 0.1)
        b[eos_id] += np.float32(A.eos_bias)
        m.W["decoder/projection/bias"] = b
    tied = [{"decoder/embeddings/weight", "decoder/projection/weight", "encoder/embeddings_0/weight"}]
    tied += [{n, n.replace("_values", "_keys")} for n in m.W if n.endswith("relative_position_values")]
    return m.W, tied


def _scale_attribute(A):
    if A.scale_embeddings_float:
        return scalar(math.sqrt(A.d_model) if A.scale_embeddings else 1.0, "float32")
    return scalar(A.scale_embeddings, "int8")


def _attention_attributes(A):
    """Scalar attributes of the attention specs (attention_spec.py) for the refused features."""
    out = collections.OrderedDict()
    scopes = [f"encoder/layer_{i}/self_attention" for i in range(A.layers)]
    dec = [f"decoder/layer_{i}/self_attention" for i in range(A.decoder_layers)]
    cross = [f"decoder/layer_{i}/attention" for i in range(A.decoder_layers)]
    for s in (scopes + dec + cross) if A.multi_query else []:
        out[s + "/num_heads_kv"] = scalar(1, "int32")
    for s in (scopes + dec) if A.rotary else []:
        out[s + "/rotary_dim"] = scalar(0, "int32")
        out[s + "/rotary_interleave"] = scalar(1, "int8")
        out[s + "/rotary_base"] = scalar(10000.0, "float32")
    return out


def scalar_attributes(A, revision):
    """The spec's scalar attributes as the TransformerSpec of that revision lays them out."""
    act, heads, pre = ACTIVATIONS[A.activation], A.heads, A.norm == "pre"
    out = collections.OrderedDict()
    if revision >= 5:
        for side in ("encoder", "decoder"):
            out[side + "/num_heads"] = scalar(heads, "int16")
            out[side + "/pre_norm"] = scalar(pre, "int8")
            out[side + "/activation"] = scalar(act, "int8")
            out[side + "/scale_embeddings"] = _scale_attribute(A)
        out["encoder/embeddings_merge"] = scalar(0, "int8")
        out["decoder/alignment_layer"] = scalar(-1, "int16")
        out["decoder/alignment_heads"] = scalar(1, "int16")
        out["decoder/start_from_zero_embedding"] = scalar(0, "int8")
        if revision >= 7:
            out["encoder/multi_query_attention"] = scalar(A.multi_query, "int8")
            out["decoder/alibi"] = scalar(A.alibi, "int8")
            out["decoder/alibi_use_positive_positions"] = scalar(0, "int8")
            out["decoder/scale_alibi"] = scalar(0, "int8")
    elif revision == 4:
        for k, v, t in (("num_heads", heads, "int8"), ("pre_norm", pre, "int8"), ("activation", act, "int8"),
                        ("alignment_layer", -1, "int16"), ("alignment_heads", 1, "int16"),
                        ("with_relative_position", bool(A.relative_position), "int8"),
                        ("embeddings_merge", 0, "int8"), ("layernorm_embedding", A.layernorm_embedding, "int8")):
            out[k] = scalar(v, t)
        out["encoder/scale_embeddings"] = out["decoder/scale_embeddings"] = _scale_attribute(A)
        out["decoder/start_from_zero_embedding"] = scalar(0, "int8")
    else:
        if revision == 3:
            out["num_heads"] = scalar(heads, "int8")
            out["with_relative_position"] = scalar(bool(A.relative_position), "int8")
        if revision == 3 or not pre:  # revision 2 had neither: written only when needed (see the docstring)
            out["pre_norm"] = scalar(pre, "int8")
        if revision == 3 or act:
            out["activation"] = scalar(act, "int8")
        if not A.scale_embeddings:
            for side in ("encoder", "decoder"):
                out[side + "/embeddings/multiply_by_sqrt_depth"] = scalar(0, "int8")
    out.update(_attention_attributes(A))
    return out


def legacy_config_attributes(cfg):
    """Binary version < 6: the SequenceToSequenceModelSpec attributes of CTranslate2 2.x."""
    start = cfg["decoder_start_token"]
    if start not in (None, cfg["bos_token"], cfg["eos_token"]):
        raise SystemExit(f"make: binary version < 6 can only start from bos or eos (or none), not {start!r}")
    out = collections.OrderedDict()
    for k in ("unk_token", "bos_token", "eos_token"):
        out[k] = string_attribute(cfg[k])
    out["with_source_bos"] = scalar(cfg["add_source_bos"], "int8")
    out["with_source_eos"] = scalar(cfg["add_source_eos"], "int8")
    out["with_target_bos"] = scalar(start == cfg["bos_token"], "int8")
    out["user_decoder_start_tokens"] = scalar(start is None, "int8")
    return out


def spec_name(A, revision):
    if revision >= 3:
        return "TransformerSpec"
    if A.heads not in (8, 16):
        raise SystemExit("make: revision < 3 has no num_heads attribute: the spec name carries it, --heads 8 "
                         "(TransformerBase) or 16 (TransformerBig)")
    return "TransformerBase" if A.heads == 8 else "TransformerBig"


def layout_variables(A, W, revision):
    """float32 tensors renamed for the revision (<= 3: encoder/embeddings, not embeddings_0) + attributes."""
    out = collections.OrderedDict()
    for name, arr in W.items():
        if revision <= 3:
            name = name.replace("encoder/embeddings_0/", "encoder/embeddings/")
        out[name] = to_storage(arr, "float32")
    out.update(scalar_attributes(A, revision))
    return out


# ----------------------------------------------------------------------------------------------------------
# make: vocabularies, SentencePiece, config.json, Argos package
# ----------------------------------------------------------------------------------------------------------
SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in ("a", "e", "i", "o", "u", "ai", "ou")]


def generated_words(rng, n, prefix=""):
    words, seen = [], set()
    while len(words) < n:
        w = prefix + "".join(rng.choice(SYLLABLES) for _ in range(int(rng.integers(1, 4))))
        if w not in seen:
            seen.add(w)
            words.append(w)
    return words


def whitespace_vocabularies(A, rng, specials):
    n = A.vocab_size - len(specials)
    if n < 4:
        raise SystemExit("make: --vocab-size must leave room for words after the special tokens")
    src = specials + generated_words(rng, n)
    tgt = src if A.vocab == "shared" else specials + generated_words(rng, n, prefix="")
    if A.vocab == "separate":
        while tgt[len(specials):] == src[len(specials):]:
            tgt = specials + generated_words(rng, n)
    return src, tgt


def training_sentences(rng, n=400):
    words = generated_words(rng, 160)
    extra = ["Hello", "world", "Zürich", "café", "naïve", "übermäßig", "I'm", "it's", "résumé"]
    out = []
    for _ in range(n):
        k = int(rng.integers(3, 12))
        ws = [words[int(i)] for i in rng.integers(0, len(words), k)]
        if rng.random() < 0.3:
            ws.insert(int(rng.integers(0, k)), extra[int(rng.integers(0, len(extra)))])
        s = " ".join(ws)
        out.append(s[0].upper() + s[1:] + rng.choice([".", "?", "!", ",", ""]))
    return out


def train_sentencepiece(path, sentences, n_pieces):
    """A tiny unigram SentencePiece model (<unk>=0, <s>=1, </s>=2), written to `path`."""
    tmp, cwd = tempfile.mkdtemp(prefix="ct2ref_spm_"), os.getcwd()
    try:  # relative file names: the model's trainer_spec records them (same bytes on every run)
        os.chdir(tmp)
        with open("train.txt", "w", encoding="utf-8") as f:
            f.write("\n".join(sentences) + "\n")
        spm.SentencePieceTrainer.train(input="train.txt", model_prefix="m", vocab_size=n_pieces,
                                       model_type="unigram", character_coverage=1.0, num_threads=1, unk_id=0,
                                       bos_id=1, eos_id=2, pad_id=-1, hard_vocab_limit=False, minloglevel=2)
    finally:
        os.chdir(cwd)
    try:
        shutil.copyfile(os.path.join(tmp, "m.model"), path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return spm.SentencePieceProcessor(model_file=path)


def spm_vocabulary(sp, rng, specials):
    """specials first (as OpenNMT-py's vocabulary), then SentencePiece's pieces without its <unk>/<s>/</s>, in a
    seeded random order: CTranslate2 ids are not SentencePiece ids."""
    pieces = [sp.id_to_piece(i) for i in range(len(sp)) if not (sp.is_control(i) or sp.is_unknown(i))]
    return specials + [pieces[int(j)] for j in rng.permutation(len(pieces))]


def write_vocabulary(path_no_ext, tokens, fmt):
    if fmt == "json":  # model_spec.py _save_vocabulary: json.dump(tokens, indent=2), ASCII escapes
        with open(path_no_ext + ".json", "w", encoding="utf-8") as f:
            json.dump(tokens, f, indent=2)
    else:
        with open(path_no_ext + ".txt", "w", encoding="utf-8", newline="") as f:
            f.write("".join(t + "\n" for t in tokens))


def converter_config(A):
    cfg = collections.OrderedDict(DEFAULT_CONFIG)
    cfg["decoder_start_token"] = None if A.decoder_start_token == "none" else A.decoder_start_token
    cfg["add_source_bos"], cfg["add_source_eos"] = A.add_source_bos, A.add_source_eos
    cfg["layer_norm_epsilon"] = A.eps
    if A.spec_revision >= 7:
        cfg["multi_query_attention"] = bool(A.multi_query)
    return cfg


def write_config(path, cfg):
    with open(path, "w", encoding="utf-8") as f:  # ModelConfig.save_as_json
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")


def argos_metadata(A):
    return collections.OrderedDict([
        ("package_version", "1.0"), ("argos_version", "1.0"), ("from_code", A.from_code),
        ("from_name", LANG_NAMES.get(A.from_code, A.from_code)), ("to_code", A.to_code),
        ("to_name", LANG_NAMES.get(A.to_code, A.to_code))])


def write_argos_dir(pkg_dir, model_dir, A):
    """The installed form: metadata.json, README.md, sentencepiece.model, model/ (package.py)."""
    os.makedirs(pkg_dir, exist_ok=True)
    shutil.copytree(model_dir, os.path.join(pkg_dir, "model"), ignore=shutil.ignore_patterns("sentencepiece.model"))
    shutil.copyfile(os.path.join(model_dir, "sentencepiece.model"), os.path.join(pkg_dir, "sentencepiece.model"))
    with open(os.path.join(pkg_dir, "metadata.json"), "w", encoding="utf-8") as f:
        json.dump(argos_metadata(A), f, indent=4)
    with open(os.path.join(pkg_dir, "README.md"), "w", encoding="utf-8") as f:
        f.write(f"# {A.from_code} -> {A.to_code}\n\nRandom weights written by scripts/ct2_reference.py "
                f"(seed {A.seed}); for tests only.\n")


def write_argos_zip(zip_path, model_dir, A):
    """A .argosmodel: a zip of one top-level folder (install_from_path extracts it into the packages dir)."""
    top = f"translate-{A.from_code}_{A.to_code}-1_0"
    tmp = tempfile.mkdtemp(prefix="ct2ref_argos_")
    try:
        write_argos_dir(os.path.join(tmp, top), model_dir, A)
        with zipfile.ZipFile(zip_path, "w", zipfile.ZIP_DEFLATED) as z:
            for root, dirs, files in os.walk(os.path.join(tmp, top)):
                dirs.sort()
                rel = os.path.relpath(root, tmp)
                z.write(root, rel + "/")
                for fn in sorted(files):
                    z.write(os.path.join(root, fn), os.path.join(rel, fn))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return top


def _check_make_args(A):
    if A.decoder_layers is None:
        A.decoder_layers = A.layers
    if A.relative_position:  # opennmt_py.py set_input_layers: no position_encodings -> scale_embeddings False
        A.scale_embeddings = False
    if A.d_model % A.heads:
        raise SystemExit("make: --d-model must be a multiple of --heads")
    if A.positions.startswith("sinusoid") and A.d_model % 4:
        raise SystemExit("make: sinusoidal positions need an even d_model / 2")
    if A.share_embeddings and A.vocab != "shared":
        raise SystemExit("make: --share-embeddings needs --vocab shared")
    if A.eos_bias and not A.projection_bias:
        raise SystemExit("make: --eos-bias adds to decoder/projection/bias: drop --no-projection-bias")
    if (A.argos or A.argos_dir) and not A.spm:
        raise SystemExit("make: an Argos package needs --spm (Argos tokenizes with sentencepiece.model)")
    if A.binary_version < 4 and A.dtype not in ("float32", "int16", "int8", "int8_float32"):
        raise SystemExit(f"make: binary version {A.binary_version} stores item sizes, not dtypes: "
                         f"{A.dtype} cannot be written (float16 would read back as int16)")
    if A.spec_revision <= 3 and A.scale_embeddings_float:
        raise SystemExit("make: revisions <= 3 have no scale_embeddings attribute")
    if not 2 <= A.spec_revision <= CURRENT_REVISION or not 2 <= A.binary_version <= CURRENT_BINARY_VERSION:
        raise SystemExit("make: --spec-revision 2..7, --binary-version 2..6")


def _vocabularies(A, rng, specials):
    if not A.spm:
        return whitespace_vocabularies(A, rng, specials), None
    path = os.path.join(A.out, "sentencepiece.model")
    A.training_sentences = training_sentences(rng)
    sp = train_sentencepiece(path, A.training_sentences, max(A.vocab_size - len(specials) + 3, 16))
    v = spm_vocabulary(sp, rng, specials)
    return (v, v if A.vocab == "shared" else spm_vocabulary(sp, rng, specials)), sp


def _write_vocabularies(A, src, tgt):
    if src == tgt:
        write_vocabulary(os.path.join(A.out, "shared_vocabulary"), src, A.vocab_format)
        return ["shared_vocabulary." + A.vocab_format]
    write_vocabulary(os.path.join(A.out, "source_vocabulary"), src, A.vocab_format)
    write_vocabulary(os.path.join(A.out, "target_vocabulary"), tgt, A.vocab_format)
    return ["source_vocabulary." + A.vocab_format, "target_vocabulary." + A.vocab_format]


def _sample_sentences(A, rng, src, sp):
    words = [t for t in src if not t.startswith("<")]
    if sp is not None:  # sentences of the SentencePiece training text, and one with characters it never saw
        return A.training_sentences[:5] + ["Zürich ist übermäßig schön."]
    out = [" ".join(words[int(i)] for i in rng.integers(0, len(words), int(rng.integers(2, 8)))) for _ in range(4)]
    return out + [words[0] + " qqqunknownqqq " + words[1]]


def build_variables(A, cfg, src, tgt, unk=None):
    if A.decoder_layers is None:
        A.decoder_layers = A.layers
    rng = np.random.default_rng(A.seed)
    n_src, n_tgt = len(src) + (unk not in src and unk is not None), len(tgt) + (unk not in tgt and unk is not None)
    W, tied = make_weights(A, rng, n_src, n_tgt, tgt.index(cfg["eos_token"]))
    V = layout_variables(A, W, A.spec_revision)
    if A.binary_version < 6:
        V.update(legacy_config_attributes(cfg))
    if A.spec_revision <= 3:
        tied = [{n.replace("embeddings_0", "embeddings") for n in g} for g in tied]
    mode = "none" if (A.alias == "none" or A.binary_version < 3) else A.alias
    aliases = alias_variables(V, mode, tied)
    return quantize_variables(V, aliases, A.dtype), aliases


def cmd_make(A):
    _check_make_args(A)
    if os.path.exists(A.out):
        if os.listdir(A.out) and not os.path.exists(os.path.join(A.out, "model.bin")):
            raise SystemExit(f"make: {A.out} exists, is not empty and holds no model.bin: not replaced")
        shutil.rmtree(A.out)
    os.makedirs(A.out)
    specials = A.specials.split()
    rng = np.random.default_rng(A.seed + 1000)
    (src, tgt), sp = _vocabularies(A, rng, specials)
    cfg = converter_config(A)
    for k in ("bos_token", "eos_token"):
        if cfg[k] not in tgt:
            raise SystemExit(f"make: {cfg[k]!r} is not in the vocabulary (--specials)")
    # A vocabulary without the unk token (--specials without <unk>): the embeddings have a row more, the one
    # of the <unk> that vocabulary.cc appends (as a real trained model's files are).
    variables, aliases = build_variables(A, cfg, src, tgt, cfg["unk_token"])
    write_model_bin(os.path.join(A.out, "model.bin"), spec_name(A, A.spec_revision), A.spec_revision, variables,
                    aliases, A.binary_version)
    files = _write_vocabularies(A, src, tgt)
    if A.config == "yes" or (A.config == "auto" and A.binary_version >= 6):
        write_config(os.path.join(A.out, "config.json"), cfg)
        files.append("config.json")
    if A.sample_sentences:
        with open(A.sample_sentences, "w", encoding="utf-8") as f:
            f.write("\n".join(_sample_sentences(A, rng, src, sp)) + "\n")
    msg = ""
    if A.argos_dir:
        shutil.rmtree(A.argos_dir, ignore_errors=True)
        write_argos_dir(A.argos_dir, A.out, A)
        msg += f"; Argos folder {A.argos_dir}"
    if A.argos:
        msg += f"; Argos package {A.argos} (folder {write_argos_zip(A.argos, A.out, A)}/)"
    print(f"make: {A.out}: {spec_name(A, A.spec_revision)} revision {A.spec_revision}, binary version "
          f"{A.binary_version}, {A.dtype}, {len(variables)} variables, {len(aliases)} aliases, vocabulary "
          f"{len(src)}/{len(tgt)} ({', '.join(files)}){msg}")


# ----------------------------------------------------------------------------------------------------------
# reading a model directory (the C++ loader's view)
# ----------------------------------------------------------------------------------------------------------
def load_vocabulary(model_dir, stem, unk):
    for ext in ("json", "txt"):
        path = os.path.join(model_dir, f"{stem}.{ext}")
        if not os.path.exists(path):
            continue
        if ext == "json":
            with open(path, encoding="utf-8") as f:
                tokens = json.load(f)
        else:
            with open(path, "rb") as f:
                lines = f.read().decode("utf-8").split("\n")
            if lines and lines[-1] == "":
                lines.pop()
            if lines and all(x.endswith("\r") for x in lines):
                lines = [x[:-1] for x in lines]
            tokens = lines
        return _Vocabulary(tokens, unk, f"{stem}.{ext}")
    return None


class _Vocabulary:
    """src/vocabulary.cc: token -> first id; the unk token appended when missing."""

    def __init__(self, tokens, unk, filename):
        self.tokens, self.ids, self.file = list(tokens), {}, filename
        for i, t in enumerate(self.tokens):
            self.ids.setdefault(t, i)
        self.unk_appended = unk not in self.ids
        if self.unk_appended:
            self.ids[unk] = len(self.tokens)
            self.tokens.append(unk)
        self.unk = unk

    def to_id(self, token):
        return self.ids.get(token, self.ids[self.unk])

    def __len__(self):
        return len(self.tokens)


class CT2Model:
    """A CTranslate2 TransformerSpec directory as the C++ runtime sees it (float64 torch tensors)."""

    def __init__(self, model_dir):
        self.dir, self.notes = model_dir, []
        mb = read_model_bin(os.path.join(model_dir, "model.bin"))
        self.binary_version, self.spec, self.revision = mb["binary_version"], mb["spec"], mb["revision"]
        self.stored, self.alias_list = mb["variables"], mb["aliases"]
        if self.spec not in SPEC_NAME_HEADS and self.spec != "TransformerSpec":
            raise RefusedError(f"spec {self.spec!r} is not a Transformer encoder-decoder")
        if self.revision == 1:
            raise RefusedError("spec revision 1 (OpenNMT-tf V1 variable names) is not implemented here")
        if self.revision > CURRENT_REVISION:
            raise RefusedError(f"spec revision {self.revision} > {CURRENT_REVISION}")
        self.vars = collections.OrderedDict(self.stored)
        for alias, target in self.alias_list:  # model.cc: after the variables; the _scale alias too
            for a, t in ((alias, target), (alias + "_scale", target + "_scale")):
                if t in self.vars:
                    self.vars.setdefault(a, self.vars[t])
        self._legacy_names()
        self._load_config()
        self._load_vocabularies()
        self.enc = self._side("encoder")
        self.dec = self._side("decoder")
        self._check_supported()

    # ---- variables and attributes ----
    def _legacy_names(self):
        """transformer.cc TransformerModel::initialize."""
        if self.revision < 3:
            heads = SPEC_NAME_HEADS.get(self.spec, 0)
            if not heads:
                raise RefusedError(f"revision {self.revision} with spec {self.spec!r}: no head count")
            self.vars.setdefault("num_heads", scalar(heads, "int8"))
        if self.revision < 5:
            for side, keys in (("encoder", ("num_heads", "pre_norm", "activation", "embeddings_merge")),
                               ("decoder", ("num_heads", "pre_norm", "activation", "alignment_layer",
                                            "alignment_heads"))):
                for k in keys:
                    if k in self.vars:
                        self.vars.setdefault(f"{side}/{k}", self.vars[k])

    def has(self, name):
        return name in self.vars

    def attr(self, name, default):
        if name not in self.vars:
            return default
        dtype, a = self.vars[name]
        v = decode_storage((dtype, a)).reshape(-1)[0]
        return float(v) if dtype in FLOAT_DTYPES else int(v)

    def attr_string(self, name, default):
        if name not in self.vars:
            return default
        return self.vars[name][1].astype(np.uint8).tobytes().decode("utf-8")

    def tensor(self, name, required=True):
        """float64 values, int8 / int16 dequantized with <name>_scale."""
        if name not in self.vars:
            if required:
                raise KeyError(f"variable {name} not found")
            return None
        dtype, a = self.vars[name]
        v = decode_storage((dtype, a))
        if dtype in ("int8", "int16"):
            s = self.vars.get(name + "_scale")
            if s is None and dtype == "int8":
                raise KeyError(f"variable {name}_scale not found")
            s = decode_storage(s) if s is not None else np.float64(GLOBAL_INT16_SCALE)
            v = v / (s.reshape(-1, 1) if s.ndim else s)
        return torch.from_numpy(np.ascontiguousarray(v))

    # ---- config and vocabularies ----
    def _load_config(self):
        path = os.path.join(self.dir, "config.json")
        cfg = collections.OrderedDict()
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                cfg.update(json.load(f))
            self.config_source = "config.json"
        if self.binary_version < 6:  # sequence_to_sequence.cc initialize
            for k in ("unk_token", "bos_token", "eos_token"):
                cfg[k] = self.attr_string(k, DEFAULT_CONFIG[k])
            cfg["add_source_bos"] = bool(self.attr("with_source_bos", 0))
            cfg["add_source_eos"] = bool(self.attr("with_source_eos", 0))
            if self.attr("user_decoder_start_tokens", 0):
                cfg["decoder_start_token"] = None
            else:
                cfg["decoder_start_token"] = cfg["bos_token" if self.attr("with_target_bos", 1) else "eos_token"]
            self.config_source = "model.bin attributes (binary version < 6)"
        elif not os.path.exists(path):
            self.config_source = "defaults (no config.json)"
            self.notes.append("no config.json with binary version 6: SequenceToSequenceModelConfig's defaults "
                              "used (CTranslate2 itself reads config[\"unk_token\"] from an empty JSON here)")
        for k, v in DEFAULT_CONFIG.items():
            cfg.setdefault(k, v)
        self.config = cfg

    def _load_vocabularies(self):
        unk = self.config["unk_token"]
        shared = load_vocabulary(self.dir, "shared_vocabulary", unk)
        if shared is not None:
            self.src_vocab = self.tgt_vocab = shared
            return
        self.tgt_vocab = load_vocabulary(self.dir, "target_vocabulary", unk)
        self.src_vocab = (load_vocabulary(self.dir, "source_vocabulary", unk)
                          or load_vocabulary(self.dir, "source_1_vocabulary", unk))
        if self.tgt_vocab is None or self.src_vocab is None:
            raise RefusedError("cannot load the vocabularies of " + self.dir)
        if load_vocabulary(self.dir, "source_2_vocabulary", unk) is not None:
            raise RefusedError("source features (source_2_vocabulary) are not implemented here")

    # ---- per side settings ----
    def _scale(self, s, d):
        var = self.vars.get(s + "/scale_embeddings") or self.vars.get(s + "/embeddings/multiply_by_sqrt_depth")
        if var is None or (var[0] == "int8" and int(var[1]) != 0):
            return math.sqrt(d)  # CTranslate2: sqrt(float(d)) in float32 (relative difference < 6e-8)
        if var[0] != "int8" and float(decode_storage(var)) != 1.0:
            return float(decode_storage(var))
        return None

    def _norm_params(self, p):
        if not self.has(p + "/gamma"):
            return None
        return {"gamma": self.tensor(p + "/gamma"), "beta": self.tensor(p + "/beta", required=False)}

    def _linear(self, p, required=True):
        if not self.has(p + "/weight"):
            if required:
                raise KeyError(f"variable {p}/weight not found")
            return None
        return {"w": self.tensor(p + "/weight"), "b": self.tensor(p + "/bias", required=False)}

    def _attention(self, p, heads, self_attention):
        n_linear = 2 if self_attention else 3
        L = {"ln": self._norm_params(p + "/layer_norm"),
             "lin": [self._linear(f"{p}/linear_{i}") for i in range(n_linear)],
             "rel_k": self.tensor(p + "/relative_position_keys", required=False),
             "rel_v": self.tensor(p + "/relative_position_values", required=False)}
        d = L["lin"][-1]["w"].shape[0]
        L["heads"] = heads
        L["head_dim"] = self.attr(p + "/head_dim", d // heads)
        L["queries_scale"] = self.attr(p + "/queries_scale", 1.0 / math.sqrt(L["head_dim"]))  # C++: float32
        L["heads_kv"] = 1 if self.attr(p + "/multi_query", 0) else self.attr(p + "/num_heads_kv", heads)
        L["rotary"] = self.has(p + "/rotary_dim")
        L["relative_bias"] = self.has(p + "/relative_attention_bias")
        L["scope"] = p
        return L

    def _layers(self, s, heads):
        out, i = [], 0
        while self.has(f"{s}/layer_{i}/ffn/linear_0/weight"):
            L = {"self": self._attention(f"{s}/layer_{i}/self_attention", heads, True),
                 "ffn": {"ln": self._norm_params(f"{s}/layer_{i}/ffn/layer_norm"),
                         "lin0": self._linear(f"{s}/layer_{i}/ffn/linear_0"),
                         "noact": self._linear(f"{s}/layer_{i}/ffn/linear_0_noact", required=False),
                         "lin1": self._linear(f"{s}/layer_{i}/ffn/linear_1")}}
            if self.has(f"{s}/layer_{i}/attention/linear_0/weight"):
                L["cross"] = self._attention(f"{s}/layer_{i}/attention", heads, False)
            out.append(L)
            i += 1
        return out

    def _embeddings(self, s):
        if s == "decoder" or self.has("encoder/embeddings/weight"):
            return self.tensor(s + "/embeddings/weight")
        if self.has("encoder/embeddings_1/weight"):
            raise RefusedError("several source embeddings (source features) are not implemented here")
        return self.tensor("encoder/embeddings_0/weight")

    def _positions(self, s, layers, d):
        a = layers[0]["self"]
        if a["rel_k"] is not None or a["rotary"] or a["relative_bias"] or (s == "decoder" and self.attr(
                "decoder/alibi", 0)):
            return "none (relative positions)", None
        table = self.tensor(s + "/position_encodings/encodings", required=False)
        if table is not None:
            return "stored", table
        return "sinusoidal", torch.from_numpy(ct2_sinusoids(512, d))

    def _side(self, s):
        heads = self.attr(s + "/num_heads", 8)
        emb = self._embeddings(s)
        d = emb.shape[1]
        S = {"name": s, "emb": emb, "d": d, "heads": heads, "pre_norm": bool(self.attr(s + "/pre_norm", 1)),
             "activation_id": self.attr(s + "/activation", 0), "scale": self._scale(s, d),
             "final_norm": self._norm_params(s + "/layer_norm"),
             "ln_emb": self._norm_params(s + "/layernorm_embedding"), "layers": self._layers(s, heads)}
        if not S["layers"]:
            raise RefusedError(f"no {s} layers")
        S["positions_kind"], S["positions"] = self._positions(s, S["layers"], d)
        if s == "decoder":
            S["proj"] = self._linear("decoder/projection")
            S["project_in"] = self._linear("decoder/project_in", required=False)
            S["project_out"] = self._linear("decoder/project_out", required=False)
            S["scale_outputs"] = self.tensor("decoder/scale_outputs", required=False)
            S["zero_start"] = bool(self.attr("decoder/start_from_zero_embedding", 0))
            S["alignment_layer"] = self.attr("decoder/alignment_layer", -1)
            S["alignment_heads"] = self.attr("decoder/alignment_heads", 1)
        return S

    def _check_supported(self):
        for S in (self.enc, self.dec):
            for L in S["layers"]:
                for a in [L["self"]] + ([L["cross"]] if "cross" in L else []):
                    if a["rotary"]:
                        raise RefusedError(f"{a['scope']}: rotary embeddings are not implemented here")
                    if a["relative_bias"]:
                        raise RefusedError(f"{a['scope']}: relative attention bias (T5) is not implemented here")
        if self.attr("decoder/alibi", 0):
            raise RefusedError("decoder/alibi: ALiBi is not implemented here")
        for S in (self.enc, self.dec):
            if S["activation_id"] not in ACTIVATIONS.values():
                raise RefusedError(f"{S['name']}/activation {S['activation_id']} is not an Activation value")
        eps = self.config.get("layer_norm_epsilon")
        self.eps_source = "config.json layer_norm_epsilon" if eps is not None else "default"
        self.eps = float(np.float32(eps)) if eps is not None else None


# ----------------------------------------------------------------------------------------------------------
# forward (float64)
# ----------------------------------------------------------------------------------------------------------
def activation(act_id):
    if act_id == 0:
        return F.relu
    if act_id == 1:
        return lambda x: 0.5 * x * (1.0 + torch.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))
    if act_id == 2:
        return lambda x: x * torch.sigmoid(x)
    if act_id == 3:
        return lambda x: 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))
    if act_id == 4:
        return lambda x: x * torch.sigmoid(1.702 * x)
    return torch.tanh if act_id == 5 else torch.sigmoid


def onmt_generate_relative_positions_matrix(length, max_relative_positions, cache=False):
    """OpenNMT-py onmt/utils/misc.py generate_relative_positions_matrix, as written there: the clipped offset
    j - i (+ max_relative_positions) of every (query i, key j) of `length` positions, [length, length]; with
    cache (a decoding step: one query, the last of `length`): [1, length], offsets -(length-1)..0."""
    if cache:
        distance_mat = torch.arange(-length + 1, 1, 1).unsqueeze(0)
    else:
        range_vec = torch.arange(length)
        range_mat = range_vec.unsqueeze(-1).expand(-1, length).transpose(0, 1)
        distance_mat = range_mat - range_mat.transpose(0, 1)
    distance_mat_clipped = torch.clamp(distance_mat, min=-max_relative_positions, max=max_relative_positions)
    return distance_mat_clipped + max_relative_positions


def onmt_relative_matmul(x, z, transpose):
    """OpenNMT-py onmt/utils/misc.py relative_matmul (CTranslate2's matmul_with_relative_representations):
    x [batch, heads, length, n] times z[i] for each query i (z [length, keys, d]; transposed: z[i]^T)."""
    batch_size, heads, length = x.shape[0], x.shape[1], x.shape[2]
    x_t_r = x.permute(2, 0, 1, 3).reshape(length, heads * batch_size, -1)
    x_tz_matmul = torch.matmul(x_t_r, z.transpose(1, 2) if transpose else z)
    return x_tz_matmul.reshape(length, batch_size, heads, -1).permute(1, 2, 0, 3)


def relative_positions_for(tq, tk, n):
    """The positions matrix of tq queries over tk keys as OpenNMT-py builds it: the full matrix when every key
    position is a query (an encoder, a whole causal decoder pass), the cache=True row for a decoding step
    (tq = 1); other shapes do not occur here."""
    if tq == tk:
        return onmt_generate_relative_positions_matrix(tk, n)
    if tq == 1:
        return onmt_generate_relative_positions_matrix(tk, n, cache=True)
    raise RefusedError(f"relative positions for {tq} queries over {tk} keys")


class Forward:
    """The forward pass of a CT2Model: encoder, full causal decoder pass, maps."""

    def __init__(self, model):
        self.m = model

    def eps(self, p):
        if self.m.eps is not None:
            return self.m.eps
        return 1e-5 if p["beta"] is not None else 1e-6

    def norm(self, x, p):
        if p["beta"] is not None:
            return F.layer_norm(x, (x.shape[-1],), p["gamma"], p["beta"], self.eps(p))
        return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + self.eps(p)) * p["gamma"]

    @staticmethod
    def linear(x, lin):
        return F.linear(x, lin["w"], lin["b"])

    @staticmethod
    def _rel_positions(tq, tk, n):
        i = torch.arange(tq)[:, None] + (tk - tq)
        return torch.clamp(torch.arange(tk)[None, :] - i, -n, n) + n

    def _project(self, a, q_in, memory):
        H, hd, kvh = a["heads"], a["head_dim"], a["heads_kv"]
        if memory is None:
            q, k, v = torch.split(self.linear(q_in, a["lin"][0]), [H * hd, kvh * hd, kvh * hd], dim=-1)
        else:
            q = self.linear(q_in, a["lin"][0])
            k, v = torch.split(self.linear(memory, a["lin"][1]), [kvh * hd, kvh * hd], dim=-1)
        q = q.view(q.shape[0], H, hd).transpose(0, 1)
        k = k.view(k.shape[0], kvh, hd).transpose(0, 1).repeat_interleave(H // kvh, dim=0)
        v = v.view(v.shape[0], kvh, hd).transpose(0, 1).repeat_interleave(H // kvh, dim=0)
        return q, k, v

    def attention(self, a, x, memory=None, causal=False):
        """layers/attention.cc MultiHeadAttention: (output incl. residual / norm, probabilities [H, Tq, Tk])."""
        pre = a["pre_norm"]
        q_in = self.norm(x, a["ln"]) if (a["ln"] is not None and pre) else x
        q, k, v = self._project(a, q_in, memory)
        s = torch.matmul(q, k.transpose(1, 2)) * a["queries_scale"]
        tq, tk = s.shape[1], s.shape[2]
        if a["rel_k"] is not None:  # OpenNMT-py MultiHeadedAttention.forward: query_key + relative_matmul(...)
            pos = relative_positions_for(tq, tk, (a["rel_k"].shape[0] - 1) // 2)
            s = s + onmt_relative_matmul(q.unsqueeze(0), a["rel_k"][pos], True)[0] * a["queries_scale"]
        if causal:
            allowed = torch.arange(tk)[None, :] <= torch.arange(tq)[:, None] + (tk - tq)
            s = s.masked_fill(~allowed, float("-inf"))
        p = torch.softmax(s, dim=-1)
        o = torch.matmul(p, v)
        if a["rel_v"] is not None:  # context_original + relative_matmul(drop_attn, relations_values, False)
            o = o + onmt_relative_matmul(p.unsqueeze(0), a["rel_v"][pos], False)[0]
        out = self.linear(o.transpose(0, 1).reshape(tq, -1), a["lin"][-1])
        if a["ln"] is not None:
            out = x + out
            if not pre:
                out = self.norm(out, a["ln"])
        return out, p

    def ffn(self, f, x, pre, act):
        h = self.norm(x, f["ln"]) if (f["ln"] is not None and pre) else x
        inner = act(self.linear(h, f["lin0"]))
        if f["noact"] is not None:
            inner = inner * self.linear(h, f["noact"])
        out = self.linear(inner, f["lin1"])
        if f["ln"] is not None:
            out = x + out
            if not pre:
                out = self.norm(out, f["ln"])
        return out

    def embed(self, S, ids):
        x = S["emb"][torch.tensor(ids, dtype=torch.long)]
        if S.get("zero_start"):
            x = x.clone()
            x[0] = 0
        if S["scale"] is not None:
            x = x * S["scale"]
        if S.get("project_in") is not None:
            x = self.linear(x, S["project_in"])
        if S["positions"] is not None:
            if len(ids) > S["positions"].shape[0]:
                if S["positions_kind"] != "sinusoidal":
                    raise RefusedError(f"{len(ids)} positions > the {S['positions'].shape[0]} stored rows")
                S["positions"] = torch.from_numpy(ct2_sinusoids(len(ids), S["d"]))
            x = x + S["positions"][:len(ids)]
        if S["ln_emb"] is not None:
            x = self.norm(x, S["ln_emb"])
        return x

    def _stack(self, S, x, memory=None):
        act, maps_self, maps_cross = activation(S["activation_id"]), [], []
        for L in S["layers"]:
            a = dict(L["self"], pre_norm=S["pre_norm"])
            x, p = self.attention(a, x, causal=memory is not None)
            maps_self.append(p)
            if memory is not None and "cross" in L:
                x, p = self.attention(dict(L["cross"], pre_norm=S["pre_norm"]), x, memory=memory)
                maps_cross.append(p)
            x = self.ffn(L["ffn"], x, S["pre_norm"], act)
        if S["final_norm"] is not None:
            x = self.norm(x, S["final_norm"])
        return x, maps_self, maps_cross

    def encode(self, ids):
        x, maps, _ = self._stack(self.m.enc, self.embed(self.m.enc, ids))
        return x, maps

    def decode(self, ids, memory):
        """The full causal pass (what the incremental steps compute row by row): logits [T, V], maps."""
        S = self.m.dec
        y, maps_self, maps_cross = self._stack(S, self.embed(S, ids), memory)
        if S["project_out"] is not None:
            y = self.linear(y, S["project_out"])
        if S["scale_outputs"] is not None:
            y = y * S["scale_outputs"]
        return self.linear(y, S["proj"]), maps_self, maps_cross


# ----------------------------------------------------------------------------------------------------------
# tokenization, translate_batch (greedy), score_batch
# ----------------------------------------------------------------------------------------------------------
class Tokenizer:
    """Whitespace tokens, or the SentencePiece model of an Argos package (sentencepiece.model next to model.bin
    or in the package folder above model/)."""

    def __init__(self, model_dir, spm_path=None):
        parent = os.path.dirname(os.path.abspath(model_dir))
        cands = [spm_path] if spm_path else [os.path.join(model_dir, "sentencepiece.model")]
        if not spm_path and os.path.exists(os.path.join(parent, "metadata.json")):
            cands.append(os.path.join(parent, "sentencepiece.model"))
        self.path = next((p for p in cands if p and os.path.exists(p)), None)
        self.sp = spm.SentencePieceProcessor(model_file=self.path) if self.path else None

    @property
    def kind(self):
        return f"sentencepiece ({self.path})" if self.sp else "whitespace (str.split)"

    def encode(self, s):
        return self.sp.encode(s, out_type=str) if self.sp else s.split()

    def decode(self, tokens):
        if not self.sp:
            return " ".join(tokens)
        value = "".join(tokens).replace(SPIECE, " ")  # argostranslate/translate.py
        return value[1:] if value.startswith(" ") else value


def resolve_model_path(path, tmp_holder):
    """A CTranslate2 directory, an installed Argos package (metadata.json + model/) or a .argosmodel zip."""
    if os.path.isfile(path) and zipfile.is_zipfile(path):
        tmp = tempfile.mkdtemp(prefix="ct2ref_pkg_")
        tmp_holder.append(tmp)
        with zipfile.ZipFile(path) as z:
            z.extractall(tmp)
        tops = [e for e in os.listdir(tmp) if os.path.isdir(os.path.join(tmp, e))]
        if len(tops) != 1:
            raise SystemExit(f"{path}: an Argos package holds exactly one top-level folder, found {tops}")
        path = os.path.join(tmp, tops[0])
    if os.path.exists(os.path.join(path, "metadata.json")) and os.path.isdir(os.path.join(path, "model")):
        return os.path.join(path, "model"), os.path.join(path, "sentencepiece.model"), path
    return path, None, None


class Translator:
    def __init__(self, model_dir, spm_path=None):
        self.m = CT2Model(model_dir)
        self.fw = Forward(self.m)
        self.tok = Tokenizer(model_dir, spm_path)
        c, tv = self.m.config, self.m.tgt_vocab
        self.start = c["decoder_start_token"]
        self.start_id = tv.to_id(self.start) if self.start is not None else None
        self.eos_id = tv.to_id(c["eos_token"])

    def source_ids(self, tokens):
        c, v = self.m.config, self.m.src_vocab
        ids = [v.to_id(t) for t in tokens]
        return ([v.to_id(c["bos_token"])] if c["add_source_bos"] else []) + ids + (
            [v.to_id(c["eos_token"])] if c["add_source_eos"] else [])

    def greedy(self, src_ids, max_length, min_length):
        """decoding.cc GreedySearch with beam_size 1: full causal recompute per step (same values as the cache)."""
        if self.start_id is None:
            raise SystemExit("run: the model has no decoder_start_token (null): not implemented here")
        memory, enc_maps = self.fw.encode(src_ids)
        ids, raw, ct2, stop = [], [], [], "max_length"
        for step in range(max_length):
            logits, sa, ca = self.fw.decode([self.start_id] + ids, memory)
            last = logits[-1]
            masked = last.clone()
            if step < min_length:
                masked[self.eos_id] = float("-inf")
            lp = F.log_softmax(masked, dim=-1)
            tok = int(torch.argmax(lp))
            ids.append(tok)
            raw.append(float(F.log_softmax(last, dim=-1)[tok]))
            ct2.append(float(lp[tok]))
            if tok == self.eos_id:
                stop = "eos"
                break
        return {"ids": ids, "raw": raw, "ct2": ct2, "stop": stop, "enc_maps": enc_maps, "self": sa, "cross": ca,
                "memory": memory, "logits": logits}

    def alignment(self, r, n_hyp, src_ids):
        """translate_batch(return_attention=True): alignment layer's cross-attention, first heads averaged."""
        d = self.m.dec
        layer = d["alignment_layer"] + (len(d["layers"]) if d["alignment_layer"] < 0 else 0)
        heads = d["alignment_heads"] or d["heads"]
        att = r["cross"][layer][:heads].mean(0)[:n_hyp]
        c = self.m.config
        lo = 1 if c["add_source_bos"] else 0
        hi = len(src_ids) - (1 if c["add_source_eos"] else 0)
        return att[:, lo:hi]

    def replace_unknowns(self, hyp, src_tokens, att):
        unk = self.m.tgt_vocab.unk
        return [src_tokens[int(torch.argmax(att[t]))] if (tk == unk and src_tokens) else tk
                for t, tk in enumerate(hyp)]


def _maps(enc, sa, ca):
    return {"encoder": [round7(p) for p in enc], "decoder": [round7(p) for p in sa],
            "cross": [round7(p) for p in ca]}


def content_length(tokens, bos, eos):
    """sequence_to_sequence.cc get_source_length(include_special_tokens=false)."""
    n = len(tokens)
    if n == 1 and tokens[0] in (bos, eos):
        return 0
    if n >= 2:
        n -= tokens[0] == bos
        n -= 1 if tokens[-1] == eos else (2 if tokens[-2] == eos else 0)
    return n


def translate_one(tr, s, max_length, min_length):
    item = collections.OrderedDict(source=s)
    toks = tr.tok.encode(s)
    item["source_tokens"] = toks
    item["source_ids"] = src_ids = tr.source_ids(toks)
    c = tr.m.config
    if content_length(toks, c["bos_token"], c["eos_token"]) == 0:  # skip_translation: empty translation
        item.update(target_ids=[], target_tokens=[], hypothesis_tokens=[], decoder_input_ids=[],
                    stop_reason="empty_source", text="", text_without_replace_unknowns="", step_log_probs=[],
                    step_log_probs_ct2=[], score=0.0, ct2_attention=[],
                    attentions={"encoder": [], "decoder": [], "cross": []})
        return item
    r = tr.greedy(src_ids, max_length, min_length)
    ids, tv = r["ids"], tr.m.tgt_vocab
    hyp_ids = ids[:-1] if (ids and ids[-1] == tr.eos_id) else ids
    hyp = [tv.tokens[i] for i in hyp_ids]
    att = tr.alignment(r, len(hyp_ids), src_ids)
    item.update(target_ids=ids, target_tokens=[tv.tokens[i] for i in ids], hypothesis_tokens=hyp,
                decoder_input_ids=[tr.start_id] + ids[:-1], stop_reason=r["stop"])
    item["text"] = tr.tok.decode(tr.replace_unknowns(hyp, toks, att) if tr.tok.sp else hyp)
    item["text_without_replace_unknowns"] = tr.tok.decode(hyp)
    item["step_log_probs"], item["step_log_probs_ct2"] = r["raw"], r["ct2"]
    item["score"] = sum(r["ct2"]) / max(len(hyp_ids), 1)
    item["ct2_attention"] = round7(att)
    item["attentions"] = _maps(r["enc_maps"], r["self"], r["cross"])
    item["_internal"] = r
    return item


def score_one(tr, source, target):
    tv = tr.m.tgt_vocab
    toks, ttoks = tr.tok.encode(source), tr.tok.encode(target)
    src_ids = tr.source_ids(toks)
    seq = ([tr.start_id] if tr.start_id is not None else []) + [tv.to_id(t) for t in ttoks] + [tr.eos_id]
    if not src_ids:  # skip_scoring: a source empty even with its special tokens scores 0 (not run)
        return collections.OrderedDict(source=source, target=target, source_tokens=toks, source_ids=src_ids,
                                       target_tokens=[tv.tokens[i] for i in seq[1:]], target_ids=seq[1:],
                                       decoder_input_ids=seq[:-1], token_log_probs=[0.0] * (len(seq) - 1),
                                       mean=0.0, attentions={"encoder": [], "decoder": [], "cross": []})
    memory, enc_maps = tr.fw.encode(src_ids)
    logits, sa, ca = tr.fw.decode(seq[:-1], memory)
    lp = F.log_softmax(logits, dim=-1)
    scores = [float(lp[t, i]) for t, i in enumerate(seq[1:])]
    item = collections.OrderedDict(source=source, target=target, source_tokens=toks, source_ids=src_ids,
                                   target_tokens=[tv.tokens[i] for i in seq[1:]], target_ids=seq[1:],
                                   decoder_input_ids=seq[:-1], token_log_probs=scores,
                                   mean=sum(scores) / len(scores))
    item["attentions"] = _maps(enc_maps, sa, ca)
    item["_internal"] = {"logits": logits, "memory": memory}
    return item


def _is_rms(p):
    return p is not None and p["beta"] is None


def _side_config(S):
    act = {v: k for k, v in ACTIVATIONS.items()}[S["activation_id"]]
    L0 = S["layers"][0]["self"]
    pos = {"kind": S["positions_kind"]}
    if S["positions"] is not None:
        pos["rows"] = int(S["positions"].shape[0]) if S["positions_kind"] == "stored" else "generated as needed"
        pos["row_of_position_0"] = "row 0 = position 1 (OpenNMT-tf)" if S["positions_kind"] == "sinusoidal" \
            else "row 0 = input position 0"
    out = collections.OrderedDict([
        ("num_heads", S["heads"]), ("layers", len(S["layers"])), ("d_model", S["d"]),
        ("ffn", int(S["layers"][0]["ffn"]["lin0"]["w"].shape[0])), ("head_dim", L0["head_dim"]),
        ("pre_norm", S["pre_norm"]), ("activation", act), ("activation_id", S["activation_id"]),
        ("final_norm", S["final_norm"] is not None), ("layernorm_embedding", S["ln_emb"] is not None),
        ("embeddings_scale", S["scale"]), ("positions", pos), ("queries_scale", L0["queries_scale"]),
        ("features", {"relative_positions": L0["rel_k"] is not None, "multi_query": L0["heads_kv"] < S["heads"],
                      "ffn_glu": S["layers"][0]["ffn"]["noact"] is not None,
                      "rms_norm": _is_rms(S["layers"][0]["ffn"]["ln"])})])
    if S["name"] == "decoder":
        pos["decoder_step_offset"] = "step s uses row s (the start token is step 0)"
        out["projection_bias"] = S["proj"]["b"] is not None
    return out


def config_used(tr, max_length=None, min_length=None):
    m, c = tr.m, tr.m.config
    sv, tv = m.src_vocab, m.tgt_vocab
    dtypes = sorted({v[0] for v in m.stored.values() if v[1].ndim})
    weight_dt = sorted({v[0] for n, v in m.stored.items() if n.endswith("weight")})
    return collections.OrderedDict([
        ("format", {"binary_version": m.binary_version, "spec": m.spec, "spec_revision": m.revision,
                    "stored_dtypes": dtypes, "weight_dtypes": weight_dt,
                    "compute_type_inferred": saved_compute_type(m.stored), "aliases": dict(m.alias_list)}),
        ("config", {"source": m.config_source, **{k: c[k] for k in DEFAULT_CONFIG if k != "layer_norm_epsilon"}}),
        ("vocabulary", {"files": sorted({sv.file, tv.file}), "source_size": len(sv), "target_size": len(tv),
                        "unk_appended": sv.unk_appended or tv.unk_appended}),
        ("special_ids", {"source_unk": sv.to_id(c["unk_token"]), "source_bos": sv.to_id(c["bos_token"]),
                         "source_eos": sv.to_id(c["eos_token"]), "target_unk": tv.to_id(c["unk_token"]),
                         "target_bos": tv.to_id(c["bos_token"]), "target_eos": tr.eos_id,
                         "decoder_start": tr.start_id}),
        ("layer_norm_epsilon", {"value": m.eps if m.eps is not None else "1e-5 (LayerNorm) / 1e-6 (RMSNorm)",
                                "source": m.eps_source}),
        ("encoder", _side_config(m.enc)), ("decoder", _side_config(m.dec)),
        ("decoding", {"beam_size": 1, "max_decoding_length": max_length, "min_decoding_length": min_length,
                      "end_token": c["eos_token"], "alignment_layer": m.dec["alignment_layer"],
                      "alignment_heads": m.dec["alignment_heads"]}),
        ("tokenizer", tr.tok.kind), ("notes", m.notes)])


def saved_compute_type(stored):
    """model.cc infer_compute_type + data_type_to_compute_type: the dtype of the "weight" variables and of the
    other non-scalar variables whose name has no "_scale"."""
    weights = {v[0] for n, v in stored.items() if n.endswith("weight")}
    other = {v[0] for n, v in stored.items() if not n.endswith("weight") and v[1].ndim and "_scale" not in n}
    w, o = (sorted(weights) or ["float32"])[0], (sorted(other) or ["float32"])[0]
    if w == "int8":
        return {"float16": "int8_float16", "bfloat16": "int8_bfloat16"}.get(o, "int8_float32")
    return {"int16": "int16", "float16": "float16", "bfloat16": "bfloat16"}.get(w, "float32")


def _open_translator(path):
    tmps = []
    model_dir, spm_path, _ = resolve_model_path(path, tmps)
    try:
        return Translator(model_dir, spm_path), tmps
    except (RefusedError, KeyError, ValueError, OSError) as e:
        for t in tmps:
            shutil.rmtree(t, ignore_errors=True)
        raise SystemExit(f"refused: {e}")


def _write_json(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps(obj, ensure_ascii=False))


def cmd_run(a):
    torch.set_grad_enabled(False)
    t0 = time.time()
    tr, tmps = _open_translator(a.model)
    try:
        res = [translate_one(tr, s, a.max_length, a.min_length) for s in read_sentences(a.sentences)]
    except RefusedError as e:
        raise SystemExit(f"refused: {e}")
    finally:
        for t in tmps:
            shutil.rmtree(t, ignore_errors=True)
    _write_json(a.out, {"config_used": config_used(tr, a.max_length, a.min_length),
                        "sentences": [_public(r) for r in res]})
    print(f"run: {len(res)} sentences -> {a.out} ({sum(len(r['target_ids']) for r in res)} tokens, stops "
          f"{[r['stop_reason'] for r in res]}; {time.time() - t0:.2f} s)")
    return res


def cmd_score(a):
    torch.set_grad_enabled(False)
    t0 = time.time()
    src, tgt = read_sentences(a.sources), read_sentences(a.targets)
    if len(src) != len(tgt):
        raise SystemExit(f"score: {len(src)} sources but {len(tgt)} targets")
    tr, tmps = _open_translator(a.model)
    try:
        res = [score_one(tr, s, t) for s, t in zip(src, tgt)]
    except RefusedError as e:
        raise SystemExit(f"refused: {e}")
    finally:
        for t in tmps:
            shutil.rmtree(t, ignore_errors=True)
    _write_json(a.out, {"config_used": config_used(tr), "pairs": [_public(r) for r in res]})
    print(f"score: {len(res)} pairs -> {a.out} ({time.time() - t0:.2f} s)")
    return res


# ----------------------------------------------------------------------------------------------------------
# selftest
# ----------------------------------------------------------------------------------------------------------
def _make(tmp, name, *argv):
    """cmd_make through the real argument parser (its defaults), quietly; returns the directory."""
    d = os.path.join(tmp, name)
    a = build_parser().parse_args(["make", "--out", d] + [str(x) for x in argv])
    stdout, sys.stdout = sys.stdout, open(os.devnull, "w")
    try:
        cmd_make(a)
    finally:
        sys.stdout.close()
        sys.stdout = stdout
    return d


def _write_lines(path, lines):
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return path


def _check_bin_bytes(check, tmp):
    """model.bin bytes against a hand-packed expectation (binary 6 and 3)."""
    w = np.arange(6, dtype="<f4").reshape(2, 3)
    V = {"b": scalar(1, "int8"), "a/weight": ("float32", w), "c": ("int16", np.array([1, -2], dtype="<i2"))}
    path = os.path.join(tmp, "bytes.bin")

    def s(x):
        return struct.pack("<H", len(x) + 1) + x.encode() + b"\0"
    head = struct.pack("<I", 6) + s("TransformerSpec") + struct.pack("<II", 7, 3)
    body6 = (s("a/weight") + bytes([2]) + struct.pack("<II", 2, 3) + bytes([0]) + struct.pack("<I", 24) + w.tobytes()
             + s("b") + bytes([0]) + bytes([1]) + struct.pack("<I", 1) + b"\x01"
             + s("c") + bytes([1]) + struct.pack("<I", 2) + bytes([2]) + struct.pack("<I", 4) + b"\x01\x00\xfe\xff")
    tail = struct.pack("<I", 1) + s("z/weight") + s("a/weight")
    write_model_bin(path, "TransformerSpec", 7, V, {"z/weight": "a/weight"}, 6)
    check("model.bin v6 bytes == hand-packed (sorted names, dtype id + byte count, alias section)",
          open(path, "rb").read() == head + body6 + tail)
    body3 = (s("a/weight") + bytes([2]) + struct.pack("<II", 2, 3) + bytes([4]) + struct.pack("<I", 6) + w.tobytes()
             + s("b") + bytes([0]) + bytes([1]) + struct.pack("<I", 1) + b"\x01"
             + s("c") + bytes([1]) + struct.pack("<I", 2) + bytes([2]) + struct.pack("<I", 2) + b"\x01\x00\xfe\xff")
    write_model_bin(path, "TransformerSpec", 7, V, {"z/weight": "a/weight"}, 3)
    check("model.bin v3 bytes: item size + element count", open(path, "rb").read() ==
          struct.pack("<I", 3) + head[4:] + body3 + tail)
    r = read_model_bin(path)
    check("read back v3: names, dtypes, values, alias, no trailing bytes",
          list(r["variables"]) == ["a/weight", "b", "c"] and r["variables"]["c"][0] == "int16"
          and np.array_equal(r["variables"]["a/weight"][1], w) and r["aliases"] == [("z/weight", "a/weight")]
          and r["trailing_bytes"] == 0)
    check("binary < 4 refuses float16 (it would read back as int16)",
          _refused(lambda: _raise_system(lambda: write_model_bin(path, "X", 7, {"h": ("float16", np.zeros(
              2, "<f2"))}, {}, 3))))


def _raise_system(fn):
    try:
        fn()
    except ValueError as e:
        raise SystemExit(str(e))


def _quant_error_ok(orig, var, scale):
    """|orig - dequant| within half a quantization step (int8 per row, int16 per tensor)."""
    q = decode_storage(var)
    s = decode_storage(scale)
    s = s.reshape(-1, 1) if s.ndim else s
    return bool(np.all(np.abs(orig - q / s) <= 0.5 / s * (1 + 1e-6) + 1e-12))


def _check_quantization(check, tmp):
    rng = np.random.default_rng(3)
    w = rng.standard_normal((5, 7)).astype(np.float32)
    w[2] = 0
    V = {"x/weight": ("float32", w), "x/bias": ("float32", w[0].copy()), "n": scalar(3, "int16")}
    for q in QUANTIZATIONS:
        out = quantize_variables(V, {}, q)
        if q in ("int8", "int8_float32", "int8_float16", "int8_bfloat16", "int16"):
            ok = _quant_error_ok(w, out["x/weight"], out["x/weight_scale"])
            ok &= out["x/weight"][0] == ("int16" if q == "int16" else "int8")
            if q != "int16":
                ok &= float(out["x/weight_scale"][1][2]) == 1.0  # a zero row: amax 127 -> scale 1
        else:
            got = decode_storage(out["x/weight"])
            tol = {"float32": 0, "float16": 2 ** -11, "bfloat16": 2 ** -8}[q]
            ok = bool(np.all(np.abs(got - w) <= tol * np.abs(w) + 1e-7)) and out["x/weight"][0] == q
        bias_dt = {"float16": "float16", "int8_float16": "float16", "bfloat16": "bfloat16",
                   "int8_bfloat16": "bfloat16"}.get(q, "float32")
        ok &= out["x/bias"][0] == bias_dt and out["n"][0] == "int16" and "x/bias_scale" not in out
        check(f"quantization {q}: weight within its bound, bias -> {bias_dt}, scalar untouched", ok)
    al = alias_variables({"a": ("float32", w), "b": ("float32", w.copy()), "c": ("float32", w.copy()),
                          "s1": scalar(1, "int8"), "s2": scalar(1, "int8")})
    check("_alias_variables: later equal variables alias the first sorted one, scalars never",
          al == {"b": "a", "c": "a"})


def _check_roundtrip(check, tmp):
    base = ["--vocab-size", 60, "--tie-projection", "--share-embeddings", "--seed", 4]
    for bv in range(2, 7):
        for dt in ("float32", "int16", "int8", "float16", "bfloat16", "int8_float16"):
            if bv < 4 and dt in ("float16", "bfloat16", "int8_float16"):
                continue
            d = _make(tmp, f"rt_{bv}_{dt}", "--binary-version", bv, "--dtype", dt, *base)
            a = build_parser().parse_args(["make", "--out", d, "--binary-version", str(bv), "--dtype", dt]
                                          + [str(x) for x in base])
            src = load_vocabulary(d, "shared_vocabulary", "<unk>").tokens
            want, want_al = build_variables(a, converter_config(a), src, src)
            r = read_model_bin(os.path.join(d, "model.bin"))
            same = sorted(r["variables"]) == sorted(want) and all(
                r["variables"][n][0] == want[n][0] and r["variables"][n][1].tobytes() == want[n][1].tobytes()
                and r["variables"][n][1].shape == want[n][1].shape for n in want)
            al_ok = (dict(r["aliases"]) == want_al) and ((bv >= 3) == bool(want_al))
            check(f"model.bin round trip: binary {bv}, {dt}: every tensor, dtype and alias as written",
                  same and al_ok and r["trailing_bytes"] == 0, f"{len(want)} variables, {len(want_al)} aliases")


def _torch_nn_reference(m, src_ids, dec_ids):
    """The same model through torch.nn.TransformerEncoderLayer / TransformerDecoderLayer (fused in_proj =
    CTranslate2's [q; k; v] linear_0), embeddings and positions computed here independently."""
    nn = torch.nn
    out = {}
    for side, ids in (("encoder", src_ids), ("decoder", dec_ids)):
        S = m.enc if side == "encoder" else m.dec
        table = S["positions"] if S["positions_kind"] == "stored" else torch.tensor(
            [[math.sin((p + 1) * math.exp(-j * math.log(10000) / (S["d"] / 2 - 1))) for j in range(S["d"] // 2)]
             + [math.cos((p + 1) * math.exp(-j * math.log(10000) / (S["d"] / 2 - 1))) for j in range(S["d"] // 2)]
             for p in range(len(ids))], dtype=torch.float64)
        out[side] = (S["emb"][torch.tensor(ids)] * (S["scale"] or 1.0) + table[:len(ids)])[None]
    S, eps = m.enc, m.eps if m.eps is not None else 1e-5
    act = {0: "relu", 3: "gelu"}[S["activation_id"]]

    def load(layer, L, cross):
        layer.self_attn.in_proj_weight.copy_(L["self"]["lin"][0]["w"])
        layer.self_attn.in_proj_bias.copy_(L["self"]["lin"][0]["b"])
        layer.self_attn.out_proj.weight.copy_(L["self"]["lin"][1]["w"])
        layer.self_attn.out_proj.bias.copy_(L["self"]["lin"][1]["b"])
        norms = [layer.norm1] + ([layer.norm2] if cross else []) + [layer.norm3 if cross else layer.norm2]
        for n, p in zip(norms, [L["self"]["ln"]] + ([L["cross"]["ln"]] if cross else []) + [L["ffn"]["ln"]]):
            n.weight.copy_(p["gamma"]), n.bias.copy_(p["beta"])
        layer.linear1.weight.copy_(L["ffn"]["lin0"]["w"]), layer.linear1.bias.copy_(L["ffn"]["lin0"]["b"])
        layer.linear2.weight.copy_(L["ffn"]["lin1"]["w"]), layer.linear2.bias.copy_(L["ffn"]["lin1"]["b"])
        if cross:
            c = L["cross"]
            layer.multihead_attn.in_proj_weight.copy_(torch.cat([c["lin"][0]["w"], c["lin"][1]["w"]]))
            layer.multihead_attn.in_proj_bias.copy_(torch.cat([c["lin"][0]["b"], c["lin"][1]["b"]]))
            layer.multihead_attn.out_proj.weight.copy_(c["lin"][2]["w"])
            layer.multihead_attn.out_proj.bias.copy_(c["lin"][2]["b"])

    x = out["encoder"]
    for L in S["layers"]:
        layer = nn.TransformerEncoderLayer(S["d"], S["heads"], L["ffn"]["lin0"]["w"].shape[0], 0.0, act, eps,
                                           batch_first=True, norm_first=S["pre_norm"]).double().eval()
        load(layer, L, False)
        x = layer(x)
    if S["final_norm"] is not None:
        x = F.layer_norm(x, (S["d"],), S["final_norm"]["gamma"], S["final_norm"]["beta"], eps)
    D, y, T = m.dec, out["decoder"], len(dec_ids)
    causal = torch.triu(torch.full((T, T), float("-inf"), dtype=torch.float64), diagonal=1)
    for L in D["layers"]:
        layer = nn.TransformerDecoderLayer(D["d"], D["heads"], L["ffn"]["lin0"]["w"].shape[0], 0.0, act, eps,
                                           batch_first=True, norm_first=D["pre_norm"]).double().eval()
        load(layer, L, True)
        y = layer(y, x, tgt_mask=causal)
    if D["final_norm"] is not None:
        y = F.layer_norm(y, (D["d"],), D["final_norm"]["gamma"], D["final_norm"]["beta"], eps)
    return x[0], F.linear(y[0], D["proj"]["w"], D["proj"]["b"])


def _check_torch_nn(check, tmp):
    for name, args in (("post_relu", ["--norm", "post", "--activation", "relu", "--eps", "1e-4"]),
                       ("pre_gelu_stored", ["--norm", "pre", "--activation", "gelu", "--positions",
                                            "stored-sinusoidal", "--decoder-layers", 3, "--heads", 2]),
                       ("pre_relu_learned", ["--positions", "learned", "--no-scale-embeddings"])):
        d = _make(tmp, "nn_" + name, "--vocab-size", 80, "--seed", 7, *args)
        tr = Translator(d)
        src, dec = [5, 9, 11, 4, 17, 3], [tr.start_id, 8, 30, 12, 6]
        enc, enc_maps = tr.fw.encode(src)
        logits, _, _ = tr.fw.decode(dec, enc)
        e_ref, l_ref = _torch_nn_reference(tr.m, src, dec)
        de, dl = (enc - e_ref).abs().max().item(), (logits - l_ref).abs().max().item()
        check(f"{name}: encoder output and logits == torch.nn Transformer layers", max(de, dl) < 1e-10,
              f"{de:.1e} {dl:.1e}")
        L = tr.m.enc["layers"][0]["self"]
        x = tr.fw.embed(tr.m.enc, src)
        xin = tr.fw.norm(x, L["ln"]) if tr.m.enc["pre_norm"] else x
        _, p = F.multi_head_attention_forward(
            xin[:, None], xin[:, None], xin[:, None], tr.m.enc["d"], tr.m.enc["heads"], L["lin"][0]["w"],
            L["lin"][0]["b"], None, None, False, 0.0, L["lin"][1]["w"], L["lin"][1]["b"], training=False,
            need_weights=True, average_attn_weights=False)
        dp = (p[0] - enc_maps[0]).abs().max().item()
        check(f"{name}: encoder layer-0 attention map == F.multi_head_attention_forward", dp < 1e-12, f"{dp:.1e}")
    tab = ct2_sinusoids(7, 8)
    check("generated sinusoids: row 0 = position 1, [sin | cos], timescale ln(10000)/(d/2-1)",
          abs(tab[0, 1] - math.sin(math.exp(-math.log(10000) / 3))) < 1e-15 and abs(tab[6, 4] - math.cos(7)) < 1e-15)
    pe = opennmt_py_sinusoids(5, 8)
    check("OpenNMT-py table: interleaved sin/cos from position 0",
          pe[0, 0] == 0 and pe[0, 1] == 1 and abs(pe[3, 2] - math.sin(3 / 10000 ** (2 / 8))) < 1e-6)


def _translate(d, sentences, max_length=256, min_length=1, spm_path=None):
    tr = Translator(d, spm_path)
    return tr, [translate_one(tr, s, max_length, min_length) for s in sentences]


def _check_decoding(check, tmp):
    d = _make(tmp, "dec_eos", "--vocab-size", 120, "--eos-bias", 8, "--seed", 2, "--sample-sentences",
              os.path.join(tmp, "dec_sent.txt"))
    sents = read_sentences(os.path.join(tmp, "dec_sent.txt"))
    tr, res = _translate(d, sents)
    stops = [r["stop_reason"] for r in res]
    check("eos bias 8: every sentence finishes on eos", stops == ["eos"] * len(res), f"{stops}")
    check("eos last and nowhere else; hypothesis = target_ids without it", all(
        r["target_ids"][-1] == tr.eos_id and tr.eos_id not in r["target_ids"][:-1]
        and r["hypothesis_tokens"] == r["target_tokens"][:-1] for r in res))
    check("an unknown source word maps to the unk id", tr.m.src_vocab.to_id("<unk>") in res[-1]["source_ids"])
    ok_rows = ok_sum = ok_causal = True
    for r in res:
        it = r["_internal"]
        lp = F.log_softmax(it["logits"], dim=-1)
        ok_rows &= all(abs(float(lp[t, i]) - r["step_log_probs"][t]) < 1e-12 for t, i in enumerate(r["target_ids"]))
        for p in it["self"] + it["cross"] + it["enc_maps"]:
            ok_sum &= (p.sum(-1) - 1).abs().max().item() < 1e-12
        for p in it["self"]:
            ok_causal &= bool((torch.triu(p, diagonal=1) == 0).all())
        T, S = len(r["target_ids"]), len(r["source_ids"])
        js = r["attentions"]
        ok_sum &= all(len(h) == T and len(h[0]) == S for lay in js["cross"] for h in lay)
        ok_sum &= all(len(h) == S and len(h[0]) == S for lay in js["encoder"] for h in lay)
    check("teacher-forced pass row t == the log-prob greedy step t chose (causality)", ok_rows)
    check("attention rows sum to 1; shapes [L][H][T][S], [L][H][S][S]", ok_sum)
    check("decoder self-attention is causal", ok_causal)
    _check_stops(check, tmp, sents)


def _check_stops(check, tmp, sents):
    big = _make(tmp, "dec_big_eos", "--vocab-size", 120, "--eos-bias", 60, "--seed", 2)
    tr, res = _translate(big, sents[:2])
    check("min_decoding_length 1: eos disabled at step 0 (raw argmax is eos), then eos",
          all(len(r["target_ids"]) == 2 and r["target_ids"][1] == tr.eos_id for r in res)
          and all(r["step_log_probs_ct2"][0] > r["step_log_probs"][0] for r in res))
    _, res0 = _translate(big, sents[:2], min_length=0)
    check("min_length 0: eos at step 0 -> empty hypothesis", all(r["target_ids"] == [tr.eos_id]
                                                                 and r["hypothesis_tokens"] == [] for r in res0))
    plain = _make(tmp, "dec_plain", "--vocab-size", 120, "--seed", 5)
    tr, res = _translate(plain, sents[:3], max_length=6)
    check("max_decoding_length 6: 6 tokens (eos included in the count), stop max_length unless eos",
          all((len(r["target_ids"]) == 6 and r["stop_reason"] == "max_length") or
              (r["stop_reason"] == "eos" and len(r["target_ids"]) <= 6) for r in res),
          f"{[(len(r['target_ids']), r['stop_reason']) for r in res]}")
    r = translate_one(tr, "", 10, 1)
    check("empty source: not run, empty translation", r["stop_reason"] == "empty_source" and r["text"] == "")
    check("get_source_length without specials: bos / eos / a last lang code after eos not counted",
          [content_length(t, "<s>", "</s>") for t in (["</s>"], ["<s>", "a", "</s>"], ["a", "</s>", "xx"],
                                                      ["</s>", "xx"], ["a"])] == [0, 1, 1, 0, 1])
    check("score_batch of an empty source: zeros, not run", score_one(tr, "", "a b")["token_log_probs"] == [0.0] * 3)
    att = torch.tensor([[0.1, 0.7, 0.2], [0.5, 0.2, 0.3], [0.2, 0.2, 0.6]], dtype=torch.float64)
    got = tr.replace_unknowns(["a", tr.m.tgt_vocab.unk, tr.m.tgt_vocab.unk], ["x", "y", "z"], att)
    check("replace_unknowns: <unk> -> the source token of its attention argmax", got == ["a", "x", "z"], f"{got}")
    res_s = score_one(tr, sents[0], " ".join(res[0]["hypothesis_tokens"]))
    n = len(res_s["token_log_probs"])
    check("score_batch of the greedy output: log-probs == greedy raw step log-probs (+ eos)",
          all(abs(a - b) < 1e-12 for a, b in zip(res_s["token_log_probs"][:n - 1], res[0]["step_log_probs"]))
          and res_s["target_ids"][-1] == tr.eos_id and res_s["decoder_input_ids"][0] == tr.start_id)


def _same_results(a, b, keys=("target_ids", "step_log_probs"), tol=1e-12):
    return all(max(abs(x - y) for x, y in zip(ra[k], rb[k])) < tol if k == "step_log_probs" and ra[k] else
               ra[k] == rb[k] for ra, rb in zip(a, b) for k in keys)


def _check_layouts(check, tmp, sents):
    common = ["--vocab-size", 90, "--heads", 8, "--eos-bias", 4, "--seed", 9, "--tie-projection"]
    _, ref = _translate(_make(tmp, "lay_ref", *common), sents)
    for rev in range(2, 8):
        for bv in (2, 3, 5, 6):
            d = _make(tmp, f"lay_{rev}_{bv}", *common, "--spec-revision", rev, "--binary-version", bv)
            tr, res = _translate(d, sents)
            check(f"revision {rev} ({tr.m.spec}), binary {bv}: same translations as the current layout",
                  _same_results(ref, res))
    post = ["--norm", "post", "--activation", "swish"]
    _, ref_post = _translate(_make(tmp, "lay_post", *common, *post), sents)
    tr, res = _translate(_make(tmp, "lay_post_rev2", *common, *post, "--spec-revision", 2, "--binary-version", 2),
                         sents)
    check("revision 2 post-norm swish (top-level pre_norm / activation, aliased for revision < 5) == revision 7",
          _same_results(ref_post, res) and not tr.m.enc["pre_norm"] and tr.m.dec["activation_id"] == 2)
    d = _make(tmp, "lay_rev3_noscale", *common, "--spec-revision", 3, "--no-scale-embeddings")
    tr = Translator(d)
    check("revision 3: multiply_by_sqrt_depth 0 -> no embedding scale", tr.m.enc["scale"] is None and
          tr.m.has("encoder/embeddings/multiply_by_sqrt_depth"))
    d = _make(tmp, "lay_float_scale", *common, "--scale-embeddings-float")
    tr, res = _translate(d, sents)
    check("scale_embeddings stored as float32 sqrt(d) (fairseq converter) == the int8 flag (float32 rounding)",
          _same_results(ref, res, tol=1e-6)
          and tr.m.vars["encoder/scale_embeddings"][0] == "float32")
    for mode, flag in (("none", "--no-alias"), ("tied", "--alias-tied")):
        d = _make(tmp, "lay_alias_" + mode, *common, flag)
        tr, res = _translate(d, sents)
        check(f"{flag}: {len(tr.m.alias_list)} aliases, same translations", _same_results(ref, res) and
              (len(tr.m.alias_list) == 0) == (mode == "none"))


def _check_config_vocab(check, tmp, sents):
    common = ["--vocab-size", 90, "--eos-bias", 4, "--seed", 11]
    ref_d = _make(tmp, "cfg_ref", *common)
    _, ref = _translate(ref_d, sents)
    for name, args in (("txt", ["--vocab-format", "txt"]), ("noconfig", ["--no-config"])):
        tr, res = _translate(_make(tmp, "cfg_" + name, *common, *args), sents)
        check(f"{name}: same translations as json + config.json", _same_results(ref, res), tr.m.config_source)
    tr, res = _translate(_make(tmp, "cfg_fairseq", *common, "--decoder-start-token", "</s>", "--add-source-eos",
                               "--add-source-bos"), sents)
    v = tr.m.src_vocab
    check("add_source_bos/eos and decoder_start_token </s> (fairseq style)",
          all(r["source_ids"][0] == v.to_id("<s>") and r["source_ids"][-1] == v.to_id("</s>") for r in res)
          and tr.start_id == tr.eos_id and res[0]["decoder_input_ids"][0] == tr.eos_id)
    d = _make(tmp, "cfg_legacy", *common, "--binary-version", 5, "--add-source-eos", "--config", "yes")
    cfg = json.load(open(os.path.join(d, "config.json")))
    cfg["add_source_eos"] = False
    write_config(os.path.join(d, "config.json"), cfg)
    tr = Translator(d)
    check("binary 5: add_source_eos from the with_source_eos attribute, config.json's value ignored",
          tr.m.config["add_source_eos"] and tr.m.config_source.startswith("model.bin"))
    tr, res = _translate(_make(tmp, "cfg_eps", *common, "--eps", "1e-2"), sents)
    check("config.json layer_norm_epsilon 1e-2 is used (different log-probs)", abs(tr.m.eps - 0.01) < 1e-9 and
          not _same_results(ref, res))
    tr, res = _translate(_make(tmp, "cfg_sep", *common, "--vocab", "separate", "--specials",
                               "<unk> <blank> <s> </s>"), sents)
    check("separate vocabularies: source_/target_vocabulary files, OpenNMT-py special order",
          tr.m.src_vocab.file == "source_vocabulary.json" and tr.m.tgt_vocab.tokens[:4] == ["<unk>", "<blank>",
                                                                                          "<s>", "</s>"]
          and tr.m.src_vocab.tokens[4:] != tr.m.tgt_vocab.tokens[4:])


def _check_spm_argos(check, tmp):
    zp, ad = os.path.join(tmp, "m.argosmodel"), os.path.join(tmp, "argos_installed")
    sfile = os.path.join(tmp, "spm_sent.txt")
    d = _make(tmp, "spm", "--spm", "--vocab-size", 200, "--eos-bias", 5, "--argos", zp, "--argos-dir", ad,
              "--sample-sentences", sfile, "--from-code", "en", "--to-code", "de")
    sp = spm.SentencePieceProcessor(model_file=os.path.join(d, "sentencepiece.model"))
    tr = Translator(d)
    vocab = tr.m.src_vocab.tokens
    check("SentencePiece vocabulary: specials first, pieces in another order than SentencePiece's ids",
          vocab[:4] == DEFAULT_SPECIALS.split() and any(vocab.index(sp.id_to_piece(i)) != i
                                                         for i in range(3, len(sp))))
    with zipfile.ZipFile(zp) as z:
        names = z.namelist()
        tops = {n.split("/")[0] for n in names}
        meta = json.loads(z.read(f"{tops.pop()}/metadata.json")) if len(tops) == 1 else {}
    check("Argos zip: one top folder with metadata.json, sentencepiece.model, model/model.bin",
          any(n.endswith("/model/model.bin") for n in names) and any(n.endswith("/sentencepiece.model")
                                                                      for n in names)
          and set(meta) >= {"package_version", "argos_version", "from_code", "from_name", "to_code", "to_name"})
    sents = read_sentences(sfile)
    res = [translate_one(tr, s, 256, 1) for s in sents]
    out = []
    for path in (zp, ad):
        t2, tmps = _open_translator(path)
        out.append([translate_one(t2, s, 256, 1) for s in sents])
        for t in tmps:
            shutil.rmtree(t, ignore_errors=True)
    check("run on the .argosmodel and on the installed folder == run on the model directory",
          all(_same_results(res, o, ("target_ids", "text")) for o in out))
    check("pieces are SentencePiece's; text = joined pieces, \u2581 -> space, no leading space",
          res[0]["source_tokens"] == sp.encode(sents[0], out_type=str) and all(
              r["text_without_replace_unknowns"] == "".join(r["hypothesis_tokens"]).replace(SPIECE, " ").lstrip(" ")
              [:len(r["text_without_replace_unknowns"])] for r in res))


def _check_features(check, tmp, sents):
    common = ["--vocab-size", 90, "--seed", 12, "--eos-bias", 4]
    for feat, args, var in (("relative", ["--relative-position", 4], "relative_position_keys"),
                            ("glu", ["--ffn-glu"], "linear_0_noact/weight"),
                            ("rms", ["--rms-norm"], None), ("mqa", ["--multi-query"], "num_heads_kv")):
        d = _make(tmp, "feat_" + feat, *common, *args)
        tr, res = _translate(d, sents)
        names = list(tr.m.stored)
        check(f"{feat}: written as the spec does and run", (var is None or any(n.endswith(var) for n in names))
              and all(r["stop_reason"] in ("eos", "max_length") for r in res))
        if feat == "relative":
            check("relative: values aliased to keys, no position table, scale_embeddings false", any(
                a.endswith("relative_position_values") for a, _ in tr.m.alias_list)
                and tr.m.enc["positions"] is None and tr.m.enc["scale"] is None)
            _check_relative(check, tr)
        if feat == "rms":
            check("rms: gamma only, eps 1e-6", not any(n.endswith("beta") for n in names) and
                  abs(Forward(tr.m).eps({"beta": None}) - 1e-6) < 1e-18)
    _check_mqa(check)
    for feat in ("rotary", "alibi"):
        d = _make(tmp, "feat_" + feat, *common, "--" + feat)
        names = set(read_model_bin(os.path.join(d, "model.bin"))["variables"])
        key = "decoder/layer_0/self_attention/rotary_dim" if feat == "rotary" else "decoder/alibi"
        check(f"{feat}: {key} written, no decoder position table; run refuses it",
              key in names and "decoder/position_encodings/encodings" not in names
              and _refused(lambda: _open_translator(d)))


def _check_relative(check, tr):
    """Shaw relative positions against a loop over (i, j)."""
    a = dict(tr.m.enc["layers"][0]["self"], pre_norm=True)
    x = torch.randn(6, tr.m.enc["d"], dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    out, p = tr.fw.attention(a, x)
    q_in = tr.fw.norm(x, a["ln"])
    q, k, v = tr.fw._project(a, q_in, None)
    n, H = (a["rel_k"].shape[0] - 1) // 2, a["heads"]
    s = torch.zeros(H, 6, 6, dtype=torch.float64)
    for i in range(6):
        for j in range(6):
            r = min(max(j - i, -n), n) + n
            s[:, i, j] = (q[:, i] * (k[:, j] + a["rel_k"][r])).sum(-1) * a["queries_scale"]
    pr = torch.softmax(s, -1)
    o = torch.zeros(H, 6, a["head_dim"], dtype=torch.float64)
    for i in range(6):
        for j in range(6):
            o[:, i] += pr[:, i, j:j + 1] * (v[:, j] + a["rel_v"][min(max(j - i, -n), n) + n])
    ref = x + tr.fw.linear(o.transpose(0, 1).reshape(6, -1), a["lin"][-1])
    check("relative positions == a loop over (i, j) (keys and values)", (ref - out).abs().max().item() < 1e-12
          and (pr - p).abs().max().item() < 1e-12)
    _check_relative_incremental(check, tr)


def _self_attention_step(fw, a, xs):
    """OpenNMT-py's MultiHeadedAttention.forward with a layer_cache (type "self"; CTranslate2's attention.cc with
    cached keys): the last row of xs (the layer's inputs of steps 0..t) queries the keys and values of every row,
    relative positions from generate_relative_positions_matrix(t + 1, k, cache=True). Returns (the new row's
    output incl. residual / norm, its probabilities [H, 1, t + 1])."""
    pre, x = a["pre_norm"], xs[-1:]
    h = fw.norm(xs, a["ln"]) if (a["ln"] is not None and pre) else xs
    q, k, v = fw._project(a, h, None)
    q = q[:, -1:]
    s = torch.matmul(q, k.transpose(1, 2)) * a["queries_scale"]
    if a["rel_k"] is not None:
        pos = onmt_generate_relative_positions_matrix(xs.shape[0], (a["rel_k"].shape[0] - 1) // 2, cache=True)
        s = s + onmt_relative_matmul(q.unsqueeze(0), a["rel_k"][pos], True)[0] * a["queries_scale"]
    p = torch.softmax(s, dim=-1)
    o = torch.matmul(p, v)
    if a["rel_v"] is not None:
        o = o + onmt_relative_matmul(p.unsqueeze(0), a["rel_v"][pos], False)[0]
    out = fw.linear(o.transpose(0, 1).reshape(1, -1), a["lin"][-1])
    if a["ln"] is not None:
        out = x + out
        if not pre:
            out = fw.norm(out, a["ln"])
    return out, p


def decode_incremental(fw, ids, memory):
    """The decoder one token at a time with cached layer inputs (OpenNMT-py's and CTranslate2's step-by-step
    decoding): logits [T, V] and each layer's self-attention rows [H, T, T] (row t over keys 0..t, zeros after)."""
    S = fw.m.dec
    if S["positions"] is not None or S.get("project_in") is not None or S.get("zero_start"):
        raise RefusedError("decode_incremental: a decoder without absolute positions, project_in or zero start only")
    emb, act, T = fw.embed(S, ids), activation(S["activation_id"]), len(ids)
    inputs = [[] for _ in S["layers"]]
    maps = [torch.zeros(S["heads"], T, T, dtype=torch.float64) for _ in S["layers"]]
    rows = []
    for t in range(T):
        x = emb[t:t + 1]
        for li, L in enumerate(S["layers"]):
            inputs[li].append(x)
            x, p = _self_attention_step(fw, dict(L["self"], pre_norm=S["pre_norm"]), torch.cat(inputs[li]))
            maps[li][:, t, :t + 1] = p[:, 0]
            x, _ = fw.attention(dict(L["cross"], pre_norm=S["pre_norm"]), x, memory=memory)
            x = fw.ffn(L["ffn"], x, S["pre_norm"], act)
        if S["final_norm"] is not None:
            x = fw.norm(x, S["final_norm"])
        rows.append(fw.linear(x, S["proj"]))
    return torch.cat(rows), maps


def _check_relative_incremental(check, tr):
    """OpenNMT-py's matrices equal CTranslate2's make_relative_positions; step-by-step decoding (cache=True rows)
    equals the full causal pass."""
    same = all(torch.equal(onmt_generate_relative_positions_matrix(n, k), Forward._rel_positions(n, n, k)) and
               torch.equal(onmt_generate_relative_positions_matrix(n, k, cache=True), Forward._rel_positions(1, n, k))
               for n in (1, 2, 5, 9) for k in (1, 2, 4))
    check("relative: OpenNMT-py's positions matrices == CTranslate2's make_relative_positions", same)
    memory, _ = tr.fw.encode([5, 9, 4, 12, 7, 3])
    ids = [2, 8, 15, 6, 11, 20, 9, 13]  # longer than 2k + 1 for k = 4 (both clipped ends used)
    full, maps_full, _ = tr.fw.decode(ids, memory)
    inc, maps_inc = decode_incremental(tr.fw, ids, memory)
    worst = max((a - b).abs().max().item() for a, b in zip(maps_full, maps_inc))
    check("relative: step-by-step decoding == the full causal pass (logits, self-attention rows)",
          (full - inc).abs().max().item() < 1e-10 and worst < 1e-12)


def _check_mqa(check):
    """Multi-query attention == multi-head attention whose k / v heads are all copies of the one k / v."""
    g = torch.Generator().manual_seed(1)
    d, H, hd = 16, 4, 4
    w = torch.randn(d + 2 * hd, d, dtype=torch.float64, generator=g)
    b = torch.randn(d + 2 * hd, dtype=torch.float64, generator=g)
    wo = {"w": torch.randn(d, d, dtype=torch.float64, generator=g), "b": None}
    ln = {"gamma": torch.ones(d, dtype=torch.float64), "beta": torch.zeros(d, dtype=torch.float64)}
    base = {"ln": ln, "rel_k": None, "rel_v": None, "heads": H, "head_dim": hd, "queries_scale": hd ** -0.5,
            "pre_norm": True}
    mqa = dict(base, heads_kv=1, lin=[{"w": w, "b": b}, wo])
    wq, wk, wv = torch.split(w, [d, hd, hd])
    bq, bk, bv = torch.split(b, [d, hd, hd])
    full = dict(base, heads_kv=H, lin=[{"w": torch.cat([wq, wk.repeat(H, 1), wv.repeat(H, 1)]),
                                        "b": torch.cat([bq, bk.repeat(H), bv.repeat(H)])}, wo])
    fw = Forward(type("M", (), {"eps": None})())
    x = torch.randn(5, d, dtype=torch.float64, generator=g)
    (o1, p1), (o2, p2) = fw.attention(mqa, x, causal=True), fw.attention(full, x, causal=True)
    check("multi-query attention == heads with replicated k / v", (o1 - o2).abs().max().item() < 1e-12 and
          (p1 - p2).abs().max().item() < 1e-12)


def _check_cli(check, tmp):
    sfile = os.path.join(tmp, "cli_sent.txt")
    d = _make(tmp, "cli", "--vocab-size", 100, "--eos-bias", 5, "--sample-sentences", sfile, "--dtype", "int8")
    sents = read_sentences(sfile)
    tfile = _write_lines(os.path.join(tmp, "cli_tgt.txt"), [" ".join(s.split()[:2]) for s in sents])
    p = build_parser()
    out_r, out_s = os.path.join(tmp, "r.json"), os.path.join(tmp, "s.json")
    stdout, sys.stdout = sys.stdout, open(os.devnull, "w")
    try:
        cmd_run(p.parse_args(["run", "--model", d, "--sentences", sfile, "--out", out_r]))
        cmd_score(p.parse_args(["score", "--model", d, "--sources", sfile, "--targets", tfile, "--out", out_s]))
    finally:
        sys.stdout.close()
        sys.stdout = stdout
    r, s = json.load(open(out_r, encoding="utf-8")), json.load(open(out_s, encoding="utf-8"))
    keys = {"source", "source_tokens", "source_ids", "target_ids", "target_tokens", "hypothesis_tokens",
            "decoder_input_ids", "stop_reason", "text", "step_log_probs", "step_log_probs_ct2", "score",
            "ct2_attention", "attentions"}
    check("run JSON: config_used + one entry per line with every key", len(r["sentences"]) == len(sents) and
          all(keys <= set(x) for x in r["sentences"]) and r["config_used"]["format"]["weight_dtypes"] == ["int8"])
    check("score JSON: token_log_probs one per target token + eos, mean", all(
        len(x["token_log_probs"]) == len(x["target_ids"]) == len(x["target_tokens"]) and
        abs(x["mean"] - sum(x["token_log_probs"]) / len(x["token_log_probs"])) < 1e-12 for x in s["pairs"]))


def cmd_selftest(a):
    torch.set_grad_enabled(False)
    check, t0 = _Checker(), time.time()
    tmp = tempfile.mkdtemp(prefix="ct2ref_selftest_")
    try:
        _check_bin_bytes(check, tmp)
        _check_quantization(check, tmp)
        _check_roundtrip(check, tmp)
        _check_torch_nn(check, tmp)
        _check_decoding(check, tmp)
        sents = read_sentences(os.path.join(tmp, "dec_sent.txt"))
        _check_layouts(check, tmp, sents)
        _check_config_vocab(check, tmp, sents)
        _check_spm_argos(check, tmp)
        _check_features(check, tmp, sents)
        _check_cli(check, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"selftest ({time.time() - t0:.1f} s): {check.passed} passed, {len(check.failed)} failed")
    if check.failed:
        print("failed: " + "; ".join(check.failed))
        sys.exit(1)


# ----------------------------------------------------------------------------------------------------------
def _add_make_format_arguments(m):
    m.add_argument("--out", required=True, help="the CTranslate2 model directory (replaced)")
    m.add_argument("--binary-version", type=int, default=CURRENT_BINARY_VERSION, help="2..6 (default 6)")
    m.add_argument("--spec-revision", type=int, default=CURRENT_REVISION, help="2..7 (default 7)")
    m.add_argument("--dtype", choices=QUANTIZATIONS, default="float32", help="the converter's --quantization")
    g = m.add_mutually_exclusive_group()
    g.add_argument("--alias-tied", dest="alias", action="store_const", const="tied",
                   help="alias only the tied tensors (embeddings / projection, relative values -> keys)")
    g.add_argument("--no-alias", dest="alias", action="store_const", const="none", help="store copies")
    m.set_defaults(alias="equal")
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--sample-sentences", default=None, help="write a few source sentences for this model here")


def _add_make_architecture_arguments(m):
    m.add_argument("--layers", type=int, default=2)
    m.add_argument("--decoder-layers", type=int, default=None, help="(default --layers)")
    m.add_argument("--d-model", type=int, default=32)
    m.add_argument("--heads", type=int, default=4)
    m.add_argument("--ffn", type=int, default=64)
    m.add_argument("--norm", choices=["pre", "post"], default="pre")
    m.add_argument("--no-final-norm", action="store_true", help="pre-norm without encoder/decoder layer_norm")
    m.add_argument("--activation", choices=list(ACTIVATIONS), default="relu")
    m.add_argument("--positions", choices=["sinusoidal", "learned", "stored-sinusoidal"], default="sinusoidal",
                   help="sinusoidal: no table (CTranslate2 generates it); stored-sinusoidal: OpenNMT-py's table")
    m.add_argument("--max-positions", type=int, default=5000, help="rows of a stored table (OpenNMT-py: 5000)")
    m.add_argument("--layernorm-embedding", action="store_true")
    m.add_argument("--no-scale-embeddings", dest="scale_embeddings", action="store_false")
    m.add_argument("--scale-embeddings-float", action="store_true",
                   help="store scale_embeddings as float32 sqrt(d) (or 1.0) as the fairseq converter does")
    m.add_argument("--vocab", choices=["shared", "separate"], default="shared")
    m.add_argument("--share-embeddings", action="store_true", help="encoder embeddings = decoder embeddings")
    m.add_argument("--tie-projection", action="store_true", help="decoder/projection/weight = decoder embeddings")
    for name, hlp in (("projection-bias", "decoder/projection/bias (OpenNMT-py's generator has one)"),
                      ("ffn-bias", "ffn linear biases"), ("attn-bias", "attention linear biases")):
        m.add_argument("--" + name, action=argparse.BooleanOptionalAction, default=True, help=hlp)
    m.add_argument("--eos-bias", type=float, default=0.0, help="added to the projection bias of </s>")
    m.add_argument("--relative-position", type=int, default=0, help="Shaw relative positions, max distance N "
                   "(implies --no-scale-embeddings, as the OpenNMT-py converter sets it)")
    m.add_argument("--relative-separate-values", action="store_true",
                   help="relative_position_values a table of its own (OpenNMT-py's converter stores the keys' table)")
    for f in ("rotary", "multi-query", "ffn-glu", "rms-norm", "alibi"):
        m.add_argument("--" + f, action="store_true")


def _add_make_vocab_arguments(m):
    m.add_argument("--eps", type=float, default=None, help="config.json layer_norm_epsilon (default null)")
    m.add_argument("--vocab-size", type=int, default=300)
    m.add_argument("--vocab-format", choices=["json", "txt"], default="json")
    m.add_argument("--specials", default=DEFAULT_SPECIALS, help="the first tokens, space separated")
    m.add_argument("--spm", action="store_true", help="train a SentencePiece model; its pieces are the vocabulary")
    g = m.add_mutually_exclusive_group()
    g.add_argument("--config", choices=["auto", "yes", "no"], default="auto",
                   help="write config.json (auto: binary version >= 6)")
    g.add_argument("--no-config", dest="config", action="store_const", const="no")
    m.add_argument("--decoder-start-token", default="<s>", help='"none": null (the user gives it)')
    m.add_argument("--add-source-bos", action="store_true")
    m.add_argument("--add-source-eos", action="store_true")
    m.add_argument("--argos", default=None, help="also write this .argosmodel (needs --spm)")
    m.add_argument("--argos-dir", default=None, help="also write the installed package folder")
    m.add_argument("--from-code", default="en")
    m.add_argument("--to-code", default="de")


def build_parser():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make", help="write a CTranslate2 directory with random weights")
    for add in (_add_make_format_arguments, _add_make_architecture_arguments, _add_make_vocab_arguments):
        add(m)
    r = sub.add_parser("run", help="tokenize, greedy-translate and write the attention maps as JSON")
    r.add_argument("--model", required=True, help="CTranslate2 directory, Argos package folder or .argosmodel")
    r.add_argument("--sentences", required=True, help="UTF-8 text, one source sentence a line")
    r.add_argument("--out", required=True)
    r.add_argument("--max-length", type=int, default=256, help="max_decoding_length (counts the eos)")
    r.add_argument("--min-length", type=int, default=1, help="min_decoding_length")
    s = sub.add_parser("score", help="teacher-forced log-probabilities (score_batch) and maps as JSON")
    s.add_argument("--model", required=True)
    s.add_argument("--sources", required=True)
    s.add_argument("--targets", required=True)
    s.add_argument("--out", required=True)
    sub.add_parser("selftest", help="check the script against itself and torch.nn")
    import ct2_converters  # noqa: E402  the Marian converters (convert-transformers, marian-npz, convert-marian)
    ct2_converters.add_parsers(sub)
    return ap


def main():
    a = build_parser().parse_args()
    torch.set_num_threads(1)
    if hasattr(a, "fn"):
        return a.fn(a)
    {"make": cmd_make, "run": cmd_run, "score": cmd_score, "selftest": cmd_selftest}[a.cmd](a)


if __name__ == "__main__":
    main()
