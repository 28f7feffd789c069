#pragma once
// Validation after an epoch: teacher-forced loss, perplexity and accuracy over the validation
// set, then BLEU and chrF of its translations (the decoding engine around the model in training).
#include "model/transformer.h"
#include "training/examples.h"

#include <attnlab/config.h>
#include <attnlab/trainer.h>

#include <string>

namespace attnlab::training {

struct ValidationResult {
    double loss = 0, ppl = 0, accuracy = 0, bleu = 0, chrf = 0;
    std::string signature;  // sacreBLEU's
};

// Leaves the model in training mode.
ValidationResult validate(model::Transformer& model, const PackageConfig& config, const std::string& tokenizer_model,
                          const data::ParallelCorpus& valid, const TrainingOptions& options);

}  // namespace attnlab::training
