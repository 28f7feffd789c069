#include "views/whole_model_maps.h"

#include "plots/attention_view.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QVBoxLayout>

namespace attnlab::ui {

namespace {
// How the method carries its layers through the model (docs/contributions.md).
QString aggregation(ContributionMethod method) {
    return method == ContributionMethod::AltiPlus
               ? QObject::tr("ALTI+, the rollout of every layer's contributions through the encoder and the decoder")
               : QObject::tr("value zeroing, every layer's scores carried through the encoder and the decoder");
}
QString methodName(ContributionMethod method) {
    return method == ContributionMethod::AltiPlus ? QObject::tr("ALTI+") : QObject::tr("value zeroing");
}
}  // namespace

WholeModelMaps::WholeModelMaps(QWidget* parent) : QWidget(parent) {
    m_caption = new QLabel(this);
    m_caption->setWordWrap(true);
    m_caption->setObjectName("wholeModelCaption");
    m_source = new AttentionView(this);
    m_target = new AttentionView(this);
    m_source->setAxisTitles(tr("target piece"), tr("source piece"));
    m_target->setAxisTitles(tr("target piece"), tr("earlier target piece (decoder input)"));
    auto* parts = new QHBoxLayout;
    parts->setContentsMargins(0, 0, 0, 0);
    parts->addWidget(m_source, 1);
    parts->addWidget(m_target, 1);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_caption);
    layout->addLayout(parts, 1);
    clear();
}

void WholeModelMaps::setContributions(const Contributions& c, const QStringList& rows, const QStringList& source,
                                      const QStringList& inputs) {
    const QString name = methodName(c.method);
    m_caption->setText(tr("<b>Through the whole model</b> (%1): for each target piece (a row), the share of its "
                          "prediction that comes from each source piece (left) and from each earlier target piece "
                          "(right). A row's two parts sum to 1 together.")
                           .arg(aggregation(c.method)));
    m_source->setMap(c.source, rows, source, tr("%1 through the whole model — source part").arg(name));
    m_target->setMap(c.target, rows, inputs, tr("%1 through the whole model — target part").arg(name));
}

void WholeModelMaps::clear() {
    m_caption->clear();
    m_source->clear();
    m_target->clear();
}

QString WholeModelMaps::caption() const { return m_caption->text(); }

void WholeModelMaps::setColorMap(Palette palette) {
    m_source->setColorMap(palette);
    m_target->setColorMap(palette);
}

void WholeModelMaps::setFixedRange(bool fixed) {
    m_source->setFixedRange(fixed);
    m_target->setFixedRange(fixed);
}

}  // namespace attnlab::ui
