#pragma once
// LogitLensView (view "lens", beside the Decoding tab): the logit lens on the decoder (issue 54,
// docs/contributions.md): what each decoder layer's output would predict at every target position,
// sent through the model's final layer norm and output projection (Translator::logitLens). A strip of
// layers (rows) x positions (columns): each cell names the layer's most probable piece, bold where it
// is the piece the translation has there; its colour is the probability the layer gives that piece
// (the context's colour map, 0-1); its tooltip lists the layer's top pieces. Computed on the worker
// for the translation shown when the tab is shown (never while typing with the tab hidden), once per
// translation. The cells are sized from the font (pieces at kTitleScale times the app's text, each whole,
// a row two lines tall at least) and fill the tab's width; every layer stays in sight.

#include "document/view.h"
#include "views/shown_result.h"

class QLabel;
class QTableWidget;

namespace attnlab::ui {

class LogitLensView : public View {
    Q_OBJECT
public:
    LogitLensView(ViewContext* context, QWidget* parent = nullptr);

    static constexpr int kTop = 5;  // the pieces each cell's tooltip lists
    QTableWidget* table() const { return m_table; }
    LogitLensPtr lens() const { return m_lens; }
    QString message() const;  // what the tab says instead of the strip (empty while it shows one)
    QString noFigureReason() const override;
    Parts parts() const override;
    // A row's least and most height: two and three lines of the cells' text.
    int minimumRowHeight() const;
    int maximumRowHeight() const;

protected:
    void showEvent(QShowEvent* event) override;
    void changeEvent(QEvent* event) override;                    // the app's text size: the bold cells' font follows it
    bool eventFilter(QObject* watched, QEvent* event) override;  // the table resized: its cells fill it

private:
    void setResult(ResultPtr result);
    void showLens(ResultPtr result, LogitLensPtr lens);
    void fillCells();
    void followFont();  // the table's text at kTitleScale times the app's
    void fitCells();    // columns as wide as their pieces, widened to fill the table; rows from the font
    void showProblem(const QString& message);
    ShownResult m_shown;  // the translation whose lens is asked for when the view is shown
    LogitLensPtr m_lens;
    QLabel* m_about;
    QLabel* m_message;
    QTableWidget* m_table;
};

}  // namespace attnlab::ui
