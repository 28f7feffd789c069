// attnlab-cli: translate and inspect with AttnLab models. Only wiring: every behaviour lives in
// attnlab_core.
#include <attnlab/errors.h>
#include <attnlab/package.h>
#include <attnlab/result_json.h>
#include <attnlab/translator.h>

#include <CLI/CLI.hpp>

#include <unistd.h>

#include <cstdio>
#include <iomanip>
#include <iostream>
#include <string>
#include <vector>

namespace {

struct CommonOptions {
    std::string model;
    std::string device = "auto";
    int threads = 0;
};

void addCommon(CLI::App* cmd, CommonOptions& o) {
    cmd->add_option("--model,-m", o.model, "Model package directory (default: the bundled model)");
    cmd->add_option("--device", o.device, "auto | cpu | cuda | cuda:N")->capture_default_str();
    cmd->add_option("--threads", o.threads, "LibTorch threads (0 = all cores)")->capture_default_str();
}

std::string resolveModel(const std::string& given) {
    if (!given.empty()) return given;
    const std::string dir = attnlab::defaultModelDir();
    if (dir.empty())
        throw attnlab::InputError("no --model given and no bundled model found (set ATTNLAB_MODEL_DIR or pass --model DIR)");
    return dir;
}

attnlab::Translator load(const CommonOptions& o) {
    attnlab::TranslatorOptions t;
    t.device = o.device;
    t.num_threads = o.threads;
    return attnlab::Translator(resolveModel(o.model), t);
}

int runTranslate(const CommonOptions& common, const std::vector<std::string>& texts, const attnlab::DecodingOptions& d,
                 const std::string& attention_path) {
    d.validate();
    std::vector<std::string> lines = texts;
    if (lines.empty()) {
        std::string line;
        while (std::getline(std::cin, line)) {
            if (!line.empty() && line.back() == '\r') line.pop_back();
            lines.push_back(line);
        }
    }
    auto translator = load(common);
    // Invalid lines are reported and left empty, so the output stays aligned with the input.
    std::vector<std::string> valid;
    std::vector<size_t> where;
    int status = 0;
    for (size_t i = 0; i < lines.size(); ++i) {
        if (std::string why = translator.checkInput(lines[i]); !why.empty()) {
            std::cerr << "attnlab-cli: line " << i + 1 << ": " << why << "\n";
            status = 1;
        } else {
            valid.push_back(lines[i]);
            where.push_back(i);
        }
    }
    const bool show_progress = isatty(STDERR_FILENO) && valid.size() > 1;
    attnlab::StepCallback progress;
    if (show_progress)
        progress = [&](const attnlab::StepProgress& p) {
            std::cerr << "\rtranslating sentences " << p.sentence_begin + 1 << "-" << p.sentence_end << " of "
                      << p.sentences_total << "   " << std::flush;
            return true;
        };
    auto results = translator.translateBatch(valid, d, progress);
    if (show_progress) std::cerr << "\r" << std::string(60, ' ') << "\r";
    std::vector<std::string> out(lines.size());
    for (size_t i = 0; i < results.size(); ++i) {
        out[where[i]] = results[i].best.text;
        for (const auto& w : results[i].warnings) std::cerr << "attnlab-cli: line " << where[i] + 1 << ": " << w << "\n";
    }
    for (size_t i = 0; i < out.size(); ++i) {
        std::cout << out[i];
        if (d.nbest > 1) {
            auto it = std::find(where.begin(), where.end(), i);
            if (it != where.end())
                for (size_t k = 1; k < results[it - where.begin()].nbest.size(); ++k)
                    std::cout << "\t" << results[it - where.begin()].nbest[k].text;
        }
        std::cout << "\n";
    }
    std::cout.flush();
    if (!attention_path.empty()) attnlab::writeAttentionJson(attention_path, results, translator.info(), d);
    return status;
}

int runInspect(const CommonOptions& common) {
    auto translator = load(common);
    const auto& i = translator.info();
    const auto& m = i.config.model;
    std::cout << "package        " << i.package_dir << "\n"
              << "languages      " << i.config.source_lang << " -> " << i.config.target_lang << "\n"
              << "device         " << i.device << "\n"
              << "stored dtype   " << i.stored_dtype << "\n"
              << "vocabulary     " << i.vocab_size << " pieces (shared SentencePiece model)\n"
              << "load time      " << std::fixed << std::setprecision(3) << i.load_seconds << " s\n\n"
              << "configuration\n";
    std::cout << "  n_src_vocab " << m.n_src_vocab << "  n_trg_vocab " << m.n_trg_vocab << "  src_pad_idx "
              << m.src_pad_idx << "  trg_pad_idx " << m.trg_pad_idx << "\n"
              << "  d_word_vec " << m.d_word_vec << "  d_model " << m.d_model << "  d_inner " << m.d_inner << "\n"
              << "  n_layers " << m.n_layers << "  n_head " << m.n_head << "  d_k " << m.d_k << "  d_v " << m.d_v
              << "  dropout " << std::setprecision(2) << m.dropout << "  n_position " << m.n_position << "\n"
              << "  trg_emb_prj_weight_sharing " << std::boolalpha << m.trg_emb_prj_weight_sharing
              << "  emb_src_trg_weight_sharing " << m.emb_src_trg_weight_sharing << "  scale_emb_or_prj "
              << m.scale_emb_or_prj << "\n"
              << "  bos_idx " << i.config.bos_idx << "  eos_idx " << i.config.eos_idx << "  unk_idx " << i.config.unk_idx
              << "\n\nparameters\n";
    const auto& p = i.parameters;
    auto row = [](const char* name, int64_t n) { std::cout << "  " << std::left << std::setw(20) << name << std::right << std::setw(12) << n << "\n"; };
    row("encoder embedding", p.encoder_embedding);
    row("encoder layers", p.encoder_layers);
    row("decoder embedding", p.decoder_embedding);
    row("decoder layers", p.decoder_layers);
    row("output projection", p.output_projection);
    row("embedding norms", p.layer_norms);
    row("total", p.total);
    if (m.emb_src_trg_weight_sharing || m.trg_emb_prj_weight_sharing)
        std::cout << "  (tied embeddings are counted once, under decoder embedding)\n";
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"AttnLab command line: translate with a Transformer model package and inspect it"};
    app.require_subcommand(1);
    app.set_version_flag("--version", "attnlab-cli 0.1.0");

