#include "shell/translate_panel.h"

#include <algorithm>

#include "dialogs/text_translation.h"
#include "dialogs/translation_history_dialog.h"
#include "document/recent_models.h"
#include "shell/pivot_row.h"
#include "widgets/confidence_text.h"
#include "widgets/language_picker.h"

#include <attnlab/confidence.h>
#include <attnlab/translator.h>

#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QEvent>
#include <QGridLayout>
#include <QGuiApplication>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QProgressBar>
#include <QPushButton>
#include <QShortcut>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QStyle>
#include <QTimer>
#include <QToolButton>

#include <QDir>
#include <QFileInfo>

#include <attnlab/package.h>
#include <attnlab/route.h>
#include <attnlab/unknown_languages.h>

#include <cmath>

namespace attnlab::ui {

namespace {
QString directionLabel(const std::string& source, const std::string& target, const QString& name) {
    return QStringLiteral("%1 → %2  (%3)").arg(QString::fromStdString(source), QString::fromStdString(target), name);
}
}  // namespace

QList<QPair<QString, QString>> bundledModelChoices() {
    QList<QPair<QString, QString>> out;
    for (const auto& m : bundledModels())
        out.append({directionLabel(m.source_lang, m.target_lang, QString::fromStdString(m.name)),
                    QFileInfo(QString::fromStdString(m.dir)).canonicalFilePath()});
    for (const auto& m : installedArgosModels())
        out.append(
            {directionLabel(m.source_lang, m.target_lang, QObject::tr("Argos: %1").arg(QString::fromStdString(m.name))),
             QFileInfo(QString::fromStdString(m.dir)).canonicalFilePath()});
    return out;
}

QList<QPair<QString, QStringList>> pivotChoices() {
    QList<QPair<QString, QStringList>> out;
    for (const auto& route : pivotRoutes(installedModels())) {
        QStringList dirs;
        for (const auto& m : route.legs) dirs << QFileInfo(QString::fromStdString(m.dir)).canonicalFilePath();
        out.append({pivotLabel(route.from(), route.middle(), route.to()), dirs});
    }
    return out;
}

QString pivotLabel(const std::string& from, const std::string& middle, const std::string& to) {
    return QObject::tr("%1 → %2  via %3")
        .arg(QString::fromStdString(from), QString::fromStdString(to), QString::fromStdString(middle));
}

QString modelLabel(const ModelInfo& info) {
    const QString dir = QString::fromStdString(info.package_dir);
    // a model of the Hugging Face cache by its name, not by its snapshot's commit
    const auto hub = hubNameOfSnapshot(info.package_dir);
    const QString name =
        hub ? QString::fromStdString(hubModelNameString(*hub)) : QFileInfo(QDir::cleanPath(dir)).fileName();
    // A multilingual model's direction is chosen beside it (LanguagePicker).
    if (info.config.multilingual())
        return QObject::tr("%1 languages  (%2)").arg(info.config.languages.size()).arg(name);
    // "src → tgt" would read as if it were a direction: nothing names the languages, the name alone
    if (!unknown_language::known(info.config.source_lang) || !unknown_language::known(info.config.target_lang))
        return name;
    return directionLabel(info.config.source_lang, info.config.target_lang, name);
}

TranslatePanel::TranslatePanel(ViewContext* context, QWidget* parent) : QWidget(parent) {
    m_sentence = new QLineEdit(this);
    m_sentence->setPlaceholderText(tr("Type a sentence and press Enter"));
    m_sentence->setClearButtonEnabled(true);
    m_examples = new QPushButton(tr("Examples"), this);
    m_direction = new QComboBox(this);
    m_direction->setToolTip(
        tr("Translation direction: the bundled models and the installed Argos Translate packages (File > Models)"));
    m_direction->setVisible(false);
    m_languages = new LanguagePicker(this);  // shown for a multilingual model
    m_go = new QPushButton(tr("Translate"), this);
    m_live = new QCheckBox(tr("Live"), this);
    m_live->setToolTip(
        tr("Translate as you type (after a pause of %1 ms); Enter always translates at once").arg(kLiveDelayMs));
    m_live_timer = new QTimer(this);
    m_live_timer->setSingleShot(true);
    m_live_timer->setInterval(kLiveDelayMs);
    m_beam = new QSpinBox(this);
    m_beam->setRange(1, 32);
    const DecodingOptions defaults;  // the library's defaults, not typed again
    m_beam->setValue(defaults.beam_size);
    m_beam->setToolTip(tr("Beam size (1 = greedy)"));
    m_alpha = new QDoubleSpinBox(this);
    m_alpha->setRange(0.0, 3.0);
    m_alpha->setSingleStep(0.1);
    m_alpha->setValue(defaults.length_penalty);
    m_alpha->setToolTip(tr("Length penalty: hypotheses are ranked by score / length^alpha"));
    m_max_len = new QSpinBox(this);
    m_max_len->setRange(1, 1000);
    m_max_len->setValue(defaults.max_length);
    m_max_len->setToolTip(tr("Longest translation in pieces"));
    m_device = new QComboBox(this);
    m_device->addItem(tr("auto"), "auto");
    m_device->addItem(tr("CPU"), "cpu");
    if (attnlab::cudaAvailable()) m_device->addItem(tr("CUDA"), "cuda");
    m_device->setToolTip(tr("Where the model runs; changing it reloads the model"));
    m_compute = new QComboBox(this);
    for (const char* type : {"float32", "int8", "bfloat16"}) {
        m_compute->addItem(QString::fromLatin1(type), QString::fromLatin1(type));
        if (const auto why = attnlab::computeTypeUnavailable(type)) {
            const int i = m_compute->count() - 1;
            m_compute->setItemData(i, false, Qt::UserRole - 1);  // disabled: QStandardItemModel's enabled flag
            m_compute->setItemData(i, QString::fromStdString(*why), Qt::ToolTipRole);
        }
    }
    m_compute->setToolTip(
        tr("What the model is computed in: float32 is the model as trained; int8 and bfloat16 are "
           "faster and hold a quarter / half of its memory, their weights rounded (the maps are computed "
           "exactly from the rounded weights). Remembered per model; changing it reloads the model"));
    m_translation = new ConfidenceText(this);  // draws at 1.4 x the app's text size, whatever it is
    m_legend = new QLabel(ConfidenceText::legendHtml(), this);
    m_legend->setVisible(false);
    m_legend->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);  // cut, as m_details, on a narrow screen
    // The warning's room is kept while a translation is shown, flagged or not, so nothing below it
    // moves when it comes or goes: one line (cut to the width with "…", the whole text on hover).
    m_warning_slot = new QWidget(this);
    m_warning_slot->setVisible(false);
    m_warning = new QLabel(m_warning_slot);
    m_warning->setStyleSheet(QStringLiteral("QLabel { background:#fff3cd; color:#664d03; border:1px solid #e0b000;"
                                            " padding:%1px; }")
                                 .arg(kWarningPadding));
    m_warning->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Fixed);
    m_warning->setVisible(false);
    m_warning->setFont(font());
    m_warning->installEventFilter(this);  // its width decides where the text is cut
    auto* slot = new QVBoxLayout(m_warning_slot);
    slot->setContentsMargins(0, 0, 0, 0);
    slot->addWidget(m_warning);
    fitWarningSlot();
    m_details = new QLabel(this);
    m_details->setTextInteractionFlags(Qt::TextSelectableByMouse);
    // Four fixed lines, not wrapped: a wrapped label's height-for-width is not honoured by the
    // window's layout and its last line was cut off. A long piece list is cut at the right edge
    // instead and shown whole in the tooltip.
    m_details->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
    m_progress = new QProgressBar(this);
    m_progress->setMaximumHeight(6);
    m_progress->setTextVisible(false);
    m_progress->setVisible(false);
    m_copy = new QToolButton(this);
    m_copy->setText(tr("Copy"));
    m_copy->setToolTip(tr("Copy the translation (%1)").arg(copyKey().toString(QKeySequence::NativeText)));
    m_copy->setEnabled(false);
    m_show_history = new QToolButton(this);
    m_show_history->setText(tr("History…"));
    m_show_history->setToolTip(
        tr("What was translated here: search it, open an entry again with its model, "
           "languages and options, clear it, or stop keeping it"));
    m_history = new TranslationHistory(TranslationHistory::defaultPath(), this);
    if (const auto problem = m_history->load()) m_history_problem = *problem;
    connect(m_history, &TranslationHistory::saveFailed, this, [this](const QString& problem) {
        m_history_problem = problem;
        if (m_context)
            m_context->showStatus(tr("The translation history could not be written: %1").arg(problem), 10000);
        if (m_history_dialog) m_history_dialog->setNotice(m_history_problem);
    });

    auto* row = new QHBoxLayout;
    row->addWidget(m_direction);
    row->addWidget(m_languages);
    row->addWidget(m_sentence, 1);
    row->addWidget(m_examples);
    row->addWidget(m_live);
    row->addWidget(m_go);
    m_options_row = new QWidget(this);
    auto* opts = new QHBoxLayout(m_options_row);
    opts->setContentsMargins(0, 0, 0, 0);
    opts->addWidget(new QLabel(tr("Beam"), this));
    opts->addWidget(m_beam);
    opts->addWidget(new QLabel(tr("α"), this));
    opts->addWidget(m_alpha);
    opts->addWidget(new QLabel(tr("Max length"), this));
    opts->addWidget(m_max_len);
    opts->addWidget(new QLabel(tr("Device"), this));
    opts->addWidget(m_device);
    opts->addWidget(new QLabel(tr("Compute"), this));
    opts->addWidget(m_compute);
    opts->addStretch();
    // The piece lines, score and timing: room for the maps when the text is large.
    m_show_details = new QToolButton(this);
    m_show_details->setText(tr("Details"));
    m_show_details->setCheckable(true);
    m_show_details->setChecked(true);
    m_show_details->setToolTip(tr("Show the pieces, the score, the time and the confidence figures"));
    connect(m_show_details, &QToolButton::toggled, m_details, &QWidget::setVisible);
    opts->addWidget(m_show_details);
    opts->addWidget(m_show_history);
    m_pivot = new PivotRow(context, this);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(row);
    layout->addWidget(m_pivot);
    layout->addWidget(m_options_row);
    layout->addWidget(m_progress);
    auto* translation_row = new QHBoxLayout;
    translation_row->addWidget(m_translation, 1);
    translation_row->addWidget(m_copy, 0, Qt::AlignTop);
    layout->addLayout(translation_row);
    layout->addWidget(m_legend);
    layout->addWidget(m_warning_slot);
    layout->addWidget(m_details);

    connect(m_sentence, &QLineEdit::returnPressed, this, &TranslatePanel::request);
    // Ctrl+Enter translates wherever the focus is in the window (Live off: the way to ask without Enter
    // in the sentence field); the keypad's Enter too.
    for (const QKeySequence& key : {translateKey(), QKeySequence(Qt::CTRL | Qt::Key_Enter)})
        connect(new QShortcut(key, this), &QShortcut::activated, this, [this] {
            if (!m_sentence->text().trimmed().isEmpty()) request();
        });
    m_go->setToolTip(tr("Translate the sentence (Enter in the field, %1 anywhere in the window)")
                         .arg(translateKey().toString(QKeySequence::NativeText)));
    connect(new QShortcut(copyKey(), this), &QShortcut::activated, this, &TranslatePanel::copyTranslation);
    connect(m_copy, &QToolButton::clicked, this, &TranslatePanel::copyTranslation);
    connect(m_show_history, &QToolButton::clicked, this, &TranslatePanel::showHistory);
    connect(m_sentence, &QLineEdit::textEdited, this, &TranslatePanel::typed);
    connect(m_live_timer, &QTimer::timeout, this, &TranslatePanel::liveDue);
    connect(m_go, &QPushButton::clicked, this, &TranslatePanel::request);
    connect(m_direction, &QComboBox::activated, this, [this] {
        const QVariant chosen = m_direction->currentData();
        if (chosen.typeId() == QMetaType::QStringList)
            Q_EMIT pivotChosen(chosen.toStringList());
        else
            Q_EMIT modelChosen(chosen.toString());
    });
    connect(m_device, &QComboBox::activated, this, [this] { Q_EMIT deviceChanged(device()); });
    follow(context);
}

