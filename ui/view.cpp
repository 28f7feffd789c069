#include "view.h"

namespace attnlab::ui {

View::View(ViewContext* context, QWidget* parent) : QWidget(parent), m_context(context) {}

QString View::noFigureReason() const { return tr("this tab has no figure to export"); }

void View::saveState(ViewState&) const {}

void View::applyState(const ViewState&) {}

}  // namespace attnlab::ui
