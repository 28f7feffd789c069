#pragma once
// DownloadPanel: a model being got by Hugging Face name — which one, the file, bytes, rate and time
// left, and a Cancel button. It follows the document (ViewContext::fetchStarted / fetchProgress /
// fetchEnded) and is hidden when nothing downloads.

#include <attnlab/hub.h>

#include <QFrame>

class QLabel;
class QProgressBar;
class QPushButton;

namespace attnlab::ui {

class ViewContext;

class DownloadPanel : public QFrame {
    Q_OBJECT
public:
    explicit DownloadPanel(ViewContext* context, QWidget* parent = nullptr);

private:
    void started(const QString& name);
    void showProgress(const attnlab::HubProgress& p);
    ViewContext* m_context;
    QLabel* m_title;
    QLabel* m_detail;
    QLabel* m_notice;  // what the download had to set aside in the cache, or that no folder of that name is here
    QProgressBar* m_bar;
    QPushButton* m_cancel;
};

}  // namespace attnlab::ui
