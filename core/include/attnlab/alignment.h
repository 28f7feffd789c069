#pragma once
// Word alignment from cross-attention, and its error against gold alignments (issue 12,
// docs/head-lab.md). Pure arithmetic over maps and pieces; the corpus runner is in head_lab.h.
//
// Words. A word is a whitespace-separated token of the given text. SentencePiece never lets a piece
// cross whitespace and starts every word's first piece with "▁", so pieces are grouped into words
// at each "▁"; </s> and <s> belong to no word.
// Merge. A word-level map has one row per target word and one column per source word: a cell sums
// the piece weights over the source word's pieces (attention paid to the word as a whole) and
// averages them over the target word's pieces (each piece is a query; the mean keeps long words
// from weighing more). Row i of a cross-attention map is the step that produced target piece i.
// Links. Each target word is linked to the source word with its largest weight (argmax), and, when
// a threshold > 0 is given, to every other source word whose weight reaches it.
// Scores (Och & Ney 2003). With A the predicted links, S the sure and P the possible gold links
// (S is a subset of P: a sure link is also possible), summed over the corpus:
//   precision = |A & P| / |A|,  recall = |A & S| / |S|,  AER = 1 - (|A & S| + |A & P|) / (|A| + |S|).

#include <attnlab/contributions.h>
#include <attnlab/translation.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace attnlab {

// (source word, target word), 0-based.
using AlignmentLink = std::pair<int, int>;
using AlignmentLinks = std::vector<AlignmentLink>;  // sorted, unique

struct GoldAlignment {
    AlignmentLinks sure;
    AlignmentLinks possible;  // includes every sure link
};

struct GoldFormat {
    bool one_indexed = false;  // indices in the file start at 1
    bool reversed = false;     // the file writes target-source ("j-i") instead of source-target
};

// One Pharaoh/talp line: "i-j" sure, "ipj" or "i?j" possible, separated by spaces; an empty line
// has no links. `where` names the line in messages ("gold.txt line 3"). Throws InputError naming
// the malformed link, or an index below the format's first.
GoldAlignment parseGoldLine(const std::string& line, const GoldFormat& format, const std::string& where);
std::vector<GoldAlignment> readGoldAlignments(const std::string& path, const GoldFormat& format);
// Throws InputError naming `where` and the link when an index is beyond the sentence's words.
void checkGoldIndices(const GoldAlignment& gold, int source_words, int target_words, const std::string& where);

// "0-0 1-2 3-1" (0-based, source-target, sorted).
std::string pharaohLine(const AlignmentLinks& links);

// Word index of each piece (-1 for </s>, <s>, <pad>) and the number of words.
struct PieceWords {
    std::vector<int> word_of_piece;
    int words = 0;
};
PieceWords groupPiecesIntoWords(const std::vector<std::string>& pieces);
// The whitespace-separated tokens of a text.
std::vector<std::string> whitespaceWords(const std::string& text);

// Pieces to words from the words each piece covers (TranslationResult::source_piece_words);
// `words` is the text's number of whitespace words (a word may have no piece: made only of
// characters the vocabulary lacks). Throws InputError naming an index outside 0..words-1.
PieceWords piecesOfWords(const std::vector<int>& word_of_piece, int words);
// A cross-attention map shifted (AlignmentMethod::shift): row i becomes row i + 1, the last row zeros.
Matrix shiftedRows(const Matrix& piece_map);
// Piece map [target piece][source piece] -> word map [target word][source word] (the merge above).
Matrix mergeToWords(const Matrix& piece_map, const PieceWords& target, const PieceWords& source);
// Element-wise mean of maps of one shape (a layer's heads, or every layer's).
Matrix meanOfMaps(const std::vector<const Matrix*>& maps);
AlignmentLinks extractLinks(const Matrix& word_map, double threshold = 0.0);

// Where links come from: one cross-attention head, one layer's mean over its heads, or the mean
// over every layer's heads. Named "head:L:H", "layer:L", "all" (0-based).
// Shifted ("shift:" before the name; Chen et al. 2020, "Accurate Word Alignment Induction from
// Neural Machine Translation"): target piece i takes its row from the step whose decoder *input* is
// piece i (row i + 1), not from the step that produces it (row i); the target's last piece, </s>,
// belongs to no word.
// Contributions (issue 54, docs/contributions.md): the map is not one of the result's attention maps but a
// contribution method's source part (from Translator::contributions), merged as they are:
//   "alti+": ALTI+ through the whole model (Contributions::source); "alti+:layer:L": ALTI+'s rollout through
//   decoder layers 0..L (altiPlusSourceByLayer, as the authors score ALTI+ by layer);
//   "value-zeroing": value zeroing's rollout through the whole model (Contributions::source);
//   "value-zeroing:layer:L": decoder layer L's cross-attention value zeroing map (Contributions::cross[L], rows
//   normalised over the source), as inseq and the authors give value zeroing per layer.
// Symmetrised ("sym:HEURISTIC:" before the rest): the links of the same method in this model and
// in a model of the reverse direction (its links turned around), combined by one of Moses's
// heuristics (symmetrizeLinks).
enum class Symmetrization { None, Intersect, Union, GrowDiag, GrowDiagFinal, GrowDiagFinalAnd };
inline constexpr Symmetrization kSymmetrizations[] = {Symmetrization::Intersect, Symmetrization::Union,
                                                      Symmetrization::GrowDiag, Symmetrization::GrowDiagFinal,
                                                      Symmetrization::GrowDiagFinalAnd};
