#pragma once

// Head roles (`attn heads`): a few statistics of every attention head that the literature on
// BERT and GPT attention uses to say what a head does (looks at the previous token, at [CLS],
// at [SEP], copies after a repeat, ...), and a role per head from them. The statistics are
// accumulated one attention matrix at a time as the forward pass reports it, so that no more
// than one matrix is ever held.
//
// Every statistic is a mean over query rows, every row of every input weighing the same:
//   previous     p[q][q-1], over the rows q >= 1
//   next         p[q][q+1], over the rows q <= n-2 of an encoder (a decoder's is 0: masked)
//   self         p[q][q]
//   first        p[q][0] (BERT's [CLS], a decoder's first token or BOS: often a "sink")
//   separator    the row's mass on keys holding [SEP], </s> or the EOS token
//   punctuation  the row's mass on keys whose token is punctuation only
//   distance     sum_k p[q][k] |q - k|, in tokens
//   entropy      -sum_k p[q][k] ln p[q][k] / ln(row length), the row length being the keys the
//                query may see (q + 1 in a decoder, n in an encoder): 0 = one key, 1 = uniform.
//                A row of length 1 (a decoder's first query) has entropy 0 by definition.
//   induction    decoders, on probe inputs only (a random sequence of distinct tokens repeated
//                twice): p[q][q - period + 1] over the queries q of the second copy, the key
//                right after the previous occurrence of the query's token
// The statistics other than induction come from the text inputs only, never from the probes.
//
// An encoder-decoder's cross-attention rows are target queries over the source's keys (all of
// them: row length = source length). There first, separator, punctuation and entropy mean the
// same, over the source tokens; previous, next, self, distance and induction compare a query's
// position with a key's, which in two different sequences means nothing: they stay 0 and are
// never a role.

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "src/model/model.h"

namespace attn {

// One input and what the statistics need to know about its tokens.
struct HeadStatsInput {
  std::vector<int> ids;
  std::vector<char> separator;    // (ids) 1 where the token is [SEP], </s> or the EOS token
  std::vector<char> punctuation;  // (ids) 1 where the token is punctuation only
  // A probe: tokens [repeat_start, repeat_start + period) again right after, at
  // [repeat_start + period, repeat_start + 2 period). period 0: not a probe.
  int repeat_start = 0;
  int period = 0;
};

// Whether a token is punctuation only: not a special token, and its text (decoded alone,
// whitespace stripped) is not empty and every character is punctuation by BERT's rule (ASCII
// symbols such as "$" included).
bool is_punctuation_token(const Tokenizer& tokenizer, int id);

// The ids with their separator and punctuation marks.
HeadStatsInput describe_input(const Tokenizer& tokenizer, std::vector<int> ids);

// The attention a head does: it decides each row's length and which statistics exist.
enum class HeadAttention {
  kBidirectional,  // an encoder's self-attention: every query sees every key
  kCausal,         // a decoder's self-attention: query q sees keys 0 .. q
  kCross,          // an encoder-decoder's cross-attention: target queries over the source
};

// What a head is taken to do: the mass statistic (previous ... induction; for cross-attention
// first, separator or punctuation) that is largest and reaches kRoleThreshold; kMixed when
// none does.
enum class HeadRole {
  kPrevious,
  kNext,
  kSelf,
  kFirst,
  kSeparator,
  kPunctuation,
  kInduction,
  kMixed
};

// The share of a row's attention mass a statistic must reach on average to name the role.
constexpr double kRoleThreshold = 0.5;

// "previous", "next", "self", "first", "separator", "punctuation", "induction", "mixed".
const char* role_name(HeadRole role);

struct HeadScores {
  int layer = 0;
  int head = 0;
  double previous = 0;
  double next = 0;
  double self = 0;
  double first = 0;
  double separator = 0;
  double punctuation = 0;
  double distance = 0;
  double entropy = 0;
  std::optional<double> induction = std::nullopt;  // only when probes ran
  HeadRole role = HeadRole::kMixed;
  double role_score = 0;  // the value of `strongest`
  // The largest mass statistic, whether or not it reaches the threshold: what a mixed head
  // leans to.
  HeadRole strongest = HeadRole::kMixed;
};

// Sums per (layer, head), fed one attention matrix at a time.
class HeadStatsAccumulator {
 public:
  HeadStatsAccumulator(int n_layers, int n_heads, HeadAttention attention);

