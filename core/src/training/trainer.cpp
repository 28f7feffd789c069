// The training loop (class Trainer) and checkpoint averaging. The units it uses, one job each:
// examples.h (corpus -> ids -> batches), run_state.h (what a checkpoint records),
// checkpoint_store.h (latest / best / epoch-NNN), validation.h, model_card.h, objective.h.
#include <attnlab/alignment.h>
#include <attnlab/attention_history.h>
#include <attnlab/confidence.h>
#include <attnlab/device.h>
#include <attnlab/errors.h>
#include <attnlab/package.h>
#include <attnlab/run_layout.h>
#include <attnlab/tokenizer.h>
#include <attnlab/trainer.h>
#include <attnlab/training_log.h>
#include <attnlab/translator.h>

#include "data/corpus.h"
#include "package/package_io.h"
#include "training/checkpoint_store.h"
#include "training/examples.h"
#include "training/history_recorder.h"
#include "training/model_card.h"
#include "training/objective.h"
#include "training/run_state.h"
#include "training/validation.h"
#include "util/atomic_file.h"
#include "util/device.h"
#include "util/small_file.h"

#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>

namespace attnlab {
namespace fs = std::filesystem;

namespace training {
namespace {
using Clock = std::chrono::steady_clock;

std::string fmt(double v, int prec = 4) {
    std::ostringstream s;
    s << std::fixed << std::setprecision(prec) << v;
    return s.str();
}

// The corpus files of the options: explicit files first, else found in --data.
DataFiles resolveFiles(const TrainingOptions& o) {
    DataFiles f{o.src_lang, o.tgt_lang, o.train_src, o.train_tgt, o.valid_src, o.valid_tgt};
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

// A resumed run must train on the data it started with.
void checkSameData(const DataFiles& run, const DataFiles& given, const std::string& run_dir) {
    if (run.src_lang != given.src_lang || run.tgt_lang != given.tgt_lang)
        throw InputError("--resume: the run in " + run_dir + " translates " + run.src_lang + " -> " + run.tgt_lang +
                         " but --src/--tgt say " + given.src_lang + " -> " + given.tgt_lang +
                         " (leave out the data options to use the run's own)");
}

class Trainer {
public:
    Trainer(const TrainingOptions& options, const TrainingCallback& progress, const std::atomic<bool>* stop)
        : m_o(options),
          m_progress(progress),
          m_stop(stop),
          m_start(Clock::now()),
          m_out(options.output_dir),
          m_store(options.output_dir) {}

    TrainingSummary run();

private:
    void say(const std::string& m) const;
    double elapsed() const;
    double rateAt(int64_t step) const {
        return learningRate(step, m_o.lr_mul, m_pc.model.d_model, m_o.warmup_steps) *
               decayFactor(step, m_o.max_steps, m_o.decay_steps);
    }
    void readResumeState();
    void readData();
    std::string prepareTokenizer();
    void buildModel();
    void openLogs();
    void startHistory();
    void recordHistory(int epochs, double train_loss, double valid_loss = -1, double valid_bleu = -1);
    // Mean per target token over the epoch so far: what a checkpoint restores, so that a resumed run
    // records the same figure as an uninterrupted one.
    double epochLoss() const { return m_st.epoch_tokens > 0 ? m_st.epoch_loss_sum / double(m_st.epoch_tokens) : -1; }
    bool trainEpoch();  // false when a stopping criterion was met
    training::LossResult trainStep(const data::Batch& b);
    void reportWindow();
    void endEpoch();
    RunState snapshot(bool current_batch_done) const;
    CheckpointStore::Contents contents() { return {m_pc, m_model, m_tok_path, m_o, m_history_bytes}; }
    std::optional<ConfidenceCalibration> calibrate(const std::string& package_dir) const;
    void writeFinalPackage();

    TrainingOptions m_o;  // on --resume, the checkpoint's hyperparameters replace the command line's
    const TrainingCallback& m_progress;
    const std::atomic<bool>* m_stop;
    const Clock::time_point m_start;
    const fs::path m_out;
    CheckpointStore m_store;
    RunState m_st;

    data::ParallelCorpus m_train_corpus, m_valid_corpus;
    std::string m_tok_path;
    Encoded m_train;
    std::vector<data::Batch> m_batches;
    PackageConfig m_pc;
    torch::Device m_device{torch::kCPU};  // m_o.device, resolved once when the run starts
    model::Transformer m_model{nullptr};
    std::unique_ptr<torch::optim::Adam> m_optimizer;
    std::ofstream m_epoch_log, m_step_log;
    std::unique_ptr<HistoryRecorder> m_history;  // --record-attention
    std::string m_history_bytes;                 // what the checkpoints carry
    int64_t m_last_point_step = -1;              // this session's last recorded point

    struct Window {
        double loss = 0;
        int64_t tokens = 0, steps = 0;
        Clock::time_point start = Clock::now();
    } m_window;
    Clock::time_point m_last_save = Clock::now();
    double m_lr = 0;
    double m_session_start_elapsed = 0;
    int64_t m_session_start_step = 0;
    bool m_stopping = false;
    TrainingSummary m_summary;
};

void Trainer::say(const std::string& m) const {
    if (!m_progress) return;
    TrainingProgress p;
    p.message = m;
    m_progress(p);
}

double Trainer::elapsed() const {
    return m_session_start_elapsed + std::chrono::duration<double>(Clock::now() - m_start).count();
}

void Trainer::readResumeState() {
    if (!m_o.resume) return;
    m_st = m_store.readLatestState(&m_o);
    if (m_o.hasData()) {
        if (!m_st.data.train_src.empty()) checkSameData(m_st.data, resolveFiles(m_o), m_out.string());
    } else {
        if (m_st.data.train_src.empty())
            throw InputError(m_store.latestDir() + ": this checkpoint does not record its data files; give --data");
        m_o.src_lang = m_st.data.src_lang;
        m_o.tgt_lang = m_st.data.tgt_lang;
        m_o.train_src = m_st.data.train_src;
        m_o.train_tgt = m_st.data.train_tgt;
        m_o.valid_src = m_st.data.valid_src;
        m_o.valid_tgt = m_st.data.valid_tgt;
    }
    m_session_start_elapsed = m_st.elapsed_seconds;
    m_session_start_step = m_st.step;
}

void Trainer::readData() {
    const DataFiles files = resolveFiles(m_o);
    say("reading " + files.train_src + " and " + files.train_tgt);
    m_train_corpus = data::readParallel(files.train_src, files.train_tgt);
    m_valid_corpus = data::readParallel(files.valid_src, files.valid_tgt);
    m_tok_path = prepareTokenizer();
    Tokenizer tok(m_tok_path);
    if (tok.padId() < 0 || tok.bosId() < 0 || tok.eosId() < 0)
        throw InputError(m_tok_path + ": the tokenizer needs pad, bos and eos ids (train it with --pad_id etc.)");
    m_train = encode(tok, m_train_corpus, m_o.max_tokens_per_sentence);
    if (m_train.examples.empty()) throw InputError(files.train_src + ": no usable sentence pairs");
    const CorpusFingerprint fp = fingerprint(m_train);
    if (m_o.resume && m_st.train_fingerprint.pairs > 0 && !(fp == m_st.train_fingerprint))
        throw InputError("--resume: the training data differs from the run's: it was trained on " +
                         m_st.data.train_src + " + " + m_st.data.train_tgt + " (" + m_st.train_fingerprint.describe() +
                         "), now given " + files.train_src + " + " + files.train_tgt + " (" + fp.describe() +
                         "); leave out the data options to use the run's own, or start a new --output");
    m_st.data = files;
    m_st.train_fingerprint = fp;
    say("training pairs: " + std::to_string(m_train.examples.size()) + " used, " +
        std::to_string(m_train.skipped_empty) + " skipped as empty, " + std::to_string(m_train.skipped_long) +
        " skipped as longer than " + std::to_string(m_o.max_tokens_per_sentence) + " pieces");
    m_batches = data::makeBatches(m_train.examples, m_o.batch_tokens);

    m_pc.source_lang = m_o.src_lang;
    m_pc.target_lang = m_o.tgt_lang;
    m_pc.model = m_o.model;
    if (!m_o.init_from.empty() && !m_o.resume) {
        const PackageConfig start = readPackageConfig(m_o.init_from);
        if (start.tokenizer != "sentencepiece")
            throw InputError("--init-from " + m_o.init_from + ": an imported " + start.tokenizer +
                             " model (separate source and target tokenizers) cannot be trained further here");
        if (start.source_lang != m_o.src_lang || start.target_lang != m_o.tgt_lang)
            throw InputError("--init-from " + m_o.init_from + ": that model translates " + start.source_lang + " -> " +
                             start.target_lang + ", this run " + m_o.src_lang + " -> " + m_o.tgt_lang);
        m_pc.model = start.model;  // its shape; the run's own dropout
        m_pc.model.dropout = m_o.model.dropout;
    }
    m_pc.model.n_src_vocab = m_pc.model.n_trg_vocab = tok.vocabSize();
    m_pc.model.src_pad_idx = m_pc.model.trg_pad_idx = tok.padId();
    m_pc.bos_idx = tok.bosId();
    m_pc.eos_idx = tok.eosId();
    m_pc.unk_idx = tok.unkId();
}

std::string Trainer::prepareTokenizer() {
    if (m_o.resume) return (fs::path(m_store.latestDir()) / package_files::kTokenizer).string();
    if (!m_o.init_from.empty()) return (fs::path(m_o.init_from) / package_files::kTokenizer).string();
    if (!m_o.tokenizer.empty()) return m_o.tokenizer;
    const fs::path text = m_out / "spm_input.txt";
    {
        std::ofstream f(text);
        for (const auto& l : m_train_corpus.src) f << l << "\n";
        for (const auto& l : m_train_corpus.tgt) f << l << "\n";
    }
    say("training a joint SentencePiece model of " + std::to_string(m_o.vocab_size) + " pieces");
    TokenizerTrainingOptions to;
    to.input_files = {text.string()};
    to.model_path = (m_out / "spm.model").string();
    to.vocab_size = m_o.vocab_size;
    to.num_threads = std::max(1, setComputeThreads(m_o.threads));
    Tokenizer::train(to);
    fs::remove(text);
    return to.model_path;
}

void Trainer::buildModel() {
    if (m_o.resume) {
        m_pc = readPackageConfig(m_store.latestDir());
        m_model = package::loadWeights(m_store.latestDir(), m_pc);
    } else if (!m_o.init_from.empty()) {
        m_pc.validate();
        torch::manual_seed(m_o.seed);
        m_model = package::loadWeights(m_o.init_from, m_pc);
        say("starting from the weights of " + m_o.init_from);
    } else {
        m_pc.validate();
        torch::manual_seed(m_o.seed);
        m_model = model::Transformer(m_pc.model);
    }
    if (m_device != torch::kCPU) {
        m_model->to(m_device);
        say("training on " + m_device.str());
    }
    m_model->train();
    m_optimizer = std::make_unique<torch::optim::Adam>(m_model->parameters(),
                                                       torch::optim::AdamOptions(1e-3).betas({0.9, 0.98}).eps(1e-9));
    if (m_o.resume) {
        m_store.restoreLatest(*m_optimizer, m_device);
        // The checkpoint holds the CPU generator's state only: dropout on a GPU draws from CUDA's
        // generator, which a resumed session seeds anew, differently at each step resumed from (a
        // GPU run resumes statistically like, not bit for bit like, an uninterrupted one).
        if (m_device.is_cuda()) torch::cuda::manual_seed_all(m_o.seed ^ uint64_t(m_st.step));
        say("resumed at step " + std::to_string(m_st.step) + ", epoch " + std::to_string(m_st.epoch + 1) + ", batch " +
            std::to_string(m_st.batch_in_epoch) + " of " + std::to_string(m_batches.size()));
    }
    // The learning rate of the last step taken (logged if the run resumes exactly at an epoch's end).
    if (m_st.step > 0) m_lr = rateAt(m_st.step);
}

// A session killed after its last checkpoint may have logged rows that the resumed run logs again:
// keep only the rows up to the checkpoint (`column` of each data row <= limit).
void keepRowsUpTo(const fs::path& file, size_t column, double limit) {
    std::ifstream in(file);
    if (!in) return;
    std::string line, kept;
    bool header = true;
    while (std::getline(in, line)) {
        if (line.empty()) continue;
        size_t start = 0;
        for (size_t c = 0; c < column && start != std::string::npos; ++c) start = line.find('\t', start) + 1;
        if (header || std::strtod(line.c_str() + start, nullptr) <= limit) kept += line + "\n";
        header = false;
    }
    util::saveToFile(file.string(), kept);
}

void Trainer::openLogs() {
    auto header = [](const auto& columns) {
        std::string h;
        for (const char* c : columns) h += (h.empty() ? "" : "\t") + std::string(c);
        return h + "\n";
    };
    // On resume, rows past the checkpoint go; a fresh run in an old output directory starts with
    // empty logs (m_st is at step 0).
    keepRowsUpTo(m_out / run_layout::kEpochLog, 0, double(m_st.epoch));
    keepRowsUpTo(m_out / run_layout::kStepLog, 0, double(m_st.step));
    m_epoch_log.open(m_out / run_layout::kEpochLog, std::ios::app);
    m_step_log.open(m_out / run_layout::kStepLog, std::ios::app);
    if (fs::file_size(m_out / run_layout::kEpochLog) == 0) m_epoch_log << header(epoch_log::kColumns);
    if (fs::file_size(m_out / run_layout::kStepLog) == 0) m_step_log << header(step_log::kColumns);
}

// --record-attention: the recorder, continuing the history of the checkpoint resumed from or of the
// package started from (its next stage); the first point before the first step.
void Trainer::startHistory() {
    std::optional<AttentionHistory> earlier;
    bool new_stage = false;
    const fs::path resumed = fs::path(m_store.latestDir()) / package_files::kAttentionHistory;
    const fs::path initial = fs::path(m_o.init_from) / package_files::kAttentionHistory;
    if (m_o.resume && fs::exists(resumed)) {
        earlier = readAttentionHistory(resumed.string());
    } else if (!m_o.resume && m_o.record_attention && !m_o.init_from.empty() && fs::exists(initial)) {
        if (!m_o.probe_file.empty())
            throw ConfigError("--probe: the run continues the attention history of " + m_o.init_from +
                              ", whose probe sentences are fixed; leave out --probe");
        earlier = readAttentionHistory(initial.string());
        new_stage = true;
    }
    if (!earlier && !m_o.record_attention) return;
    std::vector<std::pair<std::string, std::string>> probes;
    if (!earlier && !m_o.probe_file.empty()) probes = readProbes(m_o.probe_file);
    // Without --probe: the first validation pairs short enough to read as a map (kProbeMaxWords a side).
    constexpr size_t kProbeMaxWords = 16;
    for (size_t i = 0;
         !earlier && m_o.probe_file.empty() && i < m_valid_corpus.src.size() && int(probes.size()) < m_o.probe_count;
         ++i)
        if (whitespaceWords(m_valid_corpus.src[i]).size() <= kProbeMaxWords &&
            whitespaceWords(m_valid_corpus.tgt[i]).size() <= kProbeMaxWords)
            probes.emplace_back(m_valid_corpus.src[i], m_valid_corpus.tgt[i]);
    const int every = earlier && !new_stage ? std::max(1, earlier->record_every) : m_o.record_every;
    m_history =
        std::make_unique<HistoryRecorder>(m_pc, m_model, m_tok_path, probes, every, std::move(earlier), new_stage);
    m_history_bytes = m_history->bytes();
    // The run's copy is the checkpoint's (a killed session may have recorded points past it).
    util::saveToFile((m_out / package_files::kAttentionHistory).string(), m_history_bytes);
    if (m_st.step == 0) recordHistory(m_st.epoch, -1);
    say("recording attention every " + std::to_string(every) + " steps and every epoch (" +
        std::to_string(m_history->history().probes.size()) + " probe sentences, " +
        std::to_string(m_history->history().points.size()) + " points so far)");
}

void Trainer::recordHistory(int epochs, double train_loss, double valid_loss, double valid_bleu) {
    m_last_point_step = m_st.step;
    m_history->record(m_st.step, epochs, train_loss, valid_loss, valid_bleu);
    m_history_bytes = m_history->bytes();
    util::saveToFile((m_out / package_files::kAttentionHistory).string(), m_history_bytes);
}

LossResult Trainer::trainStep(const data::Batch& b) {
    auto t = toTensors(m_train.examples, b, m_pc.model.trg_pad_idx, m_pc.bos_idx, m_pc.eos_idx, m_model->device());
    ++m_st.step;
    m_lr = rateAt(m_st.step);
    for (auto& g : m_optimizer->param_groups()) static_cast<torch::optim::AdamOptions&>(g.options()).lr(m_lr);
    m_optimizer->zero_grad();
    // Only non-pad positions are projected onto the vocabulary (the loss ignores the rest).
    auto gold = t.gold.view(-1);
    auto positions = gold.ne(m_pc.model.trg_pad_idx).nonzero().squeeze(1);
    auto r = labelSmoothedLoss(m_model->forwardAt(t.src, t.trg_in, positions), gold.index_select(0, positions),
                               m_o.label_smoothing, m_pc.model.trg_pad_idx);
    (r.loss_sum / double(std::max<int64_t>(r.tokens, 1))).backward();
    if (m_o.clip_norm > 0) torch::nn::utils::clip_grad_norm_(m_model->parameters(), m_o.clip_norm);
    m_optimizer->step();
    return r;
}

void Trainer::reportWindow() {
    const double secs = std::chrono::duration<double>(Clock::now() - m_window.start).count();
    const int64_t n_batches = static_cast<int64_t>(m_batches.size());
    TrainingProgress p;
    p.epoch = m_st.epoch + 1;
    p.step = m_st.step;
    p.batch_in_epoch = m_st.batch_in_epoch + 1;
    p.batches_per_epoch = n_batches;
    p.loss = m_window.loss / double(std::max<int64_t>(m_window.tokens, 1));
    p.learning_rate = m_lr;
    p.target_tokens_per_second = double(m_window.tokens) / std::max(secs, 1e-9);
    p.elapsed_seconds = elapsed();
    // ETA to the nearest criterion, from this session's average speed.
    const double per_step =
        (elapsed() - m_session_start_elapsed) / double(std::max<int64_t>(m_st.step - m_session_start_step, 1));
    const double budget_s = m_o.time_budget_minutes * 60.0;
    double eta = -1;
    if (m_o.max_steps > 0) eta = double(m_o.max_steps - m_st.step) * per_step;
    if (m_o.epochs > 0) {
        const double left = double(m_o.epochs - m_st.epoch) * double(n_batches) - double(m_st.batch_in_epoch + 1);
        eta = eta < 0 ? left * per_step : std::min(eta, left * per_step);
    }
    if (budget_s > 0) eta = eta < 0 ? budget_s - elapsed() : std::min(eta, budget_s - elapsed());
    p.eta_seconds = eta;
    if (m_progress) m_progress(p);
    m_step_log << m_st.step << '\t' << m_st.epoch + 1 << '\t' << fmt(p.elapsed_seconds, 1) << '\t' << fmt(p.loss)
               << '\t' << m_lr << '\t' << fmt(p.target_tokens_per_second, 1) << '\n'
               << std::flush;
    m_window = Window{};
}

RunState Trainer::snapshot(bool current_batch_done) const {
    RunState s = m_st;
    if (current_batch_done) ++s.batch_in_epoch;
    s.elapsed_seconds = elapsed();
    return s;
}

bool Trainer::trainEpoch() {
    const auto order = data::epochOrder(m_batches.size(), m_o.seed, m_st.epoch);
    const double budget_s = m_o.time_budget_minutes * 60.0;
    for (; m_st.batch_in_epoch < static_cast<int64_t>(m_batches.size()); ++m_st.batch_in_epoch) {
        const auto r = trainStep(m_batches[order[m_st.batch_in_epoch]]);
        const double l = r.loss_sum.item<double>();
        m_window.loss += l;
        m_window.tokens += r.tokens;
        ++m_window.steps;
        m_st.epoch_loss_sum += l;
        m_st.epoch_tokens += r.tokens;
        if (m_history && m_history->due(m_st.step)) recordHistory(m_st.epoch, epochLoss());

        const bool out_of_steps = m_o.max_steps > 0 && m_st.step >= m_o.max_steps;
        const bool out_of_time = budget_s > 0 && elapsed() >= budget_s;
        const bool interrupted = m_stop && m_stop->load();
        if (m_window.steps >= m_o.log_every_steps || out_of_steps || out_of_time || interrupted) reportWindow();
        if (out_of_steps || out_of_time || interrupted) {
            m_summary.stopped_early = !out_of_steps && (out_of_time || interrupted);
            ++m_st.batch_in_epoch;  // this batch is done
            return false;
        }
        if (m_o.save_every_minutes > 0 &&
            std::chrono::duration<double>(Clock::now() - m_last_save).count() >= m_o.save_every_minutes * 60) {
            m_store.saveLatest(contents(), snapshot(true), *m_optimizer);
            m_last_save = Clock::now();
            say("checkpoint written: " + m_store.latestDir() + " (step " + std::to_string(m_st.step) + ")");
        }
    }
    return true;
}

void Trainer::endEpoch() {
    say("validating after epoch " + std::to_string(m_st.epoch + 1));
    const ValidationResult v = validate(m_model, m_pc, m_tok_path, m_valid_corpus, m_o);
    const double epoch_loss = m_st.epoch_loss_sum / double(std::max<int64_t>(m_st.epoch_tokens, 1));
    m_epoch_log << m_st.epoch + 1 << '\t' << m_st.step << '\t' << fmt(elapsed(), 1) << '\t'
                << fmt(m_st.epoch_loss_sum / double(std::max<int64_t>(m_st.epoch_tokens, 1))) << '\t' << fmt(v.loss)
                << '\t' << fmt(v.ppl, 2) << '\t' << fmt(v.accuracy) << '\t' << fmt(v.bleu, 2) << '\t' << fmt(v.chrf, 2)
                << '\t' << m_lr << '\n'
                << std::flush;
    say("epoch " + std::to_string(m_st.epoch + 1) + ": valid loss " + fmt(v.loss) + ", ppl " + fmt(v.ppl, 2) +
        ", accuracy " + fmt(v.accuracy) + ", BLEU " + fmt(v.bleu, 2) + " (" + v.signature + "), chrF " +
        fmt(v.chrf, 2));
    m_st.epoch_loss_sum = 0;
    m_st.epoch_tokens = 0;
    ++m_st.epoch;
    m_st.batch_in_epoch = 0;
    m_summary.epochs_completed = m_st.epoch;
    if (m_history) recordHistory(m_st.epoch, epoch_loss, v.loss, v.bleu);  // before the checkpoints that carry it
    if (m_o.keep_epoch_checkpoints > 0) m_store.saveEpoch(contents(), snapshot(false), m_o.keep_epoch_checkpoints);
    if (v.bleu > m_st.best_bleu) {
        m_st.best_bleu = v.bleu;
        m_store.saveBest(contents(), snapshot(false));
        say("new best validation BLEU " + fmt(v.bleu, 2) + ": " + m_store.bestDir());
    }
}

// The result package: the best checkpoint by validation BLEU (else the latest), with the log
// and a model card.
// The confidence threshold of the final package, from its translations of the validation sources
// (beam and length penalty as the app's defaults). Nothing when stopped meanwhile.
std::optional<ConfidenceCalibration> Trainer::calibrate(const std::string& package_dir) const {
    say("calibrating confidence on " + std::to_string(m_valid_corpus.src.size()) + " validation sentences");
    TranslatorOptions to;
    to.device = m_o.device;  // the run's: on a GPU run, the GPU
    to.num_threads = m_o.threads;
    try {
        const Translator translator(package_dir, to);
        return calibrateConfidence(translator, m_valid_corpus.src, DecodingOptions{}, 5.0,
                                   "`" + fs::path(m_st.data.valid_src).filename().string() + "`",
                                   [&](const StepProgress&) { return !(m_stop && m_stop->load()); });
    } catch (const CancelledError&) {
        say("confidence calibration stopped: the package carries no confidence threshold");
        return std::nullopt;
    }
}

void Trainer::writeFinalPackage() {
    const bool best = m_store.hasBest() && !m_o.package_last_step;
    const fs::path src = best ? m_store.bestDir() : m_store.latestDir();
    const fs::path pkg = m_out / run_layout::kFinalPackage;
    PackageConfig cfg = readPackageConfig(src.string());
    auto m = package::loadWeights(src.string(), cfg);
    const auto calibration = calibrate(src.string());
    package::SaveOptions so;
    if (calibration) so.extra_files[package_files::kConfidence] = confidenceCalibrationToJson(*calibration);
    std::ifstream log(m_out / run_layout::kEpochLog);
    std::stringstream ls;
    ls << log.rdbuf();
    so.extra_files[package_files::kTrainingLog] = ls.str();
    // The history up to the package's weights: the best checkpoint's copy, or the whole run's to
    // its last step (the latest checkpoint's copy lacks the last step's point).
    if (!best && m_history)
        so.extra_files[package_files::kAttentionHistory] = m_history_bytes;
    else if (fs::exists(src / package_files::kAttentionHistory))
        so.extra_files[package_files::kAttentionHistory] =
            util::readSmallFile((src / package_files::kAttentionHistory).string(), size_t(1) << 30);
    so.extra_files[package_files::kModelCard] =
        modelCard({m_o, m_pc, m_st, m_train_corpus.src.size(), m_train, elapsed(),
                   best ? "best validation BLEU" : "latest", calibration});
    package::savePackage(pkg.string(), cfg, m, (src / package_files::kTokenizer).string(), so);
    m_summary.package_dir = pkg.string();
}

TrainingSummary Trainer::run() {
    m_device = util::resolveDevice(m_o.device);  // a device that is not there fails before the data is read
    setComputeThreads(m_o.threads);
    readResumeState();
    readData();
    buildModel();
    openLogs();
    startHistory();
    while (!m_stopping && (m_o.epochs <= 0 || m_st.epoch < m_o.epochs)) {
        m_stopping = !trainEpoch();
        if (m_st.batch_in_epoch >= static_cast<int64_t>(m_batches.size())) endEpoch();
        m_store.saveLatest(contents(), snapshot(false), *m_optimizer);
        m_last_save = Clock::now();
    }
    // The run's last step is a point of its history (a toy of 1,500 steps, every 50, ended at
    // 1,386). After the last checkpoint, which does not carry it: a resumed run continues from the
    // checkpoint and records as an uninterrupted run would.
    if (m_history && m_last_point_step != m_st.step) recordHistory(m_st.epoch, epochLoss());
    m_summary.steps = m_st.step;
    m_summary.seconds = elapsed();
    m_summary.best_valid_bleu = m_st.best_bleu;
    writeFinalPackage();
    return m_summary;
}

}  // namespace
}  // namespace training

void averagePackages(const std::vector<std::string>& dirs, const std::string& out) {
    if (dirs.empty()) throw ConfigError("average: no packages given");
    const PackageConfig cfg = readPackageConfig(dirs.front());
    std::vector<model::Transformer> models;
    for (const auto& d : dirs) {
        const PackageConfig c = readPackageConfig(d);
        if (packageConfigToJson(c) != packageConfigToJson(cfg))
            throw PackageError(d + ": its config.json differs from " + dirs.front() +
                               "'s; only identical models can be averaged");
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
    so.extra_files[package_files::kAveragedFrom] = "Parameters averaged (arithmetic mean) over:\n\n" + list;
    // The attention history of the newest input (the one whose history reaches furthest).
    int64_t newest = -1;
    for (const auto& d : dirs) {
        const fs::path h = fs::path(d) / package_files::kAttentionHistory;
        if (!fs::exists(h)) continue;
        const std::string bytes = util::readSmallFile(h.string(), size_t(1) << 30);
        const auto history = parseAttentionHistory(bytes, h.string());
        if (!history.points.empty() && history.points.back().step > newest) {
            newest = history.points.back().step;
            so.extra_files[package_files::kAttentionHistory] = bytes;
        }
    }
    package::savePackage(out, cfg, models.front(), (fs::path(dirs.front()) / package_files::kTokenizer).string(), so);
}

TrainingSummary train(const TrainingOptions& options, const TrainingCallback& progress, const std::atomic<bool>* stop) {
    options.validate();
    try {
        return training::Trainer(options, progress, stop).run();
    } catch (const c10::Error& e) {
        throw InternalError(std::string("training: LibTorch failed: ") + e.what_without_backtrace());
    }
}

}  // namespace attnlab