// In presenter mode the short form (a projector's room goes to the maps); the whole message on hover.
void TranslatePanel::showWarning() {
    const QString full = QStringLiteral("⚠ ") + QString::fromStdString(lowConfidenceMessage(m_confidence));
    const bool brief = m_context && m_context->presenting();
    m_warning_text = !brief ? full
                            : tr("⚠ low confidence (%1 per piece, below %2): do not trust this translation")
                                  .arg(m_confidence.probability, 0, 'f', 2)
                                  .arg(std::exp(m_confidence.threshold), 0, 'f', 2);
    m_warning->setToolTip(full);
    m_warning->setVisible(m_confidence.low);
    if (m_only_end_mark) {  // nothing to read in the translation's place: the line says why, before all else
        const QString end = tr("⚠ the model produced only the end-of-sentence mark (</s>): no words to show");
        m_warning->setToolTip(m_confidence.low ? end + "\n" + full : end);
        m_warning_text = m_confidence.low && !brief ? end + "; " + full.mid(2) : end;
        m_warning->setVisible(true);
    }
    cutWarning();
}

void TranslatePanel::cutWarning() {
    const int room = m_warning->contentsRect().width() - 2 * kWarningPadding;
    m_warning->setText(m_warning->fontMetrics().elidedText(m_warning_text, Qt::ElideRight, std::max(room, 0)));
}

