#include "dialogs/download_question.h"

#include "document/model_listing.h"
#include "document/view_context.h"

#include <attnlab/hub_progress.h>

#include <QDialogButtonBox>
#include <QFileInfo>
#include <QFormLayout>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>

namespace attnlab::ui {

namespace {
QLabel* valueLabel(const QString& text, QWidget* parent) {
    auto* label = new QLabel(text, parent);
    label->setTextFormat(Qt::PlainText);  // a name or a licence from a stranger's file is shown, never run
    label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    return label;
}
}  // namespace

DownloadQuestion::DownloadQuestion(ViewContext* context, const QString& name, const QString& origin, QWidget* parent)
    : QDialog(parent),
      m_context(context),
      m_name(name),
      m_listing(new ModelListing(this)),
      m_asking(new QLabel(tr("Asking the hub about %1…").arg(name), this)),
      m_size(valueLabel(QStringLiteral("…"), this)),
      m_licence(valueLabel(QStringLiteral("…"), this)) {
    setWindowTitle(tr("Get %1?").arg(name));
    auto* intro = new QLabel(tr("<b>%1</b> uses a model that is not on this computer. Nothing is downloaded "
                                "for a lesson or a session unless you agree: get it into the shared cache?")
                                 .arg(QFileInfo(origin).fileName().toHtmlEscaped()),
                             this);
    intro->setWordWrap(true);
    intro->setAlignment(Qt::AlignLeft | Qt::AlignTop);
    intro->setToolTip(origin);
    m_asking->setTextFormat(Qt::PlainText);
    auto* form = new QFormLayout;
    form->addRow(tr("Model:"), valueLabel(name, this));
    form->addRow(tr("Size:"), m_size);
    form->addRow(tr("Licence:"), m_licence);
    form->addRow(tr("From:"), valueLabel(QString::fromStdString(hubOptionsFromEnvironment().endpoint), this));
    auto* buttons = new QDialogButtonBox(this);
    m_get = buttons->addButton(tr("&Get"), QDialogButtonBox::AcceptRole);
    m_cancel = buttons->addButton(QDialogButtonBox::Cancel);
    m_get->setEnabled(false);
    m_cancel->setDefault(true);  // Enter does not download what a stranger's file names
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(intro);
    layout->addSpacing(fontMetrics().height() / 2);
    layout->addLayout(form);
    layout->addWidget(m_asking);
    layout->addStretch(1);  // room to spare goes above the buttons, not between the lines
    layout->addWidget(buttons);
    setMinimumWidth(fontMetrics().averageCharWidth() * 56);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(m_listing, &ModelListing::listed, this, &DownloadQuestion::showListing);
    connect(m_listing, &ModelListing::failed, this, &DownloadQuestion::listingFailed);
    m_listing->start(name);
}

void DownloadQuestion::ask(ViewContext* context, const QString& name, const QString& origin, QWidget* parent,
                           std::function<void(bool get)> answer) {
    auto* question = new DownloadQuestion(context, name, origin, parent);
    question->setAttribute(Qt::WA_DeleteOnClose);
    connect(question, &QDialog::finished, question,
            [answer = std::move(answer)](int result) { answer(result == QDialog::Accepted); });
    question->open();
}

bool DownloadQuestion::listed() const { return m_get->isEnabled(); }

QString DownloadQuestion::sizeText(const HubModelListing& listing) {
    const int n = int(listing.files.size());
    const QString files = n == 1 ? tr("1 file") : tr("%1 files").arg(n);
    if (listing.total_bytes < 0) return tr("not listed (%1)").arg(files);
    QString text = tr("%1 in %2").arg(QString::fromStdString(byteSizeText(listing.total_bytes)), files);
    if (listing.cached_bytes > 0)
        text += tr(", %1 of it already in the cache").arg(QString::fromStdString(byteSizeText(listing.cached_bytes)));
    return text;
}

QString DownloadQuestion::licenceText(const HubModelListing& listing) {
    return listing.licence.empty() ? tr("none stated") : QString::fromStdString(listing.licence);
}

void DownloadQuestion::showListing(const HubModelListing& listing) {
    m_size->setText(sizeText(listing));
    m_licence->setText(licenceText(listing));
    m_asking->hide();
    m_get->setEnabled(true);
}

void DownloadQuestion::listingFailed(const QString& message, bool cancelled) {
    if (cancelled || !isVisible()) return;  // answered meanwhile
    m_context->reportFailure(Operation::GetModel, tr("%1: %2").arg(m_name, message));
    reject();
}

void DownloadQuestion::done(int result) {
    m_listing->cancel();
    QDialog::done(result);
}

}  // namespace attnlab::ui
