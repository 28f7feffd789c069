#pragma once
// TranslationController: runs the core's Translator off the GUI thread. Requests are executed one
// at a time on a worker thread; a new translation cancels the one in progress (its step callback
// sees a newer request and stops). Every exception is caught here and reported by one signal,
// failed(operation, message), so no exception ever reaches a Qt slot. A model that fails to load
// leaves the previous one in place. Translations already made with the same model, sentence and
// options come from a small cache (TranslationCache) without translationStarted.

#include <attnlab/attention_history.h>
#include <attnlab/decoding_options.h>
#include <attnlab/explain.h>
#include <attnlab/head_lab.h>
#include <attnlab/model_comparison.h>
#include <attnlab/translation.h>
#include <attnlab/translator.h>

#include "document/operation.h"
#include "document/translation_cache.h"

#include <QObject>
#include <QString>
#include <QStringList>
#include <QThread>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace attnlab::ui {

using ResultPtr = std::shared_ptr<const TranslationResult>;
using ModelInfoPtr = std::shared_ptr<const ModelInfo>;
using ExplanationPtr = std::shared_ptr<const AttentionExplanation>;
using TokenInsidePtr = std::shared_ptr<const TokenInside>;
using MasksPtr = std::shared_ptr<const BatchMasks>;
using HeadStatsPtr = std::shared_ptr<const HeadStatsReport>;
using ImportancePtr = std::shared_ptr<const ImportanceReport>;  // null when not asked for
using HistoryPtr = std::shared_ptr<const AttentionHistory>;
using ValueNormsPtr = std::shared_ptr<const ValueNorms>;
using SaliencyPtr = std::shared_ptr<const Saliency>;
using AlignmentReportPtr = std::shared_ptr<const AlignmentReport>;
using ContributionsPtr = std::shared_ptr<const Contributions>;
using LogitLensPtr = std::shared_ptr<const LogitLens>;
using ContrastivePtr = std::shared_ptr<const Contrastive>;

// A head-lab run over a corpus (the Heads tab).
struct HeadLabRequest {
    std::vector<std::string> sources;
    std::vector<std::string> references;       // empty: the model's own translations
    bool importance = false;                   // needs references
    DecodingOptions decoding;                  // the model's own translations and the importance runs
    MapMeasure measure = MapMeasure::Weights;  // what the statistics are taken of
    // Another model's statistics on the same corpus (a model directory; empty = none), in its languages
    // for those of `decoding` (planComparison, attnlab/model_comparison.h): a one-pair model of the other
    // direction reads the references as its sources and the sources as its references.
    std::string compare_model;
};

class TranslationController : public QObject {
    Q_OBJECT
public:
    explicit TranslationController(QObject* parent = nullptr);
    ~TranslationController() override;

    // Asynchronous; answered by modelLoaded or failed(LoadModel). A whole text being translated
    // (translateText) stops first, answered as cancelled.
    void loadModel(const QString& package_dir, const QString& device, const QString& compute_type);
    // LibTorch threads of the next model loaded (TranslatorOptions::num_threads; 0 = the policy).
    void setThreads(int threads) { m_threads = threads; }
    // Asynchronous; answered by translationFinished or failed(Translate) (or nothing, when a newer
    // request superseded it). A translation in the cache is answered without translationStarted.
    // With a pivot loaded, through both legs: answered by pivotTranslated; the second leg translates
    // `middle` when it is not empty (a middle sentence the user edited), else the first leg's output.
    void translate(const QString& sentence, const DecodingOptions& options, const QString& middle = {});

