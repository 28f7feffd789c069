#pragma once
// Lessons and sessions (docs/lessons.md): a lesson is an ordered list of steps, each a view of the
// app (tab, sentence, decoding options, forced prefix, kind, layer, head, selected cell, decoding
// step, token) and a caption in Markdown; a session file is one such step, written by File > Save
// session. Read and written here only; the app applies a ViewState, the tests and the fuzzer read
// the same files through the same functions.

#include <attnlab/attention_flow.h>
#include <attnlab/attention_kind.h>

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace attnlab {

inline constexpr int kLessonVersion = 1;
// Bounds on what a lesson holds (docs/reliability.md, "Bounds on what readers allocate"): the
// bundled lessons have at most 15 steps and captions of at most 455 bytes; the app lays a caption
// out as Markdown and lists every step's title. The reader and the writer keep them.
inline constexpr size_t kMaxLessonSteps = 1000;
inline constexpr size_t kMaxCaptionBytes = 16 << 10;

// One tab's own choice of map (its head picker): kind, layer and head, 0-based (head == n_head: the
// mean, where the tab offers it).
struct HeadSelection {
    AttentionKind kind = AttentionKind::Cross;
    int layer = 0;
    int head = 0;
    bool operator==(const HeadSelection& o) const { return kind == o.kind && layer == o.layer && head == o.head; }
};

// What a step shows. An absent field keeps what the app shows already (a step may change the head
// only); `sentence` absent keeps the sentence and its translation.
struct ViewState {
    std::optional<std::string> tab;  // a view of the app by name (checkLessonViews)
    std::optional<std::string> sentence;
    std::optional<int> beam;                  // 1..256
    std::optional<double> alpha;              // 0..10
    std::optional<int> max_length;            // 1..65536
    std::optional<std::string> force_prefix;  // "" = free decoding
    // A multilingual model's languages, as it names them (DecodingOptions::source_language).
    std::optional<std::string> source_language, target_language;
    std::optional<AttentionKind> kind;        // written "encoder" | "decoder" | "cross"
    std::optional<int> layer;                 // 0-based
    std::optional<int> head;                  // 0-based; n_head = the mean over heads
    std::optional<int> cell_query, cell_key;  // both or neither: the weight opened in the Weight tab
    std::optional<int> step;                  // the Decoding tab's step, 0-based
    std::optional<bool> token_target;         // with token_position: the Inputs tab's piece
    std::optional<int> token_position;
    std::optional<std::string> pair_a, pair_b;  // both or neither: the minimal pair compared
    // What the attention maps show (the app's Method): written "weights" | "value-norm" | "rollout" |
    // "alti+" | "value-zeroing" (mapMeasureName, every one of kMapMeasures).
    std::optional<MapMeasure> measure;
    // A part of the step's tab (a plot or panel by name) scrolled into view; needs `tab` in the same
    // step and belongs to it alone. The names are the app's (checkLessonViews).
    std::optional<std::string> focus;
    // The Training tab's recorded point, 1-based as the tab counts it ("point 1 of 44"): the slider
    // opens there. Belongs to its own step (a jump does not inherit it); checked against the
    // model's attention history by checkLessonFitsModel where the history is known.
    std::optional<int> point;
    // Each tab's own selection by view name ("attention", "pairs", "training"): written by a session
    // so that every tab comes back as it was; where a tab has one, it wins over kind/layer/head.
    // It belongs to its own step (a jump does not inherit it).
    std::map<std::string, HeadSelection> selections;
};

struct LessonStep {
    std::string title;
    std::string caption;  // Markdown
    ViewState view;
};

struct Lesson {
    std::string title;
    std::string model;  // a bundled model's name or direction, or "" = the one loaded
    std::vector<LessonStep> steps;
};

// Parse a lesson from JSON text. `origin` names the file in errors. Throws InputError naming the
// file, the step (1-based, as shown in the app) and the field: "lesson.json: step 3: layer: ...".
Lesson parseLesson(const std::string& text, const std::string& origin);
Lesson readLesson(const std::string& path);  // at most 4 MB
// Check every step's layer, head and kind against a model's shape (head == n_head is the mean);
// throws InputError naming the file, the step and the field.
// n_layers: the encoder's; n_dec_layers: the decoder's (0 = as many as the encoder's).
// history_points: the points of the model's attention history (0 = it has none), where known: a
// step's point is checked against it ("lesson.json: step 1: point: 45 is out of range: ...").
void checkLessonFitsModel(const Lesson& lesson, int n_layers, int n_head, const std::string& origin,
                          int n_dec_layers = 0, std::optional<int> history_points = std::nullopt);
// Check every step's tab (and the views its selections name) against the views an app offers (the
// app's view registry owns the names), and its focus against the parts of its tab (`parts`, by view
// name); throws InputError "lesson.json: step 2: tab: 'maps' is not one of attention, ..." or
// "lesson.json: step 4: focus: 'plot4' is not one of embedding, ... (the inputs view's parts)".
void checkLessonViews(const Lesson& lesson, const std::vector<std::string>& views, const std::string& origin,
                      const std::map<std::string, std::vector<std::string>>& parts = {});

// What step `index` shows when reached from anywhere (a jump, --lesson-step): the sentence, the
// decoding options, the forced prefix, kind, layer and head as the steps up to it last set them;
// tab, cell, decoding step, token and selections as that step alone sets them.
ViewState lessonViewAt(const Lesson& lesson, int index);

// The lessons that come with AttnLab (attnlab::bundledLessonsDir()), sorted by file name; a file
// that does not parse is left out (tst_lesson checks that every bundled one parses).
struct BundledLesson {
    std::string title, path;
};
std::vector<BundledLesson> bundledLessons();

// A session file: one step ("format": "attnlab-session"), the same shape as a lesson's step.
std::string sessionJson(const LessonStep& step, const std::string& model);
void writeSession(const std::string& path, const LessonStep& step, const std::string& model);  // atomic
// Reads a session file as a lesson of one step.
Lesson readSession(const std::string& path);
Lesson parseSession(const std::string& text, const std::string& origin);

// A lesson file ("format": "attnlab-lesson"), as parseLesson reads it back: what the app's lesson
// editor saves. Throws InputError for what parseLesson would refuse (no steps, more than 1,000, a
// caption or title over its cap), naming the step and the field.
std::string lessonJson(const Lesson& lesson);
void writeLesson(const std::string& path, const Lesson& lesson);  // through saveToFile: atomic

}  // namespace attnlab
