#include <attnlab/errors.h>
#include <attnlab/package.h>
#include <attnlab/positional.h>
#include <attnlab/tokenizer.h>
#include <attnlab/translator.h>

#include "decoding/search.h"
#include "decoding/translator_impl.h"
#include "model/positional_encoding.h"
#include "package/package_io.h"
#include "util/tensor_convert.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <numeric>
#include <thread>

namespace attnlab {
namespace fs = std::filesystem;

namespace {
using Clock = std::chrono::steady_clock;
double secondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

constexpr size_t kMaxSentenceBytes = 64 * 1024;

bool isBlank(const std::string& s) {
    return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isspace(c); });
}
}  // namespace

bool cudaAvailable() { return torch::cuda::is_available(); }

int setComputeThreads(int threads) {
    if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    if (torch::get_num_threads() != threads) torch::set_num_threads(threads);
    return threads;
}

namespace {
// The public positional functions allocate from user-chosen sizes (the GUI's lab): bound them.
torch::Tensor checkedTable(int n_position, int d_hid, int64_t max_positions) {
    if (n_position < 1 || d_hid < 1 || n_position > max_positions || int64_t(n_position) * d_hid > (int64_t(1) << 25))
        throw ConfigError("positional table: " + std::to_string(n_position) + " x " + std::to_string(d_hid) +
                          " is empty or too large");
    return model::sinusoidTable(n_position, d_hid);
}
}  // namespace

std::vector<std::vector<float>> sinusoidTable(int n_position, int d_hid) {
    return util::toMatrix(checkedTable(n_position, d_hid, int64_t(1) << 25));
}

std::vector<std::vector<float>> positionalDotProducts(int n_position, int d_hid) {
    auto t = checkedTable(n_position, d_hid, 8192);  // the result is n_position^2
    return util::toMatrix(torch::mm(t, t.t()));
}

torch::Device resolveDevice(const std::string& name) {
    if (name == "cpu") return torch::kCPU;
    if (name == "auto") return cudaAvailable() ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
    if (!cudaAvailable())
        throw DeviceError("device '" + name + "' was requested but LibTorch sees no CUDA device" +
                          std::string(torch::cuda::device_count() == 0 ? " (this LibTorch is CPU-only or no GPU is present)" : ""));
    torch::Device d(name);
    if (d.has_index() && d.index() >= static_cast<int>(torch::cuda::device_count()))
        throw DeviceError("device '" + name + "' does not exist: " + std::to_string(torch::cuda::device_count()) +
                          " CUDA device(s) visible");
    return d;
}

// ---------------------------------------------------------------- loading
Translator::Impl::Impl(const std::string& dir, const TranslatorOptions& options) : device(torch::kCPU) {
    const auto t0 = Clock::now();
    options.validate();
    setComputeThreads(options.num_threads);
    config = readPackageConfig(dir);
    const std::string tok_path = (fs::path(dir) / package_files::kTokenizer).string();
    {
        std::error_code ec;
        if (!fs::is_regular_file(tok_path, ec)) throw PackageError(tok_path + ": missing file");
    }
    try {
        tokenizer = std::make_unique<Tokenizer>(tok_path);
    } catch (const TokenizerError& e) {
        throw PackageError(e.what());
    }
    const int vocab = tokenizer->vocabSize();
    auto mismatch = [&](const std::string& field, int64_t value, int64_t tok) {
        throw PackageError(dir + ": config.json has " + field + " = " + std::to_string(value) + " but " +
                           package_files::kTokenizer + " has " + std::to_string(tok));
    };
    if (config.model.n_src_vocab != vocab) mismatch("n_src_vocab", config.model.n_src_vocab, vocab);
    if (config.model.n_trg_vocab != vocab) mismatch("n_trg_vocab", config.model.n_trg_vocab, vocab);
    if (config.bos_idx != tokenizer->bosId()) mismatch("bos_idx", config.bos_idx, tokenizer->bosId());
    if (config.eos_idx != tokenizer->eosId()) mismatch("eos_idx", config.eos_idx, tokenizer->eosId());
    if (config.unk_idx != tokenizer->unkId()) mismatch("unk_idx", config.unk_idx, tokenizer->unkId());

    device = resolveDevice(options.device);
    model = package::loadWeights(dir, config, &info.stored_dtype);
    model->to(device);
    model->eval();

    info.package_dir = fs::absolute(dir).string();
    info.config = config;
    info.vocab_size = vocab;
    info.device = device.str();
    info.parameters = countParameters();
    info.load_seconds = secondsSince(t0);
}

