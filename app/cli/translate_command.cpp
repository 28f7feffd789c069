#include "translate_command.h"

#include <attnlab/confidence.h>
#include <attnlab/device.h>
#include <attnlab/errors.h>
#include <attnlab/file_write.h>
#include <attnlab/partial_result.h>
#include <attnlab/result_json.h>
#include <attnlab/route.h>
#include <attnlab/teaching_json.h>
#include <attnlab/terminal_text.h>
#include <attnlab/text_io.h>
#include <attnlab/translator.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>

namespace attnlab_cli {

namespace {

// A partial batch from stdin is translated after this long without a new line.
constexpr std::chrono::milliseconds kBatchWait{100};
// --attention and --trace write one JSON document: the results are kept until the input ends.
constexpr size_t kMaxKeptResults = 1000;

// --contributions' names (checked by its validator) as methods, each once, in the order first given.
std::vector<attnlab::ContributionMethod> contributionMethods(const std::vector<std::string>& names) {
    std::vector<attnlab::ContributionMethod> methods;
    for (const auto& name : names)
        if (const auto m = attnlab::parseContributionMethod(name);
            m && std::find(methods.begin(), methods.end(), *m) == methods.end())
            methods.push_back(*m);
    return methods;
}

// --contrast STEP:PIECE: the step (0-based, as --ablate's numbers) and the other piece, split at the first colon
// (a piece may hold one); nothing when the option is absent. Throws ConfigError naming what is wrong.
std::optional<attnlab::ContrastiveQuery> contrastQuery(const std::string& text) {
    if (text.empty()) return std::nullopt;  // absent: an empty value given is refused by the option's check
    const auto colon = text.find(':');
    const std::string step = text.substr(0, colon);
    const bool digits = !step.empty() && step.size() <= 9 && step.find_first_not_of("0123456789") == std::string::npos;
    if (colon == std::string::npos || !digits || colon + 1 == text.size())
        throw attnlab::ConfigError("--contrast '" + attnlab::escapedForTerminal(text) +
                                   "': expected STEP:PIECE, a step of the translation (0-based) and another piece for "
                                   "it (e.g. 2:hound or 2:▁hound)");
    return attnlab::ContrastiveQuery{std::stoi(step), text.substr(colon + 1)};
}

// --scores: the sentence's mean probability per piece, then each piece with its probability.
std::string scoreColumns(const attnlab::TranslationResult& r) {
    auto number = [](double v) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.4f", v);
        return std::string(buf);
    };
    std::string out = "\t" + number(r.confidence.probability) + "\t";
    for (size_t i = 0; i < r.best.pieces.size(); ++i)
        out += (i ? " " : "") + r.best.pieces[i] + "=" + number(std::exp(r.best.token_log_probs.at(i)));
    return out;
}

// One model of the route a line goes through: the whole translation, or a leg of a pivot (the first
// leg's output is the second's input). Keeps its results where a JSON file needs them all.
struct Leg {
    attnlab::Translator* translator = nullptr;
    attnlab::DecodingOptions d;
    std::string attention_path, trace_path;             // this leg's files (legFileName for a pivot's legs)
    std::string name;                                   // "leg 2 (en -> fr)" in messages; empty for a direct route
    std::optional<attnlab::ContrastiveQuery> contrast;  // --contrast, on the last leg (the translation printed)
    std::vector<attnlab::TranslationResult> kept;
    std::vector<int64_t> kept_lines;  // each kept result's input line (1-based; invalid lines keep none)
};

// --contrast for the leg's kept result i. A question that does not fit the sentence (a step past the translation's
// end, the piece chosen there: Translator::contrastive's InputError) is skipped, not the run: the sentence's
// "contrastive" is null with why, and a warning names its input line.
attnlab::AttentionJsonExtras::ContrastiveEntry contrastFor(const Leg& leg, size_t i) {
    try {
        return {leg.translator->contrastive(leg.kept[i], *leg.contrast), {}};
    } catch (const attnlab::InputError& e) {
        std::cerr << "attnlab-cli: line " << leg.kept_lines.at(i)
                  << ": --contrast skipped, \"contrastive\" is null: " << attnlab::escapedForTerminal(e.what()) << "\n";
        return {std::nullopt, e.what()};
    }
}

// Translates lines batch by batch through every leg and prints each batch's translations in input
// order as soon as they are done: one output line per input line (an invalid line is reported on
// stderr and left empty); through a pivot, the middle sentence, a tab, then the translation.
class Translation {
public:
    Translation(std::vector<Leg>& legs, const TranslateCommand& t)
        : m_legs(legs),
          m_t(t),
          m_keep(!t.attention_path.empty() || !t.trace_path.empty()),
          m_progress(isatty(STDERR_FILENO) && !isatty(STDOUT_FILENO)) {}

