// Weight x value norm and attention rollout: attnlab/attention_flow.h defines every rule.
#include <attnlab/attention_flow.h>
#include <attnlab/contributions.h>
#include <attnlab/errors.h>

#include <string>

namespace attnlab {

std::vector<std::string> mapMeasureNames() {
    std::vector<std::string> names;
    for (MapMeasure m : kAttentionMeasures) names.push_back(mapMeasureName(m));
    return names;
}

std::string mapMeasureName(MapMeasure measure) {
    switch (measure) {
    case MapMeasure::Weights: break;
    case MapMeasure::ValueNorm: return "value-norm";
    case MapMeasure::Rollout: return "rollout";
    case MapMeasure::AltiPlus: return kAltiPlusName;
    case MapMeasure::ValueZeroing: return kValueZeroingName;
    }
    return "weights";
}

std::optional<ContributionMethod> contributionMethodOf(MapMeasure measure) {
    if (measure == MapMeasure::AltiPlus) return ContributionMethod::AltiPlus;
    if (measure == MapMeasure::ValueZeroing) return ContributionMethod::ValueZeroing;
    return std::nullopt;
}

MapMeasure measureOf(ContributionMethod method) {
    return method == ContributionMethod::AltiPlus ? MapMeasure::AltiPlus : MapMeasure::ValueZeroing;
}

bool onePerLayer(MapMeasure measure) { return measure == MapMeasure::Rollout || contributionMethodOf(measure); }

std::optional<MapMeasure> parseMapMeasure(const std::string& name) {
    for (auto m : kMapMeasures)
        if (mapMeasureName(m) == name) return m;
    return std::nullopt;
}

const HeadKeyNorms& ValueNorms::of(AttentionKind kind) const {
    return kind == AttentionKind::EncoderSelf   ? encoder_self
           : kind == AttentionKind::DecoderSelf ? decoder_self
                                                : cross;
}

Matrix weightedByValueNorms(const Matrix& weights, const std::vector<float>& norms) {
    Matrix out = weights;
    for (auto& row : out) {
        if (row.size() != norms.size())
            throw InputError("value norms: " + std::to_string(norms.size()) + " keys for a map of " +
                             std::to_string(row.size()) + " columns");
        for (size_t j = 0; j < row.size(); ++j) row[j] *= norms[j];
    }
    return out;
}

LayerHeadMaps weightedByValueNorms(const LayerHeadMaps& weights, const HeadKeyNorms& norms) {
    if (norms.size() != weights.size())
        throw InputError("value norms: " + std::to_string(norms.size()) + " layers for " +
                         std::to_string(weights.size()) + " layers of maps");
    LayerHeadMaps out(weights.size());
    for (size_t l = 0; l < weights.size(); ++l) {
        if (norms[l].size() != weights[l].size())
            throw InputError("value norms: layer " + std::to_string(l) + " has " + std::to_string(norms[l].size()) +
                             " heads for " + std::to_string(weights[l].size()) + " maps");
        for (size_t h = 0; h < weights[l].size(); ++h)
            out[l].push_back(weightedByValueNorms(weights[l][h], norms[l][h]));
    }
    return out;
}

Matrix rowNormalized(const Matrix& m) {
    Matrix out = m;
    for (auto& row : out) {
        double sum = 0;
        for (float x : row) sum += x;
        if (sum > 0)
            for (float& x : row) x = float(x / sum);
    }
    return out;
}

namespace {
// The mean over one layer's heads, checked to be rows x cols.
Matrix headMean(const std::vector<Matrix>& heads, size_t rows, size_t cols, const char* what) {
    if (heads.empty()) throw InputError(std::string(what) + ": a layer without heads");
    Matrix mean(rows, std::vector<float>(cols, 0.f));
    for (const auto& h : heads) {
        if (h.size() != rows) throw InputError(std::string(what) + ": maps of different sizes");
        for (size_t i = 0; i < rows; ++i) {
            if (h[i].size() != cols) throw InputError(std::string(what) + ": maps of different sizes");
            for (size_t j = 0; j < cols; ++j) mean[i][j] += h[i][j] / float(heads.size());
        }
    }
    return mean;
}

// a [n x m] times b [m x k], accumulated in double.
Matrix product(const Matrix& a, const Matrix& b) {
    const size_t k = b.empty() ? 0 : b.front().size();
    Matrix out(a.size(), std::vector<float>(k, 0.f));
    for (size_t i = 0; i < a.size(); ++i)
        for (size_t c = 0; c < k; ++c) {
            double sum = 0;
            for (size_t j = 0; j < b.size(); ++j) sum += double(a[i][j]) * double(b[j][c]);
            out[i][c] = float(sum);
        }
    return out;
}
}  // namespace

std::vector<Matrix> attentionRollout(const LayerHeadMaps& self) {
    std::vector<Matrix> out;
    if (self.empty() || self.front().empty()) return out;
    const size_t n = self.front().front().size();
    for (const auto& layer : self) {
        Matrix a = headMean(layer, n, n, "rollout");
        for (size_t i = 0; i < n; ++i) {
            for (float& x : a[i]) x *= 0.5f;
            a[i][i] += 0.5f;
        }
        out.push_back(out.empty() ? a : product(a, out.back()));
    }
    return out;
}

std::vector<Matrix> crossRollout(const LayerHeadMaps& cross, const Matrix& encoder_rollout) {
    std::vector<Matrix> out;
    const size_t s = encoder_rollout.size();
    for (const auto& row : encoder_rollout)
        if (row.size() != s) throw InputError("cross rollout: the encoder's rollout is not square");
    for (const auto& layer : cross) {
        const size_t t = layer.empty() ? 0 : layer.front().size();
        out.push_back(product(headMean(layer, t, s, "cross rollout"), encoder_rollout));
    }
    return out;
}

LayerHeadMaps measuredMaps(const TranslationResult& r, AttentionKind kind, MapMeasure measure,
                           const ValueNorms* norms) {
    const LayerHeadMaps& weights = kind == AttentionKind::EncoderSelf   ? r.encoder_self
                                   : kind == AttentionKind::DecoderSelf ? r.decoder_self
                                                                        : r.cross;
    switch (measure) {
    case MapMeasure::Weights: return weights;
    case MapMeasure::ValueNorm: {
        if (!norms) throw InputError("the value-norm maps need the value norms");
        LayerHeadMaps out = weightedByValueNorms(weights, norms->of(kind));
        for (auto& layer : out)
            for (auto& m : layer) m = rowNormalized(m);
        return out;
    }
    case MapMeasure::Rollout: break;
    case MapMeasure::AltiPlus:
    case MapMeasure::ValueZeroing:
        throw InputError("the " + mapMeasureName(measure) +
                         " maps are computed from the model (Translator::contributions), not from the attention maps");
    }
    std::vector<Matrix> rollout;
    if (kind == AttentionKind::Cross) {
        const auto encoder = attentionRollout(r.encoder_self);
        if (!encoder.empty()) rollout = crossRollout(r.cross, encoder.back());
    } else {
        rollout = attentionRollout(weights);
    }
    LayerHeadMaps out;
    for (auto& m : rollout) out.push_back({std::move(m)});
    return out;
}

LayerHeadMaps contributionMaps(const Contributions& c, AttentionKind kind) {
    const std::vector<Matrix>& layers = kind == AttentionKind::EncoderSelf   ? c.encoder_self
                                        : kind == AttentionKind::DecoderSelf ? c.decoder_self
                                                                             : c.cross;
    LayerHeadMaps out;
    for (const auto& m : layers) out.push_back({m});
    return out;
}

}  // namespace attnlab
