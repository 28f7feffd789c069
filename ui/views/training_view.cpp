#include "views/training_view.h"

#include "document/file_save.h"
#include "document/numbering.h"
#include "plots/attention_grid.h"
#include "plots/attention_view.h"
#include "plots/gif_writer.h"
#include "widgets/head_picker.h"

#include <attnlab/attention_history.h>

#include <qcustomplot.h>

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSlider>
#include <QSplitter>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>
#include <utility>

namespace attnlab::ui {

namespace {
QString noHistory() {
    return TrainingView::tr(
        "This model carries no attention history. Train one with attnlab-cli train --record-attention: its package "
        "then shows here how its attention was learned (docs/attention-history.md).");
}

QString number(double v, int decimals) { return v < 0 ? QStringLiteral("–") : QString::number(v, 'f', decimals); }
}  // namespace

TrainingView::TrainingView(ViewContext* context, QWidget* parent) : View(context, parent) {
    m_message = new QLabel(noHistory(), this);
    m_message->setWordWrap(true);
    m_slider = new QSlider(Qt::Horizontal, this);
    m_slider->setEnabled(false);
    m_play = new QPushButton(tr("Play"), this);
    m_play->setCheckable(true);
    m_play->setEnabled(false);
    m_timer = new QTimer(this);
    m_timer->setInterval(kPlayIntervalMs);
    m_point_text = new QLabel(this);
    m_point_text->setWordWrap(true);  // one line of 980 px at the presenter's text size, else
    m_probe = new QComboBox(this);
    m_probe->setToolTip(tr("The probe sentence, teacher-forced through its reference at every point"));
    m_picker = new HeadPicker(AttentionKind::Cross, /*with_mean=*/true, this);
    m_map = new AttentionView(this);
    m_grid = new AttentionGrid(this);
    m_curves = new QCustomPlot(this);
    buildCurves();
    m_statistic = new QComboBox(this);
    for (const auto& info : headStatisticInfos()) {
        m_statistic->addItem(tr(info.label));
        m_statistic->setItemData(m_statistic->count() - 1, tr(info.meaning), Qt::ToolTipRole);
    }
    m_head_curve = new QCustomPlot(this);
    buildHeadCurve();
    m_change = new QLabel(this);
    m_change->setWordWrap(true);

    auto* row = new QHBoxLayout;
    row->addWidget(m_play);
    row->addWidget(m_slider, 1);
    row->addWidget(m_point_text, 1);
    auto* choose = new QHBoxLayout;
    choose->addWidget(m_probe, 1);
    choose->addWidget(m_picker);
    choose->addWidget(m_statistic);
    // The maps above the curves, two to a row: three side by side left the map a quarter of a
    // 1280 x 720 projector's row (a lesson step's focus widens its pane: ViewTabs::bringIntoView).
    auto* maps = new QSplitter(Qt::Horizontal);
    maps->addWidget(m_map);
    maps->addWidget(m_grid);
    maps->setSizes({1000, 800});
    auto* curves = new QSplitter(Qt::Horizontal);
    curves->addWidget(m_curves);
    curves->addWidget(m_head_curve);
    curves->setSizes({1000, 800});
    auto* panes = new QSplitter(Qt::Vertical, this);
    panes->addWidget(maps);
    panes->addWidget(curves);
    panes->setSizes({1000, 700});
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(m_message);
    layout->addLayout(row);
    layout->addLayout(choose);
    layout->addWidget(panes, 1);
    layout->addWidget(m_change);

    connect(m_slider, &QSlider::valueChanged, this, [this] { refresh(); });
    connect(m_probe, &QComboBox::currentIndexChanged, this, [this] { refresh(); });
    connect(m_picker, &HeadPicker::changed, this, [this] { refresh(); });
    connect(m_statistic, &QComboBox::currentIndexChanged, this, [this] { refresh(); });
    connect(m_grid, &AttentionGrid::cellClicked, this,
            [this](int layer, int head) { select(m_picker->kind(), layer, head); });
    connect(m_play, &QPushButton::toggled, this, &TrainingView::setPlaying);
    connect(m_timer, &QTimer::timeout, this, [this] {
        if (m_slider->value() >= m_slider->maximum()) return setPlaying(false);
        m_slider->setValue(m_slider->value() + 1);
    });
    follow(context);
    m_map->clear(noHistory());
}

void TrainingView::follow(ViewContext* c) {
    TranslationController* controller = c->controller();
    connect(c, &ViewContext::modelChanged, this, [this, controller](ModelInfoPtr info) {
        const QString dir = QString::fromStdString(info->package_dir);
        // The same package again (another compute type): its history is read again, and the point
        // shown (a lesson step's) is kept unless a step asked for another meanwhile.
        if (dir == m_package_dir && m_history && !m_history->points.empty() && !m_wanted_point)
            m_wanted_point = point();
        m_package_dir = dir;
        setHistory(nullptr);
        m_map->clear(tr("Reading the attention history…"));
        controller->loadHistory(m_package_dir);
    });
    connect(controller, &TranslationController::historyLoaded, this, [this](const QString& dir, HistoryPtr h) {
        if (dir != m_package_dir) return;
        setHistory(std::move(h));
        if (!m_history) m_map->clear(noHistory());  // read: there is none (no longer "Reading…")
    });
    connect(c, &ViewContext::failed, this, [this](Operation op, const QString& m) {
        if (op == Operation::History) {
            setHistory(nullptr);
            m_message->setText(tr("Cannot read the attention history: %1").arg(m));
        }
    });
    connect(c, &ViewContext::paletteChanged, this, &TrainingView::setColorMap);
    setColorMap(c->palette());
    if (const auto info = c->model()) {
        m_package_dir = QString::fromStdString(info->package_dir);
        controller->loadHistory(m_package_dir);
    }
}

void TrainingView::buildCurves() {
    m_curves->plotLayout()->insertRow(0);
    m_curves->plotLayout()->addElement(0, 0, makeTitle(m_curves, tr("Training")));
    m_curves->xAxis->setLabel(tr("step"));
    m_curves->yAxis->setLabel(tr("loss per token"));
    m_curves->yAxis2->setLabel(tr("validation BLEU"));
    m_curves->yAxis2->setVisible(true);
    const QList<QPair<QString, QColor>> graphs{{tr("training loss"), QColor(31, 119, 180)},
                                               {tr("validation loss"), QColor(255, 127, 14)},
                                               {tr("validation BLEU"), QColor(44, 160, 44)}};
    for (int i = 0; i < graphs.size(); ++i) {
        QCPGraph* g = m_curves->addGraph(m_curves->xAxis, i == 2 ? m_curves->yAxis2 : m_curves->yAxis);
        g->setName(graphs[i].first);
        g->setPen(QPen(graphs[i].second, 2));
        g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, 5));
    }
    // The legend inside the plot, at the right and halfway up, where the curves are not (the
    // losses fall to the bottom, BLEU climbs to the top): below the plot it took three rows of a
    // 1280 x 720 projector's column, and beside it 650 px of its row.
    m_curves->legend->setVisible(true);
    m_curves->legend->setBrush(QColor(255, 255, 255, 210));
    m_curves->axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignRight | Qt::AlignVCenter);
    m_cursor = new QCPItemStraightLine(m_curves);
    m_cursor->setPen(QPen(Qt::black, 1, Qt::DashLine));
    m_cursor->setVisible(false);  // until there is a point to mark
    followTextSize(m_curves);
}

