#include "formats/ctranslate2/ct2_model.h"

#include "formats/argos/argos_package.h"
#include "formats/huggingface/hf_config.h"
#include "formats/huggingface/hf_multilingual.h"
#include "util/json_parse.h"
#include "util/small_file.h"
#include "util/text.h"

#include <attnlab/config_fields.h>
#include <attnlab/errors.h>
#include <attnlab/package.h>
#include <attnlab/unknown_languages.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <sstream>

namespace attnlab::package {
namespace fs = std::filesystem;
using ct2::ModelBin;
using ct2::Variable;

namespace {

constexpr uint32_t kOldestRevision = 1;            // ModelSpec.revision counts from 1 (version < 2 stored none)
constexpr uint32_t kNewestRevision = 7;            // TransformerSpec.revision in CTranslate2 4.x
constexpr int64_t kGeneratedPositions = 1024;      // translate_batch's default max_input_length
constexpr int64_t kMaxStoredPositions = 8192;      // ModelConfig's n_position at most
constexpr size_t kMaxVocabularyBytes = 64u << 20;  // NLLB's 256,206 tokens take 6 MB
constexpr size_t kMaxVocabularyTokens = 4u << 20;  // 16 times NLLB's

void replaceFirst(std::string& s, const std::string& from, const std::string& to) {
    const size_t at = s.find(from);
    if (at != std::string::npos) s.replace(at, from.size(), to);
}

// Spec revision 1 stored OpenNMT-tf's names; src/models/transformer.cc maps them so.
std::string v1Name(std::string name) {
    replaceFirst(name, "transformer/", "");
    replaceFirst(name, ":0", "");
    replaceFirst(name, "w_embs", "embeddings/weight");
    replaceFirst(name, "kernel", "weight");
    replaceFirst(name, "LayerNorm", "layer_norm");
    replaceFirst(name, "dense", "projection");
    replaceFirst(name, "conv1d_", "linear_");
    replaceFirst(name, "conv1d", "linear_0");
    if (name.find("encoder") != std::string::npos) {
        replaceFirst(name, "multi_head", "self_attention");
    } else {
        replaceFirst(name, "masked_multi_head", "self_attention");
        replaceFirst(name, "multi_head", "attention");
    }
    return name;
}

void renameV1(ModelBin& bin) {
    bin.index.clear();
    for (size_t i = 0; i < bin.variables.size(); ++i) {
        auto& v = bin.variables[i];
        v.name = v1Name(v.name);
        if (!bin.index.emplace(v.name, i).second)
            throw PackageError(bin.path + ": two variables become '" + util::forMessage(v.name) +
                               "' under OpenNMT-tf's names");
    }
    std::map<std::string, std::string> aliases;
    for (const auto& [a, t] : bin.aliases) aliases[v1Name(a)] = v1Name(t);
    bin.aliases = std::move(aliases);
}

// The spec as data: attributes with CTranslate2's defaults and fallbacks, variables marked as used.
struct Spec {
    const ModelBin& bin;
    std::set<std::string> used;    // stored variables mapped or read
    std::set<std::string> mapped;  // the names mapped, an alias among them (its role)

