#pragma once
// WholeModelMaps: a contribution method's maps through the whole model (issue 54, docs/contributions.md
// "Through the model"): Contributions::source (target rows x source pieces) and Contributions::target
// (target rows x decoder inputs) side by side in one heatmap, a line between the two parts, its key axis saying
// that each row's two parts sum to 1 together (ALTI+'s rollout, value zeroing carried through the decoder).
// The attention explorer shows it below its grid of layers while ALTI+ or value zeroing is the Method.

#include "plots/plot_style.h"

#include <attnlab/attention_flow.h>
#include <attnlab/contributions.h>

#include <QStringList>
#include <QWidget>

class QCPItemStraightLine;

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
    // The heatmap: the source part's columns first (sourceColumns() of them), then the target part's.
    AttentionView* map() const { return m_map; }
    int sourceColumns() const { return m_source_columns; }
    QString caption() const;  // the map's title and what its columns are
    void setColorMap(Palette palette);
    void setFixedRange(bool fixed);

private:
    AttentionView* m_map;
    QCPItemStraightLine* m_between;  // between the source and the target part
    int m_source_columns = 0;
};

}  // namespace attnlab::ui
