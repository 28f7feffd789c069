// The head lab (issue 12): statistics of hand-built maps against hand computation, gold alignment
// files, AER / precision / recall on hand-made fixtures, piece -> word merging, teacher forcing
// against the search's own numbers, and the corpus runners (statistics, alignment, importance)
// against the same computation done step by step here.
#include "fixtures.h"

#include <attnlab/alignment.h>
#include <attnlab/errors.h>
#include <attnlab/head_lab.h>
#include <attnlab/head_lab_json.h>
#include <attnlab/head_stats.h>
#include <attnlab/metrics.h>
#include <attnlab/model_comparison.h>
#include <attnlab/translator.h>

#include <nlohmann/json.hpp>

#include <QtTest/QtTest>

#include <cmath>
#include <fstream>
#include <set>

using attnlab::AlignmentLinks;
using attnlab::AttentionKind;
using attnlab::DecodingOptions;
using attnlab::HeadRef;
using attnlab::HeadStatistic;
using attnlab::Matrix;
using attnlab::TranslationResult;

namespace {

template <typename F>
QString errorOf(F&& f) {
    try {
        f();
    } catch (const attnlab::Error& e) {
        return QString::fromStdString(e.what());
    }
    return "no error";
}

// Two hand-built sentences (docs/head-lab.md's definitions, computed here term by term).
TranslationResult firstSentence() {
    TranslationResult r;
    r.source_pieces = {
        "\xE2\x96\x81"
        "Ein",
        "\xE2\x96\x81"
        "Hund",
        ".", "</s>"};
    r.encoder_self = {{{{1, 0, 0, 0}, {0.5f, 0.5f, 0, 0}, {0, 0, 0.25f, 0.75f}, {0.25f, 0.25f, 0.25f, 0.25f}}}};
    r.decoder_input_pieces = {"<s>",
                              "\xE2\x96\x81"
                              "A",
                              "\xE2\x96\x81"
                              "dog"};
    r.decoder_self = {{{{1, 0, 0}, {0.5f, 0.5f, 0}, {0.2f, 0.3f, 0.5f}}}};
    return r;
}

TranslationResult secondSentence() {
    TranslationResult r;
    r.source_pieces = {
        "\xE2\x96\x81"
        "Ja",
        "!", "</s>"};
    r.encoder_self = {{{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}}};
    r.decoder_input_pieces = {"<s>"};
    r.decoder_self = {{{{1}}}};
    return r;
}

std::set<std::pair<int, int>> asSet(const AlignmentLinks& l) { return {l.begin(), l.end()}; }

}  // namespace

class TestHeadLab : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void statisticsOfHandBuiltMaps();
    void statisticNamesAndPunctuation();
    void statisticsRejectMismatchedMaps();
    void goldLinesAllFormats();
    void goldErrorsNameFileLineAndLink();
    void aerPrecisionRecallByHand();
    void mergingPiecesIntoWords();
    void alignmentMethods();
    void shiftedMapsAndWordsFromSurfaces();
    void symmetrisationHeuristicsByHand();
    void corpusAlignmentWithAReverseModel();
    void teacherForcingMatchesTheForcedSearch();
    void teacherForcingBatchedEqualsAlone();
    void teacherForcingResultsReproducesTheirMaps();
    void teacherForcingErrors();
    void corpusStatisticsEqualStepByStep();
    void corpusAlignmentAgainstGold();
    void importanceAndPruningCurve();
    void gradientImportanceAndRankCorrelation();
    void removableHeadsByHand();
    void statisticsOfOtherMeasures();
    void jsonAndCsv();
    void headsFileOutsideItsModelRefused();            // issue 55: Open results… sizes its grids from the file
    void comparedModelsMatchLanguagesAcrossSchemes();  // issue 52, item 5

private:
    QTemporaryDir m_dir;
    std::unique_ptr<attnlab::Translator> m_t;
    std::vector<std::string> m_src, m_ref;
};

void TestHeadLab::initTestCase() {
    const std::string tok = attnlab::testing::trainTokenizer(m_dir.path().toStdString(), 400);
    auto cfg = attnlab::testing::smallConfig(400);
    cfg.n_position = 40;
    attnlab::testing::writeRandomPackage(m_dir.path().toStdString() + "/pkg", tok, cfg);
    m_t = std::make_unique<attnlab::Translator>(m_dir.path().toStdString() + "/pkg",
                                                attnlab::TranslatorOptions{attnlab::testing::testDevice(), 0});
    m_src = {"Ein Hund läuft im Park.", "Zwei Kinder spielen Fußball.", "Eine Frau liest ein Buch.",
             "Der Mann trinkt 20 Tassen Kaffee."};
    m_ref = {"A dog runs in the park.", "Two children play football.", "A woman reads a book.",
             "The man drinks 20 cups of coffee."};
}

void TestHeadLab::statisticsOfHandBuiltMaps() {
    attnlab::HeadStatsAccumulator acc(2);
    acc.add(firstSentence());
    acc.add(secondSentence());
    const auto rep = acc.report();
    QCOMPARE(rep.sentences, 2);
    QCOMPARE(rep.heads.size(), size_t(2));  // encoder:0:0 and decoder:0:0 (no cross maps given)
    const auto* enc = rep.find({AttentionKind::EncoderSelf, 0, 0});
    QVERIFY(enc);
    QCOMPARE(enc->rows, int64_t(7));
    // Row by row (sentence 1 rows 0..3, sentence 2 rows 4..6):
    const double h2 = -(0.25 * std::log(0.25) + 0.75 * std::log(0.75));
    const double eps = 1e-6;  // float maps summed in double
    QVERIFY(std::abs(enc->value(HeadStatistic::Entropy) - (0 + std::log(2.0) + h2 + std::log(4.0) + 0 + 0 + 0) / 7) <
            eps);
    QVERIFY(std::abs(enc->value(HeadStatistic::MeanOffset) - (0 - 0.5 + 0.75 - 1.5) / 7) < eps);
    QVERIFY(std::abs(enc->value(HeadStatistic::MeanAbsOffset) - (0 + 0.5 + 0.75 + 1.5) / 7) < eps);
    QVERIFY(std::abs(enc->value(HeadStatistic::BoundaryShare) - (0.75 + 0.25 + 1.0) / 7) < eps);
    QVERIFY(std::abs(enc->value(HeadStatistic::PunctuationShare) - (0.25 + 0.25 + 1.0) / 7) < eps);  // "." and "!"
    QVERIFY(std::abs(enc->value(HeadStatistic::PreviousShare) - (0.5 + 0.25) / 7) < eps);
    QVERIFY(std::abs(enc->value(HeadStatistic::SameShare) - (1 + 0.5 + 0.25 + 0.25 + 3) / 7) < eps);
    // argmax on the diagonal: row 0 and the three identity rows (row 1 ties 0.5/0.5: the first wins)
    QVERIFY(std::abs(enc->value(HeadStatistic::DiagonalMax) - 4.0 / 7) < eps);
    // offsets -2(and beyond) .. +2: sentence 1 gives .5 / .75 / 2 / .75 / 0, sentence 2 gives 3 at 0
    const std::vector<double> hist{0.5 / 7, 0.75 / 7, 5.0 / 7, 0.75 / 7, 0.0};
    QCOMPARE(enc->offset_histogram.size(), hist.size());
    for (size_t i = 0; i < hist.size(); ++i) QVERIFY(std::abs(enc->offset_histogram[i] - hist[i]) < eps);
    // same_share: sentence 1's own mean 0.5, sentence 2's 1.0, corpus 5/7 -> sentence 1 (0) is typical
    QCOMPARE(enc->typical_sentence[static_cast<size_t>(HeadStatistic::SameShare)], 0);
    // entropy: sentence 1 (1.06 / 4 rows... its mean) vs sentence 2 (0): corpus mean 0.46
    const double s1 = (std::log(2.0) + h2 + std::log(4.0)) / 4, mean = (std::log(2.0) + h2 + std::log(4.0)) / 7;
    QCOMPARE(enc->typical_sentence[0], std::abs(s1 - mean) < mean ? 0 : 1);

    const auto* dec = rep.find({AttentionKind::DecoderSelf, 0, 0});
    QVERIFY(dec);
    QCOMPARE(dec->rows, int64_t(4));
    QVERIFY(std::abs(dec->value(HeadStatistic::BoundaryShare) - (1 + 0.5 + 0.2 + 1) / 4) < eps);  // on <s>
    QVERIFY(std::abs(dec->value(HeadStatistic::PreviousShare) - (0.5 + 0.3) / 4) < eps);
    QVERIFY(std::abs(dec->value(HeadStatistic::MeanOffset) - (0 - 0.5 - (0.2 * 2 + 0.3)) / 4) < eps);
    // the sentence-2 decoder has 1 row, fewer than 3: sentence 1 (3 rows) is the only candidate
    QCOMPARE(dec->typical_sentence[0], 0);

    // A Marian decoder starts with <pad>: its boundary share is the weight on that start token too
    // (it was 0 for every such head while the statistic looked for "<s>" by name).
    attnlab::HeadStatsAccumulator marian(2);
    auto first = firstSentence();
    first.decoder_input_pieces[0] = "<pad>";
    marian.add(first);
    const auto padded = marian.report();
    const auto* start = padded.find({AttentionKind::DecoderSelf, 0, 0});
    QVERIFY(start);
    QVERIFY(std::abs(start->value(HeadStatistic::BoundaryShare) - (1 + 0.5 + 0.2) / 3) < eps);
}

