// Lesson and session files (attnlab/lesson.h, docs/lessons.md): the one place their JSON keys
// are read and written.
#include <attnlab/errors.h>
#include <attnlab/lesson.h>
#include <attnlab/package.h>

#include "util/atomic_file.h"
#include "util/small_file.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>

namespace attnlab {
using nlohmann::json;

namespace {
constexpr const char* kLessonFormat = "attnlab-lesson";
constexpr const char* kSessionFormat = "attnlab-session";
constexpr size_t kMaxLessonBytes = 4 << 20;
constexpr size_t kMaxTitleBytes = 1 << 10;  // with kMaxLessonSteps and kMaxCaptionBytes (lesson.h)

// Where an error is: "lesson.json: step 3: layer" ("…: selections.pairs.layer" inside an object).
struct Where {
    std::string origin;
    int step = 0;          // 1-based; 0 = the file itself
    std::string inside{};  // "selections.pairs." for a field of that object
    std::string at(const std::string& field) const {
        return origin + ": " + (step > 0 ? "step " + std::to_string(step) + ": " : std::string()) + inside + field;
    }
    [[noreturn]] void fail(const std::string& field, const std::string& why) const {
        throw InputError(at(field) + ": " + why);
    }
};

std::string typeName(const json& j) { return j.type_name(); }

std::string getString(const json& obj, const char* key, const Where& w) {
    const auto& v = obj.at(key);
    if (!v.is_string()) w.fail(key, "expected a string, found " + typeName(v));
    return v.get<std::string>();
}

int getInt(const json& obj, const char* key, int lo, int hi, const Where& w) {
    const auto& v = obj.at(key);
    if (!v.is_number_integer()) w.fail(key, "expected a whole number, found " + typeName(v));
    const auto n = v.get<int64_t>();
    if (n < lo || n > hi)
        w.fail(key, std::to_string(n) + " is out of range (" + std::to_string(lo) + ".." + std::to_string(hi) + ")");
    return static_cast<int>(n);
}

double getNumber(const json& obj, const char* key, double lo, double hi, const Where& w) {
    const auto& v = obj.at(key);
    if (!v.is_number()) w.fail(key, "expected a number, found " + typeName(v));
    const double d = v.get<double>();
    if (!std::isfinite(d) || d < lo || d > hi)
        w.fail(key, "out of range (" + std::to_string(lo) + ".." + std::to_string(hi) + ")");
    return d;
}

void requireObject(const json& j, const std::string& field, const Where& w) {
    if (!j.is_object()) w.fail(field, "expected an object, found " + typeName(j));
}

// Every key of `obj` must be one of `known` (a typo is an error, not a silently ignored field).
void onlyKnownKeys(const json& obj, std::initializer_list<const char*> known, const std::string& in, const Where& w) {
    for (auto it = obj.begin(); it != obj.end(); ++it)
        if (std::none_of(known.begin(), known.end(), [&](const char* k) { return it.key() == k; }))
            w.fail(in.empty() ? it.key() : in + "." + it.key(), "unknown field");
}

// "selections": {"pairs": {"kind": "encoder", "layer": 1, "head": 0}, …}: every field needed.
std::map<std::string, HeadSelection> parseSelections(const json& s, const Where& w) {
    requireObject(s, "selections", w);
    std::map<std::string, HeadSelection> out;
    for (auto it = s.begin(); it != s.end(); ++it) {
        const std::string at = "selections." + it.key();
        const json& one = it.value();
        requireObject(one, at, w);
        onlyKnownKeys(one, {"kind", "layer", "head"}, at, w);
        for (const char* key : {"kind", "layer", "head"})
            if (!one.contains(key)) w.fail(at, std::string("needs kind, layer and head (") + key + " is missing)");
        const Where inner{w.origin, w.step, at + "."};
        out[it.key()] = {parseAttentionKind(getString(one, "kind", inner), inner.at("kind")),
                         getInt(one, "layer", 0, 1 << 16, inner), getInt(one, "head", 0, 1 << 16, inner)};
    }
    return out;
}

ViewState parseView(const json& v, const Where& w) {
    requireObject(v, "view", w);
    onlyKnownKeys(
        v,
        {"tab", "sentence", "beam", "alpha", "max_length", "force_prefix", "source_language", "target_language", "kind",
         "layer", "head", "cell", "step", "token", "pair", "selections", "focus", "measure", "point"},
        "view", w);
    ViewState s;
    if (v.contains("tab")) {
        s.tab = getString(v, "tab", w);
        if (s.tab->empty()) w.fail("tab", "is empty");
    }
    if (v.contains("sentence")) {
        s.sentence = getString(v, "sentence", w);
        if (s.sentence->find_first_not_of(" \t\r\n") == std::string::npos) w.fail("sentence", "is empty");
    }
    if (v.contains("beam")) s.beam = getInt(v, "beam", 1, 256, w);
    if (v.contains("alpha")) s.alpha = getNumber(v, "alpha", 0.0, 10.0, w);
    if (v.contains("max_length")) s.max_length = getInt(v, "max_length", 1, 1 << 16, w);
    if (v.contains("force_prefix")) s.force_prefix = getString(v, "force_prefix", w);
    for (auto [key, field] :
         {std::pair{"source_language", &s.source_language}, {"target_language", &s.target_language}})
        if (v.contains(key)) {
            *field = getString(v, key, w);
            if ((*field)->empty() || (*field)->size() > 64) w.fail(key, "must be a language code of 1 to 64 bytes");
        }
    if (v.contains("kind")) {
        s.kind = parseAttentionKind(getString(v, "kind", w), w.at("kind"));
    }
    if (v.contains("layer")) s.layer = getInt(v, "layer", 0, 1 << 16, w);
    if (v.contains("head")) s.head = getInt(v, "head", 0, 1 << 16, w);
    if (v.contains("cell")) {
        const auto& c = v.at("cell");
        if (!c.is_array() || c.size() != 2 || !c[0].is_number_integer() || !c[1].is_number_integer() ||
            c[0].get<int64_t>() < 0 || c[1].get<int64_t>() < 0 || c[0].get<int64_t>() > (1 << 16) ||
            c[1].get<int64_t>() > (1 << 16))
            w.fail("cell", "expected [query, key]: two whole numbers from 0");
        s.cell_query = c[0].get<int>();
        s.cell_key = c[1].get<int>();
    }
    if (v.contains("step")) s.step = getInt(v, "step", 0, 1 << 16, w);
    if (v.contains("point")) s.point = getInt(v, "point", 1, 1 << 16, w);
    if (v.contains("measure")) {
        const std::string name = getString(v, "measure", w);
        s.measure = parseMapMeasure(name);
        if (!s.measure) {
            std::string known;
            for (MapMeasure m : kMapMeasures) known += (known.empty() ? "" : ", ") + mapMeasureName(m);
            w.fail("measure", "'" + name + "' is not one of " + known);
        }
    }
    if (v.contains("token")) {
        const auto& t = v.at("token");
        requireObject(t, "token", w);
        onlyKnownKeys(t, {"side", "position"}, "token", w);
        if (!t.contains("side") || !t.contains("position")) w.fail("token", "needs side and position");
        const std::string side = getString(t, "side", w);
        if (side != "source" && side != "target") w.fail("token.side", "'" + side + "' is not source or target");
        s.token_target = side == "target";
        s.token_position = getInt(t, "position", 0, 1 << 16, w);
    }
    if (v.contains("pair")) {
        const auto& p = v.at("pair");
        if (!p.is_array() || p.size() != 2 || !p[0].is_string() || !p[1].is_string() ||
            p[0].get<std::string>().find_first_not_of(" \t\r\n") == std::string::npos ||
            p[1].get<std::string>().find_first_not_of(" \t\r\n") == std::string::npos)
            w.fail("pair", "expected [sentence A, sentence B]: two non-empty strings");
        s.pair_a = p[0].get<std::string>();
        s.pair_b = p[1].get<std::string>();
    }
    if (v.contains("selections")) s.selections = parseSelections(v.at("selections"), w);
    if (v.contains("focus")) {
        s.focus = getString(v, "focus", w);
        if (s.focus->empty()) w.fail("focus", "is empty");
        if (!s.tab) w.fail("focus", "needs a tab in the same step (the view whose part it brings into view)");
    }
    return s;
}

// The caps of one step's text, for the reader and the writer alike.
void checkStepCaps(const LessonStep& s, const Where& w) {
    if (s.title.size() > kMaxTitleBytes)
        w.fail("title", std::to_string(s.title.size()) + " bytes, over the limit of " + std::to_string(kMaxTitleBytes));
    if (s.caption.size() > kMaxCaptionBytes)
        w.fail("caption", std::to_string(s.caption.size()) + " bytes, over the limit of " +
                              std::to_string(kMaxCaptionBytes) + " (split it over steps)");
}

void checkStepCount(size_t steps, const Where& w) {
    if (steps == 0) w.fail("steps", "expected a list of at least one step");
    if (steps > kMaxLessonSteps)
        w.fail("steps", std::to_string(steps) + " steps, over the limit of " + std::to_string(kMaxLessonSteps));
}

LessonStep parseStep(const json& j, const Where& w) {
    requireObject(j, "step", w);
    onlyKnownKeys(j, {"title", "caption", "view", "format", "version", "model"}, "", w);
    LessonStep s;
    if (j.contains("title")) s.title = getString(j, "title", w);
    if (j.contains("caption")) s.caption = getString(j, "caption", w);
    checkStepCaps(s, w);
    if (!j.contains("view")) w.fail("view", "missing");
    s.view = parseView(j.at("view"), w);
    return s;
}

json parseJson(const std::string& text, const std::string& origin) {
    try {
        return json::parse(text);
    } catch (const json::exception& e) {
        throw InputError(origin + ": not valid JSON (" + e.what() + ")");
    }
}

void checkHeader(const json& j, const char* format, const Where& w) {
    requireObject(j, "the file", w);
    if (!j.contains("format") || !j.at("format").is_string() || j.at("format").get<std::string>() != format)
        w.fail("format", std::string("expected \"") + format + "\"");
    if (!j.contains("version") || !j.at("version").is_number_integer() ||
        j.at("version").get<int64_t>() != kLessonVersion)
        w.fail("version", "expected " + std::to_string(kLessonVersion));
}

std::string readFileAsInput(const std::string& path) {
    try {
        return util::readSmallFile(path, kMaxLessonBytes);
    } catch (const Error& e) {
        throw InputError(e.what());
    }
}

json viewJson(const ViewState& s) {
    json v = json::object();
    if (s.tab) v["tab"] = *s.tab;
    if (s.sentence) v["sentence"] = *s.sentence;
    if (s.beam) v["beam"] = *s.beam;
    if (s.alpha) v["alpha"] = *s.alpha;
    if (s.max_length) v["max_length"] = *s.max_length;
    if (s.force_prefix) v["force_prefix"] = *s.force_prefix;
    if (s.source_language) v["source_language"] = *s.source_language;
    if (s.target_language) v["target_language"] = *s.target_language;
    if (s.kind) v["kind"] = attentionKindName(*s.kind);
    if (s.layer) v["layer"] = *s.layer;
    if (s.head) v["head"] = *s.head;
    if (s.cell_query && s.cell_key) v["cell"] = {*s.cell_query, *s.cell_key};
    if (s.step) v["step"] = *s.step;
    if (s.point) v["point"] = *s.point;
    if (s.token_target && s.token_position)
        v["token"] = {{"side", *s.token_target ? "target" : "source"}, {"position", *s.token_position}};
    if (s.pair_a && s.pair_b) v["pair"] = {*s.pair_a, *s.pair_b};
    if (s.focus) v["focus"] = *s.focus;
    if (s.measure) v["measure"] = mapMeasureName(*s.measure);
    for (const auto& [name, sel] : s.selections)
        v["selections"][name] = {{"kind", attentionKindName(sel.kind)}, {"layer", sel.layer}, {"head", sel.head}};
    return v;
}
}  // namespace

Lesson parseLesson(const std::string& text, const std::string& origin) {
    const json j = parseJson(text, origin);
    Where w{origin};
    checkHeader(j, kLessonFormat, w);
    onlyKnownKeys(j, {"format", "version", "title", "model", "steps"}, "", w);
    Lesson lesson;
    if (j.contains("title")) lesson.title = getString(j, "title", w);
    if (j.contains("model")) lesson.model = getString(j, "model", w);
    if (!j.contains("steps") || !j.at("steps").is_array()) w.fail("steps", "expected a list of at least one step");
    checkStepCount(j.at("steps").size(), w);
    for (const auto& s : j.at("steps")) {
        w.step = static_cast<int>(lesson.steps.size()) + 1;
        lesson.steps.push_back(parseStep(s, w));
    }
    return lesson;
}

Lesson readLesson(const std::string& path) { return parseLesson(readFileAsInput(path), path); }

namespace {
// A tab's own selection against the model's shape: the layer in its kind's stack, the head (or the mean).
void checkSelection(const std::string& name, const HeadSelection& s, int n_layers, int n_dec_layers, int n_head,
                    const Where& w) {
    const int layers = s.kind == AttentionKind::EncoderSelf ? n_layers : n_dec_layers;
    const std::string at = "selections." + name;
    if (s.layer >= layers)
        w.fail(at + ".layer", std::to_string(s.layer) + " is out of range: the model has " + std::to_string(layers) +
                                  " " + attentionKindName(s.kind) + " layers (0.." + std::to_string(layers - 1) + ")");
    if (s.head > n_head)
        w.fail(at + ".head", std::to_string(s.head) + " is out of range: the model has " + std::to_string(n_head) +
                                 " heads (0.." + std::to_string(n_head - 1) + ", " + std::to_string(n_head) +
                                 " = the mean)");
}

// A step's point (1-based) against the points of the model's attention history.
void checkPoint(int point, int points, const Where& w) {
    if (points <= 0)
        w.fail("point", "the model carries no attention history (it was not trained with --record-attention)");
    if (point > points)
        w.fail("point", std::to_string(point) + " is out of range: the model's attention history has " +
                            std::to_string(points) + " points (1.." + std::to_string(points) + ")");
}
}  // namespace

void checkLessonFitsModel(const Lesson& lesson, int n_layers, int n_head, const std::string& origin, int n_dec_layers,
                          std::optional<int> history_points) {
    if (n_dec_layers <= 0) n_dec_layers = n_layers;
    std::optional<AttentionKind> kind;  // as lessonViewAt(lesson, i) has it, carried step by step
    for (size_t i = 0; i < lesson.steps.size(); ++i) {
        const Where w{origin, static_cast<int>(i) + 1};
        const auto& v = lesson.steps[i].view;
        // The layer belongs to the stack of the step's kind (as inherited from earlier steps);
        // without one, to the deeper stack.
        if (v.kind) kind = v.kind;
        const int layers_here = !kind                                 ? std::max(n_layers, n_dec_layers)
                                : *kind == AttentionKind::EncoderSelf ? n_layers
                                                                      : n_dec_layers;
        if (v.layer && *v.layer >= layers_here) {
            const bool encoder = kind ? *kind == AttentionKind::EncoderSelf : n_layers >= n_dec_layers;
            const std::string stack = n_layers == n_dec_layers ? "" : encoder ? " in its encoder" : " in its decoder";
            w.fail("layer", std::to_string(*v.layer) + " is out of range: the model has " +
                                std::to_string(layers_here) + " layers" + stack + " (0.." +
                                std::to_string(layers_here - 1) + ")");
        }
        if (v.head && *v.head > n_head)
            w.fail("head", std::to_string(*v.head) + " is out of range: the model has " + std::to_string(n_head) +
                               " heads (0.." + std::to_string(n_head - 1) + ", " + std::to_string(n_head) +
                               " = the mean)");
        if (v.cell_query && v.head && *v.head == n_head)
            w.fail("cell", "a cell belongs to one head, not to the mean over heads");
        for (const auto& [name, s] : v.selections) checkSelection(name, s, n_layers, n_dec_layers, n_head, w);
        if (v.point && history_points) checkPoint(*v.point, *history_points, w);
    }
}

namespace {
std::string joined(const std::vector<std::string>& names) {
    std::string list;
    for (const auto& t : names) list += (list.empty() ? "" : ", ") + t;
    return list;
}

void checkFocus(const std::string& tab, const std::string& focus,
                const std::map<std::string, std::vector<std::string>>& parts, const Where& w) {
    const auto it = parts.find(tab);
    if (it == parts.end() || it->second.empty())
        w.fail("focus", "the " + tab + " view has no parts to bring into view");
    if (std::find(it->second.begin(), it->second.end(), focus) == it->second.end())
        w.fail("focus", "'" + focus + "' is not one of " + joined(it->second) + " (the " + tab + " view's parts)");
}
}  // namespace

void checkLessonViews(const Lesson& lesson, const std::vector<std::string>& views, const std::string& origin,
                      const std::map<std::string, std::vector<std::string>>& parts) {
    const std::string list = joined(views);
    const auto check = [&](const std::string& name, const std::string& field, const Where& w) {
        if (std::find(views.begin(), views.end(), name) == views.end())
            w.fail(field, "'" + name + "' is not one of " + list);
    };
    for (size_t i = 0; i < lesson.steps.size(); ++i) {
        const Where w{origin, static_cast<int>(i) + 1};
        const ViewState& v = lesson.steps[i].view;
        if (v.tab) check(*v.tab, "tab", w);
        for (const auto& entry : v.selections) check(entry.first, "selections", w);
        if (v.focus && v.tab) checkFocus(*v.tab, *v.focus, parts, w);
    }
}

ViewState lessonViewAt(const Lesson& lesson, int index) {
    ViewState v = lesson.steps.at(static_cast<size_t>(index)).view;
    for (int i = index - 1; i >= 0; --i) {
        const ViewState& earlier = lesson.steps[static_cast<size_t>(i)].view;
        auto inherit = [](auto& field, const auto& from) {
            if (!field && from) field = from;
        };
        inherit(v.sentence, earlier.sentence);
        inherit(v.beam, earlier.beam);
        inherit(v.alpha, earlier.alpha);
        inherit(v.max_length, earlier.max_length);
        inherit(v.force_prefix, earlier.force_prefix);
        inherit(v.source_language, earlier.source_language);
        inherit(v.target_language, earlier.target_language);
        inherit(v.kind, earlier.kind);
        inherit(v.layer, earlier.layer);
        inherit(v.head, earlier.head);
        inherit(v.measure, earlier.measure);
        inherit(v.pair_a, earlier.pair_a);
        inherit(v.pair_b, earlier.pair_b);
    }
    return v;
}

std::vector<BundledLesson> bundledLessons() {
    std::vector<BundledLesson> out;
    const std::string dir = bundledLessonsDir();
    if (dir.empty()) return out;
    std::error_code ec;
    std::vector<std::string> files;
    for (const auto& f : std::filesystem::directory_iterator(dir, ec))
        if (f.path().extension() == ".json") files.push_back(f.path().string());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
        try {
            out.push_back({readLesson(f).title, f});
        } catch (const Error&) {
        }
    }
    return out;
}

