#pragma once
// Small random models in the layer structures of each family AttnLab reads, written as AttnLab packages, for tests
// that check a computation over a model's layers against a float64 reference reading the package
// (scripts/reference_value_zeroing.py): post-norm Marian (OPUS-MT), pre-norm M2M100 / NLLB with final layer norms,
// mBART's embedding layer norm and learned positions, a CTranslate2 model with relative positions (Shaw et al.)
// and a zero first decoder input. Width 32, 2 + 2 layers, 4 heads (smallConfig). Every layer norm's weight and
// bias, every bias and a learned position table are random too (a fresh model holds ones and zeros there).
#include "fixtures.h"

#include "model/transformer.h"
#include "package/package_io.h"

#include <torch/torch.h>

#include <string>
#include <vector>

namespace attnlab::testing {

inline const std::vector<std::string>& layerFamilies() {
    static const std::vector<std::string> names{"marian", "m2m100", "mbart", "ct2-relative"};
    return names;
}

// smallConfig(vocab) with the fields that make `family`'s layer structure (docs/marian.md, docs/multilingual.md,
// docs/ctranslate2.md).
inline ModelConfig layerFamilyConfig(const std::string& family, int64_t vocab) {
    ModelConfig c = smallConfig(vocab);
    c.attn_bias = true;
    c.layer_norm_eps = 1e-5;
    c.emb_layer_norm = false;
    if (family == "marian") {
        c.ffn_activation = "swish";
        c.pos_encoding = "half";
        c.logits_bias = true;
    } else if (family == "m2m100") {
        c.norm_position = "pre";
        c.final_layer_norm = true;
        c.pos_encoding = "fairseq";
        c.pos_offset = 2;
    } else if (family == "mbart") {
        c.norm_position = "pre";
        c.final_layer_norm = true;
        c.emb_layer_norm = true;
        c.ffn_activation = "gelu";
        c.pos_encoding = "learned";
        c.pos_offset = 2;
        c.logits_bias = true;
    } else {  // ct2-relative: OpenNMT-py's pre-norm Transformer with relative positions, converted
        c.norm_position = "pre";
        c.final_layer_norm = true;
        c.pos_encoding = "none";
        c.max_relative_positions = 3;
        c.start_from_zero_embedding = true;
        c.scale_emb_or_prj = "prj";
    }
    return c;
}

// Writes `family`'s random package to `dir` (the tokenizer: a trainTokenizer model); returns dir.
inline std::string writeLayerFamilyPackage(const std::string& dir, const std::string& tokenizer_model,
                                           const std::string& family, uint64_t seed) {
    const ModelConfig cfg = layerFamilyConfig(family, 400);
    torch::manual_seed(seed);
    model::Transformer m(cfg);  // Xavier-uniform weights
    m->eval();
    {
        torch::NoGradGuard no_grad;
        for (auto& p : m->named_parameters()) {
            const std::string& name = p.key();
            const bool norm = name.find("layer_norm") != std::string::npos;
            if (norm && name.size() > 7 && name.compare(name.size() - 7, 7, ".weight") == 0)
                p.value().normal_(1.0, 0.3);
            else if (norm || name.find("bias") != std::string::npos)
                p.value().normal_(0.0, 0.3);
        }
        if (cfg.pos_encoding == "learned")
            for (auto& b : m->named_buffers())
                if (b.key().find("pos_table") != std::string::npos) b.value().normal_(0.0, 0.5);
    }
    package::savePackage(dir, packageConfig(cfg), m, tokenizer_model, package::SaveOptions{});
    return dir;
}

}  // namespace attnlab::testing