// One line of the warning's font, its padding and border: the same height whether it shows or not.
void TranslatePanel::fitWarningSlot() {
    const int h = m_warning->fontMetrics().height() + 2 * kWarningPadding + 2;
    m_warning->setFixedHeight(h);
    m_warning_slot->setFixedHeight(h);
}

bool TranslatePanel::eventFilter(QObject* watched, QEvent* event) {
    if (watched == m_warning && event->type() == QEvent::Resize) cutWarning();
    return QWidget::eventFilter(watched, event);
}

void TranslatePanel::present(bool on) {
    if (on) m_details_before_presenting = m_show_details->isChecked();
    m_show_details->setChecked(on ? false : m_details_before_presenting);
    m_options_row->setVisible(!on);  // a lesson's steps set beam, alpha and length; Esc brings it back
    // The legend folds away too: the warning's room takes its line, so presenting costs no line more.
    m_legend->setVisible(!on && !m_warning_slot->isHidden());
    if (!m_warning->isHidden()) showWarning();
}

void TranslatePanel::changeEvent(QEvent* event) {
    // A style sheet cuts the warning off the application font: it follows the text size by hand.
    if (event->type() == QEvent::FontChange) {
        m_warning->setFont(font());
        fitWarningSlot();
        cutWarning();
    }
    QWidget::changeEvent(event);
}