    // Line `number` (1-based): checked now, translated with its batch.
    void add(std::string line, int64_t number) {
        if (auto why = m_legs.front().translator->inputProblem(line)) {
            problem(number, *why);
            m_batch.push_back({number, {}, false, {}, *why});
        } else {
            m_batch.push_back({number, std::move(line), true, {}, {}});
        }
    }
    size_t pendingLines() const { return m_batch.size(); }  // invalid ones too: memory is bounded by all
    bool pending() const { return !m_batch.empty(); }
    // Results kept for a JSON file are capped (kMaxKeptResults) where the input has no end of its
    // own (stdin); --text sentences are as many as the command line holds.
    void capKeptResults() { m_cap_kept = true; }
    // Every line's translations (one model: the route is direct) also go to `lines`, in input order.
    void record(std::vector<attnlab::TranslateLine>* lines) { m_record = lines; }

    void translatePending() {
        checkKeptRoom();
        for (size_t k = 0; k < m_legs.size(); ++k) translateLeg(k);
        clearProgress();
        std::string out;
        for (auto& l : m_batch) {
            for (size_t k = 0; k < l.results.size(); ++k) report(l.number, l.results[k], m_legs[k].name);
            if (m_legs.size() > 1 && !l.results.empty()) out += l.results.front().best.text + "\t";
            if (l.valid) out += text(l.results.back());
            out += "\n";
            if (m_record) m_record->push_back(recorded(l));
        }
        errno = 0;
        std::cout << out << std::flush;
        if (!std::cout)
            throw attnlab::InputError(std::string("stdout: write failed") +
                                      (errno ? ": " + std::string(std::strerror(errno)) : std::string()));
        m_done += m_batch.size();
        if (m_progress) std::cerr << "\rtranslated " << m_done << " lines" << std::flush;
        if (m_keep)
            for (auto& l : m_batch)
                for (size_t k = 0; k < l.results.size(); ++k) {
                    m_legs[k].kept.push_back(std::move(l.results[k]));
                    m_legs[k].kept_lines.push_back(l.number);
                }
        m_batch.clear();
    }

    // Every leg's maps are computed before any file is written: a failure leaves no leg's file half the run's.
    void writeFiles() {
        clearProgress();
        std::vector<attnlab::AttentionJsonExtras> extras;
        for (const auto& leg : m_legs)
            extras.push_back(leg.attention_path.empty() ? attnlab::AttentionJsonExtras{} : legExtras(leg));
        for (size_t k = 0; k < m_legs.size(); ++k) writeLegFiles(m_legs[k], extras[k]);
    }
    int status() const { return m_status; }

private:
    struct Line {
        int64_t number;
        std::string text;  // the input of the next leg
        bool valid;
        std::vector<attnlab::TranslationResult> results;  // one per leg done
        std::string why;                                  // why it is not translated (or empty)
    };

    static attnlab::TranslateLine recorded(const Line& l) {
        attnlab::TranslateLine out;
        out.skipped = l.why;
        if (!l.valid) return out;
        for (const auto& h : l.results.back().nbest) {
            out.translations.push_back(h.text);
            out.scores.push_back(h.score);
        }
        return out;
    }

    void checkKeptRoom() const {
        size_t valid = 0;
        for (const auto& l : m_batch) valid += l.valid;
        if (m_keep && m_cap_kept && m_legs.front().kept.size() + valid > kMaxKeptResults)  // before the work
            throw attnlab::InputError(std::string(m_t.attention_path.empty() ? "--trace" : "--attention") +
                                      " keeps every translation for one JSON file: at most " +
                                      std::to_string(kMaxKeptResults) +
                                      " sentences from stdin (split the input; the translations printed so far "
                                      "are complete)");
    }

