#pragma once
// A table cell that shows a number with fixed decimals and sorts by its value, not its text.
#include <QTableWidgetItem>

namespace attnlab::ui {

class NumberItem : public QTableWidgetItem {
public:
    explicit NumberItem(double v, int decimals = 3) : QTableWidgetItem(QString::number(v, 'f', decimals)) {
        setData(Qt::UserRole, v);
        setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    }
    bool operator<(const QTableWidgetItem& o) const override {
        return data(Qt::UserRole).toDouble() < o.data(Qt::UserRole).toDouble();
    }
};

}  // namespace attnlab::ui