    // Pivot translation (attnlab/route.h): the legs' packages, loaded together; the first leg's model
    // is the loaded one until showLeg. Answered by pivotLoaded or failed(LoadModel) (the model before
    // stays). Loading a single model (loadModel) leaves the pivot.
    void loadPivot(const QStringList& package_dirs, const QString& device, const QString& compute_type);
    // The leg whose model every later request (explanations, norms, statistics, ...) goes to, and whose
    // heads an options' `ablate` and forced prefix name; answered by legShown.
    void showLeg(int leg);
    // Asynchronous: how one weight of `result`'s maps came to be (Translator::explain); answered
    // by explained or failed(Explain). Queued behind translations, never cancelling them.
    void explain(ResultPtr result, const CellRef& cell);
    // Asynchronous: one piece of `result` before the first layer (Translator::tokenInside);
    // answered by tokenInspected or failed(Inspect).
    void inspectToken(ResultPtr result, bool target, int position);
    // Asynchronous: the masks of `result` decoded in one batch with `second` (translated first
    // with `options`; empty = alone); answered by masksReady or failed(Inspect).
    void inspectMasks(ResultPtr result, const QString& second, const DecodingOptions& options);
    // Asynchronous: two sentences (a minimal pair) translated with the same options; answered by
    // pairTranslated or failed(TranslatePair). Does not cancel, and is not cancelled by, translate().
    void translatePair(const QString& a, const QString& b, const DecodingOptions& options);
    // Asynchronous: `sentence` with every head on and otherwise `options` (with a pivot, as the leg shown
    // translates it), for the Ablation page's "Before"; answered by baselineTranslated(result, options as
    // given) or baselineFailed. Only the newest request is answered; a newer translate() cancels it.
    void translateBaseline(const QString& sentence, const DecodingOptions& options);
    // Asynchronous: the sentences of a whole text (File › Translate a text…) translated in batches of at most
    // kTextBatch (Translator::translateBatch), each result cached as a typed sentence's would be (the same
    // sentence and options later come from the cache) and answered by textSentenceTranslated; a sentence the
    // model cannot take (too long) by textSentenceFailed; at the end textTranslationEnded, with the problem
    // that stopped it if one did (no model, a pivot loaded, a failure). Queued behind other requests, and
    // translations typed meanwhile wait for it; cancelText() stops it within the decoding step running, the
    // batches done staying answered (so do loadModel, loadPivot and the controller's destruction).
    static constexpr int kTextBatch = 8;
    void translateText(const QStringList& sentences, const DecodingOptions& options);
    void cancelText() { ++m_text_generation; }
    // Asynchronous: statistics (and importance) over a corpus; reports headLabProgress, answered
    // by headLabFinished or failed(HeadLab) ("cancelled" after cancelHeadLab()). Translations
    // requested meanwhile wait for it.
    void runHeadLab(const HeadLabRequest& request);
    // Asynchronous: whether the model in `dir` can be compared with the loaded one translating `source`
    // into `target` (empty: its own pair), loading it for the run; answered by comparisonChecked with the
    // languages it would read and write (and `reversed`: the other way round), or the problem in words.
    void checkComparison(const QString& dir, const QString& source, const QString& target);
    void cancelHeadLab() { m_cancel_head_lab.store(true); }
    // Asynchronous: `source` teacher-forced through `target` (Translator::teacherForce); answered
    // by pairAligned or failed(Align).
    void alignPair(const QString& source, const QString& target);
    // Asynchronous: a translation of the user's own scored under teacher forcing (each piece's
    // log-probability and </s>'s, every map); answered by pairScored or failed(Score).
    void scorePair(const QString& source, const QString& target, const DecodingOptions& options);
    // Asynchronous: every alignment method scored on examples with gold (alignCorpus), symmetrised
    // with the bundled model of the other direction when there is one; answered by examplesAligned
    // (with that model's directory, empty without) or failed(Align).
    void alignExamples(const std::vector<Example>& examples);
    // Asynchronous: every head's value norms for a result (Translator::valueNorms); answered by
    // valueNormsReady or failed(Measure).
    void computeValueNorms(ResultPtr result);
    // Asynchronous: ALTI+ or value zeroing for a result (Translator::contributions); answered by
    // contributionsReady or contributionsFailed. Like computeLogitLens, dropped unanswered when a newer
    // translation was asked for before it started (the views ask again for the one they show).
    void computeContributions(ResultPtr result, ContributionMethod method);
    // Contributions asked for before this and not yet started are dropped unanswered (the Method's Stop). One
    // already running finishes (Translator::contributions takes no callback to stop it midway); its answer
    // comes as usual.
    void cancelContributions() { ++m_contribution_generation; }
    // Asynchronous: every decoder layer's prediction at every position of a result, the `top` most
    // probable pieces of each (Translator::logitLens); answered by logitLensReady or failed(LogitLens).
    void computeLogitLens(ResultPtr result, int top);
    // Asynchronous: why the result's piece at query.step and not query.alternative (Translator::contrastive);
    // answered by contrastiveReady or contrastiveFailed (both naming the result asked about). Like
    // computeLogitLens, dropped unanswered when a newer translation was asked for before it started.
    void computeContrastive(ResultPtr result, const ContrastiveQuery& query);
    // Asynchronous: gradient x input for a result (Translator::saliency); answered by saliencyReady
    // or failed(Saliency).
    void computeSaliency(ResultPtr result);
    // Asynchronous: a package's attention history (package_files::kAttentionHistory); answered by
    // historyLoaded (null when the package has none) or failed(History).
    void loadHistory(const QString& package_dir);
    // Blocks until queued work is done (tests, headless export).
    void waitForIdle();

