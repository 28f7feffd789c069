#include "views/whole_model_maps.h"

#include "plots/attention_view.h"

#include <qcustomplot.h>
#include <QVBoxLayout>

namespace attnlab::ui {

namespace {
// How the method carries its layers through the model (docs/contributions.md), for the tooltip.
QString aggregation(ContributionMethod method) {
    return method == ContributionMethod::AltiPlus
               ? QObject::tr("ALTI+: the rollout of every layer's contributions through the encoder and the decoder")
               : QObject::tr("value zeroing: every layer's scores carried through the encoder and the decoder");
}
QString methodName(ContributionMethod method) {
    return method == ContributionMethod::AltiPlus ? QObject::tr("ALTI+") : QObject::tr("value zeroing");
}
}  // namespace

WholeModelMaps::WholeModelMaps(QWidget* parent) : QWidget(parent), m_map(new AttentionView(this)) {
    m_map->setAxisTitles(tr("target piece"), tr("source | target pieces: rows sum to 1"));
    m_between = new QCPItemStraightLine(m_map->plot());
    m_between->setPen(QPen(palette().text().color(), 2));
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_map);
    clear();
}

void WholeModelMaps::setContributions(const Contributions& c, const QStringList& rows, const QStringList& source,
                                      const QStringList& inputs) {
    Matrix both = c.source;
    for (size_t i = 0; i < both.size() && i < c.target.size(); ++i)
        both[i].insert(both[i].end(), c.target[i].begin(), c.target[i].end());
    m_source_columns = c.source.empty() ? 0 : int(c.source.front().size());
    m_map->setMap(both, rows, source + inputs, tr("%1 through the whole model").arg(methodName(c.method)));
    m_between->point1->setCoords(m_source_columns - 0.5, 0);
    m_between->point2->setCoords(m_source_columns - 0.5, 1);
    m_between->setVisible(true);
    m_map->plot()->replot();
    setToolTip(tr("Through the whole model (%1). For each target piece (a row), the share of its prediction that "
                  "comes from each source piece (left of the line) and from each earlier target piece (right of "
                  "it); a row's two parts sum to 1 together.")
                   .arg(aggregation(c.method)));
}

void WholeModelMaps::clear() {
    m_source_columns = 0;
    m_between->setVisible(false);
    m_map->clear();
}

QString WholeModelMaps::caption() const {
    return m_map->title() + QStringLiteral("; ") + m_map->plot()->xAxis->label();
}

void WholeModelMaps::setColorMap(Palette palette) { m_map->setColorMap(palette); }

void WholeModelMaps::setFixedRange(bool fixed) { m_map->setFixedRange(fixed); }

}  // namespace attnlab::ui
