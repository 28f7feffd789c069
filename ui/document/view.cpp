#include "document/view.h"

namespace attnlab::ui {

View::View(ViewContext* context, QWidget* parent) : QWidget(parent), m_context(context) {}

View::~View() {
    for (QObject* child : findChildren<QObject*>()) QObject::disconnect(child, nullptr, this, nullptr);
}

QString View::noFigureReason() const { return tr("this tab has no figure to export"); }

std::optional<QString> View::exportAnimation(const QString&) {
    return tr("this tab has no animation to export (the Training tab has)");
}

void View::saveState(ViewState&) const {}

void View::applyState(const ViewState&) {}

std::optional<HeadSelection> View::ownSelection(const ViewState& state) const {
    const auto it = state.selections.find(objectName().toStdString());
    if (objectName().isEmpty() || it == state.selections.end()) return std::nullopt;
    return it->second;
}

void View::saveSelection(ViewState& state, const HeadSelection& selection) const {
    if (!objectName().isEmpty()) state.selections[objectName().toStdString()] = selection;
}

}  // namespace attnlab::ui
