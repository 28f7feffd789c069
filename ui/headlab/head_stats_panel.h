#pragma once
// HeadStatsPanel (Heads tab, "Statistics"): what every head does over a corpus — a layer x head
// heatmap of the chosen statistic for one kind (HeadHeatmaps: the room beside the table), a sortable
// table of every head, and with references the importance of each head (BLEU with it ablated) and
// the pruning curve, with a note when the corpus is too small for its intervals to be narrow. With
// another model compared, its difference (other minus this) gets a column per statistic and a map of
// its own. Files are chosen here; the run itself happens in TranslationController (progress bar, Cancel).

#include "document/translation_controller.h"
#include "plots/plot_style.h"

#include <attnlab/head_lab.h>
#include <attnlab/package.h>

#include <QWidget>

class QCheckBox;
class QComboBox;
class QCustomPlot;
class QLabel;
class QProgressBar;
class QPushButton;
class QSplitter;
class QTableWidget;

namespace attnlab::ui {

class AttentionView;
class HeadHeatmaps;

class HeadStatsPanel : public QWidget {
    Q_OBJECT
public:
    explicit HeadStatsPanel(QWidget* parent = nullptr);

    void setExamples(const std::vector<Example>& examples);  // "Use the model's examples"
    // "Compare with": the models the app knows other than `current` (knownModels()), then "Other folder…"
    // (any model directory, chosen in a dialog). Choosing one asks for its check (compareCheckRequested).
    void setCompareChoices(const ModelInfo& current);
    // The model in `dir` chosen to compare with (as "Other folder…" does; added to the list when missing).
    void chooseCompareModel(const QString& dir);
    // The answer to compareCheckRequested (TranslationController::comparisonChecked): the languages the
    // other model will read and write, or why it cannot be compared (then the run goes without it).
    void setComparisonCheck(const QString& dir, bool reversed, const QString& source, const QString& target,
                            const QString& problem);
    QString comparisonText() const { return m_compare_text; }  // what the last check said
    // The languages translated changed: the model chosen is checked again (compareCheckRequested).
    void recheckComparison();
    // The models the app knows, as (label, folder): the bundled ones, the Argos packages installed, the
    // recent models and the complete snapshots of the Hugging Face cache; each folder once.
    static QList<QPair<QString, QString>> knownModels();
    // The other model's statistics of the run about to be reported (null: none; TranslationController
    // sends them just before the run's own): with them setReport adds a "Δ" column per statistic and
    // the difference map, other minus this. `left_out`: why the comparison with `model_dir` asked for was
    // left out of the run (said after the run's own report), empty otherwise.
    void setComparison(HeadStatsPtr other, const QString& model_dir, bool reversed, const QString& left_out = {});
    QComboBox* compareChoice() const { return m_compare; }
    // The corpus to run on (lines of text); references may be empty.
    void setCorpus(const std::vector<std::string>& sources, const std::vector<std::string>& references,
                   const QString& description);
    void setReport(HeadStatsPtr stats, ImportancePtr importance, ModelInfoPtr model);
    void showProgress(const QString& stage, int done, int total);
    void showFailure(const QString& message);
    void setEmptyMessage(const QString& message);  // what the heatmap says before a run
    void setColorMap(Palette palette);
    // The statistic (index into headStatisticInfos(), kImportanceColumn or kGradientColumn) and kind shown.
    void select(int statistic, attnlab::AttentionKind kind);
    static constexpr int kImportanceColumn = kHeadStatisticCount;
    static constexpr int kGradientColumn = kHeadStatisticCount + 1;  // with the importance's gradient
    // Importance over fewer sentences than this says, beside its curve, that its intervals are wide
    // and how to narrow them (docs/reliability.md).
    static constexpr int kFewSentences = 100;