void TestHeadLab::statisticNamesAndPunctuation() {
    std::set<std::string> keys;
    for (const auto& i : attnlab::headStatisticInfos()) {
        QVERIFY(keys.insert(i.key).second);
        QCOMPARE(&attnlab::headStatisticInfo(i.id), &i);
    }
    QCOMPARE(keys.size(), size_t(attnlab::kHeadStatisticCount));
    using attnlab::isPunctuationPiece;
    QVERIFY(isPunctuationPiece("."));
    QVERIFY(isPunctuationPiece("\xE2\x96\x81,"));
    QVERIFY(isPunctuationPiece("\xE2\x96\x81\xE2\x80\x9E"));  // ▁„
    QVERIFY(isPunctuationPiece("?!"));
    QVERIFY(!isPunctuationPiece("\xE2\x96\x81"));
    QVERIFY(!isPunctuationPiece("</s>"));
    QVERIFY(!isPunctuationPiece("a."));
    QVERIFY(
        !isPunctuationPiece("\xE2\x96\x81"
                            "20"));
    QVERIFY(!isPunctuationPiece("\xC3\xA4"));  // ä
}

void TestHeadLab::statisticsRejectMismatchedMaps() {
    attnlab::HeadStatsAccumulator acc;
    auto r = firstSentence();
    r.source_pieces.pop_back();
    QCOMPARE(errorOf([&] { acc.add(r); }),
             QString("sentence 1, encoder layer 0 head 0: row 0 has 4 weights for 3 keys"));
    QCOMPARE(errorOf([] { attnlab::HeadStatsAccumulator bad(0); }),
             QString("histogram radius 0 is out of range (1..100)"));
}

void TestHeadLab::goldLinesAllFormats() {
    const attnlab::AlignmentLinks sure{{0, 0}, {2, 1}}, possible{{0, 0}, {1, 2}, {2, 1}, {3, 3}};
    const auto zero = attnlab::parseGoldLine("0-0 1p2 2-1 3?3", {}, "g");
    QCOMPARE(zero.sure, sure);
    QCOMPARE(zero.possible, possible);
    const auto one = attnlab::parseGoldLine("1-1 2p3 3-2 4?4", {true, false}, "g");
    QCOMPARE(one.sure, sure);
    QCOMPARE(one.possible, possible);
    const auto rev = attnlab::parseGoldLine("0-0 2p1 1-2 3?3", {false, true}, "g");  // target-source
    QCOMPARE(rev.sure, sure);
    QCOMPARE(rev.possible, possible);
    const auto both = attnlab::parseGoldLine("  2-3 3p2\t1-1 ", {true, true}, "g");
    QCOMPARE(both.sure, (AlignmentLinks{{0, 0}, {2, 1}}));
    QVERIFY(attnlab::parseGoldLine("", {}, "g").possible.empty());
    QCOMPARE(attnlab::pharaohLine(possible), std::string("0-0 1-2 2-1 3-3"));
}

void TestHeadLab::goldErrorsNameFileLineAndLink() {
    QCOMPARE(errorOf([] { attnlab::parseGoldLine("0-0 1:2", {}, "gold.txt line 3"); }),
             QString("gold.txt line 3: link '1:2' is not i-j (sure) or ipj / i?j (possible)"));
    QCOMPARE(errorOf([] { attnlab::parseGoldLine("0-x", {}, "g line 1"); }),
             QString("g line 1: link '0-x' is not i-j (sure) or ipj / i?j (possible)"));
    QCOMPARE(errorOf([] {
                 attnlab::parseGoldLine("1-1 0-2", {true, false}, "g line 2");
             }),
             QString("g line 2: link '0-2' has index 0, but the file is read as 1-indexed (--gold-one-indexed); "
                     "drop that option for 0-indexed files"));
    const auto g = attnlab::parseGoldLine("0-0 4p1", {}, "g");
    QCOMPARE(errorOf([&] { attnlab::checkGoldIndices(g, 3, 2, "gold.txt line 7"); }),
             QString("gold.txt line 7: link 4-1 (0-based source-target) is beyond the sentence pair's 3 source and 2 "
                     "target words (--gold-one-indexed or --gold-reversed?)"));
    const QString path = m_dir.filePath("gold.txt");
    attnlab::testing::writeFile(path.toStdString(), "0-0\n1-1 2-\n");
    QCOMPARE(errorOf([&] { attnlab::readGoldAlignments(path.toStdString(), {}); }),
             path + " line 2: link '2-' is not i-j (sure) or ipj / i?j (possible)");
}

void TestHeadLab::aerPrecisionRecallByHand() {
    // A = {0-0, 1-2, 2-2}; S = {0-0, 2-1}; P = S + {1-2}. |A&S| = 1, |A&P| = 2, |A| = 3, |S| = 2.
    const auto gold = attnlab::parseGoldLine("0-0 2-1 1p2", {}, "g");
    attnlab::AlignmentCounts c;
    c.add({{0, 0}, {1, 2}, {2, 2}}, gold);
    QCOMPARE(c.predicted, int64_t(3));
    QCOMPARE(c.sure, int64_t(2));
    QCOMPARE(c.predicted_sure, int64_t(1));
    QCOMPARE(c.predicted_possible, int64_t(2));
    QCOMPARE(c.precision(), 2.0 / 3);
    QCOMPARE(c.recall(), 0.5);
    QVERIFY(std::abs(c.aer() - (1.0 - 3.0 / 5)) < 1e-12);
    // A second pair, perfect on sure links: counts add up over the corpus.
    c.add({{0, 0}, {1, 1}}, attnlab::parseGoldLine("0-0 1-1", {}, "g"));
    QCOMPARE(c.precision(), 4.0 / 5);
    QCOMPARE(c.recall(), 3.0 / 4);
    QVERIFY(std::abs(c.aer() - (1.0 - (3.0 + 4.0) / (5.0 + 4.0))) < 1e-12);
    // Nothing predicted, nothing gold: no error, AER 0.
    QCOMPARE(attnlab::AlignmentCounts{}.aer(), 0.0);
}

void TestHeadLab::mergingPiecesIntoWords() {
    // "Ein Fußballspieler mit 20 Jahren ." -> 6 words; "Jahren" + "." would be one word without the space.
    const std::string W = "\xE2\x96\x81";
    const std::vector<std::string> src{W + "Ein", W + "Fußball", "spiel",      "er",    W + "mit",
                                       W + "2",   "0",           W + "Jahren", W + ".", "</s>"};
    const std::vector<std::string> trg{W + "A", W + "foot", "ball", "er", W + "aged", W + "20.", "</s>"};
    const auto sw = attnlab::groupPiecesIntoWords(src), tw = attnlab::groupPiecesIntoWords(trg);
    QCOMPARE(sw.words, 6);
    QCOMPARE(sw.word_of_piece, (std::vector<int>{0, 1, 1, 1, 2, 3, 3, 4, 5, -1}));
    QCOMPARE(tw.words, 4);
    QCOMPARE(tw.word_of_piece, (std::vector<int>{0, 1, 1, 1, 2, 3, -1}));
    QCOMPARE(attnlab::groupPiecesIntoWords({"spiel", W + "er"}).word_of_piece, (std::vector<int>{0, 1}));
    // A piece map with distinct values: cell (i, j) = (i + 1) / 100 + j / 1000.
    Matrix m(trg.size(), std::vector<float>(src.size()));
    for (size_t i = 0; i < trg.size(); ++i)
        for (size_t j = 0; j < src.size(); ++j) m[i][j] = float(i + 1) / 100 + float(j) / 1000;
    const auto words = attnlab::mergeToWords(m, tw, sw);
    QCOMPARE(words.size(), size_t(4));
    QCOMPARE(words[0].size(), size_t(6));
    auto cell = [&](size_t i, size_t j) { return double(m[i][j]); };
    // target word 1 ("football": pieces 1..3) x source word 1 ("Fußballspieler": pieces 1..3):
    // sum over the source pieces, mean over the target pieces.
    double expect = 0;
    for (size_t i = 1; i <= 3; ++i) expect += (cell(i, 1) + cell(i, 2) + cell(i, 3)) / 3;
    QVERIFY(std::abs(words[1][1] - expect) < 1e-6);
    // target word 3 ("20.") x source word 3 ("20": pieces 5, 6); </s> (piece 9, row 6) is in no word.
    QVERIFY(std::abs(words[3][3] - (cell(5, 5) + cell(5, 6))) < 1e-6);
    QVERIFY(std::abs(words[0][5] - cell(0, 8)) < 1e-6);
    // argmax per target word; with a threshold, every cell reaching it too.
    const Matrix wm{{0.1f, 0.7f, 0.2f}, {0.5f, 0.1f, 0.45f}};
    QCOMPARE(attnlab::extractLinks(wm), (AlignmentLinks{{0, 1}, {1, 0}}));
    QCOMPARE(attnlab::extractLinks(wm, 0.4), (AlignmentLinks{{0, 1}, {1, 0}, {2, 1}}));
    QCOMPARE(attnlab::whitespaceWords("  Ein  Hund .\t"), (std::vector<std::string>{"Ein", "Hund", "."}));
    QCOMPARE(errorOf([&] { attnlab::mergeToWords(Matrix(2, std::vector<float>(10)), tw, sw); }),
             QString("the map has 2 rows for 7 target pieces"));
}

