#include "view.h"

namespace attnlab::ui {

View::View(ViewContext* context, QWidget* parent) : QWidget(parent), m_context(context) {}

QString View::noFigureReason() const { return tr("this tab has no figure to export"); }

std::optional<QString> View::exportAnimation(const QString&) {
    return tr("this tab has no animation to export (the Training tab has)");
}

void View::saveState(ViewState&) const {}

void View::applyState(const ViewState&) {}

}  // namespace attnlab::ui
