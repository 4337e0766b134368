#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <vector>

#include "src/model/model.h"

// What the encoder tasks (fill-mask, embed) share: cutting an encoded input to the model's
// length, and running many inputs through the encoder packed into batches without padding.
namespace attn {

// Cuts `values` (an input's token ids, or its type ids) to `max_length` by keeping the first
// max_length - 1 and the last one, the closing [SEP] (or </s>), so that the model still sees a
// well-formed input: what Hugging Face's truncation does to a single text. Nothing happens when
// it is not longer; max_length must be at least 1.
void truncate_keeping_last(std::vector<int>& values, std::size_t max_length);

// Runs inputs of the given lengths through the encoder, packed in order into batches of at most
// max_batch_tokens tokens (an input longer than that gets a batch of its own), so that the
// linear layers see one tall matrix. add_input(batch, i) appends input i as one sequence; after
// each batch's forward pass, on_batch(batch, state, begin) reads the last hidden states of
// inputs [begin, begin + batch.sequences.size()) from state.hidden (rows, d_model), before the
// next batch overwrites them. One KV cache and run state serve every batch. `observer`, when
// given, watches every forward pass. A decoder's inputs run the same way, each from position 0.
void run_encoder_batches(
    const Model& model, std::span<const int> lengths, int max_batch_tokens,
    const std::function<void(Batch& batch, std::size_t input)>& add_input,
    const std::function<void(const Batch& batch, RunState& state, std::size_t begin)>& on_batch,
    const ForwardObserver* observer = nullptr);

}  // namespace attn