void TestHeadLab::alignmentMethods() {
    using K = attnlab::AlignmentMethod::Kind;
    QCOMPARE(attnlab::alignmentMethodName(attnlab::parseAlignmentMethod("head:2:5")), std::string("head:2:5"));
    QVERIFY(attnlab::parseAlignmentMethod("layer:1").kind == K::Layer);
    QVERIFY(attnlab::parseAlignmentMethod("all").kind == K::All);
    for (const char* bad : {"head:1", "layer:x", "heads:1:2", "", "layer:-1", "shift:", "shift:shift:all", "all:shift"})
        QCOMPARE(
            errorOf([&] { attnlab::parseAlignmentMethod(bad); }),
            QString(
                "alignment method '%1' is not [sym:HEURISTIC:][shift:](head:L:H | layer:L | all | alti+[:layer:L] | "
                "value-zeroing[:layer:L]) (0-based layer and head; heuristics: intersect, union, grow-diag, "
                "grow-diag-final, grow-diag-final-and)")
                .arg(bad));
    const auto shifted = attnlab::parseAlignmentMethod("shift:layer:2");
    QVERIFY(shifted.shift && shifted.kind == K::Layer && shifted.layer == 2);
    QVERIFY(!(shifted == attnlab::parseAlignmentMethod("layer:2")));
    const auto all = attnlab::allAlignmentMethods(2, 3);
    QCOMPARE(all.size(), size_t(2 * (2 * 3 + 2 + 1)));
    QCOMPARE(attnlab::alignmentMethodName(all[6]), std::string("layer:0"));
    QCOMPARE(attnlab::alignmentMethodName(all[8]), std::string("all"));
    QCOMPARE(attnlab::alignmentMethodName(all[9]), std::string("shift:head:0:0"));
    QCOMPARE(attnlab::alignmentMethodName(all.back()), std::string("shift:all"));
    for (const auto& m : all) QVERIFY(attnlab::parseAlignmentMethod(attnlab::alignmentMethodName(m)) == m);
}

// Shifted maps (Chen et al.): target piece i read from row i + 1, the step whose input is piece i.
// Words from the tokenizer's surfaces: a character the vocabulary lacks, left out of the
// translation, splits neither a source nor a target word, and a word made only of such characters
// keeps its place (with no weight).
void TestHeadLab::shiftedMapsAndWordsFromSurfaces() {
    const Matrix m{{0.1f, 0.9f}, {0.8f, 0.2f}, {0.3f, 0.7f}};
    QCOMPARE(attnlab::shiftedRows(m), (Matrix{{0.8f, 0.2f}, {0.3f, 0.7f}, {0.f, 0.f}}));
    QCOMPARE(attnlab::piecesOfWords({-1, 0, 0, 2, -1}, 3).word_of_piece, (std::vector<int>{-1, 0, 0, 2, -1}));
    QCOMPARE(errorOf([&] {
                 attnlab::piecesOfWords({0, 3}, 3);
             }),
             QString("a piece is said to cover word 3 of a text of 3 words"));

    const std::string snow = "\xE2\x98\x83";  // a snowman: not in the tests' tokenizer
    const std::string src = "Der Mann trinkt Kaf" + snow + "fee " + snow + " heute.",
                      trg = "The man dr" + snow + "inks coffee.";
    const auto r = m_t->teacherForce({src}, {trg}).front();
    QCOMPARE(r.best.text, trg);  // the given target, not its pieces decoded again
    QCOMPARE(r.source_piece_words.size(), r.source_pieces.size());
    QCOMPARE(r.target_piece_words.size(), r.best.pieces.size());
    std::set<int> src_words(r.source_piece_words.begin(), r.source_piece_words.end());
    QCOMPARE(src_words, (std::set<int>{-1, 0, 1, 2, 3, 5}));  // word 4 is the snowman alone
    QCOMPARE(r.source_piece_words.back(), -1);                // </s>
    std::set<int> trg_words(r.target_piece_words.begin(), r.target_piece_words.end());
    QCOMPARE(trg_words, (std::set<int>{-1, 0, 1, 2, 3}));
    // Without the surfaces, the "▁" groups split "Kaf fee" and "dr inks".
    QVERIFY(attnlab::groupPiecesIntoWords(r.source_pieces).words == 6);
    const auto w = attnlab::alignWords(r, attnlab::parseAlignmentMethod("shift:layer:1"));
    QCOMPARE(w.source_words.size(), size_t(6));
    QCOMPARE(w.target_words.size(), size_t(4));
    for (const auto& row : w.map) QCOMPARE(row[4], 0.f);  // no piece, no weight
    // A target word with no pieces has a row of zeros: no link (not one to source word 0).
    QCOMPARE(attnlab::extractLinks({{0.f, 0.f}, {0.2f, 0.8f}}), (AlignmentLinks{{1, 1}}));
    // The shifted word map by hand: mean over layer 1's heads of rows i + 1, summed into words.
    const auto sw = attnlab::piecesOfWords(r.source_piece_words, 6);
    const auto tw = attnlab::piecesOfWords(r.target_piece_words, 4);
    std::vector<Matrix> heads;
    for (const auto& h : r.cross[1]) heads.push_back(attnlab::mergeToWords(attnlab::shiftedRows(h), tw, sw));
    std::vector<const Matrix*> ptrs;
    for (const auto& h : heads) ptrs.push_back(&h);
    QCOMPARE(w.map, attnlab::meanOfMaps(ptrs));
}

// Moses's heuristics on small cases worked out by hand from the manual's pseudo-code.
void TestHeadLab::symmetrisationHeuristicsByHand() {
    using S = attnlab::Symmetrization;
    const auto sym = [](const AlignmentLinks& f, const AlignmentLinks& r, S how) {
        return attnlab::symmetrizeLinks(f, r, how, 3, 3);
    };
    // Forward 0-0 1-1 2-1, reverse 0-0 1-1 2-2: intersection 0-0 1-1. Growing from 1-1 adds its
    // neighbour 2-1 (source 2 had no link), then its diagonal 2-2 (target 2 had none).
    const AlignmentLinks f{{0, 0}, {1, 1}, {2, 1}}, r{{0, 0}, {1, 1}, {2, 2}};
    QCOMPARE(sym(f, r, S::Intersect), (AlignmentLinks{{0, 0}, {1, 1}}));
    QCOMPARE(sym(f, r, S::Union), (AlignmentLinks{{0, 0}, {1, 1}, {2, 1}, {2, 2}}));
    QCOMPARE(sym(f, r, S::GrowDiag), (AlignmentLinks{{0, 0}, {1, 1}, {2, 1}, {2, 2}}));
    // Forward 0-0 2-2, reverse 0-0 1-2: nothing next to 0-0 to grow; final adds 2-2 (both words
    // free), then 1-2 (source 1 free, target 2 no longer); final-and only 2-2.
    const AlignmentLinks f2{{0, 0}, {2, 2}}, r2{{0, 0}, {1, 2}};
    QCOMPARE(sym(f2, r2, S::GrowDiag), (AlignmentLinks{{0, 0}}));
    QCOMPARE(sym(f2, r2, S::GrowDiagFinal), (AlignmentLinks{{0, 0}, {1, 2}, {2, 2}}));
    QCOMPARE(sym(f2, r2, S::GrowDiagFinalAnd), (AlignmentLinks{{0, 0}, {2, 2}}));
    // Growth only along the union and only to a word without a link: 0-0 and 1-1 both linked
    // already, so 0-1 (in the union) is not added by grow-diag, but is by neither final step either.
    const AlignmentLinks f3{{0, 0}, {1, 1}, {0, 1}}, r3{{0, 0}, {1, 1}};
    QCOMPARE(sym(f3, r3, S::GrowDiagFinal), (AlignmentLinks{{0, 0}, {1, 1}}));
    QCOMPARE(attnlab::turnedAround({{2, 0}, {0, 1}}), (AlignmentLinks{{0, 2}, {1, 0}}));
    QCOMPARE(errorOf([&] {
                 attnlab::symmetrizeLinks({{0, 3}}, {}, S::Union, 3, 3);
             }),
             QString("symmetrising: the forward link 0-3 is beyond the pair's 3 source and 3 target words"));
    // Names: every heuristic before every method, and back.
    for (auto how : attnlab::kSymmetrizations)
        for (const char* rest : {"all", "shift:layer:1", "head:0:2"}) {
            const std::string name = "sym:" + attnlab::symmetrizationName(how) + ":" + rest;
            const auto m = attnlab::parseAlignmentMethod(name);
            QVERIFY(m.sym == how);
            QCOMPARE(attnlab::alignmentMethodName(m), name);
        }
    for (const char* bad : {"sym:all", "sym:grow:all", "sym:union", "shift:sym:union:all"})
        QVERIFY(
            errorOf([&] { attnlab::parseAlignmentMethod(bad); }).startsWith(QString("alignment method '%1'").arg(bad)));
}

