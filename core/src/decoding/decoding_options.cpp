#include <attnlab/decoding_options.h>

#include "util/checks.h"

#include <string>

namespace attnlab {
using util::requireRange;

void DecodingOptions::validate() const {
    const char* o = "decoding options";
    requireRange("beam_size", beam_size, 1, 256, o);
    requireRange("length_penalty (alpha)", length_penalty, 0.0, 10.0, o);
    requireRange("max_length", max_length, 1, 1 << 16, o);
    requireRange("max_length_ratio", max_length_ratio, 0.0, 1000.0, o);
    requireRange("max_length_offset", max_length_offset, 0, 1 << 16, o);
    requireRange("min_length", min_length, -1, 1 << 16, o);
    requireRange("nbest", nbest, 1, beam_size, o);
    requireRange("top_k_candidates", top_k_candidates, 0, 1000, o);
    requireRange("max_batch_size", max_batch_size, 1, 4096, o);
    if (reference_beam && nbest != 1)
        throw ConfigError("decoding options: reference_beam returns one hypothesis; nbest = " + std::to_string(nbest));
    if (reference_beam && (!force_prefix.empty() || !force_prefix_ids.empty()))
        throw ConfigError(
            "decoding options: force_prefix cannot be used with reference_beam (the reference's search "
            "has no forced prefix)");
    if (reference_beam && record_trace)
        throw ConfigError("decoding options: record_trace cannot be used with reference_beam");
    for (const auto* lang : {&source_language, &target_language})
        if (lang->size() > 64)
            throw ConfigError("decoding options: a language code of " + std::to_string(lang->size()) +
                              " bytes; at most 64 are accepted");
    if (force_prefix.size() > 4096)
        throw ConfigError("decoding options: force_prefix is " + std::to_string(force_prefix.size()) +
                          " bytes long; at most 4096 are accepted");
}

}  // namespace attnlab
