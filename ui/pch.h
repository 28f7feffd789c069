// Precompiled header of attnlab_ui (issue 53): Qt Widgets and QCustomPlot, which nearly every unit here
// includes. A widget unit took 7.5 s of CPU without it and 3.4-4 s with it (views/decoding_view.cpp,
// headlab/head_stats_panel.cpp), once 12 s to build it. Units still include what they use: the tests
// compile ui headers without it.
#pragma once
#include <QtWidgets/QtWidgets>

#include <qcustomplot.h>