// With a model of the other direction (here the same small model reading the English side), every
// method is also symmetrised: its links are those of symmetrizeLinks over the two directions'
// links, computed here pair by pair from each model's own teacher forcing.
void TestHeadLab::corpusAlignmentWithAReverseModel() {
    const std::vector<std::string> gold_lines{"0-0 1-1 2-2 3p3 3-4 4-5", "0-0 1-1 2-2 3-3", "0-0 1-1 2-2 3-3 4-4",
                                              "0-0 1-1 2-2 3-3 4-4 4p5 5-6"};
    std::vector<attnlab::GoldAlignment> gold;
    for (const auto& l : gold_lines) gold.push_back(attnlab::parseGoldLine(l, {}, "g"));
    const auto rep = attnlab::alignCorpus(*m_t, m_src, m_ref, &gold, "gold.txt", 0.0, {}, m_t.get());
    QVERIFY(rep.symmetrised);
    // heads, layers, all, each also shifted; ALTI+ and value zeroing, whole and by layer, each also shifted
    const size_t base = 2 * (2 * 4 + 2 + 1) + 2 * 2 * (1 + 2);
    QCOMPARE(rep.methods.size(), base * 6);
    const auto forward = m_t->teacherForce(m_src, m_ref), backward = m_t->teacherForce(m_ref, m_src);
    for (const char* name : {"sym:grow-diag-final:shift:layer:1", "sym:intersect:head:0:3", "sym:union:all"}) {
        const auto method = attnlab::parseAlignmentMethod(name);
        auto plain = method;
        plain.sym = attnlab::Symmetrization::None;
        const auto* got = rep.find(method);
        QVERIFY2(got, name);
        for (size_t p = 0; p < m_src.size(); ++p) {
            const auto f = attnlab::alignWords(forward[p], plain), b = attnlab::alignWords(backward[p], plain);
            const auto expect = attnlab::symmetrizeLinks(f.links, attnlab::turnedAround(b.links), method.sym,
                                                         int(f.source_words.size()), int(f.target_words.size()));
            QCOMPARE(got->links[p], expect);
        }
    }
    // The best of all, and the best unsymmetrised head.
    for (const auto& m : rep.methods) QVERIFY(rep.methods[size_t(rep.best)].counts.aer() <= m.counts.aer());
    QVERIFY(rep.methods[size_t(rep.best_head)].method.sym == attnlab::Symmetrization::None);
    // A pair skipped before its reverse links are read leaves the later pairs their own reverse links.
    gold[1] = attnlab::parseGoldLine("0-0 9-1", {}, "g");
    const auto skipping = attnlab::alignCorpus(*m_t, m_src, m_ref, &gold, "gold.txt", 0.0, {}, m_t.get());
    QCOMPARE(skipping.skipped.size(), size_t(1));
    QCOMPARE(skipping.skipped[0].pair, 2);
    const auto gdf = attnlab::parseAlignmentMethod("sym:grow-diag-final:shift:layer:1");
    for (size_t p : {size_t(0), size_t(2), size_t(3)}) QCOMPARE(skipping.find(gdf)->links[p], rep.find(gdf)->links[p]);
    QVERIFY(skipping.find(gdf)->links[1].empty());
}

void TestHeadLab::teacherForcingMatchesTheForcedSearch() {
    // The search forced through a target gives each forced token the model's own log-probability
    // (cached incremental decoder); teacher forcing computes the same from one full pass. Maps:
    // the forced translation's first rows (the decoder is causal, so they see the same prefix).
    DecodingOptions o;
    o.beam_size = 1;
    const std::string target = "A dog runs in the park.";
    const auto tf = m_t->teacherForce({m_src[0]}, {target}, o).front();
    QCOMPARE(tf.best.pieces.back(), std::string("</s>"));
    QVERIFY(tf.best.finished);
    QVERIFY(tf.steps.empty());
    o.force_prefix = target;
    o.max_length = 40;
    const auto forced = m_t->translate(m_src[0], o);
    const size_t n = tf.best.ids.size() - 1;  // the target's pieces without </s>
    QCOMPARE(std::vector<int>(forced.best.ids.begin(), forced.best.ids.begin() + long(n)),
             std::vector<int>(tf.best.ids.begin(), tf.best.ids.end() - 1));
    double sum = 0;
    for (size_t i = 0; i < tf.best.ids.size(); ++i) sum += tf.best.token_log_probs[i];
    QVERIFY(std::abs(sum - tf.best.score) < 1e-9);
    // different kernels (one token at a time vs the whole sequence): float32 rounding, 1e-4
    for (size_t i = 0; i < n; ++i)
        QVERIFY(std::abs(tf.best.token_log_probs[i] - forced.best.token_log_probs[i]) < 1e-4);
    for (size_t l = 0; l < tf.cross.size(); ++l)
        for (size_t h = 0; h < tf.cross[l].size(); ++h)
            for (size_t i = 0; i < n; ++i)
                for (size_t j = 0; j < tf.cross[l][h][i].size(); ++j) {
                    QVERIFY(std::abs(tf.cross[l][h][i][j] - forced.cross[l][h][i][j]) < 1e-5);
                    QVERIFY(std::abs(tf.decoder_self[l][h][i][std::min(j, i)] -
                                     forced.decoder_self[l][h][i][std::min(j, i)]) < 1e-5);
                }
    QCOMPARE(tf.encoder_self.size(), forced.encoder_self.size());
}

void TestHeadLab::teacherForcingBatchedEqualsAlone() {
    DecodingOptions o;
    const auto together = m_t->teacherForce(m_src, m_ref, o);
    QCOMPARE(together.size(), m_src.size());
    for (size_t s = 0; s < m_src.size(); ++s) {
        const auto alone = m_t->teacherForce({m_src[s]}, {m_ref[s]}, o).front();
        const auto& t = together[s];
        QCOMPARE(t.source_text, m_src[s]);
        QCOMPARE(t.best.ids, alone.best.ids);
        // padded batch vs one sentence: other GEMM shapes, float32 rounding only
        QVERIFY(std::abs(t.best.score - alone.best.score) < 1e-4);
        for (size_t l = 0; l < t.cross.size(); ++l)
            for (size_t h = 0; h < t.cross[l].size(); ++h) {
                QCOMPARE(t.cross[l][h].size(), alone.cross[l][h].size());
                QCOMPARE(t.encoder_self[l][h].size(), alone.encoder_self[l][h].size());
                for (size_t i = 0; i < t.cross[l][h].size(); ++i) {
                    QCOMPARE(t.cross[l][h][i].size(), alone.cross[l][h][i].size());
                    for (size_t j = 0; j < t.cross[l][h][i].size(); ++j)
                        QVERIFY(std::abs(t.cross[l][h][i][j] - alone.cross[l][h][i][j]) < 1e-5);
                }
            }
    }
}