    // The lines still valid through leg k; each result's text becomes the next leg's input, checked
    // by that leg's model (an empty middle sentence is reported and its line left empty).
    void translateLeg(size_t k) {
        std::vector<std::string> texts;
        for (const auto& l : m_batch)
            if (l.valid) texts.push_back(l.text);
        if (texts.empty()) return;
        auto results = m_legs[k].translator->translateBatch(texts, m_legs[k].d);
        size_t next = 0;
        for (auto& l : m_batch) {
            if (!l.valid) continue;
            l.text = results[next].best.text;
            l.results.push_back(std::move(results[next++]));
            if (k + 1 == m_legs.size()) continue;
            if (auto why = m_legs[k + 1].translator->inputProblem(l.text)) {
                problem(l.number, m_legs[k].name + "'s output, the middle sentence, cannot go on: " + *why);
                l.valid = false;
            }
        }
    }

    attnlab::AttentionJsonExtras legExtras(const Leg& leg) const {
        const auto& t = m_t;
        attnlab::AttentionJsonExtras extras;
        bool norms = false;
        bool saliency = false;
        for (const auto& name : t.maps) {  // each name at most once in effect, however often given
            saliency |= name == attnlab::kSaliencyName;
            const auto m = attnlab::parseMapMeasure(name);  // checked by --maps' validator
            norms |= m == attnlab::MapMeasure::ValueNorm;
            extras.rollout |= m == attnlab::MapMeasure::Rollout;
        }
        if (norms)
            for (const auto& r : leg.kept) extras.value_norms.push_back(leg.translator->valueNorms(r));
        if (saliency)
            for (const auto& r : leg.kept) extras.saliency.push_back(leg.translator->saliency(r));
        if (t.logit_lens)
            for (const auto& r : leg.kept) extras.logit_lens.push_back(leg.translator->logitLens(r));
        const auto methods = contributionMethods(t.contributions);
        if (!methods.empty())
            for (const auto& r : leg.kept) {
                extras.contributions.emplace_back();
                for (auto method : methods)
                    extras.contributions.back().push_back(leg.translator->contributions(r, method));
            }
        if (leg.contrast)
            for (size_t i = 0; i < leg.kept.size(); ++i) extras.contrastive.push_back(contrastFor(leg, i));
        return extras;
    }

    void writeLegFiles(const Leg& leg, const attnlab::AttentionJsonExtras& extras) const {
        if (!leg.attention_path.empty())
            attnlab::writeAttentionJson(leg.attention_path, leg.kept, leg.translator->info(), leg.d, extras);
        if (!leg.trace_path.empty()) attnlab::writeTraceJson(leg.trace_path, leg.kept, leg.translator->info(), leg.d);
    }

    void problem(int64_t number, const std::string& why) {
        clearProgress();
        std::cerr << "attnlab-cli: line " << number << ": " << attnlab::escapedForTerminal(why) << "\n";
        m_status = 1;
    }
    std::string text(const attnlab::TranslationResult& r) const {
        std::string s = r.best.text;
        for (size_t k = 1; k < r.nbest.size(); ++k) s += "\t" + r.nbest[k].text;
        if (m_t.scores) s += scoreColumns(r);
        return s;
    }
    // A leg's warnings name it ("line 2: leg 2 (en -> fr): ..."); a direct route's do not.
    void report(int64_t number, const attnlab::TranslationResult& r, const std::string& leg) const {
        const std::string where = "attnlab-cli: line " + std::to_string(number) + ": " +
                                  (leg.empty() ? std::string() : attnlab::escapedForTerminal(leg) + ": ");
        for (const auto& w : r.warnings) std::cerr << where << attnlab::escapedForTerminal(w) << "\n";
        if (r.confidence.low) std::cerr << where << attnlab::lowConfidenceMessage(r.confidence) << "\n";
    }
    void clearProgress() const {
        if (m_progress && m_done) std::cerr << "\r\033[K" << std::flush;
    }

