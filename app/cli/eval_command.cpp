#include "eval_command.h"

#include <attnlab/errors.h>
#include <attnlab/file_write.h>
#include <attnlab/metrics.h>
#include <attnlab/partial_result.h>
#include <attnlab/terminal_text.h>
#include <attnlab/text_io.h>
#include <attnlab/translator.h>

#include <unistd.h>

#include <algorithm>
#include <iomanip>
#include <iostream>

namespace attnlab_cli {

using attnlab::escapedForTerminal;

void addEval(CLI::App& app, CommonOptions& common, EvalCommand& e) {
    auto* eval = e.cmd =
        app.add_subcommand("eval", "Translate a file and score it: corpus BLEU (sacreBLEU's default) and chrF");
    addCommon(eval, common);
    eval->add_option("--src", e.src, "Source sentences, one per line")->required();
    eval->add_option("--ref", e.ref, "Reference translations, one per line")->required();
    eval->add_option("--output", e.hyp_out, "Also write the translations to this file, one per line");
    eval->add_option("--beam", e.decoding.beam_size, "Beam size")->capture_default_str();
    attnlab_cli::addLanguages(eval, e.decoding);
    eval->add_option("--alpha", e.decoding.length_penalty, "Length penalty")->capture_default_str();
    eval->add_option("--batch-size", e.decoding.max_batch_size, "Sentences decoded together")->capture_default_str();
    eval->add_flag("--reference-beam", e.decoding.reference_beam,
                   "Search as the reference implementation's Translator does");
    addCorpusOutput(eval, e.corpus,
                    "Write the result as JSON: every line's translation and BLEU / chrF statistics, the corpus's "
                    "\"bleu\" and \"chrf\" (a part's with --shard)");
}

namespace {
// The lines [range) translated (a line the model cannot read: an empty translation, said on stderr), in order,
// one block of the corpus at a time (sorted by length and batched within it, attnlab/partial_result.h): a line's
// translation is the same in a part as in the whole run.
std::vector<attnlab::EvalLine> translated(const attnlab::Translator& translator,
                                          const std::vector<std::string>& sources, const std::vector<std::string>& refs,
                                          const std::string& src, const attnlab::LineRange& range, size_t block,
                                          const attnlab::DecodingOptions& d) {
    std::vector<attnlab::EvalLine> out;
    const bool tty = isatty(STDERR_FILENO);
    for (size_t begin = range.begin, end; begin < range.end; begin = end) {
        end = std::min(range.end, attnlab::chunkEnd(begin, block, 0));
        std::vector<std::string> hyps(end - begin), valid, why(end - begin);
        std::vector<size_t> where;
        for (size_t i = begin; i < end; ++i) {
            if (auto problem = translator.inputProblem(sources[i])) {
                std::cerr << "attnlab-cli: " << escapedForTerminal(src) << " line " << i + 1 << ": "
                          << escapedForTerminal(*problem) << " (scored as an empty translation)\n";
                why[i - begin] = *problem;
            } else {
                valid.push_back(sources[i]);
                where.push_back(i - begin);
            }
        }
        auto results = translator.translateBatch(valid, d, [&](const attnlab::StepProgress& p) {
            if (tty)
                std::cerr << "\rtranslating " << begin - range.begin + size_t(p.sentence_end) << "/" << range.size()
                          << std::flush;
            return true;
        });
        for (size_t i = 0; i < results.size(); ++i) hyps[where[i]] = results[i].best.text;
        for (size_t i = begin; i < end; ++i) out.push_back(attnlab::evalLine(hyps[i - begin], refs[i], why[i - begin]));
    }
    if (tty) std::cerr << "\r\033[K";
    return out;
}

void printScores(const std::vector<attnlab::EvalLine>& lines) {
    attnlab::BleuStats sum;
    attnlab::ChrfStats chrf;
    for (const auto& l : lines) {
        sum += l.bleu;
        chrf += l.chrf;
    }
    const auto bleu = attnlab::bleuFromStats(sum);
    std::cout << "BLEU = " << std::fixed << std::setprecision(2) << bleu.score << " " << bleu.precisions[0] << "/"
              << bleu.precisions[1] << "/" << bleu.precisions[2] << "/" << bleu.precisions[3]
              << " (BP = " << std::setprecision(3) << bleu.brevity_penalty
              << " ratio = " << double(bleu.sys_len) / double(std::max<int64_t>(bleu.ref_len, 1))
              << " hyp_len = " << bleu.sys_len << " ref_len = " << bleu.ref_len << ")\n"
              << "signature: " << bleu.signature << "\n"
              << "chrF2 = " << std::setprecision(2) << attnlab::chrfFromStats(chrf) << "\n";
}
}  // namespace

int runEval(const CommonOptions& common, EvalCommand& e) {
    attnlab::DecodingOptions d = e.decoding;
    d.return_attention = false;
    d.top_k_candidates = 0;
    d.validate();
    e.corpus.parsed();  // --shard checked before anything is read
    const auto sources = attnlab::readTextLines(e.src), refs = attnlab::readTextLines(e.ref);
    if (sources.size() != refs.size())
        throw attnlab::InputError("mismatched files: " + e.src + " has " + std::to_string(sources.size()) +
                                  " lines but " + e.ref + " has " + std::to_string(refs.size()));
    auto translator = load(common);
    attnlab_cli::useModelDefaults(d, translator, e.cmd);
    const auto run = corpusRun(e.cmd, translator, e.corpus, {{"src", &sources}, {"ref", &refs}}, d.max_batch_size);
    announcePart(run);
    const auto lines = translated(translator, sources, refs, e.src, attnlab::partLines(run), size_t(run.block), d);
    if (!e.hyp_out.empty()) {
        std::string text;
        for (const auto& l : lines) text += l.hypothesis + "\n";
        attnlab::saveToFile(e.hyp_out, text);
    }
    if (!e.corpus.json_path.empty()) attnlab::saveToFile(e.corpus.json_path, attnlab::evalResultJson(run, lines));
    printScores(lines);
    return 0;
}

}  // namespace attnlab_cli
