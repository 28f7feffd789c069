#pragma once
// How two results' runs' options ("run"."options": [name, value] pairs, io/partial_result.cpp's runJson) are said to
// differ: one wording for the merge (partial_result.cpp, checkSameRun) and for heads --importance's second stage
// reading the first's result (head_lab_json.cpp, readImportanceSingles). Internal.
#include <nlohmann/json_fwd.hpp>

#include <string>

namespace attnlab {

// The first option that differs, as "--beam 5 against --beam 4" ("(none)" for an option one side lacks); all of
// `a`'s when none differs.
std::string optionDifference(const nlohmann::json& a, const nlohmann::json& b);

}  // namespace attnlab