void TestHeadLab::teacherForcingResultsReproducesTheirMaps() {
    // The search's own results, teacher-forced through their ids in one padded batch: the same
    // tokens, the scores the search computed, and the maps analyse() computed one sentence at a
    // time (other GEMM shapes: float32 rounding, 1e-4 / 1e-5).
    DecodingOptions o;
    o.beam_size = 2;
    o.max_length = 12;  // some hypotheses end at the cap without </s>
    const auto own = m_t->translateBatch(m_src, o);
    const auto re = m_t->teacherForce(own, o);
    QCOMPARE(re.size(), own.size());
    for (size_t s = 0; s < own.size(); ++s) {
        QCOMPARE(re[s].best.ids, own[s].best.ids);
        QCOMPARE(re[s].best.finished, own[s].best.finished);
        QVERIFY(std::abs(re[s].best.score - own[s].best.score) < 1e-4);
        QCOMPARE(re[s].decoder_input_pieces, own[s].decoder_input_pieces);
        for (size_t l = 0; l < own[s].cross.size(); ++l)
            for (size_t h = 0; h < own[s].cross[l].size(); ++h)
                for (size_t i = 0; i < own[s].cross[l][h].size(); ++i)
                    for (size_t j = 0; j < own[s].cross[l][h][i].size(); ++j) {
                        QVERIFY(std::abs(re[s].cross[l][h][i][j] - own[s].cross[l][h][i][j]) < 1e-5);
                        if (j < own[s].decoder_self[l][h][i].size())
                            QVERIFY(std::abs(re[s].decoder_self[l][h][i][j] - own[s].decoder_self[l][h][i][j]) < 1e-5);
                    }
    }
}

void TestHeadLab::teacherForcingErrors() {
    QCOMPARE(errorOf([&] { m_t->teacherForce({"Ein Hund."}, {}); }), QString("1 sources but 0 targets"));
    QCOMPARE(errorOf([&] {
                 m_t->teacherForce({"Ein Hund.", "Eine Katze."}, {"A dog.", "  "});
             }),
             QString("pair 2: target: the sentence is empty"));
    int batches = 0;
    DecodingOptions o;
    o.max_batch_size = 2;
    QCOMPARE(errorOf([&] {
                 m_t->teacherForce(m_src, m_ref, o, [&](const attnlab::StepProgress&) { return ++batches < 2; });
             }),
             QString("cancelled"));
    QCOMPARE(batches, 2);
}

void TestHeadLab::corpusStatisticsEqualStepByStep() {
    DecodingOptions o;
    o.beam_size = 2;
    o.max_length = 12;
    std::vector<attnlab::CorpusProgress> seen;
    const auto forced = attnlab::corpusHeadStatistics(*m_t, m_src, &m_ref, o, 4, [&](const attnlab::CorpusProgress& p) {
        seen.push_back(p);
        return true;
    });
    attnlab::HeadStatsAccumulator acc(4);
    for (const auto& r : m_t->teacherForce(m_src, m_ref, o)) acc.add(r);
    const auto expect = acc.report(true);
    QVERIFY(forced.teacher_forced);
    QCOMPARE(forced.heads.size(), size_t(3 * 2 * 4));
    QCOMPARE(forced.sentences, 4);
    for (size_t h = 0; h < forced.heads.size(); ++h) {
        QVERIFY(forced.heads[h].head == expect.heads[h].head);
        QCOMPARE(forced.heads[h].rows, expect.heads[h].rows);
        for (int s = 0; s < attnlab::kHeadStatisticCount; ++s)
            QVERIFY(std::abs(forced.heads[h].values[s] - expect.heads[h].values[s]) < 1e-5);
    }
    QVERIFY(!seen.empty());
    QCOMPARE(seen.back().done, 4);
    QCOMPARE(seen.back().stage, std::string("teacher-forcing the references"));
    // Without references: the model's own translations (same search options).
    const auto own = attnlab::corpusHeadStatistics(*m_t, m_src, nullptr, o, 4);
    attnlab::HeadStatsAccumulator acc2(4);
    for (const auto& r : m_t->translateBatch(m_src, o)) acc2.add(r);
    QVERIFY(!own.teacher_forced);
    const auto* a = own.find({AttentionKind::Cross, 1, 3});
    const auto stepwise = acc2.report();  // find() points into the report: keep it alive
    const auto* b = stepwise.find({AttentionKind::Cross, 1, 3});
    QCOMPARE(a->rows, b->rows);
    QVERIFY(std::abs(a->value(HeadStatistic::Entropy) - b->value(HeadStatistic::Entropy)) < 1e-5);
    // Errors name the line.
    auto refs = m_ref;
    refs.pop_back();
    QCOMPARE(errorOf([&] { attnlab::corpusHeadStatistics(*m_t, m_src, &refs, o); }),
             QString("mismatched inputs: 4 source sentences but 3 references"));
    // A line the model cannot read is skipped and listed; the statistics are those of the others,
    // their typical sentences numbered in the input's order.
    auto srcs = m_src;
    srcs[2] = "";
    const auto skipping = attnlab::corpusHeadStatistics(*m_t, srcs, &m_ref, o, 4);
    QCOMPARE(skipping.sentences, 3);
    QCOMPARE(skipping.skipped.size(), size_t(1));
    QCOMPARE(skipping.skipped[0].pair, 3);
    QCOMPARE(skipping.skipped[0].reason, std::string("source: the sentence is empty"));
    const std::vector<std::string> three_src{m_src[0], m_src[1], m_src[3]}, three_ref{m_ref[0], m_ref[1], m_ref[3]};
    const auto three = attnlab::corpusHeadStatistics(*m_t, three_src, &three_ref, o, 4);
    for (size_t h = 0; h < three.heads.size(); ++h) {
        QCOMPARE(skipping.heads[h].values, three.heads[h].values);
        for (int s = 0; s < attnlab::kHeadStatisticCount; ++s) {
            const int t = three.heads[h].typical_sentence[size_t(s)];
            QCOMPARE(skipping.heads[h].typical_sentence[size_t(s)], t < 0 ? t : t < 2 ? t : t + 1);
        }
    }
    const std::vector<std::string> none(4, " ");
    QCOMPARE(errorOf([&] { attnlab::corpusHeadStatistics(*m_t, none, nullptr, o); }),
             QString("no line could be read (line 1: source: the sentence is empty)"));
    QCOMPARE(errorOf([&] { attnlab::corpusHeadStatistics(*m_t, m_src, nullptr, o, 4, [](auto&) { return false; }); }),
             QString("cancelled"));
}

