#pragma once
// AlignmentPanel (Heads tab, "Alignment"): a source sentence and a given translation (typed, or a
// bundled example with its hand-made gold alignment), teacher-forced; the word-level map of the
// chosen head / layer / mean, with the gold links drawn over it (sure: solid frame, possible:
// dashed frame) and the model's links marked (a dot); AER, precision and recall of this pair for
// the chosen method and the best head of the pair.

#include "document/translation_controller.h"
#include "plots/plot_style.h"

#include <attnlab/alignment.h>
#include <attnlab/package.h>

#include <QWidget>

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;

namespace attnlab::ui {

class AlignmentMethodsTable;
class AttentionView;

class AlignmentPanel : public QWidget {
    Q_OBJECT
public:
    explicit AlignmentPanel(QWidget* parent = nullptr);

    void setModelShape(int layers, int heads);               // the methods offered
    void setExamples(const std::vector<Example>& examples);  // those with a gold alignment are offered
    void setPair(const QString& source, const QString& target, const QString& gold);
    void chooseExample(int index);        // index into the examples with gold
    void setMethod(const QString& name);  // "head:L:H", "layer:L", "all"
    void setForced(ResultPtr forced);     // the teacher-forced pair
    void showFailure(const QString& message);
    void setColorMap(Palette palette);
    void requestAlign();  // emits alignRequested with the fields

    AttentionView* map() const { return m_map; }
    // Every method scored on the examples with gold (the view asks the controller for the report).
    AlignmentMethodsTable* methods() const { return m_methods; }
    const std::vector<Example>& examplesWithGold() const { return m_examples; }
    QString summaryText() const;
    const WordAlignment& alignment() const { return m_alignment; }
    int overlayCount() const { return m_overlays; }  // gold frames and link marks drawn

Q_SIGNALS:
    void alignRequested(const QString& source, const QString& target);

private:
    void refresh();
    void drawOverlays(const GoldAlignment* gold);
    std::vector<Example> m_examples;  // with gold only
    ResultPtr m_forced;
    WordAlignment m_alignment;
    int m_overlays = 0;
    QComboBox* m_example;
    QLineEdit* m_source;
    QLineEdit* m_target;
    QLineEdit* m_gold;
    QComboBox* m_method;
    QDoubleSpinBox* m_threshold;
    QLabel* m_summary;
    AttentionView* m_map;
    AlignmentMethodsTable* m_methods;
};

}  // namespace attnlab::ui
