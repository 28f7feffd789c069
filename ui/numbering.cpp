#include "numbering.h"

#include <QObject>

namespace attnlab::ui {

int shownNumber(int index) { return index + 1; }
int indexOfShown(int number) { return number - 1; }
QString shownText(int index) { return QString::number(shownNumber(index)); }
QString layerLabel(int layer) { return QObject::tr("layer %1").arg(shownNumber(layer)); }
QString headLabel(int head) { return QObject::tr("head %1").arg(shownNumber(head)); }

QString layerHeadLabel(int layer, int head, int heads) {
    const QString what = head == heads ? QObject::tr("mean over heads") : headLabel(head);
    return QObject::tr("%1, %2").arg(layerLabel(layer), what);
}

QString shortLayerHeadLabel(int layer, int head) {
    return QObject::tr("L%1 H%2").arg(shownNumber(layer)).arg(shownNumber(head));
}

QString headRefLabel(const HeadRef& head) {
    return QObject::tr("%1 %2").arg(QString::fromStdString(attentionKindName(head.kind)),
                                    shortLayerHeadLabel(head.layer, head.head));
}

QString alignmentMethodLabel(const AlignmentMethod& method) {
    switch (method.kind) {
    case AlignmentMethod::Kind::Head: return layerHeadLabel(method.layer, method.head);
    case AlignmentMethod::Kind::Layer: return QObject::tr("%1, mean over heads").arg(layerLabel(method.layer));
    case AlignmentMethod::Kind::All: break;
    }
    return QObject::tr("mean over every layer and head");
}

}  // namespace attnlab::ui