void TestHeadLab::corpusAlignmentAgainstGold() {
    // Hand-made gold for the four pairs (0-based source-target words, a few possible links).
    const std::vector<std::string> gold_lines{"0-0 1-1 2-2 3p3 3-4 4-5", "0-0 1-1 2-2 3-3", "0-0 1-1 2-2 3-3 4-4",
                                              "0-0 1-1 2-2 3-3 4-4 4p5 5-6"};
    std::vector<attnlab::GoldAlignment> gold;
    for (const auto& l : gold_lines) gold.push_back(attnlab::parseGoldLine(l, {}, "g"));
    const auto rep = attnlab::alignCorpus(*m_t, m_src, m_ref, &gold, "gold.txt");
    QCOMPARE(rep.pairs, 4);
    QVERIFY(rep.skipped.empty());
    QCOMPARE(rep.methods.size(), size_t(2 * (2 * 4 + 2 + 1) + 2 * 2 * (1 + 2)));  // + contributionAlignmentMethods(2)
    // head:1:2 step by step: teacher-force, merge, argmax, then the counts by set arithmetic here.
    const auto tf = m_t->teacherForce(m_src, m_ref);
    int64_t a = 0, s = 0, as = 0, ap = 0;
    for (size_t p = 0; p < tf.size(); ++p) {
        const auto w = attnlab::alignWords(tf[p], attnlab::parseAlignmentMethod("head:1:2"));
        QCOMPARE(w.source_words.size(), attnlab::whitespaceWords(m_src[p]).size());
        QCOMPARE(w.target_words.size(), attnlab::whitespaceWords(m_ref[p]).size());
        for (size_t t = 0; t < w.map.size(); ++t) {  // one argmax link per target word
            const auto best = std::max_element(w.map[t].begin(), w.map[t].end()) - w.map[t].begin();
            QVERIFY(std::count(w.links.begin(), w.links.end(), std::pair<int, int>(int(best), int(t))) == 1);
        }
        QCOMPARE(w.links.size(), w.target_words.size());
        QCOMPARE(rep.find(attnlab::parseAlignmentMethod("head:1:2"))->links[p], w.links);
        const auto S = asSet(gold[p].sure), P = asSet(gold[p].possible);
        for (const auto& l : w.links) {
            as += S.count(l);
            ap += P.count(l);
        }
        a += static_cast<int64_t>(w.links.size());
        s += static_cast<int64_t>(S.size());
    }
    const auto& c = rep.find(attnlab::parseAlignmentMethod("head:1:2"))->counts;
    QCOMPARE(c.predicted, a);
    QCOMPARE(c.sure, s);
    QCOMPARE(c.predicted_sure, as);
    QCOMPARE(c.predicted_possible, ap);
    QVERIFY(std::abs(c.aer() - (1.0 - double(as + ap) / double(a + s))) < 1e-12);
    // best head / layer: the lowest AER of their kind, shifted or not
    using K = attnlab::AlignmentMethod::Kind;
    QVERIFY(rep.methods.at(size_t(rep.best_head)).method.kind == K::Head);
    QVERIFY(rep.methods.at(size_t(rep.best_layer)).method.kind == K::Layer);
    for (const auto& m : rep.methods) {
        if (m.method.kind == K::Head) QVERIFY(rep.methods[size_t(rep.best_head)].counts.aer() <= m.counts.aer());
        if (m.method.kind == K::Layer) QVERIFY(rep.methods[size_t(rep.best_layer)].counts.aer() <= m.counts.aer());
    }
    // A pair that cannot be aligned is skipped and named, its links empty, its gold not counted; the
    // others are aligned as before.
    auto src = m_src;
    src[2] = " ";
    gold[1] = attnlab::parseGoldLine("0-0 9-1", {}, "g");
    const auto skipping = attnlab::alignCorpus(*m_t, src, m_ref, &gold, "gold.txt");
    QCOMPARE(skipping.skipped.size(), size_t(2));
    QCOMPARE(skipping.skipped[0].pair, 2);
    QCOMPARE(skipping.skipped[0].reason,
             std::string("gold.txt line 2: link 9-1 (0-based source-target) is beyond the sentence pair's 4 source and "
                         "4 target words (--gold-one-indexed or --gold-reversed?)"));
    QCOMPARE(skipping.skipped[1].pair, 3);
    QCOMPARE(skipping.skipped[1].reason, std::string("source: the sentence is empty"));
    const auto& kept = *skipping.find(attnlab::parseAlignmentMethod("head:1:2"));
    QVERIFY(kept.links[1].empty() && kept.links[2].empty());
    QCOMPARE(kept.links[3], rep.find(attnlab::parseAlignmentMethod("head:1:2"))->links[3]);
    QCOMPARE(kept.counts.sure, int64_t(gold[0].sure.size() + gold[3].sure.size()));
    const auto text = attnlab::alignmentLinksText(skipping, kept.method);
    QCOMPARE(std::count(text.begin(), text.end(), '\n'), 4L);  // lines stay aligned with the pairs
    QVERIFY(text.find("\n\n\n") != std::string::npos);
    // Nothing alignable: an error naming the first reason.
    const std::vector<std::string> blank(4, "");
    QCOMPARE(errorOf([&] { attnlab::alignCorpus(*m_t, blank, m_ref, &gold, "gold.txt"); }),
             QString("no sentence pair could be aligned (line 1: source: the sentence is empty)"));
    gold.pop_back();
    QCOMPARE(errorOf([&] { attnlab::alignCorpus(*m_t, m_src, m_ref, &gold, "gold.txt"); }),
             QString("mismatched inputs: 4 source sentences but 3 gold alignment lines in gold.txt"));
    QCOMPARE(errorOf([&] { attnlab::alignWords(tf[0], attnlab::parseAlignmentMethod("head:2:0")); }),
             QString("alignment method head:2:0: layer 2 is out of range (0..1)"));
    QCOMPARE(errorOf([&] { attnlab::alignWords(tf[0], attnlab::parseAlignmentMethod("head:1:4")); }),
             QString("alignment method head:1:4: head 4 is out of range (0..3)"));
}

void TestHeadLab::importanceAndPruningCurve() {
    attnlab::ImportanceOptions io;
    io.decoding.beam_size = 1;
    io.decoding.max_length = 10;
    io.kinds = {AttentionKind::Cross};
    io.curve_step = 3;
    int calls = 0;
    const auto rep = attnlab::headImportance(*m_t, m_src, m_ref, io, [&](const attnlab::CorpusProgress& p) {
        ++calls;
        return p.total == 1 + 8 + 3 + 1;  // baseline, 8 heads, curve points after 3, 6, 8 heads, gradients
    });
    QVERIFY(calls > 0);
    // Independently: the corpus BLEU of the plain translation and of two heads ablated alone.
    auto hypsWith = [&](const std::vector<HeadRef>& ablate) {
        DecodingOptions d = io.decoding;
        d.ablate = ablate;
        std::vector<std::string> hyps;
        for (const auto& r : m_t->translateBatch(m_src, d)) hyps.push_back(r.best.text);
        return hyps;
    };
    auto bleuWith = [&](const std::vector<HeadRef>& ablate) {
        return attnlab::corpusBleu(hypsWith(ablate), m_ref).score;
    };
    auto chrfWith = [&](const std::vector<HeadRef>& ablate) { return attnlab::corpusChrf(hypsWith(ablate), m_ref); };
    QCOMPARE(rep.baseline_bleu, bleuWith({}));
    QCOMPARE(rep.heads.size(), size_t(8));
    for (size_t i = 0; i < rep.heads.size(); ++i) {
        QVERIFY(rep.heads[i].head.kind == AttentionKind::Cross);
        if (i) {  // least important first: BLEU, then chrF for ties
            const auto &a = rep.heads[i - 1], &b = rep.heads[i];
            QVERIFY(a.bleu > b.bleu || (a.bleu == b.bleu && a.chrf >= b.chrf));
        }
        QCOMPARE(rep.heads[i].bleu_drop, rep.baseline_bleu - rep.heads[i].bleu);
    }
    for (size_t i : {size_t(0), size_t(7)}) {
        QCOMPARE(rep.heads[i].bleu, bleuWith({rep.heads[i].head}));
        QCOMPARE(rep.heads[i].chrf, chrfWith({rep.heads[i].head}));
    }
    QVERIFY(rep.heads.front().bleu > rep.heads.back().bleu);  // the heads made a difference
    QCOMPARE(rep.baseline_chrf, chrfWith({}));
    QCOMPARE(rep.curve.size(), size_t(4));
    QCOMPARE(rep.curve[1].heads_removed, 3);
    QCOMPARE(rep.curve[3].heads_removed, 8);
    QCOMPARE(rep.curve[1].removed, (std::vector<HeadRef>{rep.heads[0].head, rep.heads[1].head, rep.heads[2].head}));
    QCOMPARE(rep.curve[2].bleu, bleuWith(rep.curve[2].removed));
    // Spread over two translators of the same package (two threads): the same report.
    attnlab::Translator second(m_dir.path().toStdString() + "/pkg",
                               attnlab::TranslatorOptions{attnlab::testing::testDevice(), 1});
    int parallel_calls = 0;
    const auto par =
        attnlab::headImportance({m_t.get(), &second}, m_src, m_ref, io, [&](const attnlab::CorpusProgress&) {
            ++parallel_calls;  // one call at a time (the runner holds a lock), so no race here
            return true;
        });
    QVERIFY(parallel_calls > 0);
    QCOMPARE(par.baseline_bleu, rep.baseline_bleu);
    QCOMPARE(par.heads.size(), rep.heads.size());
    for (size_t i = 0; i < rep.heads.size(); ++i) {
        QVERIFY(par.heads[i].head == rep.heads[i].head);
        QCOMPARE(par.heads[i].bleu, rep.heads[i].bleu);
        QCOMPARE(par.heads[i].chrf, rep.heads[i].chrf);
    }
    for (size_t i = 0; i < rep.curve.size(); ++i) QCOMPARE(par.curve[i].bleu, rep.curve[i].bleu);
    QCOMPARE(errorOf([&] { attnlab::headImportance(*m_t, m_src, m_ref, io, [](auto&) { return false; }); }),
             QString("cancelled"));
    QCOMPARE(errorOf([&] {
                 attnlab::headImportance({m_t.get(), &second}, m_src, m_ref, io, [](auto&) { return false; });
             }),
             QString("cancelled"));
    // A line the model cannot read is left out of every run and listed.
    auto srcs = m_src;
    srcs[1] = " ";
    const auto skipping = attnlab::headImportance(*m_t, srcs, m_ref, io);
    QCOMPARE(skipping.sentences, 3);
    QCOMPARE(skipping.skipped.size(), size_t(1));
    QCOMPARE(skipping.skipped[0].pair, 2);
    QCOMPARE(skipping.skipped[0].reason, std::string("source: the sentence is empty"));
    const std::vector<std::string> s3{m_src[0], m_src[2], m_src[3]}, r3{m_ref[0], m_ref[2], m_ref[3]};
    std::vector<std::string> h3;
    for (const auto& r : m_t->translateBatch(s3, io.decoding)) h3.push_back(r.best.text);
    QCOMPARE(skipping.baseline_bleu, attnlab::corpusBleu(h3, r3).score);
    io.curve_step = 0;
    QCOMPARE(errorOf([&] { attnlab::headImportance(*m_t, m_src, m_ref, io); }),
             QString("importance options: curve_step 0 is below 1"));
    io.curve_step = 3;
    io.bootstrap_resamples = -1;
    QCOMPARE(errorOf([&] { attnlab::headImportance(*m_t, m_src, m_ref, io); }),
             QString("importance options: bootstrap_resamples -1 is out of range (0..100000)"));
    // The curve's intervals: each point's paired bootstrap against the baseline's sentences, on the
    // resamples bootstrapResamples gives for the options' seed; the baseline against itself differs
    // by exactly 0; removable_heads stops before the first significant loss.
    QCOMPARE(rep.bootstrap_resamples, 1000);
    const auto resamples = attnlab::bootstrapResamples(m_src.size(), 1000, io.bootstrap_seed);
    const auto base_stats = attnlab::sentenceBleuStats(hypsWith({}), m_ref);
    const auto expected = attnlab::pairedBootstrap(
        base_stats, attnlab::sentenceBleuStats(hypsWith(rep.curve[2].removed), m_ref), resamples);
    QCOMPARE(rep.curve[2].interval.low, expected.low);
    QCOMPARE(rep.curve[2].interval.difference_high, expected.difference_high);
    QCOMPARE(rep.curve[0].interval.difference_low, 0.0);
    QCOMPARE(rep.curve[0].interval.difference_high, 0.0);
    QCOMPARE(rep.removable_heads, attnlab::removableHeads(rep.curve));  // the rule: removableHeadsByHand
    io.bootstrap_resamples = 0;
    io.gradient = false;
    const auto plain = attnlab::headImportance(*m_t, m_src, m_ref, io);
    QCOMPARE(plain.removable_heads, -1);
    QCOMPARE(plain.curve[1].interval.resamples, 0);
    QVERIFY(!plain.gradient);
}