    [[noreturn]] void fail(const std::string& m) const { throw PackageError(bin.path + ": " + m); }
    bool has(const std::string& name) const { return bin.find(name) != nullptr; }
    const Variable& get(const std::string& name) const {
        const Variable* v = bin.find(name);
        if (!v) fail("missing variable '" + name + "'");
        return *v;
    }
    // A scope's attribute; before revision 5 the attributes were stored once at the top.
    std::optional<double> attr(const std::string& scope, const std::string& key) const {
        if (auto v = bin.number(scope + "/" + key)) return v;
        if (bin.spec_revision < 5) return bin.number(key);
        return std::nullopt;
    }
    bool flag(const std::string& scope, const std::string& key, bool fallback) const {
        const auto v = attr(scope, key);
        return v ? *v != 0 : fallback;
    }
    std::vector<int64_t> shape(const std::string& name) const { return get(name).shape; }
    // The rows of a matrix variable (rank 2), refused by name otherwise.
    int64_t rows(const std::string& name) const {
        const auto s = shape(name);
        if (s.size() != 2) fail("'" + name + "' has shape " + util::shapeString(s) + "; a matrix was expected");
        return s[0];
    }
    // An integer attribute (stored as an integer scalar), range-checked.
    std::optional<int64_t> integer(const std::string& scope, const std::string& key, int64_t lo, int64_t hi) const {
        const auto v = attr(scope, key);
        if (!v) return std::nullopt;
        if (*v != std::floor(*v) || *v < double(lo) || *v > double(hi))
            fail(scope + "/" + key + " is " + std::to_string(*v) + "; expected an integer in " + std::to_string(lo) +
                 ".." + std::to_string(hi));
        return static_cast<int64_t>(*v);
    }
    int64_t layers(const std::string& stack) const {
        int64_t n = 0;
        while (n < 4096 && has(stack + "/layer_" + std::to_string(n) + "/ffn/linear_0/weight")) ++n;
        return n;
    }
};

// Features of CTranslate2 that AttnLab's layers do not have: refused by name before anything is mapped.
void refuseUnsupported(const Spec& s) {
    static const std::vector<std::pair<std::string, std::string>> by_name = {
        {"/relative_asymmetric_position_keys", "asymmetric relative positions"},
        {"/relative_attention_bias", "T5's relative attention bias"},
        {"/rotary_dim", "rotary position embeddings"},
        {"/num_heads_kv", "grouped- or multi-query attention"},
        {"/linear_0_noact", "a gated feed-forward layer (GLU)"},
        {"/q_norm/", "query/key normalisation"},
        {"/project_in/", "projections after the embeddings (project_in / project_out)"},
        {"/shared_layer_norm/", "parallel residual connections"},
        {"/input_layer_norm/", "parallel residual or pre-and-post layer norms"},
        {"/scale_outputs", "a scale on the decoder's outputs (scale_outputs)"},
        {"/sliding_window", "sliding-window attention"},
        {"/weight_zero", "AWQ 4-bit weights"},
        {"encoder/embeddings_1/", "source features (several source embeddings)"},
    };
    std::vector<std::string> names;  // stored and aliased: CTranslate2 aliases any two equal tensors
    for (const auto& v : s.bin.variables) names.push_back(v.name);
    for (const auto& a : s.bin.aliases) names.push_back(a.first);
    for (const auto& name : names)
        for (const auto& [key, what] : by_name)
            if (name.find(key) != std::string::npos)
                s.fail("'" + name + "': " + what + " is not implemented in AttnLab");
    for (const auto& name : names)
        if (util::endsWith(name, "/gamma") && !s.has(name.substr(0, name.size() - 5) + "beta"))
            s.fail("'" + name + "' has no beta: RMS normalisation is not implemented in AttnLab");
    for (const char* scope : {"encoder", "decoder"}) {
        if (s.flag(scope, "multi_query_attention", false) || s.flag(scope, "multi_query", false))
            s.fail(std::string(scope) + ": multi-query attention is not implemented in AttnLab");
        if (s.flag(scope, "alibi", false)) s.fail(std::string(scope) + ": ALiBi is not implemented in AttnLab");
    }
}

void checkSpecName(const ModelBin& bin) {
    const std::string& spec = bin.spec;
    if (spec == "TransformerDecoderSpec")
        throw PackageError(bin.path +
                           ": holds a decoder-only language model (TransformerDecoderSpec); AttnLab opens "
                           "encoder-decoder translation models (TransformerSpec)");
    if (spec != "TransformerSpec" && spec != "TransformerBase" && spec != "TransformerBig" && !spec.empty())
        throw PackageError(bin.path + ": holds a " + util::forMessage(spec) +
                           " model; AttnLab opens CTranslate2's Transformer encoder-decoders (TransformerSpec)");
    const std::string range = "(" + std::to_string(kOldestRevision) + " to " + std::to_string(kNewestRevision) + ")";
    if (bin.spec_revision < kOldestRevision)
        throw PackageError(bin.path + ": spec revision " + std::to_string(bin.spec_revision) +
                           " is not one CTranslate2 writes: its revisions count from 1; AttnLab reads " + range);
    if (bin.spec_revision > kNewestRevision)
        throw PackageError(bin.path + ": spec revision " + std::to_string(bin.spec_revision) +
                           " is newer than the revisions AttnLab reads " + range);
}

int64_t headCount(const Spec& s) {
    if (s.bin.spec_revision < 3 && !s.bin.number("num_heads")) return s.bin.spec == "TransformerBig" ? 16 : 8;
    const int64_t enc = s.integer("encoder", "num_heads", 1, 1024).value_or(8);
    const int64_t dec = s.integer("decoder", "num_heads", 1, 1024).value_or(8);
    if (enc != dec)
        s.fail("the encoder has " + std::to_string(enc) + " heads and the decoder " + std::to_string(dec) +
               "; AttnLab needs one head count");
    return enc;
}

std::string activationName(const Spec& s) {
    const int64_t enc = s.integer("encoder", "activation", -128, 127).value_or(0);
    if (enc != s.integer("decoder", "activation", -128, 127).value_or(0))
        s.fail("the encoder's and the decoder's activations differ; AttnLab needs one");
    switch (enc) {
    case 0: return "relu";
    case 1: return "gelu_tanh";
    case 2: return "swish";
    case 3: return "gelu";
    case 4: s.fail("the activation GELUSigmoid (4) is not implemented in AttnLab");
    case 5: s.fail("the activation Tanh (5) is not implemented in AttnLab");
    default: s.fail("activation " + std::to_string(enc) + " is not one of CTranslate2's (0-5)");
    }
}

// "sqrt_d_model" or "none", as build_embeddings_scale decides for a stack.
std::string embeddingScale(const Spec& s, const std::string& stack, int64_t d_model) {
    const Variable* v = s.bin.find(stack + "/scale_embeddings");
    if (!v) v = s.bin.find(stack + "/embeddings/multiply_by_sqrt_depth");
    if (!v) return "sqrt_d_model";
    const auto number = s.bin.number(v->name);
    if (!number)
        s.fail("'" + v->name + "' is a " + ct2::dtypeName(v->dtype) + " of shape " + util::shapeString(v->shape) +
               ", not a flag or a float scale");
    const double x = *number;
    if (v->dtype == ct2::DType::Int8) return x != 0 ? "sqrt_d_model" : "none";
    if (x == 1.0) return "none";
    if (std::abs(x - std::sqrt(double(d_model))) < 1e-4) return "sqrt_d_model";
    s.fail(stack + "/scale_embeddings is " + std::to_string(x) + "; AttnLab scales embeddings by sqrt(d_model) or 1");
}

std::string embeddingsName(const Spec& s, const std::string& stack) {
    for (const auto& name : {stack + "/embeddings/weight", stack + "/embeddings_0/weight"})
        if (s.has(name)) return name;
    s.fail("missing variable '" + stack + "/embeddings/weight'");
}

struct Builder {
    Spec& s;
    Ct2Model& m;
    int64_t d = 0;

