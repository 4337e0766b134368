#pragma once

#include <atomic>
#include <span>
#include <string>
#include <vector>

#include "src/model/model.h"

// Beam search with Hugging Face's semantics (transformers' BeamSearchScorer and
// BeamHypotheses, batch of one; ../shared/golden/README.md spells the algorithm out): `beams`
// running continuations scored by their summed log-probabilities; each step takes the 2 x beams
// best one-token extensions in order, an end-of-sequence among the first `beams` finishing a
// hypothesis scored sum / length^length_penalty; the search ends when `early_stopping` and
// `beams` hypotheses exist, or when no running beam can beat the worst kept hypothesis, or after
// max_new_tokens.

namespace attn {

struct BeamSearchOptions {
  int beams = 1;       // 1: beam search is greedy search
  int num_return = 1;  // at most beams
  int max_new_tokens = 24;
  float length_penalty = 1.0f;
  bool early_stopping = false;
  std::vector<int> eos_ids;
  // Polled after each step: once true, the search ends as if max_new_tokens were reached, the
  // running beams becoming unfinished hypotheses (Ctrl-C: src/cli/interrupt.h). Null: never.
  const std::atomic<bool>* stop = nullptr;
};

struct BeamHypothesis {
  std::vector<int> ids;  // the new tokens, ending with the end-of-sequence token when finished
  double score = 0;      // sum of log-probabilities / length^length_penalty
  bool finished = false;
};

struct BeamSearchResult {
  std::vector<BeamHypothesis> sequences;  // num_return of them, best first
  int steps = 0;
  // "eos" (enough sequences ended), "length" (max_new_tokens), or "interrupted" (options.stop)
  std::string stop_reason;
};

// An encoder-decoder's decoder also reads `memory`, the encoder output of its source
// (translate.h); its prompt is the decoder start token.
BeamSearchResult beam_search(const Model& model, std::span<const int> prompt_ids,
                             const BeamSearchOptions& options,
                             const CrossAttentionMemory* memory = nullptr);

}  // namespace attn