    std::vector<Leg>& m_legs;
    const TranslateCommand& m_t;
    const bool m_keep, m_progress;
    bool m_cap_kept = false;
    std::vector<attnlab::TranslateLine>* m_record = nullptr;
    std::vector<Line> m_batch;
    size_t m_done = 0;
    int m_status = 0;
};

// stdin, line by line: a batch is translated when it holds --batch-size lines, kBatchWait after its
// first line came (a steady trickle of lines does not hold it back), or at the end (of the input,
// or before a read error is reported).
void translateStream(attnlab::LineStream& in, Translation& translation, size_t batch_size) {
    translation.capKeptResults();
    std::chrono::steady_clock::time_point first;  // when the pending batch's first line came
    for (;;) {
        std::string line;
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(first + kBatchWait -
                                                                                std::chrono::steady_clock::now());
        const auto wait =
            translation.pending() ? std::max(left, std::chrono::milliseconds(0)) : std::chrono::milliseconds(-1);
        attnlab::LineStream::Status got;
        try {
            got = in.next(line, wait);
        } catch (const attnlab::InputError&) {  // the lines read before the error are translated first
            if (translation.pending()) translation.translatePending();
            throw;
        }
        if (got == attnlab::LineStream::Status::Line) {
            if (!translation.pending()) first = std::chrono::steady_clock::now();
            translation.add(std::move(line), in.lineNumber());
            if (translation.pendingLines() < batch_size) continue;
        }
        if (translation.pending()) translation.translatePending();
        if (got == attnlab::LineStream::Status::End) return;
    }
}

}  // namespace

namespace {
// --from / --to: the route among the installed models (attnlab/route.h), said on stderr.
attnlab::TranslationRoute routeOf(const TranslateCommand& t) {
    auto route = attnlab::chooseInstalledRoute(t.from, t.to);
    std::string legs;
    for (const auto& m : route.legs) legs += (legs.empty() ? "" : ", then ") + m.name;
    std::cerr << "attnlab-cli: " << attnlab::escapedForTerminal(t.from + " -> " + t.to)
              << (route.pivot() ? attnlab::escapedForTerminal(" through " + route.middle()) : std::string()) << ": "
              << attnlab::escapedForTerminal(legs) << "\n";
    return route;
}

// What a pivot's legs share and what only the last takes (the forced prefix is target text).
void checkPivotOptions(const TranslateCommand& t) {
    if (!t.ablate.empty())
        throw attnlab::ConfigError("--ablate names heads of one model, and this route has two: leave it out");
}
}  // namespace

namespace {
// --shard / --json: the input read whole (its line count and checksum are the run's), its part translated in
// batches of --batch-size that start at multiples of it in the corpus (a part begins at a block's first line,
// attnlab/partial_result.h: its batches are the whole run's), the result written as JSON.
int translateCorpus(const TranslateCommand& t, std::optional<attnlab::LineStream>& in, Translation& translation,
                    const attnlab::Translator& translator, size_t batch_size) {
    std::vector<std::string> all = t.texts;
    if (in)
        for (std::string line; in->next(line, std::chrono::milliseconds(-1)) == attnlab::LineStream::Status::Line;)
            all.push_back(std::move(line));
    const auto run = corpusRun(t.cmd, translator, t.corpus, {{"src", &all}}, int(batch_size));
    const auto part = attnlab::partLines(run);
    announcePart(run);
    std::vector<attnlab::TranslateLine> lines;
    translation.record(&lines);
    for (size_t i = part.begin; i < part.end; ++i) {
        translation.add(all[i], int64_t(i) + 1);
        if (i + 1 == attnlab::chunkEnd(i, size_t(run.block), batch_size)) translation.translatePending();
    }
    if (translation.pending()) translation.translatePending();
    translation.writeFiles();
    if (!t.corpus.json_path.empty()) attnlab::saveToFile(t.corpus.json_path, attnlab::translateResultJson(run, lines));
    return translation.status();
}
}  // namespace

