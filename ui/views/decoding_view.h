#pragma once
// DecodingView: the decoding of the current sentence, step by step. A step slider (arrow keys,
// Home/End when it has the focus); at each step the prefix so far, the top-k next tokens with
// their probabilities, the search as a tree (every hypothesis with its token, log-probability,
// cumulative and length-normalised score; pruned and finished ones marked) and that step's
// cross-attention row for every layer and head. What-if: clicking a candidate, or typing a
// prefix, asks for a translation forced to begin that way; the free and the forced translation
// stand side by side with their scores. Shows TranslationResult's numbers only. The every-head
// strip shows every layer at once while each of its rows (at most kStripRows) has the height of a
// readable label (AttentionView::readableRowPx: a projector's 1920 x 1080 at 18 pt, or a larger
// model, 6 layers x 16 heads, page by layer), else one layer, chosen in the step row. The beam
// search's table keeps every column in sight beside the bars (as wide as they are at most). A
// translation of the user's own is scored beside the model's (teacher forcing: each piece's
// probability, the least likely one named): why did the model not say that?

#include "document/view.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QSlider;
class QTreeWidget;

namespace attnlab::ui {

class AttentionView;
class BarPlot;

class DecodingView : public View {
    Q_OBJECT
public:
    DecodingView(ViewContext* context, QWidget* parent = nullptr);

    // A translation with no forced prefix becomes the free one; a forced one is shown beside it.
    void setResult(ResultPtr result);
    void clear(const QString& message);
    void setStep(int step);
    int step() const;
    int stepCount() const;
    void setColorMap(Palette palette);
    QCustomPlot* figure() const override;  // the candidates of the step shown
    QString noFigureReason() const override;
    void saveState(ViewState& state) const override;
    void applyState(const ViewState& state) override;
    Parts parts() const override;

    // What is shown (tests read it).
    QString prefixText() const;
    QString comparisonText() const;
    QLineEdit* scoreField() const { return m_score; }
    BarPlot* candidates() const { return m_candidates; }
    QTreeWidget* tree() const { return m_tree; }
    AttentionView* crossRows() const { return m_cross; }
    // The strip's page: the layer shown, or -1 for every layer; setStripLayer(-1) shows them all.
    static constexpr int kStripRows = 32;
    int stripLayer() const;
    void setStripLayer(int layer);
    QComboBox* stripPages() const { return m_strip_layer; }
    QSlider* slider() const { return m_slider; }
    ResultPtr freeResult() const { return m_free; }

Q_SIGNALS:
    // Translate the current sentence again, forced to begin with these target ids / this text;
    // both empty = freely.
    void forceRequested(const std::vector<int>& ids, const QString& text);

protected:
    void changeEvent(QEvent* event) override;

private:
    void fitUpperHeight();  // the bars and the beams: 11 lines of text at most
    QWidget* m_upper = nullptr;
    void follow(ViewContext* context);
    void showStep();
    void showStrip(int step);
    void buildTree(int up_to_step);
    void updateComparison();
    QString scoredText() const;  // the user's own translation's line of the comparison
    void requestScore();
    void updateStripPages(int layers, int heads);  // the page list for this shape; the page kept when it fits
    // Every layer where its rows have readable room, else one layer: until a page is chosen by hand.
    void fitStripPage();
    bool m_strip_chosen = false;  // a page chosen in the list: kept
    // The beams' pane as wide as its columns, the bars the rest (down to their minimum).
    void fitTreeWidth();
    bool eventFilter(QObject* watched, QEvent* event) override;

    ResultPtr m_result, m_free;
    ResultPtr m_scored;  // the user's own translation of m_free's sentence, teacher-forced
    QSlider* m_slider;
    QLabel* m_step_label;
    QLabel* m_prefix;
    QLabel* m_comparison;
    QLineEdit* m_force;
    QLineEdit* m_score;
    BarPlot* m_candidates;
    QTreeWidget* m_tree;
    int m_tree_builds = 0;  // buildTree's count: a scroll queued by an older build is dropped
    AttentionView* m_cross;
    QComboBox* m_strip_layer;
    int m_strip_layers = -1, m_strip_heads = -1;  // the shape the page list was made for
};

}  // namespace attnlab::ui
