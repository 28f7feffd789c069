#pragma once
// The head lab's documents merged from the parts of a sharded run (attnlab/partial_result.h): here, beside their
// keys (io/head_lab_json.cpp), so that the keys keep one owner. Internal: io/partial_result.cpp calls these.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace attnlab::headlab_merge {

struct PartDocument {
    std::string path;
    const nlohmann::json* doc = nullptr;
    int64_t first_line = 0;  // 0-based: the corpus line of the part's first sentence
    int64_t lines = 0;       // the part's lines (shardLines): its pairs, its skipped lines and sentences within them
};

// alignmentJson's document of the parts' pairs together: links counted again (|A|, |S|, |A&S|, |A&P| summed), AER,
// precision, recall and the best methods from the sums, the skipped pairs in line order; "dev" (the same in every
// part) with its chosen method's scores on the merged pairs. Throws InputError naming a part that differs.
nlohmann::json mergeAlignment(const std::vector<PartDocument>& parts);
// headsJson's document of the parts' sentences together: the statistics, and what parts carry beside them
// (attnlab/importance_parts.h): the gradient importance, the comparison, --importance's first stage (its singles
// ranked, "importance_singles"). A whole run's importance, gradient or comparison is refused.
nlohmann::json mergeHeads(const std::vector<PartDocument>& parts);
// heads --importance's second stage: `singles` (the first stage's merged result, isImportanceSingles) and the curve
// parts, one run's, merged into the whole run's document (its "importance" with the curve and its intervals).
bool isImportanceSingles(const nlohmann::json& doc);
nlohmann::json mergeImportanceCurve(const PartDocument& singles, const std::vector<PartDocument>& parts);

}  // namespace attnlab::headlab_merge