std::string sessionJson(const LessonStep& step, const std::string& model) {
    json j;
    j["format"] = kSessionFormat;
    j["version"] = kLessonVersion;
    if (!model.empty()) j["model"] = model;
    j["title"] = step.title;
    j["caption"] = step.caption;
    j["view"] = viewJson(step.view);
    return j.dump(2) + "\n";
}

void writeSession(const std::string& path, const LessonStep& step, const std::string& model) {
    util::saveToFile(path, sessionJson(step, model));
}

Lesson parseSession(const std::string& text, const std::string& origin) {
    const json j = parseJson(text, origin);
    const Where w{origin};
    checkHeader(j, kSessionFormat, w);
    Lesson lesson;
    if (j.contains("model")) lesson.model = getString(j, "model", w);
    lesson.steps.push_back(parseStep(j, w));
    lesson.title = lesson.steps.front().title;
    return lesson;
}

Lesson readSession(const std::string& path) { return parseSession(readFileAsInput(path), path); }

namespace {
// `origin` names the lesson in errors: the file it goes to.
std::string lessonJsonFor(const Lesson& lesson, const std::string& origin) {
    Where w{origin};
    checkStepCount(lesson.steps.size(), w);
    json j;
    j["format"] = kLessonFormat;
    j["version"] = kLessonVersion;
    j["title"] = lesson.title;
    if (!lesson.model.empty()) j["model"] = lesson.model;
    j["steps"] = json::array();
    for (const LessonStep& step : lesson.steps) {
        w.step = static_cast<int>(j["steps"].size()) + 1;
        checkStepCaps(step, w);
        j["steps"].push_back({{"title", step.title}, {"caption", step.caption}, {"view", viewJson(step.view)}});
    }
    return j.dump(2) + "\n";
}
}  // namespace

std::string lessonJson(const Lesson& lesson) { return lessonJsonFor(lesson, "the lesson"); }

void writeLesson(const std::string& path, const Lesson& lesson) { util::saveToFile(path, lessonJsonFor(lesson, path)); }

}  // namespace attnlab
