#include "document/view_context.h"

#include <attnlab/device.h>
#include <attnlab/errors.h>
#include <attnlab/hub.h>
#include <attnlab/result_json.h>

#include <QApplication>
#include <QFileInfo>
#include <QFont>
#include <QSettings>

#include <algorithm>

namespace attnlab::ui {

namespace {
bool sameOptions(const DecodingOptions& a, const DecodingOptions& b) {
    return a.beam_size == b.beam_size && a.length_penalty == b.length_penalty && a.max_length == b.max_length &&
           a.source_language == b.source_language && a.target_language == b.target_language;
}
}  // namespace

QString operationTitle(Operation op) {
    switch (op) {
    case Operation::LoadModel: return QObject::tr("Cannot open the model");
    case Operation::Translate: return QObject::tr("Translation failed");
    case Operation::Explain: return QObject::tr("Cannot explain this weight");
    case Operation::Inspect: return QObject::tr("Inputs");
    case Operation::TranslatePair: return QObject::tr("Minimal pairs");
    case Operation::HeadLab: return QObject::tr("Head statistics failed");
    case Operation::Align: return QObject::tr("Alignment failed");
    case Operation::Lesson: return QObject::tr("Cannot show the lesson");
    case Operation::SaveSession: return QObject::tr("Cannot save the session");
    case Operation::SaveLesson: return QObject::tr("Cannot save the lesson");
    case Operation::Export: return QObject::tr("Export failed");
    case Operation::History: return QObject::tr("Cannot read the attention history");
    case Operation::TrainToy: return QObject::tr("Training the small model failed");
    case Operation::Measure: return QObject::tr("Cannot compute the maps of the Method chosen");
    case Operation::Saliency: return QObject::tr("Cannot compute the saliency");
    case Operation::Score: return QObject::tr("Cannot score the translation");
    case Operation::GetModel: return QObject::tr("Cannot get the model");
    case Operation::LogitLens: return QObject::tr("Cannot compute the logit lens");
    }
    return {};
}

QString mapMeasureTitle(MapMeasure measure) {
    switch (measure) {
    case MapMeasure::Weights: return QObject::tr("Weights");
    case MapMeasure::ValueNorm: return QObject::tr("Weight × value norm");
    case MapMeasure::Rollout: return QObject::tr("Rollout (per layer)");
    case MapMeasure::AltiPlus: return QObject::tr("ALTI+ (per layer)");
    case MapMeasure::ValueZeroing: return QObject::tr("Value zeroing (per layer)");
    }
    return {};
}

QString mapMeasureWaiting(MapMeasure measure) {
    if (measure == MapMeasure::ValueNorm) return QObject::tr("Computing the value norms…");
    if (measure == MapMeasure::AltiPlus) return QObject::tr("Computing ALTI+ (a pass through the whole model)…");
    if (measure == MapMeasure::ValueZeroing)
        return QObject::tr("Computing value zeroing (each layer again for every piece zeroed)…");
    return {};
}

bool operationNeedsDialog(Operation op) {
    return op == Operation::LoadModel || op == Operation::Lesson || op == Operation::SaveSession ||
           op == Operation::SaveLesson || op == Operation::Export || op == Operation::GetModel;
}

ViewContext::ViewContext(TranslationController* controller, QObject* parent)
    : QObject(parent), m_controller(controller), m_fetch(new ModelFetch(this)) {
    qRegisterMetaType<Operation>("attnlab::ui::Operation");
    followFetch();
    m_live = QSettings().value("liveTranslation", true).toBool();
    connect(controller, &TranslationController::modelLoaded, this, [this](ModelInfoPtr info) {
        if (pivoting()) {
            m_pivot = {};
            Q_EMIT pivotChanged();
        }
        setModel(std::move(info));
    });
    followPivot();
    connect(controller, &TranslationController::translationFinished, this, [this](ResultPtr r) {
        if (m_awaiting) setResult(std::move(r), m_result_options);  // not one cleared since
    });
    connect(controller, &TranslationController::failed, this, &ViewContext::reportFailure);
    connect(controller, &TranslationController::valueNormsReady, this, [this](ResultPtr r, ValueNormsPtr norms) {
        if (r != m_result) return;  // a later translation took its place
        m_norms = std::move(norms);
        m_measured = {};
        Q_EMIT measuredMapsChanged();
    });
    connect(controller, &TranslationController::contributionsReady, this, [this](ResultPtr r, ContributionsPtr c) {
        if (r != m_result) return;
        const ContributionMethod method = c->method;
        m_contributions[size_t(method)] = std::move(c);
        if (contributionMethodOf(m_measure) != method) return;
        m_measured = {};
        Q_EMIT measuredMapsChanged();
    });
    connect(controller, &TranslationController::contributionsFailed, this,
            [this](ResultPtr r, ContributionMethod method, const QString& message) {
                if (r != m_result) return;
                m_measure_problems[size_t(measureOf(method))] = message;
                m_last_error = message;
                Q_EMIT measuredMapsChanged();
                Q_EMIT failed(Operation::Measure, message);
            });
}

void ViewContext::setMeasure(MapMeasure measure) {
    if (measure == m_measure) return;
    m_measure = measure;
    m_measured = {};
    askForMeasure();
    Q_EMIT measureChanged(measure);
    Q_EMIT measuredMapsChanged();
}

void ViewContext::askForMeasure() {
    if (m_measure == MapMeasure::ValueNorm) askForNorms();
    if (const auto method = contributionMethodOf(m_measure)) askForContributions(*method);
}

void ViewContext::askForNorms() {
    if (!m_result || m_norms || m_norms_asked) return;
    if (m_result->cross.empty()) {
        m_measure_problems[size_t(MapMeasure::ValueNorm)] = tr("This translation has no attention maps to weigh.");
        return;
    }
    m_norms_asked = true;
    m_controller->computeValueNorms(m_result);
}

void ViewContext::askForContributions(ContributionMethod method) {
    const size_t i = size_t(method);
    if (!m_result || m_contributions[i] || m_contributions_asked[i]) return;
    if (m_result->best.pieces.empty()) {
        m_measure_problems[size_t(measureOf(method))] = tr("This translation is empty: no piece to attribute.");
        return;
    }
    m_contributions_asked[i] = true;
    m_controller->computeContributions(m_result, method);
}

bool ViewContext::measuring() const {
    if (!m_result || !m_measure_problems[size_t(m_measure)].isEmpty()) return false;
    if (m_measure == MapMeasure::ValueNorm) return m_norms_asked && !m_norms;
    const auto method = contributionMethodOf(m_measure);
    return method && m_contributions_asked[size_t(*method)] && !m_contributions[size_t(*method)];
}

void ViewContext::stopMeasuring() {
    if (!measuring()) return;
    const MapMeasure stopped = m_measure;
    if (const auto method = contributionMethodOf(stopped)) {
        m_controller->cancelContributions();
        m_contributions_asked[size_t(*method)] = false;  // asked again when chosen again
    }
    setMeasure(MapMeasure::Weights);
    showStatus(tr("Stopped: %1 was not computed for this translation; the maps show the weights (choose the "
                  "Method again to compute it)")
                   .arg(mapMeasureTitle(stopped)),
               10000);
}

void ViewContext::forgetMeasured() {
    m_norms.reset();
    m_norms_asked = false;
    m_contributions = {};
    m_contributions_asked = {};
    m_measure_problems = {};
    m_measured = {};
}

std::shared_ptr<const LayerHeadMaps> ViewContext::measuredMaps(AttentionKind kind) const {
    if (!m_result) return nullptr;
    const LayerHeadMaps& weights = kind == AttentionKind::EncoderSelf   ? m_result->encoder_self
                                   : kind == AttentionKind::DecoderSelf ? m_result->decoder_self
                                                                        : m_result->cross;
    if (m_measure == MapMeasure::Weights) return {m_result, &weights};  // the result's own, not a copy
    if (m_measure == MapMeasure::ValueNorm && !m_norms) return nullptr;
    const auto method = contributionMethodOf(m_measure);
    const ContributionsPtr contributions = method ? m_contributions[size_t(*method)] : nullptr;
    if (method && !contributions) return nullptr;
    auto& cached = m_measured[size_t(kind)];
    if (!cached)
        cached = std::make_shared<const LayerHeadMaps>(
            contributions ? contributionMaps(*contributions, kind)
                          : attnlab::measuredMaps(*m_result, kind, m_measure, m_norms.get()));
    return cached;
}

void ViewContext::setDecodingOptions(const DecodingOptions& options) {
    if (sameOptions(options, m_options)) return;
    m_options = options;
    Q_EMIT decodingOptionsChanged(m_options);
}

void ViewContext::setDevice(const QString& device) {
    if (device == m_device) return;
    m_device = device;
    Q_EMIT deviceChanged(device);
    if (pivoting())
        loadPivot(pivotDirs());
    else if (const auto info = model())
        loadModel(QString::fromStdString(info->package_dir));
}

void ViewContext::setPalette(Palette palette, bool remember) {
    m_palette = palette;
    if (remember) QSettings().setValue("colorMap", paletteKey(palette));
    Q_EMIT paletteChanged(palette);
}

void ViewContext::setLiveTranslation(bool on, bool remember) {
    m_live = on;
    if (remember) QSettings().setValue("liveTranslation", on);
    Q_EMIT liveTranslationChanged(on);
}

double ViewContext::textSize() const { return QApplication::font().pointSizeF(); }

void ViewContext::setTextSize(double points, bool remember) {
    points = std::clamp(points, kMinTextSize, kMaxTextSize);
    QFont f = QApplication::font();
    f.setPointSizeF(points);
    QApplication::setFont(f);
    if (remember) QSettings().setValue("textSize", points);
    Q_EMIT textSizeChanged(points);
}

void ViewContext::setPresenting(bool on) {
    if (on == m_presenting) return;
    m_presenting = on;
    Q_EMIT presentingChanged(on);
}

void ViewContext::setAblated(const std::vector<HeadRef>& heads) {
    m_ablated = heads;
    // The sentence last asked for, with the options it was asked with: not the one shown when a newer
    // one is still being translated, and a failed one is tried again.
    if (!m_sentence.isEmpty()) translate(m_sentence, m_result_options);
}

namespace {
// A model of the Hugging Face cache by its name (its snapshot folder changes with every commit), any other
// by its folder.
QString computeTypeKey(const QString& package_dir) {
    if (const auto name = hubNameOfSnapshot(package_dir.toStdString()))
        return QStringLiteral("computeType/hub:") + QString::fromStdString(name->repo);
    const QFileInfo f(package_dir);
    return QStringLiteral("computeType/") + (f.exists() ? f.canonicalFilePath() : f.absoluteFilePath());
}
}  // namespace

void ViewContext::followFetch() {
    connect(m_fetch, &ModelFetch::progress, this, &ViewContext::fetchProgress);
    connect(m_fetch, &ModelFetch::finished, this, [this](const QString& name, const QString& dir) {
        Q_EMIT fetchEnded(name, true);
        loadModel(dir);
    });
    connect(m_fetch, &ModelFetch::failed, this, [this](const QString& name, const QString& message, bool cancelled) {
        Q_EMIT fetchEnded(name, false);
        if (cancelled)
            showStatus(tr("Stopped getting %1: what arrived is kept, and the next try goes on from there").arg(name),
                       8000);
        else
            reportFailure(Operation::GetModel, tr("%1: %2").arg(name, message));
    });
}

std::optional<QString> ViewContext::cachedModel(const QString& name) {
    if (QFileInfo::exists(name)) return std::nullopt;
    const auto hub = parseHubModelName(name.toStdString());
    if (!hub) return std::nullopt;
    if (const auto dir = cachedHubSnapshot(*hub, hubOptionsFromEnvironment())) return QString::fromStdString(*dir);
    return std::nullopt;
}

bool ViewContext::needsFetch(const QString& name) {
    return !QFileInfo::exists(name) && !looksLikeAPath(name.toStdString()) && parseHubModelName(name.toStdString()) &&
           !cachedModel(name);
}

void ViewContext::openModel(const QString& name_or_dir) {
    if (!needsFetch(name_or_dir)) {
        loadModel(cachedModel(name_or_dir).value_or(name_or_dir));
        return;
    }
    m_fetch->start(name_or_dir);
    if (m_fetch->running()) Q_EMIT fetchStarted(name_or_dir);
}

void ViewContext::cancelFetch() { m_fetch->cancel(); }

bool ViewContext::fetching() const { return m_fetch->running(); }

void ViewContext::loadModel(const QString& package_dir) {
    // Another model asked for while one is being got: the newer request wins (the download stops, what
    // arrived is kept), so that a finished download cannot replace the model opened after it.
    if (m_fetch->running()) m_fetch->cancel();
    // The compute type chosen for this model before (float32 for one never switched, or for one whose
    // type this machine cannot run: settings travel between machines).
    QString remembered = QSettings().value(computeTypeKey(package_dir), QStringLiteral("float32")).toString();
    if (attnlab::computeTypeUnavailable(remembered.toStdString())) remembered = QStringLiteral("float32");
    loadModelAs(package_dir, remembered);
}

void ViewContext::loadModelAs(const QString& package_dir, const QString& compute_type) {
    m_loading_dir = package_dir;
    if (compute_type != m_compute_type) {
        m_compute_type = compute_type;
        Q_EMIT computeTypeChanged(m_compute_type);
    }
    Q_EMIT modelLoading(package_dir);
    m_controller->loadModel(package_dir, m_device, m_compute_type);
}

void ViewContext::setComputeType(const QString& compute_type) {
    if (compute_type == m_compute_type) return;
    if (pivoting()) {  // both legs in it (not remembered per model: a pivot is chosen afresh each time)
        m_compute_type = compute_type;
        Q_EMIT computeTypeChanged(compute_type);
        loadPivot(pivotDirs());
        return;
    }
    // The model being loaded, else the loaded one; remembered once it loads (setModel).
    const QString dir = !m_loading_dir.isEmpty() ? m_loading_dir
                        : model()                ? QString::fromStdString(model()->package_dir)
                                                 : QString();
    if (dir.isEmpty()) {
        m_compute_type = compute_type;
        Q_EMIT computeTypeChanged(compute_type);
        return;
    }
    loadModelAs(dir, compute_type);
}

void ViewContext::translateSentence(const QString& sentence) {
    showSentence(sentence);
    translate(sentence, m_options);
}

void ViewContext::followPivot() {
    connect(m_controller, &TranslationController::pivotLoaded, this, [this](ModelInfoPtr first, ModelInfoPtr second) {
        m_pivot = {};
        m_pivot.models = {first, std::move(second)};
        Q_EMIT pivotChanged();
        setModel(std::move(first));
    });
    connect(m_controller, &TranslationController::pivotTranslated, this, [this](ResultPtr first, ResultPtr second) {
        if (!m_awaiting || !pivoting()) return;  // cleared since, or the pivot left
        if (!m_pivot.middle_edited) m_pivot.middle = QString::fromStdString(first->best.text);
        m_pivot.results = {std::move(first), std::move(second)};
        Q_EMIT pivotChanged();
        // The leg whose model the views have: a translation finished while the worker had not yet switched
        // to a leg asked for must not show that leg's maps under the other leg's model.
        setResult(m_pivot.results[size_t(m_pivot.shown)], m_result_options);
    });
    // Another leg's model and its translation: the views follow as for a model loaded, without
    // translating again.
    connect(m_controller, &TranslationController::legShown, this, [this](int leg, ModelInfoPtr info) {
        if (!pivoting() || leg != m_pivot.leg) return;
        m_pivot.shown = leg;
        m_last_error.clear();
        if (m_result) dropResult();
        Q_EMIT modelChanged(std::move(info));
        Q_EMIT pivotChanged();
        if (const auto r = m_pivot.results[size_t(leg)]) setResult(r, m_result_options);
    });
}

void ViewContext::loadPivot(const QStringList& package_dirs) {
    if (m_fetch->running()) m_fetch->cancel();
    m_loading_dir = package_dirs.value(0);
    Q_EMIT modelLoading(m_loading_dir);
    m_controller->loadPivot(package_dirs, m_device, m_compute_type);
}

void ViewContext::showLeg(int leg) {
    if (!pivoting() || leg == m_pivot.leg || leg < 0 || leg > 1) return;
    m_pivot.leg = leg;
    const bool ablated = !m_ablated.empty();
    m_ablated.clear();  // heads of the other leg's model
    m_controller->showLeg(leg);
    // The leg left was translated with heads switched off: both legs again with every head on (from the
    // cache where they were), so that no leg shows maps of heads the Heads tab no longer lists as off.
    if (ablated && !m_sentence.isEmpty()) translate(m_sentence, m_result_options);
}

// Through the whole pivot again with the middle sentence given: the first leg comes from the cache
// (the same sentence and options), the second translates the edited middle sentence. A middle sentence
// edited while its sentence's first leg has not come yet (another sentence typed since) is not taken:
// it belongs to the sentence before.
void ViewContext::setMiddleSentence(const QString& middle) {
    if (!pivoting() || middle.trimmed().isEmpty() || m_sentence.isEmpty()) return;
    if (!m_pivot.results[0] || m_pivot.source != m_sentence) return;  // results go when the sentence changes
    m_pivot.middle = middle;
    m_pivot.middle_edited = true;
    Q_EMIT pivotChanged();
    translate(m_sentence, m_result_options);
}

void ViewContext::useFirstLegOutput() {
    if (!pivoting() || !m_pivot.middle_edited || m_sentence.isEmpty()) return;
    m_pivot.middle_edited = false;
    Q_EMIT pivotChanged();
    translate(m_sentence, m_result_options);
}

DecodingOptions ViewContext::translationOptions(DecodingOptions options) const {
    options.record_trace = true;  // the Decoding tab shows the search
    options.ablate = m_ablated;
    return options;
}

void ViewContext::translateText(const QStringList& sentences) {
    m_controller->translateText(sentences, translationOptions(m_options));
}

void ViewContext::translate(const QString& sentence, const DecodingOptions& options) {
    m_sentence = sentence;
    m_awaiting = true;
    ++m_requests;
    m_result_options = translationOptions(options);
    Q_EMIT translationRequested(sentence, !options.force_prefix.empty() || !options.force_prefix_ids.empty());
    if (pivoting() && sentence != m_pivot.source) {  // another sentence: its own middle sentence
        m_pivot.source = sentence;
        m_pivot.middle_edited = false;
        // Neither the middle sentence nor the final translation of the sentence before stays in the row
        // while this one's legs run.
        m_pivot.results = {};
        m_pivot.middle.clear();
        Q_EMIT pivotChanged();
    }
    m_controller->translate(sentence, m_result_options, m_pivot.middle_edited ? m_pivot.middle : QString());
}

void ViewContext::reportFailure(Operation op, const QString& message) {
    m_last_error = message;
    if (op == Operation::LoadModel) {
        // A model that failed to load with another compute type opens in float32 next time, and the
        // switch shows what the model still loaded computes in.
        if (m_compute_type != QStringLiteral("float32")) QSettings().remove(computeTypeKey(m_loading_dir));
        m_loading_dir.clear();
        const QString loaded = model() ? QString::fromStdString(model()->compute_type) : QStringLiteral("float32");
        if (loaded != m_compute_type) {
            m_compute_type = loaded;
            Q_EMIT computeTypeChanged(loaded);
        }
    }
    if (op == Operation::Translate) {
        if (pivoting()) {  // the translations go; the middle sentence stays as it was written
            m_pivot.results = {};
            Q_EMIT pivotChanged();
        }
        m_result.reset();
        Q_EMIT resultChanged(nullptr);
    }
    if (op == Operation::Measure) {  // the value norms' (a method's contributions fail by contributionsFailed)
        m_measure_problems[size_t(MapMeasure::ValueNorm)] = message;
        Q_EMIT measuredMapsChanged();
    }
    Q_EMIT failed(op, message);
}

QStringList ViewContext::pivotDirs() const {
    QStringList dirs;
    for (const auto& m : m_pivot.models)
        if (m) dirs << QString::fromStdString(m->package_dir);
    return dirs;
}

void ViewContext::dropPivotResults() {
    if (!pivoting()) return;
    m_pivot.results = {};
    m_pivot.middle.clear();
    m_pivot.middle_edited = false;
    m_pivot.source.clear();
    Q_EMIT pivotChanged();
}

void ViewContext::clearResult() {
    dropPivotResults();
    m_sentence.clear();
    m_awaiting = false;
    m_last_error.clear();
    dropResult();
}

void ViewContext::dropResult() {
    m_result.reset();
    forgetMeasured();
    Q_EMIT resultChanged(nullptr);
}

void ViewContext::setResult(ResultPtr result, const DecodingOptions& options) {
    m_result = std::move(result);
    m_result_options = options;
    m_last_error.clear();
    forgetMeasured();
    askForMeasure();
    Q_EMIT resultChanged(m_result);
}

// A new model (or the same on another device): its heads start switched on, as the Heads tab shows,
// and what the model before computed is dropped, never shown under the new model's name.
void ViewContext::setModel(ModelInfoPtr info) {
    m_last_error.clear();
    m_loading_dir.clear();
    // Remembered only once the model computes in it.
    if (info->compute_type == "float32")
        QSettings().remove(computeTypeKey(QString::fromStdString(info->package_dir)));
    else
        QSettings().setValue(computeTypeKey(QString::fromStdString(info->package_dir)),
                             QString::fromStdString(info->compute_type));
    m_ablated.clear();
    // A translation by the model before arrives before its successor loads (the worker runs one job
    // at a time, and its signals come in order): dropped here. One asked for since comes after.
    if (m_result) dropResult();
    const unsigned requests = m_requests;
    Q_EMIT modelChanged(std::move(info));
    // The handlers translated nothing of their own (a lesson's step does): the current sentence again.
    if (m_live && requests == m_requests && !m_sentence.isEmpty()) translate(m_sentence, m_options);
}

std::optional<QString> ViewContext::exportAttentionJson(const QString& path) const {
    const auto info = model();
    if (!m_result || !info) return tr("translate a sentence first");
    try {
        // The maps beyond the weights that the Method has made: the value norms and each method's
        // contributions once computed, the rollout when it is shown.
        AttentionJsonExtras extras;
        if (m_norms) extras.value_norms.push_back(*m_norms);
        extras.rollout = m_measure == MapMeasure::Rollout;
        std::vector<Contributions> computed;
        for (const ContributionsPtr& c : m_contributions)
            if (c) computed.push_back(*c);
        if (!computed.empty()) extras.contributions.push_back(std::move(computed));
        writeAttentionJson(path.toStdString(), {*m_result}, *info, m_result_options, extras);
        return std::nullopt;
    } catch (const Error& e) {
        return QString::fromStdString(e.what());
    }
}

}  // namespace attnlab::ui