Translator::Impl::Impl(const PackageConfig& cfg, model::Transformer m, std::unique_ptr<Tokenizer> tok)
    : config(cfg), tokenizer(std::move(tok)), model(std::move(m)), device(torch::kCPU) {
    device = model->decoder->trg_word_emb->weight.device();
    info.config = config;
    info.vocab_size = tokenizer->vocabSize();
    info.device = device.str();
    info.parameters = countParameters();
}

ParameterCounts Translator::Impl::countParameters() const {
    ParameterCounts c;
    for (const auto& p : model->named_parameters()) {
        const std::string& k = p.key();
        const int64_t n = p.value().numel();
        c.total += n;
        if (k == "decoder.trg_word_emb.weight") c.decoder_embedding += n;
        else if (k == "encoder.src_word_emb.weight") c.encoder_embedding += n;
        else if (k == "trg_word_prj.weight") c.output_projection += n;
        else if (k.rfind("encoder.layer_stack.", 0) == 0) c.encoder_layers += n;
        else if (k.rfind("decoder.layer_stack.", 0) == 0) c.decoder_layers += n;
        else c.layer_norms += n;
    }
    return c;
}

// ---------------------------------------------------------------- input
std::string Translator::Impl::checkInput(const std::string& sentence) const {
    Encoding unused;
    return checkInput(sentence, unused);
}

std::string Translator::Impl::checkInput(const std::string& sentence, Encoding& encoding) const {
    if (sentence.size() > kMaxSentenceBytes)
        return "the sentence is " + std::to_string(sentence.size()) + " bytes long; at most " +
               std::to_string(kMaxSentenceBytes) + " are accepted";
    if (isBlank(sentence)) return "the sentence is empty";
    encoding = tokenizer->encode(sentence);
    const size_t n = encoding.ids.size() + (config.source_bos ? 1 : 0) + (config.source_eos ? 1 : 0);
    if (static_cast<int64_t>(n) > config.model.n_position)
        return "the sentence has " + std::to_string(n) + " pieces; this model accepts at most " +
               std::to_string(config.model.n_position) + " (n_position)";
    return {};
}

Translator::Impl::Source Translator::Impl::prepare(const std::string& sentence) const {
    Encoding e;
    if (std::string why = checkInput(sentence, e); !why.empty()) throw InputError(why);
    Source s;
    s.text = sentence;
    if (config.source_bos) s.ids.push_back(static_cast<int>(config.bos_idx));
    s.ids.insert(s.ids.end(), e.ids.begin(), e.ids.end());
    if (config.source_eos) s.ids.push_back(static_cast<int>(config.eos_idx));
    for (int id : s.ids) s.pieces.push_back(tokenizer->idToPiece(id));
    const auto unknown = tokenizer->unknownCharacters(e);
    if (!unknown.empty()) {
        std::string list;
        for (const auto& ch : unknown) list += (list.empty() ? "" : " ") + ch;
        s.warnings.push_back("characters not in the vocabulary: " + list +
                             (tokenizer->hasByteFallback() ? " (encoded as UTF-8 byte pieces)" : " (mapped to <unk>)"));
    }
    return s;
}

int Translator::Impl::maxLength(size_t src_len, const DecodingOptions& o) const {
    int64_t cap = std::min<int64_t>(o.max_length, config.model.n_position);
    if (o.max_length_ratio > 0)
        cap = std::min<int64_t>(cap, static_cast<int64_t>(o.max_length_ratio * double(src_len)) + o.max_length_offset);
    return static_cast<int>(std::max<int64_t>(cap, 1));
}

