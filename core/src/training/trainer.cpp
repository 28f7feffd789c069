#include <attnlab/errors.h>
#include <attnlab/metrics.h>
#include <attnlab/package.h>
#include <attnlab/tokenizer.h>
#include <attnlab/trainer.h>
#include <attnlab/translator.h>

#include "data/corpus.h"
#include "decoding/translator_impl.h"
#include "package/package_io.h"
#include "training/objective.h"

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>

namespace attnlab {
namespace fs = std::filesystem;
using nlohmann::json;

ModelConfig TrainingOptions::bundledShape() {
    ModelConfig c;
    c.d_word_vec = c.d_model = 256;
    c.d_inner = 1024;
    c.n_layers = 3;
    c.n_head = 8;
    c.d_k = c.d_v = 32;
    c.dropout = 0.1;
    c.n_position = 200;
    c.trg_emb_prj_weight_sharing = c.emb_src_trg_weight_sharing = true;
    c.scale_emb_or_prj = "emb";
    return c;
}

void TrainingOptions::validate() const {
    auto fail = [](const std::string& m) { throw ConfigError("training options: " + m); };
    if (output_dir.empty()) fail("--output is required");
    if (data_dir.empty() && (train_src.empty() || train_tgt.empty() || valid_src.empty() || valid_tgt.empty()))
        fail("give --data DIR, or all of --train-src, --train-tgt, --valid-src, --valid-tgt");
    if (epochs <= 0 && max_steps <= 0 && time_budget_minutes <= 0)
        fail("no stopping criterion: set --epochs, --max-steps or --time-budget");
    if (epochs < 0 || max_steps < 0 || time_budget_minutes < 0) fail("stopping criteria must not be negative");
    if (batch_tokens < 16) fail("--batch-tokens " + std::to_string(batch_tokens) + " is below 16");
    if (label_smoothing < 0 || label_smoothing >= 1) fail("--label-smoothing must be in [0, 1)");
    if (lr_mul <= 0) fail("--lr-mul must be positive");
    if (warmup_steps < 1) fail("--warmup must be at least 1");
    if (clip_norm < 0) fail("--clip-norm must not be negative");
    if (vocab_size < 300 && tokenizer.empty()) fail("--vocab-size " + std::to_string(vocab_size) + " is below 300");
    if (max_tokens_per_sentence < 2) fail("--max-len must be at least 2");
    if (max_tokens_per_sentence + 2 > model.n_position)
        fail("--max-len " + std::to_string(max_tokens_per_sentence) + " does not fit n_position " +
             std::to_string(model.n_position) + " (with <s> and </s>)");
    if (valid_beam < 1) fail("--valid-beam must be at least 1");
    // The model's own ranges (vocabulary sizes are filled in from the tokenizer later).
    ModelConfig m = model;
    m.n_src_vocab = m.n_trg_vocab = std::max<int64_t>(vocab_size, 8);
    m.src_pad_idx = m.trg_pad_idx = 0;
    m.validate();
}

namespace {
using Clock = std::chrono::steady_clock;

struct Files {
    std::string train_src, train_tgt, valid_src, valid_tgt;
};

Files resolveFiles(const TrainingOptions& o) {
    Files f{o.train_src, o.train_tgt, o.valid_src, o.valid_tgt};
    auto find = [&](std::string& slot, const std::string& stem, const std::string& lang) {
        if (!slot.empty()) return;
        const std::string base = (fs::path(o.data_dir) / (stem + "." + lang)).string();
        slot = data::findCorpusFile(base);
        if (slot.empty()) throw InputError(base + "(.gz): missing file in --data " + o.data_dir);
    };
    find(f.train_src, "train", o.src_lang);
    find(f.train_tgt, "train", o.tgt_lang);
    find(f.valid_src, "val", o.src_lang);
    find(f.valid_tgt, "val", o.tgt_lang);
    return f;
}

struct Encoded {
    std::vector<data::Example> examples;
    int64_t skipped_empty = 0, skipped_long = 0;
};

Encoded encode(const Tokenizer& tok, const data::ParallelCorpus& c, int max_len) {
    Encoded e;
    const int eos = tok.eosId();
    for (size_t i = 0; i < c.src.size(); ++i) {
        const bool blank_s = c.src[i].find_first_not_of(" \t") == std::string::npos;
        const bool blank_t = c.tgt[i].find_first_not_of(" \t") == std::string::npos;
        if (blank_s || blank_t) {
            ++e.skipped_empty;
            continue;
        }
        data::Example ex;
        ex.src = tok.encode(c.src[i]).ids;
        ex.tgt = tok.encode(c.tgt[i]).ids;
        if (static_cast<int>(ex.src.size()) + 1 > max_len || static_cast<int>(ex.tgt.size()) + 1 > max_len) {
            ++e.skipped_long;
            continue;
        }
        ex.src.push_back(eos);
        e.examples.push_back(std::move(ex));
    }
    return e;
}

struct BatchTensors {
    torch::Tensor src, trg_in, gold;
    int64_t target_tokens = 0;
};

BatchTensors toTensors(const std::vector<data::Example>& ex, const data::Batch& b, int64_t pad, int64_t bos, int64_t eos) {
    const int64_t n = static_cast<int64_t>(b.examples.size());
    BatchTensors t;
    t.src = torch::full({n, b.src_len}, pad, torch::kInt64);
    t.trg_in = torch::full({n, b.tgt_len}, pad, torch::kInt64);
    t.gold = torch::full({n, b.tgt_len}, pad, torch::kInt64);
    auto s = t.src.accessor<int64_t, 2>();
    auto ti = t.trg_in.accessor<int64_t, 2>();
    auto g = t.gold.accessor<int64_t, 2>();
    for (int64_t i = 0; i < n; ++i) {
        const auto& e = ex[b.examples[i]];
        for (size_t j = 0; j < e.src.size(); ++j) s[i][j] = e.src[j];
        ti[i][0] = bos;
        for (size_t j = 0; j < e.tgt.size(); ++j) {
            ti[i][j + 1] = e.tgt[j];
            g[i][j] = e.tgt[j];
        }
        g[i][e.tgt.size()] = eos;
        t.target_tokens += static_cast<int64_t>(e.tgt.size()) + 1;
    }
    return t;
}

std::string serialize(const std::function<void(std::ostream&)>& f) {
    std::ostringstream out(std::ios::binary);
    f(out);
    return out.str();
}

struct State {
    int64_t step = 0;
    int epoch = 0;                 // 0-based epoch in progress
    int64_t batch_in_epoch = 0;    // next batch of that epoch
    double best_bleu = -1.0;
    double elapsed_seconds = 0.0;  // training time of earlier sessions
};

json stateJson(const State& s, const TrainingOptions& o) {
    // The hyperparameters travel with the checkpoint so that a resumed run uses them, whatever
    // the resuming command line says.
    json hyper = {{"batch_tokens", o.batch_tokens},   {"label_smoothing", o.label_smoothing},
                  {"lr_mul", o.lr_mul},               {"warmup_steps", o.warmup_steps},
                  {"clip_norm", o.clip_norm},         {"seed", o.seed},
                  {"max_tokens_per_sentence", o.max_tokens_per_sentence}};
    return {{"step", s.step}, {"epoch", s.epoch}, {"batch_in_epoch", s.batch_in_epoch}, {"best_bleu", s.best_bleu},
            {"elapsed_seconds", s.elapsed_seconds}, {"hyper", hyper}};
}

struct Validation {
    double loss = 0, ppl = 0, accuracy = 0, bleu = 0, chrf = 0;
    std::string signature;
};

std::string fmt(double v, int prec = 4) {
    std::ostringstream s;
    s << std::fixed << std::setprecision(prec) << v;
    return s.str();
}

std::string hardware() {
    std::ifstream cpu("/proc/cpuinfo");
    std::string line, model;
    int cores = 0;
    while (std::getline(cpu, line)) {
        if (line.rfind("model name", 0) == 0 && model.empty()) model = line.substr(line.find(':') + 2);
        if (line.rfind("processor", 0) == 0) ++cores;
    }
    return (model.empty() ? std::string("unknown CPU") : model) + ", " + std::to_string(cores) + " logical cores, " +
           std::to_string(torch::get_num_threads()) + " LibTorch threads";
}

std::string modelCard(const TrainingOptions& o, const PackageConfig& pc, const Files& f, size_t train_pairs,
                      const Encoded& enc, const State& st, double seconds, const std::string& which) {
    const ModelConfig& m = pc.model;
    std::ostringstream c;
    c << "# Model card: " << pc.source_lang << " -> " << pc.target_lang << " Transformer\n\n"
      << "Trained with AttnLab's trainer (`attnlab-cli train`), the encoder-decoder of *Attention Is All You Need* as "
         "structured by the reference PyTorch implementation. This package is the " << which << " checkpoint.\n\n"
      << "## Data\n\n"
      << "- training: `" << f.train_src << "`, `" << f.train_tgt << "` (" << train_pairs << " pairs; " << enc.examples.size()
      << " used, " << enc.skipped_empty << " skipped as empty, " << enc.skipped_long << " skipped as longer than "
      << o.max_tokens_per_sentence << " pieces)\n"
      << "- validation: `" << f.valid_src << "`, `" << f.valid_tgt << "`\n"
      << "- vocabulary: joint SentencePiece model, " << m.n_src_vocab << " pieces, byte fallback\n\n"
      << "## Hyperparameters\n\n"
      << "| | |\n| --- | --- |\n"
      << "| layers (encoder, decoder) | " << m.n_layers << " + " << m.n_layers << " |\n"
      << "| d_model / d_inner / heads / d_k / d_v | " << m.d_model << " / " << m.d_inner << " / " << m.n_head << " / " << m.d_k
      << " / " << m.d_v << " |\n"
      << "| dropout | " << m.dropout << " |\n"
      << "| weight sharing (prj, emb) / scale_emb_or_prj | " << std::boolalpha << m.trg_emb_prj_weight_sharing << ", "
      << m.emb_src_trg_weight_sharing << " / " << m.scale_emb_or_prj << " |\n"
      << "| batch | " << o.batch_tokens << " tokens |\n"
      << "| label smoothing | " << o.label_smoothing << " |\n"
      << "| Adam | betas (0.9, 0.98), eps 1e-9; lr = " << o.lr_mul << " * d_model^-0.5 * min(step^-0.5, step * "
      << o.warmup_steps << "^-1.5) |\n"
      << "| gradient clipping | " << (o.clip_norm > 0 ? std::to_string(o.clip_norm) : std::string("off")) << " |\n"
      << "| seed | " << o.seed << " |\n\n"
      << "## Training\n\n"
      << "- steps: " << st.step << ", epochs completed: " << st.epoch << "\n"
      << "- training wall time (all sessions, validation included): " << fmt(seconds / 3600.0, 2) << " h\n"
      << "- hardware: " << hardware() << "\n"
      << "- best validation BLEU (greedy, sacreBLEU default signature nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp): "
      << fmt(st.best_bleu, 2) << "\n"
      << "- per-epoch validation figures: `training_log.tsv` in this package\n\n"
      << "## Reproduce\n\n```sh\n" << (o.command_line.empty() ? std::string("attnlab-cli train ...") : o.command_line)
      << "\n```\n";
    return c.str();
}

}  // namespace

void averagePackages(const std::vector<std::string>& dirs, const std::string& out) {
    if (dirs.empty()) throw ConfigError("average: no packages given");
    const PackageConfig cfg = readPackageConfig(dirs.front());
    std::vector<model::Transformer> models;
    for (const auto& d : dirs) {
        const PackageConfig c = readPackageConfig(d);
        if (packageConfigToJson(c) != packageConfigToJson(cfg))
            throw PackageError(d + ": its config.json differs from " + dirs.front() + "'s; only identical models can be averaged");
        models.push_back(package::loadWeights(d, c));
    }
    torch::NoGradGuard ng;
    auto params = models.front()->named_parameters();
    for (auto& p : params) {
        auto sum = p.value().to(torch::kFloat64);
        for (size_t i = 1; i < models.size(); ++i) sum += models[i]->named_parameters()[p.key()].to(torch::kFloat64);
        p.value().copy_(sum / double(models.size()));
    }
    package::SaveOptions so;
    std::string list;
    for (const auto& d : dirs) list += "- `" + d + "`\n";
    so.extra_files["AVERAGED_FROM.md"] = "Parameters averaged (arithmetic mean) over:\n\n" + list;
    package::savePackage(out, cfg, models.front(), (fs::path(dirs.front()) / package_files::kTokenizer).string(), so);
}

TrainingSummary train(const TrainingOptions& options, const TrainingCallback& progress, const std::atomic<bool>* stop) {
    options.validate();
    TrainingOptions o = options;  // on --resume, the checkpoint's hyperparameters replace these
    const auto t_start = Clock::now();
    setComputeThreads(o.threads);
    const fs::path out = o.output_dir, ckpt_dir = out / "checkpoints";
    const fs::path latest = ckpt_dir / "latest", best = ckpt_dir / "best";
    fs::create_directories(ckpt_dir);
    auto say = [&](const std::string& m) {
        if (progress) {
            TrainingProgress p;
            p.message = m;
            progress(p);
        }
    };

    // ---- resume state
    State st;
    if (o.resume) {
        if (!fs::is_regular_file(latest / "trainer_state.json"))
            throw InputError((latest / "trainer_state.json").string() + ": missing file: nothing to resume in " + out.string());
        json j;
        try {
            j = json::parse(std::ifstream(latest / "trainer_state.json"));
            st.step = j.at("step").get<int64_t>();
            st.epoch = j.at("epoch").get<int>();
            st.batch_in_epoch = j.at("batch_in_epoch").get<int64_t>();
            st.best_bleu = j.at("best_bleu").get<double>();
            st.elapsed_seconds = j.at("elapsed_seconds").get<double>();
            if (j.contains("hyper")) {
                const json& h = j.at("hyper");
                o.batch_tokens = h.at("batch_tokens").get<int>();
                o.label_smoothing = h.at("label_smoothing").get<double>();
                o.lr_mul = h.at("lr_mul").get<double>();
                o.warmup_steps = h.at("warmup_steps").get<int>();
                o.clip_norm = h.at("clip_norm").get<double>();
                o.seed = h.at("seed").get<uint64_t>();
                o.max_tokens_per_sentence = h.at("max_tokens_per_sentence").get<int>();
            }
        } catch (const json::exception& e) {
            throw PackageError((latest / "trainer_state.json").string() + ": corrupt checkpoint state: " + e.what());
        }
    }

    // ---- data and vocabulary
    const Files files = resolveFiles(o);
    say("reading " + files.train_src + " and " + files.train_tgt);
    const auto train_corpus = data::readParallel(files.train_src, files.train_tgt);
    const auto valid_corpus = data::readParallel(files.valid_src, files.valid_tgt);
    std::string tok_path;
    if (o.resume) {
        tok_path = (latest / package_files::kTokenizer).string();
    } else if (!o.tokenizer.empty()) {
        tok_path = o.tokenizer;
    } else {
        const fs::path text = out / "spm_input.txt";
        {
            std::ofstream f(text);
            for (const auto& l : train_corpus.src) f << l << "\n";
            for (const auto& l : train_corpus.tgt) f << l << "\n";
        }
        say("training a joint SentencePiece model of " + std::to_string(o.vocab_size) + " pieces");
        TokenizerTrainingOptions to;
        to.input_files = {text.string()};
        to.model_prefix = (out / "spm").string();
        to.vocab_size = o.vocab_size;
        to.num_threads = std::max(1, setComputeThreads(o.threads));
        Tokenizer::train(to);
        fs::remove(text);
        tok_path = to.model_prefix + ".model";
    }
    Tokenizer tok(tok_path);
    if (tok.padId() < 0 || tok.bosId() < 0 || tok.eosId() < 0)
        throw InputError(tok_path + ": the tokenizer needs pad, bos and eos ids (train it with --pad_id etc.)");
    const auto train_enc = encode(tok, train_corpus, o.max_tokens_per_sentence);
    if (train_enc.examples.empty()) throw InputError(files.train_src + ": no usable sentence pairs");
    say("training pairs: " + std::to_string(train_enc.examples.size()) + " used, " + std::to_string(train_enc.skipped_empty) +
        " skipped as empty, " + std::to_string(train_enc.skipped_long) + " skipped as longer than " +
        std::to_string(o.max_tokens_per_sentence) + " pieces");
    const auto batches = data::makeBatches(train_enc.examples, o.batch_tokens);

    // ---- model
    PackageConfig pc;
    pc.source_lang = o.src_lang;
    pc.target_lang = o.tgt_lang;
    pc.model = o.model;
    pc.model.n_src_vocab = pc.model.n_trg_vocab = tok.vocabSize();
    pc.model.src_pad_idx = pc.model.trg_pad_idx = tok.padId();
    pc.bos_idx = tok.bosId();
    pc.eos_idx = tok.eosId();
    pc.unk_idx = tok.unkId();
    model::Transformer model{nullptr};
    if (o.resume) {
        pc = readPackageConfig(latest.string());
        model = package::loadWeights(latest.string(), pc);
    } else {
        pc.validate();
        torch::manual_seed(o.seed);
        model = model::Transformer(pc.model);
    }
    model->train();
    torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(1e-3).betas({0.9, 0.98}).eps(1e-9));
    if (o.resume) {
        try {
            torch::load(optimizer, (latest / "optimizer.pt").string());
            std::vector<torch::Tensor> rng;
            torch::load(rng, (latest / "rng.pt").string());
            at::Generator gen = at::detail::getDefaultCPUGenerator();
            gen.set_state(rng.at(0));
        } catch (const c10::Error& e) {
            throw PackageError(latest.string() + ": corrupt optimizer or random state: " + e.what_without_backtrace());
        }
        say("resumed at step " + std::to_string(st.step) + ", epoch " + std::to_string(st.epoch + 1) + ", batch " +
            std::to_string(st.batch_in_epoch) + " of " + std::to_string(batches.size()));
    }

