#pragma once
// ViewContext: the document every view observes (Okular's observer pattern). It holds what the
// views follow — the model, the current translation and the options it was made with, the user's
// decoding options, the colour map, the text size, the switched-off heads — and says when each
// changes; views connect to its signals themselves, once, in their constructors. Requests that
// several views make (translate, explain a weight, show a view, select a head) go through it, and
// so does every failure: one signal, `failed(operation, message)`, handled by the window.

#include "document/model_fetch.h"
#include "document/operation.h"
#include "document/translation_controller.h"
#include "plots/plot_style.h"

#include <attnlab/attention_flow.h>
#include <attnlab/attention_kind.h>

#include <QObject>
#include <QStringList>

#include <array>
#include <memory>
#include <optional>

#include <string>
#include <vector>

namespace attnlab::ui {

// What the views call a measure (the Attention tab's Method): "Weights", "Weight × value norm",
// "Rollout (per layer)", "ALTI+ (per layer)", "Value zeroing (per layer)".
QString mapMeasureTitle(MapMeasure measure);
// What a view says while a measure's maps are being computed: "Computing the value norms…", "Computing ALTI+…".
QString mapMeasureWaiting(MapMeasure measure);

class ViewContext : public QObject {
    Q_OBJECT
public:
    explicit ViewContext(TranslationController* controller, QObject* parent = nullptr);

    // The worker that runs core; views ask it for their own numbers (explanations, statistics).
    TranslationController* controller() const { return m_controller; }

    ModelInfoPtr model() const { return m_controller->modelInfo(); }
    ResultPtr result() const { return m_result; }
    DecodingOptions resultOptions() const { return m_result_options; }  // of the shown translation
    // The user's decoding options (beam, alpha, maximum length), as the sentence row shows them.
    DecodingOptions decodingOptions() const { return m_options; }
    void setDecodingOptions(const DecodingOptions& options);
    QString device() const { return m_device; }
    void setDevice(const QString& device);  // reloads the loaded model on it
    // What the products are computed in (float32, int8, bfloat16: TranslatorOptions::compute_type),
    // remembered per model; setting it reloads the loaded model.
    QString computeType() const { return m_compute_type; }
    void setComputeType(const QString& compute_type);
    // Loads `package_dir` computing in `compute_type` (remembered for it once loaded).
    void loadModelAs(const QString& package_dir, const QString& compute_type);
    Palette palette() const { return m_palette; }
    void setPalette(Palette palette, bool remember = true);
    // Translate as you type (on by default; remembered in the settings unless remember = false, as
    // for the app's --no-live).
    bool liveTranslation() const { return m_live; }
    void setLiveTranslation(bool on, bool remember = true);
    // The app's text size in points (8-28): every widget and plot follows the application font.
    static constexpr double kMinTextSize = 8, kMaxTextSize = 28;
    double textSize() const;
    void setTextSize(double points, bool remember = true);
    // Presenter mode (the lesson controller decides it): views give the maps the room, e.g. the
    // translation's detail lines fold away.
    bool presenting() const { return m_presenting; }
    void setPresenting(bool on);
    const std::vector<HeadRef>& ablated() const { return m_ablated; }
    // Switches heads off for every later translation and translates the current sentence again; a
    // new model switches every head on again.
    void setAblated(const std::vector<HeadRef>& heads);
    // The sentence last sent to be translated (empty after clearResult): what a new model or another
    // set of heads translates again.
    QString sentence() const { return m_sentence; }
    // The head the attention view shows: what another view uses when a lesson names none.
    HeadRef focusedHead() const { return m_focus; }
    // What the attention maps show, the Method (attnlab/attention_flow.h): the weights, each weight
    // times its key's value norm (rows normalised), the rollout, ALTI+ or value zeroing (these three one
    // map per layer). What a method needs from the model (value norms, contributions) is asked of the
    // controller's worker once per translation, when the method is chosen and a translation is shown;
    // never while nothing asks for it.
    MapMeasure measure() const { return m_measure; }
    void setMeasure(MapMeasure measure);
    // The shown translation's maps of one kind under the measure ([layer][head]; one map per layer for
    // onePerLayer measures); null without a translation, or while what it needs is being computed.
    std::shared_ptr<const LayerHeadMaps> measuredMaps(AttentionKind kind) const;
    // Why measuredMaps() is null for a shown translation (what the method needs failed or cannot be
    // asked for); empty while it is still being computed.
    QString measureProblem() const { return m_measure_problems[size_t(m_measure)]; }
    // Whether what the measure needs for the shown translation (value norms, contributions) is being computed:
    // asked of the worker, not yet answered, nothing failed.
    bool measuring() const;
    // Stops waiting for it (the Method's Stop): the maps show the weights again; contributions not yet started
    // are never computed (TranslationController::cancelContributions), one already running finishes and is
    // kept for when the method is chosen again.
    void stopMeasuring();
    // The shown translation's contributions of a method; null until computed (measuredMaps' source).
    ContributionsPtr contributions(ContributionMethod method) const { return m_contributions[size_t(method)]; }
    void setFocusedHead(const HeadRef& head) { m_focus = head; }
    QString lastError() const { return m_last_error; }  // the last failure, until a success
    // The shown translation's attention as JSON (docs/attention-json.md), with the value norms and
    // each method's contributions when they have been computed and the rollout when it is shown; the
    // problem, or nothing.
    [[nodiscard]] std::optional<QString> exportAttentionJson(const QString& path) const;

