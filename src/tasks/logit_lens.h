#pragma once

// The logit lens (nostalgebraist 2020, "interpreting GPT: the logit lens"): what the model would
// predict if it stopped after each layer. The residual stream after the embeddings and after
// every block goes through the model's own final norm (when it has one) and output head, at
// every position: for a decoder (also an encoder-decoder's) the next-token distribution, for a
// masked-LM encoder the token distribution at each position. As ../shared/golden/README.md
// ("interp/") defines it:
//
//   h[0] = the embedding output, h[k] = the output of block k - 1 (before any final norm);
//   lens logits[k][t] = head(final_norm(h[k][t])); log-probabilities in float64 from those
//   float32 logits (logit - logsumexp over the whole vocabulary); at k = n_layer the lens is the
//   model's own output.

#include <optional>
#include <span>
#include <vector>

#include "src/model/model.h"

namespace attn {

// One candidate of one position at one depth.
struct LensEntry {
  int id = 0;
  double logprob = 0;  // float64 from the float32 logits
  float logit = 0;
};

struct LogitLens {
  int depths = 0;    // n_layer + 1: k = 0 the embeddings, k = n_layer the last block
  int n_tokens = 0;  // positions
  int top_k = 0;
  // (depths, n_tokens, top_k): the largest logits, highest first, equal logits by lower id.
  std::vector<LensEntry> top;
  // The token followed through the depths at target_position: the one asked for, or else the
  // model's own top prediction there (the last depth's top 1). The position is a decoder's last
  // (the next token), an encoder's first mask (the last position when it has none).
  int target_position = 0;
  int target_id = 0;
  std::vector<long> target_rank;       // (depths): 1 + the ids with a strictly larger logit
  std::vector<double> target_logprob;  // (depths)

  const LensEntry* entries(int depth, int position) const {
    return top.data() + (std::size_t(depth) * n_tokens + position) * top_k;
  }
};

// Refuses (Error naming `command`) a model the lens cannot read: one without an output head
// (a bare encoder, a classifier).
void check_lens_model(const Model& model, const std::string& command);

// The lens of one input (ids and type ids as the tokenizer gives them; at most the model's
// context), with `top_k` candidates per cell; `target_id` as LogitLens says. An
// encoder-decoder's lens reads its decoder: `encoding` is the decoder's input, and `memory` the
// source's encoder output (encode_source), which the decoder's layers read and the lens does not.
LogitLens logit_lens(const Model& model, const Encoding& encoding, int top_k,
                     std::optional<int> target_id = std::nullopt,
                     const CrossAttentionMemory* memory = nullptr);

}  // namespace attn