    std::ofstream epoch_log(out / "log.tsv", std::ios::app), step_log(out / "steps.tsv", std::ios::app);
    if (fs::file_size(out / "log.tsv") == 0)
        epoch_log << "epoch\tstep\telapsed_s\ttrain_loss\tvalid_loss\tvalid_ppl\tvalid_acc\tvalid_bleu\tvalid_chrf\tlr\n";
    if (fs::file_size(out / "steps.tsv") == 0) step_log << "step\tepoch\telapsed_s\tloss\tlr\ttgt_tokens_per_s\n";

    // `latest` holds everything a resume needs; `best` is a model package plus its state (no
    // optimizer: it is only ever read as a model), which keeps it a third of the size.
    auto saveCheckpoint = [&](const fs::path& where, const State& s) {
        package::SaveOptions so;
        so.extra_files["trainer_state.json"] = stateJson(s, o).dump(2);
        if (where == best) {
            package::savePackage(where.string(), pc, model, tok_path, so);
            return;
        }
        so.extra_files["optimizer.pt"] = serialize([&](std::ostream& os) { torch::save(optimizer, os); });
        so.extra_files["rng.pt"] = serialize([&](std::ostream& os) {
            torch::save(std::vector<torch::Tensor>{at::detail::getDefaultCPUGenerator().get_state()}, os);
        });
        package::savePackage(where.string(), pc, model, tok_path, so);
    };