void TranslatePanel::follow(ViewContext* c) {
    m_context = c;
    c->setDecodingOptions(options());
    const auto push = [this, c] { c->setDecodingOptions(options()); };
    connect(m_beam, &QSpinBox::valueChanged, this, push);
    connect(m_alpha, &QDoubleSpinBox::valueChanged, this, push);
    connect(m_max_len, &QSpinBox::valueChanged, this, push);
    // Another language changes what is computed: the sentence is translated again at once.
    connect(m_languages, &LanguagePicker::changed, this, [this, push] {
        push();
        if (!m_sentence->text().trimmed().isEmpty()) request();
    });
    connect(c, &ViewContext::decodingOptionsChanged, this, &TranslatePanel::setOptions);
    connect(this, &TranslatePanel::translateRequested, c,
            [c](const QString& s, const DecodingOptions& o) { c->translate(s, o); });
    connect(this, &TranslatePanel::modelChosen, c, &ViewContext::loadModel);
    connect(this, &TranslatePanel::pivotChosen, c, &ViewContext::loadPivot);
    m_live->setChecked(c->liveTranslation());
    connect(m_live, &QCheckBox::toggled, c, [c](bool on) { c->setLiveTranslation(on); });
    connect(c, &ViewContext::liveTranslationChanged, this, [this](bool on) {
        const QSignalBlocker b(m_live);
        m_live->setChecked(on);
        if (!on) m_live_timer->stop();
    });
    connect(c, &ViewContext::presentingChanged, this, &TranslatePanel::present);
    connect(this, &TranslatePanel::deviceChanged, c, &ViewContext::setDevice);
    connect(c, &ViewContext::deviceChanged, this, &TranslatePanel::setDevice);
    connect(m_compute, &QComboBox::activated, c, [this, c] { c->setComputeType(m_compute->currentData().toString()); });
    connect(c, &ViewContext::computeTypeChanged, this, &TranslatePanel::setComputeType);
    connect(c, &ViewContext::sentenceShown, this, &TranslatePanel::setSentence);
    // Issue 52, item 9 (engineer D): the picker's "Detect language" follows what is typed (the options follow,
    // no translation asked); a whole text from the field's own button (File › Translate a text… too).
    connect(m_sentence, &QLineEdit::textChanged, m_languages, &LanguagePicker::detectFrom);
    connect(m_languages, &LanguagePicker::detected, this, push);
    QAction* whole_text =
        m_sentence->addAction(style()->standardIcon(QStyle::SP_FileIcon), QLineEdit::TrailingPosition);
    whole_text->setToolTip(tr("Translate a whole text or a file, sentence by sentence…"));
    connect(whole_text, &QAction::triggered, this, [this, c] { TextTranslationDialog::showFor(c, window()); });
    connect(c, &ViewContext::resultChanged, this, [this](ResultPtr r) {
        if (!r) return showNote({});  // a failure says why next (failed)
        remember(r);
        showResult(std::move(r));
    });
    // An emptied sentence has no translation: the context drops it and every view clears itself.
    connect(m_sentence, &QLineEdit::textChanged, this, [this, c](const QString& text) {
        if (text.trimmed().isEmpty() && (c->result() || !c->sentence().isEmpty())) c->clearResult();
    });
    connect(c, &ViewContext::failed, this, [this](Operation op, const QString& m) {
        if (op == Operation::Translate) showError(m);
        if (op == Operation::LoadModel || op == Operation::GetModel) m_reopening.reset();  // its model is not coming
    });
    connect(c, &ViewContext::pivotChanged, this, &TranslatePanel::resumeReopening);
    // The history's file could not be read: said once the window listens (and in the history's window).
    if (!m_history_problem.isEmpty())
        QTimer::singleShot(0, this, [this] { m_context->showStatus(m_history_problem, 20000); });
    connect(c->controller(), &TranslationController::translationProgress, this, &TranslatePanel::showProgress);
    connect(c->controller(), &TranslationController::busyChanged, this, &TranslatePanel::setBusy);
    connect(c, &ViewContext::modelChanged, this, [this, c](ModelInfoPtr info) {
        // Before the context translates the sentence again with the options it holds.
        m_languages->setModel(info->config, QFileInfo(QString::fromStdString(info->package_dir)).canonicalFilePath());
        c->setDecodingOptions(options());
        QStringList examples;
        // a pivot's sentences are the first leg's source language, whichever leg is shown
        for (const auto& e : (c->pivoting() ? c->legModel(0) : info)->examples)
            examples << QString::fromStdString(e.source);
        setExamples(examples);
        refreshModels();
        // An imported model's own decoding defaults (num_beams; max_length counts the start token);
        // a model without them gets AttnLab's back, so the last model's beam does not linger. A pivot's
        // are its first leg's, whichever leg is shown: showing a leg changes no option (its translation was
        // made with the options shown).
        const PackageConfig& config = (c->pivoting() ? c->legModel(0) : info)->config;
        const bool own = config.num_beams > 0 || config.max_length > 1;
        if (own || m_model_defaults) {
            const DecodingOptions defaults;
            DecodingOptions o = options();
            o.beam_size = config.num_beams > 0 ? std::min(config.num_beams, m_beam->maximum()) : defaults.beam_size;
            o.max_length =
                config.max_length > 1 ? std::min(defaults.max_length, config.max_length - 1) : defaults.max_length;
            setOptions(o);
        }
        m_model_defaults = own;
        // Without live translation the new model waits to be asked (ViewContext::setModel).
        if (!m_context->liveTranslation() && !m_context->sentence().isEmpty())
            showNote(tr("<i>%1 is loaded: press Enter or Translate to translate the sentence with it.</i>")
                         .arg(modelLabel(*info).toHtmlEscaped()));
        resumeReopening();
    });
}

