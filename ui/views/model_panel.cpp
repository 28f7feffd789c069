#include "views/model_panel.h"

#include "document/recent_models.h"
#include "plots/plot_style.h"

#include <attnlab/config_fields.h>
#include <attnlab/errors.h>
#include <attnlab/package.h>
#include <attnlab/training_log.h>
#include <attnlab/unknown_languages.h>

#include <qcustomplot.h>

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QLabel>
#include <QLocale>
#include <QSplitter>
#include <QTextBrowser>
#include <QVBoxLayout>
#include <cmath>

namespace attnlab::ui {

ModelPanel::ModelPanel(ViewContext* context, QWidget* parent) : View(context, parent) {
    m_details = new QTextBrowser(this);
    m_details->setHtml(tr("<p>No model loaded.</p>"));
    m_card = new QTextBrowser(this);
    m_card->setOpenExternalLinks(true);
    m_card->setPlaceholderText(tr("This package has no MODEL_CARD.md."));

    m_plot = new QCustomPlot(this);
    m_plot->plotLayout()->insertRow(0);
    m_plot->plotLayout()->addElement(0, 0, makeTitle(m_plot, tr("Training (per epoch, from training_log.tsv)")));
    m_plot->xAxis->setLabel(tr("epoch"));
    m_plot->yAxis->setLabel(tr("loss (label-smoothed, per token)"));
    m_plot->yAxis2->setLabel(tr("validation BLEU (greedy)"));
    m_plot->yAxis2->setVisible(true);
    showLegendBelow(m_plot);
    m_plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    followTextSize(m_plot);
    m_plot_message = new QLabel(this);
    m_plot_message->setWordWrap(true);
    m_plot_message->setAlignment(Qt::AlignCenter);

    auto* left = new QSplitter(Qt::Vertical, this);
    left->addWidget(m_details);
    left->addWidget(m_card);
    auto* right = new QWidget(this);
    auto* right_layout = new QVBoxLayout(right);
    right_layout->setContentsMargins(0, 0, 0, 0);
    right_layout->addWidget(m_plot, 1);
    right_layout->addWidget(m_plot_message);
    auto* split = new QSplitter(Qt::Horizontal, this);
    split->addWidget(left);
    split->addWidget(right);
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 1);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(split);
    showTrainingLog({});
    connect(context, &ViewContext::modelChanged, this, [this](ModelInfoPtr info) { showModel(*info); });
    if (const auto info = context->model()) showModel(*info);
}

QCustomPlot* ModelPanel::figure() const { return m_plot->graphCount() > 0 ? m_plot : nullptr; }

QString ModelPanel::noFigureReason() const {
    return trainingMessage().isEmpty() ? tr("open a model first: there are no training curves") : trainingMessage();
}

QString ModelPanel::trainingMessage() const { return m_plot_message->isHidden() ? QString() : m_plot_message->text(); }

QString ModelPanel::confidenceText(const std::optional<ConfidenceCalibration>& c, bool imported) {
    // An imported MarianMT folder was never calibrated by AttnLab; a package without the file was
    // made before calibration existed.
    if (!c) {
        const QString why = imported ? tr("an imported model has no calibration yet (no %1 in its folder)")
                                     : tr("this package has no %1 (it was made before confidence calibration)");
        return tr("No low-confidence warning: %1. Translations still show each word's probability. To add the "
                  "threshold (written to %2 in the model's folder): "
                  "<code>attnlab-cli calibrate --model DIR --src val.SRC</code>.")
            .arg(why.arg(package_files::kConfidence), package_files::kConfidence);
    }
    return tr("A translation is flagged when its mean probability per piece is below <b>%1</b> (mean "
              "log-probability %2): %3 % of this model's translations of %4 validation sentences (%5, beam %6) "
              "reach it.")
        .arg(std::exp(c->threshold), 0, 'f', 2)
        .arg(c->threshold, 0, 'f', 3)
        .arg(100.0 - c->percentile, 0, 'f', 0)
        .arg(c->sentences)
        .arg(QString::fromStdString(c->data).remove('`').toHtmlEscaped())
        .arg(c->beam_size);
}

