#pragma once
// HeadStatsPanel (Heads tab, "Statistics"): what every head does over a corpus — a layer x head
// heatmap of the chosen statistic for one kind, a sortable table of every head, and with
// references the importance of each head (BLEU with it ablated) and the pruning curve. Files are
// chosen here; the run itself happens in TranslationController (progress bar, Cancel).

#include "document/translation_controller.h"
#include "plots/plot_style.h"

#include <attnlab/package.h>

#include <QWidget>

class QCheckBox;
class QComboBox;
class QCustomPlot;
class QLabel;
class QProgressBar;
class QPushButton;
class QTableWidget;

namespace attnlab::ui {

class AttentionView;

class HeadStatsPanel : public QWidget {
    Q_OBJECT
public:
    explicit HeadStatsPanel(QWidget* parent = nullptr);

    void setExamples(const std::vector<Example>& examples);  // "Use the model's examples"
    // "Compare with": the bundled models other than `current` (one of the other direction reads the
    // references as its sources).
    void setCompareChoices(const std::vector<BundledModel>& models, const ModelInfo& current);
    // The other model's statistics of the last run (null: none); with them the heatmap and a table
    // column can show the difference, other minus this.
    void setComparison(HeadStatsPtr other, const QString& model_dir, bool reversed);
    QComboBox* compareChoice() const { return m_compare; }
    QCheckBox* differenceChoice() const { return m_difference; }
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

    // Runs on the corpus set (the Run button); importance when `importance` and references exist.
    void startRun(bool importance);
    // Exports; the UI's error convention: the reason, or nothing.
    [[nodiscard]] std::optional<QString> exportJson(const QString& path) const;
    [[nodiscard]] std::optional<QString> exportCsv(const QString& path) const;

    // What is shown (tests read it back).
    AttentionView* heatmap() const { return m_heatmap; }
    QCustomPlot* figure() const;  // the heatmap, once a run has finished
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

private:
    void buildControls();
    void chooseFiles();
    void refreshHeatmap();
    void refreshTable();
    void refreshCurve();
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
    QComboBox* m_compare;     // data: the package directory ("" = none); UserRole + 1: reversed
    QCheckBox* m_difference;  // the heatmap shows other minus this
    HeadStatsPtr m_other;
    QString m_other_name;
    QPushButton* m_run;
    QPushButton* m_cancel;
    QProgressBar* m_progress;
    QLabel* m_status;
    QComboBox* m_statistic;
    QComboBox* m_measure;  // what the next run takes its statistics of
    QComboBox* m_kind;
    AttentionView* m_heatmap;
    QTableWidget* m_table;
    QCustomPlot* m_curve;
};

}  // namespace attnlab::ui