QString TranslatePanel::device() const { return m_device->currentData().toString(); }

void TranslatePanel::setComputeType(const QString& compute_type) {
    const int i = m_compute->findData(compute_type);
    if (i >= 0) m_compute->setCurrentIndex(i);
}

void TranslatePanel::setDevice(const QString& device) {
    const int i = m_device->findData(device.startsWith("cuda") ? "cuda" : device);
    if (i >= 0) m_device->setCurrentIndex(i);
}

QString TranslatePanel::sentence() const { return m_sentence->text(); }
void TranslatePanel::setSentence(const QString& s) { m_sentence->setText(s); }

DecodingOptions TranslatePanel::options() const {
    DecodingOptions o;
    o.beam_size = m_beam->value();
    o.length_penalty = m_alpha->value();
    o.max_length = m_max_len->value();
    o.nbest = 1;
    o.return_attention = true;
    o.top_k_candidates = 5;
    o.source_language = m_languages->source().toStdString();
    o.target_language = m_languages->target().toStdString();
    return o;
}

void TranslatePanel::setOptions(const DecodingOptions& o) {
    const DecodingOptions shown = options();
    const bool languages = !o.source_language.empty() && !o.target_language.empty() &&
                           (o.source_language != shown.source_language || o.target_language != shown.target_language);
    if (shown.beam_size == o.beam_size && shown.length_penalty == o.length_penalty &&
        shown.max_length == o.max_length && !languages)
        return;  // its own change coming back: the boxes keep what is being typed
    if (languages)
        m_languages->choose(QString::fromStdString(o.source_language), QString::fromStdString(o.target_language));
    {
        const QSignalBlocker a(m_beam), b(m_alpha), c(m_max_len);  // one change, not three
        m_beam->setValue(o.beam_size);
        m_alpha->setValue(o.length_penalty);
        m_max_len->setValue(o.max_length);
    }
    m_context->setDecodingOptions(options());
}

