// Word alignment from cross-attention and AER: attnlab/alignment.h defines every rule.
#include <attnlab/alignment.h>
#include <attnlab/contribution_layers.h>
#include <attnlab/errors.h>
#include <attnlab/text_io.h>

#include "util/text.h"

#include <algorithm>
#include <cctype>
#include <iterator>
#include <set>
#include <sstream>

namespace attnlab {

namespace {

const std::string kWordStart = "\xE2\x96\x81";  // "▁"

void sortUnique(AlignmentLinks& links) {
    std::sort(links.begin(), links.end());
    links.erase(std::unique(links.begin(), links.end()), links.end());
}

bool contains(const AlignmentLinks& sorted, const AlignmentLink& link) {
    return std::binary_search(sorted.begin(), sorted.end(), link);
}

// A non-negative decimal number, the whole text.
std::optional<int> parseIndex(const std::string& text) {
    if (text.empty() || text.size() > 6) return std::nullopt;
    for (char c : text)
        if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    return std::stoi(text);
}

}  // namespace

GoldAlignment parseGoldLine(const std::string& line, const GoldFormat& format, const std::string& where) {
    GoldAlignment gold;
    std::istringstream in(line);
    std::string link;
    const int first = format.one_indexed ? 1 : 0;
    while (in >> link) {
        const size_t sep = link.find_first_of("-p?");
        const auto a = sep == std::string::npos ? std::nullopt : parseIndex(link.substr(0, sep));
        const auto b = sep == std::string::npos ? std::nullopt : parseIndex(link.substr(sep + 1));
        if (!a || !b)
            throw InputError(where + ": link '" + util::forMessage(link) +
                             "' is not i-j (sure) or ipj / i?j (possible)");
        if (*a < first || *b < first)
            throw InputError(where + ": link '" + util::forMessage(link) +
                             "' has index 0, but the file is read as 1-indexed " +
                             "(--gold-one-indexed); drop that option for 0-indexed files");
        AlignmentLink l =
            format.reversed ? AlignmentLink{*b - first, *a - first} : AlignmentLink{*a - first, *b - first};
        if (link[sep] == '-') gold.sure.push_back(l);
        gold.possible.push_back(l);
    }
    sortUnique(gold.sure);
    sortUnique(gold.possible);
    return gold;
}

std::vector<GoldAlignment> readGoldAlignments(const std::string& path, const GoldFormat& format) {
    const auto lines = readTextLines(path);
    std::vector<GoldAlignment> gold;
    gold.reserve(lines.size());
    for (size_t i = 0; i < lines.size(); ++i)
        gold.push_back(parseGoldLine(lines[i], format, path + " line " + std::to_string(i + 1)));
    return gold;
}

void checkGoldIndices(const GoldAlignment& gold, int source_words, int target_words, const std::string& where) {
    for (const auto& [s, t] : gold.possible) {
        if (s >= source_words || t >= target_words)
            throw InputError(where + ": link " + std::to_string(s) + "-" + std::to_string(t) +
                             " (0-based source-target) is beyond the sentence pair's " + std::to_string(source_words) +
                             " source and " + std::to_string(target_words) +
                             " target words (--gold-one-indexed or --gold-reversed?)");
    }
}

std::string pharaohLine(const AlignmentLinks& links) {
    std::string out;
    for (const auto& [s, t] : links) {
        if (!out.empty()) out += ' ';
        out += std::to_string(s) + "-" + std::to_string(t);
    }
    return out;
}

PieceWords groupPiecesIntoWords(const std::vector<std::string>& pieces) {
    PieceWords w;
    bool open = false;
    for (const auto& p : pieces) {
        if (p == "</s>" || p == "<s>" || p == "<pad>") {
            w.word_of_piece.push_back(-1);
            open = false;
            continue;
        }
        if (!open || p.rfind(kWordStart, 0) == 0) {
            w.words += 1;
            open = true;
        }
        w.word_of_piece.push_back(w.words - 1);
    }
    return w;
}

PieceWords piecesOfWords(const std::vector<int>& word_of_piece, int words) {
    PieceWords w;
    w.words = words;
    for (int x : word_of_piece) {
        if (x < -1 || x >= words)
            throw InputError("a piece is said to cover word " + std::to_string(x) + " of a text of " +
                             std::to_string(words) + " words");
        w.word_of_piece.push_back(x);
    }
    return w;
}

Matrix shiftedRows(const Matrix& piece_map) {
    Matrix out(piece_map.size());
    for (size_t i = 0; i < piece_map.size(); ++i)
        out[i] = i + 1 < piece_map.size() ? piece_map[i + 1] : std::vector<float>(piece_map[i].size(), 0.f);
    return out;
}

std::vector<std::string> whitespaceWords(const std::string& text) {
    std::istringstream in(text);
    std::vector<std::string> words;
    std::string w;
    while (in >> w) words.push_back(w);
    return words;
}

Matrix mergeToWords(const Matrix& piece_map, const PieceWords& target, const PieceWords& source) {
    if (piece_map.size() != target.word_of_piece.size())
        throw InputError("the map has " + std::to_string(piece_map.size()) + " rows for " +
                         std::to_string(target.word_of_piece.size()) + " target pieces");
    Matrix words(target.words, std::vector<float>(source.words, 0.f));
    std::vector<int> pieces_per_word(target.words, 0);
    for (size_t i = 0; i < piece_map.size(); ++i) {
        const int tw = target.word_of_piece[i];
        if (tw < 0) continue;
        if (piece_map[i].size() != source.word_of_piece.size())
            throw InputError("the map's row " + std::to_string(i) + " has " + std::to_string(piece_map[i].size()) +
                             " weights for " + std::to_string(source.word_of_piece.size()) + " source pieces");
        pieces_per_word[tw] += 1;
        for (size_t j = 0; j < piece_map[i].size(); ++j) {
            const int sw = source.word_of_piece[j];
            if (sw >= 0) words[tw][sw] += piece_map[i][j];
        }
    }
    for (int t = 0; t < target.words; ++t)
        for (float& x : words[t]) x /= float(std::max(pieces_per_word[t], 1));
    return words;
}

Matrix meanOfMaps(const std::vector<const Matrix*>& maps) {
    if (maps.empty()) return {};
    Matrix mean = *maps.front();
    for (size_t k = 1; k < maps.size(); ++k) {
        const Matrix& m = *maps[k];
        if (m.size() != mean.size()) throw InputError("meanOfMaps: maps of different shapes");
        for (size_t i = 0; i < m.size(); ++i) {
            if (m[i].size() != mean[i].size()) throw InputError("meanOfMaps: maps of different shapes");
            for (size_t j = 0; j < m[i].size(); ++j) mean[i][j] += m[i][j];
        }
    }
    for (auto& row : mean)
        for (float& x : row) x /= float(maps.size());
    return mean;
}

AlignmentLinks extractLinks(const Matrix& word_map, double threshold) {
    AlignmentLinks links;
    for (size_t t = 0; t < word_map.size(); ++t) {
        const auto& row = word_map[t];
        if (row.empty()) continue;
        const auto best = std::max_element(row.begin(), row.end()) - row.begin();
        if (!(row[size_t(best)] > 0)) continue;  // a word with no pieces: no weight, no link
        links.push_back({static_cast<int>(best), static_cast<int>(t)});
        if (threshold > 0)
            for (size_t s = 0; s < row.size(); ++s)
                if (row[s] >= threshold) links.push_back({static_cast<int>(s), static_cast<int>(t)});
    }
    sortUnique(links);
    return links;
}

namespace {
const std::string kShift = "shift:", kSym = "sym:";
// A contribution method by decoder layer: the method's name, this, the layer ("alti+:layer:2").
const std::string kByLayer = ":layer:";
}  // namespace

std::string symmetrizationName(Symmetrization how) {
    switch (how) {
    case Symmetrization::None: break;
    case Symmetrization::Intersect: return "intersect";
    case Symmetrization::Union: return "union";
    case Symmetrization::GrowDiag: return "grow-diag";
    case Symmetrization::GrowDiagFinal: return "grow-diag-final";
    case Symmetrization::GrowDiagFinalAnd: return "grow-diag-final-and";
    }
    return "";
}

std::string alignmentMethodName(const AlignmentMethod& m) {
    const std::string prefix =
        (m.sym == Symmetrization::None ? "" : kSym + symmetrizationName(m.sym) + ":") + (m.shift ? kShift : "");
    switch (m.kind) {
    case AlignmentMethod::Kind::Head: return prefix + "head:" + std::to_string(m.layer) + ":" + std::to_string(m.head);
    case AlignmentMethod::Kind::Layer: return prefix + "layer:" + std::to_string(m.layer);
    case AlignmentMethod::Kind::AltiPlus: return prefix + kAltiPlusName;
    case AlignmentMethod::Kind::ValueZeroing: return prefix + kValueZeroingName;
    case AlignmentMethod::Kind::AltiPlusLayer: return prefix + kAltiPlusName + kByLayer + std::to_string(m.layer);
    case AlignmentMethod::Kind::ValueZeroingLayer:
        return prefix + kValueZeroingName + kByLayer + std::to_string(m.layer);
    case AlignmentMethod::Kind::All: break;
    }
    return prefix + "all";
}

namespace {
// The contribution methods' alignment kinds: through the whole model, and by decoder layer.
struct ContributionKinds {
    ContributionMethod method;
    AlignmentMethod::Kind whole, by_layer;
};
constexpr ContributionKinds kContributionKinds[] = {
    {ContributionMethod::AltiPlus, AlignmentMethod::Kind::AltiPlus, AlignmentMethod::Kind::AltiPlusLayer},
    {ContributionMethod::ValueZeroing, AlignmentMethod::Kind::ValueZeroing, AlignmentMethod::Kind::ValueZeroingLayer}};

// "alti+" or "alti+:layer:L" (and value zeroing's) into `m`; false when `rest` is neither.
bool parseContributionMethodName(const std::string& rest, AlignmentMethod& m) {
    for (const auto& k : kContributionKinds) {
        const std::string name = contributionMethodName(k.method), layered = name + kByLayer;
        if (rest == name) {
            m.kind = k.whole;
            return true;
        }
        if (rest.rfind(layered, 0) != 0) continue;
        const auto l = parseIndex(rest.substr(layered.size()));
        if (!l) return false;
        m.kind = k.by_layer;
        m.layer = *l;
        return true;
    }
    return false;
}
}  // namespace

std::optional<ContributionMethod> contributionMethodOf(const AlignmentMethod& m) {
    for (const auto& k : kContributionKinds)
        if (m.kind == k.whole || m.kind == k.by_layer) return k.method;
    return std::nullopt;
}

AlignmentMethod parseAlignmentMethod(const std::string& text) {
    const auto fail = [&] {
        return ConfigError("alignment method '" + text +
                           "' is not [sym:HEURISTIC:][shift:](head:L:H | layer:L | all | alti+[:layer:L] | "
                           "value-zeroing[:layer:L]) (0-based layer and head; "
                           "heuristics: intersect, union, grow-diag, grow-diag-final, grow-diag-final-and)");
    };
    AlignmentMethod m;
    std::string rest = text;
    if (rest.rfind(kSym, 0) == 0) {
        const size_t end = rest.find(':', kSym.size());
        const std::string heuristic = rest.substr(kSym.size(), end == std::string::npos ? end : end - kSym.size());
        for (auto how : kSymmetrizations)
            if (symmetrizationName(how) == heuristic) m.sym = how;
        if (m.sym == Symmetrization::None || end == std::string::npos) throw fail();
        rest = rest.substr(end + 1);
    }
    m.shift = rest.rfind(kShift, 0) == 0;
    if (m.shift) rest = rest.substr(kShift.size());
    if (rest == "all") return m;
    if (parseContributionMethodName(rest, m)) return m;
    std::vector<std::string> parts;
    std::string part;
    std::istringstream in(rest);
    while (std::getline(in, part, ':')) parts.push_back(part);
    if (parts.size() == 3 && parts[0] == "head") {
        const auto l = parseIndex(parts[1]), h = parseIndex(parts[2]);
        if (!l || !h) throw fail();
        m.kind = AlignmentMethod::Kind::Head;
        m.layer = *l;
        m.head = *h;
        return m;
    }
    if (parts.size() == 2 && parts[0] == "layer") {
        const auto l = parseIndex(parts[1]);
        if (!l) throw fail();
        m.kind = AlignmentMethod::Kind::Layer;
        m.layer = *l;
        return m;
    }
    throw fail();
}

std::optional<std::string> alignmentMethodProblem(const AlignmentMethod& m, int layers, int heads) {
    const bool layered = m.kind == AlignmentMethod::Kind::Head || m.kind == AlignmentMethod::Kind::Layer ||
                         m.kind == AlignmentMethod::Kind::AltiPlusLayer ||
                         m.kind == AlignmentMethod::Kind::ValueZeroingLayer;
    if (layered && (m.layer >= layers || m.layer < 0))
        return "layer " + std::to_string(m.layer) + " is out of range (0.." + std::to_string(layers - 1) + ")";
    if (m.kind == AlignmentMethod::Kind::Head && (m.head >= heads || m.head < 0))
        return "head " + std::to_string(m.head) + " is out of range (0.." + std::to_string(heads - 1) + ")";
    return std::nullopt;
}

std::vector<AlignmentMethod> allAlignmentMethods(int layers, int heads) {
    std::vector<AlignmentMethod> all;
    for (bool shift : {false, true}) {
        for (int l = 0; l < layers; ++l)
            for (int h = 0; h < heads; ++h) all.push_back({AlignmentMethod::Kind::Head, l, h, shift});
        for (int l = 0; l < layers; ++l) all.push_back({AlignmentMethod::Kind::Layer, l, 0, shift});
        all.push_back({AlignmentMethod::Kind::All, 0, 0, shift});
    }
    return all;
}

std::vector<AlignmentMethod> contributionAlignmentMethods(int layers) {
    std::vector<AlignmentMethod> all;
    for (bool shift : {false, true})
        for (const auto& k : kContributionKinds) {
            all.push_back({k.whole, 0, 0, shift});
            for (int l = 0; l < layers; ++l) all.push_back({k.by_layer, l, 0, shift});
        }
    return all;
}

namespace {

// The words of one side: from the words the pieces cover when the result has them, else by "▁".
PieceWords checkedWords(const std::vector<std::string>& pieces, const std::vector<int>& piece_words,
                        const std::string& text, const char* side) {
    const size_t words = whitespaceWords(text).size();
    if (!piece_words.empty()) {
        if (piece_words.size() != pieces.size())
            throw InputError(std::string("the ") + side + " has " + std::to_string(piece_words.size()) +
                             " piece words for " + std::to_string(pieces.size()) + " pieces");
        return piecesOfWords(piece_words, static_cast<int>(words));
    }
    PieceWords w = groupPiecesIntoWords(pieces);
    if (static_cast<size_t>(w.words) != words)
        throw InputError(std::string("the ") + side + " '" + text + "' has " + std::to_string(words) +
                         " words but its pieces make " + std::to_string(w.words) +
                         " (a word made only of characters the vocabulary lacks?)");
    return w;
}

}  // namespace

namespace {
// Every head's word map, then every layer's mean, then the mean of all (allAlignmentMethods' order),
// appended to `out`; rows shifted first when `shift`.
void appendWordMaps(std::vector<Matrix>& out, const LayerHeadMaps& cross, const PieceWords& target,
                    const PieceWords& source, bool shift) {
    std::vector<Matrix> heads;
    for (const auto& layer : cross)
        for (const auto& m : layer) heads.push_back(mergeToWords(shift ? shiftedRows(m) : m, target, source));
    std::vector<Matrix> layers;
    size_t k = 0;
    for (const auto& layer : cross) {
        std::vector<const Matrix*> of_layer;
        for (size_t h = 0; h < layer.size(); ++h) of_layer.push_back(&heads[k++]);
        layers.push_back(meanOfMaps(of_layer));
    }
    std::vector<const Matrix*> all;
    for (const auto& m : heads) all.push_back(&m);
    Matrix mean_all = meanOfMaps(all);
    for (auto& m : heads) out.push_back(std::move(m));
    for (auto& m : layers) out.push_back(std::move(m));
    out.push_back(std::move(mean_all));
}
}  // namespace

std::vector<Matrix> wordMapsOfAllMethods(const TranslationResult& r, PieceWords* source_out, PieceWords* target_out) {
    const PieceWords source = checkedWords(r.source_pieces, r.source_piece_words, r.source_text, "source");
    const PieceWords target = checkedWords(r.best.pieces, r.target_piece_words, r.best.text, "target");
    if (r.cross.empty()) throw InputError("the result has no cross-attention maps");
    std::vector<Matrix> out;
    appendWordMaps(out, r.cross, target, source, false);
    appendWordMaps(out, r.cross, target, source, true);
    if (source_out) *source_out = source;
    if (target_out) *target_out = target;
    return out;
}

namespace {
// A contribution method's piece maps [target piece][source piece]: through the whole model, then by decoder layer
// (contributionAlignmentMethods' order within one method and one shift).
std::vector<Matrix> contributionPieceMaps(const Contributions& c) {
    std::vector<Matrix> maps{c.source};
    const std::vector<Matrix> layers = c.method == ContributionMethod::AltiPlus ? altiPlusSourceByLayer(c) : c.cross;
    maps.insert(maps.end(), layers.begin(), layers.end());
    return maps;
}

std::string contributionsLabel(ContributionMethod method) {
    return method == ContributionMethod::AltiPlus ? "ALTI+" : "value zeroing";
}
}  // namespace

std::vector<Matrix> wordMapsOfContributions(const TranslationResult& r, const std::vector<Contributions>& by_method) {
    const PieceWords source = checkedWords(r.source_pieces, r.source_piece_words, r.source_text, "source");
    const PieceWords target = checkedWords(r.best.pieces, r.target_piece_words, r.best.text, "target");
    std::vector<std::vector<Matrix>> pieces;
    for (const auto& k : kContributionKinds) {
        const auto c = std::find_if(by_method.begin(), by_method.end(),
                                    [&](const Contributions& x) { return x.method == k.method; });
        if (c == by_method.end()) continue;  // a method not computed (alignCorpus without gold)
        pieces.push_back(contributionPieceMaps(*c));
        for (const Matrix& m : pieces.back())
            if (m.size() != r.best.pieces.size() || (!m.empty() && m.front().size() != r.source_pieces.size()))
                throw InputError("the contributions do not match the result's pieces");
    }
    std::vector<Matrix> out;
    for (bool shift : {false, true})
        for (const auto& maps : pieces)
            for (const Matrix& m : maps) out.push_back(mergeToWords(shift ? shiftedRows(m) : m, target, source));
    return out;
}

WordAlignment alignWords(const TranslationResult& r, const AlignmentMethod& method, double threshold,
                         const Contributions* contributions) {
    if (method.sym != Symmetrization::None)
        throw InputError("alignment method " + alignmentMethodName(method) +
                         ": a symmetrised method needs the reverse model's links (alignCorpus)");
    if (const auto needed = contributionMethodOf(method)) {
        if (!contributions || contributions->method != *needed)
            throw InputError("alignment method " + alignmentMethodName(method) + ": needs the translation's " +
                             contributionsLabel(*needed) + " contributions (Translator::contributions)");
        const auto maps = contributionPieceMaps(*contributions);
        const bool layered =
            method.kind != AlignmentMethod::Kind::AltiPlus && method.kind != AlignmentMethod::Kind::ValueZeroing;
        if (layered && (method.layer < 0 || size_t(method.layer) + 1 >= maps.size()))
            throw InputError("alignment method " + alignmentMethodName(method) + ": layer " +
                             std::to_string(method.layer) + " is out of range (0.." +
                             std::to_string(int(maps.size()) - 2) + ")");
        const Matrix& piece_map = maps[layered ? size_t(method.layer) + 1 : 0];
        WordAlignment w;
        w.source_words = whitespaceWords(r.source_text);
        w.target_words = whitespaceWords(r.best.text);
        w.map = mergeToWords(method.shift ? shiftedRows(piece_map) : piece_map,
                             checkedWords(r.best.pieces, r.target_piece_words, r.best.text, "target"),
                             checkedWords(r.source_pieces, r.source_piece_words, r.source_text, "source"));
        w.links = extractLinks(w.map, threshold);
        return w;
    }
    const int layers = static_cast<int>(r.cross.size());
    const int heads = layers ? static_cast<int>(r.cross.front().size()) : 0;
    if (auto why = alignmentMethodProblem(method, layers, heads))
        throw InputError("alignment method " + alignmentMethodName(method) + ": " + *why);
    const auto methods = allAlignmentMethods(layers, heads);
    const size_t at = static_cast<size_t>(std::find(methods.begin(), methods.end(), method) - methods.begin());
    auto maps = wordMapsOfAllMethods(r);
    WordAlignment w;
    w.source_words = whitespaceWords(r.source_text);
    w.target_words = whitespaceWords(r.best.text);
    w.map = std::move(maps.at(at));
    w.links = extractLinks(w.map, threshold);
    return w;
}

AlignmentLinks turnedAround(const AlignmentLinks& links) {
    AlignmentLinks out;
    for (const auto& [a, b] : links) out.push_back({b, a});
    sortUnique(out);
    return out;
}

namespace {
// Moses's grow-diag and final steps over `links` (the intersection to begin with).
class Grower {
public:
    Grower(const AlignmentLinks& start, int source_words, int target_words)
        : m_links(start.begin(), start.end()), m_source(size_t(source_words)), m_target(size_t(target_words)) {
        for (const auto& [s, t] : start) m_source[size_t(s)] = m_target[size_t(t)] = true;
    }
    // Moses scans English (e, here the target) words outermost and foreign (f, the source) words
    // inside, neighbours as (e, f) offsets; so does this.
    void growDiag(const AlignmentLinks& candidates) {
        static constexpr int kNeighbours[8][2] = {{-1, 0}, {0, -1}, {1, 0}, {0, 1}, {-1, -1}, {-1, 1}, {1, -1}, {1, 1}};
        for (bool added = true; added;) {
            added = false;
            for (int t = 0; t < int(m_target.size()); ++t)
                for (int s = 0; s < int(m_source.size()); ++s) {
                    if (!m_links.count({s, t})) continue;
                    for (const auto& d : kNeighbours) {
                        const AlignmentLink n{s + d[1], t + d[0]};
                        if (n.first < 0 || n.second < 0 || n.first >= int(m_source.size()) ||
                            n.second >= int(m_target.size()))
                            continue;
                        if ((!m_source[size_t(n.first)] || !m_target[size_t(n.second)]) && contains(candidates, n))
                            added |= add(n);
                    }
                }
        }
    }
    // FINAL (both = false) and FINAL-AND (both = true) over one direction's links.
    void finalStep(const AlignmentLinks& direction, bool both) {
        for (int t = 0; t < int(m_target.size()); ++t)
            for (int s = 0; s < int(m_source.size()); ++s) {
                const bool free_s = !m_source[size_t(s)], free_t = !m_target[size_t(t)];
                if ((both ? free_s && free_t : free_s || free_t) && contains(direction, {s, t})) add({s, t});
            }
    }
    AlignmentLinks links() const { return {m_links.begin(), m_links.end()}; }

private:
    bool add(const AlignmentLink& l) {
        if (!m_links.insert(l).second) return false;
        m_source[size_t(l.first)] = m_target[size_t(l.second)] = true;
        return true;
    }
    std::set<AlignmentLink> m_links;
    std::vector<bool> m_source, m_target;  // has a link
};

void checkLinks(const AlignmentLinks& links, int source_words, int target_words, const char* which) {
    for (const auto& [s, t] : links)
        if (s < 0 || t < 0 || s >= source_words || t >= target_words)
            throw InputError(std::string("symmetrising: the ") + which + " link " + std::to_string(s) + "-" +
                             std::to_string(t) + " is beyond the pair's " + std::to_string(source_words) +
                             " source and " + std::to_string(target_words) + " target words");
}
}  // namespace

AlignmentLinks symmetrizeLinks(const AlignmentLinks& forward, const AlignmentLinks& reverse, Symmetrization how,
                               int source_words, int target_words) {
    checkLinks(forward, source_words, target_words, "forward");
    checkLinks(reverse, source_words, target_words, "reverse");
    AlignmentLinks inter, uni;
    std::set_intersection(forward.begin(), forward.end(), reverse.begin(), reverse.end(), std::back_inserter(inter));
    std::set_union(forward.begin(), forward.end(), reverse.begin(), reverse.end(), std::back_inserter(uni));
    switch (how) {
    case Symmetrization::None: return forward;
    case Symmetrization::Intersect: return inter;
    case Symmetrization::Union: return uni;
    case Symmetrization::GrowDiag:
    case Symmetrization::GrowDiagFinal:
    case Symmetrization::GrowDiagFinalAnd: break;
    }
    Grower g(inter, source_words, target_words);
    g.growDiag(uni);
    if (how != Symmetrization::GrowDiag) {
        const bool both = how == Symmetrization::GrowDiagFinalAnd;
        g.finalStep(forward, both);
        g.finalStep(reverse, both);
    }
    return g.links();
}

void AlignmentCounts::add(const AlignmentLinks& predicted_links, const GoldAlignment& gold) {
    predicted += static_cast<int64_t>(predicted_links.size());
    sure += static_cast<int64_t>(gold.sure.size());
    for (const auto& l : predicted_links) {
        if (contains(gold.sure, l)) predicted_sure += 1;
        if (contains(gold.possible, l)) predicted_possible += 1;  // possible includes every sure link
    }
}

double AlignmentCounts::precision() const { return predicted ? double(predicted_possible) / double(predicted) : 0.0; }
double AlignmentCounts::recall() const { return sure ? double(predicted_sure) / double(sure) : 0.0; }
// Summed as doubles: exact below 2^53 (the readers bound each count at 2^40), and no int64 overflow whatever the
// counts.
double AlignmentCounts::aer() const {
    const double denom = double(predicted) + double(sure);
    return denom > 0 ? 1.0 - (double(predicted_sure) + double(predicted_possible)) / denom : 0.0;
}

}  // namespace attnlab
