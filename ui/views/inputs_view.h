#pragma once
// InputsView: what the model's layers receive. Inside one token: a source or target piece's
// embedding row, its scaling by sqrt(d_model) (scale_emb_or_prj = emb), the positional encoding
// added for its position, and the layer norm after them (where the model has one: Marian has none),
// each as a plot with the numbers on hover.
// Masks: the padding mask and the look-ahead mask for the current sentence decoded in one batch
// with a second sentence of another length, drawn as matrices (1 = may attend). The numbers come
// from the core (Translator::tokenInside, Translator::masks).

#include "document/view.h"

class QComboBox;
class QLabel;
class QLineEdit;

namespace attnlab::ui {

class AttentionView;
class BarPlot;

class InputsView : public View {
    Q_OBJECT
public:
    // Follows the context: a new translation is inspected when the view is shown (at once when it is).
    InputsView(ViewContext* context, QWidget* parent = nullptr);

    void setResult(ResultPtr result);  // the pieces to choose from; asks for the first source piece
    void setSecondSentence(const QString& sentence);
    QString secondSentence() const;
    // Select a piece: target = a decoder input piece, else a source piece.
    void selectToken(bool target, int position);
    bool selectedTarget() const;
    int selectedPosition() const;
    void setColorMap(Palette palette);
    QCustomPlot* figure() const override;  // the layer-normed input of the chosen token
    QString noFigureReason() const override;
    void saveState(ViewState& state) const override;
    void applyState(const ViewState& state) override;
    Parts parts() const override;

    void showToken(TokenInsidePtr token);
    void showMasks(MasksPtr masks);
    TokenInsidePtr token() const { return m_token; }
    MasksPtr masks() const { return m_masks; }
    QString tokenText() const;  // the words above the token's plots

    BarPlot* embedding() const { return m_embedding; }
    BarPlot* positional() const { return m_positional; }
    BarPlot* normalized() const { return m_normalized; }
    // [sentence][0 = encoder padding mask, 1 = decoder mask]
    AttentionView* maskView(int sentence, int which) const { return m_mask_views[sentence][which]; }

Q_SIGNALS:
    void tokenRequested(bool target, int position);
    void masksRequested(const QString& second_sentence);

protected:
    void showEvent(QShowEvent* event) override;

private:
    void follow(ViewContext* context);
    void refresh();  // asks for the numbers of the shown result
    bool m_stale = false;
    bool m_emb_layer_norm = true;  // the model's: a layer norm after embedding + position
    ResultPtr m_result;
    TokenInsidePtr m_token;
    MasksPtr m_masks;
    QComboBox* m_piece;
    QLabel* m_token_text;
    BarPlot* m_embedding;
    BarPlot* m_scaled;
    BarPlot* m_positional;
    BarPlot* m_normalized;
    QLineEdit* m_second;
    QWidget* m_mask_panel;  // the text and the four masks
    QLabel* m_mask_text;
    AttentionView* m_mask_views[2][2];
};

}  // namespace attnlab::ui
