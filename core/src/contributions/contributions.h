#pragma once
// What every contribution method (attnlab/contributions.h, issue 54, docs/contributions.md) computes from:
// one teacher-forced pass over a translation's source and best hypothesis, set up once by
// Engine::contributions (contributions.cpp), which dispatches to the method.
#include <attnlab/contributions.h>

#include "model/transformer.h"

#include <torch/types.h>

namespace attnlab::contributions {

struct ForcedPass {
    // The translation's model: the heads it switched off (TranslationResult::ablated) switched off for the
    // pass; grad mode off.
    model::Transformer model;
    torch::Tensor src;     // [1, source length] int64 on the model's device: TranslationResult::source_ids
    torch::Tensor trg_in;  // [1, target length]: <s>, then best.ids but the last (the decoder's input)
};

}  // namespace attnlab::contributions