torch::Tensor Translator::Impl::sourceTensor(const std::vector<const Source*>& batch) const {
    size_t len = 0;
    for (const auto* s : batch) len = std::max(len, s->ids.size());
    auto src = torch::full({static_cast<int64_t>(batch.size()), static_cast<int64_t>(len)}, config.model.src_pad_idx,
                           torch::kInt64);
    auto a = src.accessor<int64_t, 2>();
    for (size_t i = 0; i < batch.size(); ++i)
        for (size_t j = 0; j < batch[i]->ids.size(); ++j) a[i][j] = batch[i]->ids[j];
    return src.to(device);
}

// ---------------------------------------------------------------- decoding
std::vector<TranslationResult> Translator::Impl::run(const std::vector<std::string>& sentences, const DecodingOptions& o,
                                                     const StepCallback& on_step, decoding::StepperKind kind) {
    o.validate();
    std::vector<Source> sources;
    sources.reserve(sentences.size());
    for (size_t i = 0; i < sentences.size(); ++i) {
        try {
            sources.push_back(prepare(sentences[i]));
        } catch (const InputError& e) {
            throw InputError(sentences.size() == 1 ? e.what() : "sentence " + std::to_string(i + 1) + ": " + e.what());
        }
    }
    std::vector<size_t> order(sources.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return sources[a].ids.size() < sources[b].ids.size(); });

    std::vector<TranslationResult> results(sources.size());
    torch::NoGradGuard no_grad;
    for (size_t begin = 0; begin < order.size(); begin += o.max_batch_size) {
        const size_t end = std::min(order.size(), begin + o.max_batch_size);
        const auto t0 = Clock::now();
        std::vector<const Source*> batch;
        decoding::SearchOptions so;
        so.beam_size = o.beam_size;
        so.length_penalty = o.length_penalty;
        so.nbest = o.nbest;
        so.bos = config.bos_idx;
        so.eos = config.eos_idx;
        for (size_t i = begin; i < end; ++i) {
            batch.push_back(&sources[order[i]]);
            so.max_lengths.push_back(maxLength(sources[order[i]].ids.size(), o));
        }
        if (on_step) {
            so.on_step = [&, begin, end](int step, int max_steps) {
                StepProgress p;
                p.sentence_begin = static_cast<int>(begin);
                p.sentence_end = static_cast<int>(end);
                p.sentences_total = static_cast<int>(order.size());
                p.step = step;
                p.max_steps = max_steps;
                return on_step(p);
            };
        }
        auto src = sourceTensor(batch);
        auto stepper = decoding::makeStepper(kind, model, src);
        auto hyps = o.beam_size == 1 && o.nbest == 1 ? decoding::greedySearch(*stepper, src.size(0), so)
                                                     : decoding::beamSearch(*stepper, src.size(0), so);
        for (size_t i = 0; i < batch.size(); ++i) {
            TranslationResult& r = results[order[begin + i]];
            fillResult(r, *batch[i], hyps[i], o);
        }
        const double per_sentence = secondsSince(t0) / double(batch.size());
        for (size_t i = begin; i < end; ++i) results[order[i]].seconds += per_sentence;
    }
    return results;
}

Hypothesis Translator::Impl::toHypothesis(const decoding::Hyp& h) const {
    Hypothesis out;
    out.score = h.score;
    out.normalized_score = h.normalized;
    out.finished = h.finished;
    std::vector<int> text_ids;
    for (int64_t t : h.tokens) {
        out.ids.push_back(static_cast<int>(t));
        out.pieces.push_back(tokenizer->idToPiece(static_cast<int>(t)));
        if (t != config.eos_idx) text_ids.push_back(static_cast<int>(t));
    }
    out.text = tokenizer->decode(text_ids);
    return out;
}

