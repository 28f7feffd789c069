// TrainingOptions: the bundled model's shape and the up-front checks.
#include <attnlab/device.h>
#include <attnlab/errors.h>
#include <attnlab/trainer.h>

#include <algorithm>
#include <cmath>

namespace attnlab {

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

bool TrainingOptions::hasData() const {
    return !data_dir.empty() || !(train_src.empty() || train_tgt.empty() || valid_src.empty() || valid_tgt.empty());
}

void TrainingOptions::validate() const {
    auto fail = [](const std::string& m) { throw ConfigError("training options: " + m); };
    if (output_dir.empty()) fail("--output is required");
    if (!isDeviceName(device)) fail("--device '" + device + "' is not one of " + kDeviceNames);
    // On --resume the data may be left out: the run's own files are used.
    if (!resume && !hasData()) fail("give --data DIR, or all of --train-src, --train-tgt, --valid-src, --valid-tgt");
    if (epochs <= 0 && max_steps <= 0 && time_budget_minutes <= 0)
        fail("no stopping criterion: set --epochs, --max-steps or --time-budget");
    if (epochs < 0 || max_steps < 0 || !(time_budget_minutes >= 0)) fail("stopping criteria must not be negative");
    if (!std::isfinite(time_budget_minutes)) fail("--time-budget must be a finite number of minutes");
    if (!(save_every_minutes >= 0) || !std::isfinite(save_every_minutes))
        fail("--save-every-minutes must be a number of minutes, not negative (0 = off)");
    if (batch_tokens < 16) fail("--batch-tokens " + std::to_string(batch_tokens) + " is below 16");
    if (!(label_smoothing >= 0 && label_smoothing < 1)) fail("--label-smoothing must be in [0, 1)");
    if (!(lr_mul > 0) || !std::isfinite(lr_mul)) fail("--lr-mul must be a positive number");
    if (warmup_steps < 1) fail("--warmup must be at least 1");
    if (decay_steps < 0) fail("--decay-steps must not be negative");
    if (decay_steps > 0 && max_steps <= 0) fail("--decay-steps needs --max-steps (the step the decay reaches 0)");
    if (decay_steps > max_steps && max_steps > 0)
        fail("--decay-steps " + std::to_string(decay_steps) + " is longer than --max-steps " +
             std::to_string(max_steps));
    if (!init_from.empty() && !tokenizer.empty())
        fail("--init-from uses the package's own tokenizer: leave out --tokenizer");
    if (!(clip_norm >= 0) || !std::isfinite(clip_norm)) fail("--clip-norm must be a number, not negative");
    if (vocab_size < 300 && tokenizer.empty()) fail("--vocab-size " + std::to_string(vocab_size) + " is below 300");
    if (max_tokens_per_sentence < 2) fail("--max-len must be at least 2");
    if (max_tokens_per_sentence + 2 > model.n_position)
        fail("--max-len " + std::to_string(max_tokens_per_sentence) + " does not fit n_position " +
             std::to_string(model.n_position) + " (with <s> and </s>)");
    if (valid_beam < 1) fail("--valid-beam must be at least 1");
    if (record_every < 1) fail("--record-every must be at least 1");
    if (probe_count < 1 || probe_count > 1024) fail("--probe-count must be from 1 to 1024");
    if (!probe_file.empty() && !record_attention) fail("--probe goes with --record-attention");
    // The model's own ranges (vocabulary sizes are filled in from the tokenizer later).
    ModelConfig m = model;
    m.n_src_vocab = m.n_trg_vocab = std::max<int64_t>(vocab_size, 8);
    m.src_pad_idx = m.trg_pad_idx = 0;
    m.validate();
}

}  // namespace attnlab