  HeadAttention attention() const { return attention_; }

  // One head's self-attention over one input: probabilities (n, n), rows = queries, columns =
  // keys, n = input.ids.size(). A probe input adds to the induction sums only, a text input to
  // all the others.
  void add(int layer, int head, const float* probabilities, const HeadStatsInput& input);

  // One head's cross-attention: probabilities (n_queries, source.ids.size()), rows = target
  // queries, columns = source keys.
  void add_cross(int layer, int head, const float* probabilities, int n_queries,
                 const HeadStatsInput& source);

  // The statistics and role of every head, by layer then head. A statistic no row defined is 0.
  std::vector<HeadScores> scores() const;

 private:
  struct Sums {
    double previous = 0, next = 0, self = 0, first = 0, separator = 0, punctuation = 0;
    double distance = 0, entropy = 0, induction = 0;
    long rows = 0, previous_rows = 0, next_rows = 0, induction_rows = 0;
  };
  // Adds first, separator, punctuation and entropy of one row: probabilities (row_length) over
  // the keys [0, row_length) of `keys`.
  static void add_row_mass(Sums& sums, const float* row, int row_length,
                           const HeadStatsInput& keys);

  int n_heads_;
  HeadAttention attention_;
  std::vector<Sums> sums_;  // (n_layers, n_heads)
};

// The induction probe of a decoder: `sequences` random sequences of `length` distinct
// non-special tokens (drawn with `seed`), each repeated twice right after the tokens the
// tokenizer puts at the start of every text (Llama's BOS; nothing for GPT-2).
struct InductionProbeOptions {
  int sequences = 20;
  int length = 32;
  std::uint64_t seed = 0;
};

// The probe inputs. Throws UsageError when a repeated sequence does not fit the model's context
// (length more than half of it) or the vocabulary has fewer than `length` ordinary tokens.
std::vector<HeadStatsInput> induction_probe_inputs(const Model& model,
                                                   const InductionProbeOptions& options);

// In-context copying, as a check on the induction scores: the mean NLL (nats) of tokens 1 ..
// length-1 of the first copy and of the same tokens in the second copy, each predicted from
// the tokens before it. A model that copies does much better on the second.
struct ProbeLoss {
  double first_copy = 0;
  double second_copy = 0;
};

// Runs the probe inputs as accumulate_head_stats does (their induction sums go to `stats`) and
// measures the loss on both copies.
ProbeLoss run_induction_probe(const Model& model, std::span<const HeadStatsInput> probes,
                              int max_batch_tokens, HeadStatsAccumulator& stats);

// Runs the inputs through the model packed into batches of up to max_batch_tokens tokens (as
// fill-mask --file does) and adds every head's attention over every input to `stats`.
void accumulate_head_stats(const Model& model, std::span<const HeadStatsInput> inputs,
                           int max_batch_tokens, HeadStatsAccumulator& stats);

// The decoder's input for sources[i], its start token first, given the source's encoder output
// (e.g. the model's greedy translation: greedy_decoder_input).
using DecoderInputOf =
    std::function<std::vector<int>(std::size_t i, const CrossAttentionMemory& memory)>;

// An encoder-decoder's heads: runs each source through the encoder (once) and the decoder over
// its decoder input, one source at a time, adding the encoder's self-attention to `encoder`, the
// decoder's to `decoder` and the decoder's cross-attention over the source to `cross`. Returns
// the decoder inputs, described.
std::vector<HeadStatsInput> accumulate_encoder_decoder_head_stats(
    const Model& model, std::span<const HeadStatsInput> sources,
    const DecoderInputOf& decoder_input_of, HeadStatsAccumulator& encoder,
    HeadStatsAccumulator& decoder, HeadStatsAccumulator& cross);

}  // namespace attn
