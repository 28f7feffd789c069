#pragma once
// HeadPicker: the one control row that chooses a map — kind (core's AttentionKind), layer, head,
// optionally the mean over heads (head == n_head). Every view that shows one head's map has its
// own, and so its own selection.

#include <attnlab/attention_kind.h>

#include <QWidget>

class QComboBox;

namespace attnlab::ui {

class ShownSpinBox;

// The words a person reads for a kind: "Encoder self-attention" (the files say "encoder").
QString kindTitle(AttentionKind kind);

class HeadPicker : public QWidget {
    Q_OBJECT
public:
    HeadPicker(AttentionKind initial, bool with_mean, QWidget* parent = nullptr);

    AttentionKind kind() const;
    int layer() const;
    int head() const;  // n_head = the mean over heads, when offered
    bool isMean() const;
    // The model's shape: layer 0..layers-1, head 0..heads-1 (and heads = the mean when offered).
    // The values are core's 0-based indices; the boxes show them as people count (numbering.h).
    void setShape(int layers, int heads);
    // Off for maps with no heads to choose (a rollout: one map per layer): the head field is hidden.
    void setHeadsShown(bool shown);
    // Without changed(): the owner redraws once, calling setShape for the kind's own shape first
    // (which clamps layer and head to it).
    void select(AttentionKind kind, int layer, int head);
    void setKind(AttentionKind kind);
    void stepLayer(int delta);
    void stepHead(int delta);

Q_SIGNALS:
    void changed();

private:
    bool m_with_mean;
    QWidget* m_head_label = nullptr;
    int m_heads = 0;
    QComboBox* m_kind;
    ShownSpinBox* m_layer;
    ShownSpinBox* m_head;
};

}  // namespace attnlab::ui