void Translator::Impl::fillResult(TranslationResult& r, const Source& src, const std::vector<decoding::Hyp>& hyps,
                                  const DecodingOptions& o) {
    r.source_text = src.text;
    r.source_ids = src.ids;
    r.source_pieces = src.pieces;
    r.warnings = src.warnings;
    if (hyps.empty()) throw Error(ErrorKind::Internal, "search returned no hypothesis for: " + src.text);
    for (const auto& h : hyps) r.nbest.push_back(toHypothesis(h));
    r.best = r.nbest.front();
    r.decoder_input_pieces.push_back(tokenizer->idToPiece(static_cast<int>(config.bos_idx)));
    for (size_t i = 0; i + 1 < r.best.ids.size(); ++i) r.decoder_input_pieces.push_back(r.best.pieces[i]);
    if (o.return_attention || o.top_k_candidates > 0) analyse(r, o);
}

// One teacher-forced pass over the best hypothesis: every attention map (return_attns) and the
// decoder's distribution at each step.
void Translator::Impl::analyse(TranslationResult& r, const DecodingOptions& o) {
    const auto i64 = torch::TensorOptions().dtype(torch::kInt64);
    std::vector<int64_t> src_ids(r.source_ids.begin(), r.source_ids.end());
    std::vector<int64_t> trg_in{config.bos_idx};
    for (size_t i = 0; i + 1 < r.best.ids.size(); ++i) trg_in.push_back(r.best.ids[i]);
    auto src = torch::tensor(src_ids, i64).unsqueeze(0).to(device);
    auto trg = torch::tensor(trg_in, i64).unsqueeze(0).to(device);
    model::Attentions attns;
    auto logits = model->forwardFull(src, trg, o.return_attention ? &attns : nullptr);
    if (o.return_attention) {
        for (const auto& a : attns.encoder_self) r.encoder_self.push_back(util::toLayerHeads(a[0]));
        for (const auto& a : attns.decoder_self) r.decoder_self.push_back(util::toLayerHeads(a[0]));
        for (const auto& a : attns.cross) r.cross.push_back(util::toLayerHeads(a[0]));
    }
    auto probs = torch::softmax(logits[0].to(torch::kFloat32), -1).to(torch::kCPU);
    const int64_t k = std::min<int64_t>(o.top_k_candidates, probs.size(1));
    torch::Tensor top_p, top_i;
    if (k > 0) std::tie(top_p, top_i) = probs.topk(k, -1);
    auto pa = probs.accessor<float, 2>();
    for (size_t i = 0; i < r.best.ids.size(); ++i) {
        DecodingStep s;
        s.chosen_id = r.best.ids[i];
        s.chosen_piece = r.best.pieces[i];
        s.chosen_probability = pa[i][s.chosen_id];
        for (int64_t j = 0; j < k; ++j) {
            TokenCandidate c;
            c.id = static_cast<int>(top_i[i][j].item<int64_t>());
            c.piece = tokenizer->idToPiece(c.id);
            c.probability = top_p[i][j].item<float>();
            s.candidates.push_back(std::move(c));
        }
        r.steps.push_back(std::move(s));
    }
}

// ---------------------------------------------------------------- public API
Translator::Translator(const std::string& package_dir, const TranslatorOptions& options)
    : m_impl(std::make_unique<Impl>(package_dir, options)) {}
Translator::~Translator() = default;
Translator::Translator(Translator&&) noexcept = default;
Translator& Translator::operator=(Translator&&) noexcept = default;

const ModelInfo& Translator::info() const { return m_impl->info; }
Translator::Impl& Translator::impl() const { return *m_impl; }

TranslationResult Translator::translate(const std::string& sentence, const DecodingOptions& options,
                                        const StepCallback& on_step) const {
    return m_impl->run({sentence}, options, on_step, decoding::StepperKind::Cached).front();
}

std::vector<TranslationResult> Translator::translateBatch(const std::vector<std::string>& sentences,
                                                          const DecodingOptions& options, const StepCallback& on_step) const {
    if (sentences.empty()) return {};
    return m_impl->run(sentences, options, on_step, decoding::StepperKind::Cached);
}

std::string Translator::checkInput(const std::string& sentence) const { return m_impl->checkInput(sentence); }

std::vector<std::vector<float>> Translator::positionalTable() const {
    return util::toMatrix(m_impl->model->decoder->position_enc->pos_table[0]);
}

}  // namespace attnlab