void ModelPanel::showModel(const ModelInfo& i) {
    const ModelConfig& m = i.config.model;
    const ParameterCounts& p = i.parameters;
    auto row = [](const QString& k, const QString& v) {
        return QStringLiteral("<tr><td>%1</td><td><b>%2</b></td></tr>").arg(k, v);
    };
    auto num = [](int64_t n) { return QLocale().toString(qlonglong(n)); };
    // The package by its folder name (a snapshot of the Hugging Face cache by its repository, not its commit);
    // where it lies on this machine on hover. Its direction only when something names its languages.
    const QString where = QString::fromStdString(i.package_dir);
    const QString name = RecentModels::displayName(where);
    const bool known = unknown_language::known(i.config.source_lang) && unknown_language::known(i.config.target_lang);
    const QString heading = known ? tr("%1 → %2").arg(QString::fromStdString(i.config.source_lang),
                                                      QString::fromStdString(i.config.target_lang))
                                  : name;
    QString html = QStringLiteral("<h3>%1</h3><p title='%3'>%2</p><table cellspacing='4'>")
                       .arg(heading.toHtmlEscaped(), name.toHtmlEscaped(), where.toHtmlEscaped());
    html += row(tr("device"), QString::fromStdString(i.device));
    html += row(tr("load time"), tr("%1 s").arg(i.load_seconds, 0, 'f', 2));
    html += row(tr("stored as"), QString::fromStdString(i.stored_dtype));
    html += row(tr("vocabulary"), tr("%1 pieces (shared)").arg(i.vocab_size));
    html += "</table><h4>" + tr("Confidence") + "</h4><p>" +
            confidenceText(i.confidence, i.config.tokenizer == "marian") + "</p>";
    html += "<h4>" + tr("Configuration") + "</h4><table cellspacing='4'>";
    // Every field of the reference constructor, from the one field table; the meaning on hover.
    for (const auto& f : modelConfigFields())
        html += QStringLiteral("<tr><td title='%3'>%1</td><td><b>%2</b></td></tr>")
                    .arg(QString::fromUtf8(f.name), QString::fromStdString(f.valueText(m)),
                         QString::fromUtf8(f.meaning).toHtmlEscaped());
    html += "</table><h4>" + tr("Parameters") + "</h4><table cellspacing='4'>";
    // A shared matrix is counted once, under the decoder embedding.
    html += row(tr("encoder embedding"),
                m.emb_src_trg_weight_sharing ? tr("shared with the decoder embedding") : num(p.encoder_embedding));
    html += row(tr("encoder layers"), num(p.encoder_layers));
    html += row(tr("decoder embedding"), num(p.decoder_embedding));
    html += row(tr("decoder layers"), num(p.decoder_layers));
    html += row(tr("output projection"),
                m.trg_emb_prj_weight_sharing ? tr("shared with the decoder embedding") : num(p.output_projection));
    html += row(tr("embedding layer norms"), num(p.layer_norms));
    html += row(tr("total"), num(p.total));
    html += "</table>";
    m_details->setHtml(html);

    const QString dir = QString::fromStdString(i.package_dir);
    QFile card(QDir(dir).filePath(package_files::kModelCard));
    if (card.open(QIODevice::ReadOnly | QIODevice::Text))
        m_card->setMarkdown(QString::fromUtf8(card.readAll()));
    else
        m_card->clear();
    showTrainingLog(dir);
}

void ModelPanel::showTrainingLog(const QString& package_dir) {
    m_plot->clearGraphs();
    QString message;
    const QString path = QDir(package_dir).filePath(package_files::kTrainingLog);
    if (package_dir.isEmpty()) {
        message = tr("No model loaded.");
    } else if (!QFile::exists(path)) {
        message = tr("This package has no %1, so there is no training curve to show.").arg(package_files::kTrainingLog);
    } else {
        try {
            const TrainingLog log = readTrainingLog(path.toStdString());
            // A missing column is an error that names it (TrainingLog::column), shown below.
            const auto epoch = log.column(epoch_log::kEpoch);
            auto add = [&](const char* column, QCPAxis* y, const QString& name, QColor colour, Qt::PenStyle style) {
                const auto v = log.column(column);
                QCPGraph* g = m_plot->addGraph(m_plot->xAxis, y);
                g->setName(name);
                g->setPen(QPen(colour, 2, style));
                g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, 5));
                g->setData(QVector<double>(epoch.begin(), epoch.end()), QVector<double>(v.begin(), v.end()), true);
            };
            add(epoch_log::kTrainLoss, m_plot->yAxis, tr("training loss"), QColor(31, 119, 180), Qt::SolidLine);
            add(epoch_log::kValidLoss, m_plot->yAxis, tr("validation loss"), QColor(255, 127, 14), Qt::SolidLine);
            add(epoch_log::kValidBleu, m_plot->yAxis2, tr("validation BLEU"), QColor(44, 160, 44), Qt::DashLine);
            if (log.rows.empty()) message = tr("%1 has no epochs yet.").arg(path);
        } catch (const Error& e) {
            m_plot->clearGraphs();
            message = tr("Cannot plot the training log: %1").arg(QString::fromStdString(e.what()));
        }
    }
    m_plot->rescaleAxes();
    // From zero, with headroom so the last points stay clear of the frame.
    m_plot->yAxis->setRange(0, m_plot->yAxis->range().upper * 1.08);
    m_plot->yAxis2->setRange(0, m_plot->yAxis2->range().upper * 1.12);
    m_plot->xAxis->setRange(m_plot->xAxis->range().lower - 0.5, m_plot->xAxis->range().upper + 0.5);
    m_plot->setVisible(message.isEmpty());
    m_plot_message->setText(message);
    m_plot_message->setVisible(!message.isEmpty());
    m_plot->replot();
}

}  // namespace attnlab::ui
