#include "document/translation_controller.h"

#include "document/recent_models.h"

#include <attnlab/errors.h>
#include <attnlab/package.h>

#include <algorithm>
#include <filesystem>

#include <QCoreApplication>
#include <QMetaObject>

#include <mutex>

namespace attnlab::ui {

TranslationController::TranslationController(QObject* parent) : QObject(parent) {
    qRegisterMetaType<ResultPtr>("attnlab::ui::ResultPtr");
    qRegisterMetaType<ModelInfoPtr>("attnlab::ui::ModelInfoPtr");
    qRegisterMetaType<ExplanationPtr>("attnlab::ui::ExplanationPtr");
    qRegisterMetaType<TokenInsidePtr>("attnlab::ui::TokenInsidePtr");
    qRegisterMetaType<MasksPtr>("attnlab::ui::MasksPtr");
    qRegisterMetaType<HeadStatsPtr>("attnlab::ui::HeadStatsPtr");
    qRegisterMetaType<ImportancePtr>("attnlab::ui::ImportancePtr");
    qRegisterMetaType<Operation>("attnlab::ui::Operation");
    qRegisterMetaType<HistoryPtr>("attnlab::ui::HistoryPtr");
    qRegisterMetaType<ValueNormsPtr>("attnlab::ui::ValueNormsPtr");
    qRegisterMetaType<SaliencyPtr>("attnlab::ui::SaliencyPtr");
    qRegisterMetaType<ContributionsPtr>("attnlab::ui::ContributionsPtr");
    qRegisterMetaType<LogitLensPtr>("attnlab::ui::LogitLensPtr");
    qRegisterMetaType<ContrastivePtr>("attnlab::ui::ContrastivePtr");
    qRegisterMetaType<ContributionMethod>("attnlab::ContributionMethod");
    qRegisterMetaType<AlignmentReportPtr>("attnlab::ui::AlignmentReportPtr");
    qRegisterMetaType<DecodingOptions>("attnlab::DecodingOptions");
    m_worker = new QObject;
    m_worker->moveToThread(&m_thread);
    connect(&m_thread, &QThread::finished, m_worker, &QObject::deleteLater);
    m_thread.setObjectName("attnlab-translation");
    m_thread.start();
}

TranslationController::~TranslationController() {
    ++m_generation;       // cancels a running translation at its next step
    ++m_text_generation;  // and a whole text's (the window closes now, not after its last sentence)
    m_thread.quit();
    m_thread.wait();
}

// busyChanged(false) comes once the GUI thread has received every job's answers: each job's end is
// posted after the signals it emitted.
void TranslationController::post(std::function<void()> job) {
    if (m_unanswered++ == 0) Q_EMIT busyChanged(true);
    m_pending.fetch_add(1);
    QMetaObject::invokeMethod(
        m_worker,
        [this, job = std::move(job)] {
            job();
            m_pending.fetch_sub(1);
            QMetaObject::invokeMethod(
                this,
                [this] {
                    if (--m_unanswered == 0) Q_EMIT busyChanged(false);
                },
                Qt::QueuedConnection);
        },
        Qt::QueuedConnection);
}

void TranslationController::waitForIdle() {
    while (m_pending.load() > 0) {
        QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
        QThread::msleep(5);
    }
    QCoreApplication::processEvents();
}

ModelInfoPtr TranslationController::modelInfo() const {
    std::lock_guard<std::mutex> lock(m_info_mutex);
    return m_info;
}

void TranslationController::loadModel(const QString& package_dir, const QString& device, const QString& compute_type) {
    const std::string dir = package_dir.toStdString(), dev = device.toStdString(), ct = compute_type.toStdString();
    cancelText();  // a whole text being translated stops: the model does not wait for its last sentence
    post([this, dir, dev, ct] {
        try {
            TranslatorOptions o;
            o.device = dev;
            o.compute_type = ct;
            o.num_threads = m_threads;
            auto t = std::make_shared<Translator>(dir, o);
            auto info = std::make_shared<const ModelInfo>(t->info());
            m_cache.clear();
            m_legs.clear();
            m_leg_keys.clear();
            setTranslator(std::move(t), dir + "@" + dev + "@" + ct);
            Q_EMIT modelLoaded(info);
        } catch (const std::exception& e) {
            Q_EMIT failed(Operation::LoadModel, QString::fromStdString(e.what()));
        } catch (...) {
            Q_EMIT failed(Operation::LoadModel, tr("unknown error while loading %1").arg(QString::fromStdString(dir)));
        }
    });
}

void TranslationController::setTranslator(std::shared_ptr<Translator> t, const std::string& cache_key) {
    auto info = std::make_shared<const ModelInfo>(t->info());
    m_translator = std::move(t);
    m_cache_model = cache_key;
    std::lock_guard<std::mutex> lock(m_info_mutex);
    m_info = std::move(info);
}

void TranslationController::loadPivot(const QStringList& package_dirs, const QString& device,
                                      const QString& compute_type) {
    std::vector<std::string> dirs;
    for (const auto& d : package_dirs) dirs.push_back(d.toStdString());
    const std::string dev = device.toStdString(), ct = compute_type.toStdString();
    cancelText();  // as loadModel
    post([this, dirs, dev, ct] {
        try {
            if (dirs.size() != 2) throw InputError("a pivot has two legs, not " + std::to_string(dirs.size()));
            TranslatorOptions o;
            o.device = dev;
            o.compute_type = ct;
            o.num_threads = m_threads;
            std::vector<std::shared_ptr<Translator>> legs;
            std::vector<std::string> keys;
            for (const auto& dir : dirs) {
                legs.push_back(std::make_shared<Translator>(dir, o));
                keys.push_back(dir + "@" + dev + "@" + ct);
            }
            m_cache.clear();
            m_legs = std::move(legs);
            m_leg_keys = std::move(keys);
            m_shown_leg = 0;
            setTranslator(m_legs[0], m_leg_keys[0]);
            Q_EMIT pivotLoaded(std::make_shared<const ModelInfo>(m_legs[0]->info()),
                               std::make_shared<const ModelInfo>(m_legs[1]->info()));
        } catch (const std::exception& e) {
            Q_EMIT failed(Operation::LoadModel, QString::fromStdString(e.what()));
        }
    });
}

void TranslationController::showLeg(int leg) {
    post([this, leg] {
        if (leg < 0 || size_t(leg) >= m_legs.size()) return;
        m_shown_leg = size_t(leg);
        setTranslator(m_legs[m_shown_leg], m_leg_keys[m_shown_leg]);
        Q_EMIT legShown(leg, modelInfo());
    });
}

DecodingOptions TranslationController::legOptions(size_t leg, DecodingOptions o) const {
    if (leg != m_shown_leg) {
        o.ablate.clear();
        o.force_prefix.clear();
        o.force_prefix_ids.clear();
    }
    if (leg + 1 < m_legs.size()) o.nbest = 1;  // the middle sentence is the best translation
    o.source_language.clear();
    o.target_language.clear();
    return o;
}

ResultPtr TranslationController::translateLegNow(size_t leg, const std::string& text, const DecodingOptions& options,
                                                 int generation) {
    const DecodingOptions o = legOptions(leg, options);
    if (auto cached = m_cache.find(m_leg_keys[leg], text, o)) return cached;
    Q_EMIT translationStarted();
    ResultPtr result = std::make_shared<const TranslationResult>(
        m_legs[leg]->translate(text, o, [this, generation](const StepProgress& p) {
            if (generation != m_generation.load()) return false;
            Q_EMIT translationProgress(p.step + 1, p.max_steps);
            return true;
        }));
    m_cache.insert(m_leg_keys[leg], text, o, result);
    return result;
}

// On the worker: both legs, the second on `middle` when given, else on the first leg's best translation;
// a failure names its leg and that leg's languages (the second leg's input is the middle sentence).
void TranslationController::translatePivotNow(const std::string& text, const std::string& middle,
                                              const DecodingOptions& options, int generation) {
    size_t leg = 0;
    try {
        auto first = translateLegNow(0, text, options, generation);
        leg = 1;
        auto second = translateLegNow(1, middle.empty() ? first->best.text : middle, options, generation);
        if (generation == m_generation.load()) Q_EMIT pivotTranslated(std::move(first), std::move(second));
    } catch (const CancelledError&) {
    } catch (const std::exception& e) {
        const auto& c = m_legs[leg]->info().config;
        const std::string input = leg == 0 ? "" : " on the middle sentence";
        Q_EMIT failed(Operation::Translate,
                      QString::fromStdString("leg " + std::to_string(leg + 1) + " (" + c.source_lang + " → " +
                                             c.target_lang + ")" + input + ": " + e.what()));
    }
}

void TranslationController::translate(const QString& sentence, const DecodingOptions& options, const QString& middle) {
    const int generation = ++m_generation;
    const std::string text = sentence.toStdString(), given_middle = middle.toStdString();
    post([this, text, given_middle, options, generation] {
        if (generation != m_generation.load()) return;  // superseded while queued
        if (!m_translator) {
            Q_EMIT failed(Operation::Translate, tr("no model is loaded (File > Open model…)"));
            return;
        }
        if (!m_legs.empty()) {
            translatePivotNow(text, given_middle, options, generation);
            return;
        }
        if (auto cached = m_cache.find(m_cache_model, text, options)) {
            Q_EMIT translationFinished(std::move(cached));
            return;
        }
        Q_EMIT translationStarted();
        try {
            ResultPtr result = std::make_shared<TranslationResult>(
                m_translator->translate(text, options, [this, generation](const StepProgress& p) {
                    if (generation != m_generation.load()) return false;
                    Q_EMIT translationProgress(p.step + 1, p.max_steps);
                    return true;
                }));
            m_cache.insert(m_cache_model, text, options, result);
            if (generation == m_generation.load()) Q_EMIT translationFinished(std::move(result));
        } catch (const CancelledError&) {
            // a newer request took over; it reports for itself
        } catch (const std::exception& e) {
            Q_EMIT failed(Operation::Translate, QString::fromStdString(e.what()));
        } catch (...) {
            Q_EMIT failed(Operation::Translate, tr("unknown error during translation"));
        }
    });
}

void TranslationController::postInspection(std::function<void(const Translator&)> work, Operation op) {
    post([this, work = std::move(work), op] {
        if (!m_translator) {
            Q_EMIT failed(op, tr("no model is loaded (File > Open model…)"));
            return;
        }
        try {
            work(*m_translator);
        } catch (const std::exception& e) {
            Q_EMIT failed(op, QString::fromStdString(e.what()));
        } catch (...) {
            Q_EMIT failed(op, tr("unknown error"));
        }
    });
}

void TranslationController::explain(ResultPtr result, const CellRef& cell) {
    if (!result) return;
    postInspection(
        [this, result, cell](const Translator& t) {
            Q_EMIT explained(std::make_shared<const AttentionExplanation>(t.explain(*result, cell)));
        },
        Operation::Explain);
}

void TranslationController::computeValueNorms(ResultPtr result) {
    if (!result) return;
    postInspection(
        [this, result](const Translator& t) {
            Q_EMIT valueNormsReady(result, std::make_shared<const ValueNorms>(t.valueNorms(*result)));
        },
        Operation::Measure);
}

void TranslationController::postForShown(std::function<void(const Translator&)> work,
                                         std::function<void(const QString&)> failure) {
    const int generation = m_generation.load();
    post([this, generation, work = std::move(work), failure = std::move(failure)] {
        if (generation != m_generation.load()) return;  // its translation is no longer the one shown
        if (!m_translator) return failure(tr("no model is loaded (File > Open model…)"));
        try {
            work(*m_translator);
        } catch (const std::exception& e) {
            failure(QString::fromStdString(e.what()));
        } catch (...) {
            failure(tr("unknown error"));
        }
    });
}

void TranslationController::computeContributions(ResultPtr result, ContributionMethod method) {
    if (!result) return;
    const int asked = m_contribution_generation.load();
    postForShown(
        [this, result, method, asked](const Translator& t) {
            if (asked != m_contribution_generation.load()) return;  // stopped before it started
            Q_EMIT contributionsStarted(result, method);
            Q_EMIT contributionsReady(result, std::make_shared<const Contributions>(t.contributions(*result, method)));
        },
        [this, result, method](const QString& message) { Q_EMIT contributionsFailed(result, method, message); });
}

void TranslationController::computeLogitLens(ResultPtr result, int top) {
    if (!result) return;
    postForShown(
        [this, result, top](const Translator& t) {
            Q_EMIT logitLensReady(result, std::make_shared<const LogitLens>(t.logitLens(*result, top)));
        },
        [this](const QString& message) { Q_EMIT failed(Operation::LogitLens, message); });
}

void TranslationController::computeContrastive(ResultPtr result, const ContrastiveQuery& query) {
    if (!result) return;
    postForShown(
        [this, result, query](const Translator& t) {
            Q_EMIT contrastiveReady(result, std::make_shared<const Contrastive>(t.contrastive(*result, query)));
        },
        [this, result](const QString& message) { Q_EMIT contrastiveFailed(result, message); });
}

void TranslationController::computeSaliency(ResultPtr result) {
    if (!result) return;
    postInspection(
        [this, result](const Translator& t) {
            Q_EMIT saliencyReady(result, std::make_shared<const Saliency>(t.saliency(*result)));
        },
        Operation::Saliency);
}

void TranslationController::inspectToken(ResultPtr result, bool target, int position) {
    if (!result) return;
    postInspection(
        [this, result, target, position](const Translator& t) {
            Q_EMIT tokenInspected(std::make_shared<const TokenInside>(t.tokenInside(*result, target, position)));
        },
        Operation::Inspect);
}

void TranslationController::translatePair(const QString& a, const QString& b, const DecodingOptions& options) {
    const std::string sa = a.toStdString(), sb = b.toStdString();
    postInspection(
        [this, sa, sb, options](const Translator& t) {
            auto ra = translateCached(t, sa, options);
            auto rb = translateCached(t, sb, options);
            Q_EMIT pairTranslated(std::move(ra), std::move(rb));
        },
        Operation::TranslatePair);
}

void TranslationController::translateBaseline(const QString& sentence, const DecodingOptions& options) {
    const int baseline = ++m_baseline_generation, generation = m_generation.load();
    const std::string text = sentence.toStdString();
    // Not postInspection: a "before" that fails is the Ablation page's to say (baselineFailed), not a failed
    // translation, which would clear the result every view shows.
    post([this, sentence, text, options, baseline, generation] {
        const auto newest = [this, baseline, generation] {
            return baseline == m_baseline_generation.load() && generation == m_generation.load();
        };
        if (!newest()) return;
        DecodingOptions o = m_legs.empty() ? options : legOptions(m_shown_leg, options);
        o.ablate.clear();
        ResultPtr result = m_cache.find(m_cache_model, text, o);
        try {
            if (!m_translator) throw InputError("no model is loaded (File > Open model…)");
            if (!result) {
                result = std::make_shared<const TranslationResult>(
                    m_translator->translate(text, o, [&newest](const StepProgress&) { return newest(); }));
                m_cache.insert(m_cache_model, text, o, result);
            }
        } catch (const CancelledError&) {
            return;  // a newer request answers for itself
        } catch (const std::exception& e) {
            if (newest()) Q_EMIT baselineFailed(sentence, options, QString::fromStdString(e.what()));
            return;
        }
        if (newest()) Q_EMIT baselineTranslated(std::move(result), options);
    });
}

ResultPtr TranslationController::translateCached(const Translator& t, const std::string& text,
                                                 const DecodingOptions& options) {
    if (auto cached = m_cache.find(m_cache_model, text, options)) return cached;
    ResultPtr result = std::make_shared<const TranslationResult>(t.translate(text, options));
    m_cache.insert(m_cache_model, text, options, result);
    return result;
}

void TranslationController::translateText(const QStringList& sentences, const DecodingOptions& options) {
    const int generation = ++m_text_generation;
    std::vector<std::string> texts;
    for (const QString& s : sentences) texts.push_back(s.toStdString());
    post([this, texts, options, generation] {
        int translated = 0;
        QString problem;
        try {
            if (!m_translator) throw InputError("no model is loaded (File > Open model…)");
            if (!m_legs.empty())
                throw InputError(
                    "a whole text is translated by one model; a pivot (two models) translates one "
                    "sentence at a time");
            std::vector<int> batch;
            const size_t most = size_t(std::clamp(options.max_batch_size, 1, kTextBatch));
            for (size_t i = 0; i < texts.size() && generation == m_text_generation.load(); ++i) {
                if (auto why = m_translator->inputProblem(texts[i]))
                    Q_EMIT textSentenceFailed(int(i), QString::fromStdString(*why));
                else
                    batch.push_back(int(i));
                if (batch.empty() || (batch.size() < most && i + 1 < texts.size())) continue;
                if (!translateTextBatch(texts, batch, options, generation)) break;
                translated += int(batch.size());
                batch.clear();
            }
        } catch (const std::exception& e) {
            problem = QString::fromStdString(e.what());
        }
        Q_EMIT textTranslationEnded(translated, int(texts.size()), generation != m_text_generation.load(), problem);
    });
}

bool TranslationController::translateTextBatch(const std::vector<std::string>& sentences, const std::vector<int>& batch,
                                               const DecodingOptions& options, int generation) {
    std::vector<std::string> texts;
    for (int i : batch) texts.push_back(sentences[size_t(i)]);
    std::vector<TranslationResult> results;
    try {
        results = m_translator->translateBatch(
            texts, options, [this, generation](const StepProgress&) { return generation == m_text_generation.load(); });
    } catch (const CancelledError&) {
        return false;
    }
    for (size_t k = 0; k < batch.size(); ++k) {
        auto result = std::make_shared<const TranslationResult>(std::move(results[k]));
        m_cache.insert(m_cache_model, texts[k], options, result);
        Q_EMIT textSentenceTranslated(batch[k], std::move(result));
    }
    return true;
}

void TranslationController::runHeadLab(const HeadLabRequest& request) {
    m_cancel_head_lab.store(false);
    postInspection(
        [this, request](const Translator& t) {
            const auto progress = [this](const CorpusProgress& p) {
                Q_EMIT headLabProgress(QString::fromStdString(p.stage), p.done, p.total);
                return !m_cancel_head_lab.load();
            };
            const auto* refs = request.references.empty() ? nullptr : &request.references;
            // The comparison is planned before anything runs: one that cannot be made (a run started before
            // the model chosen was checked) is left out, and why said, not a reason to stop the run.
            QString left_out;
            ComparisonPlan plan;
            const Translator* o = nullptr;
            if (!request.compare_model.empty()) {
                try {
                    o = &otherModel(request.compare_model, t);
                    plan = comparisonPlan(t, *o, request.decoding);
                } catch (const std::exception& e) {
                    plan.problem = e.what();
                }
                if (plan.problem.empty() && plan.reversed && !refs)
                    plan.problem = request.compare_model +
                                   " translates the other way round and so reads the references, which this "
                                   "corpus lacks";
                if (!plan.problem.empty()) o = nullptr, left_out = QString::fromStdString(plan.problem);
            }
            auto stats = std::make_shared<const HeadStatsReport>(
                corpusHeadStatistics(t, request.sources, refs, request.decoding, 8, progress, request.measure));
            ImportancePtr importance;
            if (request.importance) {
                if (!refs) throw InputError("importance needs reference translations");
                ImportanceOptions io;
                io.decoding = request.decoding;
                importance = std::make_shared<const ImportanceReport>(
                    headImportance(t, request.sources, request.references, io, progress));
            }
            HeadStatsPtr other;
            if (o) {
                DecodingOptions od = request.decoding;
                od.source_language = plan.source_language;
                od.target_language = plan.target_language;
                const auto& other_src = plan.reversed ? request.references : request.sources;
                const auto* other_refs = !refs ? nullptr : plan.reversed ? &request.sources : refs;
                other = std::make_shared<const HeadStatsReport>(
                    corpusHeadStatistics(*o, other_src, other_refs, od, 8, progress, request.measure));
            }
            Q_EMIT headsCompared(std::move(other), QString::fromStdString(request.compare_model), plan.reversed,
                                 left_out);
            Q_EMIT headLabFinished(std::move(stats), std::move(importance));
        },
        Operation::HeadLab);
}

ComparisonPlan TranslationController::comparisonPlan(const Translator& loaded, const Translator& other,
                                                     const DecodingOptions& options) {
    const auto& c = loaded.info().config;
    const std::string source = options.source_language.empty() ? c.source_lang : options.source_language;
    const std::string target = options.target_language.empty() ? c.target_lang : options.target_language;
    const QString name = RecentModels::displayName(QString::fromStdString(other.info().package_dir));
    return planComparison(source, target, other.info().config, name.toStdString());
}

void TranslationController::checkComparison(const QString& dir, const QString& source, const QString& target) {
    DecodingOptions languages;
    languages.source_language = source.toStdString();
    languages.target_language = target.toStdString();
    post([this, dir, languages] {
        ComparisonPlan plan;
        QString from, to;
        try {
            if (!m_translator) throw InputError("no model is loaded");
            const Translator& o = otherModel(dir.toStdString(), *m_translator);
            plan = comparisonPlan(*m_translator, o, languages);
            const auto& c = o.info().config;
            from = QString::fromStdString(plan.source_language.empty() ? c.source_lang : plan.source_language);
            to = QString::fromStdString(plan.target_language.empty() ? c.target_lang : plan.target_language);
        } catch (const std::exception& e) {
            plan.problem = e.what();
        }
        Q_EMIT comparisonChecked(dir, plan.reversed, from, to, QString::fromStdString(plan.problem));
    });
}

const Translator& TranslationController::otherModel(const std::string& dir, const Translator& loaded) {
    if (!m_other || m_other->info().package_dir != dir || m_other->info().device != loaded.info().device) {
        m_other.reset();
        TranslatorOptions o;
        o.device = loaded.info().device;
        m_other = std::make_shared<Translator>(dir, o);
    }
    return *m_other;
}

void TranslationController::teacherForcePair(const QString& source, const QString& target,
                                             const DecodingOptions& options, Operation op,
                                             void (TranslationController::*answer)(ResultPtr)) {
    const std::string s = source.toStdString(), g = target.toStdString();
    postInspection(
        [this, s, g, options, answer](const Translator& t) {
            (this->*answer)(std::make_shared<const TranslationResult>(t.teacherForce({s}, {g}, options).front()));
        },
        op);
}

void TranslationController::alignPair(const QString& source, const QString& target) {
    teacherForcePair(source, target, {}, Operation::Align, &TranslationController::pairAligned);
}

void TranslationController::scorePair(const QString& source, const QString& target, const DecodingOptions& options) {
    teacherForcePair(source, target, options, Operation::Score, &TranslationController::pairScored);
}

void TranslationController::alignExamples(const std::vector<Example>& examples) {
    postInspection(
        [this, examples](const Translator& t) {
            std::vector<std::string> sources, targets;
            std::vector<GoldAlignment> gold;
            for (size_t i = 0; i < examples.size(); ++i) {
                sources.push_back(examples[i].source);
                targets.push_back(examples[i].reference);
                gold.push_back(parseGoldLine(examples[i].alignment, {}, "example " + std::to_string(i + 1)));
            }
            std::string dir = reverseBundledModel(t.info().config);
            const Translator* reverse = nullptr;
            try {
                if (!dir.empty() && dir != t.info().package_dir) reverse = &otherModel(dir, t);
            } catch (const Error&) {  // a broken bundled package: the methods without symmetrisation
                dir.clear();
            }
            auto report = std::make_shared<const AlignmentReport>(
                alignCorpus(t, sources, targets, &gold, "the examples' gold", 0.0, {}, reverse));
            Q_EMIT examplesAligned(std::move(report), reverse ? QString::fromStdString(dir) : QString());
        },
        Operation::Align);
}

void TranslationController::inspectMasks(ResultPtr result, const QString& second, const DecodingOptions& options) {
    if (!result) return;
    const std::string text = second.trimmed().toStdString();
    postInspection(
        [this, result, text, options](const Translator& t) {
            std::vector<TranslationResult> batch{*result};
            if (!text.empty()) batch.push_back(t.translate(text, options));
            Q_EMIT masksReady(std::make_shared<const BatchMasks>(t.masks(batch)));
        },
        Operation::Inspect);
}

void TranslationController::loadHistory(const QString& package_dir) {
    const std::string dir = package_dir.toStdString();
    post([this, package_dir, dir] {
        try {
            const auto file = std::filesystem::path(dir) / package_files::kAttentionHistory;
            HistoryPtr history;
            if (std::filesystem::exists(file))
                history = std::make_shared<const AttentionHistory>(readAttentionHistory(file.string()));
            Q_EMIT historyLoaded(package_dir, std::move(history));
        } catch (const std::exception& e) {
            Q_EMIT failed(Operation::History, QString::fromStdString(e.what()));
        }
    });
}

}  // namespace attnlab::ui
