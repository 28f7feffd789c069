// Head statistics over a corpus: attnlab/head_stats.h defines every number.
#include <attnlab/errors.h>
#include <attnlab/head_stats.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <tuple>

namespace attnlab {

namespace {

const std::string kWordStart = "\xE2\x96\x81";  // "▁"

bool startsWith(const std::string& s, size_t at, const std::string& prefix) {
    return s.compare(at, prefix.size(), prefix) == 0;
}

constexpr size_t idx(HeadStatistic s) { return static_cast<size_t>(s); }

}  // namespace

const std::array<HeadStatisticInfo, kHeadStatisticCount>& headStatisticInfos() {
    static const std::array<HeadStatisticInfo, kHeadStatisticCount> infos{{
        {HeadStatistic::Entropy, "entropy", "Entropy (nats)",
         "Mean entropy of a row: 0 = all weight on one key, ln(n) = spread evenly over n keys"},
        {HeadStatistic::MeanOffset, "mean_offset", "Mean offset",
         "Mean signed distance key - query (negative: looks back; cross: source minus target position)"},
        {HeadStatistic::MeanAbsOffset, "mean_abs_offset", "Mean |offset|", "Mean distance |key - query|"},
        {HeadStatistic::BoundaryShare, "boundary_share", "Share on boundary",
         "Weight on the boundary token: </s> (encoder self-, cross-attention); decoder self-attention, whose "
         "keys hold no </s>: its start token (<s>, Marian's <pad>)"},
        {HeadStatistic::PunctuationShare, "punctuation_share", "Share on punctuation",
         "Weight on pieces made of punctuation only"},
        {HeadStatistic::PreviousShare, "previous_share", "Share on previous",
         "Weight on the key just before the query's position"},
        {HeadStatistic::SameShare, "same_share", "Share on same position", "Weight on the query's own position"},
        {HeadStatistic::DiagonalMax, "diagonal_max", "Rows with max on diagonal",
         "Share of rows whose largest weight is at the query's own position"},
    }};
    return infos;
}

const HeadStatisticInfo& headStatisticInfo(HeadStatistic s) { return headStatisticInfos()[idx(s)]; }

const HeadStats* HeadStatsReport::find(const HeadRef& head) const& {
    for (const auto& h : heads)
        if (h.head == head) return &h;
    return nullptr;
}

bool isPunctuationPiece(const std::string& piece) {
    static const char* const kMarks[] = {"\xE2\x80\x9E", "\xE2\x80\x9C", "\xE2\x80\x9D", "\xE2\x80\x98",
                                         "\xE2\x80\x99", "\xC2\xAB",     "\xC2\xBB",     "\xE2\x80\xA6",
                                         "\xE2\x80\x93", "\xE2\x80\x94", "\xC2\xB7"};
    if (piece == "<s>" || piece == "</s>" || piece == "<pad>" || piece == "<unk>") return false;
    size_t at = startsWith(piece, 0, kWordStart) ? kWordStart.size() : 0;
    if (at == piece.size()) return false;
    while (at < piece.size()) {
        const unsigned char c = static_cast<unsigned char>(piece[at]);
        if (c < 0x80) {
            if (!std::ispunct(c)) return false;
            ++at;
            continue;
        }
        bool matched = false;
        for (const char* mark : kMarks) {
            const std::string m(mark);
            if (startsWith(piece, at, m)) {
                at += m.size();
                matched = true;
                break;
            }
        }
        if (!matched) return false;
    }
    return true;
}

HeadStatsAccumulator::HeadStatsAccumulator(int histogram_radius) : m_radius(histogram_radius) {
    if (histogram_radius < 1 || histogram_radius > 100)
        throw ConfigError("histogram radius " + std::to_string(histogram_radius) + " is out of range (1..100)");
}

void HeadStatsAccumulator::add(const TranslationResult& r) {
    addMaps(AttentionKind::EncoderSelf, r.encoder_self, r.source_pieces, "</s>");
    // The decoder's keys begin with its start token: <s> (this project's models) or <pad> (Marian's).
    addMaps(AttentionKind::DecoderSelf, r.decoder_self, r.decoder_input_pieces,
            r.decoder_input_pieces.empty() ? std::string("<s>") : r.decoder_input_pieces.front());
    addMaps(AttentionKind::Cross, r.cross, r.source_pieces, "</s>");
    ++m_sentences;
}

void HeadStatsAccumulator::addMaps(AttentionKind kind, const LayerHeadMaps& maps, const std::vector<std::string>& keys,
                                   const std::string& boundary) {
    const std::string where = "sentence " + std::to_string(m_sentences + 1) + ", " + attentionKindName(kind);
    std::vector<char> punct(keys.size()), is_boundary(keys.size());
    for (size_t j = 0; j < keys.size(); ++j) {
        punct[j] = isPunctuationPiece(keys[j]);
        is_boundary[j] = keys[j] == boundary;
    }
    for (size_t l = 0; l < maps.size(); ++l) {
        for (size_t h = 0; h < maps[l].size(); ++h) {
            const HeadRef ref{kind, static_cast<int>(l), static_cast<int>(h)};
            auto it = std::find_if(m_heads.begin(), m_heads.end(), [&](const Head& x) { return x.ref == ref; });
            if (it == m_heads.end()) {
                if (m_sentences > 0)
                    throw InputError(where + ": head " + headName(ref) + " is new (the model changed?)");
                Head fresh;
                fresh.ref = ref;
                fresh.histogram.assign(2 * m_radius + 1, 0.0);
                m_heads.push_back(std::move(fresh));
                it = m_heads.end() - 1;
            }
            Head& head = *it;
            head.sentence_rows.resize(m_sentences + 1, 0);
            head.sentence_sums.resize(m_sentences + 1);
            auto& ssum = head.sentence_sums[m_sentences];
            const Matrix& m = maps[l][h];
            for (size_t i = 0; i < m.size(); ++i) {
                if (m[i].size() != keys.size())
                    throw InputError(where + " layer " + std::to_string(l) + " head " + std::to_string(h) + ": row " +
                                     std::to_string(i) + " has " + std::to_string(m[i].size()) + " weights for " +
                                     std::to_string(keys.size()) + " keys");
                std::array<double, kHeadStatisticCount> row{};
                size_t arg = 0;
                for (size_t j = 0; j < m[i].size(); ++j) {
                    const double w = m[i][j];
                    const long off = static_cast<long>(j) - static_cast<long>(i);
                    if (w > 0) row[idx(HeadStatistic::Entropy)] -= w * std::log(w);
                    row[idx(HeadStatistic::MeanOffset)] += w * double(off);
                    row[idx(HeadStatistic::MeanAbsOffset)] += w * double(std::labs(off));
                    if (is_boundary[j]) row[idx(HeadStatistic::BoundaryShare)] += w;
                    if (punct[j]) row[idx(HeadStatistic::PunctuationShare)] += w;
                    if (off == -1) row[idx(HeadStatistic::PreviousShare)] += w;
                    if (off == 0) row[idx(HeadStatistic::SameShare)] += w;
                    if (w > m[i][arg]) arg = j;
                    const long bin = std::clamp<long>(off, -m_radius, m_radius) + m_radius;
                    head.histogram[static_cast<size_t>(bin)] += w;
                }
                row[idx(HeadStatistic::DiagonalMax)] = (arg == i && !m[i].empty()) ? 1.0 : 0.0;
                for (size_t s = 0; s < row.size(); ++s) ssum[s] += row[s];
                head.rows += 1;
                head.sentence_rows[m_sentences] += 1;
            }
        }
    }
}

HeadStatsReport HeadStatsAccumulator::report(bool teacher_forced, bool keep_sentences) const {
    HeadStatsReport rep;
    rep.sentences = m_sentences;
    rep.histogram_radius = m_radius;
    rep.teacher_forced = teacher_forced;
    auto order = [](AttentionKind k) { return static_cast<int>(k); };
    std::vector<const Head*> heads;
    for (const auto& h : m_heads) heads.push_back(&h);
    std::sort(heads.begin(), heads.end(), [&](const Head* a, const Head* b) {
        return std::tuple(order(a->ref.kind), a->ref.layer, a->ref.head) <
               std::tuple(order(b->ref.kind), b->ref.layer, b->ref.head);
    });
    for (const Head* h : heads) {
        HeadStats s;
        s.head = h->ref;
        s.rows = h->rows;
        const double n = h->rows > 0 ? double(h->rows) : 1.0;
        // The sentences' sums added in sentence order, as a merge of a sharded run's parts adds them in line order
        // (headlab_merge::mergeHeads): the same bits whole and merged, so the same typical sentences on a near tie.
        std::array<double, kHeadStatisticCount> sums{};
        for (const auto& sentence : h->sentence_sums)
            for (size_t k = 0; k < sums.size(); ++k) sums[k] += sentence[k];
        for (size_t k = 0; k < s.values.size(); ++k) s.values[k] = sums[k] / n;
        for (double w : h->histogram) s.offset_histogram.push_back(w / n);
        int most_rows = 0;
        for (int r : h->sentence_rows) most_rows = std::max(most_rows, r);
        const int min_rows = std::min(3, most_rows);
        for (size_t k = 0; k < s.values.size(); ++k) {
            int best = -1;
            double best_gap = std::numeric_limits<double>::infinity();
            for (size_t sent = 0; sent < h->sentence_rows.size(); ++sent) {
                const int rows = h->sentence_rows[sent];
                if (rows == 0 || rows < min_rows) continue;
                const double gap = std::abs(h->sentence_sums[sent][k] / rows - s.values[k]);
                if (gap < best_gap) {
                    best_gap = gap;
                    best = static_cast<int>(sent);
                }
            }
            s.typical_sentence[k] = best;
        }
        if (keep_sentences) {
            s.sentence_rows = h->sentence_rows;
            s.sentence_sums = h->sentence_sums;
            s.sentence_rows.resize(size_t(m_sentences), 0);  // a head the last sentences had no rows for
            s.sentence_sums.resize(size_t(m_sentences));
        }
        rep.heads.push_back(std::move(s));
    }
    return rep;
}

}  // namespace attnlab