    ModelInfoPtr modelInfo() const;  // null before the first successful load
    bool busy() const { return m_pending.load() > 0; }
    // GUI thread: work asked for whose answers (results, failures) have not all arrived here yet.
    bool unanswered() const { return m_unanswered > 0; }

Q_SIGNALS:
    void modelLoaded(attnlab::ui::ModelInfoPtr info);
    void translationStarted();
    void translationProgress(int step, int max_steps);
    void translationFinished(attnlab::ui::ResultPtr result);
    void busyChanged(bool busy);
    void explained(attnlab::ui::ExplanationPtr explanation);
    void tokenInspected(attnlab::ui::TokenInsidePtr token);
    void masksReady(attnlab::ui::MasksPtr masks);
    void pairTranslated(attnlab::ui::ResultPtr a, attnlab::ui::ResultPtr b);
    void baselineTranslated(attnlab::ui::ResultPtr result, const attnlab::DecodingOptions& options);
    // translateBaseline's sentence could not be translated with every head on: why (`message`). Not
    // failed(Operation::Translate): the result shown stays.
    void baselineFailed(const QString& sentence, const attnlab::DecodingOptions& options, const QString& message);
    void textSentenceTranslated(int index, attnlab::ui::ResultPtr result);
    void textSentenceFailed(int index, const QString& message);
    // `problem`: why it stopped before the end (no model, a pivot, a failure), empty otherwise.
    void textTranslationEnded(int translated, int total, bool cancelled, const QString& problem);
    void headLabProgress(const QString& stage, int done, int total);
    void headLabFinished(attnlab::ui::HeadStatsPtr stats, attnlab::ui::ImportancePtr importance);
    // Just before headLabFinished: the other model's statistics of HeadLabRequest::compare_model (null
    // when the run compares with none); `left_out`: why the comparison asked for could not be made (the
    // run went on without it), empty otherwise.
    void headsCompared(attnlab::ui::HeadStatsPtr other, const QString& model_dir, bool reversed,
                       const QString& left_out);
    void comparisonChecked(const QString& dir, bool reversed, const QString& source, const QString& target,
                           const QString& problem);
    void pairAligned(attnlab::ui::ResultPtr forced);
    void pairScored(attnlab::ui::ResultPtr scored);
    void examplesAligned(attnlab::ui::AlignmentReportPtr report, const QString& reverse_model);
    void valueNormsReady(attnlab::ui::ResultPtr result, attnlab::ui::ValueNormsPtr norms);
    void saliencyReady(attnlab::ui::ResultPtr result, attnlab::ui::SaliencyPtr saliency);
    // On the worker, as computeContributions' work begins (a request dropped before never starts).
    void contributionsStarted(attnlab::ui::ResultPtr result, attnlab::ContributionMethod method);
    void contributionsReady(attnlab::ui::ResultPtr result, attnlab::ui::ContributionsPtr contributions);
    void contributionsFailed(attnlab::ui::ResultPtr result, attnlab::ContributionMethod method, const QString& message);
    void logitLensReady(attnlab::ui::ResultPtr result, attnlab::ui::LogitLensPtr lens);
    void contrastiveReady(attnlab::ui::ResultPtr result, attnlab::ui::ContrastivePtr contrastive);
    void contrastiveFailed(attnlab::ui::ResultPtr result, const QString& message);
    void historyLoaded(const QString& package_dir, attnlab::ui::HistoryPtr history);
    void pivotLoaded(attnlab::ui::ModelInfoPtr first, attnlab::ui::ModelInfoPtr second);
    void legShown(int leg, attnlab::ui::ModelInfoPtr info);
    void pivotTranslated(attnlab::ui::ResultPtr first, attnlab::ui::ResultPtr second);
    // The one failure signal: what was being done, and why it failed.
    void failed(attnlab::ui::Operation op, const QString& message);

private:
    void post(std::function<void()> job);
    // `source` teacher-forced through `target` on the worker, answered by `answer` or failed(op).
    void teacherForcePair(const QString& source, const QString& target, const DecodingOptions& options, Operation op,
                          void (TranslationController::*answer)(ResultPtr));
    // Runs `work` on the worker with the loaded translator; any exception becomes failed(op, …).
    void postInspection(std::function<void(const Translator&)> work, Operation op);
    // postInspection of work for the translation shown, skipped when a newer translation was asked for
    // before it starts; any exception becomes `failure(message)` (on the worker).
    void postForShown(std::function<void(const Translator&)> work, std::function<void(const QString&)> failure);
    // On the worker: the cached translation of `text`, or a new one (then cached).
    ResultPtr translateCached(const Translator& t, const std::string& text, const DecodingOptions& options);
    // On the worker: leg `leg` of the pivot on `text` (cached), reporting progress while `generation` is
    // the newest request; throws CancelledError when a newer one came.
    ResultPtr translateLegNow(size_t leg, const std::string& text, const DecodingOptions& options, int generation);
    void translatePivotNow(const std::string& text, const std::string& middle, const DecodingOptions& options,
                           int generation);
    // A leg's options: the ablated heads and the forced prefix only for the leg shown, the model's own
    // languages, one hypothesis before the last leg.
    DecodingOptions legOptions(size_t leg, DecodingOptions options) const;
    void setTranslator(std::shared_ptr<Translator> t, const std::string& cache_key);  // worker: the model shown
    // Worker thread: the pivot's legs (empty without one), their cache keys and the leg shown.
    std::vector<std::shared_ptr<Translator>> m_legs;
    std::vector<std::string> m_leg_keys;
    size_t m_shown_leg = 0;