    // Validation: teacher-forced loss/perplexity/accuracy, then BLEU of translations.
    auto validate = [&]() {
        Validation v;
        torch::NoGradGuard ng;
        model->eval();
        const auto valid_enc = encode(tok, valid_corpus, static_cast<int>(pc.model.n_position) - 2);
        const auto vb = data::makeBatches(valid_enc.examples, o.batch_tokens);
        double loss = 0;
        int64_t tokens = 0, correct = 0;
        for (const auto& b : vb) {
            auto t = toTensors(valid_enc.examples, b, pc.model.trg_pad_idx, pc.bos_idx, pc.eos_idx);
            auto r = training::labelSmoothedLoss(model->forward(t.src, t.trg_in), t.gold.view(-1), 0.0, pc.model.trg_pad_idx);
            loss += r.loss_sum.item<double>();
            tokens += r.tokens;
            correct += r.correct;
        }
        v.loss = loss / double(std::max<int64_t>(tokens, 1));
        v.ppl = std::exp(v.loss);
        v.accuracy = double(correct) / double(std::max<int64_t>(tokens, 1));
        std::vector<std::string> srcs, refs;
        const size_t n = o.valid_bleu_sentences > 0 ? std::min<size_t>(o.valid_bleu_sentences, valid_corpus.src.size())
                                                    : valid_corpus.src.size();
        Translator::Impl tr(pc, model, std::make_unique<Tokenizer>(tok_path));
        DecodingOptions d;
        d.beam_size = o.valid_beam;
        d.return_attention = false;
        d.top_k_candidates = 0;
        d.max_batch_size = 64;
        for (size_t i = 0; i < n; ++i)
            if (tr.checkInput(valid_corpus.src[i]).empty()) {
                srcs.push_back(valid_corpus.src[i]);
                refs.push_back(valid_corpus.tgt[i]);
            }
        std::vector<std::string> hyps;
        for (const auto& r : tr.run(srcs, d, {}, decoding::StepperKind::Cached)) hyps.push_back(r.best.text);
        const auto bleu = corpusBleu(hyps, refs);
        v.bleu = bleu.score;
        v.signature = bleu.signature;
        v.chrf = corpusChrf(hyps, refs);
        model->train();
        return v;
    };

