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

#include <attnlab/translation.h>

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

// Piece map [target piece][source piece] -> word map [target word][source word] (the merge above).
Matrix mergeToWords(const Matrix& piece_map, const PieceWords& target, const PieceWords& source);
// Element-wise mean of maps of one shape (a layer's heads, or every layer's).
Matrix meanOfMaps(const std::vector<const Matrix*>& maps);
AlignmentLinks extractLinks(const Matrix& word_map, double threshold = 0.0);

// Where links come from: one cross-attention head, one layer's mean over its heads, or the mean
// over every layer's heads. Named "head:L:H", "layer:L", "all" (0-based).
struct AlignmentMethod {
    enum class Kind { Head, Layer, All };
    Kind kind = Kind::All;
    int layer = 0;
    int head = 0;
    bool operator==(const AlignmentMethod& o) const { return kind == o.kind && layer == o.layer && head == o.head; }
};
std::string alignmentMethodName(const AlignmentMethod& method);
// Throws ConfigError naming the text when it is none of the three forms.
AlignmentMethod parseAlignmentMethod(const std::string& text);
// Why a model of this shape has no such method ("layer 7 is out of range (0..2)"), or nothing.
[[nodiscard]] std::optional<std::string> alignmentMethodProblem(const AlignmentMethod& method, int layers, int heads);
// Every head, then every layer, then "all", for a model of this shape.
std::vector<AlignmentMethod> allAlignmentMethods(int layers, int heads);

// One sentence pair's word-level alignment by one method.
struct WordAlignment {
    std::vector<std::string> source_words, target_words;
    Matrix map;  // [target word][source word]
    AlignmentLinks links;
};
// From a result's cross-attention (a teacher-forced one, for given translations): words are the
// whitespace tokens of source_text and best.text. Throws InputError when the pieces make another
// number of words than the text has (a word made only of characters the vocabulary lacks), or the
// method names a layer or head the result lacks.
WordAlignment alignWords(const TranslationResult& result, const AlignmentMethod& method, double threshold = 0.0);
// The word maps of every method of allAlignmentMethods(), in that order (the corpus runner's).
std::vector<Matrix> wordMapsOfAllMethods(const TranslationResult& result, PieceWords* source = nullptr,
                                         PieceWords* target = nullptr);

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
