#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz harnesses (fuzz/*.cpp) into DIR/<harness>/: files from the
bundled package and small hand-made ones. Standard library and spm_train (Debian package
sentencepiece) only; the data.pkl seeds of fuzz_torch_pickle come from torch.save when this python or
/usr/bin/python3 (Debian's python3-torch) has torch, else from hand-written opcodes.
  python3 scripts/make_fuzz_seeds.py DIR"""
import gzip, json, os, random, struct, subprocess, sys, tempfile, zlib

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
bundled = os.path.join(root, "resources", "models", "multi30k-de-en")
out = sys.argv[1]


def put(harness, name, data):
    os.makedirs(os.path.join(out, harness), exist_ok=True)
    with open(os.path.join(out, harness, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def read(name):
    with open(os.path.join(bundled, name), "rb") as f:
        return f.read()


def safetensors(tensors, metadata=None):
    """tensors: [(name, dtype, shape, bytes)] -> the file's bytes."""
    header, data = {}, b""
    if metadata:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + data


def floats(n, scale=0.1):
    return struct.pack("<%df" % n, *[random.uniform(-scale, scale) for _ in range(n)])


random.seed(1)
SEPARATOR = b"\n--attnlab-fuzz-part--\n"  # between the files of one input: fuzz/targets.h kPackagePartSeparator
config = json.loads(read("config.json"))
# lessons and sessions: the bundled lessons and a session of every field
for name in sorted(os.listdir(os.path.join(root, "resources", "lessons"))):
    with open(os.path.join(root, "resources", "lessons", name), "rb") as f:
        put("fuzz_lesson", name, f.read())
put("fuzz_lesson", "session.json", json.dumps({
    "format": "attnlab-session", "version": 1, "model": "de-en", "title": "t", "caption": "*c*",
    "view": {"tab": "weight", "sentence": "Ein Hund.", "beam": 2, "alpha": 0.5, "max_length": 9,
             "force_prefix": "A", "kind": "decoder", "layer": 1, "head": 8, "cell": [1, 0], "step": 2,
             "token": {"side": "target", "position": 1}}}))
# attention_history.bin (attnlab/attention_history.h): 1 layer, 2 heads, one probe of 2 source and
# 3 target pieces, two points; version 2 (what the trainer writes) has one zlib stream per point
def history(points, layers=1, heads=2, s=2, t=3, version=1):
    header = {"format": "attnlab-attention-history", "version": 1, "n_layers": layers, "n_head": heads,
              "record_every": 4, "quantization": "uint8: weight = byte / 255",
              "probes": [{"source": "a b", "target": "c d", "source_pieces": ["_a", "</s>"][:s] + ["x"] * (s - 2),
                          "target_pieces": ["_c", "_d", "</s>"][:t] + ["y"] * (t - 3),
                          "decoder_input_pieces": ["<s>", "_c", "_d"][:t] + ["y"] * (t - 3)}],
              "points": [{"stage": 0, "step": 4 * i, "epoch": i, "train_loss": 2.5 - i, "valid_loss": -1,
                          "valid_bleu": -1} for i in range(points)]}
    per_point = layers * heads * (s * s + t * t + t * s)
    maps = [bytes(random.choice([0, 0, 0, 255, random.randrange(256)]) for _ in range(per_point))
            for _ in range(points)]
    if version == 2:
        header["version"], header["compression"] = 2, "zlib, one stream per point"
        maps = [zlib.compress(m) for m in maps]
        for point, m in zip(header["points"], maps):
            point["map_bytes"] = len(m)
    text = json.dumps(header).encode()
    return b"ATTNHIST" + len(text).to_bytes(8, "little") + text + b"".join(maps)
put("fuzz_attention_history", "two-points.bin", history(2))
put("fuzz_attention_history", "two-points-v2.bin", history(2, version=2))
put("fuzz_attention_history", "no-points.bin", history(0))
# config.json
put("fuzz_config_json", "bundled.json", read("config.json"))
for i, change in enumerate([{"scale_emb_or_prj": "prj"}, {"emb_src_trg_weight_sharing": False, "n_src_vocab": 9},
                            {"source_bos": True}, {"dropout": 0.0, "n_position": 2}]):
    put("fuzz_config_json", "variant%d.json" % i, json.dumps(dict(config, **change)))
# confidence.json
put("fuzz_confidence_json", "bundled.json", read("confidence.json"))
put("fuzz_confidence_json", "no-data.json", json.dumps({"mean_log_prob_threshold": -1e-300, "percentile": 99.9,
                                                        "validation_sentences": 1, "beam_size": 1, "length_penalty": 0}))
# training_log.tsv
put("fuzz_training_log", "bundled.tsv", read("training_log.tsv"))
put("fuzz_training_log", "small.tsv", "epoch\tstep\tvalid_bleu\tlr\n1\t133\tnan\t3e-4\r\n\n2\t266\tinf\t-1\n")
# corpus files, plain and gzip
text = "Ein Mann läuft.\nZwei Hunde spielen im Schnee.\r\n\nEine Frau 😀 liest.\n"
put("fuzz_corpus", "plain.txt", text)
put("fuzz_corpus", "text.gz", gzip.compress(text.encode()))
# examples.tsv + alignments.txt of both bundled packages (fuzz/targets.h kPackagePartSeparator)
for package in ("multi30k-de-en", "multi30k-en-de"):
    with open(os.path.join(root, "resources", "models", package, "examples.tsv"), "rb") as e, \
            open(os.path.join(root, "resources", "models", package, "alignments.txt"), "rb") as g:
        put("fuzz_examples", package + ".bin", e.read() + SEPARATOR + g.read())
put("fuzz_examples", "possible-reversed.bin", b"Ein Hund.\tA dog.\n" + SEPARATOR + b"0-0 1p1 0?1\n")
# safetensors
put("fuzz_safetensors", "two.safetensors", safetensors([("a", "F32", [2, 3], floats(6)), ("b", "F16", [2], b"\x00\x3c" * 2)],
                                                         {"format": "pt"}))
put("fuzz_safetensors", "empty.safetensors", safetensors([]))
put("fuzz_safetensors", "bundled-header.safetensors", read("model.safetensors")[:4096])


def tiny_tokenizer(normalization):
    """A SentencePiece model of about 40 pieces trained on six sentences -> (bytes, vocabulary size).
    normalization: a rule name (identity, nmt_nfkc) or "rules" (four hand-written rules: a table of
    about a kilobyte, where nmt_nfkc's is 237 kB)."""
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "t.txt"), "w") as f:
            f.write("Ein Mann läuft.\nZwei Hunde spielen im Schnee.\nEine Frau liest ein Buch.\n"
                    "A man runs.\nTwo dogs play in the snow.\nA woman reads a book.\n")
        with open(os.path.join(tmp, "rules.tsv"), "w") as f:
            f.write("E4\t61 65\nDF\t73 73\nC4\t41 65\nFF21\t41\n")  # ä -> ae, ß -> ss, Ä -> Ae, Ａ -> A
        rule = ("--normalization_rule_tsv=" + os.path.join(tmp, "rules.tsv") if normalization == "rules"
                else "--normalization_rule_name=" + normalization)
        subprocess.run(["spm_train", "--input=" + os.path.join(tmp, "t.txt"), "--model_prefix=" + os.path.join(tmp, "m"),
                        "--vocab_size=40", "--pad_id=0", "--unk_id=1", "--bos_id=2", "--eos_id=3",
                        "--hard_vocab_limit=false", "--minloglevel=2", rule],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(os.path.join(tmp, "m.model"), "rb") as f, open(os.path.join(tmp, "m.vocab")) as v:
            return f.read(), sum(1 for _ in v)


# the tokenizer model: the bundled one and tiny ones with each kind of normalization table
put("fuzz_tokenizer_model", "bundled.model", read("tokenizer.model"))
for normalization in ("identity", "rules", "nmt_nfkc"):
    put("fuzz_tokenizer_model", "tiny-%s.model" % normalization, tiny_tokenizer(normalization)[0])


# a whole tiny package: 1 layer, d_model 8, one head, a 40-piece tokenizer
def tiny_package(vocab, **changes):
    V, D, I, P = vocab, 8, 8, 16
    c = dict(config, d_word_vec=D, d_model=D, d_inner=I, n_layers=1, n_head=1, d_k=D, d_v=D, n_position=P,
             n_src_vocab=V, n_trg_vocab=V, **changes)
    t = [("decoder.trg_word_emb.weight", [V, D])]
    if not c["emb_src_trg_weight_sharing"]:
        t.append(("encoder.src_word_emb.weight", [V, D]))
    if not c["trg_emb_prj_weight_sharing"]:
        t.append(("trg_word_prj.weight", [V, D]))

    def ln(p):
        t.extend([(p + ".weight", [D]), (p + ".bias", [D])])

    def mha(p):
        t.extend([(p + ".w_qs.weight", [D, D]), (p + ".w_ks.weight", [D, D]), (p + ".w_vs.weight", [D, D]),
                  (p + ".fc.weight", [D, D])])
        ln(p + ".layer_norm")

    def ffn(p):
        t.extend([(p + ".w_1.weight", [I, D]), (p + ".w_1.bias", [I]), (p + ".w_2.weight", [D, I]), (p + ".w_2.bias", [D])])
        ln(p + ".layer_norm")

    mha("decoder.layer_stack.0.slf_attn"); mha("decoder.layer_stack.0.enc_attn"); ffn("decoder.layer_stack.0.pos_ffn")
    ln("decoder.layer_norm")
    mha("encoder.layer_stack.0.slf_attn"); ffn("encoder.layer_stack.0.pos_ffn")
    ln("encoder.layer_norm")
    n = lambda shape: shape[0] * (shape[1] if len(shape) > 1 else 1)
    return json.dumps(c).encode(), safetensors([(name, "F32", shape, floats(n(shape))) for name, shape in t])


tok, vocab = tiny_tokenizer("rules")
for name, changes in (("tiny", {}), ("unshared", {"emb_src_trg_weight_sharing": False, "trg_emb_prj_weight_sharing": False,
                                                  "scale_emb_or_prj": "prj"})):
    cfg, w = tiny_package(vocab, **changes)
    put("fuzz_package", name + ".bin", cfg + SEPARATOR + tok + SEPARATOR + w)
# data.pkl of a pytorch_model.bin (fuzz_torch_pickle) and the whole file (fuzz_torch_bin): what
# torch.save writes for state dicts
TORCH_SEEDS = r"""
import collections, os, sys, zipfile, torch
out = sys.argv[1]
sd = collections.OrderedDict()
sd["w"] = torch.randn(3, 4)
sd["h"] = torch.randn(5).half()
sd["b"] = torch.randn(2).bfloat16()
sd["i"] = torch.tensor([1, -2, 2**40])
sd["t"] = sd["w"].t()
sd["o"] = sd["w"].view(-1)[2:5]
sd["tied"] = sd["w"].detach()
sd["p"] = torch.nn.Parameter(torch.ones(2))
sd["m"] = torch.tensor([True, False])
sd["s"] = torch.tensor(1.0)
sd._metadata = collections.OrderedDict([("", {"version": 1}), ("enc", {"version": 2})])
for name, obj, protocol in (("state-dict", sd, 2), ("protocol4", sd, 4), ("plain-dict", {"x": torch.ones(2)}, 2)):
    path = os.path.join(out, name + ".bin")
    torch.save(obj, path, pickle_protocol=protocol)
    with zipfile.ZipFile(path) as z:
        data = z.read([n for n in z.namelist() if n.endswith("/data.pkl")][0])
    open(os.path.join(out, name + ".pkl"), "wb").write(data)
"""


def hand_made_state_dict():
    """OrderedDict(w=<F32 [2, 3] at offset 1>) with _metadata, in the opcodes torch 1.13 writes."""
    def s(text):
        return b"X" + struct.pack("<I", len(text)) + text.encode()
    tensor = (b"ctorch._utils\n_rebuild_tensor_v2\nq\x02((" + s("storage") + b"ctorch\nFloatStorage\nq\x03" + s("0") +
              s("cpu") + b"K\x07tq\x04QK\x01K\x02K\x03\x86K\x03K\x01\x86\x89h\x00)Rtq\x05R")
    return (b"\x80\x02ccollections\nOrderedDict\nq\x00)Rq\x01(" + s("w") + tensor + b"u}" + s("_metadata") + b"}" +
            s("") + b"}" + s("version") + b"K\x01sssb.")


with tempfile.TemporaryDirectory() as tmp:
    for python in dict.fromkeys([sys.executable, "/usr/bin/python3"]):
        if os.path.exists(python) and subprocess.run([python, "-c", TORCH_SEEDS, tmp], stdout=subprocess.DEVNULL,
                                                     stderr=subprocess.DEVNULL).returncode == 0:
            break
    for name in sorted(os.listdir(tmp)):
        with open(os.path.join(tmp, name), "rb") as f:
            put("fuzz_torch_bin" if name.endswith(".bin") else "fuzz_torch_pickle", name, f.read())
put("fuzz_torch_pickle", "hand-made.pkl", hand_made_state_dict())

# A MarianMT config.json (fuzz_marian_config): OPUS-MT's keys and values, and variants.
marian = {"model_type": "marian", "activation_function": "swish", "d_model": 512, "encoder_layers": 6,
          "decoder_layers": 6, "encoder_attention_heads": 8, "decoder_attention_heads": 8,
          "encoder_ffn_dim": 2048, "decoder_ffn_dim": 2048, "vocab_size": 54688, "pad_token_id": 54687,
          "decoder_start_token_id": 54687, "eos_token_id": 0, "bad_words_ids": [[54687]],
          "max_position_embeddings": 512, "scale_embedding": True, "num_beams": 4, "max_length": 512,
          "normalize_before": False, "static_position_embeddings": True}
put("fuzz_marian_config", "opus-mt.json", json.dumps(marian).encode())
for i, change in enumerate([{"activation_function": "relu", "eos_token_id": 43311},
                            {"decoder_layers": 2, "decoder_ffn_dim": 1024},
                            {"tie_word_embeddings": False, "share_encoder_decoder_embeddings": False},
                            {"model_type": "t5"}]):
    put("fuzz_marian_config", "variant%d.json" % i, json.dumps(dict(marian, **change)).encode())

# A MarianMT directory (fuzz_marian_dir): config.json, vocab.json and optionally
# generation_config.json and tokenizer_config.json, separated; the harness holds the tokenizers and
# the weights, of this shape (fuzz/targets.cpp tinyMarianTensors).
tiny_marian = dict(marian, d_model=8, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                   decoder_attention_heads=2, encoder_ffn_dim=8, decoder_ffn_dim=8, vocab_size=16, pad_token_id=15,
                   decoder_start_token_id=15, eos_token_id=0, bad_words_ids=[[15]], max_position_embeddings=16,
                   max_length=16)
marian_vocab = {p: i for i, p in enumerate(["</s>", "<unk>", "\u2581Ein", "\u2581Mann", "\u2581A", "\u2581man", ".", "\u2581",
                                            "s", "e", "n", "a", "t", "\u2581Hund", ">>deu<<", "<pad>"])}
generation = {"num_beams": 2, "max_length": 8, "bad_words_ids": [[15]]}
languages = {"source_lang": "de", "target_lang": "en", "separate_vocabs": False}
for name, parts in (("config-vocab", [tiny_marian, marian_vocab]),
                    ("all-four", [tiny_marian, marian_vocab, generation, languages]),
                    ("generation-only", [dict(tiny_marian, activation_function="relu"), marian_vocab, generation]),
                    ("eos-differs", [dict(tiny_marian, eos_token_id=6), marian_vocab]),
                    ("untied", [dict(tiny_marian, tie_word_embeddings=False), marian_vocab, {}, languages])):
    put("fuzz_marian_dir", name + ".bin", SEPARATOR.join(json.dumps(p).encode() for p in parts))


# A multilingual directory (fuzz_multilingual_dir): config.json, special_tokens_map.json,
# tokenizer_config.json, added_tokens.json, vocab.json and model.safetensors.index.json, separated
# (an empty part: no such file); the harness holds a SentencePiece model of 40 pieces and one shard.
nllb = {"model_type": "m2m_100", "d_model": 8, "encoder_layers": 1, "decoder_layers": 1,
        "encoder_attention_heads": 2, "decoder_attention_heads": 2, "encoder_ffn_dim": 8, "decoder_ffn_dim": 8,
        "vocab_size": 48, "pad_token_id": 1, "eos_token_id": 2, "decoder_start_token_id": 2,
        "max_position_embeddings": 32, "scale_embedding": True, "activation_function": "relu"}
nllb_langs = {"additional_special_tokens": ["eng_Latn", "deu_Latn", "fra_Latn", "ita_Latn", "spa_Latn"]}
nllb_tok = {"tokenizer_class": "NllbTokenizer", "src_lang": "eng_Latn", "tgt_lang": "deu_Latn"}
index = {"metadata": {"total_size": 4096}, "weight_map": {"model.shared.weight": "model-00001-of-00001.safetensors"}}
m2m_vocab = {p: i for i, p in enumerate(["<s>", "<pad>", "</s>", "<unk>", "\u2581Ein", "\u2581Mann", "\u2581A", "."])}
m2m_langs = {"additional_special_tokens": ["__de__", "__en__", "__fr__"]}
for name, parts in (("nllb", [nllb, nllb_langs, nllb_tok, b"", b"", index]),
                    ("nllb-legacy", [nllb, nllb_langs, dict(nllb_tok, legacy_behaviour=True)]),
                    ("mbart", [dict(nllb, model_type="mbart"), nllb_langs, {"tokenizer_class": "MBart50Tokenizer"}]),
                    ("m2m100", [dict(nllb, vocab_size=24), m2m_langs, {"tokenizer_class": "M2M100Tokenizer"},
                                {"__de__": 8, "__en__": 9, "__fr__": 10}, m2m_vocab]),
                    ("too-small", [dict(nllb, vocab_size=20), nllb_langs, nllb_tok])):
    put("fuzz_multilingual_dir", name + ".bin",
        SEPARATOR.join(p if isinstance(p, bytes) else json.dumps(p).encode() for p in parts))

# model.safetensors with values (fuzz_safetensors_values): the weights of a 16-id package of the
# harness's tiny config, as F32, F16 and BF16, and with NaN, infinity and finite but huge values.
def retyped(st, dtype=None, fill=None):
    """st: safetensors bytes -> the same tensors, converted to dtype; fill: (name, value) overwrites one."""
    n = struct.unpack("<Q", st[:8])[0]
    header = json.loads(st[8:8 + n])
    data = st[8 + n:]
    tensors = []
    for name, t in sorted(((k, v) for k, v in header.items() if k != "__metadata__"), key=lambda kv: kv[1]["data_offsets"]):
        b, e = t["data_offsets"]
        values = list(struct.unpack("<%df" % ((e - b) // 4), data[b:e]))
        if fill and fill[0] == name:
            values = [fill[1]] * len(values)
        kind = dtype or t["dtype"]
        raw = (struct.pack("<%df" % len(values), *values) if kind == "F32" else
               struct.pack("<%de" % len(values), *values) if kind == "F16" else
               b"".join(struct.pack("<f", v)[2:] for v in values))
        tensors.append((name, kind, t["shape"], raw))
    return safetensors(tensors)


_, tiny16 = tiny_package(16)
put("fuzz_safetensors_values", "tiny.safetensors", tiny16)
put("fuzz_safetensors_values", "tiny-f16.safetensors", retyped(tiny16, "F16"))
put("fuzz_safetensors_values", "tiny-bf16.safetensors", retyped(tiny16, "BF16"))
for name, value in (("nan", float("nan")), ("inf", float("inf")), ("huge", 3e38)):
    put("fuzz_safetensors_values", "tiny-%s.safetensors" % name,
        retyped(tiny16, fill=("encoder.layer_stack.0.slf_attn.w_vs.weight", value)))

# Lessons at size (fuzz_lesson_at_size): [steps byte][caption byte] + one step's JSON + SEPARATOR +
# a caption unit; bytes 250..255 mean the neighbourhood of the caps (fuzz/targets.cpp lessonAtSize).
lesson_steps = []
for name in sorted(os.listdir(os.path.join(root, "resources", "lessons"))):
    with open(os.path.join(root, "resources", "lessons", name), "rb") as f:
        lesson_steps += json.loads(f.read())["steps"]
lesson_steps.append({"title": "s", "view": {"kind": "decoder", "layer": 2, "head": 8,
                                            "selections": {"attention": {"kind": "encoder", "layer": 5, "head": 3}}}})
for i, step in enumerate(lesson_steps[:12]):
    counts = bytes([random.choice([1, 40, 120, 249, 254, 255]), random.choice([0, 30, 249, 254, 255])])
    put("fuzz_lesson_at_size", "step%02d.bin" % i,
        counts + json.dumps(step).encode() + SEPARATOR + step.get("caption", "**bold** and *em* ").encode())
put("fuzz_lesson_at_size", "at-caps.bin", bytes([254, 254]) + json.dumps(lesson_steps[-1]).encode())
put("fuzz_lesson_at_size", "over-caps.bin", bytes([255, 255]) + json.dumps(lesson_steps[0]).encode())

# A whole pytorch_model.bin without torch (fuzz_torch_bin): the hand-made data.pkl in the zip layout
# torch.save writes (archive/data.pkl, archive/data/0, archive/version), stored, deflated and zip64.
def torch_zip(compression, zip64=False):
    import io, zipfile
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as z:
        for name, data in (("archive/data.pkl", hand_made_state_dict()), ("archive/data/0", floats(7)),
                           ("archive/version", b"3\n")):
            with z.open(zipfile.ZipInfo(name), "w", force_zip64=zip64) as f:
                f.write(data)
    return buffer.getvalue()


import zipfile
put("fuzz_torch_bin", "hand-made-stored.bin", torch_zip(zipfile.ZIP_STORED))
put("fuzz_torch_bin", "hand-made-deflated.bin", torch_zip(zipfile.ZIP_DEFLATED))
put("fuzz_torch_bin", "hand-made-zip64.bin", torch_zip(zipfile.ZIP_STORED, zip64=True))

# A CTranslate2 model.bin (fuzz_ctranslate2_bin), written as model_spec.py's _serialize does: a
# TransformerSpec of width 4, one layer a stack, 6 tokens; float32, int8 with per-row scales (binary
# version 6, aliases) and version 3 (item sizes, top-level attributes at revision 4).
def ct2_model_bin(version=6, revision=7, int8=False):
    def string(text):
        raw = text.encode()
        return struct.pack("<H", len(raw) + 1) + raw + b"\0"
    d, inner, vocab = 4, 8, 6
    variables, aliases = [], []

    def var(name, shape, values=None, dtype="f"):
        n = 1
        for x in shape:
            n *= x
        if dtype == "f" and int8 and name.endswith("weight") and len(shape) == 2:
            variables.append((name, shape, "b", [random.randint(-127, 127) for _ in range(n)]))
            variables.append((name + "_scale", [shape[0]], "f", [random.uniform(50, 500) for _ in range(shape[0])]))
            return
        variables.append((name, shape, dtype, values if values is not None else [random.uniform(-1, 1) for _ in range(n)]))

    def linear(scope, rows, cols):
        var(scope + "/weight", [rows, cols])
        var(scope + "/bias", [rows])

    def norm(scope):
        var(scope + "/gamma", [d])
        var(scope + "/beta", [d])

    top = "" if revision >= 5 else None
    for stack in ("encoder", "decoder"):
        attrs = stack + "/" if revision >= 5 else ""
        if revision >= 5 or stack == "encoder":
            var(attrs + "num_heads", [], [2], "h")
            var(attrs + "pre_norm", [], [1], "b")
            var(attrs + "activation", [], [0], "b")
        var(stack + ("/embeddings_0/weight" if stack == "encoder" else "/embeddings/weight"), [vocab, d])
        var(stack + "/scale_embeddings", [], [1], "b")
        norm(stack + "/layer_norm")
        layer = stack + "/layer_0"
        linear(layer + "/self_attention/linear_0", 3 * d, d)
        linear(layer + "/self_attention/linear_1", d, d)
        norm(layer + "/self_attention/layer_norm")
        if stack == "decoder":
            linear(layer + "/attention/linear_0", d, d)
            linear(layer + "/attention/linear_1", 2 * d, d)
            linear(layer + "/attention/linear_2", d, d)
            norm(layer + "/attention/layer_norm")
        linear(layer + "/ffn/linear_0", inner, d)
        linear(layer + "/ffn/linear_1", d, inner)
        norm(layer + "/ffn/layer_norm")
    if version >= 3:
        aliases.append(("decoder/projection/weight", "decoder/embeddings/weight"))
    else:
        var("decoder/projection/weight", [vocab, d])
    codes = {"f": 0, "b": 1, "h": 2}
    body = struct.pack("<I", version) + string("TransformerSpec") + struct.pack("<I", revision)
    body += struct.pack("<I", len(variables))
    for name, shape, dtype, values in sorted(variables):
        body += string(name) + struct.pack("<B", len(shape)) + b"".join(struct.pack("<I", x) for x in shape)
        raw = struct.pack("<%d%s" % (len(values), dtype), *values)
        size = struct.calcsize(dtype)
        body += struct.pack("<BI", codes[dtype], len(raw)) if version >= 4 else struct.pack("<BI", size, len(values))
        body += raw
    if version >= 3:
        body += struct.pack("<I", len(aliases)) + b"".join(string(a) + string(t) for a, t in aliases)
    return body


put("fuzz_ctranslate2_bin", "float32-v6.bin", ct2_model_bin())
put("fuzz_ctranslate2_bin", "int8-v6.bin", ct2_model_bin(int8=True))
put("fuzz_ctranslate2_bin", "float32-v3-r4.bin", ct2_model_bin(version=3, revision=4))


# An Argos Translate package (fuzz_argos_archive): one top folder with metadata.json, model/ and a
# vocabulary, stored and deflated.
def argos_zip(compression):
    import io
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as z:
        z.writestr("translate-en_de-1_0/metadata.json", json.dumps({"from_code": "en", "to_code": "de"}))
        z.writestr("translate-en_de-1_0/model/model.bin", ct2_model_bin())
        z.writestr("translate-en_de-1_0/model/shared_vocabulary.json",
                   json.dumps(["<blank>", "<unk>", "<s>", "</s>", "a", "b"]))
        z.writestr("translate-en_de-1_0/stanza/", "")
    return buffer.getvalue()


put("fuzz_argos_archive", "stored.argosmodel", argos_zip(zipfile.ZIP_STORED))
put("fuzz_argos_archive", "deflated.argosmodel", argos_zip(zipfile.ZIP_DEFLATED))

# The Argos package index (fuzz_argos_index): entries shaped as argospm-index's index.json has them, one with
# the optional keys (size, checksum, license, type) and one with only its languages.
put("fuzz_argos_index", "index.json", json.dumps([
    {"package_version": "1.9", "argos_version": "1.9.0", "from_code": "en", "from_name": "English",
     "to_code": "de", "to_name": "German", "links": ["https://argos-net.com/v1/translate-en_de-1_9.argosmodel"],
     "code": "translate-en_de", "size": 104857600, "checksum": "sha256:" + "0" * 64, "license": "CC-BY-4.0",
     "type": "translate"},
    {"from_code": "de", "to_code": "en"}]))


# A text to translate (fuzz_text): paragraphs with abbreviations, initials, numbers and quotes; a CJK line; a
# byte-order mark and a control character.
put("fuzz_text", "paragraphs.txt", "Zwei Hunde spielen im Schnee. Dr. Meier kommt am 3. Mai, z. B. mit J.P. Smith!\n\n"
    "\u201eWer?\u201c fragt sie. Ein Mann f\u00e4hrt Fahrrad\u2026 Zwei Frauen lachen.\n")
put("fuzz_text", "cjk-and-controls.txt", "\ufeff\u4e24\u53ea\u72d7\u5728\u96ea\u5730\u91cc\u73a9\u3002\u5b83\u4eec\u5f88\u9ad8\u5174\uff01\fA dog runs. It jumps.")

# What the Hugging Face hub sends (fuzz_hub_answers): a file list, a sharded weights index, an ETag, a name,
# and the shipped catalog, one input (fuzz/targets.h kPackagePartSeparator between them).
def hub_answers():
    # as GET /api/models/ORG/NAME/revision/REV?blobs=true answers: sizes, an LFS entry, the card's licence
    files = ["config.json", "source.spm", "target.spm", "vocab.json", "model.safetensors", "tf_model.h5",
             "onnx/encoder.onnx", "README.md", "f000001.model"]
    siblings = [{"rfilename": f, "size": 100 + i} for i, f in enumerate(files)]
    siblings[4]["lfs"] = {"sha256": "a" * 64, "size": 104, "pointerSize": 134}
    listing = json.dumps({"id": "Helsinki-NLP/opus-mt-de-en", "sha": "0" * 40, "siblings": siblings,
                          "cardData": {"license": "cc-by-4.0"}, "tags": ["license:cc-by-4.0"]})
    index = json.dumps({"metadata": {}, "weight_map": {"a.weight": "model-00001-of-00002.safetensors",
                                                       "b.weight": "model-00002-of-00002.safetensors"}})
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "resources", "hub_catalog.json"),
              "rb") as f:
        catalog = f.read()
    return SEPARATOR.join([listing.encode(), index.encode(), b'W/"' + b"a" * 64 + b'"',
                          b"facebook/nllb-200-distilled-600M@refs/pr/1", catalog])


put("fuzz_hub_answers", "hub.txt", hub_answers())
print("seeds in", out)