    // Runs on the corpus set (the Run button); importance when `importance` and references exist.
    void startRun(bool importance);
    // Exports; the UI's error convention: the reason, or nothing.
    [[nodiscard]] std::optional<QString> exportJson(const QString& path) const;
    [[nodiscard]] std::optional<QString> exportCsv(const QString& path) const;
    // Open results…: a heads document (attnlab-cli heads --json, the merge of a sharded run's parts, an export)
    // shown as a run of the app's own: statistics, heatmaps, table, importance and its curve. Its typical
    // sentences' text is not in the file: double-clicking a row shows none. An alignment document (attnlab-cli
    // align --json, whole or merged) is handed on whole (alignmentOpened: the Alignment page shows its scores).
    // The problem, or nothing.
    [[nodiscard]] std::optional<QString> openResults(const QString& path);

    // What is shown (tests read it back).
    AttentionView* heatmap() const;        // the statistic of this model
    AttentionView* differenceMap() const;  // other minus this, shown while a comparison is
    HeadHeatmaps* heatmaps() const { return m_maps; }
    QString importanceNote() const;  // the small-corpus note ("" when not shown)
    QCustomPlot* figure() const;     // the heatmap, once a run has finished
    QTableWidget* table() const { return m_table; }
    QComboBox* measureChoice() const { return m_measure; }  // "Of:" the next run
    QCustomPlot* curve() const { return m_curve; }
    QString statusText() const;
    HeadStatsPtr stats() const { return m_stats; }

Q_SIGNALS:
    void runRequested(const attnlab::ui::HeadLabRequest& request);
    void cancelRequested();
    // A table row was activated: show this sentence (the head's most typical one for the chosen
    // statistic) with the head selected.
    void sentenceRequested(const QString& sentence, const attnlab::HeadRef& head);
    // A model was chosen to compare with: can it be, and in which languages?
    void compareCheckRequested(const QString& dir);
    // Open results… read alignment scores from `path` (readAlignmentJson's report: counts, no links) of `model`.
    void alignmentOpened(attnlab::ui::AlignmentReportPtr report, const QString& path, attnlab::ui::ModelInfoPtr model);

protected:
    void resizeEvent(QResizeEvent* event) override;

private:
    static constexpr int kMapsPercent = 45;  // of the width, beside the table
    void buildControls();
    void chooseFiles();
    void refreshHeatmap();
    void refreshTable();
    void refreshCurve();
    void refreshImportanceNote();
    void fillDifferenceColumns(int row, const HeadRef& head, int first_column);
    double valueOf(const HeadStats& h, int statistic) const;

    std::vector<std::string> m_sources, m_refs;
    std::vector<std::string> m_run_sources;      // the corpus of the run shown (typical sentences index it)
    std::vector<std::string> m_pending_sources;  // the corpus of the run under way
    std::vector<Example> m_examples;
    HeadStatsPtr m_stats;
    ImportancePtr m_importance;
    ModelInfoPtr m_model;
    QLabel* m_corpus;
    QCheckBox* m_importance_box;
    QComboBox* m_compare;  // data: the model directory ("" = none; kOtherFolder: choose one)
    void compareChosen(int index);
    void fitCompareList();
    QString m_compare_problem;  // of the model chosen: why it cannot be compared ("" = it can, or unchecked)
    QString m_compare_text;
    HeadStatsPtr m_other;
    std::vector<HeadStatsDifference> m_differences;  // of m_stats and m_other (compareHeadStatistics)
    QString m_other_name;
    QString m_left_out;  // setComparison's: "the comparison with … was left out: why", or ""
    QPushButton* m_run;
    QPushButton* m_cancel;
    QProgressBar* m_progress;
    QLabel* m_status;
    QComboBox* m_statistic;
    QComboBox* m_measure;  // what the next run takes its statistics of
    QComboBox* m_kind;
    HeadHeatmaps* m_maps;
    QTableWidget* m_table;
    QLabel* m_importance_note;
    QCustomPlot* m_curve;
    QWidget* m_curve_pane;  // the note on few sentences and the curve
    QSplitter* m_split;     // the maps | the table and the curve
    bool m_split_moved = false;
};

}  // namespace attnlab::ui
