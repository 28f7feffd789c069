// Toy tasks (attnlab/toy.h): data generated on the fly, a word tokenizer of the ten tokens, the
// ordinary trainer, and exact-match accuracy on fresh sequences.
#include <attnlab/errors.h>
#include <attnlab/package.h>
#include <attnlab/run_layout.h>
#include <attnlab/text_io.h>
#include <attnlab/tokenizer.h>
#include <attnlab/toy.h>
#include <attnlab/translator.h>

#include "util/atomic_file.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unordered_set>

namespace attnlab {

namespace fs = std::filesystem;

namespace {
std::vector<int> tokensOf(const std::string& text) {
    std::vector<int> out;
    std::istringstream in(text);
    std::string t;
    while (in >> t) {
        if (t.size() != 1 || t[0] < '0' || t[0] > '9')
            throw InputError("toy source: '" + t + "' is not a token 0-9 (tokens are separated by spaces)");
        out.push_back(t[0] - '0');
    }
    return out;
}

std::string textOf(const std::vector<int>& tokens) {
    std::string out;
    for (int t : tokens) out += (out.empty() ? "" : " ") + std::to_string(t);
    return out;
}

std::vector<int> apply(ToyTask task, std::vector<int> t) {
    switch (task) {
    case ToyTask::Copy: break;
    case ToyTask::Reverse: std::reverse(t.begin(), t.end()); break;
    case ToyTask::Sort: std::sort(t.begin(), t.end()); break;
    case ToyTask::Shift:
        for (int& x : t) x = (x + 1) % 10;
        break;
    case ToyTask::Swap:
        if (t.size() % 2 != 0)
            throw InputError("toy swap: a source is adjective-noun pairs (an even number of tokens)");
        for (size_t i = 0; i + 1 < t.size(); i += 2) {
            if (t[i] > 4 || t[i + 1] < 5) throw InputError("toy swap: each pair is an adjective 0-4, then a noun 5-9");
            std::swap(t[i], t[i + 1]);
        }
        break;
    }
    return t;
}

void writeLines(const fs::path& path, const std::vector<std::string>& lines) {
    std::string text;
    for (const auto& l : lines) text += l + "\n";
    saveToFile(path.string(), text);
}
}  // namespace

const std::vector<ToyTask>& toyTasks() {
    static const std::vector<ToyTask> tasks{ToyTask::Copy, ToyTask::Reverse, ToyTask::Sort, ToyTask::Shift,
                                            ToyTask::Swap};
    return tasks;
}

std::string toyTaskName(ToyTask task) {
    switch (task) {
    case ToyTask::Copy: return "copy";
    case ToyTask::Reverse: return "reverse";
    case ToyTask::Sort: return "sort";
    case ToyTask::Shift: return "shift";
    case ToyTask::Swap: return "swap";
    }
    return "copy";
}

ToyTask parseToyTask(const std::string& name) {
    std::string names;
    for (const auto t : toyTasks()) {
        if (toyTaskName(t) == name) return t;
        names += (names.empty() ? "" : ", ") + toyTaskName(t);
    }
    throw InputError("toy task '" + name + "' is not one of " + names);
}

std::pair<std::string, std::string> toyExample(ToyTask task, std::mt19937_64& rng) {
    std::uniform_int_distribution<int> length(kToyMinLength, kToyMaxLength), digit(0, 9), half(0, 4);
    std::vector<int> t;
    if (task == ToyTask::Swap) {
        const int pairs = std::uniform_int_distribution<int>((kToyMinLength + 1) / 2, kToyMaxLength / 2)(rng);
        for (int i = 0; i < pairs; ++i) t.push_back(half(rng)), t.push_back(5 + half(rng));
    } else {
        const int n = length(rng);
        for (int i = 0; i < n; ++i) t.push_back(digit(rng));
    }
    return {textOf(t), textOf(apply(task, t))};
}

std::string toyTarget(ToyTask task, const std::string& source) { return textOf(apply(task, tokensOf(source))); }

void ToyOptions::validate() const {
    if (output_dir.empty()) throw ConfigError("toy: --output is required");
    if (steps < 1 || steps > 1000000) throw ConfigError("toy: --steps must be from 1 to 1000000");
    if (train_examples < 100) throw ConfigError("toy: at least 100 training examples");
    if (const std::string why = whyNotReplaceable(package_dir); !package_dir.empty() && !why.empty())
        throw ConfigError("toy: --output " + why);
}

TrainingOptions ToyOptions::trainingOptions() const {
    TrainingOptions o;
    const fs::path run(output_dir);
    o.train_src = (run / "train.src").string();
    o.train_tgt = (run / "train.tgt").string();
    o.valid_src = (run / "val.src").string();
    o.valid_tgt = (run / "val.tgt").string();
    o.src_lang = "toy";
    o.tgt_lang = toyTaskName(task);
    o.tokenizer = (run / "toy.model").string();
    o.output_dir = output_dir;
    o.model.n_layers = 2;
    o.model.n_head = 4;
    o.model.d_model = o.model.d_word_vec = 64;
    o.model.d_inner = 256;
    o.model.d_k = o.model.d_v = 16;
    o.model.dropout = 0.0;
    o.model.n_position = 32;
    o.model.scale_emb_or_prj = "emb";
    o.max_tokens_per_sentence = 24;
    o.batch_tokens = 768;
    o.label_smoothing = 0.0;
    o.lr_mul = 1.0;
    o.warmup_steps = 150;
    o.seed = seed;
    o.threads = threads;
    o.max_steps = steps;
    o.decay_steps = steps / 2;   // the last half anneals to 0: exact sequences need a settled model
    o.package_last_step = true;  // ... which is the last step's (its history ends there too)
    o.save_every_minutes = 0;
    o.log_every_steps = 50;
    o.valid_bleu_sentences = 50;
    o.keep_epoch_checkpoints = 0;
    o.record_attention = record_attention;
    o.record_every = 50;
    o.probe_count = 4;
    o.resume = resume;
    return o;
}

namespace {
void writeData(const ToyOptions& options, const fs::path& run);
ToyResult evaluate(const ToyOptions& options, ToyResult r);
}  // namespace

ToyResult trainToy(const ToyOptions& options, const TrainingCallback& progress, const std::atomic<bool>* stop) {
    options.validate();
    const fs::path run(options.output_dir);
    fs::create_directories(run);
    if (!options.resume) {  // a new run: nothing of an earlier one in the folder may end up packaged
        util::removeTree((run / run_layout::kCheckpoints).string());
        fs::remove(run / package_files::kAttentionHistory);
        writeData(options, run);
    }
    ToyResult r;
    r.training = train(options.trainingOptions(), progress, stop);
    if (r.training.stopped_early) return r;  // paused: resume continues it
    return evaluate(options, std::move(r));
}

namespace {
// The task's data (the last 200 pairs are the validation set) and a word tokenizer of the ten tokens
// and the four special ids.
void writeData(const ToyOptions& options, const fs::path& run) {
    std::mt19937_64 rng(options.seed);
    std::vector<std::string> src, tgt;
    for (int i = 0; i < options.train_examples + 200; ++i) {
        auto [s, t] = toyExample(options.task, rng);
        src.push_back(std::move(s));
        tgt.push_back(std::move(t));
    }
    writeLines(run / "train.src", {src.begin(), src.end() - 200});
    writeLines(run / "train.tgt", {tgt.begin(), tgt.end() - 200});
    writeLines(run / "val.src", {src.end() - 200, src.end()});
    writeLines(run / "val.tgt", {tgt.end() - 200, tgt.end()});
    {
        std::vector<std::string> digits;
        for (int i = 0; i < 10; ++i) digits.push_back(textOf({i, i, i}));
        writeLines(run / "toy.txt", digits);
        TokenizerTrainingOptions to;
        to.input_files = {(run / "toy.txt").string()};
        to.model_path = (run / "toy.model").string();
        to.vocab_size = 14;
        to.model_type = "word";
        to.byte_fallback = false;
        to.num_threads = 1;
        Tokenizer::train(to);
    }
}

// Exact match of the package on 200 fresh sequences (another seed, none of them among the training
// sources: held out), greedy; the package copied to options.package_dir first when one is asked for.
ToyResult evaluate(const ToyOptions& options, ToyResult r) {
    const auto train = readTextLines((fs::path(options.output_dir) / "train.src").string());
    const std::unordered_set<std::string> seen(train.begin(), train.end());
    std::mt19937_64 fresh(options.seed + 7919);
    std::vector<std::string> sources, expected;
    for (int tries = 0; sources.size() < 200 && tries < 1000000; ++tries) {
        auto [s, t] = toyExample(options.task, fresh);
        if (seen.count(s)) continue;  // a sequence the model was trained on is no test of it
        sources.push_back(std::move(s));
        expected.push_back(std::move(t));
    }
    TranslatorOptions to;
    to.device = "cpu";
    to.num_threads = options.threads;
    if (!options.package_dir.empty()) {
        copyPackage(r.training.package_dir, options.package_dir);
        r.training.package_dir = options.package_dir;
    }
    const Translator translator(r.training.package_dir, to);
    DecodingOptions d;
    d.beam_size = 1;
    d.return_attention = false;
    d.max_batch_size = 100;
    const auto results = translator.translateBatch(sources, d);
    int right = 0;
    for (size_t i = 0; i < results.size(); ++i) right += results[i].best.text == expected[i];
    r.evaluated = int(results.size());
    r.accuracy = double(right) / double(results.size());
    return r;
}

}  // namespace

}  // namespace attnlab
