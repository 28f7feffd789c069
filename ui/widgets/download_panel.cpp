#include "widgets/download_panel.h"

#include "document/view_context.h"

#include <attnlab/hub_progress.h>

#include <QHBoxLayout>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QVBoxLayout>

namespace attnlab::ui {

DownloadPanel::DownloadPanel(ViewContext* context, QWidget* parent)
    : QFrame(parent),
      m_context(context),
      m_title(new QLabel(this)),
      m_detail(new QLabel(this)),
      m_notice(new QLabel(this)),
      m_bar(new QProgressBar(this)),
      m_cancel(new QPushButton(tr("Cancel"), this)) {
    setFrameShape(QFrame::StyledPanel);
    m_cancel->setToolTip(tr("Stop the download; what arrived is kept and the next try goes on from there"));
    m_bar->setRange(0, 1000);
    m_bar->setTextVisible(false);
    auto* text = new QVBoxLayout;
    text->addWidget(m_title);
    text->addWidget(m_bar);
    text->addWidget(m_detail);
    text->addWidget(m_notice);
    m_notice->setWordWrap(true);
    m_notice->setTextFormat(Qt::PlainText);  // a path from the cache: never rich text
    m_notice->setVisible(false);
    auto* row = new QHBoxLayout(this);
    row->addLayout(text, 1);
    row->addWidget(m_cancel, 0, Qt::AlignVCenter);
    setVisible(false);
    connect(m_cancel, &QPushButton::clicked, this, [this] {
        m_cancel->setEnabled(false);
        m_detail->setText(tr("Stopping…"));
        m_context->cancelFetch();
    });
    connect(context, &ViewContext::fetchStarted, this, &DownloadPanel::started);
    connect(context, &ViewContext::fetchProgress, this, &DownloadPanel::showProgress);
    connect(context, &ViewContext::fetchEnded, this, [this] { setVisible(false); });
}

void DownloadPanel::started(const QString& name) {
    m_title->setText(tr("Getting <b>%1</b> from Hugging Face into the shared cache").arg(name.toHtmlEscaped()));
    m_detail->setText(tr("Asking for the list of files…"));
    m_notice->clear();
    m_notice->setVisible(false);
    m_bar->setValue(0);
    m_cancel->setEnabled(true);
    setVisible(true);
}

void DownloadPanel::showProgress(const attnlab::HubProgress& p) {
    if (!p.notice.empty()) {  // (a file of the cache set aside): kept in sight until the next download
        m_notice->setText(m_notice->text() + (m_notice->text().isEmpty() ? "" : "\n") +
                          QString::fromStdString(p.notice));
        m_notice->setVisible(true);
        return;
    }
    m_bar->setValue(p.total > 0 ? int(1000 * double(p.done) / double(p.total)) : 0);
    if (m_cancel->isEnabled()) m_detail->setText(QString::fromStdString(attnlab::describeHubProgress(p)));
}

}  // namespace attnlab::ui
