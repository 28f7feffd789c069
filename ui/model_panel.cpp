#include "model_panel.h"

#include <QLocale>

namespace attnlab::ui {

ModelPanel::ModelPanel(QWidget* parent) : QTextBrowser(parent) { setHtml(tr("<p>No model loaded.</p>")); }

void ModelPanel::showModel(const ModelInfo& i) {
    const ModelConfig& m = i.config.model;
    const ParameterCounts& p = i.parameters;
    auto row = [](const QString& k, const QString& v) { return QStringLiteral("<tr><td>%1</td><td><b>%2</b></td></tr>").arg(k, v); };
    auto num = [](int64_t n) { return QLocale().toString(qlonglong(n)); };
    QString html = tr("<h3>%1 → %2</h3><p>%3</p><table cellspacing='4'>")
                       .arg(QString::fromStdString(i.config.source_lang), QString::fromStdString(i.config.target_lang),
                            QString::fromStdString(i.package_dir).toHtmlEscaped());
    html += row(tr("device"), QString::fromStdString(i.device));
    html += row(tr("load time"), tr("%1 s").arg(i.load_seconds, 0, 'f', 2));
    html += row(tr("stored as"), QString::fromStdString(i.stored_dtype));
    html += row(tr("vocabulary"), tr("%1 pieces (shared)").arg(i.vocab_size));
    html += row(tr("layers"), tr("%1 encoder + %1 decoder").arg(m.n_layers));
    html += row(tr("d_model / d_inner"), QStringLiteral("%1 / %2").arg(m.d_model).arg(m.d_inner));
    html += row(tr("heads × d_k (d_v)"), QStringLiteral("%1 × %2 (%3)").arg(m.n_head).arg(m.d_k).arg(m.d_v));
    html += row(tr("n_position"), QString::number(m.n_position));
    html += row(tr("dropout (training)"), QString::number(m.dropout));
    html += row(tr("weight sharing"), tr("projection ↔ target embedding: %1; source ↔ target embedding: %2")
                                          .arg(m.trg_emb_prj_weight_sharing ? tr("yes") : tr("no"))
                                          .arg(m.emb_src_trg_weight_sharing ? tr("yes") : tr("no")));
    html += row(tr("scale_emb_or_prj"), QString::fromStdString(m.scale_emb_or_prj));
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
    setHtml(html);
}

}  // namespace attnlab::ui
