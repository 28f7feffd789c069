#include "dialogs/translation_history_dialog.h"

#include "widgets/language_picker.h"

#include <QCheckBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QTreeWidget>
#include <QVBoxLayout>

#include <algorithm>

namespace attnlab::ui {

TranslationHistoryDialog::TranslationHistoryDialog(TranslationHistory* history, QWidget* parent)
    : QDialog(parent), m_history(history) {
    setWindowTitle(tr("Translation history"));
    m_notice = new QLabel(this);
    m_notice->setWordWrap(true);
    m_notice->setStyleSheet(QStringLiteral("QLabel { color:#664d03; }"));
    m_notice->setVisible(false);
    m_search = new QLineEdit(this);
    m_search->setPlaceholderText(tr("Search the sentences, translations, models and languages"));
    m_search->setClearButtonEnabled(true);
    m_list = new QTreeWidget(this);
    m_list->setHeaderLabels({tr("When"), tr("Model"), tr("Sentence"), tr("Translation")});
    m_list->setRootIsDecorated(false);
    m_list->setUniformRowHeights(true);
    m_list->header()->setStretchLastSection(true);
    m_open = new QPushButton(tr("&Open"), this);
    m_open->setToolTip(tr("Translate the entry again with its model, languages and options (or double-click it)"));
    m_clear = new QPushButton(tr("&Clear history"), this);
    m_clear->setToolTip(tr("Forget every entry and remove the file"));
    m_keep = new QCheckBox(tr("&Keep a history of what is translated"), this);
    m_keep->setToolTip(tr("Kept on this computer only, in %1").arg(QDir::toNativeSeparators(history->path())));
    m_keep->setChecked(TranslationHistory::enabled());
    auto* where = new QLabel(tr("Kept on this computer only: %1 (the last %2 translations)")
                                 .arg(QDir::toNativeSeparators(history->path()))
                                 .arg(TranslationHistory::kMaxEntries),
                             this);
    where->setTextInteractionFlags(Qt::TextSelectableByMouse);
    where->setWordWrap(true);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    auto* row = new QHBoxLayout;
    row->addWidget(m_keep, 1);
    row->addWidget(m_clear);
    row->addWidget(m_open);
    row->addWidget(buttons);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(m_notice);
    layout->addWidget(m_search);
    layout->addWidget(m_list, 1);
    layout->addWidget(where);
    layout->addLayout(row);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(m_search, &QLineEdit::textChanged, this, &TranslationHistoryDialog::fill);
    // Closed, the window is kept: it is filled again when shown, not at every translation meanwhile.
    connect(m_history, &TranslationHistory::changed, this, [this] {
        if (isVisible())
            fill();
        else
            m_stale = true;
    });
    connect(m_list, &QTreeWidget::itemActivated, this, &TranslationHistoryDialog::openCurrent);
    connect(m_list, &QTreeWidget::currentItemChanged, this, [this] { m_open->setEnabled(m_list->currentItem()); });
    connect(m_open, &QPushButton::clicked, this, &TranslationHistoryDialog::openCurrent);
    connect(m_clear, &QPushButton::clicked, this, [this] {
        if (const auto problem = m_history->clear()) setNotice(*problem);
    });
    connect(m_keep, &QCheckBox::toggled, m_history, &TranslationHistory::setEnabled);
    fill();
    resize(1100, 480);  // the model with its languages, the sentence and the translation side by side
}

void TranslationHistoryDialog::showEvent(QShowEvent* event) {
    if (m_stale) fill();
    QDialog::showEvent(event);
}

void TranslationHistoryDialog::setNotice(const QString& text) {
    m_notice->setText(text);
    m_notice->setVisible(!text.isEmpty());
}

void TranslationHistoryDialog::fill() {
    m_stale = false;
    m_shown = m_history->search(m_search->text());
    m_list->clear();
    for (const HistoryEntry& e : m_shown) {
        QString model = e.model_label;
        if (!e.source_language.isEmpty())
            model += QStringLiteral("  %1 → %2").arg(languageName(e.source_language), languageName(e.target_language));
        auto* item = new QTreeWidgetItem(
            m_list, {QLocale().toString(e.when.toLocalTime(), QLocale::ShortFormat), model, e.sentence, e.translation});
        item->setToolTip(1, model);
        item->setToolTip(2, e.sentence);
        item->setToolTip(3, e.translation);
    }
    if (m_list->topLevelItemCount() > 0) m_list->setCurrentItem(m_list->topLevelItem(0));
    m_open->setEnabled(m_list->currentItem());
    m_clear->setEnabled(!m_history->entries().isEmpty());
    // As wide as their entries up to a limit (a long sentence is cut, whole in its tooltip), so that the
    // translation stays in sight beside them.
    for (int c = 0; c < 3; ++c) {
        const int most =
            m_list->fontMetrics().averageCharWidth() * (c == 1 ? kMostModelCharacters : kMostColumnCharacters);
        m_list->resizeColumnToContents(c);
        m_list->setColumnWidth(c, std::min(m_list->columnWidth(c), most));
    }
}

void TranslationHistoryDialog::openCurrent() {
    const int row = m_list->indexOfTopLevelItem(m_list->currentItem());
    if (row < 0 || row >= m_shown.size()) return;
    Q_EMIT reopen(m_shown.at(row));
}

}  // namespace attnlab::ui