    CommonOptions common;
    attnlab::DecodingOptions decoding;
    std::vector<std::string> texts;
    std::string attention_path;

    auto* translate = app.add_subcommand("translate", "Translate sentences (--text or one per line on stdin)");
    addCommon(translate, common);
    translate->add_option("--text,-t", texts, "Sentence to translate (repeatable); stdin when absent");
    translate->add_option("--beam", decoding.beam_size, "Beam size (1 = greedy)")->capture_default_str();
    translate->add_option("--alpha", decoding.length_penalty, "Length penalty: score / length^alpha")->capture_default_str();
    translate->add_option("--max-len", decoding.max_length, "Longest output in tokens")->capture_default_str();
    translate->add_option("--max-len-ratio", decoding.max_length_ratio, "Relative cap: ratio * source length + offset (0 = off)")
        ->capture_default_str();
    translate->add_option("--max-len-offset", decoding.max_length_offset, "Offset of the relative cap")->capture_default_str();
    translate->add_option("--nbest", decoding.nbest, "Hypotheses per sentence (extra ones tab-separated)")->capture_default_str();
    translate->add_option("--batch-size", decoding.max_batch_size, "Sentences decoded together")->capture_default_str();
    translate->add_option("--attention", attention_path, "Write pieces and every attention map to this JSON file");

    auto* inspect = app.add_subcommand("inspect", "Show a model package's configuration and parameter counts");
    addCommon(inspect, common);

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    }
    try {
        if (translate->parsed()) {
            decoding.return_attention = !attention_path.empty();
            decoding.top_k_candidates = attention_path.empty() ? 0 : 5;
            return runTranslate(common, texts, decoding, attention_path);
        }
        if (inspect->parsed()) return runInspect(common);
    } catch (const attnlab::Error& e) {
        std::cerr << "attnlab-cli: " << e.what() << "\n";
        return 2;
    } catch (const std::exception& e) {
        std::cerr << "attnlab-cli: unexpected error: " << e.what() << "\n";
        return 3;
    }
    return 0;
}
