#pragma once
// What the UI was doing when something failed: the one failure signal (ViewContext::failed)
// carries one of these with the message, and the window reports each in one place.

#include <QMetaType>
#include <QString>

namespace attnlab::ui {

enum class Operation {
    LoadModel,      // File > Open model, a dropped folder, a lesson's model, the device switch
    Translate,      // the sentence, a forced beginning, an ablation
    Explain,        // the Weight tab's opened-up cell
    Inspect,        // the Inputs tab's token and masks
    TranslatePair,  // the Minimal pairs tab
    HeadLab,        // the Heads tab's statistics and importance
    Align,          // the Heads tab's alignment
    Lesson,         // a lesson or a session opened, a step shown
    SaveSession,
    SaveLesson,  // the lesson editor's Save lesson
    Export,      // File > Export (figure, attention JSON)
    History,     // the Training tab's attention history
    TrainToy,    // File > Train a small model
    Measure,     // the maps of the Attention tab's Method: value norms, ALTI+, value zeroing
    Saliency,    // the Saliency tab's gradient x input
    Score,       // the Decoding tab's translation of the user's own, scored
    GetModel,    // a model got by Hugging Face name (File › Get a model…, --model ORG/NAME, Recent models)
    LogitLens,   // the Logit lens tab's predictions of every decoder layer
};

// The status bar's words for a failure of `op`: "Translation failed".
QString operationTitle(Operation op);
// Failures the user asked for in a dialog or a menu and that no view shows where it happened:
// a desktop session shows them in a message box as well.
bool operationNeedsDialog(Operation op);

}  // namespace attnlab::ui

Q_DECLARE_METATYPE(attnlab::ui::Operation)