    void map(const std::string& ours, const std::string& var, int64_t row_begin = 0, int64_t rows = -1) {
        const std::string stored = s.bin.resolve(var);
        s.get(var);
        m.sources[ours] = {stored, row_begin, rows};
        s.used.insert(stored);
        s.mapped.insert(var);
        if (s.bin.find(stored + "_scale")) s.used.insert(stored + "_scale");
    }
    void optional(const std::string& ours, const std::string& var) {
        if (s.has(var)) map(ours, var);
    }
    void linear(const std::string& ours, const std::string& var, int64_t row_begin = 0, int64_t rows = -1) {
        map(ours + ".weight", var + "/weight", row_begin, rows);
        if (s.has(var + "/bias")) map(ours + ".bias", var + "/bias", row_begin, rows);
    }
    void norm(const std::string& ours, const std::string& var) {
        map(ours + ".weight", var + "/gamma");
        map(ours + ".bias", var + "/beta");
    }
    void attention(const std::string& ours, const std::string& var, bool self) {
        if (self) {
            for (int i = 0; i < 3; ++i)
                linear(ours + (i == 0 ? ".w_qs" : i == 1 ? ".w_ks" : ".w_vs"), var + "/linear_0", i * d, d);
            linear(ours + ".fc", var + "/linear_1");
        } else {
            linear(ours + ".w_qs", var + "/linear_0");
            linear(ours + ".w_ks", var + "/linear_1", 0, d);
            linear(ours + ".w_vs", var + "/linear_1", d, d);
            linear(ours + ".fc", var + "/linear_2");
        }
        norm(ours + ".layer_norm", var + "/layer_norm");
    }
    void layer(const std::string& stack, int64_t i) {
        const std::string ours = stack + ".layer_stack." + std::to_string(i),
                          var = stack + "/layer_" + std::to_string(i);
        attention(ours + ".slf_attn", var + "/self_attention", true);
        if (stack == "decoder") attention(ours + ".enc_attn", var + "/attention", false);
        linear(ours + ".pos_ffn.w_1", var + "/ffn/linear_0");
        linear(ours + ".pos_ffn.w_2", var + "/ffn/linear_1");
        norm(ours + ".pos_ffn.layer_norm", var + "/ffn/layer_norm");
    }
};

int64_t innerWidth(const Spec& s, const std::string& stack, int64_t layers) {
    const int64_t inner = s.rows(stack + "/layer_0/ffn/linear_0/weight");
    for (int64_t i = 1; i < layers; ++i)
        if (s.rows(stack + "/layer_" + std::to_string(i) + "/ffn/linear_0/weight") != inner)
            s.fail(stack + ": its layers' feed-forward widths differ; AttnLab needs one per stack");
    return inner;
}

bool bothOrNeither(const Spec& s, const std::string& suffix, const char* what) {
    const bool enc = s.has("encoder/" + suffix), dec = s.has("decoder/" + suffix);
    if (enc != dec)
        s.fail(std::string("only the ") + (enc ? "encoder" : "decoder") + " has " + what +
               "; AttnLab needs both or neither");
    return enc;
}

// CTranslate2's converters give relative positions to self-attention only (converters/opennmt_py.py
// set_multi_head_attention is called with self_attention=True for them; specs/attention_spec.py
// MultiHeadAttentionSpec adds the two variables only with relative_position): a cross-attention with them is refused.
void refuseCrossAttentionTables(const Spec& s, const ModelConfig& c) {
    for (int64_t i = 0; i < c.n_dec_layers; ++i) {
        const std::string layer = "decoder/layer_" + std::to_string(i) + "/attention";
        if (s.has(layer + "/relative_position_keys") || s.has(layer + "/relative_position_values"))
            s.fail("'" + layer +
                   "' (a cross-attention) has relative positions: CTranslate2's converters give them to "
                   "self-attention only, and AttnLab implements them there");
    }
}

// One self-attention's k: 0 without tables; with them both tables, 2k + 1 rows (attention.cc MultiHeadAttention:
// _maximum_relative_position = (relative_position_keys.dim(0) - 1) / 2), k at most what a package holds.
int64_t scopeDistance(const Spec& s, const std::string& scope) {
    const bool keys = s.has(scope + "/relative_position_keys"), values = s.has(scope + "/relative_position_values");
    if (keys != values)
        s.fail("'" + scope + "' has relative_position_" + (keys ? "keys" : "values") + " without relative_position_" +
               (keys ? "values" : "keys") + "; AttnLab needs both");
    if (!keys) return 0;
    const std::string name = scope + "/relative_position_keys";
    const int64_t rows = s.rows(name);
    if (rows < 3)
        s.fail("'" + name + "' has " + std::to_string(rows) +
               " row(s); relative positions need at least 3 rows (k >= 1: offsets -k..k)");
    if (rows % 2 == 0)
        s.fail("'" + name + "' has " + std::to_string(rows) +
               " rows, an even count; relative positions need 2k + 1 (offsets -k..k)");
    // The largest k a package can hold: the field table's bound (config_fields.cpp owns it).
    const int64_t k = (rows - 1) / 2, most = int64_t(findModelConfigField("max_relative_positions").max);
    if (k > most)
        s.fail("'" + name + "' has " + std::to_string(rows) + " rows: k = " + std::to_string(k) +
               " exceeds max_relative_positions' maximum " + std::to_string(most) + " (what a package holds)");
    return k;
}

// Relative position representations (OpenNMT-py's max_relative_positions; converters/opennmt_py.py
// set_multi_head_attention stores relative_positions_embeddings as relative_position_keys and the same tensor as
// relative_position_values): every self-attention of both stacks has both, [2k+1, d_head], one k for all. 0 when
// none has them.
int64_t relativeDistance(const Spec& s, const ModelConfig& c) {
    refuseCrossAttentionTables(s, c);
    std::vector<std::string> scopes;
    for (int64_t i = 0; i < c.n_layers; ++i) scopes.push_back("encoder/layer_" + std::to_string(i) + "/self_attention");
    for (int64_t i = 0; i < c.n_dec_layers; ++i)
        scopes.push_back("decoder/layer_" + std::to_string(i) + "/self_attention");
    const int64_t k = scopeDistance(s, scopes.front());
    for (size_t i = 1; i < scopes.size(); ++i) {
        const int64_t here = scopeDistance(s, scopes[i]);
        if (here == k) continue;
        const auto clips = [](int64_t d) {
            return d == 0 ? std::string("has no relative positions")
                          : "clips relative positions at " + std::to_string(d);
        };
        s.fail("'" + scopes[i] + "' " + clips(here) + " while '" + scopes.front() + "' " +
               (k == 0 ? std::string("has none") : "clips them at " + std::to_string(k)) +
               "; AttnLab needs one distance for every self-attention");
    }
    return k;
}

void mapRelativeTables(Builder& b, const std::string& stack, int64_t layer) {
    const std::string ours = stack + ".layer_stack." + std::to_string(layer) + ".slf_attn",
                      var = stack + "/layer_" + std::to_string(layer) + "/self_attention";
    b.map(ours + ".relative_position_keys", var + "/relative_position_keys");
    b.map(ours + ".relative_position_values", var + "/relative_position_values");
}

void mapPositions(const Spec& s, Builder& b, ModelConfig& c) {
    if (c.relativePositions()) {
        // transformer.cc: no position encoder when layer 0's self-attention has relative positions (a stored table
        // is then left unread, as here).
        for (const char* stack : {"encoder", "decoder"})
            if (const Variable* t = s.bin.find(std::string(stack) + "/position_encodings/encodings"))
                b.s.used.insert(t->name);
        c.pos_encoding = "none";
        c.pos_offset = 0;
        c.n_position = kGeneratedPositions;
        return;
    }
    if (bothOrNeither(s, "position_encodings/encodings", "a stored position table")) {
        const auto enc = s.shape("encoder/position_encodings/encodings"),
                   dec = s.shape("decoder/position_encodings/encodings");
        if (enc.size() != 2 || dec.size() != 2 || enc[1] != c.d_model || dec[1] != c.d_model)
            s.fail("a position table's shape " + util::shapeString(enc) + " / " + util::shapeString(dec) +
                   " is not [positions, " + std::to_string(c.d_model) + "]");
        c.pos_encoding = "learned";
        c.pos_offset = 0;
        // The longest sequence either stack accepts, within what a package's table may hold.
        c.n_position = std::min({enc[0], dec[0], kMaxStoredPositions, kMaxPositionalTableEntries / c.d_model});
        b.map("encoder.position_enc.pos_table", "encoder/position_encodings/encodings", 0, c.n_position);
        b.map("decoder.position_enc.pos_table", "decoder/position_encodings/encodings", 0, c.n_position);
    } else {
        // generate_sinusoidal_position_encoding: halves, ln(10000)/(d/2 - 1), position i + 1 for token i.
        c.pos_encoding = "fairseq";
        c.pos_offset = 1;
        c.n_position = kGeneratedPositions;
    }
}

ModelConfig mapArchitecture(Spec& s, Builder& b) {
    ModelConfig c;
    const std::string enc_emb = embeddingsName(s, "encoder"), dec_emb = "decoder/embeddings/weight";
    const auto es = s.shape(enc_emb), ds = s.shape(dec_emb);
    if (es.size() != 2 || ds.size() != 2 || es[1] != ds[1] || es[1] < 1)
        s.fail("the embeddings' shapes " + util::shapeString(es) + " and " + util::shapeString(ds) +
               " are not [vocabulary, d_model] of one width");
    c.n_src_vocab = es[0];
    c.n_trg_vocab = ds[0];
    c.d_model = c.d_word_vec = es[1];
    c.n_head = headCount(s);
    if (c.n_head < 1 || c.d_model % c.n_head != 0)
        s.fail("d_model " + std::to_string(c.d_model) + " is not a multiple of the " + std::to_string(c.n_head) +
               " heads");
    c.d_k = c.d_v = c.d_model / c.n_head;
    for (const auto& v : s.bin.variables)
        if (util::endsWith(v.name, "/queries_scale")) {
            const double scale = s.bin.number(v.name).value_or(0.0);
            if (std::abs(scale * std::sqrt(double(c.d_k)) - 1.0) > 1e-5)
                s.fail("'" + v.name + "' is " + std::to_string(scale) +
                       ", not 1/sqrt(d_head); AttnLab scales queries by 1/sqrt(d_head)");
        }
    c.n_layers = s.layers("encoder");
    c.n_dec_layers = s.layers("decoder");
    if (c.n_layers < 1 || c.n_dec_layers < 1) s.fail("the encoder or the decoder has no layer");
    c.d_inner = innerWidth(s, "encoder", c.n_layers);
    const int64_t dec_inner = innerWidth(s, "decoder", c.n_dec_layers);
    c.d_dec_inner = dec_inner == c.d_inner ? 0 : dec_inner;
    c.dropout = 0.0;
    c.ffn_activation = activationName(s);
    const bool pre = s.flag("encoder", "pre_norm", true);
    if (pre != s.flag("decoder", "pre_norm", true)) s.fail("the encoder and the decoder differ in pre_norm");
    c.norm_position = pre ? "pre" : "post";
    c.final_layer_norm = bothOrNeither(s, "layer_norm/gamma", "a final layer norm");
    c.emb_layer_norm = bothOrNeither(s, "layernorm_embedding/gamma", "a layer norm on the embeddings");
    c.emb_scale = embeddingScale(s, "encoder", c.d_model);
    if (c.emb_scale != embeddingScale(s, "decoder", c.d_model))
        s.fail("the encoder and the decoder scale embeddings differently");
    c.scale_emb_or_prj = "none";
    c.emb_src_trg_weight_sharing = s.bin.resolve(enc_emb) == s.bin.resolve(dec_emb);
    c.trg_emb_prj_weight_sharing = s.bin.resolve("decoder/projection/weight") == s.bin.resolve(dec_emb);
    c.logits_bias = s.has("decoder/projection/bias");
    // TransformerDecoder's _start_from_zero_embedding (src/layers/transformer.cc); Marian's converters set it.
    c.start_from_zero_embedding = s.flag("decoder", "start_from_zero_embedding", false);
    c.src_pad_idx = c.trg_pad_idx = 0;  // set from the vocabularies
    b.d = c.d_model;
    c.max_relative_positions = relativeDistance(s, c);
    mapPositions(s, b, c);
    return c;
}

void mapTensors(Spec& s, Builder& b, ModelConfig& c) {
    b.map("decoder.trg_word_emb.weight", "decoder/embeddings/weight");
    if (!c.emb_src_trg_weight_sharing) b.map("encoder.src_word_emb.weight", embeddingsName(s, "encoder"));
    if (!c.trg_emb_prj_weight_sharing) b.map("trg_word_prj.weight", "decoder/projection/weight");
    s.used.insert(s.bin.resolve("decoder/projection/weight"));
    s.mapped.insert({embeddingsName(s, "encoder"), "decoder/projection/weight"});  // tied: read as the decoder's
    if (c.logits_bias) b.map("final_logits_bias", "decoder/projection/bias");
    for (const char* stack : {"encoder", "decoder"}) {
        const int64_t n = std::string(stack) == "encoder" ? c.n_layers : c.n_dec_layers;
        for (int64_t i = 0; i < n; ++i) {
            b.layer(stack, i);
            if (c.relativePositions()) mapRelativeTables(b, stack, i);
        }
        if (c.emb_layer_norm) b.norm(std::string(stack) + ".layer_norm", std::string(stack) + "/layernorm_embedding");
        if (c.final_layer_norm) b.norm(std::string(stack) + ".final_layer_norm", std::string(stack) + "/layer_norm");
    }
    for (const auto& [ours, src] : b.m.sources)
        if (ours.find("_attn.") != std::string::npos && util::endsWith(ours, ".bias")) c.attn_bias = true;
}

// The attributes a TransformerSpec stores as scalars, and what a converter adds that changes nothing here.
void refuseUnknownVariables(const Spec& s) {
    static const std::set<std::string> attributes = {
        "num_heads", "pre_norm", "activation", "embeddings_merge", "scale_embeddings", "alignment_layer",
        "alignment_heads", "multi_query_attention", "alibi", "alibi_use_positive_positions", "scale_alibi",
        "start_from_zero_embedding", "keep_in_float32", "queries_scale", "multiply_by_sqrt_depth",
        // revisions < 5 also flagged these at the top (the variables say the same)
        "layernorm_embedding", "with_relative_position",
        // binary versions < 6: the sequence-to-sequence settings later in config.json
        "with_source_bos", "with_source_eos", "with_target_bos", "user_decoder_start_tokens", "unk_token", "bos_token",
        "eos_token"};
    for (const auto& v : s.bin.variables) {
        if (s.used.count(v.name)) continue;
        const std::string key = v.name.substr(v.name.rfind('/') + 1);
        if ((v.isScalar() || v.scalar.size() == v.nbytes) && attributes.count(key)) continue;
        s.fail("unexpected variable '" + util::forMessage(v.name) + "' of shape " + util::shapeString(v.shape) +
               ": not part of the Transformer encoder-decoder AttnLab reads");
    }
    // An alias is a name of the spec as a stored variable is: one no role reads is refused, even when
    // the variable it names has a role under its own name.
    for (const auto& [alias, target] : s.bin.aliases)
        if (!s.mapped.count(alias) && !attributes.count(alias.substr(alias.rfind('/') + 1)))
            s.fail("unexpected alias '" + util::forMessage(alias) + "' (of '" + util::forMessage(target) +
                   "'): a name of no role in the Transformer encoder-decoder AttnLab reads");
}

std::string storedDtypes(const ModelBin& bin) {
    std::set<std::string> d;
    for (const auto& v : bin.variables)
        if (!v.isScalar() && !util::endsWith(v.name, "_scale")) d.insert(ct2::dtypeName(v.dtype));
    std::string out;
    for (const auto& x : d) out += (out.empty() ? "" : "+") + x;
    return out;
}

// CTranslate2's config.json keys and their defaults (SequenceToSequenceModelConfig, TransformerConfig).
struct Ct2Config {
    std::string unk = "<unk>", bos = "<s>", eos = "</s>", start = "<s>";
    bool add_source_bos = false, add_source_eos = false;
    double layer_norm_epsilon = 1e-5;  // LayerNorm's default with a beta
};

// Binary versions < 6 (CTranslate2 2.x) kept these settings in model.bin (SequenceToSequenceModel's
// with_source_bos, with_source_eos, with_target_bos; the special tokens), whatever config.json says.
void readLegacyAttributes(const ModelBin& bin, Ct2Config& c) {
    c.unk = bin.text("unk_token").value_or(c.unk);
    c.bos = bin.text("bos_token").value_or(c.bos);
    c.eos = bin.text("eos_token").value_or(c.eos);
    c.add_source_bos = bin.number("with_source_bos").value_or(0) != 0;
    c.add_source_eos = bin.number("with_source_eos").value_or(0) != 0;
    c.start = bin.number("with_target_bos").value_or(1) != 0 ? c.bos : c.eos;
    if (bin.number("user_decoder_start_tokens").value_or(0) != 0)
        throw PackageError(bin.path +
                           ": user_decoder_start_tokens is set: CTranslate2 then takes the first target "
                           "token from each sentence's target prefix, which AttnLab does not do");
}

Ct2Config readCt2Config(const std::string& dir, const ModelBin& bin) {
    Ct2Config c;
    if (bin.binary_version < 6) readLegacyAttributes(bin, c);
    const std::string path = (fs::path(dir) / ct2_files::kConfig).string();
    if (dir.empty() || !util::optionalFilePresent(path)) return c;
    const HfConfig j{readJson(path), path};
    if (!j.j.is_object()) j.fail("expected a JSON object");
    if (bin.binary_version >= 6) {
        c.unk = j.string("unk_token", c.unk);
        c.bos = j.string("bos_token", c.bos);
        c.eos = j.string("eos_token", c.eos);
        if (j.j.contains("decoder_start_token") && j.j.at("decoder_start_token").is_null())
            j.fail(
                "decoder_start_token is null: CTranslate2 then takes the first target token from each sentence's "
                "target prefix, which AttnLab does not do");
        c.start = j.string("decoder_start_token", c.start);
        c.add_source_bos = j.boolean("add_source_bos", false);
        c.add_source_eos = j.boolean("add_source_eos", false);
    }
    if (j.has("layer_norm_epsilon")) {
        const auto& e = j.j.at("layer_norm_epsilon");
        if (!e.is_number() || !(e.get<double>() > 0) || e.get<double>() > 0.1)
            j.fail("layer_norm_epsilon must be a number in (0, 0.1], not " + e.dump());
        c.layer_norm_epsilon = e.get<double>();
    }
    if (j.boolean("multi_query_attention", false)) j.fail("multi-query attention is not implemented in AttnLab");
    return c;
}

struct TokenIds {
    const std::vector<std::string>& tokens;
    const std::string& file;
    int64_t find(const std::string& t) const {
        for (size_t i = 0; i < tokens.size(); ++i)  // the first occurrence, as CTranslate2's Vocabulary keeps
            if (tokens[i] == t) return int64_t(i);
        return -1;
    }
    int64_t require(const std::string& t, const char* role) const {
        const int64_t id = find(t);
        if (id < 0) throw PackageError(file + ": has no " + role + " token '" + util::forMessage(t) + "'");
        return id;
    }
    // src/vocabulary.cc Vocabulary::to_id: a token the vocabulary lacks is the unknown token's id
    // (the special tokens included: make_target_ids and make_source_ids look them up so).
    int64_t idOr(const std::string& t, int64_t unk) const {
        const int64_t id = find(t);
        return id >= 0 ? id : unk;
    }
};

// CTranslate2 pads by lengths (layers::make_sequence_inputs): its <blank> or <pad> is an ordinary token, which a
// sentence may hold and its search may generate (src/decoding.cc forbids only the end token before
// min_decoding_length; MarianMTLoader.get_vocabulary drops Marian's <pad> to keep it from being generated). AttnLab
// masks by an id, which no sentence may hold: a "<pad>" of its own, appended to each vocabulary (after the <unk>
// CTranslate2 appends), its embedding row zero and its logit kPaddingLogit (ct2_weights.cpp), so that the softmax
// stays CTranslate2's and every real token keeps its id and its role.
void appendPadding(std::vector<std::string>& tokens, std::vector<std::string>& added, int64_t& id) {
    id = int64_t(tokens.size());
    tokens.push_back("<pad>");
    added.push_back("<pad>");
}

void addPadding(Ct2Model& m) {
    ModelConfig& c = m.config.model;
    auto& v = m.vocabularies;
    appendPadding(v.source, v.source_added, c.src_pad_idx);
    if (v.shared) {
        v.target = v.source;
        v.target_added = v.source_added;
        c.trg_pad_idx = c.src_pad_idx;
    } else {
        appendPadding(v.target, v.target_added, c.trg_pad_idx);
    }
    c.n_src_vocab += 1;
    c.n_trg_vocab += 1;
    c.logits_bias = true;
    if (!c.emb_src_trg_weight_sharing) m.padding_rows.insert("encoder.src_word_emb.weight");
    m.padding_rows.insert({"decoder.trg_word_emb.weight", "final_logits_bias"});
    if (!c.trg_emb_prj_weight_sharing) m.padding_rows.insert("trg_word_prj.weight");
}

void applyVocabularies(Ct2Model& m, const Ct2Config& cc) {
    ModelConfig& c = m.config.model;
    const auto& v = m.vocabularies;
    const std::string& src_file = v.files.front();
    const std::string& trg_file = v.files.back();
    auto check = [](const std::vector<std::string>& tokens, size_t added, int64_t rows, const std::string& file,
                    const char* side) {
        if (int64_t(tokens.size()) != rows)
            throw PackageError(file + ": has " + std::to_string(tokens.size() - added) + " tokens" +
                               (added ? " (" + std::to_string(tokens.size()) + " with the <unk> CTranslate2 appends)"
                                      : std::string()) +
                               " but model.bin's " + side + " embeddings have " + std::to_string(rows) + " rows");
    };
    appendUnknownToken(m.vocabularies, cc.unk);
    check(v.source, v.source_added.size(), c.n_src_vocab, src_file, "encoder");
    check(v.target, v.target_added.size(), c.n_trg_vocab, trg_file, "decoder");
    addPadding(m);
    const TokenIds src{v.source, src_file}, trg{v.target, trg_file};
    c.layer_norm_eps = cc.layer_norm_epsilon;
    PackageConfig& p = m.config;
    p.tokenizer = "ctranslate2";
    p.unk_idx = trg.require(cc.unk, "unknown");  // there since appendUnknownToken
    const int64_t src_unk = src.require(cc.unk, "unknown");
    p.eos_idx = trg.idOr(cc.eos, p.unk_idx);
    p.bos_idx = trg.idOr(cc.start, p.unk_idx);
    // A decoder that starts from zero never reads its start token's embedding; marian.py leaves config.json's
    // default "<s>", which a Marian vocabulary lacks (CTranslate2 maps it to <unk>): </s> stands there instead,
    // so that AttnLab blocks no real token as the start token.
    if (c.start_from_zero_embedding && trg.find(cc.start) < 0) p.bos_idx = p.eos_idx;
    p.source_bos = cc.add_source_bos;
    p.source_eos = cc.add_source_eos;
    p.source_bos_idx = cc.add_source_bos ? src.idOr(cc.bos, src_unk) : -1;
    p.source_eos_idx = cc.add_source_eos ? src.idOr(cc.eos, src_unk) : -1;
    p.num_beams = 2;     // translate_batch's default beam_size
    p.max_length = 256;  // and max_decoding_length
    p.min_length = 1;    // and min_decoding_length: no </s> as the first token
}

// A converted multilingual model's language tokens, as ct2-transformers-converter writes its vocabulary
// (converters/transformers.py): M2M100Loader.get_vocabulary keeps the tokenizer's ids and appends its
// additional_special_tokens, "__de__" for M2M100 and "deu_Latn" for NLLB (both M2M100Config); MBartLoader
// keeps mBART-50's "de_DE". The family is the pattern its tokens follow; code = what a user names.
struct LanguagePattern {
    bool (*is)(const std::string&);
    std::string (*code)(const std::string&);
};

bool isLower(char c) { return c >= 'a' && c <= 'z'; }
bool isUpper(char c) { return c >= 'A' && c <= 'Z'; }

const std::vector<LanguagePattern>& languagePatterns() {
    static const std::vector<LanguagePattern> patterns = {
        {[](const std::string& t) {  // M2M100: __xx__ or __xxx__
             return (t.size() == 6 || t.size() == 7) && t.rfind("__", 0) == 0 &&
                    t.compare(t.size() - 2, 2, "__") == 0 && std::all_of(t.begin() + 2, t.end() - 2, isLower);
         },
         [](const std::string& t) { return t.substr(2, t.size() - 4); }},
        {[](const std::string& t) {  // NLLB: xxx_Xxxx
             return t.size() == 8 && isLower(t[0]) && isLower(t[1]) && isLower(t[2]) && t[3] == '_' && isUpper(t[4]) &&
                    isLower(t[5]) && isLower(t[6]) && isLower(t[7]);
         },
         [](const std::string& t) { return t; }},
        {[](const std::string& t) {  // mBART-50: xx_XX
             return t.size() == 5 && isLower(t[0]) && isLower(t[1]) && t[2] == '_' && isUpper(t[3]) && isUpper(t[4]);
         },
         [](const std::string& t) { return t; }},
    };
    return patterns;
}

// The languages of one family's tokens (two at least) in a shared vocabulary; the tokenizer's layout around
// them: the source language's token first, </s> after the pieces (M2M100Tokenizer, NllbTokenizer without
// legacy_behaviour, MBart50Tokenizer), the target language's token forced first (CTranslate2's target_prefix).
// Only where the decoder starts with </s>, as every such conversion does (BartLoader.set_config: M2M100's and NLLB's
// decoder_start_token_id is </s>'s; MBartLoader.set_config: </s> for mBART-50): a model of one pair whose word
// vocabulary happens to hold two tokens of such a shape (OpenNMT's, starting with <s>) is not taken for one.
void mapLanguages(Ct2Model& m) {
    const auto& tokens = m.vocabularies.target;
    if (!m.vocabularies.shared || m.config.bos_idx != m.config.eos_idx) return;
    for (const auto& pattern : languagePatterns()) {
        std::vector<LanguageToken> found;
        std::set<std::string> seen;
        for (size_t id = 0; id < tokens.size(); ++id)
            if (pattern.is(tokens[id]) && seen.insert(tokens[id]).second)  // a duplicate keeps its first id
                found.push_back({pattern.code(tokens[id]), tokens[id], int64_t(id)});
        if (found.size() < 2 || found.size() > PackageConfig::kMaxLanguages) continue;
        PackageConfig& p = m.config;
        p.languages = std::move(found);
        p.language_token_position = "first";
        p.source_eos = true;  // the tokenizer's </s>, which the converted config leaves to the caller
        p.source_eos_idx = p.eos_idx;
        defaultLanguages(p, nlohmann::json::object());
        return;
    }
}

std::vector<std::string> generatedTokens(int64_t n) {
    std::vector<std::string> t = {"<blank>", "<unk>", "<s>", "</s>"};
    for (int64_t i = int64_t(t.size()); i < n; ++i) t.push_back("t" + std::to_string(i));
    t.resize(size_t(std::max<int64_t>(n, 0)));
    return t;
}

Ct2Model mapSpec(ModelBin bin) {
    checkSpecName(bin);
    if (bin.spec_revision == 1) renameV1(bin);
    Ct2Model m;
    m.bin = std::move(bin);
    Spec s{m.bin, {}, {}};
    refuseUnsupported(s);
    Builder b{s, m};
    m.config.model = mapArchitecture(s, b);
    mapTensors(s, b, m.config.model);
    refuseUnknownVariables(s);
    m.stored_dtypes = storedDtypes(m.bin);
    return m;
}

void validate(Ct2Model& m, const std::string& origin) {
    if (m.config.source_lang.empty()) m.config.source_lang = unknown_language::kSource;
    if (m.config.target_lang.empty()) m.config.target_lang = unknown_language::kTarget;
    try {
        m.config.validate();
    } catch (const ConfigError& e) {
        throw PackageError(origin + ": " + e.what());
    }
}

// A JSON list of token strings read as a stream (nlohmann's SAX interface), so that what is not a
// list of at most kMaxVocabularyTokens strings is refused before anything is stored: a DOM of a
// 64 MB list of 22 M empty strings took 2.67 GB. Without `out` it counts; with it, it also keeps.
class TokenListReader final : public nlohmann::json_sax<nlohmann::json> {
public:
    explicit TokenListReader(std::vector<std::string>* out) : m_out(out) {}
    size_t count = 0;
    std::string problem;  // why it stopped