void TrainingView::buildHeadCurve() {
    m_head_curve->addGraph();
    m_head_curve->graph(0)->setPen(QPen(QColor(148, 103, 189), 2));
    m_head_curve->graph(0)->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssDisc, 5));
    m_head_curve->xAxis->setLabel(tr("step"));
    m_head_cursor = new QCPItemStraightLine(m_head_curve);
    m_head_cursor->setPen(QPen(Qt::black, 1, Qt::DashLine));
    m_head_cursor->setVisible(false);
    followTextSize(m_head_curve);
}

QString TrainingView::changeText() const { return m_change->text(); }

// The chosen head's statistic over the points (the mean head: no curve), and where it changed most.
void TrainingView::refreshHeadCurve() {
    m_head_curve->graph(0)->data()->clear();
    m_change->clear();
    const HistoryPoint& shown = m_history->points[size_t(m_slider->value())];
    m_head_cursor->point1->setCoords(double(shown.step), 0);
    m_head_cursor->point2->setCoords(double(shown.step), 1);
    const auto statistic = static_cast<HeadStatistic>(m_statistic->currentIndex());
    m_head_curve->yAxis->setLabel(m_statistic->currentText());
    if (!m_picker->isMean()) {
        const HeadRef head{m_picker->kind(), m_picker->layer(), m_picker->head()};
        for (size_t i = 0; i < m_stats.size(); ++i)
            if (const HeadStats* s = m_stats[i].find(head))
                m_head_curve->graph(0)->addData(double(m_history->points[i].step), s->value(statistic));
        const int most = historyLargestChange(*m_history, head);
        if (most > 0)
            m_change->setText(tr("%1 changed most between step %2 and step %3 (points %4 and %5).")
                                  .arg(layerHeadLabel(head.layer, head.head))
                                  .arg(m_history->points[size_t(most) - 1].step)
                                  .arg(m_history->points[size_t(most)].step)
                                  .arg(most)
                                  .arg(most + 1));
    } else {
        // The mean map has no statistic of its own (the entropy of a mean is not the mean of the
        // entropies): the curve is the mean of the layer's heads' values, and says so.
        for (size_t i = 0; i < m_stats.size(); ++i) {
            double sum = 0;
            int n = 0;
            for (int h = 0; h < m_history->n_head; ++h)
                if (const HeadStats* s = m_stats[i].find({m_picker->kind(), m_picker->layer(), h})) {
                    sum += s->value(statistic);
                    ++n;
                }
            if (n > 0) m_head_curve->graph(0)->addData(double(m_history->points[i].step), sum / n);
        }
        m_change->setText(tr("The curve is the mean of layer %1's %2 heads' values (a mean map has no "
                             "statistic of its own).")
                              .arg(m_picker->layer() + 1)
                              .arg(m_history->n_head));
    }
    m_head_curve->rescaleAxes();
    m_head_curve->replot();
}

