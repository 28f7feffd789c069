#include "training/run_state.h"

#include <attnlab/errors.h>

#include <nlohmann/json.hpp>

#include <type_traits>

namespace attnlab::training {
using nlohmann::json;

namespace {
// The hyperparameters that travel with a checkpoint, so that a resumed run uses them whatever
// the resuming command line says: the one list both the writer and the reader use.
template <typename Options, typename F>
void forEachHyperparameter(Options& o, F&& f) {
    f("batch_tokens", o.batch_tokens);
    f("label_smoothing", o.label_smoothing);
    f("lr_mul", o.lr_mul);
    f("warmup_steps", o.warmup_steps);
    f("decay_steps", o.decay_steps);
    f("clip_norm", o.clip_norm);
    f("seed", o.seed);
    f("max_tokens_per_sentence", o.max_tokens_per_sentence);
}

template <typename F>
void forEachDataField(DataFiles& d, F&& f) {
    f("src_lang", d.src_lang);
    f("tgt_lang", d.tgt_lang);
    f("train_src", d.train_src);
    f("train_tgt", d.train_tgt);
    f("valid_src", d.valid_src);
    f("valid_tgt", d.valid_tgt);
}
}  // namespace

std::string runStateToJson(const RunState& s, const TrainingOptions& options) {
    json hyper = json::object();
    forEachHyperparameter(options, [&](const char* key, const auto& value) { hyper[key] = value; });
    json data = json::object();
    DataFiles files = s.data;
    forEachDataField(files, [&](const char* key, const std::string& value) { data[key] = value; });
    data["train_pairs"] = s.train_fingerprint.pairs;
    data["train_ids_hash"] = s.train_fingerprint.hash;
    const json j = {{"step", s.step},
                    {"epoch", s.epoch},
                    {"batch_in_epoch", s.batch_in_epoch},
                    {"best_bleu", s.best_bleu},
                    {"elapsed_seconds", s.elapsed_seconds},
                    {"epoch_loss_sum", s.epoch_loss_sum},
                    {"epoch_tokens", s.epoch_tokens},
                    {"hyper", hyper},
                    {"data", data}};
    return j.dump(2);
}

RunState runStateFromJson(const std::string& text, const std::string& origin, TrainingOptions* options) {
    RunState s;
    try {
        const json j = json::parse(text);
        s.step = j.at("step").get<int64_t>();
        s.epoch = j.at("epoch").get<int>();
        s.batch_in_epoch = j.at("batch_in_epoch").get<int64_t>();
        s.best_bleu = j.at("best_bleu").get<double>();
        s.elapsed_seconds = j.at("elapsed_seconds").get<double>();
        // Checkpoints written before these were recorded lack them.
        s.epoch_loss_sum = j.value("epoch_loss_sum", 0.0);
        s.epoch_tokens = j.value("epoch_tokens", int64_t(0));
        if (j.contains("hyper") && options) {
            const json& h = j.at("hyper");
            forEachHyperparameter(*options, [&](const char* key, auto& value) {
                using T = std::decay_t<decltype(value)>;
                // decay_steps came later: a checkpoint without it had no final decay.
                value = (!h.contains(key) && std::string(key) == "decay_steps") ? T{} : h.at(key).get<T>();
            });
        }
        if (j.contains("data")) {
            const json& d = j.at("data");
            forEachDataField(s.data,
                             [&](const char* key, std::string& value) { value = d.at(key).get<std::string>(); });
            s.train_fingerprint.pairs = d.at("train_pairs").get<int64_t>();
            s.train_fingerprint.hash = d.at("train_ids_hash").get<uint64_t>();
        }
        if (s.step < 0 || s.epoch < 0 || s.batch_in_epoch < 0 || s.epoch_tokens < 0)
            throw PackageError(origin + ": corrupt checkpoint state: negative step, epoch, batch or token count");
    } catch (const json::exception& e) {
        throw PackageError(origin + ": corrupt checkpoint state: " + e.what());
    }
    return s;
}

}  // namespace attnlab::training