void TranslatePanel::setExamples(const QStringList& examples) {
    auto* menu = new QMenu(this);
    for (const QString& e : examples)
        menu->addAction(e, this, [this, e] {
            m_sentence->setText(e);
            request();
        });
    m_examples->setMenu(menu);
    m_examples->setEnabled(!examples.isEmpty());
}

void TranslatePanel::setModels(const QList<QPair<QString, QString>>& models, const QString& current,
                               const QString& current_label) {
    const QSignalBlocker block(m_direction);
    m_direction->clear();
    for (const auto& [label, dir] : models) m_direction->addItem(label, dir);
    const int i = m_direction->findData(current);
    if (i < 0 && !current.isEmpty()) m_direction->addItem(current_label, current);
    m_direction->setCurrentIndex(i >= 0 ? i : m_direction->count() - 1);
    m_direction->setVisible(!models.isEmpty());
}

void TranslatePanel::refreshModels() {
    const ModelInfoPtr info = m_context ? m_context->model() : nullptr;
    if (!info) return;
    setModels(
        bundledModelChoices(),
        m_context->pivoting() ? QString() : QFileInfo(QString::fromStdString(info->package_dir)).canonicalFilePath(),
        modelLabel(*info));
    addPivotChoices();
}

// The pairs only a pivot translates, after the models; the loaded pivot selected (added when it is
// none of them).
void TranslatePanel::addPivotChoices() {
    const QSignalBlocker block(m_direction);
    QStringList loaded;
    if (m_context->pivoting())
        for (int leg = 0; leg < 2; ++leg)
            loaded << QFileInfo(QString::fromStdString(m_context->legModel(leg)->package_dir)).canonicalFilePath();
    for (const auto& [label, dirs] : pivotChoices()) m_direction->addItem(label, dirs);
    if (loaded.isEmpty()) return;
    int i = m_direction->findData(loaded);
    if (i < 0) {
        const auto& first = m_context->legModel(0)->config;
        m_direction->addItem(
            pivotLabel(first.source_lang, first.target_lang, m_context->legModel(1)->config.target_lang), loaded);
        i = m_direction->count() - 1;
    }
    m_direction->setCurrentIndex(i);
    m_direction->setVisible(true);
}