void TrainingView::setHistory(HistoryPtr history) {
    setPlaying(false);
    m_history = std::move(history);
    m_stats = m_history ? historyHeadStatistics(*m_history) : std::vector<HeadStatsReport>{};
    const bool has = m_history && !m_history->points.empty();
    m_message->setText(has ? QString() : noHistory());
    m_message->setVisible(!has);
    m_slider->setEnabled(has);
    m_play->setEnabled(has);
    {
        const QSignalBlocker a(m_slider), b(m_probe);
        m_probe->clear();
        m_slider->setRange(0, has ? int(m_history->points.size()) - 1 : 0);
        // A step's point, else the finished model first.
        const auto wanted = m_history ? std::exchange(m_wanted_point, std::nullopt) : std::nullopt;
        m_slider->setValue(has ? std::min(wanted.value_or(m_slider->maximum()), m_slider->maximum()) : 0);
        if (has)
            for (const auto& p : m_history->probes) m_probe->addItem(QString::fromStdString(p.source));
    }
    if (has) m_picker->setShape(m_history->n_layers, m_history->n_head);
    m_cursor->setVisible(has);  // no point to mark: no dashed line across the empty plots
    m_head_cursor->setVisible(has);
    for (int i = 0; i < 3; ++i) m_curves->graph(i)->data()->clear();
    if (has)
        for (const auto& p : m_history->points) {
            if (p.train_loss >= 0) m_curves->graph(0)->addData(double(p.step), p.train_loss);
            if (p.valid_loss >= 0) m_curves->graph(1)->addData(double(p.step), p.valid_loss);
            if (p.valid_bleu >= 0) m_curves->graph(2)->addData(double(p.step), p.valid_bleu);
        }
    m_curves->rescaleAxes();
    refresh();
}

void TrainingView::showPoint(int index) { m_slider->setValue(index); }
int TrainingView::point() const { return m_slider->value(); }
void TrainingView::setProbe(int index) { m_probe->setCurrentIndex(index); }

void TrainingView::select(AttentionKind kind, int layer, int head) {
    m_picker->select(kind, layer, head);
    refresh();
}

void TrainingView::setPlaying(bool playing) {
    if (playing && m_history && m_slider->value() >= m_slider->maximum()) m_slider->setValue(0);  // from the start
    const QSignalBlocker block(m_play);
    m_play->setChecked(playing);
    m_play->setText(playing ? tr("Pause") : tr("Play"));
    if (playing)
        m_timer->start();
    else
        m_timer->stop();
}

bool TrainingView::playing() const { return m_timer->isActive(); }

void TrainingView::setColorMap(Palette palette) {
    m_map->setColorMap(palette);
    m_grid->setColorMap(palette);
}

QString TrainingView::pointText() const { return m_point_text->text(); }
QString TrainingView::message() const { return m_message->isHidden() ? QString() : m_message->text(); }
QCustomPlot* TrainingView::figure() const { return m_history && !m_history->points.empty() ? m_map->plot() : nullptr; }
QString TrainingView::noFigureReason() const { return tr("this model carries no attention history"); }