    // Pivot translation (attnlab/route.h): two models chained through a middle language, the first
    // leg's translation the second leg's input. The views show one leg at a time: model() and result()
    // are the shown leg's, and showLeg switches (modelChanged, then resultChanged with that leg's
    // translation, nothing translated again). A single model loaded leaves the pivot.
    bool pivoting() const { return m_pivot.models[0] != nullptr; }
    int leg() const { return m_pivot.leg; }                                          // 0 or 1
    ModelInfoPtr legModel(int leg) const { return m_pivot.models.at(size_t(leg)); }  // null without a pivot
    ResultPtr legResult(int leg) const { return m_pivot.results.at(size_t(leg)); }
    // The second leg's input: the first leg's translation, or what the user wrote in its place.
    QString middleSentence() const { return m_pivot.middle; }
    bool middleEdited() const { return m_pivot.middle_edited; }  // by the user, not the first leg's output
    // Loads a route's legs (their package folders, in order); answered by modelChanged (the first
    // leg's model) and pivotChanged, or failed(LoadModel).
    void loadPivot(const QStringList& package_dirs);
    void showLeg(int leg);
    // The middle sentence edited: the second leg alone translates it (the first leg's stays); kept
    // while the same sentence is translated again (other options, heads switched off).
    void setMiddleSentence(const QString& middle);
    // The edited middle sentence given up: the second leg translates the first leg's output again.
    void useFirstLegOutput();

