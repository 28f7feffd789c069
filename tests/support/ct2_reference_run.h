#pragma once
// scripts/ct2_reference.py driven from a test (tst_ctranslate2, tst_relative_positions): the Python it needs
// probed, models made with `make`, sentences translated with `run`.

#include "python_probe.h"

#include <attnlab/decoding_options.h>

#include <QString>
#include <QStringList>
#include <QtTest/QtTest>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace attnlab::testing {

// ct2_reference.py make --out DIR/NAME OPTIONS; returns the model directory.
QString makeCt2Model(const QString& python, const QString& dir, const QString& name, const QStringList& options);

// ct2_reference.py run over `sentences` (greedy, at most max_length tokens, files written in `dir`): its JSON.
nlohmann::json runCt2Reference(const QString& python, const QString& dir, const QString& model,
                               const std::vector<std::string>& sentences, int max_length);

// Greedy decoding as the reference runs it: beam 1, at most max_length tokens, no length-ratio cap, no
// candidate lists.
DecodingOptions referenceGreedy(int max_length);

}  // namespace attnlab::testing

// In initTestCase: skips the test when the reference's Python (torch, numpy, sentencepiece) is missing, and fails
// it under CI=true, where the cross-check must run. `what` names the cross-check in the message.
#define ATTNLAB_REQUIRE_REFERENCE_PYTHON(python, what) \
    ATTNLAB_REQUIRE_PYTHON(python, (QStringList{"torch", "numpy", "sentencepiece"}), what)