int runTranslate(const CommonOptions& common, const TranslateCommand& t) {
    attnlab::DecodingOptions d = t.decoding;
    d.validate();
    const bool corpus = !t.corpus.shard.empty() || !t.corpus.json_path.empty();
    if (corpus) t.corpus.parsed();  // --shard checked before anything is read
    if (corpus && !t.from.empty())
        throw attnlab::ConfigError("--shard and --json take one model (--model), not a route (--from / --to)");
    if (t.scores && d.nbest > 1)
        throw attnlab::ConfigError("--scores describes the best translation: leave out --nbest");
    // stdin is checked before the model loads: a closed or unreadable stdin fails at once.
    std::optional<attnlab::LineStream> in;
    if (t.texts.empty()) in.emplace(STDIN_FILENO, "stdin");
    // The threads follow each batch's work wherever its lines come from (attnlab/device.h, the thread policy).
    const auto contrast = contrastQuery(t.contrast);
    CommonOptions options = common;
    attnlab::TranslationRoute route;
    if (!t.from.empty()) route = routeOf(t);
    if (route.pivot()) checkPivotOptions(t);
    const size_t count = std::max<size_t>(route.legs.size(), 1);
    std::vector<attnlab::Translator> translators;
    std::vector<Leg> legs(count);
    for (size_t k = 0; k < count; ++k) {
        if (!route.legs.empty()) options.model = route.legs[k].dir;
        translators.push_back(load(options));
        Leg& leg = legs[k];
        leg.d = d;
        if (k + 1 < count) {  // the middle sentence: the best translation, nothing forced
            leg.d.nbest = 1;
            leg.d.force_prefix.clear();
        }
        leg.attention_path = t.attention_path;
        leg.trace_path = t.trace_path;
        if (k + 1 == count) leg.contrast = contrast;
        if (route.pivot()) {
            const auto& m = route.legs[k];
            leg.name = "leg " + std::to_string(k + 1) + " (" + m.source_lang + " -> " + m.target_lang + ")";
            if (!t.attention_path.empty()) leg.attention_path = attnlab::legFileName(t.attention_path, k + 1, m);
            if (!t.trace_path.empty()) leg.trace_path = attnlab::legFileName(t.trace_path, k + 1, m);
        }
    }
    for (size_t k = 0; k < count; ++k) {
        legs[k].translator = &translators[k];
        useModelDefaults(legs[k].d, translators[k], t.cmd);
    }
    Translation translation(legs, t);
    if (corpus) return translateCorpus(t, in, translation, translators.front(), size_t(d.max_batch_size));
    if (in) {
        translateStream(*in, translation, size_t(d.max_batch_size));
    } else {
        for (size_t i = 0; i < t.texts.size(); ++i) translation.add(t.texts[i], int64_t(i) + 1);
        translation.translatePending();  // translateBatch splits it into batches of --batch-size
    }
    translation.writeFiles();
    return translation.status();
}