// removableHeads on curves made by hand: the first significant point in the middle, at the first
// removal, at the end, nowhere, one not significant after a significant one, and no intervals.
void TestHeadLab::removableHeadsByHand() {
    auto curve = [](const std::vector<bool>& significant) {
        std::vector<attnlab::PruningPoint> c;
        for (size_t i = 0; i < significant.size(); ++i) {
            attnlab::PruningPoint p;
            p.heads_removed = int(i) * 4;
            p.interval.resamples = 1000;
            p.interval.difference_high = significant[i] ? -0.1 : 0.3;
            c.push_back(p);
        }
        return c;
    };
    QCOMPARE(attnlab::removableHeads(curve({false, false, true, true})), 4);
    QCOMPARE(attnlab::removableHeads(curve({false, true, true})), 0);
    QCOMPARE(attnlab::removableHeads(curve({false, false, false, true})), 8);
    QCOMPARE(attnlab::removableHeads(curve({false, false, false})), 8);
    QCOMPARE(attnlab::removableHeads(curve({false, false, true, false, true})), 4);  // stops at the first
    auto none = curve({false, true});
    for (auto& p : none) p.interval.resamples = 0;
    QCOMPARE(attnlab::removableHeads(none), -1);
    QCOMPARE(attnlab::removableHeads({}), -1);
}

// Gradient importance: the mean over pairs of the head-gate gradients, divided by the L2 norm of
// its layer's (so each layer's squares sum to 1), least important first; ablation's report has it
// and the Spearman correlation of the two orders, recomputed here; Spearman itself by hand.
void TestHeadLab::gradientImportanceAndRankCorrelation() {
    QCOMPARE(attnlab::spearmanCorrelation({1, 2, 3, 4}, {10, 20, 40, 30}), 0.8);  // 1 - 6*2/(4*15)
    QVERIFY(std::abs(attnlab::spearmanCorrelation({1, 1, 2}, {1, 2, 3}) - 1.5 / std::sqrt(3.0)) < 1e-12);  // tie
    QVERIFY(std::isnan(attnlab::spearmanCorrelation({1, 1, 1}, {1, 2, 3})));
    QCOMPARE(errorOf([] {
                 attnlab::spearmanCorrelation({1, 2}, {1});
             }),
             QString("rank correlation: 2 against 1 values"));

    const auto g = attnlab::gradientImportance(*m_t, m_src, m_ref, {AttentionKind::Cross, AttentionKind::EncoderSelf});
    QCOMPARE(g.sentences, 4);
    QCOMPARE(g.heads.size(), size_t(16));  // 2 layers x 4 heads, two kinds
    const auto raw = m_t->headGateGradients(m_src, m_ref);
    std::map<std::pair<int, int>, double> squares;
    for (size_t i = 0; i < g.heads.size(); ++i) {
        const auto& h = g.heads[i];
        QVERIFY(h.head.kind != AttentionKind::DecoderSelf);
        if (i) QVERIFY(g.heads[i - 1].normalized <= h.normalized);
        const size_t k = size_t(std::find(raw.heads.begin(), raw.heads.end(), h.head) - raw.heads.begin());
        double mean = 0;
        for (const auto& pair : raw.per_pair) mean += pair[k] / 4.0;
        QVERIFY(std::abs(h.raw - mean) <= 1e-12 * mean);
        squares[{int(h.head.kind), h.head.layer}] += h.normalized * h.normalized;
    }
    QCOMPARE(squares.size(), size_t(4));
    for (const auto& [layer, sum] : squares) QVERIFY(std::abs(sum - 1.0) < 1e-12);

    attnlab::ImportanceOptions io;
    io.decoding.beam_size = 1;
    io.decoding.max_length = 10;
    io.kinds = {AttentionKind::Cross};
    io.bootstrap_resamples = 0;
    const auto rep = attnlab::headImportance(*m_t, m_src, m_ref, io);
    QVERIFY(rep.gradient);
    QCOMPARE(rep.gradient->heads.size(), size_t(8));
    std::vector<double> drop, grad;
    for (const auto& h : rep.heads) {
        drop.push_back(h.bleu_drop);
        grad.push_back(rep.gradient->find(h.head)->normalized);
    }
    QCOMPARE(rep.rank_correlation, attnlab::spearmanCorrelation(drop, grad));
    const auto j = nlohmann::json::parse(attnlab::headsJson(attnlab::HeadStatsReport{}, &rep, m_t->info()));
    QCOMPARE(j["importance"]["rank_correlation"].get<double>(), rep.rank_correlation);
    QCOMPARE(j["gradient_importance"]["heads"].size(), size_t(8));
    QCOMPARE(j["gradient_importance"]["heads"][7]["normalized"].get<double>(), rep.gradient->heads[7].normalized);
    QVERIFY(j["importance"]["removable_heads"].is_null());
    // A pair only the reference side spoils is skipped, as for ablation.
    auto refs = m_ref;
    refs[2] = "";
    const auto skipping = attnlab::gradientImportance(*m_t, m_src, refs);
    QCOMPARE(skipping.sentences, 3);
    QCOMPARE(skipping.skipped.size(), size_t(1));
    QCOMPARE(skipping.skipped[0].pair, 3);
    QCOMPARE(skipping.skipped[0].reason, std::string("reference: the sentence is empty"));
}

// Statistics of the value-norm maps: those of the teacher-forced maps weighted by the norms and
// row-normalised here, head by head; of the rollout: one map per layer (head 0).
void TestHeadLab::statisticsOfOtherMeasures() {
    const std::vector<std::string> src{m_src[0], m_src[2]}, ref{m_ref[0], m_ref[2]};
    const auto rep = attnlab::corpusHeadStatistics(*m_t, src, &ref, {}, 4, {}, attnlab::MapMeasure::ValueNorm);
    QVERIFY(rep.measure == attnlab::MapMeasure::ValueNorm);
    attnlab::HeadStatsAccumulator acc(4);
    for (auto r : m_t->teacherForce(src, ref)) {
        const auto norms = m_t->valueNorms(r);
        auto weigh = [](attnlab::LayerHeadMaps& maps, const attnlab::HeadKeyNorms& n) {
            for (size_t l = 0; l < maps.size(); ++l)
                for (size_t h = 0; h < maps[l].size(); ++h)
                    maps[l][h] = attnlab::rowNormalized(attnlab::weightedByValueNorms(maps[l][h], n[l][h]));
        };
        weigh(r.encoder_self, norms.encoder_self);
        weigh(r.decoder_self, norms.decoder_self);
        weigh(r.cross, norms.cross);
        acc.add(r);
    }
    const auto expected = acc.report(true);
    QCOMPARE(rep.heads.size(), expected.heads.size());
    for (size_t i = 0; i < rep.heads.size(); ++i)
        for (size_t k = 0; k < rep.heads[i].values.size(); ++k)  // same kernels, same process: 1e-9
            QVERIFY(std::abs(rep.heads[i].values[k] - expected.heads[i].values[k]) < 1e-9);
    const auto weights = attnlab::corpusHeadStatistics(*m_t, src, &ref, {}, 4);
    QVERIFY(weights.heads[0].value(HeadStatistic::BoundaryShare) != rep.heads[0].value(HeadStatistic::BoundaryShare));
    const auto rollout = attnlab::corpusHeadStatistics(*m_t, src, &ref, {}, 4, {}, attnlab::MapMeasure::Rollout);
    QCOMPARE(rollout.heads.size(), size_t(2 + 2 + 2));  // one map per layer of each kind
    QVERIFY(rollout.heads[1].head == (HeadRef{AttentionKind::EncoderSelf, 1, 0}));
    const auto j = nlohmann::json::parse(attnlab::headsJson(rollout, nullptr, m_t->info()));
    QCOMPARE(j["measure"].get<std::string>(), std::string("rollout"));
}