    // Requests.
    void loadModel(const QString& package_dir);
    // A folder, a file (an .argosmodel) or a Hugging Face name ORG/NAME[@REVISION]: a name is loaded from
    // the shared cache, or got first (ModelFetch: fetchStarted, fetchProgress, fetchEnded; its failure
    // is reported as failed(GetModel, …)), the window staying responsive.
    void openModel(const QString& name_or_dir);
    void cancelFetch();
    bool fetching() const;
    // The cache's folder for a Hugging Face name, when it holds the model complete (no network).
    static std::optional<QString> cachedModel(const QString& name);
    // Whether `name` is a Hugging Face name that has to be got first (no such path, not in the cache).
    static bool needsFetch(const QString& name);
    void showSentence(const QString& sentence) { Q_EMIT sentenceShown(sentence); }  // in the sentence row
    // The sentence row shows `sentence` and it is translated with the user's options.
    void translateSentence(const QString& sentence);
    // Translate with these options; the trace is always recorded and the ablated heads apply.
    void translate(const QString& sentence, const DecodingOptions& options);
    // The options a translation asked here is made with: `options`, the trace recorded, the ablated heads off.
    DecodingOptions translationOptions(DecodingOptions options) const;
    // A whole text's sentences translated with the user's options as each typed sentence would be
    // (TranslationController::translateText: its answers come from the controller; each result is cached,
    // so translateSentence of one of them shows it at once in every view).
    void translateText(const QStringList& sentences);
    void explainCell(const CellRef& cell) { Q_EMIT explainRequested(cell); }
    void showView(const std::string& name) { Q_EMIT viewRequested(name); }
    void showHead(const HeadRef& head, bool mean = false) { Q_EMIT headRequested(head, mean); }
    // The Heads tab on one page (--heads): "statistics", "ablation" with `ablate` off, "alignment";
    // a problem is reported as failed(HeadLab, …).
    void showHeadLab(const QString& page, const std::vector<HeadRef>& ablate = {}) {
        Q_EMIT headLabRequested(page, ablate);
    }
    void showStatus(const QString& message, int ms = 5000) { Q_EMIT status(message, ms); }
    void reportFailure(Operation op, const QString& message);
    // A translation result made elsewhere (the controller's, or a test's): every view follows.
    void setResult(ResultPtr result, const DecodingOptions& options);
    // No sentence: the shown translation is dropped (resultChanged(nullptr): every view clears
    // itself) and a translation still on its way is not shown when it comes.
    void clearResult();
    // A model loaded (or the same one on another device). Nothing the last model computed stays
    // shown: the result is cleared, then, with live translation on, the current sentence is
    // translated by the new model (unless something asked for a translation while modelChanged was
    // handled, e.g. a lesson's step); with it off, the sentence row says to translate again.
    void setModel(ModelInfoPtr info);

Q_SIGNALS:
    void modelLoading(const QString& package_dir);
    void modelChanged(attnlab::ui::ModelInfoPtr info);
    // A new translation; null when the last one failed (the maps shown would no longer belong to the
    // sentence).
    void resultChanged(attnlab::ui::ResultPtr result);
    void decodingOptionsChanged(const attnlab::DecodingOptions& options);
    void deviceChanged(const QString& device);
    void computeTypeChanged(const QString& compute_type);
    void paletteChanged(attnlab::ui::Palette palette);
    void textSizeChanged(double points);
    void presentingChanged(bool on);
    void liveTranslationChanged(bool on);
    void measureChanged(attnlab::MapMeasure measure);
    void measuredMapsChanged();  // the measure, or what it waited for (value norms, contributions)
    void sentenceShown(const QString& sentence);
    void translationRequested(const QString& sentence, bool forced);
    void explainRequested(const attnlab::CellRef& cell);
    void viewRequested(const std::string& name);
    void headRequested(const attnlab::HeadRef& head, bool mean);
    void headLabRequested(const QString& page, const std::vector<attnlab::HeadRef>& ablate);
    void status(const QString& message, int ms);
    void failed(attnlab::ui::Operation op, const QString& message);
    void fetchStarted(const QString& name);
    void fetchProgress(const attnlab::HubProgress& progress);
    // Got (`got`: it loads next), failed (failed(GetModel, …) says why) or cancelled.
    void fetchEnded(const QString& name, bool got);
    // A pivot loaded or left, another leg shown, a leg's translation or the middle sentence changed.
    void pivotChanged();

private:
    struct Pivot {
        std::array<ModelInfoPtr, 2> models;
        std::array<ResultPtr, 2> results;
        int leg = 0;    // asked for (showLeg)
        int shown = 0;  // the views' model: set when the worker has switched to it (legShown)
        QString middle;
        bool middle_edited = false;  // by the user: the second leg translates it, not the first leg's output
        QString source;              // the sentence the middle sentence belongs to
    };
    Pivot m_pivot;
    void followPivot();
    QStringList pivotDirs() const;  // the legs' package folders
    void dropPivotResults();        // the legs' translations and the middle sentence, with pivotChanged
    void followFetch();
    TranslationController* m_controller;
    ModelFetch* m_fetch;
    ResultPtr m_result;
    QString m_sentence;       // the sentence last sent to be translated
    bool m_awaiting = false;  // a translation was asked for and not cleared since
    unsigned m_requests = 0;  // translations asked for: did a modelChanged handler translate?
    DecodingOptions m_result_options, m_options;
    QString m_device = QStringLiteral("auto");
    QString m_compute_type = QStringLiteral("float32");
    QString m_loading_dir;  // the model asked for and not yet loaded (or failed)
    Palette m_palette = Palette::Blues;
    bool m_live = true;
    bool m_presenting = false;
    std::vector<HeadRef> m_ablated;
    HeadRef m_focus;
    QString m_last_error;
    MapMeasure m_measure = MapMeasure::Weights;
    // What the measures computed of m_result (value norms, each method's contributions), whether each
    // was asked for, and why one could not be had (by MapMeasure).
    ValueNormsPtr m_norms;
    bool m_norms_asked = false;
    std::array<ContributionsPtr, std::size(kContributionMethods)> m_contributions;
    std::array<bool, std::size(kContributionMethods)> m_contributions_asked{};
    std::array<QString, std::size(kMapMeasures)> m_measure_problems;
    mutable std::array<std::shared_ptr<const LayerHeadMaps>, 3> m_measured;  // by AttentionKind
    void askForMeasure();                                                    // what the measure needs of m_result, once
    void askForNorms();
    void askForContributions(ContributionMethod method);
    void forgetMeasured();  // of a result left
    void dropResult();      // the result and what was computed of it, with resultChanged(nullptr)
};

}  // namespace attnlab::ui
