#include "widgets/head_picker.h"

#include "document/numbering.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSignalBlocker>
#include <QSpinBox>

#include <algorithm>

namespace attnlab::ui {

QString kindTitle(AttentionKind kind) {
    switch (kind) {
    case AttentionKind::EncoderSelf: return QObject::tr("Encoder self-attention");
    case AttentionKind::DecoderSelf: return QObject::tr("Masked decoder self-attention");
    case AttentionKind::Cross: return QObject::tr("Decoder → encoder cross-attention");
    }
    return {};
}

// A spin box over 0-based indices that shows and reads them 1-based; the mean (when offered) as
// "mean".
class ShownSpinBox : public QSpinBox {
public:
    using QSpinBox::QSpinBox;
    // -1: no mean. QSpinBox writes its text only when its value changes: the value shown may be
    // the mean's before the shape is known (a lesson's head 8 of 8 heads, set while the model's
    // history was still being read), so the text is written again here ("mean", not "9").
    void setMeanValue(int value) {
        if (value == m_mean) return;
        m_mean = value;
        setPrefix(prefix());  // rewrites the text and the size hint from textFromValue
    }

protected:
    QString textFromValue(int value) const override { return value == m_mean ? meanText() : shownText(value); }

    int valueFromText(const QString& text) const override {
        const QString t = text.trimmed();
        return m_mean >= 0 && t.compare(meanText(), Qt::CaseInsensitive) == 0 ? m_mean : indexOfShown(t.toInt());
    }

    QValidator::State validate(QString& text, int&) const override {
        const QString t = text.trimmed();
        if (t.isEmpty()) return QValidator::Intermediate;
        if (m_mean >= 0 && meanText().startsWith(t, Qt::CaseInsensitive))
            return t.size() == meanText().size() ? QValidator::Acceptable : QValidator::Intermediate;
        bool ok = false;
        const int index = indexOfShown(t.toInt(&ok));
        if (!ok) return QValidator::Invalid;
        return index >= minimum() && index <= maximum() ? QValidator::Acceptable : QValidator::Intermediate;
    }

private:
    static QString meanText() { return QObject::tr("mean"); }
    int m_mean = -1;
};

HeadPicker::HeadPicker(AttentionKind initial, bool with_mean, QWidget* parent)
    : QWidget(parent), m_with_mean(with_mean) {
    m_kind = new QComboBox(this);
    for (const auto k : attentionKinds()) m_kind->addItem(kindTitle(k), int(k));
    m_kind->setCurrentIndex(m_kind->findData(int(initial)));
    m_layer = new ShownSpinBox(this);
    m_head = new ShownSpinBox(this);
    auto* row = new QHBoxLayout(this);
    row->setContentsMargins(0, 0, 0, 0);
    row->addWidget(m_kind);
    row->addWidget(new QLabel(tr("Layer"), this));
    row->addWidget(m_layer);
    m_head_label = new QLabel(tr("Head"), this);
    row->addWidget(m_head_label);
    row->addWidget(m_head);
    connect(m_kind, &QComboBox::currentIndexChanged, this, &HeadPicker::changed);
    connect(m_layer, &QSpinBox::valueChanged, this, &HeadPicker::changed);
    connect(m_head, &QSpinBox::valueChanged, this, &HeadPicker::changed);
}

AttentionKind HeadPicker::kind() const { return static_cast<AttentionKind>(m_kind->currentData().toInt()); }
int HeadPicker::layer() const { return m_layer->value(); }
int HeadPicker::head() const { return m_head->value(); }
bool HeadPicker::isMean() const { return m_with_mean && m_heads > 0 && m_head->value() == m_heads; }

void HeadPicker::setShape(int layers, int heads) {
    const QSignalBlocker a(m_layer), b(m_head);
    m_heads = heads;
    m_layer->setRange(0, std::max(0, layers - 1));
    m_head->setRange(0, std::max(0, m_with_mean ? heads : heads - 1));
    m_head->setMeanValue(m_with_mean && heads > 0 ? heads : -1);
}

void HeadPicker::setHeadsShown(bool shown) {
    m_head_label->setVisible(shown);
    m_head->setVisible(shown);
}

void HeadPicker::select(AttentionKind kind, int layer, int head) {
    const QSignalBlocker a(m_kind), b(m_layer), c(m_head);
    m_kind->setCurrentIndex(m_kind->findData(int(kind)));
    // The kind chosen may have more layers than the one shown (a student: encoder 6, decoder 2): the
    // value is kept here and clamped by the owner's setShape for that kind, not by the old range.
    m_layer->setMaximum(std::max(m_layer->maximum(), layer));
    m_head->setMaximum(std::max(m_head->maximum(), head));
    m_layer->setValue(layer);
    m_head->setValue(head);
}

void HeadPicker::setKind(AttentionKind kind) { m_kind->setCurrentIndex(m_kind->findData(int(kind))); }
void HeadPicker::stepLayer(int delta) { m_layer->setValue(m_layer->value() + delta); }
void HeadPicker::stepHead(int delta) { m_head->setValue(m_head->value() + delta); }

}  // namespace attnlab::ui
