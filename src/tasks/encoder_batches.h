#pragma once

#include <cstddef>
#include <span>
#include <vector>

// What the encoder tasks (fill-mask, embed) share: cutting an encoded input to the model's
// length, and packing many inputs into batches without padding.
namespace attn {

// Cuts `values` (an input's token ids, or its type ids) to `max_length` by keeping the first
// max_length - 1 and the last one, the closing [SEP] (or </s>), so that the model still sees a
// well-formed input: what Hugging Face's truncation does to a single text. Nothing happens when
// it is not longer; max_length must be at least 1.
void truncate_keeping_last(std::vector<int>& values, std::size_t max_length);

// Consecutive inputs [begin, end) that run as one packed batch of `rows` tokens.
struct BatchPlan {
  std::size_t begin = 0;
  std::size_t end = 0;
  int rows = 0;
};

// Packs inputs of the given lengths, in order, into batches of at most max_batch_tokens tokens;
// an input longer than that gets a batch of its own.
std::vector<BatchPlan> plan_batches(std::span<const int> lengths, int max_batch_tokens);

}  // namespace attn
