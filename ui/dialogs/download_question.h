#pragma once
// DownloadQuestion (issue 50): asked before getting a model that a lesson or a session names and the
// shared cache lacks — a stranger's file must not make AttnLab download unasked (a model the person
// names themselves, by --model, File › Get a model… or File › Recent models, is not asked about). It
// asks the hub what getting the model would fetch (ModelListing, on a thread of its own: "Asking the
// hub about ORG/NAME…"), then shows the model's name, its size and licence from that listing, with
// Get / Cancel. Window-modal and opened with open(): the caller goes on from finished() (Accepted is
// Get), so nothing blocks in a nested event loop. A listing that fails is reported through the
// document (failed(GetModel, …)), as any failure is, and the question closes as Cancel.

#include <attnlab/hub.h>

#include <QDialog>

#include <functional>

class QLabel;
class QPushButton;

namespace attnlab::ui {

class ModelListing;
class ViewContext;

class DownloadQuestion : public QDialog {
    Q_OBJECT
public:
    // `origin`: the lesson's or session's file, as the question names it.
    DownloadQuestion(ViewContext* context, const QString& name, const QString& origin, QWidget* parent = nullptr);

    // Opens a question on `parent` (deleted once answered) and calls answer(true) for Get, answer(false)
    // for Cancel, closing it, or a listing that failed.
    static void ask(ViewContext* context, const QString& name, const QString& origin, QWidget* parent,
                    std::function<void(bool get)> answer);

    QString name() const { return m_name; }
    bool listed() const;  // the hub's answer is shown (Get is enabled)
    QPushButton* getButton() const { return m_get; }
    QPushButton* cancelButton() const { return m_cancel; }

    // "298.0 MB in 6 files", with what the cache already holds of it; "not listed" without sizes.
    static QString sizeText(const HubModelListing& listing);
    // The model card's licence; "none stated" when it gives none.
    static QString licenceText(const HubModelListing& listing);

    void done(int result) override;  // stops a listing under way

private:
    void showListing(const HubModelListing& listing);
    void listingFailed(const QString& message, bool cancelled);
    ViewContext* m_context;
    QString m_name;
    ModelListing* m_listing;
    QLabel* m_asking;
    QLabel* m_size;
    QLabel* m_licence;
    QPushButton* m_get;
    QPushButton* m_cancel;
};

}  // namespace attnlab::ui