void TestHeadLab::jsonAndCsv() {
    attnlab::HeadStatsAccumulator acc(2);
    acc.add(firstSentence());
    const auto rep = acc.report();
    const auto j = nlohmann::json::parse(attnlab::headsJson(rep, nullptr, m_t->info()));
    QCOMPARE(j["format"].get<std::string>(), std::string("attnlab-heads"));
    QCOMPARE(j["heads"].size(), size_t(2));
    QCOMPARE(j["heads"][0]["name"].get<std::string>(), std::string("encoder:0:0"));
    QCOMPARE(j["heads"][0]["same_share"].get<double>(), rep.heads[0].value(HeadStatistic::SameShare));
    QCOMPARE(j["heads"][0]["offset_histogram"].size(), size_t(5));
    QVERIFY(!j.contains("importance"));
    const auto csv = QString::fromStdString(attnlab::headStatsCsv(rep)).split('\n', Qt::SkipEmptyParts);
    QCOMPARE(csv.size(), 3);
    QCOMPARE(csv[0],
             QString("kind,layer,head,rows,entropy,mean_offset,mean_abs_offset,boundary_share,punctuation_share,"
                     "previous_share,same_share,diagonal_max"));
    QVERIFY(csv[1].startsWith("encoder,0,0,4,"));
    QCOMPARE(csv[1].split(',')[10].toDouble(), rep.heads[0].value(HeadStatistic::SameShare));
    const auto path = m_dir.filePath("heads.csv").toStdString();
    attnlab::writeHeadLabFile(path, attnlab::headStatsCsv(rep));
    QCOMPARE(attnlab::testing::readFile(path), attnlab::headStatsCsv(rep));
}

// A heads document read back (readHeadsJson: what Head lab › Open results… shows), and one whose head or model
// shape was changed by hand refused by message: the panel sizes its heatmaps from the layers and heads, so a layer
// of -1 wrote outside the grid and one of 10^6 asked for gigabytes.
void TestHeadLab::headsFileOutsideItsModelRefused() {
    attnlab::HeadStatsAccumulator acc(2);
    acc.add(firstSentence());
    const auto rep = acc.report();
    const auto good = nlohmann::json::parse(attnlab::headsJson(rep, nullptr, m_t->info()));
    const std::string path = m_dir.filePath("heads-tampered.json").toStdString();
    auto write = [&](const nlohmann::json& j) {
        std::ofstream(path, std::ios::binary | std::ios::trunc) << j.dump();
        return path;
    };
    const auto read = attnlab::readHeadsJson(write(good));
    QCOMPARE(read.stats.heads.size(), rep.heads.size());
    QVERIFY(read.stats.heads[0].head == rep.heads[0].head);
    auto refused = [&](const nlohmann::json& j, const std::string& expected) {
        try {
            attnlab::readHeadsJson(write(j));
        } catch (const attnlab::InputError& e) {
            QVERIFY2(std::string(e.what()).find(expected) != std::string::npos, e.what());
            QVERIFY2(std::string(e.what()).find(path) == 0, e.what());
            return;
        }
        QFAIL(("accepted, expected: " + expected).c_str());
    };
    const int layers = int(m_t->info().config.model.encoderLayers()), heads = int(m_t->info().config.model.n_head);
    for (const int layer : {-1, layers, 1000000}) {
        auto j = good;
        j["heads"][0]["layer"] = layer;
        refused(j, "encoder layer " + std::to_string(layer) + " head 0 is not a head of its model (" +
                       std::to_string(layers) + " layers of " + std::to_string(heads) + " heads)");
    }
    auto j = good;
    j["heads"][0]["head"] = heads;
    refused(j, "head " + std::to_string(heads) + " is not a head of its model");
    j = good;
    j["model"]["heads"] = 100000;
    refused(j, "100000 heads: not a model's shape");
    // Numbers beyond an int or not whole (issue 55, util/json_number.h): get<int> wrapped a layer of 2^32 to layer 0,
    // an accepted head; a float shape was cast undefined.
    j = good;
    j["heads"][0]["layer"] = int64_t(1) << 32;
    refused(j, ": \"layer\" is 4294967296, not a whole number from -2147483648 to 2147483647");
    j = good;
    j["sentences"] = -1;
    refused(j, ": \"sentences\" is -1, not a whole number from 0 to 2147483647");
    j = good;
    j["model"]["layers"] = 1e300;
    refused(j, ": \"model\".\"layers\" is 1e+300, not a whole number");
}

// Issue 52, item 5: the languages a compared model reads, matched to the loaded model's across the
// schemes (eng_Latn ↔ en ↔ __en__ ↔ en_XX), a one-pair model in its direction or the other way round,
// and a comparison that cannot be made says why (it said "this model translates en into de only; the
// source language 'eng_Latn' is not one of its languages" after the run).
void TestHeadLab::comparedModelsMatchLanguagesAcrossSchemes() {
    using attnlab::planComparison;
    using attnlab::sameLanguage;
    const auto multilingual = [](std::vector<std::string> codes) {
        attnlab::PackageConfig c;
        for (size_t i = 0; i < codes.size(); ++i) c.languages.push_back({codes[i], codes[i], int64_t(10 + i)});
        return c;
    };
    const auto one_pair = [](const std::string& from, const std::string& to) {
        attnlab::PackageConfig c;
        c.source_lang = from;
        c.target_lang = to;
        return c;
    };
    QCOMPARE(sameLanguage("eng_Latn", {"de", "en", "fr"}), std::optional<std::string>("en"));
    QCOMPARE(sameLanguage("en", {"deu_Latn", "eng_Latn"}), std::optional<std::string>("eng_Latn"));
    QCOMPARE(sameLanguage("__en__", {"de_DE", "en_XX"}), std::optional<std::string>("en_XX"));
    QCOMPARE(sameLanguage("ar_AR", {"ary_Arab", "arb_Arab"}), std::optional<std::string>("arb_Arab"));
    QCOMPARE(sameLanguage("zh_CN", {"zho_Hant", "zho_Hans"}), std::optional<std::string>("zho_Hans"));
    QCOMPARE(sameLanguage("eng_Latn", {"eng_Arab"}), std::nullopt);
    QCOMPARE(sameLanguage("de", {"en", "fr"}), std::nullopt);
    // NLLB's chosen pair against M2M100, mBART-50 and NLLB itself.
    auto p = planComparison("eng_Latn", "deu_Latn", multilingual({"de", "en", "fr"}), "m2m");
    QVERIFY2(p.problem.empty(), p.problem.c_str());
    QCOMPARE(p.source_language, std::string("en"));
    QCOMPARE(p.target_language, std::string("de"));
    QVERIFY(!p.reversed);
    p = planComparison("eng_Latn", "deu_Latn", multilingual({"de_DE", "en_XX"}), "mbart");
    QCOMPARE(p.source_language + " " + p.target_language, std::string("en_XX de_DE"));
    p = planComparison("en", "de", multilingual({"deu_Latn", "eng_Latn"}), "nllb");
    QCOMPARE(p.source_language + " " + p.target_language, std::string("eng_Latn deu_Latn"));
    p = planComparison("eng_Latn", "fra_Latn", multilingual({"de_DE", "en_XX"}), "mbart");
    QCOMPARE(p.problem, std::string("mbart has no language matching 'fra_Latn' among its 2 languages"));
    // One-pair models: their own direction, the other way round, or why not.
    p = planComparison("eng_Latn", "deu_Latn", one_pair("en", "de"), "opus-mt-en-de");
    QVERIFY(p.problem.empty() && !p.reversed && p.source_language.empty() && p.target_language.empty());
    p = planComparison("eng_Latn", "deu_Latn", one_pair("de", "en"), "multi30k-de-en");
    QVERIFY(p.problem.empty() && p.reversed);
    p = planComparison("eng_Latn", "deu_Latn", one_pair("fr", "de"), "opus-mt-fr-de");
    QCOMPARE(p.problem,
             std::string("opus-mt-fr-de translates fr → de only; the comparison needs eng_Latn → deu_Latn or the "
                         "other way round"));
    p = planComparison("en", "de", one_pair("src", "tgt"), "snapshot");
    QVERIFY2(p.problem.find("snapshot does not say which languages it translates") == 0, p.problem.c_str());
}

QTEST_GUILESS_MAIN(TestHeadLab)
#include "tst_head_lab.moc"
