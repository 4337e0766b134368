#pragma once

#include <atomic>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/model/model.h"
#include "src/tasks/sampler.h"

namespace attn {

struct GenerateOptions {
  int max_new_tokens = 64;
  SamplingOptions sampling;
  bool ignore_eos = false;
  std::vector<std::string> stop;  // stop (and cut the text) at the first of these strings
  bool use_cache = true;          // false recomputes the whole sequence each step (for checks)
  // At most this many positions, prompt included (the command line's -c); 0: the model's context.
  int max_context = 0;
};

struct GenerateCallbacks {
  // The raw logits (vocab) of each step, before sampling.
  std::function<void(std::span<const float> logits)> on_logits;
  // Generated text as it is decided: whole UTF-8 characters only, never past a stop string.
  // The pieces, joined, are the final text.
  std::function<void(std::string_view text)> on_text;
  // Each generated token as it is chosen, with the text that became safe to show with it: empty
  // while a character is half done or the text may still become a stop string. At the end, text
  // held back that way goes only to on_text.
  std::function<void(int token_id, std::string_view text)> on_token;
  // Attention and hidden-state hooks for every forward pass.
  const ForwardObserver* observer = nullptr;
  // Polled before each new token: once true, generation ends with the tokens so far and
  // stop_reason "interrupted" (Ctrl-C: src/cli/interrupt.h). Null: generation runs to its end.
  const std::atomic<bool>* stop = nullptr;
};

struct GenerateResult {
  std::vector<int> generated_ids;
  std::string text;  // the generated text (valid UTF-8, cut at a stop string)
  // "length", "eos", "stop", "context" (no position left), or "interrupted" (callbacks.stop)
  std::string stop_reason;
  int prompt_tokens = 0;
  double prompt_ms = 0;  // the batched pass over the prompt
  int decode_steps = 0;  // one-token passes after the prompt
  double decode_ms = 0;
};

// The positions a sequence may fill: the model's context, or less with options.max_context.
int generation_context(const ArchSpec& spec, const GenerateOptions& options);

// Autoregressive generation: one batched pass over the prompt, then one pass per new token over
// that token alone, reading earlier keys and values from the KV cache. An encoder-decoder's
// decoder also reads `memory`, the encoder output of its source (translate.h).
GenerateResult generate(const Model& model, std::span<const int> prompt_ids,
                        const GenerateOptions& options, const GenerateCallbacks& callbacks = {},
                        const CrossAttentionMemory* memory = nullptr);

}  // namespace attn