// "intersect", "union", "grow-diag", "grow-diag-final", "grow-diag-final-and" ("" for None).
std::string symmetrizationName(Symmetrization how);

struct AlignmentMethod {
    enum class Kind { Head, Layer, All, AltiPlus, ValueZeroing, AltiPlusLayer, ValueZeroingLayer };
    Kind kind = Kind::All;
    int layer = 0;
    int head = 0;
    bool shift = false;
    Symmetrization sym = Symmetrization::None;
    bool operator==(const AlignmentMethod& o) const {
        return kind == o.kind && layer == o.layer && head == o.head && shift == o.shift && sym == o.sym;
    }
};
// [sym:HEURISTIC:][shift:](head:L:H | layer:L | all | alti+[:layer:L] | value-zeroing[:layer:L]), e.g.
// "sym:grow-diag-final:shift:layer:2", "shift:alti+:layer:1".
std::string alignmentMethodName(const AlignmentMethod& method);
// Throws ConfigError naming the text when it is not of that form.
AlignmentMethod parseAlignmentMethod(const std::string& text);
// Why a model of this shape has no such method ("layer 7 is out of range (0..2)"), or nothing.
[[nodiscard]] std::optional<std::string> alignmentMethodProblem(const AlignmentMethod& method, int layers, int heads);
// Every head, then every layer, then "all", for a model of this shape; then the same shifted (no
// symmetrised methods: the corpus runner adds those when it has a reverse model).
std::vector<AlignmentMethod> allAlignmentMethods(int layers, int heads);
// The methods that need the model beyond a result's maps, for a decoder of `layers` layers: for each of
// kContributionMethods (ALTI+, value zeroing) the whole model's, then each layer's; then the same shifted (the
// corpus runner adds them after allAlignmentMethods', before the symmetrised ones).
std::vector<AlignmentMethod> contributionAlignmentMethods(int layers);
// The contribution method an alignment method reads (nothing for the attention methods).
std::optional<ContributionMethod> contributionMethodOf(const AlignmentMethod& method);

// One sentence pair's word-level alignment by one method.
struct WordAlignment {
    std::vector<std::string> source_words, target_words;
    Matrix map;  // [target word][source word]
    AlignmentLinks links;
};
// From a result's cross-attention (a teacher-forced one, for given translations): words are the
// whitespace tokens of source_text and best.text, pieces assigned to them by source_piece_words and
// target_piece_words (or, where those are empty, by "▁"). Throws InputError when "▁" grouping makes
// another number of words than the text has, or the method names a layer or head the result lacks.
// A contribution method needs the result's contributions of that method (Translator::contributions(result,
// *contributionMethodOf(method))): InputError without them.
WordAlignment alignWords(const TranslationResult& result, const AlignmentMethod& method, double threshold = 0.0,
                         const Contributions* contributions = nullptr);
// The word maps of every method of allAlignmentMethods() (shifted ones included), in that order
// (the corpus runner's).
std::vector<Matrix> wordMapsOfAllMethods(const TranslationResult& result, PieceWords* source = nullptr,
                                         PieceWords* target = nullptr);
// The word maps of contributionAlignmentMethods(layers) whose method is one of `by_method`'s, in that order, from
// the result's contributions ([target piece][source piece] maps, rows as the result's cross-attention maps), at most
// one of each of kContributionMethods (ALTI+, value zeroing).
std::vector<Matrix> wordMapsOfContributions(const TranslationResult& result,
                                            const std::vector<Contributions>& by_method);

// Combines the links of two directions, both given source-target, for a pair of `source_words` and
// `target_words` words, as Moses's heuristics do (Koehn, Och & Marcu 2003; the Moses manual's
// pseudo-code, scanning target words outermost and source words inside, as it scans English, then
// foreign words): intersect, union; grow-diag
// starts from the intersection and, until nothing changes, adds every union link next to a link it
// has (8 neighbours, diagonals included) whose source or target word has no link yet;
// grow-diag-final then adds, from the forward links and then the reverse ones, every link whose
// source or target word still has none; grow-diag-final-and only links whose source and target word
// both have none. Throws InputError for a link beyond the words.
AlignmentLinks symmetrizeLinks(const AlignmentLinks& forward, const AlignmentLinks& reverse, Symmetrization how,
                               int source_words, int target_words);
// Target-source links made source-target (the reverse model's), sorted.
AlignmentLinks turnedAround(const AlignmentLinks& links);

struct AlignmentCounts {
    int64_t predicted = 0;           // |A|
    int64_t sure = 0;                // |S|
    int64_t predicted_sure = 0;      // |A & S|
    int64_t predicted_possible = 0;  // |A & P|
    void add(const AlignmentLinks& predicted, const GoldAlignment& gold);
    double precision() const;
    double recall() const;
    double aer() const;
};

}  // namespace attnlab