QStringList TranslatePanel::directions() const {
    QStringList out;
    for (int i = 0; i < m_direction->count(); ++i) out << m_direction->itemText(i);
    return out;
}

QString TranslatePanel::currentDirection() const { return m_direction->currentText(); }

void TranslatePanel::request() {
    m_live_timer->stop();
    m_last_requested = m_sentence->text();
    Q_EMIT translateRequested(m_sentence->text(), options());
}

void TranslatePanel::typed() {
    if (m_live->isChecked()) m_live_timer->start();
}

void TranslatePanel::liveDue() {
    const QString text = m_sentence->text();
    // Nothing to translate yet, or already sent: a newer request supersedes an older one in the
    // controller (TranslationController::translate), so stale results never replace newer ones.
    if (text.trimmed().isEmpty() || text == m_last_requested) return;
    request();
}

QString TranslatePanel::confidenceWarning() const { return m_warning->isHidden() ? QString() : m_warning_text; }

namespace {
QString confidenceLine(const Confidence& c) {
    if (!c.calibrated)
        return QObject::tr("confidence: mean probability per piece %1 (this model has no threshold: see the Model tab)")
            .arg(c.probability, 0, 'f', 2);
    return QObject::tr(
               "confidence: mean probability per piece %1 (flagged below %2, which %3 % of its validation "
               "translations reach)")
        .arg(c.probability, 0, 'f', 2)
        .arg(std::exp(c.threshold), 0, 'f', 2)
        .arg(100.0 - c.percentile, 0, 'f', 0);
}
}  // namespace

void TranslatePanel::showResult(ResultPtr r) {
    m_translation->setResult(*r);
    m_copy->setEnabled(!m_translation->text().isEmpty());
    m_legend->setVisible(!m_context || !m_context->presenting());
    m_warning_slot->setVisible(true);
    m_confidence = r->confidence;
    // </s> alone, after a multilingual model's forced target-language token if it has one
    m_only_end_mark = QString::fromStdString(r->best.text).trimmed().isEmpty() && r->best.finished &&
                      r->best.pieces.size() == size_t(1 + std::max(0, r->forced_by_model));
    showWarning();
    QStringList src, tgt;
    for (const auto& p : r->source_pieces) src << QString::fromStdString(p);
    for (const auto& p : r->best.pieces) tgt << QString::fromStdString(p);
    QString details = tr("source pieces: %1\ntarget pieces: %2\nscore %3 (normalised %4)  ·  %5 ms\n%6")
                          .arg(src.join(' '), tgt.join(' '))
                          .arg(r->best.score, 0, 'f', 3)
                          .arg(r->best.normalized_score, 0, 'f', 3)
                          .arg(r->seconds * 1000.0, 0, 'f', 0)
                          .arg(confidenceLine(r->confidence));
    for (const auto& w : r->warnings) details += "\n⚠ " + QString::fromStdString(w);
    m_details->setText(details);
    m_details->setToolTip(details);
    m_progress->setVisible(false);
}

void TranslatePanel::showError(const QString& message) {
    showNote(QStringLiteral("<span style='color:#b2182b'>%1</span>").arg(message.toHtmlEscaped()), message);
}

// No translation shown: the sentence row says why (a failure, a model waiting to be used) or nothing.
void TranslatePanel::showNote(const QString& html, const QString& tooltip) {
    m_translation->clear();
    m_copy->setEnabled(false);
    m_legend->setVisible(false);
    m_confidence = {};
    m_only_end_mark = false;
    m_warning->setVisible(false);
    m_warning_slot->setVisible(false);
    m_details->setText(html);
    m_details->setToolTip(tooltip);
    m_progress->setVisible(false);
}

void TranslatePanel::showProgress(int step, int max_steps) {
    m_progress->setVisible(true);
    m_progress->setRange(0, max_steps);
    m_progress->setValue(step);
}

