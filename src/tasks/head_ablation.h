#pragma once

// Head ablation (Michel, Levy & Neubig 2019, "Are Sixteen Heads Really Better than One?"): how
// much the loss grows when one attention head is taken out. As ../shared/golden/README.md
// ("interp/") defines it, one head at a time:
//
//   zero-ablation: the head's slice [h * head_dim, (h + 1) * head_dim) of the concatenated head
//   outputs (the input of the attention's output projection) is 0 at every position, as Hugging
//   Face's head_mask does; the projection's bias stays.
//   mean-ablation: that slice is mu[l][h] at every position of every input, mu being its mean
//   over all positions of all inputs in the unablated model (float64 sums, rounded to float).
//
// The loss is the mean NLL over the scored tokens of all inputs: a decoder's every next token, an
// encoder's original word at each mask. NLL = logsumexp(logits) - logits[target] in float64 from
// the float32 logits. The blocks below an ablated head's layer are run once per input, not once
// per head: the residual stream entering each layer is kept and the pass restarts there.

#include <functional>
#include <span>
#include <vector>

#include "src/model/model.h"

namespace attn {

// One input: its tokens, and the positions whose logits are scored against which targets.
struct AblationInput {
  std::vector<int> ids;
  std::vector<int> type_ids;
  std::vector<int> scored_positions;
  std::vector<int> targets;  // (scored_positions)
};

// A decoder's input: every position but the last, scored against the token after it.
AblationInput next_token_input(Encoding encoding);

// An encoder-decoder's input: the source, and the decoder's input over a target as Hugging
// Face's sequence-to-sequence loss reads it (decoder_input_ids = the labels shifted right).
struct TranslationAblationInput {
  std::vector<int> source_ids;
  AblationInput decoder;
};

// The decoder's input over `target` (its ids as the labels, ending with end-of-sequence):
// [start_id] + target without its last token, position t scored against target[t].
AblationInput teacher_forced_input(int start_id, std::span<const int> target);

// The heads to ablate: every pair of a listed layer and a listed head.
struct AblationHeads {
  std::vector<int> layers;
  std::vector<int> heads;
};

struct AblationResult {
  int n_layers = 0;
  int n_heads = 0;
  int head_dim = 0;
  long n_inputs = 0;
  long n_scored = 0;     // tokens scored
  long n_positions = 0;  // positions mu is the mean over
  double baseline_nll_sum = 0;
  // (n_layers, n_heads): the NLL sums with each head ablated; NaN for heads not ablated.
  std::vector<double> zero_nll_sum;
  std::vector<double> mean_nll_sum;
  std::vector<float> mu;  // (n_layers, n_heads, head_dim)
  // The cost, in blocks run over a batch's positions (a block over 100 positions counts 100).
  long blocks_run = 0;

  double baseline_mean_nll() const { return baseline_nll_sum / double(n_scored); }
  // What whole passes for mu, the baseline and each ablation (two per ablated head) would run.
  long blocks_whole_passes() const;
};

// Called after each batch of inputs, for each of the two passes over them.
using AblationProgress = std::function<void(int pass, long inputs_done)>;

// An encoder-decoder's three kinds of heads, each ablated as above over the same scored target
// tokens: the encoder's self-attention (mu over the source positions), the decoder's
// self-attention and its cross-attention (mu over the decoder positions). The cost counts an
// encoder block over S source tokens as S token-blocks, a decoder block over T tokens as T; it
// is the whole run's, and each result's own blocks_run is 0.
struct EncoderDecoderAblation {
  AblationResult encoder;
  AblationResult decoder;
  AblationResult cross;
  long blocks_run = 0;
  long blocks_whole_passes = 0;  // every pass through the encoder and the decoder whole
};

// Ablates the encoder's `encoder_heads` and the decoder's `decoder_heads` (its self- and
// cross-attention), zero and mean, over `inputs` one at a time (each source and decoder input
// within its stack's context). An encoder head's ablation reruns the encoder from its layer and
// the decoder whole; a decoder head's, the decoder from its layer over the same encoder output.
EncoderDecoderAblation ablate_encoder_decoder_heads(
    const Model& model, std::span<const TranslationAblationInput> inputs,
    const AblationHeads& encoder_heads, const AblationHeads& decoder_heads,
    const AblationProgress& progress = {});

// Ablates every head of `heads`, zero and mean, over `inputs` (each within the model's context),
// packing inputs into batches of up to max_batch_tokens. Two passes: the first finds mu, the
// second the baseline and every ablation, batch by batch, so memory does not grow with the inputs.
AblationResult ablate_heads(const Model& model, std::span<const AblationInput> inputs,
                            const AblationHeads& heads, int max_batch_tokens,
                            const AblationProgress& progress = {});

}  // namespace attn
