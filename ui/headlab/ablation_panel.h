#pragma once
// AblationPanel (Heads tab, "Ablation"): switch heads off in a layer x head grid of toggles, one
// grid per kind; every change asks for the sentence again with those heads ablated, and the
// translation and score before (no head off) and after are shown side by side, the words of
// "after" that are not in "before" marked. Both lines are always of one sentence and one set of
// options: an "after" with no "before" of its own asks for one (baselineNeeded) and says so meanwhile. The three grids
// stand side by side where the width allows and wrap below one another where it does not (6 layers x 16 heads: two,
// then one), in a scroll area, so that no model's shape widens the window.

#include "document/translation_controller.h"

#include <attnlab/decoding_options.h>

#include <attnlab/attention_kind.h>

#include <QWidget>

#include <string>
#include <vector>

class QGridLayout;
class QLabel;
class QScrollArea;
class QToolButton;
class QVBoxLayout;

namespace attnlab::ui {

class AblationPanel : public QWidget {
    Q_OBJECT
public:
    explicit AblationPanel(QWidget* parent = nullptr);

    void setShape(int enc_layers, int dec_layers, int heads);  // rebuilds the grids, every head on
    // Every translation result the context shows, with the options it was asked with: one with no
    // head ablated becomes "before", one with heads ablated "after"; null empties both lines.
    void setResult(ResultPtr result, const DecodingOptions& options);
    // The answer to baselineNeeded: "before", when it is still of the sentence and options of "after".
    void setBaseline(ResultPtr result, const DecodingOptions& options);
    // The other answer to baselineNeeded (TranslationController::baselineFailed): "before" says it could not
    // be translated and why, when it is still of the sentence and options of "after".
    void setBaselineFailure(const QString& sentence, const DecodingOptions& options, const QString& message);
    void setAblated(const std::vector<HeadRef>& heads);  // toggles the buttons; emits ablationChanged
    std::vector<HeadRef> ablated() const;
    QToolButton* toggle(const HeadRef& head) const;  // nullptr when out of range
    // The grids of the three kinds as laid out (tests read where they are).
    const std::vector<QWidget*>& kindGrids() const { return m_blocks; }
    int gridsPerRow() const { return m_per_row; }

    QString beforeText() const;
    // The translation "Before" shows; null while it waits for the one of the sentence of "after".
    ResultPtr beforeResult() const { return m_after.result && m_before.key != m_after.key ? nullptr : m_before.result; }
    QString afterText() const;  // rich text: changed words in <b>
    // The words of `after` that are not in the longest common subsequence with `before`.
    static std::vector<bool> changedWords(const QStringList& before, const QStringList& after);

Q_SIGNALS:
    void ablationChanged(const std::vector<attnlab::HeadRef>& heads);
    // "After" is shown without a "before" of its sentence and options: translate it with every head on.
    void baselineNeeded(const QString& sentence, const attnlab::DecodingOptions& options);

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;  // the scroll area's width: arrange

private:
    void arrangeGrids();  // as many kinds side by side as the scroll area's width holds
    void emitChange();
    void showComparison();
    std::vector<std::vector<std::vector<QToolButton*>>> m_toggles;  // [kind][layer][head]
    QScrollArea* m_scroll;
    QWidget* m_grid_host = nullptr;  // the scroll area's widget, recreated by setShape
    QGridLayout* m_grids = nullptr;  // m_grid_host's layout: the kinds' grids
    std::vector<QWidget*> m_blocks;  // one grid per kind
    int m_per_row = 0;
    QVBoxLayout* m_layout;
    QLabel* m_summary;
    QLabel* m_before_label;
    QLabel* m_after_label;
    struct Shown {
        ResultPtr result;
        std::string key;  // the sentence and every option but the heads off (TranslationCache::key)
    };
    // The sentence and every option but the heads off: what "before" and "after" must share.
    static std::string key(const std::string& sentence, const DecodingOptions& options);
    static Shown shown(ResultPtr result, const DecodingOptions& options);
    Shown m_before, m_after;
    Shown m_failed_before;   // the sentence and options "before" could not be translated with: key only
    QString m_before_error;  // why, said on the "before" line while "after" is of them
    bool m_quiet = false;
};

}  // namespace attnlab::ui