    bool null() override { return notAString("null"); }
    bool boolean(bool) override { return notAString("a boolean"); }
    bool number_integer(number_integer_t) override { return notAString("a number"); }
    bool number_unsigned(number_unsigned_t) override { return notAString("a number"); }
    bool number_float(number_float_t, const string_t&) override { return notAString("a number"); }
    bool binary(binary_t&) override { return notAString("binary data"); }
    bool start_object(size_t) override { return notAString("an object"); }
    bool key(string_t&) override { return notAString("an object"); }
    bool end_object() override { return notAString("an object"); }
    bool start_array(size_t) override { return m_depth == 0 ? ++m_depth > 0 : notAString("a list"); }
    bool end_array() override { return --m_depth >= 0; }
    bool string(string_t& s) override {
        if (m_depth != 1) return notAString("a string");
        if (++count > kMaxVocabularyTokens)
            return stop("holds more than " + std::to_string(kMaxVocabularyTokens) + " tokens");
        if (m_out) m_out->push_back(std::move(s));
        return true;
    }
    bool parse_error(size_t, const std::string&, const nlohmann::detail::exception& e) override {
        return stop(std::string("malformed JSON: ") + e.what());
    }

private:
    bool stop(std::string why) {
        problem = std::move(why);
        return false;
    }
    bool notAString(const std::string& what) {
        if (m_depth != 1) return stop("expected a JSON list of tokens");
        return stop("token " + std::to_string(count) + " is " + what + ", not a string");
    }
    std::vector<std::string>* m_out;
    int m_depth = 0;
};

std::vector<std::string> readJsonTokens(const std::string& text, const std::string& path) {
    TokenListReader counter(nullptr);
    if (!nlohmann::json::sax_parse(text, &counter)) throw PackageError(path + ": " + counter.problem);
    std::vector<std::string> tokens;
    tokens.reserve(counter.count);
    TokenListReader reader(&tokens);
    if (!nlohmann::json::sax_parse(text, &reader)) throw PackageError(path + ": " + reader.problem);
    return tokens;
}

// One token a line, counted before any is stored. CTranslate2 drops a trailing \r only when every
// line has one.
std::vector<std::string> readLineTokens(const std::string& text, const std::string& path) {
    const size_t lines =
        size_t(std::count(text.begin(), text.end(), '\n')) + (text.empty() || text.back() == '\n' ? 0 : 1);
    if (lines > kMaxVocabularyTokens)
        throw PackageError(path + ": holds more than " + std::to_string(kMaxVocabularyTokens) + " tokens");
    std::vector<std::string> tokens;
    tokens.reserve(lines);
    bool crlf = true;
    for (size_t at = 0; at < text.size();) {
        const size_t end = std::min(text.find('\n', at), text.size());
        tokens.emplace_back(text, at, end - at);
        crlf = crlf && end > at && text[end - 1] == '\r';
        at = end + 1;
    }
    if (crlf)
        for (auto& t : tokens) t.pop_back();
    return tokens;
}

// One vocabulary file: a JSON list of tokens, or one token a line; its size bounded before it is
// read (kMaxVocabularyBytes) and its tokens counted before they are stored (kMaxVocabularyTokens).
std::vector<std::string> readVocabularyFile(const std::string& path) {
    const std::string text = util::readSmallFile(path, kMaxVocabularyBytes);
    std::vector<std::string> tokens =
        util::endsWith(path, ".json") ? readJsonTokens(text, path) : readLineTokens(text, path);
    if (tokens.empty()) throw PackageError(path + ": holds no token");
    return tokens;
}

std::string vocabularyFile(const std::string& dir, const std::string& name) {
    for (const char* ext : {".json", ".txt"}) {
        const std::string p = (fs::path(dir) / (name + ext)).string();
        if (util::optionalFilePresent(p)) return p;
    }
    return {};
}

}  // namespace

void appendUnknownToken(Ct2Vocabularies& v, const std::string& unk) {
    auto append = [&](std::vector<std::string>& tokens, std::vector<std::string>& added) {
        if (std::find(tokens.begin(), tokens.end(), unk) != tokens.end()) return;
        tokens.push_back(unk);
        added.push_back(unk);
    };
    append(v.source, v.source_added);
    if (v.shared) {  // one Vocabulary object in SequenceToSequenceModel::load_vocabularies
        v.target = v.source;
        v.target_added = v.source_added;
    } else {
        append(v.target, v.target_added);
    }
}

std::map<std::string, std::string> ct2VocabularyFiles(const Ct2Vocabularies& v) {
    auto text = [](const std::vector<std::string>& tokens) { return nlohmann::json(tokens).dump(2) + "\n"; };
    const std::string ext = ".json";
    if (v.shared) return {{ct2_files::kSharedVocabulary + ext, text(v.source)}};
    return {{ct2_files::kSourceVocabulary + ext, text(v.source)}, {ct2_files::kTargetVocabulary + ext, text(v.target)}};
}

Ct2Vocabularies readCt2Vocabularies(const std::string& dir) {
    Ct2Vocabularies v;
    if (const std::string shared = vocabularyFile(dir, ct2_files::kSharedVocabulary); !shared.empty()) {
        v.source = v.target = readVocabularyFile(shared);
        v.files = {shared};
        v.shared = true;
        return v;
    }
    const std::string src = vocabularyFile(dir, ct2_files::kSourceVocabulary),
                      trg = vocabularyFile(dir, ct2_files::kTargetVocabulary);
    if (src.empty() || trg.empty()) {
        if (!vocabularyFile(dir, ct2_files::kFirstFeatureVocabulary).empty())
            throw PackageError(dir +
                               ": has several source vocabularies (source features), which AttnLab does not read");
        throw PackageError(dir +
                           ": has no shared_vocabulary.json (or .txt), nor source_vocabulary and "
                           "target_vocabulary: a CTranslate2 model's tokens");
    }
    v.source = readVocabularyFile(src);
    v.target = readVocabularyFile(trg);
    v.files = {src, trg};
    return v;
}

Ct2Model ctranslate2ModelFromBin(ct2::ModelBin bin) {
    const std::string origin = bin.path;
    Ct2Model m = mapSpec(std::move(bin));
    for (int64_t n : {m.config.model.n_src_vocab, m.config.model.n_trg_vocab})
        if (n > int64_t(kMaxVocabularyTokens))
            throw PackageError(origin + ": embeddings of " + std::to_string(n) + " rows; a vocabulary has at most " +
                               std::to_string(kMaxVocabularyTokens) + " tokens");
    m.vocabularies.source = generatedTokens(m.config.model.n_src_vocab);
    m.vocabularies.target = generatedTokens(m.config.model.n_trg_vocab);
    m.vocabularies.files = {origin};
    applyVocabularies(m, readCt2Config("", m.bin));
    validate(m, origin);
    return m;
}

Ct2Model readCtranslate2Model(const std::string& path) {
    Ct2Location where = locateCtranslate2(path);
    const std::string bin_path = (fs::path(where.model_dir) / ct2_files::kModel).string();
    Ct2Model m = mapSpec(ct2::readModelBin(bin_path));
    m.model_dir = where.model_dir;
    m.keep_alive = where.keep_alive;
    m.spm_path = where.spm_path;
    m.config.source_lang = where.source_lang;
    m.config.target_lang = where.target_lang;
    m.vocabularies = readCt2Vocabularies(where.model_dir);
    applyVocabularies(m, readCt2Config(where.model_dir, m.bin));
    mapLanguages(m);
    m.argos = where.argos;
    if (where.argos) m.config.num_beams = 4;  // argos-translate's beam_size (its length penalty 0.2 is not AttnLab's)
    validate(m, bin_path);
    return m;
}

std::unique_ptr<TextCodec> ctranslate2Codec(const PackageConfig& config, const Ct2Vocabularies& vocabularies,
                                            const std::string& spm_path, bool argos) {
    const auto& c = config;
    if (int64_t(vocabularies.source.size()) != c.model.n_src_vocab ||
        int64_t(vocabularies.target.size()) != c.model.n_trg_vocab)
        throw PackageError(
            vocabularies.files.front() + ": the vocabularies have " + std::to_string(vocabularies.source.size()) +
            " and " + std::to_string(vocabularies.target.size()) + " tokens but the model's embeddings " +
            std::to_string(c.model.n_src_vocab) + " and " + std::to_string(c.model.n_trg_vocab) + " rows");
    const std::string& unk = vocabularies.target.at(size_t(c.unk_idx));
    const TokenIds src{vocabularies.source, vocabularies.files.front()};
    TokenVocabularies v;
    v.spm_path = spm_path;
    v.join_pieces = argos;
    v.source = vocabularies.source;
    v.target = vocabularies.target;
    v.source_unk = static_cast<int>(src.require(unk, "unknown"));
    v.target_unk = static_cast<int>(c.unk_idx);
    v.special = {int(c.eos_idx), int(c.bos_idx), int(c.model.trg_pad_idx)};
    // The vocabulary's own padding token, which CTranslate2 may generate (addPadding), is left out of the text
    // as the other special tokens are.
    const TokenIds trg{vocabularies.target, vocabularies.files.back()};
    for (const char* p : {"<blank>", "<pad>"})
        if (const int64_t id = trg.find(p); id >= 0 && id != c.model.trg_pad_idx) v.special.push_back(int(id));
    for (const auto& l : c.languages) v.special.push_back(int(l.id));  // left out of decoded text
    return tokenVocabularyCodec(std::move(v));
}

std::string ctranslate2ModelCard(const std::string& dir, const Ct2Model& m) {
    const ModelConfig& c = m.config.model;
    std::ostringstream o;
    const fs::path from = fs::path(dir).lexically_normal();
    o << "Imported from the CTranslate2 model `"
      << (from.has_filename() ? from : from.parent_path()).filename().string() << "` (model.bin binary "
      << "version " << m.bin.binary_version << ", " << (m.bin.spec.empty() ? "unnamed spec" : m.bin.spec)
      << " revision " << m.bin.spec_revision << ", weights " << m.stored_dtypes << ", read as float32).\n\n"
      << "- " << c.n_layers << " encoder and " << c.decoderLayers() << " decoder layers, d_model " << c.d_model << ", "
      << c.n_head << " heads, " << c.ffn_activation << ", layer norm " << c.norm_position << " each sub-layer"
      << (c.final_layer_norm ? " and after each stack" : "") << "\n"
      << "- positions: "
      << (c.relativePositions() ? "relative (Shaw et al.), offsets clipped to ±" +
                                      std::to_string(c.max_relative_positions) + ", no absolute positions"
          : c.pos_encoding == "learned" ? "the stored tables"
                                        : "CTranslate2's sinusoids (from position 1)")
      << "; tokens: " << (m.spm_path.empty() ? "whitespace-separated" : "SentencePiece pieces (sentencepiece.model)")
      << ", " << (m.vocabularies.shared ? "one shared vocabulary" : "separate source and target vocabularies") << "\n";
    for (const auto& [side, added] :
         {std::pair{"source", &m.vocabularies.source_added}, std::pair{"target", &m.vocabularies.target_added}}) {
        if (added->empty() || (m.vocabularies.shared && std::string(side) == "target")) continue;
        o << "- appended to the " << (m.vocabularies.shared ? "shared" : side) << " vocabulary:";
        for (const auto& t : *added) o << " " << t;
        o << " (<unk> as CTranslate2 appends it, <pad> for AttnLab's masks)\n";
    }
    if (c.start_from_zero_embedding)
        o << "- the decoder starts from a zero vector plus its position (start_from_zero_embedding: a converted "
             "Marian model)\n";
    if (m.config.multilingual())
        o << "- " << m.config.languages.size()
          << " languages from the vocabulary's language tokens; the target language's token is forced first\n";
    return o.str();
}

std::optional<std::string> modelBinProblem(const std::string& dir) {
    std::error_code ec;
    const fs::path d(dir), bin = d / ct2_files::kModel;
    if (!fs::is_directory(d, ec) ||
        fs::symlink_status(d / package_files::kConfig, ec).type() != fs::file_type::not_found ||
        fs::symlink_status(bin, ec).type() == fs::file_type::not_found)
        return std::nullopt;
    return util::fileProblem(bin.string());
}

}  // namespace attnlab::package
