#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "src/model/model.h"
#include "src/tasks/sampler.h"
#include "src/tasks/text_stream.h"

namespace attn {

struct GenerateOptions {
  int max_new_tokens = 64;
  SamplingOptions sampling;
  bool ignore_eos = false;
  std::vector<std::string> stop;  // stop (and cut the text) at the first of these strings
  // Ids that end generation as the model's eos_token_ids do (attn chat: the tokenizer's
  // eos_token, which some folders' chat templates end a turn with and generation_config omits).
  std::vector<int> extra_eos_ids;
  bool use_cache = true;  // false recomputes the whole sequence each step (for checks)
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
  int reused_tokens = 0;  // prompt tokens whose keys and values came from a session's cache
  double prompt_ms = 0;   // the batched pass over the prompt
  int decode_steps = 0;   // one-token passes after the prompt
  double decode_ms = 0;

  double prompt_tokens_per_s() const { return prompt_tokens / (prompt_ms / 1000); }
  double decode_tokens_per_s() const {
    return decode_steps > 0 ? decode_steps / (decode_ms / 1000) : 0.0;
  }
};

// The positions a sequence may fill: the model's context, or less with options.max_context.
int generation_context(const ArchSpec& spec, const GenerateOptions& options);

// The ids that end generation: the model's eos_token_ids and options.extra_eos_ids; none with
// options.ignore_eos.
std::vector<int> end_of_sequence_ids(const Model& model, const GenerateOptions& options);

// A KV cache and the tokens whose keys and values it holds, in order: what a sequence keeps from
// one generation to the next (GenerationSession; attn serve's slots), so that a prompt that
// begins with the same tokens computes only the rest.
struct CachedSequence {
  std::unique_ptr<KVCache> cache;
  std::vector<int> tokens;  // whose keys and values are in `cache`, in order
  int max_rows = 0;         // the longest pass `cache` is sized for

  // The length of the longest start of `prompt` that it holds, short of the prompt's last token
  // (which must run, for its logits).
  int shared_start(std::span<const int> prompt) const;
  // Keeps that start and forgets the rest; returns its length, or 0 when a windowed layer has
  // already dropped rows those tokens need.
  int keep_start_of(std::span<const int> prompt);
  // Makes the cache hold at least `capacity` positions and passes of `rows` rows, keeping its
  // tokens (or forgetting them when a windowed layer cannot keep them).
  void reserve(const ArchSpec& spec, int capacity, int rows);
};

// One sequence's generation, a token at a time, whoever runs the model: given the logits of the
// sequence's last token, chooses the next token, reports it and its text through the callbacks,
// and says whether the sequence goes on. GenerationSession runs one sequence; attn serve runs
// several, one row each of a pass.
class SequenceGenerator {
 public:
  // `context`: the positions the sequence may fill (generation_context).
  SequenceGenerator(const Model& model, std::span<const int> prompt_ids,
                    const GenerateOptions& options, const GenerateCallbacks& callbacks,
                    int context);
  SequenceGenerator(const SequenceGenerator&) = delete;
  SequenceGenerator& operator=(const SequenceGenerator&) = delete;

  // Takes the logits (vocab) of the last token of ids() (the sampler changes them). True when a
  // token was chosen and must be run next (its logits then come to the next step); false when
  // generation has ended.
  bool step(std::span<float> logits);
  // Hands over the text held back, and returns the result with its tokens, text and stop_reason
  // (the caller adds the counts and times). Once, after step() returned false.
  GenerateResult finish();
  // The prompt and the tokens chosen so far.
  const std::vector<int>& ids() const { return ids_; }

 private:
  const Model& model_;
  const GenerateOptions& options_;
  const GenerateCallbacks& callbacks_;
  const int context_;
  std::vector<int> ids_;
  std::vector<int> eos_ids_;
  Sampler sampler_;
  TextStream stream_;
  GenerateResult result_;
};

// Autoregressive generation: one batched pass over the prompt, then one pass per new token over
// that token alone, reading earlier keys and values from the KV cache. An encoder-decoder's
// decoder also reads `memory`, the encoder output of its source (translate.h).
GenerateResult generate(const Model& model, std::span<const int> prompt_ids,
                        const GenerateOptions& options, const GenerateCallbacks& callbacks = {},
                        const CrossAttentionMemory* memory = nullptr);

// A sequence and its KV cache, kept from one generate() to the next: a conversation, whose
// prompt at each turn begins with the tokens of the turn before. The prompt's tokens that match
// the start of the cached sequence are not computed again; from the first one that differs on,
// everything is. The cache grows as the sequence does, up to the context.
class GenerationSession {
 public:
  GenerationSession(const Model& model, GenerateOptions options,
                    const CrossAttentionMemory* memory = nullptr);
  ~GenerationSession();

  // generate() after `prompt_ids`; result.reused_tokens counts the prompt tokens taken from the
  // cache.
  GenerateResult generate(std::span<const int> prompt_ids, const GenerateCallbacks& callbacks = {});
  // Forgets the cached sequence: the next prompt is computed whole.
  void reset();
  const GenerateOptions& options() const { return options_; }

 private:
  // A cache and scratch that hold `positions` positions and passes of `rows` rows, keeping the
  // cached sequence when they grow (or forgetting it when a windowed layer cannot keep it).
  void reserve(int positions, int rows);

  const Model& model_;
  GenerateOptions options_;
  const CrossAttentionMemory* memory_;
  CachedSequence sequence_;
  std::unique_ptr<RunState> state_;  // sized for sequence_'s longest pass
};

}  // namespace attn
