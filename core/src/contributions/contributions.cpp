// Token contributions beyond attention weights (attnlab/contributions.h, issue 54): the methods' names, and
// Translator::contributions -> Engine::contributions -> the method, from one teacher-forced pass.
#include "contributions/contributions.h"

#include "contributions/alti.h"
#include "contributions/value_zeroing.h"
#include "decoding/engine.h"
#include "model/low_precision.h"
#include "util/device.h"
#include "util/torch_errors.h"

#include <attnlab/errors.h>
#include <attnlab/translator.h>

#include <torch/torch.h>

namespace attnlab {

std::string contributionMethodName(ContributionMethod method) {
    switch (method) {
    case ContributionMethod::AltiPlus: return kAltiPlusName;
    case ContributionMethod::ValueZeroing: return kValueZeroingName;
    }
    throw InternalError("contributionMethodName: unknown method " + std::to_string(int(method)));
}

std::optional<ContributionMethod> parseContributionMethod(const std::string& name) {
    for (ContributionMethod method : kContributionMethods)
        if (contributionMethodName(method) == name) return method;
    return std::nullopt;
}

namespace contributions {
namespace {
// The one dispatch over the methods.
Contributions compute(const ForcedPass& pass, ContributionMethod method) {
    switch (method) {
    case ContributionMethod::AltiPlus: return altiPlus(pass);
    case ContributionMethod::ValueZeroing: return valueZeroing(pass);
    }
    // Every ContributionMethod is computed above: another value is a cast gone wrong, not a user's choice.
    throw InternalError("contributions: ContributionMethod " + std::to_string(int(method)) +
                        " is not one the dispatch knows (a programming error)");
}
}  // namespace
}  // namespace contributions

Contributions Translator::contributions(const TranslationResult& result, ContributionMethod method) const {
    return m_engine->contributions(result, method);
}

namespace decoding {

Contributions Engine::contributions(const TranslationResult& r, ContributionMethod method) const {
    if (r.source_ids.empty() || r.best.ids.empty())
        throw InputError(contributionMethodName(method) + " contributions: the translation is empty");
    return util::translatingTorchErrors("computing contributions", [&] {
        util::ThreadScope threads(threadsForRows(int64_t(r.best.ids.size())));
        torch::NoGradGuard no_grad;
        // Float32 products with the weights the model holds whatever its compute type (an int8 model's dequantized,
        // its inputs not rounded), as the translation's attention maps are computed (Engine::analyse).
        const model::ExactProducts exact;
        Source src, trg;
        src.ids = r.source_ids;
        trg.ids = r.best.ids;
        auto tensors = forcedTensors({&src}, {&trg});
        const auto ablation = ablateHeads(r.ablated);  // the model whose output the translation is
        Contributions out = attnlab::contributions::compute({m_model, tensors.src, tensors.trg_in}, method);
        out.method = method;
        return out;
    });
}

}  // namespace decoding
}  // namespace attnlab