void addTranslate(CLI::App& app, CommonOptions& common, TranslateCommand& t) {
    auto& decoding = t.decoding;
    auto& texts = t.texts;
    auto& attention_path = t.attention_path;
    auto* translate = t.cmd = app.add_subcommand("translate", "Translate sentences (--text or one per line on stdin)");
    addCommon(translate, common);
    translate->add_option("--text,-t", texts,
                          "Sentence to translate (repeatable); stdin when absent (translated as lines arrive)");
    translate->add_option("--beam", decoding.beam_size, "Beam size (1 = greedy)")->capture_default_str();
    addLanguages(translate, decoding);
    auto* from = translate->add_option(
        "--from", t.from,
        "Source language among the installed models (bundled, Argos Translate packages), instead of --model: a "
        "model of the pair, else two chained through English (pivot translation: each line prints the middle "
        "sentence, a tab, the translation)");
    auto* to = translate->add_option("--to", t.to, "Target language, with --from");
    from->needs(to);
    to->needs(from);
    for (const char* other : {"--model", "--src-lang", "--tgt-lang"}) {
        from->excludes(translate->get_option(other));
        to->excludes(translate->get_option(other));
    }
    translate->add_option("--alpha", decoding.length_penalty, "Length penalty: score / length^alpha")
        ->capture_default_str();
    translate->add_option("--max-len", decoding.max_length, "Longest output in tokens")->capture_default_str();
    translate
        ->add_option("--max-len-ratio", decoding.max_length_ratio,
                     "Relative cap: ratio * source length + offset (0 = off)")
        ->capture_default_str();
    translate->add_option("--max-len-offset", decoding.max_length_offset, "Offset of the relative cap")
        ->capture_default_str();
    translate
        ->add_option("--min-len", decoding.min_length,
                     "No </s> before this many tokens (-1: the model's; 1 for CTranslate2 models, else 0)")
        ->capture_default_str();
    translate->add_option("--nbest", decoding.nbest, "Hypotheses per sentence (extra ones tab-separated)")
        ->capture_default_str();
    translate
        ->add_option("--batch-size", decoding.max_batch_size,
                     "Sentences decoded together (stdin: a batch also ends 100 ms after its first line)")
        ->capture_default_str();
    translate->add_option("--attention", attention_path,
                          "Write pieces and every attention map to this JSON file (through a pivot, one file per "
                          "leg: FILE's name with .leg1-de-en, .leg2-en-fr before its extension)");
    translate
        ->add_option("--maps", t.maps,
                     "With --attention, also: value-norm (each weight times its key's value norm, Kobayashi et al.), "
                     "rollout (attention rollout, Abnar & Zuidema), saliency (gradient x input of every source and "
                     "previous target piece for each produced piece), comma-separated (docs/attention-json.md)")
        ->delimiter(',')
        ->check(CLI::IsMember([] {
            auto names = attnlab::mapMeasureNames();
            names.push_back(attnlab::kSaliencyName);
            return names;
        }()))
        ->needs(translate->get_option("--attention"));
    translate
        ->add_option("--contributions", t.contributions,
                     "With --attention, also each piece's contributions through the whole model: alti+ (Ferrando et "
                     "al. 2022), value-zeroing (Mohebbi et al. 2023), comma-separated (docs/contributions.md)")
        ->delimiter(',')
        ->check(CLI::IsMember([] {
            std::vector<std::string> names;
            for (auto m : attnlab::kContributionMethods) names.push_back(attnlab::contributionMethodName(m));
            return names;
        }()))
        ->needs(translate->get_option("--attention"));
    translate
        ->add_flag("--logit-lens", t.logit_lens,
                   "With --attention, also what each decoder layer's output would predict at every position (through "
                   "the final layer norm and the output projection: the logit lens, docs/contributions.md)")
        ->needs(translate->get_option("--attention"));
    translate
        ->add_option("--contrast", t.contrast,
                     "With --attention, also why each sentence's piece at STEP (0-based) and not PIECE: the saliency "
                     "and the value zeroing, per layer, of log p(chosen) - log p(PIECE) (\"contrastive\"; a word "
                     "typed without ▁ is read as the piece of its place; docs/contributions.md)")
        ->type_name("STEP:PIECE")
        ->check([](const std::string& v) {
            return v.empty() ? std::string("an empty value: expected STEP:PIECE (e.g. 2:hound)") : std::string();
        })
        ->needs(translate->get_option("--attention"));
    translate->add_flag("--scores", t.scores,
                        "After each translation: a tab, its mean probability per piece, a tab, and every piece as "
                        "piece=probability (space-separated)");
    translate->add_option("--force-prefix", decoding.force_prefix,
                          "Make every translation begin with this target text, then let the model continue");
    translate->add_option("--ablate", t.ablate,
                          "Switch heads off: kind:layer:head, comma-separated (e.g. cross:2:5,encoder:0:3; "
                          "0-based); each one's output becomes zeros before the output projection");
    translate->add_option("--trace", t.trace_path,
                          "Write every hypothesis the search scored, step by step, to this JSON file "
                          "(docs/trace-json.md)");
    translate->add_flag(
        "--reference-beam", decoding.reference_beam,
        "Search as the reference implementation's Translator does (for converted reference checkpoints)");
    addCorpusOutput(translate, t.corpus,
                    "Write every line's translations (--nbest: best first) and their scores as JSON (with --shard: "
                    "stdin or --text read whole, then the part translated)");
}

}  // namespace attnlab_cli
