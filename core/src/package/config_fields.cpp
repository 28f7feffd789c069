#include <attnlab/config_fields.h>
#include <attnlab/errors.h>

#include <sstream>

namespace attnlab {

namespace {
constexpr double kBig = double(int64_t(1) << 24);
using C = ModelConfig;

std::string number(double v) {
    std::ostringstream s;
    s << v;
    return s.str();
}
}  // namespace

const std::vector<ModelConfigField>& modelConfigFields() {
    static const std::vector<ModelConfigField> fields = {
        {"n_src_vocab", &C::n_src_vocab, "source vocabulary size", 1, kBig},
        {"n_trg_vocab", &C::n_trg_vocab, "target vocabulary size", 1, kBig},
        {"src_pad_idx", &C::src_pad_idx, "padding id of the source side (< n_src_vocab)", 0, kBig},
        {"trg_pad_idx", &C::trg_pad_idx, "padding id of the target side (< n_trg_vocab)", 0, kBig},
        {"d_word_vec", &C::d_word_vec, "embedding width (must equal d_model)", 1, 65536},
        {"d_model", &C::d_model, "model width", 1, 65536},
        {"d_inner", &C::d_inner, "hidden width of the position-wise feed-forward layer", 1, 1 << 20},
        {"n_layers", &C::n_layers, "encoder layers (and decoder layers unless n_dec_layers is set)", 1, 256},
        {"n_head", &C::n_head, "attention heads", 1, 1024},
        {"d_k", &C::d_k, "query/key width per head", 1, 65536},
        {"d_v", &C::d_v, "value width per head", 1, 65536},
        {"dropout", &C::dropout, "dropout probability (training only)", 0.0, 1.0},
        {"n_position", &C::n_position, "rows of the sinusoid table: the longest sequence accepted", 2, 8192},
        {"trg_emb_prj_weight_sharing", &C::trg_emb_prj_weight_sharing,
         "the output projection shares the target embedding's weights"},
        {"emb_src_trg_weight_sharing", &C::emb_src_trg_weight_sharing,
         "the source embedding shares the target embedding's weights"},
        {"scale_emb_or_prj", &C::scale_emb_or_prj,
         "with shared projection weights: emb multiplies embeddings by sqrt(d_model), prj scales the logits "
         "by d_model^-0.5, none does neither",
         0, 0, "emb|prj|none"},
        {"n_dec_layers", &C::n_dec_layers, "decoder layers; 0 = as many as n_layers", 0, 256, "", 2},
        {"d_dec_inner", &C::d_dec_inner, "the decoder's feed-forward width; 0 = d_inner", 0, 1 << 20, "", 2},
        {"ffn_activation", &C::ffn_activation,
         "the feed-forward layer's activation: relu (the reference), swish = SiLU x*sigmoid(x) (Marian), gelu (erf "
         "form), gelu_tanh (the tanh approximation: CTranslate2's GELUTanh)",
         0, 0, "relu|swish|gelu|gelu_tanh", 2},
        {"attn_bias", &C::attn_bias, "biases on the attention projections q, k, v and out (Marian: true)", 0, 0, "", 2},
        {"layer_norm_eps", &C::layer_norm_eps, "every layer norm's epsilon (reference 1e-6, Hugging Face 1e-5)", 1e-12,
         0.1, "", 2},
        {"emb_layer_norm", &C::emb_layer_norm,
         "a layer norm after embedding + positional encoding (the reference: true; Marian: false)", 0, 0, "", 2},
        {"emb_scale", &C::emb_scale,
         "embedding scale: auto = as scale_emb_or_prj says, sqrt_d_model = always x sqrt(d_model) (Marian), none", 0, 0,
         "auto|sqrt_d_model|none", 2},
        {"pos_encoding", &C::pos_encoding,
         "positions: interleaved = sin on even, cos on odd dimensions (the paper); half = sines in the first half, "
         "cosines in the second, timescale ln(10000)/(d/2) (Marian); fairseq = the same halves, timescale "
         "ln(10000)/(d/2 - 1) (M2M100, NLLB); learned = a table stored with the weights (mBART); none = no absolute "
         "positions (format 5: models with relative positions only)",
         0, 0, "interleaved|half|fairseq|learned|none", 2},
        {"pos_offset", &C::pos_offset, "the position of the first token in the sinusoid table", 0, 8192, "", 2},
        {"logits_bias", &C::logits_bias, "a bias vector added to the logits (Marian's final_logits_bias)", 0, 0, "", 2},
        {"norm_position", &C::norm_position,
         "where each sub-layer's layer norm sits: post = norm(x + sublayer(x)) (the paper), pre = x + "
         "sublayer(norm(x)) (M2M100, NLLB, mBART)",
         0, 0, "post|pre", 3},
        {"final_layer_norm", &C::final_layer_norm,
         "a layer norm after the last encoder and the last decoder layer (the pre-norm models: true)", 0, 0, "", 3},
        {"max_relative_positions", &C::max_relative_positions,
         "relative position representations (Shaw et al.; OpenNMT-py's max_relative_positions) in every "
         "self-attention: key offsets clipped to +-k select a learned key and value vector per layer; 0 = none",
         0, 4096, "", 5},
        {"start_from_zero_embedding", &C::start_from_zero_embedding,
         "the decoder's first input is a zero vector plus its position, not the start token's embedding (Marian's "
         "models converted by CTranslate2: start_from_zero_embedding)",
         0, 0, "", 5},
    };
    return fields;
}

const ModelConfigField& findModelConfigField(const std::string& name) {
    for (const auto& f : modelConfigFields())
        if (name == f.name) return f;
    throw InternalError("the model config's field table has no field '" + name + "'");
}

const char* ModelConfigField::typeName() const {
    static const char* names[] = {"integer", "number", "boolean", "text"};
    return names[member.index()];
}

std::string ModelConfigField::valueText(const ModelConfig& c) const {
    return std::visit(
        [&](auto ptr) -> std::string {
            const auto& v = c.*ptr;
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, bool>)
                return v ? "true" : "false";
            else if constexpr (std::is_same_v<T, std::string>)
                return v;
            else if constexpr (std::is_same_v<T, double>)
                return number(v);
            else
                return std::to_string(v);
        },
        member);
}

std::string ModelConfigField::rangeText() const {
    switch (member.index()) {
    case 0:
    case 1: return "[" + number(min) + ", " + number(max) + "]";
    case 2: return "true | false";
    default: {
        std::string r = choices;
        for (size_t i = r.find('|'); i != std::string::npos; i = r.find('|', i + 3)) r.replace(i, 1, " | ");
        return r;
    }
    }
}

}  // namespace attnlab
