#!/usr/bin/env python3
"""An independent Python implementation of Hugging Face's multilingual encoder-decoder translation models:
M2M100ForConditionalGeneration (M2M100 and NLLB-200, config model_type "m2m_100") and
MBartForConditionalGeneration (mBART-50 many-to-many), their tokenizers (M2M100Tokenizer, NllbTokenizer /
NllbTokenizerFast's id layout, MBart50Tokenizer) and greedy generate() with a forced target-language token,
written from transformers' models/{m2m_100,nllb,mbart,mbart50}/ and generation/{utils,logits_process}.py, used
to check AttnLab's C++ loader of such directories.

  make     --family {m2m100,nllb,mbart50} --from REALDIR --out DIR [options]
                                             a Hugging Face directory with the real model's config fields but
                                             small dimensions, a SentencePiece model trained here, the tokenizer
                                             files, and random (seeded) weights as model.safetensors,
                                             pytorch_model.bin or two safetensors shards + index;
                                             --vocab-size N keeps the real embedding size (ids beyond the
                                             tokenizer have no token: left out of decoded text).
                                             model.safetensors is written tensor by tensor (the largest tensor
                                             in memory, not the model: the real 615 M parameters fit)
  run      --model DIR --sentences FILE --src-lang CODE --tgt-lang CODE --out OUT.json [--max-length N]
                                             tokenize, greedy-translate (num_beams=1) with forced_bos_token_id =
                                             the target language token, and the attention maps
  selftest [--from-root DIR]                 checks this script against itself and against torch.nn

Computes in float64 (weights stored as F16/BF16 are upcast). Needs Debian's python3-torch, numpy and
python3-sentencepiece (use /usr/bin/python3); `transformers` is not used and nothing is downloaded. What the
models share with MarianMT (safetensors reading/writing, the attention building blocks, ACT2FN, layer norm,
7-digit rounding, clean_up_tokenization) is imported from marian_reference.py, next to this script.
REALDIR is one of ../shared/data/hf-multilingual/{nllb-200-distilled-600M,m2m100_418M,
mbart-large-50-many-to-many-mmt}: its JSON files are read, never copied into the project.

Generation (GenerationMixin greedy search): input_ids = [decoder_start_token_id] (2, "</s>"); each step the
next-token logits go through the logits processors in transformers' order: NoBadWords (bad_words_ids),
ForcedBOS (at cur_len == 1 everything -inf but forced_bos_token_id), ForcedEOS (at cur_len == max_length - 1
everything -inf but forced_eos_token_id; mBART-50's generation_config has 2, M2M100/NLLB none); argmax; stop
when an eos id is produced or len(input_ids) >= max_length (max_length counts the decoder start token).

Output of run (JSON), one entry a line of the sentences file (split on "\\n" only):
  {"config_used": {eos_token_id, pad_token_id, decoder_start_token_id, forced_bos_token_id (the --tgt-lang
                   token's id), forced_eos_token_id, bad_words_ids, num_beams (configured; greedy uses 1),
                   num_beams_used, max_length (effective, counts the start token), max_length_source,
                   generation_settings_from, src_lang, tgt_lang, tokenizer {class, ids, layout},
                   model {model_type, dims, positions, final_logits_bias, ...}, weights_files,
                   stored_dtypes, notes},
   "sentences": [{"source",
                  "source_pieces"   (tokenize(): added/special tokens split off, the rest SentencePiece pieces;
                                     no language token, no </s>),
                  "source_ids"      (the encoder input: M2M100 / mBART-50 / NLLB: [src_lang] + piece ids +
                                     [</s>]; NLLB with legacy_behaviour: piece ids + [</s>, src_lang]),
                  "output_ids"      (generate()'s whole output row: [decoder_start] + target_ids),
                  "target_ids"      ([forced tgt_lang token] + greedy_ids: every generated token, one per step),
                  "greedy_ids"      (target_ids[1:]: the tokens chosen after the forced language token, with the
                                     final eos when reached),
                  "decoder_input_ids" ([decoder_start] + target_ids[:-1]: the teacher-forced pass that gives the
                                     attention maps; the forced language token is a real position in it),
                  "stop_reason"     ("eos" | "forced_eos" (ForcedEOS at max_length - 1) | "max_length"),
                  "text" (decode(target_ids, skip_special_tokens=True)), "text_clean_up" (+ the legacy
                  clean_up_tokenization), "first_step_log_probs_top5" ([id, log-prob] of the raw step-0
                  distribution, before ForcedBOS, among ids not banned), "first_free_step_log_probs_top5" (the same
                  at step 1, the first step that is not forced; null when there is none),
                  "step_log_probs" (log_softmax of the raw logits at each target_ids entry; entry 0 is the model's
                  own log-prob of the forced language token), "step_log_probs_processed" (log_softmax after the
                  logits processors: 0.0 at forced steps), "step_top2_margin" (best - second-best processed
                  score; null where forced),
                  "attentions": {"encoder": [layer][head][q][k], "decoder": [layer][head][t][t],
                                 "cross": [layer][head][t][src]}  (7 significant digits, teacher-forced pass
                                 over decoder_input_ids, so t runs over len(target_ids) positions),
                  "recompute_check" (with --check-recompute: {"same_ids", "max_abs_log_prob_diff"} of a greedy
                                     run without the key/value cache)}]}
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
    sys.exit("hf_multilingual_reference.py needs python3-sentencepiece (apt-get install python3-sentencepiece) "
             "and Debian's /usr/bin/python3")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# LN_EPS: nn.LayerNorm(embed_dim)'s PyTorch default eps 1e-5, which M2M100 and mBART use everywhere too
from marian_reference import (LN_EPS, _Checker, _refused, SPIECE_UNDERLINE, EncoderDecoderBlocks, _act, _ln, _public,  # noqa: E402
                              _to_bytes, clean_up_tokenization, read_safetensors, read_sentences, round7,
                              write_safetensors)

# ----------------------------------------------------------------------------------------------------------
# language code lists, as transformers' tokenizers define them
# ----------------------------------------------------------------------------------------------------------
# tokenization_m2m_100.py FAIRSEQ_LANGUAGE_CODES: the token is "__xx__", its id len(vocab.json) + index
M2M100_LANGS = {
    "m2m100": ("af am ar ast az ba be bg bn br bs ca ceb cs cy da de el en es et fa ff fi fr fy ga gd gl gu ha he "
               "hi hr ht hu hy id ig ilo is it ja jv ka kk km kn ko lb lg ln lo lt lv mg mk ml mn mr ms my ne nl "
               "no ns oc or pa pl ps pt ro ru sd si sk sl so sq sr ss su sv sw ta th tl tn tr uk ur uz vi wo xh "
               "yi yo zh zu").split(),
    "wmt21": "en ha is ja cs ru zh de".split(),
}
# tokenization_nllb.py FAIRSEQ_LANGUAGE_CODES (the default when neither special_tokens_map.json nor
# tokenizer_config.json lists additional_special_tokens)
NLLB_LANGS = (
    "ace_Arab ace_Latn acm_Arab acq_Arab aeb_Arab afr_Latn ajp_Arab aka_Latn amh_Ethi apc_Arab arb_Arab ars_Arab "
    "ary_Arab arz_Arab asm_Beng ast_Latn awa_Deva ayr_Latn azb_Arab azj_Latn bak_Cyrl bam_Latn ban_Latn bel_Cyrl "
    "bem_Latn ben_Beng bho_Deva bjn_Arab bjn_Latn bod_Tibt bos_Latn bug_Latn bul_Cyrl cat_Latn ceb_Latn ces_Latn "
    "cjk_Latn ckb_Arab crh_Latn cym_Latn dan_Latn deu_Latn dik_Latn dyu_Latn dzo_Tibt ell_Grek eng_Latn epo_Latn "
    "est_Latn eus_Latn ewe_Latn fao_Latn pes_Arab fij_Latn fin_Latn fon_Latn fra_Latn fur_Latn fuv_Latn gla_Latn "
    "gle_Latn glg_Latn grn_Latn guj_Gujr hat_Latn hau_Latn heb_Hebr hin_Deva hne_Deva hrv_Latn hun_Latn hye_Armn "
    "ibo_Latn ilo_Latn ind_Latn isl_Latn ita_Latn jav_Latn jpn_Jpan kab_Latn kac_Latn kam_Latn kan_Knda kas_Arab "
    "kas_Deva kat_Geor knc_Arab knc_Latn kaz_Cyrl kbp_Latn kea_Latn khm_Khmr kik_Latn kin_Latn kir_Cyrl kmb_Latn "
    "kon_Latn kor_Hang kmr_Latn lao_Laoo lvs_Latn lij_Latn lim_Latn lin_Latn lit_Latn lmo_Latn ltg_Latn ltz_Latn "
    "lua_Latn lug_Latn luo_Latn lus_Latn mag_Deva mai_Deva mal_Mlym mar_Deva min_Latn mkd_Cyrl plt_Latn mlt_Latn "
    "mni_Beng khk_Cyrl mos_Latn mri_Latn zsm_Latn mya_Mymr nld_Latn nno_Latn nob_Latn npi_Deva nso_Latn nus_Latn "
    "nya_Latn oci_Latn gaz_Latn ory_Orya pag_Latn pan_Guru pap_Latn pol_Latn por_Latn prs_Arab pbt_Arab quy_Latn "
    "ron_Latn run_Latn rus_Cyrl sag_Latn san_Deva sat_Beng scn_Latn shn_Mymr sin_Sinh slk_Latn slv_Latn smo_Latn "
    "sna_Latn snd_Arab som_Latn sot_Latn spa_Latn als_Latn srd_Latn srp_Cyrl ssw_Latn sun_Latn swe_Latn swh_Latn "
    "szl_Latn tam_Taml tat_Cyrl tel_Telu tgk_Cyrl tgl_Latn tha_Thai tir_Ethi taq_Latn taq_Tfng tpi_Latn tsn_Latn "
    "tso_Latn tuk_Latn tum_Latn tur_Latn twi_Latn tzm_Tfng uig_Arab ukr_Cyrl umb_Latn urd_Arab uzn_Latn vec_Latn "
    "vie_Latn war_Latn wol_Latn xho_Latn ydd_Hebr yor_Latn yue_Hant zho_Hans zho_Hant zul_Latn").split()
# tokenization_mbart50.py FAIRSEQ_LANGUAGE_CODES: ids sp_size + 1 + index, always in this order
MBART50_LANGS = (
    "ar_AR cs_CZ de_DE en_XX es_XX et_EE fi_FI fr_XX gu_IN hi_IN it_IT ja_XX kk_KZ ko_KR lt_LT lv_LV my_MM ne_NP "
    "nl_XX ro_RO ru_RU si_LK tr_TR vi_VN zh_CN af_ZA az_AZ bn_IN fa_IR he_IL hr_HR id_ID ka_GE km_KH mk_MK ml_IN "
    "mn_MN mr_IN pl_PL ps_AF pt_XX sv_SE sw_KE ta_IN te_IN th_TH tl_XX uk_UA ur_PK xh_ZA gl_ES sl_SI").split()

FAMILIES = {  # family -> (config model_type, tokenizer class, SentencePiece model type used by make)
    "m2m100": ("m2m_100", "M2M100Tokenizer", "bpe"),
    "nllb": ("m2m_100", "NllbTokenizer", "bpe"),
    "mbart50": ("mbart", "MBart50Tokenizer", "unigram"),
}
# configuration_m2m_100.py / configuration_mbart.py defaults, for keys a config.json leaves out
CONFIG_DEFAULTS = {
    "m2m_100": {"vocab_size": 128112, "max_position_embeddings": 1024, "encoder_layers": 12,
                "encoder_ffn_dim": 4096, "encoder_attention_heads": 16, "decoder_layers": 12, "decoder_ffn_dim": 4096,
                "decoder_attention_heads": 16, "activation_function": "relu", "d_model": 1024,
                "scale_embedding": True, "pad_token_id": 1, "bos_token_id": 0, "eos_token_id": 2,
                "decoder_start_token_id": 2, "forced_eos_token_id": None, "tie_word_embeddings": True},
    "mbart": {"vocab_size": 50265, "max_position_embeddings": 1024, "encoder_layers": 12, "encoder_ffn_dim": 4096,
              "encoder_attention_heads": 16, "decoder_layers": 12, "decoder_ffn_dim": 4096,
              "decoder_attention_heads": 16, "activation_function": "gelu", "d_model": 1024,
              "scale_embedding": False, "pad_token_id": 1, "bos_token_id": 0, "eos_token_id": 2,
              "decoder_start_token_id": None, "forced_eos_token_id": 2, "tie_word_embeddings": True},
}
# GenerationConfig()'s defaults, for keys a generation_config.json leaves out
GENERATION_DEFAULTS = {
    "max_length": 20, "num_beams": 1, "bad_words_ids": None, "forced_eos_token_id": None,
    "forced_bos_token_id": None, "eos_token_id": None, "pad_token_id": None, "decoder_start_token_id": None,
    "bos_token_id": None,
}
# _tied_weights_keys (regex patterns) of M2M100ForConditionalGeneration / MBartForConditionalGeneration
TIED_WEIGHTS_KEYS = {
    "m2m_100": ["encoder.embed_tokens.weight", "decoder.embed_tokens.weight", "lm_head.weight"],
    "mbart": ["model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight", "lm_head.weight"],
}
FAIRSEQ_SPECIALS = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}  # NLLB / mBART-50 ids (fairseq_offset 1)
MASK = "<mask>"

BUILTIN_TEXT = """The weather is nice today, and the children are playing in the garden.
My brother works in a small bakery near the old railway station.
Could you please tell me where the nearest post office is?
We travelled to the mountains last summer and walked for many hours.
The committee will publish its report at the end of next month.
She reads a newspaper every morning before she goes to work.
The museum opens at nine o'clock and closes at six in the evening.
Our neighbours have a black cat and two very loud dogs.
It is important to drink enough water when the weather is hot.
The train to Berlin was late because of the heavy snow.
He bought fresh bread, cheese, apples and a bottle of milk.
The students asked the teacher many questions about the history of the city.
Translation models learn to map sentences from one language to another.
A small boat crossed the lake while the sun was setting.
The doctor said that I should rest for a few days.
Das Wetter ist heute schön, und die Kinder spielen im Garten.
Mein Bruder arbeitet in einer kleinen Bäckerei in der Nähe des alten Bahnhofs.
Können Sie mir bitte sagen, wo das nächste Postamt ist?
Wir sind letzten Sommer in die Berge gefahren und viele Stunden gewandert.
Der Ausschuss wird seinen Bericht am Ende des nächsten Monats veröffentlichen.
Sie liest jeden Morgen eine Zeitung, bevor sie zur Arbeit geht.
Das Museum öffnet um neun Uhr und schließt um sechs Uhr abends.
Unsere Nachbarn haben eine schwarze Katze und zwei sehr laute Hunde.
Es ist wichtig, genug Wasser zu trinken, wenn das Wetter heiß ist.
Der Zug nach Berlin hatte wegen des starken Schnees Verspätung.
Er kaufte frisches Brot, Käse, Äpfel und eine Flasche Milch.
Die Studenten stellten dem Lehrer viele Fragen über die Geschichte der Stadt.
Übersetzungsmodelle lernen, Sätze von einer Sprache in eine andere zu übertragen.
Ein kleines Boot überquerte den See, während die Sonne unterging.
Der Arzt sagte, dass ich mich ein paar Tage ausruhen sollte.
"""


# ----------------------------------------------------------------------------------------------------------
# small helpers
# ----------------------------------------------------------------------------------------------------------
def load_json(path, default=None):
    if not os.path.exists(path):
        return default
    with open(path, encoding="utf-8") as f:
        return json.load(f, object_pairs_hook=collections.OrderedDict)


def dump_json(obj, path, indent=2, ensure_ascii=True):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=indent, ensure_ascii=ensure_ascii)
        f.write("\n")


# ----------------------------------------------------------------------------------------------------------
# weight files: safetensors (written and read by hand, by marian_reference.py's write_safetensors /
# read_safetensors), torch.save'd .bin, sharded safetensors + index
# ----------------------------------------------------------------------------------------------------------
def read_safetensors_lean(path):
    """marian_reference.read_safetensors's result (name -> float64 tensor, name -> stored dtype), read tensor by
    tensor from the file instead of from one bytes copy of it, converted once: a 615 M-parameter model needs its
    float64 tensors plus one tensor in flight (about 6 GiB), not 10 GiB."""
    src = {"F32": "<f4", "F64": "<f8", "F16": "<f2", "BF16": "<u2"}
    out, dtypes = {}, {}
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        base = 8 + n
        for name, t in header.items():
            if name == "__metadata__":
                continue
            b, e = t["data_offsets"]
            dt = t["dtype"]
            if dt not in src:
                raise ValueError(f"{path}: tensor {name} has unsupported dtype {dt}")
            size = np.dtype(src[dt]).itemsize
            f.seek(base + b)
            raw = np.fromfile(f, dtype=src[dt], count=(e - b) // size)
            if raw.size * size != e - b or raw.size != int(np.prod(t["shape"])):
                raise ValueError(f"{path}: tensor {name}: {raw.size} values for shape {t['shape']}")
            if dt == "BF16":
                raw = (raw.astype(np.uint32) << 16).view(np.float32)
            out[name] = torch.from_numpy(raw.astype(np.float64).reshape(t["shape"]))
            dtypes[name] = dt
    return out, dtypes


def read_weights(model_dir):
    """from_pretrained's order: model.safetensors, model.safetensors.index.json, pytorch_model.bin.
    Returns (name -> float64 tensor, name -> stored dtype, [files read])."""
    st = os.path.join(model_dir, "model.safetensors")
    idx = os.path.join(model_dir, "model.safetensors.index.json")
    binf = os.path.join(model_dir, "pytorch_model.bin")
    if os.path.exists(st):
        w, dt = read_safetensors_lean(st)
        return w, dt, ["model.safetensors"]
    if os.path.exists(idx):
        wm = load_json(idx)["weight_map"]
        w, dt, files = {}, {}, sorted(set(wm.values()))
        for fn in files:
            ww, dd = read_safetensors_lean(os.path.join(model_dir, fn))
            w.update(ww)
            dt.update(dd)
        missing = [k for k in wm if k not in w]
        if missing:
            raise KeyError(f"{idx}: {missing[:3]} listed in weight_map but not in the shards")
        return w, dt, ["model.safetensors.index.json"] + files
    if os.path.exists(binf):
        sd = torch.load(binf, map_location="cpu")
        return ({k: v.to(torch.float64) for k, v in sd.items()}, {k: str(v.dtype) for k, v in sd.items()},
                ["pytorch_model.bin"])
    raise FileNotFoundError(f"{model_dir}: no model.safetensors, model.safetensors.index.json or pytorch_model.bin")


def hf_safetensors_names(sd, tied_patterns):
    """save_pretrained(safe_serialization=True): names sharing one storage are grouped; in each group, the names
    (sorted) matching _tied_weights_keys are dropped while another one is left, so the kept name is the one
    that matches no pattern (model.shared.weight). Returns the kept names in state_dict order."""
    groups = collections.OrderedDict()
    for k, v in sd.items():
        groups.setdefault(id(v), []).append(k)
    drop = set()
    for names in groups.values():
        if len(names) < 2:
            continue
        found = 0
        for name in sorted(names):
            if any(re.search(p, name) for p in tied_patterns):
                found += 1
                if found < len(names):
                    drop.add(name)
        if len([n for n in names if n not in drop]) > 1:
            raise RuntimeError(f"shared tensors {names} not resolved by _tied_weights_keys")
    return [k for k in sd if k not in drop]


def save_weights(out, fmt, sd, names, dtype):
    """Writes sd (name -> float32 array; tied names share one array) restricted to `names` (fmt None: only
    removes the weight files of an earlier make)."""
    for f in os.listdir(out):
        if f.startswith("model") and (f.endswith(".safetensors") or f.endswith(".index.json")) \
                or f == "pytorch_model.bin":
            os.remove(os.path.join(out, f))
    if fmt is None:
        return []
    if fmt == "safetensors":
        write_safetensors(os.path.join(out, "model.safetensors"), {k: sd[k] for k in names}, dtype, sort_names=True)
        return ["model.safetensors"]
    if fmt == "bin":
        tdt = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}[dtype]
        tensors, od = {}, collections.OrderedDict()
        for k in names:  # torch.save of the state_dict: tied names are one tensor (one storage)
            if id(sd[k]) not in tensors:
                tensors[id(sd[k])] = torch.from_numpy(sd[k]).to(tdt)
            od[k] = tensors[id(sd[k])]
        torch.save(od, os.path.join(out, "pytorch_model.bin"))
        return ["pytorch_model.bin"]
    return _save_sharded(out, sd, names, dtype)


def _save_sharded(out, sd, names, dtype):
    """As save_pretrained shards: tensors in state_dict order split into consecutive shards (here two: the
    first shard ends where half the bytes are reached), model-0000i-of-00002.safetensors, and
    model.safetensors.index.json {"metadata": {"total_size": bytes of all tensors}, "weight_map": {name: file}}
    (sort_keys)."""
    isz = {"F32": 4, "F16": 2, "BF16": 2}[dtype]
    sizes = [int(np.prod(np.shape(sd[k]))) * isz for k in names]
    total = sum(sizes)
    cut = 1
    while cut < len(names) - 1 and sum(sizes[:cut]) < total / 2:
        cut += 1
    shards = [names[:cut], names[cut:]]
    wm, files = {}, []
    for i, ks in enumerate(shards):
        fn = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        write_safetensors(os.path.join(out, fn), {k: sd[k] for k in ks}, dtype, sort_names=True)
        wm.update({k: fn for k in ks})
        files.append(fn)
    with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": wm}, f, indent=2, sort_keys=True)
        f.write("\n")
    return ["model.safetensors.index.json"] + files


# ----------------------------------------------------------------------------------------------------------
# tokenizers
# ----------------------------------------------------------------------------------------------------------
class Tok:
    """What the three tokenizers share: PreTrainedTokenizer.tokenize splits the text on the added tokens
    (longest match first; specials, language codes, <mask>), the rest goes through SentencePiece as pieces;
    decode(skip_special_tokens=True) drops all_special_ids and joins the rest with convert_tokens_to_string."""

    cls_name = ""

    def __init__(self, model_dir):
        self.dir = model_dir
        self.tcfg = load_json(os.path.join(model_dir, "tokenizer_config.json"), {})
        self.smap = load_json(os.path.join(model_dir, "special_tokens_map.json"), {})
        self.sp = spm.SentencePieceProcessor(model_file=os.path.join(model_dir, "sentencepiece.bpe.model"))
        self.notes = []
        self.added = {}  # added token string -> id (for splitting the text and for decoding)
        self.special_ids = set()

    def _finish(self):
        self.inv_added = {i: t for t, i in self.added.items()}
        alts = sorted(self.added, key=len, reverse=True)
        self._split_re = re.compile("(" + "|".join(re.escape(t) for t in alts) + ")") if alts else None
        self.clean_up = bool(self.tcfg.get("clean_up_tokenization_spaces", False))

    def tokenize(self, text):
        pieces = []
        chunks = self._split_re.split(text) if self._split_re else [text]
        for chunk in chunks:
            if not chunk:
                continue
            if chunk in self.added:
                pieces.append(chunk)
            else:
                pieces.extend(self.sp.encode(chunk, out_type=str))
        return pieces

    def encode(self, text, src_lang):
        """(pieces, encoder input ids)"""
        pieces = self.tokenize(text)
        ids = [self.piece_id(p) for p in pieces]
        lang = self.lang_id(src_lang)
        return pieces, self._with_specials(ids, lang)

    def _with_specials(self, ids, lang):
        return [lang] + ids + [self.eos_id]

    def decode(self, ids):
        """(decode(ids, skip_special_tokens=True), the same + clean_up_tokenization)"""
        tokens = []
        for i in ids:
            if i in self.special_ids:
                continue
            t = self.inv_added.get(i)
            if t is None:
                t = self.id_token(i)
            if t is None:
                self.notes.append(f"decode: id {i} has no token (the slow tokenizer would raise); left out")
                continue
            tokens.append(t)
        text = self.join(tokens) if tokens else ""
        return text, clean_up_tokenization(text)

    def info(self):
        return collections.OrderedDict([
            ("class", self.cls_name), ("bos_id", self.bos_id), ("eos_id", self.eos_id), ("pad_id", self.pad_id),
            ("unk_id", self.unk_id), ("mask_id", self.mask_id), ("sentencepiece_size", len(self.sp)),
            ("tokenizer_vocab_size", self.vocab_size), ("language_codes", len(self.lang_ids)),
            ("first_language", [self.lang_codes[0], self.lang_ids[self.lang_codes[0]]]),
            ("last_language", [self.lang_codes[-1], self.lang_ids[self.lang_codes[-1]]]),
            ("clean_up_tokenization_spaces", self.clean_up),
            ("special_ids_skipped_in_text", sorted(self.special_ids))])


class M2M100Tok(Tok):
    """M2M100Tokenizer: pieces by SentencePiece, ids by vocab.json (missing -> vocab.json's <unk>), language
    tokens "__xx__" numbered len(vocab.json) + index in FAIRSEQ_LANGUAGE_CODES[language_codes]; then
    num_madeup_words ids that decode to "<unk>". Source: [__src__] + pieces + [</s>]; decode:
    sp_model.decode(tokens)."""

    cls_name = "M2M100Tokenizer"

    def __init__(self, model_dir):
        super().__init__(model_dir)
        self.vocab = load_json(os.path.join(model_dir, "vocab.json"))
        self.inv = {i: p for p, i in self.vocab.items()}
        self.lang_codes = M2M100_LANGS[self.tcfg.get("language_codes", "m2m100")]
        n = len(self.vocab)
        self.lang_ids = {c: n + i for i, c in enumerate(self.lang_codes)}
        self.vocab_size = n + len(self.lang_codes) + int(self.tcfg.get("num_madeup_words", 8))
        self.unk_id = self.vocab["<unk>"]
        self.bos_id, self.eos_id, self.pad_id = (self.vocab.get(t, self.unk_id) for t in ("<s>", "</s>", "<pad>"))
        self.mask_id = None
        specials = {t: self.vocab[t] for t in ("<s>", "</s>", "<pad>", "<unk>") if t in self.vocab}
        langs = {f"__{c}__": i for c, i in self.lang_ids.items()}
        extra = {t: self._token_id(t, langs) for t in self.smap.get("additional_special_tokens") or []}
        self.added = {**specials, **langs, **extra}
        self.special_ids = set(self.added.values())
        self._check_explicit(langs)
        self._finish()

    def _token_id(self, t, langs):
        return langs[t] if t in langs else self.vocab.get(t, self.unk_id)

    def _check_explicit(self, langs):
        explicit = dict(load_json(os.path.join(self.dir, "added_tokens.json"), {}))
        for i, v in (self.tcfg.get("added_tokens_decoder") or {}).items():
            explicit.setdefault(v["content"], int(i))
        bad = [(t, explicit[t], i) for t, i in langs.items() if t in explicit and explicit[t] != i]
        if bad:
            self.notes.append(f"added_tokens ids differ from len(vocab.json) + index (used): {bad[:3]}")

    def lang_id(self, code):
        tok = code if code.startswith("__") else f"__{code}__"
        if tok not in self.added or tok.strip("_") not in self.lang_ids:
            raise KeyError(f"{code!r} is not an M2M100 language code ({self.lang_codes[:4]}...)")
        return self.lang_ids[tok.strip("_")]

    def piece_id(self, p):
        return self.added[p] if p in self.added else self.vocab.get(p, self.unk_id)

    def id_token(self, i):
        if not 0 <= i < self.vocab_size:
            return None  # beyond the tokenizer (make --vocab-size): no token
        return self.inv.get(i, "<unk>")  # madeup words -> "<unk>" (decoded by sentencepiece)

    def join(self, tokens):
        return self.sp.decode(tokens)


class FairseqTok(Tok):
    """NLLB / mBART-50: fairseq ids = SentencePiece id + 1 (<s>=0, <pad>=1, </s>=2, <unk>=3; SentencePiece's own
    unk (0) -> 3), language codes sp_size + 1 + index, then <mask>."""

    def __init__(self, model_dir, codes):
        super().__init__(model_dir)
        n = len(self.sp)
        self.lang_codes = codes
        self.lang_ids = {c: n + 1 + i for i, c in enumerate(codes)}
        self.mask_id = n + 1 + len(codes)
        self.vocab_size = n + 1 + len(codes) + 1
        self.bos_id, self.pad_id, self.eos_id, self.unk_id = 0, 1, 2, 3
        self.added = {**FAIRSEQ_SPECIALS, **self.lang_ids, MASK: self.mask_id}
        self.special_ids = set(self.added.values())

    def lang_id(self, code):
        if code not in self.lang_ids:
            raise KeyError(f"{code!r} is not a {self.cls_name} language code ({self.lang_codes[:3]}...)")
        return self.lang_ids[code]

    def piece_id(self, p):
        if p in self.added:
            return self.added[p]
        i = self.sp.piece_to_id(p)
        return i + 1 if i else self.unk_id

    def id_token(self, i):
        return self.sp.id_to_piece(i - 1) if 0 <= i - 1 < len(self.sp) else None


class NllbTok(FairseqTok):
    """NllbTokenizer: language codes = special_tokens_map.json's additional_special_tokens (else
    tokenizer_config.json's, else FAIRSEQ_LANGUAGE_CODES); source [src_lang] + pieces + [</s>], or with
    legacy_behaviour pieces + [</s>, src_lang]; decode "".join(tokens).replace("▁", " ").strip(). Explicit ids in
    tokenizer_config.json's added_tokens_decoder win (convert_tokens_to_ids looks there first)."""

    cls_name = "NllbTokenizer"

    def __init__(self, model_dir):
        tcfg = load_json(os.path.join(model_dir, "tokenizer_config.json"), {})
        smap = load_json(os.path.join(model_dir, "special_tokens_map.json"), {})
        codes = smap.get("additional_special_tokens") or tcfg.get("additional_special_tokens") or NLLB_LANGS
        codes = [c["content"] if isinstance(c, dict) else c for c in codes]
        super().__init__(model_dir, codes)
        self.legacy = bool(self.tcfg.get("legacy_behaviour", False))
        self._explicit_ids()
        self._finish()

    def _explicit_ids(self):
        dec = self.tcfg.get("added_tokens_decoder") or {}
        moved = []
        for i, v in dec.items():
            t, i = v["content"], int(i)
            if t in self.added and self.added[t] != i:
                moved.append((t, self.added[t], i))
                self.added[t] = i
        if moved:
            self.lang_ids = {c: self.added[c] for c in self.lang_codes}
            self.mask_id = self.added[MASK]
            self.special_ids = set(self.added.values())
            self.notes.append(f"tokenizer_config.json added_tokens_decoder moves ids (used): {moved[:3]}")

    def _with_specials(self, ids, lang):
        return ids + [self.eos_id, lang] if self.legacy else [lang] + ids + [self.eos_id]

    def join(self, tokens):
        return "".join(tokens).replace(SPIECE_UNDERLINE, " ").strip()

    def info(self):
        d = super().info()
        d["legacy_behaviour"] = self.legacy
        return d


class MBart50Tok(FairseqTok):
    """MBart50Tokenizer: lang_code_to_id from FAIRSEQ_LANGUAGE_CODES (always that order), source [src_lang] +
    pieces + [</s>]; decode AlbertTokenizer.convert_tokens_to_string (special tokens written out, the rest by
    sp_model.decode, stripped)."""

    cls_name = "MBart50Tokenizer"

    def __init__(self, model_dir):
        super().__init__(model_dir, MBART50_LANGS)
        listed = self.smap.get("additional_special_tokens") or []
        if listed and [c for c in listed if c in self.lang_ids] != MBART50_LANGS[:len(listed)]:
            self.notes.append("special_tokens_map.json lists the language codes in another order (ids follow "
                              "FAIRSEQ_LANGUAGE_CODES)")
        self._finish()

    def join(self, tokens):
        out, cur, prev_special = " ", [], False
        for t in tokens:
            if t in self.added:
                out += ("" if prev_special else " ") + self.sp.decode(cur) + t
                cur, prev_special = [], True
            else:
                cur.append(t)
                prev_special = False
        return (out + self.sp.decode(cur)).strip()


def tokenizer_class(model_dir):
    tcfg = load_json(os.path.join(model_dir, "tokenizer_config.json"), {})
    cfg = load_json(os.path.join(model_dir, "config.json"), {})
    name = (tcfg.get("tokenizer_class") or cfg.get("tokenizer_class") or "").replace("Fast", "")
    if not name:
        if os.path.exists(os.path.join(model_dir, "vocab.json")):
            name = "M2M100Tokenizer"
        else:
            name = "MBart50Tokenizer" if cfg.get("model_type") == "mbart" else "NllbTokenizer"
    classes = {"M2M100Tokenizer": M2M100Tok, "NllbTokenizer": NllbTok, "MBart50Tokenizer": MBart50Tok}
    if name not in classes:
        raise KeyError(f"tokenizer class {name} is not supported ({sorted(classes)})")
    return classes[name]


def load_tokenizer(model_dir):
    return tokenizer_class(model_dir)(model_dir)


# ----------------------------------------------------------------------------------------------------------
# positions
# ----------------------------------------------------------------------------------------------------------
def m2m100_sinusoids(n_rows, dim, padding_idx):
    """M2M100SinusoidalPositionalEmbedding.get_embedding, in float32 as torch computes it: half = dim // 2,
    f_i = exp(i * -(ln 10000 / (half - 1))), row p = [sin(p f_0..f_half-1), cos(p f_0..f_half-1)] (sin first
    half, cos second, not interleaved), a zero column when dim is odd, the padding_idx row zero.
    (Each row depends only on p, so the table made "large enough" equals transformers' growing one.)"""
    half = dim // 2
    step = math.log(10000) / (half - 1)
    f = torch.exp(torch.arange(half, dtype=torch.int64).float() * -step)
    ang = torch.arange(n_rows, dtype=torch.int64).float().unsqueeze(1) * f.unsqueeze(0)
    emb = torch.cat([torch.sin(ang), torch.cos(ang)], dim=1).view(n_rows, -1)
    if dim % 2 == 1:
        emb = torch.cat([emb, torch.zeros(n_rows, 1)], dim=1)
    if padding_idx is not None:
        emb[padding_idx, :] = 0
    return emb


def m2m100_position_ids(ids, padding_idx, past):
    """create_position_ids_from_input_ids: mask = ids != pad; (cumsum(mask) + past) * mask + pad. Non-pad tokens
    count from pad + 1; a pad token gets position pad (the zero row). In incremental decoding (one new token,
    past = cached length) this is (1 + past) * (token != pad) + pad."""
    t = torch.tensor(ids, dtype=torch.long)
    mask = t.ne(padding_idx).int()
    return ((torch.cumsum(mask, dim=0).type_as(mask) + past) * mask).long() + padding_idx


def mbart_position_ids(n, past):
    """MBartLearnedPositionalEmbedding.forward: arange(past, past + n) + offset 2 (padding ignored)."""
    return torch.arange(past, past + n, dtype=torch.long) + 2


# ----------------------------------------------------------------------------------------------------------
# model (M2M100ForConditionalGeneration / MBartForConditionalGeneration), functional, float64
# ----------------------------------------------------------------------------------------------------------
class Seq2Seq(EncoderDecoderBlocks):
    """Pre-layer-norm Transformer: embeddings = embed_tokens(ids) * (sqrt(d_model) if scale_embedding) +
    positions (mBART: then layernorm_embedding); each layer x += SelfAttn(self_attn_layer_norm(x)) (decoder:
    causal; then x += CrossAttn(encoder_attn_layer_norm(x), encoder output)); x += fc2(act(fc1(
    final_layer_norm(x)))); after the layers the encoder's / decoder's layer_norm. Logits = lm_head(x)
    (+ final_logits_bias for mBART). The tied embedding lookup, _layer, _proj, _heads, _attend and max_length
    are marian_reference.py's EncoderDecoderBlocks'."""

    q_scaled = True  # M2M100Attention / MBartAttention scale the query projection (_q), not the scores

    def __init__(self, model_dir):
        self.dir = model_dir
        raw = load_json(os.path.join(model_dir, "config.json"))
        mt = raw.get("model_type")
        if mt not in CONFIG_DEFAULTS:
            raise KeyError(f"model_type {mt!r}: only m2m_100 and mbart are supported")
        c = dict(CONFIG_DEFAULTS[mt])
        c.update(raw)
        self.mt, self.c, self.d = mt, c, c["d_model"]
        self.act = _act(c["activation_function"])
        self.scale = math.sqrt(self.d) if c["scale_embedding"] else 1.0
        self.pad = c["pad_token_id"]
        self.w, dtypes, self.weights_files = read_weights(model_dir)
        self.dtypes = sorted(set(dtypes.values()))
        self.notes = []
        self._embeddings()
        self._positions()
        self.enc_layers = [self._layer(f"model.encoder.layers.{i}", False) for i in range(c["encoder_layers"])]
        self.dec_layers = [self._layer(f"model.decoder.layers.{i}", True) for i in range(c["decoder_layers"])]
        self.enc_heads, self.dec_heads = c["encoder_attention_heads"], c["decoder_attention_heads"]
        self.norms = {}
        for side in ("encoder", "decoder"):
            self.norms[side] = (self.w[f"model.{side}.layer_norm.weight"], self.w[f"model.{side}.layer_norm.bias"])
            if mt == "mbart":
                self.norms[side + "_emb"] = (self.w[f"model.{side}.layernorm_embedding.weight"],
                                             self.w[f"model.{side}.layernorm_embedding.bias"])
        self._gen_settings()

    def _embeddings(self):
        """model.shared is the encoder's and decoder's embed_tokens (tied; any stored copy must agree) and, with
        tie_word_embeddings, lm_head. final_logits_bias: mBART's stored buffer (missing -> zeros,
        _keys_to_ignore_on_load_missing); M2M100 has none (a stored one is an unexpected key, ignored)."""
        w, V = self.w, self.c["vocab_size"]
        name, emb = self._shared_embedding()
        if emb.shape[0] != V:
            raise ValueError(f"{name} has {emb.shape[0]} rows, config vocab_size {V}")
        self.emb = emb
        if self.c["tie_word_embeddings"]:
            self.lm_head = emb
            if "lm_head.weight" in w and not torch.equal(w["lm_head.weight"], emb):
                self.notes.append("lm_head.weight differs from the embeddings but tie_word_embeddings: ignored")
        else:
            self.lm_head = w["lm_head.weight"]
        self.flb_source = "none"
        self.flb = torch.zeros(V, dtype=torch.float64)
        if self.mt == "mbart":
            self.flb_source = "stored" if "final_logits_bias" in w else "missing (zeros)"
            if "final_logits_bias" in w:
                self.flb = w["final_logits_bias"].reshape(-1)
        elif "final_logits_bias" in w:
            self.notes.append("final_logits_bias stored for M2M100: not a parameter of the model, ignored")

    def _positions(self):
        if self.mt == "m2m_100":
            n = self.c["max_position_embeddings"] + 2  # offset 2; rows grow on demand (_pos_rows)
            self.sin = m2m100_sinusoids(n, self.d, self.pad).to(torch.float64)
            for side in ("encoder", "decoder"):
                if f"model.{side}.embed_positions.weights" in self.w or f"model.{side}.embed_positions.weight" \
                        in self.w:
                    self.notes.append(f"stored {side} embed_positions ignored (sinusoidal, a non-persistent buffer)")
            self.pos_source = "sinusoidal (M2M100SinusoidalPositionalEmbedding, ids from pad+1)"
        else:
            self.pos = {s: self.w[f"model.{s}.embed_positions.weight"] for s in ("encoder", "decoder")}
            self.pos_source = "learned (MBartLearnedPositionalEmbedding, offset 2)"

    def _pos_rows(self, pos_ids, side):
        if self.mt == "m2m_100":
            need = int(pos_ids.max()) + 1
            if need > self.sin.shape[0]:  # make_weights(max_pos + offset)
                self.sin = m2m100_sinusoids(need + 2, self.d, self.pad).to(torch.float64)
            return self.sin[pos_ids]
        table = self.pos[side]
        if int(pos_ids.max()) >= table.shape[0]:
            raise ValueError(f"{side} position {int(pos_ids.max()) - 2} is past max_position_embeddings "
                             f"{table.shape[0] - 2}")
        return table[pos_ids]

    def position_ids(self, ids, past):
        if self.mt == "m2m_100":
            return m2m100_position_ids(ids, self.pad, past)
        return mbart_position_ids(len(ids), past)

    def embed(self, ids, side, past=0):
        x = self.emb[torch.tensor(ids, dtype=torch.long)] * self.scale
        x = x + self._pos_rows(self.position_ids(ids, past), side)
        if self.mt == "mbart":
            x = _ln(x, *self.norms[side + "_emb"])
        return x

    def _gen_settings(self):
        """model.generation_config: generation_config.json when present (missing keys: GenerationConfig()'s
        defaults), else GenerationConfig.from_model_config(config.json + the config class defaults)."""
        gpath = os.path.join(self.dir, "generation_config.json")
        g = dict(GENERATION_DEFAULTS)
        if os.path.exists(gpath):
            g.update(load_json(gpath))
            self.gen_source = "generation_config.json"
        else:
            g.update({k: self.c[k] for k in GENERATION_DEFAULTS if self.c.get(k) is not None})
            self.gen_source = "config.json"
        if g["max_length"] is None:
            g["max_length"] = GENERATION_DEFAULTS["max_length"]
        if g["decoder_start_token_id"] is None:  # _prepare_special_tokens: falls back to bos for enc-dec
            g["decoder_start_token_id"] = g["bos_token_id"]
        self.g = g

    # ---- building blocks (and those of EncoderDecoderBlocks; _attend takes the query scaled by _q) ----
    def _q(self, y, L, a, H):
        q = self._heads(self._proj(y, L, f"{a}.q_proj"), H)
        return q * (q.shape[-1] ** -0.5)

    def _kv(self, x, L, a, H):
        return self._heads(self._proj(x, L, f"{a}.k_proj"), H), self._heads(self._proj(x, L, f"{a}.v_proj"), H)

    def _ffn(self, x, L):
        h = _ln(x, L["final.ln.w"], L["final.ln.b"])
        return x + self._proj(self.act(self._proj(h, L, "fc1")), L, "fc2")

    # ---- encoder ----
    def encode(self, ids):
        """ids: the encoder input ids. Returns (hidden [S, d] after the final layer_norm, attentions [L][H,S,S])."""
        x = self.embed(ids, "encoder")
        attns, H = [], self.enc_heads
        for L in self.enc_layers:
            y = _ln(x, L["self_attn.ln.w"], L["self_attn.ln.b"])
            k, v = self._kv(y, L, "self_attn", H)
            o, p = self._attend(self._q(y, L, "self_attn", H), k, v, L, "self_attn")
            x = self._ffn(x + o, L)
            attns.append(p)
        return _ln(x, *self.norms["encoder"]), attns

    # ---- decoder ----
    def _dec_layer(self, x, L, self_kv, cross_kv, causal_offset):
        H = self.dec_heads
        y = _ln(x, L["self_attn.ln.w"], L["self_attn.ln.b"])
        k, v = self._kv(y, L, "self_attn", H)
        if self_kv is not None:  # cached keys/values of the earlier positions
            k, v = torch.cat([self_kv[0], k], dim=1), torch.cat([self_kv[1], v], dim=1)
        o, p = self._attend(self._q(y, L, "self_attn", H), k, v, L, "self_attn", causal_offset)
        x = x + o
        y = _ln(x, L["encoder_attn.ln.w"], L["encoder_attn.ln.b"])
        o, pc = self._attend(self._q(y, L, "encoder_attn", H), cross_kv[0], cross_kv[1], L, "encoder_attn")
        return self._ffn(x + o, L), p, pc, (k, v)

    def _logits(self, y):
        y = _ln(y, *self.norms["decoder"])
        if y.shape[0] == 1:
            return torch.addmv(self.flb, self.lm_head, y[0])[None]
        return F.linear(y, self.lm_head) + self.flb

    def decode_full(self, dec_ids, enc, logits=True):
        """Teacher-forced decoder over dec_ids from position 0 (no cache, positions by the whole sequence).
        Returns (logits [T, V] or None, self [L][H, T, T], cross [L][H, T, S])."""
        y = self.embed(dec_ids, "decoder", 0)
        sa, ca = [], []
        for L in self.dec_layers:
            y, p, pc, _ = self._dec_layer(y, L, None, self._kv(enc, L, "encoder_attn", self.dec_heads), 0)
            sa.append(p)
            ca.append(pc)
        return (self._logits(y) if logits else None), sa, ca

    def new_cache(self, enc):
        return {"past": 0, "self": [None] * len(self.dec_layers),
                "cross": [self._kv(enc, L, "encoder_attn", self.dec_heads) for L in self.dec_layers]}

    def decode_step(self, token, cache):
        """One new decoder token with the key/value cache (past_key_values): its position from the past length.
        Returns (logits [V], self rows [L][H, past+1], cross rows [L][H, S])."""
        y = self.embed([token], "decoder", cache["past"])
        sa, ca = [], []
        for i, L in enumerate(self.dec_layers):
            y, p, pc, cache["self"][i] = self._dec_layer(y, L, cache["self"][i], cache["cross"][i], None)
            sa.append(p[:, 0])
            ca.append(pc[:, 0])
        cache["past"] += 1
        return self._logits(y)[0], sa, ca

    # ---- greedy generate (num_beams=1; max_length() from EncoderDecoderBlocks) ----
    def _processors(self, ids, scores, max_length, forced_bos):
        """NoBadWords, ForcedBOS, ForcedEOS (transformers' order). Returns (processed scores, banned ids,
        forced?, forced eos?)."""
        banned = []
        for b in self._bad:
            if len(b) == 1 or (len(ids) >= len(b) - 1 and ids[len(ids) - (len(b) - 1):] == b[:-1]):
                banned.append(b[-1])
        if banned:
            scores[torch.tensor(banned)] = float("-inf")
        forced, forced_eos = False, False
        if forced_bos is not None and len(ids) == 1:
            scores = torch.full_like(scores, float("-inf"))
            scores[forced_bos] = 0.0
            forced = True
        if self._forced_eos and len(ids) == max_length - 1:
            scores = torch.full_like(scores, float("-inf"))
            scores[torch.tensor(self._forced_eos)] = 0.0
            forced, forced_eos = True, True
        return scores, banned, forced, forced_eos

    def _prepare_generation(self):
        g = self.g
        as_list = lambda v: [] if v is None else (list(v) if isinstance(v, (list, tuple)) else [v])  # noqa: E731
        self._eos = as_list(g["eos_token_id"])
        self._bad = [list(b) for b in (g["bad_words_ids"] or []) if not (len(b) == 1 and b[0] in self._eos)]
        self._forced_eos = as_list(g["forced_eos_token_id"])

    @staticmethod
    def _top5(lp, banned):
        allowed = lp.clone()
        if banned:
            allowed[torch.tensor(banned)] = float("-inf")
        v, i = torch.topk(allowed, 5)
        return [[int(a), float(b)] for a, b in zip(i, v)]

    def _step(self, ids, enc, cache):
        if cache is not None:
            return self.decode_step(ids[-1], cache)
        full, sa_f, ca_f = self.decode_full(ids, enc)  # the whole prefix recomputed (use_cache=False)
        return full[-1], [p[:, -1] for p in sa_f], [p[:, -1] for p in ca_f]

    def greedy(self, src_ids, max_length, forced_bos, cached=True, enc=None):
        """Returns target_ids (all generated tokens), per-step log-probs, stop reason, the attention rows of
        each step (_steps)."""
        if max_length < 2:
            raise ValueError("max_length must be >= 2 (it counts the decoder start token)")
        self._prepare_generation()
        if enc is None:
            enc, _ = self.encode(src_ids)
        ids = [self.g["decoder_start_token_id"]]
        cache = self.new_cache(enc) if cached else None
        r = {"target_ids": [], "step_log_probs": [], "step_log_probs_processed": [], "step_top2_margin": [],
             "first_step_log_probs_top5": None, "first_free_step_log_probs_top5": None, "_steps": []}
        stop = "max_length"
        while True:
            logits, sa, ca = self._step(ids, enc, cache)
            lp = torch.log_softmax(logits, dim=-1)
            scores, banned, forced, forced_eos = self._processors(ids, logits.clone(), max_length, forced_bos)
            if len(ids) == 1:
                r["first_step_log_probs_top5"] = self._top5(lp, banned)
            elif len(ids) == 2:
                r["first_free_step_log_probs_top5"] = self._top5(lp, banned)
            nxt = int(torch.argmax(scores))
            ids.append(nxt)
            r["target_ids"].append(nxt)
            r["step_log_probs"].append(float(lp[nxt]))
            r["step_log_probs_processed"].append(float(torch.log_softmax(scores, dim=-1)[nxt]))
            top2 = torch.topk(scores, 2).values
            r["step_top2_margin"].append(None if forced or not torch.isfinite(top2[1]) else float(top2[0] - top2[1]))
            r["_steps"].append((sa, ca))
            if nxt in self._eos:
                stop = "forced_eos" if forced_eos else "eos"
                break
            if len(ids) >= max_length:
                break
        r["stop_reason"] = stop
        return r

    def info(self):
        c = self.c
        keys = ("d_model", "encoder_layers", "decoder_layers", "encoder_attention_heads", "decoder_attention_heads",
                "encoder_ffn_dim", "decoder_ffn_dim", "activation_function", "scale_embedding",
                "tie_word_embeddings", "vocab_size", "max_position_embeddings")
        d = collections.OrderedDict([("model_type", self.mt)] + [(k, c[k]) for k in keys])
        d.update([("embed_scale", self.scale), ("layer_norm_eps", LN_EPS), ("pre_layer_norm", True),
                  ("layernorm_embedding", self.mt == "mbart"), ("final_layer_norm", True),
                  ("positions", self.pos_source), ("final_logits_bias", self.flb_source)])
        return d


# ----------------------------------------------------------------------------------------------------------
# run
# ----------------------------------------------------------------------------------------------------------
def translate(model, tok, sentences, src_lang, tgt_lang, max_length, attentions=True, check_recompute=False):
    forced_bos = tok.lang_id(tgt_lang)
    results = []
    for s in sentences:
        pieces, ids = tok.encode(s, src_lang)
        enc, enc_attn = model.encode(ids)
        r = model.greedy(ids, max_length, forced_bos, cached=True, enc=enc)
        tgt = r["target_ids"]
        item = collections.OrderedDict([("source", s), ("source_pieces", pieces), ("source_ids", ids)])
        item["output_ids"] = [model.g["decoder_start_token_id"]] + tgt
        item["target_ids"] = tgt
        item["greedy_ids"] = tgt[1:]
        item["decoder_input_ids"] = item["output_ids"][:-1]
        item["stop_reason"] = r["stop_reason"]
        item["text"], item["text_clean_up"] = tok.decode(tgt)
        for k in ("first_step_log_probs_top5", "first_free_step_log_probs_top5", "step_log_probs",
                  "step_log_probs_processed", "step_top2_margin"):
            item[k] = r[k]
        _, sa, ca = model.decode_full(item["decoder_input_ids"], enc, logits=False)
        if attentions:
            item["attentions"] = {"encoder": [round7(p) for p in enc_attn], "decoder": [round7(p) for p in sa],
                                  "cross": [round7(p) for p in ca]}
        if check_recompute:
            f = model.greedy(ids, max_length, forced_bos, cached=False, enc=enc)
            same = f["target_ids"] == tgt
            item["recompute_check"] = {"same_ids": same, "max_abs_log_prob_diff": max(
                abs(a - b) for a, b in zip(f["step_log_probs"], r["step_log_probs"])) if same else None}
        item["_internal"] = {"enc_attn": enc_attn, "self": sa, "cross": ca, "steps": r["_steps"], "enc": enc}
        results.append(item)
    return results


def config_used(model, tok, src_lang, tgt_lang, max_length, max_length_source):
    g = model.g
    return collections.OrderedDict([
        ("eos_token_id", g["eos_token_id"]), ("pad_token_id", g["pad_token_id"]),
        ("decoder_start_token_id", g["decoder_start_token_id"]), ("forced_bos_token_id", tok.lang_id(tgt_lang)),
        ("forced_eos_token_id", g["forced_eos_token_id"]), ("bad_words_ids", g["bad_words_ids"]),
        ("num_beams", g["num_beams"]), ("num_beams_used", 1), ("max_length", max_length),
        ("max_length_source", max_length_source), ("generation_settings_from", model.gen_source),
        ("src_lang", src_lang), ("tgt_lang", tgt_lang), ("src_lang_id", tok.lang_id(src_lang)),
        ("tokenizer", tok.info()), ("model", model.info()), ("weights_files", model.weights_files),
        ("stored_dtypes", model.dtypes), ("notes", model.notes + tok.notes),
    ])


def cmd_run(a):
    torch.set_grad_enabled(False)
    t0 = time.time()
    model, tok = Seq2Seq(a.model), load_tokenizer(a.model)
    sentences = read_sentences(a.sentences)
    m, msrc = model.max_length(a.max_length)
    res = translate(model, tok, sentences, a.src_lang, a.tgt_lang, m, attentions=not a.no_attentions,
                    check_recompute=a.check_recompute)
    out = {"config_used": config_used(model, tok, a.src_lang, a.tgt_lang, m, msrc),
           "sentences": [_public(r) for r in res]}
    with open(a.out, "w", encoding="utf-8") as f:
        f.write(json.dumps(out, ensure_ascii=False))
    print(f"run: {len(res)} sentences -> {a.out} ({tok.cls_name}, {a.src_lang} -> {a.tgt_lang}, max_length {m} "
          f"from {msrc}; {sum(len(r['target_ids']) for r in res)} tokens generated; {time.time() - t0:.2f} s)")


# ----------------------------------------------------------------------------------------------------------
# make
# ----------------------------------------------------------------------------------------------------------
def train_sentencepiece(out_dir, text_path, n_pieces, model_type):
    """A small SentencePiece model (<unk>=0, <s>=1, </s>=2, no pad: fairseq's sentencepiece.bpe.model layout),
    written as out_dir/sentencepiece.bpe.model. Unigram with a soft vocabulary limit (small text)."""
    tmp = tempfile.mkdtemp(prefix="hfml_spm_")
    try:
        prefix = os.path.join(tmp, "m")
        spm.SentencePieceTrainer.train(
            input=text_path, model_prefix=prefix, vocab_size=n_pieces, model_type=model_type,
            character_coverage=1.0, num_threads=1, unk_id=0, bos_id=1, eos_id=2, pad_id=-1,
            hard_vocab_limit=(model_type == "bpe"), minloglevel=2)
        shutil.copyfile(prefix + ".model", os.path.join(out_dir, "sentencepiece.bpe.model"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return spm.SentencePieceProcessor(model_file=os.path.join(out_dir, "sentencepiece.bpe.model"))


def m2m100_vocab(sp, rng, drop):
    """vocab.json: <s>=0, <pad>=1, </s>=2, <unk>=3, then SentencePiece's pieces (not its <unk>/<s>/</s>) in a
    seeded random order (fairseq's dictionary order is not SentencePiece's), the `drop` pieces with the highest
    SentencePiece ids (in a BPE model the rarest characters) left out, so that they become <unk>."""
    pieces = [sp.id_to_piece(i) for i in range(3, len(sp))]
    kept = pieces[:len(pieces) - drop] if drop else pieces
    order = rng.permutation(len(kept))
    vocab = collections.OrderedDict(FAIRSEQ_SPECIALS)
    for j in order:
        vocab[kept[j]] = len(vocab)
    return vocab, pieces[len(pieces) - drop:] if drop else []


def tokenizer_files(a, src, out, sp):
    """Writes the tokenizer files of a.family; returns (vocab size the model needs, eos id, notes)."""
    tcfg = load_json(os.path.join(src, "tokenizer_config.json"), collections.OrderedDict())
    smap = load_json(os.path.join(src, "special_tokens_map.json"))
    notes = []
    if smap is not None:
        dump_json(smap, os.path.join(out, "special_tokens_map.json"))
    if a.family == "m2m100":
        vocab, dropped = m2m100_vocab(sp, np.random.default_rng(a.seed + 1), a.vocab_drop)
        dump_json(vocab, os.path.join(out, "vocab.json"))  # ensure_ascii, as save_json writes it
        codes = M2M100_LANGS[tcfg.get("language_codes", "m2m100")]
        notes.append(_check_m2m100_langs(src, codes))
        ids = {f"__{c}__": len(vocab) + i for i, c in enumerate(codes)}
        if os.path.exists(os.path.join(src, "added_tokens.json")):
            dump_json(ids, os.path.join(out, "added_tokens.json"))
        if "added_tokens_decoder" in tcfg:
            tcfg["added_tokens_decoder"] = _renumber_added(tcfg["added_tokens_decoder"], ids)
        dump_json(tcfg, os.path.join(out, "tokenizer_config.json"))
        notes.append(f"vocab.json {len(vocab)} entries ({len(dropped)} pieces left out: {dropped})")
        return len(vocab) + len(codes) + int(tcfg.get("num_madeup_words", 8)), vocab["</s>"], notes
    if a.family == "nllb" and a.legacy_behaviour:
        tcfg["legacy_behaviour"] = True
    dump_json(tcfg, os.path.join(out, "tokenizer_config.json"))
    tok = {"nllb": NllbTok, "mbart50": MBart50Tok}[a.family](out)
    return tok.vocab_size, tok.eos_id, notes + tok.notes


def _check_m2m100_langs(src, codes):
    """The language order (transformers' FAIRSEQ_LANGUAGE_CODES) against the real directory's files."""
    listed = (load_json(os.path.join(src, "special_tokens_map.json"), {}) or {}).get("additional_special_tokens")
    added = load_json(os.path.join(src, "added_tokens.json"))
    ok = listed is None or listed == [f"__{c}__" for c in codes]
    if added:
        base = min(added.values())
        ok = ok and all(added.get(f"__{c}__") == base + i for i, c in enumerate(codes))
    return f"M2M100 language order {'agrees' if ok else 'DISAGREES'} with {src}'s special_tokens_map/added_tokens"


def _renumber_added(dec, ids):
    out = collections.OrderedDict()
    for k, v in dec.items():
        out[str(ids.get(v["content"], int(k)))] = v
    return collections.OrderedDict(sorted(out.items(), key=lambda kv: int(kv[0])))


def small_config(a, src, V):
    cfg = load_json(os.path.join(src, "config.json"))
    mt = FAMILIES[a.family][0]
    if cfg.get("model_type") != mt:
        sys.exit(f"make: {src}/config.json has model_type {cfg.get('model_type')!r}, family {a.family} needs {mt!r}")
    dl, dh, dff = a.decoder_layers or a.layers, a.decoder_heads or a.heads, a.decoder_ffn or a.ffn
    for k, v in (("d_model", a.d_model), ("encoder_layers", a.layers), ("decoder_layers", dl),
                 ("num_hidden_layers", a.layers), ("encoder_attention_heads", a.heads),
                 ("decoder_attention_heads", dh), ("encoder_ffn_dim", a.ffn), ("decoder_ffn_dim", dff),
                 ("vocab_size", V)):
        cfg[k] = v
    if a.activation:
        cfg["activation_function"] = a.activation
    cfg["torch_dtype"] = {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}[a.dtype]
    return cfg


def weight_plan(cfg):
    """The state_dict of M2M100ForConditionalGeneration / MBartForConditionalGeneration as a list of (name,
    shape, init) in state_dict order (the order make_weights draws them in); init is ("normal", std),
    ("ln_weight", std) (1 + N(0, std)), ("fc2", std) (rows centred), ("final_logits_bias", std) or ("tied",
    "model.shared.weight") for the names that share the embedding."""
    mt, d, V = cfg["model_type"], cfg["d_model"], cfg["vocab_size"]
    plan = []
    if mt == "mbart":  # the buffer registered on the top module comes first in state_dict()
        plan.append(("final_logits_bias", (1, V), ("final_logits_bias", 0.3)))
    plan.append(("model.shared.weight", (V, d), ("normal", 0.1)))
    tied = ("tied", "model.shared.weight")
    proj_std = {"k_proj": 2.0, "v_proj": 1.0, "q_proj": 2.0, "out_proj": 4.0}

    def ln(prefix):
        plan.extend([(prefix + ".weight", (d,), ("ln_weight", 0.1)), (prefix + ".bias", (d,), ("normal", 0.05))])

    def attn(prefix):
        for p in ("k_proj", "v_proj", "q_proj", "out_proj"):
            plan.append((f"{prefix}.{p}.weight", (d, d), ("normal", proj_std[p] / math.sqrt(d))))
            plan.append((f"{prefix}.{p}.bias", (d,), ("normal", 0.05)))
        ln(prefix + "_layer_norm")

    def ffn(prefix, n):
        plan.extend([(f"{prefix}.fc1.weight", (n, d), ("normal", 1 / math.sqrt(d))),
                     (f"{prefix}.fc1.bias", (n,), ("normal", 0.05)),
                     (f"{prefix}.fc2.weight", (d, n), ("fc2", 4 / math.sqrt(n))),
                     (f"{prefix}.fc2.bias", (d,), ("normal", 0.05))])
        ln(prefix + ".final_layer_norm")

    for side in ("encoder", "decoder"):
        plan.append((f"model.{side}.embed_tokens.weight", (V, d), tied))
        if mt == "mbart":
            plan.append((f"model.{side}.embed_positions.weight", (cfg["max_position_embeddings"] + 2, d),
                         ("normal", 1.0)))
        for i in range(cfg[f"{side}_layers"]):
            attn(f"model.{side}.layers.{i}.self_attn")
            if side == "decoder":
                attn(f"model.{side}.layers.{i}.encoder_attn")
            ffn(f"model.{side}.layers.{i}", cfg[f"{side}_ffn_dim"])
        if mt == "mbart":
            ln(f"model.{side}.layernorm_embedding")
        ln(f"model.{side}.layer_norm")
    plan.append(("lm_head.weight", (V, d), tied))
    return plan


def _normal(rng, shape, std, chunk_values=1 << 22):
    """(rng.standard_normal(shape) * std).astype(float32), drawn in chunks of rows into the float32 result (the
    same values: a Generator's normals do not depend on how a draw is split), so a [256206, 1024] embedding
    needs its float32 array and one float64 chunk, not two float64 copies."""
    if len(shape) < 2 or int(np.prod(shape)) <= chunk_values:
        return (rng.standard_normal(shape) * std).astype(np.float32)
    out = np.empty(shape, dtype=np.float32)
    rows = max(1, chunk_values // int(np.prod(shape[1:])))
    for r in range(0, shape[0], rows):
        part = rng.standard_normal((min(rows, shape[0] - r),) + tuple(shape[1:]))
        part *= std
        out[r:r + rows] = part
    return out


def make_weights(cfg, rng, eos_id, eos_bias, sink=None):
    """The state_dict of M2M100ForConditionalGeneration / MBartForConditionalGeneration (keys, shapes, order:
    weight_plan), random, scaled so that attention is peaked but not one-hot and greedy output varies (tied
    embeddings make a random decoder copy its input token; strong layer outputs counter that): embeddings
    N(0, 0.1); q/k N(0, 2/sqrt(d)); v, fc1 N(0, 1/sqrt(d)); out_proj N(0, 4/sqrt(d)); fc2 N(0, 4/sqrt(ffn)) with
    each row centred (so the positive mean of relu/gelu adds no fixed direction); biases N(0, 0.05); layer
    norms 1 + N(0, 0.1) and N(0, 0.05); mBART's learned positions N(0, 1) and final_logits_bias N(0, 0.3).
    eos_bias raises the eos logit: mBART through final_logits_bias[eos], M2M100 (no such buffer) through the
    decoder's final layer_norm bias (+ eos_bias * E[eos] / |E[eos]|^2). Tied names share one array.
    Returns name -> float32 array; with sink, calls sink(name, array) for each tensor once it is final, in
    state_dict order (tied names with the shared array), keeps nothing and returns None (the same values)."""
    sd = collections.OrderedDict()
    shared, e_eos = None, None
    last_ln = "model.decoder.layer_norm.bias"
    for name, shape, (kind, arg) in weight_plan(cfg):
        if kind == "tied":
            arr = shared
        elif kind == "ln_weight":
            arr = 1 + _normal(rng, shape, arg)
        elif kind == "fc2":
            arr = _normal(rng, shape, arg)
            arr = arr - arr.mean(axis=1, keepdims=True)
        else:
            arr = _normal(rng, shape, arg)
        if kind == "final_logits_bias":
            arr[0, eos_id] += np.float32(eos_bias)
        if name == "model.shared.weight":
            shared = arr
            e_eos = arr[eos_id].astype(np.float64)
        if name == last_ln and cfg["model_type"] == "m2m_100" and eos_bias:
            arr += (eos_bias * e_eos / (e_eos @ e_eos)).astype(np.float32)
        if sink is None:
            sd[name] = arr
        else:
            sink(name, arr)
        if sink is not None and name == "lm_head.weight":
            shared = None
    return sd if sink is None else None


def _write_tensor(f, arr, dtype):
    if dtype == "F32" and sys.byteorder == "little":  # the array's own buffer: no copy of a 1 GiB embedding
        f.write(memoryview(np.ascontiguousarray(arr, dtype=np.float32)).cast("B"))
    else:
        f.write(_to_bytes(arr, dtype))


def stream_safetensors(path, cfg, rng, eos_id, eos_bias, dtype, tied_patterns):
    """model.safetensors as save_weights(fmt="safetensors") writes it (hf_safetensors_names' names, sorted, the
    same bytes), with each tensor written where the header puts it as soon as make_weights has drawn it: the
    memory needed is the largest tensor, not the model. Returns the names stored."""
    plan = weight_plan(cfg)
    marker = {}
    placeholders = collections.OrderedDict()
    for name, shape, (kind, arg) in plan:
        placeholders[name] = marker.setdefault(arg if kind == "tied" else name, object())
    names = hf_safetensors_names(placeholders, tied_patterns)
    shapes = {name: shape for name, shape, _ in plan}
    isz = {"F32": 4, "F16": 2, "BF16": 2}[dtype]
    header, off = {"__metadata__": {"format": "pt"}}, 0
    for name in sorted(names):
        n = int(np.prod(shapes[name])) * isz
        header[name] = {"dtype": dtype, "shape": list(shapes[name]), "data_offsets": [off, off + n]}
        off += n
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    base = 8 + len(h)
    keep = set(names)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)

        def sink(name, arr):
            if name not in keep:
                return
            if tuple(np.shape(arr)) != tuple(shapes[name]):
                raise RuntimeError(f"{name}: drawn {np.shape(arr)}, planned {shapes[name]}")
            f.seek(base + header[name]["data_offsets"][0])
            _write_tensor(f, arr, dtype)
        make_weights(cfg, rng, eos_id, eos_bias, sink=sink)
        f.truncate(base + off)
    return names


def cmd_make(a):
    src, out = a.src, a.out
    if a.d_model % a.heads or a.d_model % (a.decoder_heads or a.heads) or a.d_model < 4:
        sys.exit("make: --d-model must be >= 4 and a multiple of the number of heads")
    if a.legacy_behaviour and a.family != "nllb":
        sys.exit("make: --legacy-behaviour is an NllbTokenizer setting")
    os.makedirs(out, exist_ok=True)
    for f in ("vocab.json", "added_tokens.json", "special_tokens_map.json", "tokenizer_config.json",
              "generation_config.json", "tokenizer.json"):  # stale files of an earlier make
        if os.path.exists(os.path.join(out, f)):
            os.remove(os.path.join(out, f))
    text = a.train_text
    tmp = None
    if text is None:
        tmp = tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8")
        tmp.write(BUILTIN_TEXT)
        tmp.close()
        text = tmp.name
    try:
        sp = train_sentencepiece(out, text, a.vocab_pieces, FAMILIES[a.family][2])
    finally:
        if tmp is not None:
            os.unlink(tmp.name)
    V_tok, eos, notes = tokenizer_files(a, src, out, sp)
    V = V_tok
    if getattr(a, "vocab_size", None) is not None:
        if a.vocab_size < V_tok:
            sys.exit(f"make: --vocab-size {a.vocab_size} is smaller than the tokenizer's {V_tok} ids")
        V = a.vocab_size
        if V > V_tok:
            notes.append(f"config vocab_size {V}: ids {V_tok}..{V - 1} have no token")
    cfg = small_config(a, src, V)
    dump_json(cfg, os.path.join(out, "config.json"))
    gen = load_json(os.path.join(src, "generation_config.json"))
    if gen is not None or a.max_length is not None:
        gen = gen or collections.OrderedDict()
        if a.max_length is not None:
            gen["max_length"] = a.max_length
        dump_json(gen, os.path.join(out, "generation_config.json"))
    rng, tied_keys = np.random.default_rng(a.seed), TIED_WEIGHTS_KEYS[cfg["model_type"]]
    if a.format == "safetensors" and not a.store_tied:  # tensor by tensor (615 M parameters: ~1 GiB at a time)
        save_weights(out, None, None, None, a.dtype)  # removes the weight files of an earlier make
        names = stream_safetensors(os.path.join(out, "model.safetensors"), cfg, rng, eos, a.eos_bias, a.dtype,
                                   tied_keys)
        files = ["model.safetensors"]
    else:
        sd = make_weights(cfg, rng, eos, a.eos_bias)
        names = list(sd) if a.format == "bin" or a.store_tied else hf_safetensors_names(sd, tied_keys)
        if a.store_tied and a.format != "bin":  # separate copies (safetensors has no aliasing)
            sd = collections.OrderedDict((k, v.copy()) for k, v in sd.items())
        files = save_weights(out, a.format, sd, names, a.dtype)
    print(f"made {out}: {a.family} ({cfg['model_type']}), d_model {a.d_model}, layers {cfg['encoder_layers']}+"
          f"{cfg['decoder_layers']}, heads {cfg['encoder_attention_heads']}/{cfg['decoder_attention_heads']}, ffn "
          f"{cfg['encoder_ffn_dim']}/{cfg['decoder_ffn_dim']}, {cfg['activation_function']}, vocab {V} "
          f"(tokenizer {V_tok}, SentencePiece {len(sp)}), {' + '.join(files)} {a.dtype} ({len(names)} tensors), "
          f"seed {a.seed}"
          + "".join("; " + n for n in notes if n))


# ----------------------------------------------------------------------------------------------------------
# selftest
# ----------------------------------------------------------------------------------------------------------
REAL_DIRS = {"m2m100": "m2m100_418M", "nllb": "nllb-200-distilled-600M", "mbart50": "mbart-large-50-many-to-many-mmt"}
LANGS = {"m2m100": ("en", "de"), "nllb": ("eng_Latn", "deu_Latn"), "mbart50": ("en_XX", "de_DE")}


def _make_args(family, src, out, **kw):
    a = argparse.Namespace(family=family, src=src, out=out, d_model=32, layers=2, decoder_layers=None, heads=4,
                           decoder_heads=None, ffn=64, decoder_ffn=None, activation=None, vocab_pieces=250,
                           vocab_drop=2, seed=0, format="safetensors", dtype="F32", train_text=None,
                           max_length=None, eos_bias=0.0, store_tied=False, legacy_behaviour=False, vocab_size=None)
    for k, v in kw.items():
        setattr(a, k, v)
    return a


def _quiet_make(a):
    import contextlib
    import io
    with contextlib.redirect_stdout(io.StringIO()) as buf:
        cmd_make(a)
    return buf.getvalue()


def _torch_nn_forward(model, src_ids, dec_ids):
    """The same forward pass through torch.nn.TransformerEncoderLayer / TransformerDecoderLayer with
    norm_first=True (pre-LN, eps 1e-5, dropout 0), loaded with the model's weights; the embeddings (and
    layernorm_embedding) and the final layer norms applied around them. An implementation this script does
    not share."""
    nn, c, d = torch.nn, model.c, model.d

    def mha(m, L, a):
        m.in_proj_weight.copy_(torch.cat([L[f"{a}.q_proj.w"], L[f"{a}.k_proj.w"], L[f"{a}.v_proj.w"]]))
        m.in_proj_bias.copy_(torch.cat([L[f"{a}.q_proj.b"], L[f"{a}.k_proj.b"], L[f"{a}.v_proj.b"]]))
        m.out_proj.weight.copy_(L[f"{a}.out_proj.w"])
        m.out_proj.bias.copy_(L[f"{a}.out_proj.b"])

    def common(layer, L, norms):
        layer.linear1.weight.copy_(L["fc1.w"]); layer.linear1.bias.copy_(L["fc1.b"])
        layer.linear2.weight.copy_(L["fc2.w"]); layer.linear2.bias.copy_(L["fc2.b"])
        for n, key in zip(norms, ("self_attn", "encoder_attn", "final") if len(norms) == 3 else ("self_attn", "final")):
            n.weight.copy_(L[f"{key}.ln.w"]); n.bias.copy_(L[f"{key}.ln.b"])

    x = model.embed(src_ids, "encoder")[None]
    for L in model.enc_layers:
        layer = nn.TransformerEncoderLayer(d, c["encoder_attention_heads"], c["encoder_ffn_dim"], dropout=0.0,
                                           activation=model.act, layer_norm_eps=LN_EPS, batch_first=True,
                                           norm_first=True).double().eval()
        mha(layer.self_attn, L, "self_attn")
        common(layer, L, (layer.norm1, layer.norm2))
        x = layer(x)
    enc = nn.functional.layer_norm(x, (d,), *model.norms["encoder"], LN_EPS)
    T = len(dec_ids)
    y = model.embed(dec_ids, "decoder")[None]
    causal = torch.triu(torch.full((T, T), float("-inf"), dtype=torch.float64), diagonal=1)
    for L in model.dec_layers:
        layer = nn.TransformerDecoderLayer(d, c["decoder_attention_heads"], c["decoder_ffn_dim"], dropout=0.0,
                                           activation=model.act, layer_norm_eps=LN_EPS, batch_first=True,
                                           norm_first=True).double().eval()
        mha(layer.self_attn, L, "self_attn")
        mha(layer.multihead_attn, L, "encoder_attn")
        common(layer, L, (layer.norm1, layer.norm2, layer.norm3))
        y = layer(y, enc, tgt_mask=causal)
    y = nn.functional.layer_norm(y, (d,), *model.norms["decoder"], LN_EPS)
    return enc[0], F.linear(y[0], model.lm_head) + model.flb


def _torch_mha_weights(model, ids):
    """Layer-0 encoder self-attention weights by torch.nn.functional.multi_head_attention_forward."""
    L, H, d = model.enc_layers[0], model.enc_heads, model.d
    x = _ln(model.embed(ids, "encoder"), L["self_attn.ln.w"], L["self_attn.ln.b"])[:, None]  # [S, 1, d]
    _, p = F.multi_head_attention_forward(
        x, x, x, d, H, torch.cat([L[f"self_attn.{k}_proj.w"] for k in "qkv"]),
        torch.cat([L[f"self_attn.{k}_proj.b"] for k in "qkv"]), None, None, False, 0.0,
        L["self_attn.out_proj.w"], L["self_attn.out_proj.b"], training=False, need_weights=True,
        average_attn_weights=False)
    return p[0]


def _check_tokenizer(check, fam, d, src_real):
    tok = load_tokenizer(d)
    cfg = load_json(os.path.join(d, "config.json"))
    n = len(tok.sp)
    check(f"{fam}: config vocab_size == tokenizer layout ({tok.vocab_size})", cfg["vocab_size"] == tok.vocab_size)
    s = "Das Wetter ist heute schön."
    src, tgt = LANGS[fam]
    pieces, ids = tok.encode(s, src)
    plain = [tok.piece_id(p) for p in pieces]
    if fam == "nllb" and tok.legacy:
        check(f"{fam} legacy: pieces + [</s>, src_lang]", ids == plain + [2, tok.lang_id(src)], f"{ids}")
    else:
        check(f"{fam}: [src_lang] + pieces + [</s>]", ids == [tok.lang_id(src)] + plain + [tok.eos_id], f"{ids}")
    if tok.unk_id not in plain:
        check(f"{fam}: decode(encode(s)) == s", tok.decode(ids)[0] == s, repr(tok.decode(ids)[0]))
    if fam == "m2m100":
        check("m2m100: __xx__ = len(vocab.json) + index; vocab.json ids, not SentencePiece's",
              tok.lang_id("af") == len(tok.vocab) and tok.lang_id("zu") == len(tok.vocab) + 99 and
              any(tok.vocab.get(tok.sp.id_to_piece(i)) not in (None, i + 1) for i in range(3, n)))
        dropped = [tok.sp.id_to_piece(i) for i in range(3, n) if tok.sp.id_to_piece(i) not in tok.vocab]
        check("m2m100: a piece missing from vocab.json -> <unk> (3)", dropped and all(
            tok.piece_id(p) == 3 for p in dropped), f"{dropped}")
        check("m2m100: a madeup-word id decodes through sentencepiece as <unk>",
              tok.decode([tok.vocab_size - 1])[0] == tok.sp.decode(["<unk>"]))
    else:
        L = len(tok.lang_codes)
        check(f"{fam}: languages sp_size+1+i ({n + 1}..{n + L}), <mask> {n + L + 1}",
              tok.lang_id(tok.lang_codes[0]) == n + 1 and tok.lang_id(tok.lang_codes[-1]) == n + L and
              tok.mask_id == n + L + 1 and tok.piece_id(MASK) == n + L + 1)
        check(f"{fam}: piece id = SentencePiece id + 1", all(tok.piece_id(tok.sp.id_to_piece(i)) == i + 1
                                                             for i in range(3, n)))
    _, ids = tok.encode("A \u2603 snowman</s>and " + (f"__{tgt}__" if fam == "m2m100" else tgt), src)
    check(f"{fam}: unknown character -> <unk> 3; '</s>' and a language code in the text are special tokens",
          3 in ids and ids.count(tok.eos_id) == 2 and tok.lang_id(tgt) in ids, f"{ids}")
    text, _ = tok.decode([tok.lang_id(tgt)] + tok.encode("Hello world.", src)[1] + [tok.pad_id, tok.bos_id])
    check(f"{fam}: decode skips language codes, </s>, <pad>, <s>", text == "Hello world.", repr(text))
    if src_real and fam != "m2m100":
        real = load_json(os.path.join(src_real, "special_tokens_map.json"))["additional_special_tokens"]
        check(f"{fam}: embedded language list == real special_tokens_map.json",
              real == (NLLB_LANGS if fam == "nllb" else MBART50_LANGS))
    return tok


def _check_model(check, fam, d, tok):
    model = Seq2Seq(d)
    src, tgt = LANGS[fam]
    sentences = ["Hello world.", "The children are playing in the garden, said \u65e5\u672c to me.",
                 "A test</s>with a special token inside", "Das Wetter ist heute schön.",
                 "Could you please tell me where the nearest post office is?", "Das Museum öffnet um neun Uhr."]
    ml, _ = model.max_length(12)
    res = translate(model, tok, sentences, src, tgt, ml)
    forced = tok.lang_id(tgt)
    check(f"{fam}: target_ids[0] is the forced language token, processed log-prob 0",
          all(r["target_ids"][0] == forced and r["step_log_probs_processed"][0] == 0.0 for r in res))
    worst, same = 0.0, True
    for r in res:
        f = model.greedy(r["source_ids"], ml, forced, cached=False)
        same &= f["target_ids"] == r["target_ids"]
        if f["target_ids"] == r["target_ids"]:
            worst = max([worst] + [abs(x - y) for x, y in zip(f["step_log_probs"], r["step_log_probs"])])
    check(f"{fam}: cached greedy == full recompute (ids; log-probs < 1e-9)", same and worst < 1e-9, f"{worst:.1e}")
    _check_attentions(check, fam, model, res)
    distinct = [len(set(r["greedy_ids"])) for r in res]
    check(f"{fam}: greedy output not degenerate (some sentence has > 2 distinct tokens)", max(distinct) > 2,
          f"distinct per sentence {distinct}; {[r['stop_reason'] for r in res]}")
    r = res[1]
    enc_ref, logits_ref = _torch_nn_forward(model, r["source_ids"], r["decoder_input_ids"])
    logits, _, _ = model.decode_full(r["decoder_input_ids"], r["_internal"]["enc"])
    de = (enc_ref - r["_internal"]["enc"]).abs().max().item()
    dl = (logits_ref - logits).abs().max().item()
    check(f"{fam}: encoder == torch.nn.TransformerEncoderLayer(norm_first) stack", de < 1e-10, f"{de:.1e}")
    check(f"{fam}: logits == torch.nn.TransformerDecoderLayer(norm_first) stack", dl < 1e-10, f"{dl:.1e}")
    pm = (_torch_mha_weights(model, r["source_ids"]) - r["_internal"]["enc_attn"][0]).abs().max().item()
    check(f"{fam}: layer-0 attention weights == F.multi_head_attention_forward", pm < 1e-12, f"{pm:.1e}")
    return model, res


def _check_attentions(check, fam, model, res):
    ok_sum, ok_shape, ok_causal, ok_rows = True, True, True, True
    for r in res:
        S, T, it = len(r["source_ids"]), len(r["target_ids"]), r["_internal"]
        for p in it["enc_attn"]:
            ok_shape &= tuple(p.shape) == (model.enc_heads, S, S)
            ok_sum &= (p.sum(-1) - 1).abs().max().item() < 1e-12
        for p, pc in zip(it["self"], it["cross"]):
            ok_shape &= tuple(p.shape) == (model.dec_heads, T, T) and tuple(pc.shape) == (model.dec_heads, T, S)
            ok_sum &= max((p.sum(-1) - 1).abs().max().item(), (pc.sum(-1) - 1).abs().max().item()) < 1e-12
            ok_causal &= bool((torch.triu(p, diagonal=1) == 0).all())
        js = r["attentions"]
        ok_sum &= all(abs(sum(row) - 1) < 1e-5 for part in js.values() for lay in part for h in lay for row in h)
        if model.pad in r["target_ids"] and model.mt == "m2m_100":
            continue  # a generated <pad> shifts later M2M100 positions between cached steps and the full pass
        for t, (sa, ca) in enumerate(it["steps"]):
            for li in range(len(sa)):
                ok_rows &= (sa[li] - it["self"][li][:, t, : t + 1]).abs().max().item() < 1e-12
                ok_rows &= (ca[li] - it["cross"][li][:, t]).abs().max().item() < 1e-12
    check(f"{fam}: attention rows sum to 1 (float64 and the 7-digit JSON)", ok_sum)
    check(f"{fam}: shapes encoder [L][H][S][S], decoder [L][H][T][T], cross [L][H][T][S]", ok_shape)
    check(f"{fam}: decoder self-attention causal; full-pass rows == the rows each step saw", ok_causal and ok_rows)


def _check_positions(check, tmp):
    d, pad = 32, 1
    tab = m2m100_sinusoids(1030, d, pad).double().numpy()
    half = d // 2
    p = np.arange(1030, dtype=np.float64)[:, None]
    f = 10000.0 ** (-np.arange(half) / (half - 1))
    ref = np.concatenate([np.sin(p * f), np.cos(p * f)], axis=1)
    ref[pad] = 0
    err = np.abs(tab - ref)
    rel = (err / (1e-6 + 3e-7 * p)).max()  # float32 angles: the error grows with p
    check("m2m100 sinusoids == sin(p 10000^(-i/(half-1))) | cos(...) in float64, pad row 0 (float32 table)",
          rel < 1 and not tab[pad].any(), f"max |diff| {err.max():.1e} at p < 1030, {err[:20].max():.1e} at p < 20")
    odd = m2m100_sinusoids(8, 7, pad)
    check("m2m100 sinusoids, odd dim: zero last column", bool((odd[:, 6] == 0).all()) and odd.shape == (8, 7))
    pos = m2m100_position_ids([5, 6, 1, 7], pad, 0).tolist()
    inc = [m2m100_position_ids([t], pad, past).item() for past, t in enumerate([5, 6, 1, 7])]
    check("m2m100 positions: cumsum from pad+1, pad -> pad; incremental (1+past)*(tok!=pad)+pad",
          pos == [2, 3, 1, 4] and inc == [2, 3, 1, 5], f"{pos} {inc}")
    check("mbart positions: arange(past, past+n) + 2", mbart_position_ids(3, 4).tolist() == [6, 7, 8])


def _check_formats(check, fam, src_real, tmp):
    base, keys = None, {}
    for fmt, kw in (("safetensors", {}), ("bin", {"format": "bin"}), ("sharded", {"format": "sharded"}),
                    ("store-tied", {"store_tied": True})):
        d = os.path.join(tmp, f"{fam}_fmt_{fmt}")
        _quiet_make(_make_args(fam, src_real, d, seed=5, **kw))
        w, _, files = read_weights(d)
        m = Seq2Seq(d)
        sig = (sorted(w), {k: w[k] for k in ("model.decoder.layer_norm.bias",)},
               m.greedy(load_tokenizer(d).encode("Hello world.", LANGS[fam][0])[1], 8,
                        load_tokenizer(d).lang_id(LANGS[fam][1]))["step_log_probs"])
        keys[fmt] = set(w)
        if base is None:
            base = (w, sig[2])
        else:
            same = all(torch.equal(w[k], base[0][k]) for k in base[0]) and sig[2] == base[1]
            check(f"{fam}: format {fmt} ({' + '.join(files)}) reads back identical tensors and results", same)
    tied = {"model.shared.weight", "model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight",
            "lm_head.weight"}
    st = keys["safetensors"]
    check(f"{fam}: safetensors stores model.shared.weight only of the tied names; bin stores all four",
          st & tied == {"model.shared.weight"} and keys["bin"] & tied == tied and keys["store-tied"] & tied == tied)
    if fam == "mbart50":
        check("mbart50: final_logits_bias and both embed_positions.weight stored", {
            "final_logits_bias", "model.encoder.embed_positions.weight", "model.decoder.embed_positions.weight"} <= st)
    else:
        check(f"{fam}: no embed_positions, no final_logits_bias stored",
              not any("embed_positions" in k or k == "final_logits_bias" for k in st))
    idx = load_json(os.path.join(tmp, f"{fam}_fmt_sharded", "model.safetensors.index.json"))
    total = sum(int(np.prod(v.shape)) * 4 for k, v in read_weights(os.path.join(tmp, f"{fam}_fmt_sharded"))[0].items())
    check(f"{fam}: index.json total_size and weight_map over 2 shards", idx["metadata"]["total_size"] == total and
          set(idx["weight_map"]) == st and len(set(idx["weight_map"].values())) == 2)


def _check_cli(check, fam, d, tmp):
    sfile = os.path.join(tmp, "s.txt")
    with open(sfile, "w", encoding="utf-8") as f:
        f.write("Hello world.\nDer Zug nach Berlin hatte Verspätung.\n")
    outj = os.path.join(tmp, f"{fam}.json")
    src, tgt = LANGS[fam]
    import contextlib
    import io
    with contextlib.redirect_stdout(io.StringIO()):
        cmd_run(argparse.Namespace(model=d, sentences=sfile, out=outj, src_lang=src, tgt_lang=tgt, max_length=10,
                                   no_attentions=False, check_recompute=True))
    js = load_json(outj)
    s0 = js["sentences"][0]
    check(f"{fam}: run writes config_used (forced_bos_token_id) and the documented id lists",
          js["config_used"]["forced_bos_token_id"] == s0["target_ids"][0] and
          s0["output_ids"] == [js["config_used"]["decoder_start_token_id"]] + s0["target_ids"] and
          s0["greedy_ids"] == s0["target_ids"][1:] and s0["decoder_input_ids"] == s0["output_ids"][:-1] and
          len(s0["attentions"]["decoder"][0][0]) == len(s0["target_ids"]) and
          all(s["recompute_check"]["same_ids"] for s in js["sentences"]))


def _check_nllb_explicit(check, d):
    """tokenizer_config.json added_tokens_decoder with <mask> before the language codes (an order the slow
    NllbTokenizer's add order can give when no ids are pinned, per the review of transformers PR #27717):
    the explicit ids are used."""
    tcfg = load_json(os.path.join(d, "tokenizer_config.json"))
    n = len(NllbTok(d).sp)
    entry = lambda t: {"content": t, "lstrip": False, "normalized": False, "rstrip": False,  # noqa: E731
                       "single_word": False, "special": True}
    dec = {str(i): entry(t) for t, i in FAIRSEQ_SPECIALS.items()}
    dec[str(n + 1)] = entry(MASK)
    dec.update({str(n + 2 + i): entry(c) for i, c in enumerate(NLLB_LANGS)})
    tcfg["added_tokens_decoder"] = dec
    dump_json(tcfg, os.path.join(d, "tokenizer_config.json"))
    tok = NllbTok(d)
    check("nllb: explicit added_tokens_decoder ids win (mask n+1, languages from n+2), noted",
          tok.mask_id == n + 1 and tok.lang_id("ace_Arab") == n + 2 and tok.lang_id("zul_Latn") == n + 203 and
          tok.encode("x", "eng_Latn")[1][-1] == tok.lang_id("eng_Latn") and tok.notes, f"{tok.notes[:1]}")


def _check_stops(check, src_real, tmp):
    """eos stops (eos bias), ForcedEOS at max_length (mBART), plain max_length (M2M100 has no forced eos)."""
    seen = {}
    for fam, bias in (("mbart50", 1.5), ("nllb", 1.2)):
        d = os.path.join(tmp, f"{fam}_eos")
        _quiet_make(_make_args(fam, src_real[fam], d, seed=2, eos_bias=bias))
        m, tok = Seq2Seq(d), load_tokenizer(d)
        res = translate(m, tok, ["Hello world.", "The museum opens at nine o'clock and closes at six.",
                                 "Das Wetter ist heute schön.", "We travelled to the mountains."],
                        *LANGS[fam], m.max_length(9)[0], attentions=False)
        seen[fam] = [(len(r["greedy_ids"]), r["stop_reason"]) for r in res]
        for r in res:
            if r["stop_reason"] != "max_length":
                check(f"{fam}: ends with eos, eos not elsewhere", r["target_ids"][-1] == 2 and
                      2 not in r["target_ids"][:-1])
    check("mbart50: ForcedEOS at max_length - 1 and a free eos stop both occur",
          {"forced_eos", "eos"} <= {s for _, s in seen["mbart50"]}, f"{seen['mbart50']}")
    check("nllb: an eos stop after several tokens and a max_length stop (no forced eos) both occur",
          {"max_length", "eos"} <= {s for _, s in seen["nllb"]} and all(n <= 7 for n, _ in seen["nllb"]) and
          any(n > 2 and s == "eos" for n, s in seen["nllb"]), f"{seen['nllb']}")


def _check_vocab_size(check, src_real, tmp):
    """make --vocab-size: the embedding (and mBART's final_logits_bias) has the rows asked for, the tokenizer is
    unchanged, the weights of the other tensors are those of the default make (same seed), and ids beyond the
    tokenizer decode to nothing (no crash)."""
    for fam in ("m2m100", "mbart50"):
        d0, d1 = os.path.join(tmp, f"{fam}_vs0"), os.path.join(tmp, f"{fam}_vs1")
        _quiet_make(_make_args(fam, src_real[fam], d0, seed=6))
        tok0 = load_tokenizer(d0)
        V = tok0.vocab_size + 37
        _quiet_make(_make_args(fam, src_real[fam], d1, seed=6, vocab_size=V))
        w, _, _ = read_weights(d1)
        tok = load_tokenizer(d1)
        cfg = load_json(os.path.join(d1, "config.json"))
        rows = {k: tuple(v.shape) for k, v in w.items() if k in ("model.shared.weight", "final_logits_bias")}
        check(f"{fam}: --vocab-size {V}: config and embedding rows {V}, tokenizer still {tok0.vocab_size} ids",
              cfg["vocab_size"] == V and rows["model.shared.weight"][0] == V and tok.vocab_size == tok0.vocab_size
              and (fam != "mbart50" or rows["final_logits_bias"] == (1, V)), f"{rows}")
        text, _ = tok.decode([tok.lang_id(LANGS[fam][1]), V - 1, tok.vocab_size] + tok.encode("Hello world.",
                                                                                              LANGS[fam][0])[1])
        check(f"{fam}: ids beyond the tokenizer decode to nothing", text == "Hello world.", repr(text))
        m = Seq2Seq(d1)
        r = m.greedy(tok.encode("Hello world.", LANGS[fam][0])[1], 6, tok.lang_id(LANGS[fam][1]))
        check(f"{fam}: --vocab-size model runs (greedy over {V} logits)", len(r["target_ids"]) >= 1)
    check("make --vocab-size smaller than the tokenizer is refused", _refused(lambda: _quiet_make(_make_args(
        "nllb", src_real["nllb"], os.path.join(tmp, "nllb_vs_small"), vocab_size=10))))


def cmd_selftest(a):
    torch.set_grad_enabled(False)
    check = _Checker()
    t0 = time.time()
    root = a.from_root
    src_real = {fam: os.path.join(root, REAL_DIRS[fam]) for fam in FAMILIES}
    for fam, p in src_real.items():
        if not os.path.exists(os.path.join(p, "config.json")):
            sys.exit(f"selftest: {p}/config.json not found (--from-root)")
    tmp = tempfile.mkdtemp(prefix="hfml_selftest_")
    try:
        _check_positions(check, tmp)
        for fam in FAMILIES:
            d = os.path.join(tmp, fam)
            _quiet_make(_make_args(fam, src_real[fam], d, seed=0, decoder_layers=3, decoder_heads=2, decoder_ffn=48,
                                   activation="gelu" if fam == "nllb" else None))
            tok = _check_tokenizer(check, fam, d, src_real[fam])
            _check_model(check, fam, d, tok)
            _check_formats(check, fam, src_real[fam], tmp)
            _check_cli(check, fam, d, tmp)
        d = os.path.join(tmp, "nllb_legacy")
        _quiet_make(_make_args("nllb", src_real["nllb"], d, legacy_behaviour=True))
        _check_tokenizer(check, "nllb", d, None)
        _check_nllb_explicit(check, d)
        msg = _quiet_make(_make_args("m2m100", src_real["m2m100"], os.path.join(tmp, "m2m_lang")))
        check("m2m100: FAIRSEQ_LANGUAGE_CODES order == the real special_tokens_map.json / added_tokens.json",
              "order agrees" in msg)
        _check_stops(check, src_real, tmp)
        _check_vocab_size(check, src_real, tmp)
        for dt, tol in (("F16", 2 ** -11), ("BF16", 2 ** -8)):
            d = os.path.join(tmp, "dt_" + dt)
            _quiet_make(_make_args("mbart50", src_real["mbart50"], d, seed=5, dtype=dt))
            ref, _, _ = read_weights(os.path.join(tmp, "mbart50_fmt_safetensors"))
            got, dts, _ = read_weights(d)
            rel = max(((got[k] - ref[k]).abs() / ref[k].abs().clamp_min(1e-3)).max().item() for k in ref)
            check(f"{dt} safetensors round trip within {dt} rounding", set(dts.values()) == {dt} and rel <= tol,
                  f"max rel {rel:.1e}")
            full, full_dts = read_safetensors(os.path.join(d, "model.safetensors"))
            check(f"{dt}: read_safetensors_lean == marian_reference.read_safetensors", full_dts == dts and
                  sorted(full) == sorted(got) and all(torch.equal(full[k], got[k]) for k in full))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"selftest ({time.time() - t0:.1f} s): {check.passed} passed, {len(check.failed)} failed")
    if check.failed:
        print("failed: " + "; ".join(check.failed))
        sys.exit(1)


# ----------------------------------------------------------------------------------------------------------
def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make", help="write a small Hugging Face model directory with random weights")
    m.add_argument("--family", required=True, choices=sorted(FAMILIES))
    m.add_argument("--from", dest="src", required=True, help="the real model's directory of JSON files "
                   "(config.json, generation_config.json, special_tokens_map.json, tokenizer_config.json, "
                   "added_tokens.json), e.g. ../shared/data/hf-multilingual/nllb-200-distilled-600M")
    m.add_argument("--out", required=True)
    m.add_argument("--d-model", type=int, default=32)
    m.add_argument("--layers", type=int, default=2, help="encoder (and decoder) layers")
    m.add_argument("--decoder-layers", type=int, default=None, help="(default --layers)")
    m.add_argument("--heads", type=int, default=4, help="encoder (and decoder) attention heads")
    m.add_argument("--decoder-heads", type=int, default=None, help="(default --heads)")
    m.add_argument("--ffn", type=int, default=64, help="encoder (and decoder) ffn dim")
    m.add_argument("--decoder-ffn", type=int, default=None, help="(default --ffn)")
    m.add_argument("--activation", default=None, help="activation_function (default: as --from, relu)")
    m.add_argument("--vocab-pieces", type=int, default=250, help="SentencePiece vocabulary size")
    m.add_argument("--vocab-size", type=int, default=None,
                   help="config vocab_size (embedding rows); default: the tokenizer's ids. Must be >= them; the ids "
                   "beyond the tokenizer have no token (e.g. the real model's size: 256206 NLLB-200, 128112 M2M100, "
                   "250054 mBART-50)")
    m.add_argument("--vocab-drop", type=int, default=2,
                   help="m2m100: leave this many SentencePiece pieces out of vocab.json (they become <unk>)")
    m.add_argument("--train-text", default=None, help="SentencePiece training text (default: built-in en/de)")
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--format", choices=["safetensors", "bin", "sharded"], default="safetensors")
    m.add_argument("--dtype", choices=["F32", "F16", "BF16"], default="F32")
    m.add_argument("--store-tied", action="store_true",
                   help="safetensors: store every tied name (copies) instead of model.shared.weight only")
    m.add_argument("--max-length", type=int, default=None, help="generation_config.json max_length")
    m.add_argument("--eos-bias", type=float, default=0.0, help="raise the eos logit (mbart50: final_logits_bias; "
                   "m2m100/nllb: the decoder's final layer_norm bias) so that greedy search stops on eos")
    m.add_argument("--legacy-behaviour", action="store_true", help="nllb: tokenizer_config legacy_behaviour true")

    r = sub.add_parser("run", help="tokenize, greedy-translate and write the attention maps as JSON")
    r.add_argument("--model", required=True)
    r.add_argument("--sentences", required=True, help="UTF-8 text, one source sentence a line")
    r.add_argument("--src-lang", required=True, help="en / eng_Latn / en_XX (M2M100 / NLLB / mBART-50)")
    r.add_argument("--tgt-lang", required=True, help="its token is forced_bos_token_id")
    r.add_argument("--out", required=True)
    r.add_argument("--max-length", type=int, default=None,
                   help="cap on generation max_length (which counts the decoder start token)")
    r.add_argument("--no-attentions", action="store_true", help="leave out the attention maps")
    r.add_argument("--check-recompute", action="store_true",
                   help="also greedy-decode without the cache and report the difference per sentence")

    s = sub.add_parser("selftest", help="check the script against itself and torch.nn")
    s.add_argument("--from-root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                                       "shared", "data", "hf-multilingual"))
    a = ap.parse_args()
    torch.set_num_threads(1)
    {"make": cmd_make, "run": cmd_run, "selftest": cmd_selftest}[a.cmd](a)


if __name__ == "__main__":
    main()
