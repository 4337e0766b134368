#pragma once

// Translation with an encoder-decoder (Marian, T5): the source runs through the encoder once;
// its output, projected into every decoder layer's cross-attention keys and values, is kept for
// all decoder steps, which start from the decoder start token and use the decoder's own KV cache
// as generate() does.

#include <span>
#include <string_view>
#include <vector>

#include "src/model/model.h"
#include "src/tasks/beam_search.h"
#include "src/tasks/generate.h"

namespace attn {

// Refuses a model that is not an encoder-decoder, naming `command` ("translate") and what the
// model is; checks that it has a decoder start token.
void check_translation_model(const Model& model, const std::string& command);

// The decoder's first input: [decoder_start_token_id].
std::vector<int> decoder_prompt(const Model& model);

// The encoder's output for source_ids (which must fit the encoder's context), as the decoder's
// cross-attention memory. The observer sees the encoder's pass (its self-attention).
CrossAttentionMemory encode_source(const Model& model, std::span<const int> source_ids,
                                   const ForwardObserver* observer = nullptr);

struct TranslateResult {
  GenerateResult generation;  // the target ids (without the start token and the final EOS)
  int source_tokens = 0;
  double encode_ms = 0;  // the encoder pass and the cross-attention keys and values
};

// Greedy (or sampled, as options.sampling says) translation of source_ids.
TranslateResult translate(const Model& model, std::span<const int> source_ids,
                          const GenerateOptions& options, const GenerateCallbacks& callbacks = {});

// The ids of a target text as the decoder reads them (the tokenizer's encode_target, as Hugging
// Face encodes labels), without a final end-of-sequence token.
std::vector<int> target_ids(const Model& model, std::string_view target);

// How long a translation the analyses read when they run the decoder over the model's own
// translation (greedy_decoder_input) instead of a given one.
constexpr int kMaxOwnTranslationTokens = 64;

// The model's own greedy translation of a source, given the source's encoder output
// (encode_source): at most max_new_tokens (and the decoder's context) tokens.
GenerateResult greedy_translation(const Model& model, const CrossAttentionMemory& memory,
                                  int max_new_tokens);

// The decoder's input over the model's own greedy translation of a source, given the source's
// encoder output (encode_source): [start] + at most max_new_tokens generated tokens (the final
// EOS not among them), as the decoder read them.
std::vector<int> greedy_decoder_input(const Model& model, const CrossAttentionMemory& memory,
                                      int max_new_tokens);

// Beam search over translations of source_ids.
BeamSearchResult translate_beams(const Model& model, std::span<const int> source_ids,
                                 const BeamSearchOptions& options);

}  // namespace attn