    // ---- the loop
    TrainingSummary summary;
    const double budget_s = o.time_budget_minutes * 60.0;
    auto last_save = Clock::now();
    auto window_start = Clock::now();
    double window_loss = 0, epoch_loss = 0;
    int64_t window_tokens = 0, epoch_tokens = 0, window_steps = 0;
    double lr = 0;
    bool stopping = false;
    auto elapsed = [&] { return st.elapsed_seconds + std::chrono::duration<double>(Clock::now() - t_start).count(); };
    const double session_start_elapsed = st.elapsed_seconds;
    const int64_t session_start_step = st.step;

    while (!stopping && (o.epochs <= 0 || st.epoch < o.epochs)) {
        const auto order = data::epochOrder(batches.size(), o.seed, st.epoch);
        for (; st.batch_in_epoch < static_cast<int64_t>(batches.size()); ++st.batch_in_epoch) {
            const auto& b = batches[order[st.batch_in_epoch]];
            auto t = toTensors(train_enc.examples, b, pc.model.trg_pad_idx, pc.bos_idx, pc.eos_idx);
            ++st.step;
            lr = training::learningRate(st.step, o.lr_mul, pc.model.d_model, o.warmup_steps);
            for (auto& g : optimizer.param_groups()) static_cast<torch::optim::AdamOptions&>(g.options()).lr(lr);
            optimizer.zero_grad();
            // Only non-pad positions are projected onto the vocabulary (the loss ignores the rest).
            auto gold = t.gold.view(-1);
            auto positions = gold.ne(pc.model.trg_pad_idx).nonzero().squeeze(1);
            auto r = training::labelSmoothedLoss(model->forwardAt(t.src, t.trg_in, positions), gold.index_select(0, positions),
                                                 o.label_smoothing, pc.model.trg_pad_idx);
            (r.loss_sum / double(std::max<int64_t>(r.tokens, 1))).backward();
            if (o.clip_norm > 0) torch::nn::utils::clip_grad_norm_(model->parameters(), o.clip_norm);
            optimizer.step();
            const double l = r.loss_sum.item<double>();
            window_loss += l;
            epoch_loss += l;
            window_tokens += r.tokens;
            epoch_tokens += r.tokens;
            ++window_steps;

            const bool out_of_steps = o.max_steps > 0 && st.step >= o.max_steps;
            const bool out_of_time = budget_s > 0 && elapsed() >= budget_s;
            const bool interrupted = stop && stop->load();
            if (window_steps >= o.log_every_steps || out_of_steps || out_of_time || interrupted) {
                const double secs = std::chrono::duration<double>(Clock::now() - window_start).count();
                TrainingProgress p;
                p.epoch = st.epoch + 1;
                p.step = st.step;
                p.batch_in_epoch = st.batch_in_epoch + 1;
                p.batches_per_epoch = static_cast<int64_t>(batches.size());
                p.loss = window_loss / double(std::max<int64_t>(window_tokens, 1));
                p.learning_rate = lr;
                p.target_tokens_per_second = double(window_tokens) / std::max(secs, 1e-9);
                p.elapsed_seconds = elapsed();
                // ETA to the nearest criterion, from this session's average speed.
                const double per_step = (elapsed() - session_start_elapsed) / double(std::max<int64_t>(st.step - session_start_step, 1));
                double eta = -1;
                if (o.max_steps > 0) eta = double(o.max_steps - st.step) * per_step;
                if (o.epochs > 0) {
                    const double left = double(o.epochs - st.epoch) * double(batches.size()) - double(st.batch_in_epoch + 1);
                    eta = eta < 0 ? left * per_step : std::min(eta, left * per_step);
                }
                if (budget_s > 0) eta = eta < 0 ? budget_s - elapsed() : std::min(eta, budget_s - elapsed());
                p.eta_seconds = eta;
                if (progress) progress(p);
                step_log << st.step << '\t' << st.epoch + 1 << '\t' << fmt(p.elapsed_seconds, 1) << '\t' << fmt(p.loss) << '\t'
                         << lr << '\t' << fmt(p.target_tokens_per_second, 1) << '\n'
                         << std::flush;
                window_loss = 0;
                window_tokens = 0;
                window_steps = 0;
                window_start = Clock::now();
            }
            if (out_of_steps || out_of_time || interrupted) {
                stopping = true;
                summary.stopped_early = out_of_time || interrupted;
                ++st.batch_in_epoch;  // this batch is done
                break;
            }
            if (o.save_every_minutes > 0 &&
                std::chrono::duration<double>(Clock::now() - last_save).count() >= o.save_every_minutes * 60) {
                State s = st;
                ++s.batch_in_epoch;
                s.elapsed_seconds = elapsed();
                saveCheckpoint(latest, s);
                last_save = Clock::now();
                say("checkpoint written: " + latest.string() + " (step " + std::to_string(st.step) + ")");
            }
        }
        const bool epoch_done = st.batch_in_epoch >= static_cast<int64_t>(batches.size());
        if (epoch_done) {
            say("validating after epoch " + std::to_string(st.epoch + 1));
            const Validation v = validate();
            epoch_log << st.epoch + 1 << '\t' << st.step << '\t' << fmt(elapsed(), 1) << '\t'
                      << fmt(epoch_loss / double(std::max<int64_t>(epoch_tokens, 1))) << '\t' << fmt(v.loss) << '\t'
                      << fmt(v.ppl, 2) << '\t' << fmt(v.accuracy) << '\t' << fmt(v.bleu, 2) << '\t' << fmt(v.chrf, 2) << '\t'
                      << lr << '\n'
                      << std::flush;
            say("epoch " + std::to_string(st.epoch + 1) + ": valid loss " + fmt(v.loss) + ", ppl " + fmt(v.ppl, 2) +
                ", accuracy " + fmt(v.accuracy) + ", BLEU " + fmt(v.bleu, 2) + " (" + v.signature + "), chrF " +
                fmt(v.chrf, 2));
            epoch_loss = 0;
            epoch_tokens = 0;
            ++st.epoch;
            st.batch_in_epoch = 0;
            summary.epochs_completed = st.epoch;
            if (o.keep_epoch_checkpoints > 0) {
                char name[32];
                std::snprintf(name, sizeof name, "epoch-%03d", st.epoch);
                State s = st;
                s.elapsed_seconds = elapsed();
                package::SaveOptions so;
                so.extra_files["trainer_state.json"] = stateJson(s, o).dump(2);
                package::savePackage((ckpt_dir / name).string(), pc, model, tok_path, so);
                std::snprintf(name, sizeof name, "epoch-%03d", st.epoch - o.keep_epoch_checkpoints);
                std::error_code ec;
                fs::remove_all(ckpt_dir / name, ec);
            }
            if (v.bleu > st.best_bleu) {
                st.best_bleu = v.bleu;
                State s = st;
                s.elapsed_seconds = elapsed();
                saveCheckpoint(best, s);
                say("new best validation BLEU " + fmt(v.bleu, 2) + ": " + best.string());
            }
        }
        State s = st;
        s.elapsed_seconds = elapsed();
        saveCheckpoint(latest, s);
        last_save = Clock::now();
    }

    summary.steps = st.step;
    summary.seconds = elapsed();
    summary.best_valid_bleu = st.best_bleu;
    // The result package: the best checkpoint by validation BLEU (else the latest).
    const fs::path src = fs::exists(best / package_files::kWeights) ? best : latest;
    const fs::path pkg = out / "model";
    {
        PackageConfig cfg = readPackageConfig(src.string());
        auto m = package::loadWeights(src.string(), cfg);
        package::SaveOptions so;
        std::ifstream log(out / "log.tsv");
        std::stringstream ls;
        ls << log.rdbuf();
        so.extra_files["training_log.tsv"] = ls.str();
        so.extra_files["MODEL_CARD.md"] = modelCard(o, pc, files, train_corpus.src.size(), train_enc, st, elapsed(),
                                                    src == best ? "best validation BLEU" : "latest");
        package::savePackage(pkg.string(), cfg, m, (src / package_files::kTokenizer).string(), so);
    }
    summary.package_dir = pkg.string();
    return summary;
}

}  // namespace attnlab