void TranslatePanel::setBusy(bool busy) {
    if (!busy) m_progress->setVisible(false);
}

QList<QPair<QString, QString>> TranslatePanel::keyList() {
    return {{tr("Enter"), tr("Translate the sentence (focus in the sentence field)")},
            {translateKey().toString(QKeySequence::NativeText), tr("Translate the sentence (from anywhere)")},
            {copyKey().toString(QKeySequence::NativeText), tr("Copy the translation")}};
}

void TranslatePanel::copyTranslation() {
    const QString text = m_translation->text();
    if (text.isEmpty()) return;
    QGuiApplication::clipboard()->setText(text);
    if (m_context) m_context->showStatus(tr("The translation is on the clipboard"), 3000);
}

QStringList TranslatePanel::loadedModels() const {
    QStringList out;
    if (!m_context || !m_context->model()) return out;
    if (!m_context->pivoting())
        return {RecentModels::entryFor(QString::fromStdString(m_context->model()->package_dir))};
    for (int leg = 0; leg < 2; ++leg)
        if (const ModelInfoPtr m = m_context->legModel(leg))
            out << RecentModels::entryFor(QString::fromStdString(m->package_dir));
    return out;
}

// A result of what this row asked for (not a lesson's, an ablation's or a forced beginning's):
// the sentence, the translation (a pivot's: the second leg's), the model, languages and options.
void TranslatePanel::remember(const ResultPtr& r) {
    if (!m_context || m_context->presenting() || m_context->sentence() != m_last_requested) return;
    if (QString::fromStdString(r->source_text) != m_last_requested) return;
    const DecodingOptions o = m_context->resultOptions();
    // Heads switched off (the Heads tab translates the sentence again with them off) or a forced beginning: not
    // what the row's model and options give (an entry opened again translates without them), so not kept.
    if (!o.ablate.empty() || !o.force_prefix.empty() || !o.force_prefix_ids.empty()) return;
    const ResultPtr last = m_context->pivoting() && m_context->legResult(1) ? m_context->legResult(1) : r;
    HistoryEntry e;
    e.when = QDateTime::currentDateTime();
    e.sentence = m_last_requested;
    e.translation = QString::fromStdString(last->best.text);
    e.models = loadedModels();
    if (e.models.isEmpty()) return;
    e.model_label = m_context->pivoting() ? currentDirection() : modelLabel(*m_context->model());
    e.source_language = QString::fromStdString(o.source_language);
    e.target_language = QString::fromStdString(o.target_language);
    e.beam_size = o.beam_size;
    e.length_penalty = o.length_penalty;
    e.max_length = o.max_length;
    m_history->add(e);
}

TranslationHistoryDialog* TranslatePanel::showHistory() {
    if (!m_history_dialog) {
        m_history_dialog = new TranslationHistoryDialog(m_history, this);
        m_history_dialog->setNotice(m_history_problem);
        connect(m_history_dialog, &TranslationHistoryDialog::reopen, this, &TranslatePanel::reopen);
    }
    m_history_dialog->show();
    m_history_dialog->raise();
    m_history_dialog->activateWindow();
    return m_history_dialog;
}

void TranslatePanel::reopen(const HistoryEntry& entry) {
    m_reopening.reset();
    if (loadedModels() == entry.models) return applyEntry(entry);
    m_reopening = entry;
    if (entry.models.size() > 1)
        m_context->loadPivot(entry.models);
    else
        m_context->openModel(entry.models.first());
}

void TranslatePanel::resumeReopening() {
    if (!m_reopening || loadedModels() != m_reopening->models) return;
    const HistoryEntry entry = *m_reopening;
    m_reopening.reset();
    applyEntry(entry);
}

void TranslatePanel::applyEntry(const HistoryEntry& e) {
    DecodingOptions o = options();
    o.beam_size = e.beam_size;
    o.length_penalty = e.length_penalty;
    o.max_length = e.max_length;
    o.source_language = e.source_language.toStdString();
    o.target_language = e.target_language.toStdString();
    m_sentence->setText(e.sentence);  // first: a change of languages translates what the field holds
    setOptions(o);
    request();
}

}  // namespace attnlab::ui
