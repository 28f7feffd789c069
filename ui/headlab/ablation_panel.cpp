#include "headlab/ablation_panel.h"

#include <QEvent>
#include <QGridLayout>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QToolButton>
#include <QVBoxLayout>
#include "document/numbering.h"
#include "document/translation_cache.h"

#include <algorithm>

namespace attnlab::ui {

namespace {
const char* const kKindTitles[] = {"Encoder self-attention", "Decoder self-attention", "Cross-attention"};
constexpr int kGridGap = 24;  // between two kinds' grids

QString scored(const TranslationResult& r) {
    return QObject::tr("%1  <span style='color:gray'>(score %2, per piece %3)</span>")
        .arg(QString::fromStdString(r.best.text).toHtmlEscaped())
        .arg(r.best.score, 0, 'f', 2)
        .arg(r.confidence.mean_log_prob, 0, 'f', 3);
}
}  // namespace

AblationPanel::AblationPanel(QWidget* parent) : QWidget(parent) {
    m_summary = new QLabel(tr("Translate a sentence, then click heads to switch them off."), this);
    m_summary->setWordWrap(true);
    m_before_label = new QLabel(this);
    m_after_label = new QLabel(this);
    for (auto* l : {m_before_label, m_after_label}) {
        l->setWordWrap(true);
        l->setTextInteractionFlags(Qt::TextSelectableByMouse);
    }
    auto* clear = new QPushButton(tr("All heads on"), this);
    connect(clear, &QPushButton::clicked, this, [this] { setAblated({}); });
    m_scroll = new QScrollArea(this);
    m_scroll->setWidgetResizable(true);
    m_scroll->setFrameShape(QFrame::NoFrame);
    m_scroll->viewport()->setAutoFillBackground(false);  // the page's own background
    m_scroll->viewport()->installEventFilter(this);
    auto* layout = m_layout = new QVBoxLayout(this);
    layout->addWidget(m_scroll, 1);
    layout->addWidget(clear, 0, Qt::AlignLeft);
    layout->addWidget(m_summary);
    layout->addWidget(new QLabel(tr("<b>Before</b> (every head on):"), this));
    layout->addWidget(m_before_label);
    layout->addWidget(new QLabel(tr("<b>After</b> (the heads switched off; new words in bold):"), this));
    layout->addWidget(m_after_label);
    layout->addStretch(0);  // what the grids (stretch 1, up to their height) leave
}

void AblationPanel::setShape(int enc_layers, int dec_layers, int heads) {
    m_before = m_after = {};  // another model's
    showComparison();
    m_grid_host = new QWidget;
    m_grids = new QGridLayout(m_grid_host);
    m_grids->setContentsMargins(0, 0, 0, 0);
    m_grids->setHorizontalSpacing(kGridGap);
    m_blocks.clear();
    m_per_row = 0;
    m_toggles.assign(3, {});
    for (int k = 0; k < 3; ++k) {
        auto* block = new QWidget(m_grid_host);
        auto* grid = new QGridLayout(block);
        grid->setContentsMargins(0, 0, 0, 0);
        grid->addWidget(new QLabel(tr(kKindTitles[k]), block), 0, 1, 1, heads);
        const int layers = k == 0 ? enc_layers : dec_layers;  // encoder self: the encoder's layers
        for (int l = 0; l < layers; ++l) {
            grid->addWidget(new QLabel(layerLabel(l), block), l + 1, 0);
            m_toggles[k].emplace_back();
            for (int h = 0; h < heads; ++h) {
                auto* b = new QToolButton(block);
                b->setCheckable(true);
                b->setText(shownText(h));
                b->setToolTip(tr("%1, %2: click to switch it off").arg(tr(kKindTitles[k]), layerHeadLabel(l, h)));
                b->setStyleSheet("QToolButton:checked { background: #c0392b; color: white; }");
                connect(b, &QToolButton::toggled, this, [this] { emitChange(); });
                grid->addWidget(b, l + 1, 1 + h);
                m_toggles[k].back().push_back(b);
            }
        }
        m_blocks.push_back(block);
    }
    m_scroll->setWidget(m_grid_host);           // the previous grids are deleted
    m_grid_host->setAutoFillBackground(false);  // (setWidget turns it on) the page's own background
    arrangeGrids();
}

bool AblationPanel::eventFilter(QObject* watched, QEvent* event) {
    if (watched == m_scroll->viewport() && event->type() == QEvent::Resize) arrangeGrids();
    return QWidget::eventFilter(watched, event);
}

void AblationPanel::arrangeGrids() {
    if (m_blocks.empty()) return;
    int block = 0;
    for (QWidget* b : m_blocks) block = std::max(block, b->sizeHint().width());
    const int room = m_scroll->viewport()->width();
    const int per_row = std::clamp((room + kGridGap) / (block + kGridGap), 1, int(m_blocks.size()));
    if (per_row == m_per_row) return;
    m_per_row = per_row;
    for (QWidget* b : m_blocks) m_grids->removeWidget(b);
    for (int i = 0; i < int(m_blocks.size()); ++i)
        m_grids->addWidget(m_blocks[size_t(i)], i / per_row, i % per_row, Qt::AlignLeft | Qt::AlignTop);
    for (int c = 0; c <= int(m_blocks.size()); ++c) m_grids->setColumnStretch(c, c == per_row ? 1 : 0);
    // As tall as the grids where the page has room (the rest stays for the translations below).
    const bool too_wide = block > room;
    m_scroll->setMaximumHeight(m_grid_host->sizeHint().height() + 2 * m_scroll->frameWidth() +
                               (too_wide ? m_scroll->horizontalScrollBar()->sizeHint().height() : 0));
}

QToolButton* AblationPanel::toggle(const HeadRef& head) const {
    const size_t k = static_cast<size_t>(head.kind);
    if (k >= m_toggles.size() || head.layer < 0 || size_t(head.layer) >= m_toggles[k].size()) return nullptr;
    const auto& layer = m_toggles[k][size_t(head.layer)];
    return head.head >= 0 && size_t(head.head) < layer.size() ? layer[size_t(head.head)] : nullptr;
}

std::vector<HeadRef> AblationPanel::ablated() const {
    std::vector<HeadRef> heads;
    for (size_t k = 0; k < m_toggles.size(); ++k)
        for (size_t l = 0; l < m_toggles[k].size(); ++l)
            for (size_t h = 0; h < m_toggles[k][l].size(); ++h)
                if (m_toggles[k][l][h]->isChecked())
                    heads.push_back({static_cast<attnlab::AttentionKind>(k), int(l), int(h)});
    return heads;
}

void AblationPanel::setAblated(const std::vector<HeadRef>& heads) {
    m_quiet = true;
    for (auto& kind : m_toggles)
        for (auto& layer : kind)
            for (auto* b : layer) b->setChecked(false);
    for (const auto& h : heads)
        if (auto* b = toggle(h)) b->setChecked(true);
    m_quiet = false;
    emitChange();
}

void AblationPanel::emitChange() {
    if (m_quiet) return;
    const auto heads = ablated();
    QStringList names;
    for (const auto& h : heads) names << headRefLabel(h);
    m_summary->setText(heads.empty() ? tr("Every head is on.") : tr("Switched off: %1").arg(names.join(", ")));
    Q_EMIT ablationChanged(heads);
}

std::string AblationPanel::key(const std::string& sentence, const DecodingOptions& options) {
    DecodingOptions o = options;
    o.ablate.clear();
    return TranslationCache::key({}, sentence, o);
}

AblationPanel::Shown AblationPanel::shown(ResultPtr result, const DecodingOptions& options) {
    std::string k = key(result->source_text, options);
    return {std::move(result), std::move(k)};
}

void AblationPanel::setResult(ResultPtr r, const DecodingOptions& options) {
    if (!r) {
        m_before = m_after = {};
    } else if (r->ablated.empty()) {
        m_before = shown(std::move(r), options);
        // Another sentence, or every head on again ("All heads on"): no ablated translation to show.
        if (m_after.result && (m_after.key != m_before.key || ablated().empty())) m_after = {};
    } else {
        m_after = shown(std::move(r), options);
        if (m_before.key != m_after.key) {
            m_failed_before = {};  // asked again: said when it answers
            Q_EMIT baselineNeeded(QString::fromStdString(m_after.result->source_text), options);
        }
    }
    showComparison();
}

void AblationPanel::setBaselineFailure(const QString& sentence, const DecodingOptions& options,
                                       const QString& message) {
    std::string k = key(sentence.toStdString(), options);
    if (!m_after.result || k != m_after.key) return;  // of a sentence (or options) no longer shown
    m_failed_before = {nullptr, std::move(k)};
    m_before_error = message;
    showComparison();
}

void AblationPanel::setBaseline(ResultPtr r, const DecodingOptions& options) {
    if (!r || !m_after.result) return;
    Shown s = shown(std::move(r), options);
    if (s.key != m_after.key) return;  // of a sentence (or options) no longer shown
    m_before = std::move(s);
    showComparison();
}

std::vector<bool> AblationPanel::changedWords(const QStringList& before, const QStringList& after) {
    const size_t n = size_t(before.size()), m = size_t(after.size());
    std::vector<std::vector<int>> lcs(n + 1, std::vector<int>(m + 1, 0));
    for (size_t i = n; i-- > 0;)
        for (size_t j = m; j-- > 0;)
            lcs[i][j] =
                before[int(i)] == after[int(j)] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
    std::vector<bool> changed(m, true);
    for (size_t i = 0, j = 0; i < n && j < m;) {
        if (before[int(i)] == after[int(j)]) {
            changed[j] = false;
            ++i;
            ++j;
        } else if (lcs[i + 1][j] >= lcs[i][j + 1]) {
            ++i;
        } else {
            ++j;
        }
    }
    return changed;
}

void AblationPanel::showComparison() {
    if (m_after.result && m_before.key != m_after.key) {
        m_before_label->setText(m_failed_before.key == m_after.key
                                    ? tr("<i>(this sentence could not be translated with every head on: %1)</i>")
                                          .arg(m_before_error.toHtmlEscaped())
                                    : tr("<i>(translating this sentence with every head on…)</i>"));
        m_after_label->setText(scored(*m_after.result));
        return;
    }
    m_before_label->setText(m_before.result ? scored(*m_before.result) : QString());
    if (!m_after.result) {
        m_after_label->setText(tr("(no head switched off yet)"));
        return;
    }
    const TranslationResult& before = *m_before.result;
    const TranslationResult& after = *m_after.result;
    const QStringList b = QString::fromStdString(before.best.text).split(' ', Qt::SkipEmptyParts);
    const QStringList a = QString::fromStdString(after.best.text).split(' ', Qt::SkipEmptyParts);
    const auto changed = changedWords(b, a);
    QStringList words;
    for (int i = 0; i < a.size(); ++i)
        words << (changed[size_t(i)] ? "<b style='color:#c0392b'>" + a[i].toHtmlEscaped() + "</b>"
                                     : a[i].toHtmlEscaped());
    m_after_label->setText(tr("%1  <span style='color:gray'>(score %2, per piece %3; %4 of %5 words changed)</span>")
                               .arg(words.join(' '))
                               .arg(after.best.score, 0, 'f', 2)
                               .arg(after.confidence.mean_log_prob, 0, 'f', 3)
                               .arg(std::count(changed.begin(), changed.end(), true))
                               .arg(a.size()));
}

QString AblationPanel::beforeText() const { return m_before_label->text(); }
QString AblationPanel::afterText() const { return m_after_label->text(); }

}  // namespace attnlab::ui