std::optional<QString> TrainingView::exportAnimation(const QString& path) {
    if (!m_history || m_history->points.empty()) return noFigureReason();
    const bool gif = path.endsWith(".gif", Qt::CaseInsensitive), png = path.endsWith(".png", Qt::CaseInsensitive);
    if (!gif && !png) return tr("%1: an animation is written as .gif, or as a .png series (NAME-001.png, …)").arg(path);
    setPlaying(false);
    const int shown = point();
    QList<QImage> frames;
    for (int i = 0; i <= m_slider->maximum(); ++i) {
        showPoint(i);
        frames << m_map->plot()->toPixmap(1000, 750).toImage();
    }
    showPoint(shown);
    if (gif) return writeAnimatedGif(path, frames, kPlayIntervalMs);
    const QString stem = path.chopped(4);
    for (int i = 0; i < frames.size(); ++i)
        if (auto problem = saveImage(QStringLiteral("%1-%2.png").arg(stem).arg(i + 1, 3, 10, QChar('0')), frames[i]))
            return problem;
    return std::nullopt;
}

void TrainingView::saveState(ViewState& state) const {
    saveSelection(state, {m_picker->kind(), m_picker->layer(), m_picker->head()});
    if (state.tab == objectName().toStdString() && m_history && !m_history->points.empty()) state.point = point() + 1;
}

void TrainingView::applyState(const ViewState& v) {
    if (v.point) {
        if (m_history && !m_history->points.empty())
            showPoint(std::min(*v.point - 1, m_slider->maximum()));
        else
            m_wanted_point = *v.point - 1;  // shown once the history is read (setHistory)
    }
    if (const auto own = ownSelection(v)) return select(own->kind, own->layer, own->head);
    if (v.kind || v.layer || v.head)
        select(v.kind.value_or(m_picker->kind()), v.layer.value_or(m_picker->layer()),
               v.head.value_or(m_picker->head()));
}

View::Parts TrainingView::parts() const {
    return {{"map", m_map}, {"grid", m_grid}, {"curves", m_curves}, {"head-curve", m_head_curve}};
}

void TrainingView::refresh() {
    if (!m_history || m_history->points.empty() || m_probe->currentIndex() < 0) {
        m_point_text->clear();
        m_grid->setMaps({});
        if (m_history) m_map->clear(noHistory());
        return;
    }
    m_picker->setShape(m_history->n_layers, m_history->n_head);  // clamps what select() asked for
    const HistoryPoint& p = m_history->points[size_t(m_slider->value())];
    const HistoryProbe& probe = m_history->probes[size_t(m_probe->currentIndex())];
    const ProbeMaps& maps = p.maps[size_t(m_probe->currentIndex())];
    m_point_text->setText(tr("point %1 of %2 · step %3 · epoch %4 · training loss %5 · validation BLEU %6")
                              .arg(m_slider->value() + 1)
                              .arg(m_history->points.size())
                              .arg(p.step)
                              .arg(p.epoch)
                              .arg(number(p.train_loss, 3), number(p.valid_bleu, 2)));
    const AttentionKind kind = m_picker->kind();
    const LayerHeadMaps& kind_maps = kind == AttentionKind::EncoderSelf   ? maps.encoder_self
                                     : kind == AttentionKind::DecoderSelf ? maps.decoder_self
                                                                          : maps.cross;
    const QStringList source = toQStringList(probe.source_pieces), target = toQStringList(probe.target_pieces);
    const QStringList rows = kind == AttentionKind::EncoderSelf ? source : target;
    const QStringList cols = kind == AttentionKind::DecoderSelf ? toQStringList(probe.decoder_input_pieces) : source;
    const int layer = m_picker->layer(), head = m_picker->head();
    const bool mean = m_picker->isMean();
    const Matrix shown =
        mean ? AttentionGrid::meanOverHeads(kind_maps[size_t(layer)]) : kind_maps[size_t(layer)][size_t(head)];
    m_map->setMap(
        shown, rows, cols,
        tr("%1 — %2 — step %3").arg(kindTitle(kind), layerHeadLabel(layer, head, mean ? head : -1)).arg(p.step));
    m_grid->setMaps(kind_maps);
    m_grid->setSelected(layer, head);
    m_cursor->point1->setCoords(double(p.step), 0);
    m_cursor->point2->setCoords(double(p.step), 1);
    m_curves->replot();
    refreshHeadCurve();
}

}  // namespace attnlab::ui