    QThread m_thread;
    QObject* m_worker = nullptr;               // lives in m_thread
    std::shared_ptr<Translator> m_translator;  // touched only on the worker thread
    // Worker thread: a second model (the other direction's for symmetrising, one to compare with),
    // kept for the next request that names the same directory.
    std::shared_ptr<Translator> m_other;
    const Translator& otherModel(const std::string& dir, const Translator& loaded);  // throws as Translator
    // Worker: how `other` is compared with `loaded` translating as `options` name (their languages, or its pair).
    static ComparisonPlan comparisonPlan(const Translator& loaded, const Translator& other,
                                         const DecodingOptions& options);
    TranslationCache m_cache;   // worker thread only; emptied when a model loads
    std::string m_cache_model;  // the loaded model's key in it (package and device)
    ModelInfoPtr m_info;        // written on the worker, read under m_info_mutex
    mutable std::mutex m_info_mutex;
    std::atomic<int> m_threads{0};
    std::atomic<int> m_generation{0};
    std::atomic<int> m_baseline_generation{0};      // translateBaseline's newest request
    std::atomic<int> m_text_generation{0};          // translateText's newest request; cancelText() moves it on
    std::atomic<int> m_contribution_generation{0};  // cancelContributions() moves it on
    // On the worker: one batch of a text's sentences (their indices in `sentences`); false when cancelled.
    bool translateTextBatch(const std::vector<std::string>& sentences, const std::vector<int>& batch,
                            const DecodingOptions& options, int generation);
    std::atomic<int> m_pending{0};
    int m_unanswered = 0;  // GUI thread only
    std::atomic<bool> m_cancel_head_lab{false};
};

}  // namespace attnlab::ui

Q_DECLARE_METATYPE(attnlab::ui::ResultPtr)
Q_DECLARE_METATYPE(attnlab::ui::SaliencyPtr)
Q_DECLARE_METATYPE(attnlab::ui::ContributionsPtr)
Q_DECLARE_METATYPE(attnlab::ui::LogitLensPtr)
Q_DECLARE_METATYPE(attnlab::ui::ContrastivePtr)
Q_DECLARE_METATYPE(attnlab::ContributionMethod)
Q_DECLARE_METATYPE(attnlab::ui::ModelInfoPtr)
Q_DECLARE_METATYPE(attnlab::ui::ExplanationPtr)
Q_DECLARE_METATYPE(attnlab::ui::TokenInsidePtr)
Q_DECLARE_METATYPE(attnlab::ui::MasksPtr)
Q_DECLARE_METATYPE(attnlab::ui::HeadStatsPtr)
Q_DECLARE_METATYPE(attnlab::ui::ImportancePtr)
Q_DECLARE_METATYPE(attnlab::ui::HistoryPtr)
