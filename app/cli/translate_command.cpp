#include "translate_command.h"

#include <attnlab/confidence.h>
#include <attnlab/device.h>
#include <attnlab/errors.h>
#include <attnlab/result_json.h>
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
#include <thread>

namespace attnlab_cli {

namespace {

// A partial batch from stdin is translated after this long without a new line.
constexpr std::chrono::milliseconds kBatchWait{100};
// --attention and --trace write one JSON document: the results are kept until the input ends.
constexpr size_t kMaxKeptResults = 1000;

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

// Translates lines batch by batch and prints each batch's translations in input order as soon as
// they are done: one output line per input line (an invalid line is reported on stderr and left
// empty). Keeps the results only where a JSON file needs them all.
class Translation {
public:
    Translation(attnlab::Translator& translator, const attnlab::DecodingOptions& d, const TranslateCommand& t)
        : m_translator(translator),
          m_d(d),
          m_t(t),
          m_keep(!t.attention_path.empty() || !t.trace_path.empty()),
          m_progress(isatty(STDERR_FILENO) && !isatty(STDOUT_FILENO)) {}

    // Line `number` (1-based): checked now, translated with its batch.
    void add(std::string line, int64_t number) {
        if (auto why = m_translator.inputProblem(line)) {
            clearProgress();
            std::cerr << "attnlab-cli: line " << number << ": " << attnlab::escapedForTerminal(*why) << "\n";
            m_status = 1;
            m_batch.push_back({number, {}, false});
        } else {
            m_batch.push_back({number, std::move(line), true});
        }
    }
    size_t pendingLines() const { return m_batch.size(); }  // invalid ones too: memory is bounded by all
    bool pending() const { return !m_batch.empty(); }
    // Results kept for a JSON file are capped (kMaxKeptResults) where the input has no end of its
    // own (stdin); --text sentences are as many as the command line holds.
    void capKeptResults() { m_cap_kept = true; }

    void translatePending() {
        std::vector<std::string> valid;
        for (auto& l : m_batch)
            if (l.valid) valid.push_back(std::move(l.text));
        if (m_keep && m_cap_kept && m_kept.size() + valid.size() > kMaxKeptResults)  // before the work
            throw attnlab::InputError(std::string(m_t.attention_path.empty() ? "--trace" : "--attention") +
                                      " keeps every translation for one JSON file: at most " +
                                      std::to_string(kMaxKeptResults) +
                                      " sentences from stdin (split the input; the translations printed so far "
                                      "are complete)");
        auto results = m_translator.translateBatch(valid, m_d);
        clearProgress();
        size_t next = 0;
        std::string out;
        for (const auto& l : m_batch) {
            if (l.valid) {
                report(l.number, results[next]);
                out += text(results[next]);
                ++next;
            }
            out += "\n";
        }
        errno = 0;
        std::cout << out << std::flush;
        if (!std::cout)
            throw attnlab::InputError(std::string("stdout: write failed") +
                                      (errno ? ": " + std::string(std::strerror(errno)) : std::string()));
        m_done += m_batch.size();
        m_batch.clear();
        if (m_progress) std::cerr << "\rtranslated " << m_done << " lines" << std::flush;
        if (m_keep) keep(std::move(results));
    }

    void writeFiles() {
        clearProgress();
        const auto& t = m_t;
        if (!t.attention_path.empty()) {
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
                for (const auto& r : m_kept) extras.value_norms.push_back(m_translator.valueNorms(r));
            if (saliency)
                for (const auto& r : m_kept) extras.saliency.push_back(m_translator.saliency(r));
            attnlab::writeAttentionJson(t.attention_path, m_kept, m_translator.info(), m_d, extras);
        }
        if (!t.trace_path.empty()) attnlab::writeTraceJson(t.trace_path, m_kept, m_translator.info(), m_d);
    }
    int status() const { return m_status; }

private:
    struct Line {
        int64_t number;
        std::string text;
        bool valid;
    };

    std::string text(const attnlab::TranslationResult& r) const {
        std::string s = r.best.text;
        for (size_t k = 1; k < r.nbest.size(); ++k) s += "\t" + r.nbest[k].text;
        if (m_t.scores) s += scoreColumns(r);
        return s;
    }
    void report(int64_t number, const attnlab::TranslationResult& r) const {
        for (const auto& w : r.warnings)
            std::cerr << "attnlab-cli: line " << number << ": " << attnlab::escapedForTerminal(w) << "\n";
        if (r.confidence.low)
            std::cerr << "attnlab-cli: line " << number << ": " << attnlab::lowConfidenceMessage(r.confidence) << "\n";
    }
    void keep(std::vector<attnlab::TranslationResult> results) {
        for (auto& r : results) m_kept.push_back(std::move(r));
    }
    void clearProgress() const {
        if (m_progress && m_done) std::cerr << "\r\033[K" << std::flush;
    }

    attnlab::Translator& m_translator;
    const attnlab::DecodingOptions& m_d;
    const TranslateCommand& m_t;
    const bool m_keep, m_progress;
    bool m_cap_kept = false;
    std::vector<Line> m_batch;
    size_t m_done = 0;
    std::vector<attnlab::TranslationResult> m_kept;
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

int runTranslate(const CommonOptions& common, const TranslateCommand& t) {
    attnlab::DecodingOptions d = t.decoding;
    d.validate();
    if (t.scores && d.nbest > 1)
        throw attnlab::ConfigError("--scores describes the best translation: leave out --nbest");
    // stdin is checked before the model loads: a closed or unreadable stdin fails at once.
    std::optional<attnlab::LineStream> in;
    if (t.texts.empty()) in.emplace(STDIN_FILENO, "stdin");
    // Lines from a file or a pipe come a batch at a time, but they are a whole file's work: every core (one
    // typed at a terminal keeps the one thread of a sentence a person waits for; docs/benchmarks.md).
    CommonOptions options = common;
    if (in && !isatty(STDIN_FILENO) && attnlab::requestedThreads(common.threads) == 0)
        options.threads = int(std::max(1u, std::thread::hardware_concurrency()));
    auto translator = load(options);
    useModelDefaults(d, translator, t.cmd);
    Translation translation(translator, d, t);
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
    translate->add_option("--attention", attention_path, "Write pieces and every attention map to this JSON file");
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
}

}  // namespace attnlab_cli
