#pragma once
// Corpus BLEU and chrF as sacreBLEU computes them by default (BLEU: 13a tokenization, cased,
// exponential smoothing, 4-grams, brevity penalty, one reference; chrF: character 6-grams,
// beta 2, whitespace removed).

#include <string>
#include <vector>

namespace attnlab {

struct BleuScore {
    double score = 0.0;  // 0..100
    double precisions[4] = {0, 0, 0, 0};
    double brevity_penalty = 0.0;
    int64_t sys_len = 0, ref_len = 0;
    std::string signature;  // sacreBLEU's, e.g. nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.0.0
};

// Throws InputError when the counts differ.
BleuScore corpusBleu(const std::vector<std::string>& hypotheses, const std::vector<std::string>& references);
double corpusChrf(const std::vector<std::string>& hypotheses, const std::vector<std::string>& references);
// sacreBLEU's 13a tokenizer (mteval-v13a).
std::string tokenize13a(const std::string& line);

}  // namespace attnlab
