#pragma once
// WholeModelMaps: a contribution method's maps through the whole model (issue 54, docs/contributions.md
// "Through the model"): Contributions::source (target rows x source pieces) and Contributions::target
// (target rows x decoder inputs) side by side, under a caption that says what they are: each row's two
// parts sum to 1 together (ALTI+'s rollout, value zeroing's carried through the decoder). The attention
// explorer shows it below its grid of layers while ALTI+ or value zeroing is the Method.

#include "plots/plot_style.h"

#include <attnlab/attention_flow.h>
#include <attnlab/contributions.h>

#include <QStringList>
#include <QWidget>

class QLabel;

namespace attnlab::ui {

class AttentionView;

class WholeModelMaps : public QWidget {
    Q_OBJECT
public:
    explicit WholeModelMaps(QWidget* parent = nullptr);

    // `rows`: the target pieces (queries), `source` the source pieces, `inputs` the decoder's inputs.
    void setContributions(const Contributions& contributions, const QStringList& rows, const QStringList& source,
                          const QStringList& inputs);
    void clear();
    AttentionView* sourcePart() const { return m_source; }
    AttentionView* targetPart() const { return m_target; }
    QString caption() const;
    void setColorMap(Palette palette);
    void setFixedRange(bool fixed);

private:
    QLabel* m_caption;
    AttentionView* m_source;
    AttentionView* m_target;
};

}  // namespace attnlab::ui
