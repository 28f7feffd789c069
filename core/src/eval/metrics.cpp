// ref: sacreBLEU 2.x (mjpost/sacrebleu): tokenizers/tokenizer_13a.py, metrics/bleu.py, metrics/chrf.py.
#include <attnlab/errors.h>
#include <attnlab/metrics.h>

#include "util/text.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <regex>
#include <sstream>

namespace attnlab {

namespace {
void replaceAll(std::string& s, const std::string& from, const std::string& to) {
    for (size_t at = 0; (at = s.find(from, at)) != std::string::npos; at += to.size()) s.replace(at, from.size(), to);
}

bool isTokenPunct(unsigned char c) {
    // [\{-\~\[-\` -\&\(-\+\:-\@\/]
    return (c >= 0x7B && c <= 0x7E) || (c >= 0x5B && c <= 0x60) || (c >= 0x20 && c <= 0x26) ||
           (c >= 0x28 && c <= 0x2B) || (c >= 0x3A && c <= 0x40) || c == '/';
}

std::vector<std::string> split(const std::string& s) {
    std::istringstream in(s);
    std::vector<std::string> out;
    for (std::string w; in >> w;) out.push_back(w);
    return out;
}

std::map<std::vector<std::string>, int> ngrams(const std::vector<std::string>& w, int n) {
    std::map<std::vector<std::string>, int> m;
    for (size_t i = 0; i + n <= w.size(); ++i) ++m[std::vector<std::string>(w.begin() + i, w.begin() + i + n)];
    return m;
}

std::u32string toCodepoints(const std::string& s) {
    std::u32string out;
    for (size_t i = 0; i < s.size();) {
        const unsigned char c = static_cast<unsigned char>(s[i]);
        int len = int(util::utf8SequenceLength(c));
        if (i + len > s.size()) len = 1;
        char32_t cp = len == 1 ? c : (c & (0x7F >> len));
        for (int k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
        out.push_back(cp);
        i += len;
    }
    return out;
}

bool isSpace32(char32_t c) {
    // Python's str.split() whitespace (the common ones).
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' || c == 0x85 || c == 0xA0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
           c == 0x3000 || (c >= 0x1C && c <= 0x1F);
}
}  // namespace

std::string tokenize13a(const std::string& input) {
    std::string line = input;
    replaceAll(line, "<skipped>", "");
    replaceAll(line, "-\n", "");
    replaceAll(line, "\n", " ");
    if (line.find('&') != std::string::npos) {
        replaceAll(line, "&quot;", "\"");
        replaceAll(line, "&amp;", "&");
        replaceAll(line, "&lt;", "<");
        replaceAll(line, "&gt;", ">");
    }
    std::string spaced = " ";
    for (unsigned char c : line) {
        if (isTokenPunct(c)) {
            spaced += ' ';
            spaced += static_cast<char>(c);
            spaced += ' ';
        } else {
            spaced += static_cast<char>(c);
        }
    }
    spaced += ' ';
    static const std::regex period_after_nondigit("([^0-9])([\\.,])");
    static const std::regex period_before_nondigit("([\\.,])([^0-9])");
    static const std::regex dash_after_digit("([0-9])(-)");
    spaced = std::regex_replace(spaced, period_after_nondigit, "$1 $2 ");
    spaced = std::regex_replace(spaced, period_before_nondigit, " $1 $2");
    spaced = std::regex_replace(spaced, dash_after_digit, "$1 $2 ");
    const auto words = split(spaced);
    std::string out;
    for (const auto& w : words) out += (out.empty() ? "" : " ") + w;
    return out;
}

BleuStats sentenceBleuStats(const std::string& hypothesis, const std::string& reference) {
    const auto h = split(tokenize13a(hypothesis)), r = split(tokenize13a(reference));
    BleuStats s;
    s.sys_len = static_cast<int64_t>(h.size());
    s.ref_len = static_cast<int64_t>(r.size());
    for (int n = 1; n <= 4; ++n) {
        const auto hn = ngrams(h, n), rn = ngrams(r, n);
        for (const auto& [g, c] : hn) {
            s.total[n - 1] += c;
            auto it = rn.find(g);
            if (it != rn.end()) s.correct[n - 1] += std::min(c, it->second);
        }
    }
    return s;
}

BleuStats& BleuStats::operator+=(const BleuStats& o) {
    for (int n = 0; n < 4; ++n) correct[n] += o.correct[n], total[n] += o.total[n];
    sys_len += o.sys_len;
    ref_len += o.ref_len;
    return *this;
}

BleuScore bleuFromStats(const BleuStats& s) {
    BleuScore b;
    b.sys_len = s.sys_len;
    b.ref_len = s.ref_len;
    double smooth = 1.0;
    for (int n = 0; n < 4; ++n) {
        if (s.total[n] == 0) break;
        if (s.correct[n] == 0) {
            smooth *= 2;
            b.precisions[n] = 100.0 / (smooth * double(s.total[n]));
        } else {
            b.precisions[n] = 100.0 * double(s.correct[n]) / double(s.total[n]);
        }
    }
    b.brevity_penalty =
        b.sys_len >= b.ref_len ? 1.0 : (b.sys_len > 0 ? std::exp(1.0 - double(b.ref_len) / double(b.sys_len)) : 0.0);
    double log_sum = 0;
    for (double p : b.precisions) log_sum += p > 0 ? std::log(p) : -9999999999.0;
    b.score = b.brevity_penalty * std::exp(log_sum / 4.0);
    b.signature = "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.0.0";
    return b;
}

std::vector<BleuStats> sentenceBleuStats(const std::vector<std::string>& hyps, const std::vector<std::string>& refs) {
    if (hyps.size() != refs.size())
        throw InputError("BLEU: " + std::to_string(hyps.size()) + " hypotheses but " + std::to_string(refs.size()) +
                         " references");
    std::vector<BleuStats> out;
    out.reserve(hyps.size());
    for (size_t i = 0; i < hyps.size(); ++i) out.push_back(sentenceBleuStats(hyps[i], refs[i]));
    return out;
}

BleuScore corpusBleu(const std::vector<std::string>& hyps, const std::vector<std::string>& refs) {
    BleuStats sum;
    for (const auto& s : sentenceBleuStats(hyps, refs)) sum += s;
    return bleuFromStats(sum);
}

std::vector<std::vector<size_t>> bootstrapResamples(size_t sentences, int resamples, uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<std::vector<size_t>> out(static_cast<size_t>(std::max(resamples, 0)));
    for (auto& r : out) {
        r.resize(sentences);
        for (auto& i : r) i = static_cast<size_t>(rng() % sentences);  // modulo bias < 1e-15 for any corpus
    }
    return out;
}

namespace {
double percentile(std::vector<double> v, double q) {
    // numpy's default (linear between the two nearest ranks)
    std::sort(v.begin(), v.end());
    const double at = q * double(v.size() - 1);
    const size_t lo = static_cast<size_t>(std::floor(at)), hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (at - double(lo));
}
}  // namespace

PairedBootstrap pairedBootstrap(const std::vector<BleuStats>& baseline, const std::vector<BleuStats>& system,
                                const std::vector<std::vector<size_t>>& resamples) {
    if (baseline.size() != system.size())
        throw InputError("paired bootstrap: " + std::to_string(baseline.size()) + " baseline sentences but " +
                         std::to_string(system.size()) + " system sentences");
    if (baseline.empty()) throw InputError("paired bootstrap: no sentences");
    if (resamples.empty()) throw InputError("paired bootstrap: no resamples");
    std::vector<double> scores, differences;
    for (const auto& r : resamples) {
        if (r.size() != system.size())
            throw InputError("paired bootstrap: a resample of " + std::to_string(r.size()) + " sentences for " +
                             std::to_string(system.size()));
        BleuStats a, b;
        for (size_t i : r) {
            if (i >= system.size()) throw InputError("paired bootstrap: sentence index out of range");
            a += baseline[i];
            b += system[i];
        }
        const double sb = bleuFromStats(b).score;
        scores.push_back(sb);
        differences.push_back(sb - bleuFromStats(a).score);
    }
    PairedBootstrap p;
    p.resamples = static_cast<int>(resamples.size());
    p.low = percentile(scores, 0.025);
    p.high = percentile(scores, 0.975);
    p.difference_low = percentile(differences, 0.025);
    p.difference_high = percentile(differences, 0.975);
    return p;
}

ChrfStats& ChrfStats::operator+=(const ChrfStats& o) {
    for (int n = 0; n < kOrder; ++n) {
        hypothesis[n] += o.hypothesis[n];
        reference[n] += o.reference[n];
        matches[n] += o.matches[n];
    }
    return *this;
}

// sacreBLEU's metrics/chrf.py: CHRF._extract_corpus_statistics (whitespace removed, character n-grams counted
// per sentence, clipped matches), summed over the corpus.
ChrfStats sentenceChrfStats(const std::string& hypothesis, const std::string& reference) {
    auto squeeze = [](const std::string& s) {
        std::u32string out;
        for (char32_t c : toCodepoints(s))
            if (!isSpace32(c)) out.push_back(c);
        return out;
    };
    const auto h = squeeze(hypothesis), r = squeeze(reference);
    ChrfStats s;
    for (int n = 1; n <= ChrfStats::kOrder; ++n) {
        std::map<std::u32string, int64_t> hc, rc;
        for (size_t k = 0; k + n <= h.size(); ++k) ++hc[h.substr(k, n)];
        for (size_t k = 0; k + n <= r.size(); ++k) ++rc[r.substr(k, n)];
        for (const auto& [g, c] : hc) {
            s.hypothesis[n - 1] += c;
            auto it = rc.find(g);
            if (it != rc.end()) s.matches[n - 1] += std::min(c, it->second);
        }
        for (const auto& [g, c] : rc) s.reference[n - 1] += c;
    }
    return s;
}

// sacreBLEU's CHRF._compute_f_score over the summed statistics (beta 2).
double chrfFromStats(const ChrfStats& s) {
    const double factor = 4.0;  // beta^2
    double avg_prec = 0, avg_rec = 0;
    int effective = 0;
    for (int n = 0; n < ChrfStats::kOrder; ++n) {
        if (s.hypothesis[n] > 0 && s.reference[n] > 0) {
            avg_prec += double(s.matches[n]) / double(s.hypothesis[n]);
            avg_rec += double(s.matches[n]) / double(s.reference[n]);
            ++effective;
        }
    }
    if (effective == 0) return 0.0;
    avg_prec /= effective;
    avg_rec /= effective;
    if (avg_prec + avg_rec <= 0) return 0.0;
    return 100.0 * (1 + factor) * avg_prec * avg_rec / (factor * avg_prec + avg_rec);
}

double corpusChrf(const std::vector<std::string>& hyps, const std::vector<std::string>& refs) {
    if (hyps.size() != refs.size())
        throw InputError("chrF: " + std::to_string(hyps.size()) + " hypotheses but " + std::to_string(refs.size()) +
                         " references");
    ChrfStats sum;
    for (size_t i = 0; i < hyps.size(); ++i) sum += sentenceChrfStats(hyps[i], refs[i]);
    return chrfFromStats(sum);
}

}  // namespace attnlab
