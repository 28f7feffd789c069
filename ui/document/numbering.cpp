#include "document/numbering.h"

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
    QString label = QObject::tr("mean over every layer and head");
    switch (method.kind) {
    case AlignmentMethod::Kind::Head: label = layerHeadLabel(method.layer, method.head); break;
    case AlignmentMethod::Kind::Layer: label = QObject::tr("%1, mean over heads").arg(layerLabel(method.layer)); break;
    case AlignmentMethod::Kind::AltiPlus: label = QObject::tr("ALTI+, source contributions through the model"); break;
    case AlignmentMethod::Kind::ValueZeroing:
        label = QObject::tr("value zeroing, source contributions through the model");
        break;
    case AlignmentMethod::Kind::AltiPlusLayer:
        label = QObject::tr("ALTI+, source contributions through %1").arg(layerLabel(method.layer));
        break;
    case AlignmentMethod::Kind::ValueZeroingLayer:
        label = QObject::tr("value zeroing, %1's cross-attention").arg(layerLabel(method.layer));
        break;
    case AlignmentMethod::Kind::All: break;
    }
    // Shifted: each target word read from the step whose input it is (docs/head-lab.md).
    if (method.shift) label = QObject::tr("%1, shifted (word as input)").arg(label);
    if (method.sym != Symmetrization::None)
        label = QObject::tr("%1, %2 with the reverse model")
                    .arg(label, QString::fromStdString(symmetrizationName(method.sym)));
    return label;
}

}  // namespace attnlab::ui
