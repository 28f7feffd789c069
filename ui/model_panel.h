#pragma once
// ModelPanel: configuration, parameter counts, vocabulary size, device and load time of the
// loaded model.
#include "translation_controller.h"

#include <QTextBrowser>

namespace attnlab::ui {

class ModelPanel : public QTextBrowser {
    Q_OBJECT
public:
    explicit ModelPanel(QWidget* parent = nullptr);
    void showModel(const ModelInfo& info);
};

}  // namespace attnlab::ui
