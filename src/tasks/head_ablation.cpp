#include "src/tasks/head_ablation.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "src/kernels/ops.h"
#include "src/kernels/thread_pool.h"

namespace attn {
namespace {

// Logits of this many scored rows at a time: (kLogitRows, vocab). Each call packs the whole
// output matrix anew; 256 rows make that a small part, as in perplexity.cpp.
constexpr int kLogitRows = 256;

// Splits the inputs into batches of up to max_rows rows (an input longer than that alone).
std::vector<std::pair<std::size_t, std::size_t>> batch_ranges(std::span<const AblationInput> inputs,
                                                              int max_rows) {
  std::vector<std::pair<std::size_t, std::size_t>> ranges;
  for (std::size_t first = 0; first < inputs.size();) {
    std::size_t end = first;
    int rows = 0;
    while (end < inputs.size() &&
           (end == first || rows + int(inputs[end].ids.size()) <= max_rows)) {
      rows += int(inputs[end].ids.size());
      ++end;
    }
    ranges.emplace_back(first, end);
    first = end;
  }
  return ranges;
}

// The batch's scored tokens: their rows (ascending: inputs in order, each one's positions
// ascending) and the tokens they are scored against.
struct ScoredTokens {
  std::vector<int> rows;
  std::vector<int> targets;
};

ScoredTokens scored_tokens(std::span<const AblationInput> inputs, const Batch& batch) {
  ScoredTokens scored;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    for (std::size_t k = 0; k < inputs[i].scored_positions.size(); ++k) {
      scored.rows.push_back(batch.sequences[i].row + inputs[i].scored_positions[k]);
      scored.targets.push_back(inputs[i].targets[k]);
    }
  }
  return scored;
}

// The NLL sum of the scored tokens, whose hidden states the last pass left in `rows` of
// state.hidden.
double scored_nll_sum(const Model& model, const ScoredTokens& scored, std::span<const int> rows,
                      RunState& state, std::vector<float>& logits) {
  const int vocab = model.spec().vocab_size;
  double sum = 0;
  std::vector<double> nll(kLogitRows);
  for (std::size_t first = 0; first < rows.size(); first += kLogitRows) {
    const std::size_t count = std::min<std::size_t>(kLogitRows, rows.size() - first);
    model.transformer->compute_logits(state, rows.subspan(first, count), logits.data());
    // A small model's pass costs little beside these sums over its vocabulary: one row a task.
    thread_pool().run(int(count), [&](int i) {
      const float* row = logits.data() + std::size_t(i) * vocab;
      nll[i] = log_sum_exp(row, vocab) - row[scored.targets[first + i]];
    });
    for (std::size_t i = 0; i < count; ++i) sum += nll[i];
  }
  return sum;
}

// A result for the heads of `heads` in a stack shaped by `spec`: NaN sums for the others.
AblationResult empty_result(const ArchSpec& spec, const AblationHeads& heads, long n_inputs) {
  const std::size_t cells = std::size_t(spec.n_layer) * spec.n_head;
  AblationResult result{
      .n_layers = spec.n_layer,
      .n_heads = spec.n_head,
      .head_dim = spec.head_dim,
      .n_inputs = n_inputs,
      .zero_nll_sum = std::vector<double>(cells, std::numeric_limits<double>::quiet_NaN()),
      .mean_nll_sum = std::vector<double>(cells, std::numeric_limits<double>::quiet_NaN()),
      .mu = std::vector<float>(std::size_t(spec.n_layer) * spec.q_dim())};
  for (int layer : heads.layers) {
    for (int head : heads.heads) {
      result.zero_nll_sum[std::size_t(layer) * spec.n_head + head] = 0;
      result.mean_nll_sum[std::size_t(layer) * spec.n_head + head] = 0;
    }
  }
  return result;
}

// Float64 sums of a stack's head outputs, for mu: (n_layers, q_dim).
struct HeadOutputSums {
  explicit HeadOutputSums(const ArchSpec& spec)
      : q_dim(spec.q_dim()), sums(std::size_t(spec.n_layer) * q_dim, 0.0) {}

  // Adds one layer's head outputs (rows, q_dim).
  void add(int layer, const float* outputs, int rows) {
    double* sum = sums.data() + std::size_t(layer) * q_dim;
    for (long r = 0; r < rows; ++r) {
      for (int c = 0; c < q_dim; ++c) sum[c] += outputs[r * q_dim + c];
    }
  }
  // result.mu = the sums over result.n_positions, rounded to float.
  void write_mean(AblationResult& result) const {
    for (std::size_t i = 0; i < sums.size(); ++i) {
      result.mu[i] = float(sums[i] / double(result.n_positions));
    }
  }

  int q_dim;
  std::vector<double> sums;
};

// The residual stream entering each layer of a stack, kept from a baseline pass so that an
// ablation can restart at its layer: (n_layers, max_rows, d_model).
class EnteringStreams {
 public:
  EnteringStreams(const ArchSpec& spec, int max_rows)
      : spec_(spec),
        max_rows_(max_rows),
        streams_(std::size_t(spec.n_layer) * max_rows * spec.d_model) {
    // The embeddings' output, reported as layer -1, enters layer 0.
    keeping_.on_hidden = [this](int layer, const float* hidden, int rows) {
      if (layer + 1 < spec_.n_layer) {
        std::copy_n(hidden, std::size_t(rows) * spec_.d_model, entering(layer + 1));
      }
    };
  }
  // keeping_ points back here.
  EnteringStreams(const EnteringStreams&) = delete;
  EnteringStreams& operator=(const EnteringStreams&) = delete;

  // The observer that keeps them, for the baseline pass.
  const ForwardObserver* keeping() const { return &keeping_; }
  // Copies the stream that entered `layer` (rows, d_model) into state.hidden.
  void restore(int layer, int rows, RunState& state) {
    std::copy_n(entering(layer), std::size_t(rows) * spec_.d_model, state.hidden.begin());
  }

 private:
  float* entering(int layer) {
    return streams_.data() + std::size_t(layer) * max_rows_ * spec_.d_model;
  }

  const ArchSpec& spec_;
  int max_rows_;
  std::vector<float> streams_;
  ForwardObserver keeping_;
};

// The head being ablated, and the observer hook that takes it out of a layer's head outputs
// (rows, n_head * head_dim): its slice is zeroed, or replaced by its mean.
struct AblatedHead {
  int layer = 0;
  int head = 0;
  const float* replacement = nullptr;  // head_dim values, or null for zeros

  void apply(const ArchSpec& spec, int at_layer, float* outputs, int rows) const {
    if (at_layer != layer) return;
    for (long r = 0; r < rows; ++r) {
      float* slice = outputs + r * spec.q_dim() + std::size_t(head) * spec.head_dim;
      if (replacement) {
        std::copy_n(replacement, spec.head_dim, slice);
      } else {
        std::fill_n(slice, spec.head_dim, 0.0f);
      }
    }
  }
  // The mean (`mean`) or zero replacement of this head, from result.mu.
  void choose(const AblationResult& result, const ArchSpec& spec, bool mean) {
    replacement = mean ? result.mu.data() + std::size_t(layer) * spec.q_dim() + head * spec.head_dim
                       : nullptr;
  }
};

// The NLL sum of one kind of ablation of `head` in `result`.
double& ablated_sum(AblationResult& result, const AblatedHead& head) {
  return (head.replacement
              ? result.mean_nll_sum
              : result.zero_nll_sum)[std::size_t(head.layer) * result.n_heads + head.head];
}

}  // namespace

long AblationResult::blocks_whole_passes() const {
  const long ablated = std::count_if(zero_nll_sum.begin(), zero_nll_sum.end(),
                                     [](double sum) { return !std::isnan(sum); });
  return long(n_layers) * n_positions * (2 + 2 * ablated);
}

AblationInput next_token_input(Encoding encoding) {
  AblationInput input{.ids = std::move(encoding.ids),
                      .type_ids = std::move(encoding.type_ids),
                      .scored_positions = {},
                      .targets = {}};
  for (std::size_t t = 0; t + 1 < input.ids.size(); ++t) {
    input.scored_positions.push_back(int(t));
    input.targets.push_back(input.ids[t + 1]);
  }
  return input;
}

AblationInput teacher_forced_input(int start_id, std::span<const int> target) {
  AblationInput input{.ids = {start_id}, .type_ids = {}, .scored_positions = {}, .targets = {}};
  for (std::size_t t = 0; t < target.size(); ++t) {
    if (t + 1 < target.size()) input.ids.push_back(target[t]);
    input.scored_positions.push_back(int(t));
    input.targets.push_back(target[t]);
  }
  return input;
}

AblationResult ablate_heads(const Model& model, std::span<const AblationInput> inputs,
                            const AblationHeads& heads, int max_batch_tokens,
                            const AblationProgress& progress) {
  const Transformer& transformer = *model.transformer;
  const ArchSpec& spec = model.spec();
  const int n_layers = spec.n_layer;
  int longest = 0;
  for (const AblationInput& input : inputs) longest = std::max(longest, int(input.ids.size()));
  const int max_rows = std::max(longest, max_batch_tokens);
  const auto ranges = batch_ranges(inputs, max_rows);

  AblationResult result = empty_result(spec, heads, long(inputs.size()));
  KVCache cache(spec, max_rows, n_layers);
  RunState state(spec, max_rows, longest);
  const auto fill_batch = [&](Batch& batch, std::size_t first, std::size_t end) {
    batch.clear();
    for (std::size_t i = first; i < end; ++i) batch.add_sequence(inputs[i].ids, inputs[i].type_ids);
  };

  // Pass 1: mu, the mean head output over every position of every input.
  HeadOutputSums output_sums(spec);
  ForwardObserver summing;
  summing.on_head_outputs = [&](int layer, float* outputs, int rows) {
    output_sums.add(layer, outputs, rows);
  };
  Batch batch;
  for (const auto& [first, end] : ranges) {
    fill_batch(batch, first, end);
    transformer.forward(batch, cache, state, &summing);
    result.n_positions += batch.rows();
    result.blocks_run += long(n_layers) * batch.rows();
    if (progress) progress(1, long(end));
  }
  output_sums.write_mean(result);

  // Pass 2, batch by batch: the baseline, keeping the stream entering every layer (the
  // embeddings' output, reported as layer -1, enters layer 0), then each ablation from its
  // layer on.
  std::vector<float> logits(std::size_t(kLogitRows) * spec.vocab_size);
  EnteringStreams entering(spec, max_rows);
  AblatedHead ablated;
  ForwardObserver ablating;
  ablating.on_head_outputs = [&](int layer, float* outputs, int rows) {
    ablated.apply(spec, layer, outputs, rows);
  };
  for (const auto& [first, end] : ranges) {
    const std::span<const AblationInput> part = inputs.subspan(first, end - first);
    fill_batch(batch, first, end);
    transformer.forward(batch, cache, state, entering.keeping());
    const int rows = batch.rows();
    const ScoredTokens scored = scored_tokens(part, batch);
    result.baseline_nll_sum += scored_nll_sum(model, scored, scored.rows, state, logits);
    // An ablation's pass carries only the scored rows past the last block's attention, to the
    // front of state.hidden.
    std::vector<int> front(scored.rows.size());
    std::iota(front.begin(), front.end(), 0);
    result.blocks_run += long(n_layers) * rows;
    for (const AblationInput& input : part) result.n_scored += long(input.scored_positions.size());
    for (int layer : heads.layers) {
      for (int head : heads.heads) {
        ablated = {.layer = layer, .head = head};
        for (const bool mean : {false, true}) {
          ablated.choose(result, spec, mean);
          entering.restore(layer, rows, state);
          transformer.forward_from(layer, batch, cache, state, &ablating, scored.rows);
          ablated_sum(result, ablated) += scored_nll_sum(model, scored, front, state, logits);
          result.blocks_run += long(n_layers - layer) * rows;
        }
      }
    }
    if (progress) progress(2, long(end));
  }
  return result;
}

EncoderDecoderAblation ablate_encoder_decoder_heads(
    const Model& model, std::span<const TranslationAblationInput> inputs,
    const AblationHeads& encoder_heads, const AblationHeads& decoder_heads,
    const AblationProgress& progress) {
  const Transformer& encoder = *model.encoder;
  const Transformer& decoder = *model.transformer;
  const ArchSpec& encoder_spec = encoder.spec();
  const ArchSpec& decoder_spec = decoder.spec();
  int longest_source = 0, longest_target = 0;
  for (const TranslationAblationInput& input : inputs) {
    longest_source = std::max(longest_source, int(input.source_ids.size()));
    longest_target = std::max(longest_target, int(input.decoder.ids.size()));
  }
  const long n_inputs = long(inputs.size());
  EncoderDecoderAblation result{.encoder = empty_result(encoder_spec, encoder_heads, n_inputs),
                                .decoder = empty_result(decoder_spec, decoder_heads, n_inputs),
                                .cross = empty_result(decoder_spec, decoder_heads, n_inputs)};
  // One input at a time: a batch's sequences all read one encoder output.
  KVCache encoder_cache(encoder_spec, longest_source, encoder_spec.n_layer);
  RunState encoder_state(encoder_spec, longest_source, longest_source);
  KVCache decoder_cache(decoder_spec, longest_target, decoder_spec.n_layer);
  RunState decoder_state(decoder_spec, longest_target, std::max(longest_source, longest_target));
  Batch source, target;
  std::vector<float> logits(std::size_t(kLogitRows) * decoder_spec.vocab_size);

  // The encoder over the input's source, from its embeddings (first_layer -1) or from block
  // first_layer over the stream encoder_state.hidden holds; its output as the decoder's memory.
  const auto encode = [&](const TranslationAblationInput& input, int first_layer,
                          const ForwardObserver* observer) {
    source.clear();
    source.add_sequence(input.source_ids);
    if (first_layer < 0) {
      encoder.forward(source, encoder_cache, encoder_state, observer);
    } else {
      encoder.forward_from(first_layer, source, encoder_cache, encoder_state, observer);
    }
    result.blocks_run += long(encoder_spec.n_layer - std::max(first_layer, 0)) * source.rows();
    return decoder.cross_attention_memory(encoder_state.hidden.data(), source.rows());
  };
  // The decoder over the input's target reading `memory`, from first_layer as `encode`.
  const auto decode = [&](const TranslationAblationInput& input, const CrossAttentionMemory& memory,
                          int first_layer, const ForwardObserver* observer) {
    target.clear();
    target.add_sequence(input.decoder.ids);
    target.memory = &memory;
    if (first_layer < 0) {
      decoder.forward(target, decoder_cache, decoder_state, observer);
    } else {
      decoder.forward_from(first_layer, target, decoder_cache, decoder_state, observer);
    }
    result.blocks_run += long(decoder_spec.n_layer - std::max(first_layer, 0)) * target.rows();
  };
  const auto nll_sum = [&](const TranslationAblationInput& input) {
    const ScoredTokens scored = scored_tokens(std::span(&input.decoder, 1), target);
    return scored_nll_sum(model, scored, scored.rows, decoder_state, logits);
  };

  // Pass 1: mu of each kind of head.
  HeadOutputSums encoder_sums(encoder_spec), decoder_sums(decoder_spec), cross_sums(decoder_spec);
  ForwardObserver encoder_summing, decoder_summing;
  encoder_summing.on_head_outputs = [&](int layer, float* outputs, int rows) {
    encoder_sums.add(layer, outputs, rows);
  };
  decoder_summing.on_head_outputs = [&](int layer, float* outputs, int rows) {
    decoder_sums.add(layer, outputs, rows);
  };
  decoder_summing.on_cross_head_outputs = [&](int layer, float* outputs, int rows) {
    cross_sums.add(layer, outputs, rows);
  };
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    decode(inputs[i], encode(inputs[i], -1, &encoder_summing), -1, &decoder_summing);
    result.encoder.n_positions += source.rows();
    result.decoder.n_positions += target.rows();
    result.cross.n_positions += target.rows();
    if (progress) progress(1, long(i + 1));
  }
  encoder_sums.write_mean(result.encoder);
  decoder_sums.write_mean(result.decoder);
  cross_sums.write_mean(result.cross);

  // Pass 2, input by input: the baseline, keeping the stream entering every layer of both
  // stacks, then each ablation from its layer on.
  EnteringStreams encoder_entering(encoder_spec, longest_source);
  EnteringStreams decoder_entering(decoder_spec, longest_target);
  AblatedHead ablated;
  ForwardObserver encoder_ablating, self_ablating, cross_ablating;
  encoder_ablating.on_head_outputs = [&](int layer, float* outputs, int rows) {
    ablated.apply(encoder_spec, layer, outputs, rows);
  };
  self_ablating.on_head_outputs = [&](int layer, float* outputs, int rows) {
    ablated.apply(decoder_spec, layer, outputs, rows);
  };
  cross_ablating.on_cross_head_outputs = [&](int layer, float* outputs, int rows) {
    ablated.apply(decoder_spec, layer, outputs, rows);
  };
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const TranslationAblationInput& input = inputs[i];
    const CrossAttentionMemory memory = encode(input, -1, encoder_entering.keeping());
    decode(input, memory, -1, decoder_entering.keeping());
    const double baseline = nll_sum(input);
    const long scored = long(input.decoder.scored_positions.size());
    for (AblationResult* kind : {&result.encoder, &result.decoder, &result.cross}) {
      kind->baseline_nll_sum += baseline;
      kind->n_scored += scored;
    }
    const int source_rows = source.rows(), target_rows = target.rows();
    for (int layer : decoder_heads.layers) {
      for (int head : decoder_heads.heads) {
        for (const auto& [kind, observer] : {std::pair{&result.decoder, &self_ablating},
                                             std::pair{&result.cross, &cross_ablating}}) {
          for (const bool mean : {false, true}) {
            ablated = {.layer = layer, .head = head};
            ablated.choose(*kind, decoder_spec, mean);
            decoder_entering.restore(layer, target_rows, decoder_state);
            decode(input, memory, layer, observer);
            ablated_sum(*kind, ablated) += nll_sum(input);
          }
        }
      }
    }
    for (int layer : encoder_heads.layers) {
      for (int head : encoder_heads.heads) {
        for (const bool mean : {false, true}) {
          ablated = {.layer = layer, .head = head};
          ablated.choose(result.encoder, encoder_spec, mean);
          encoder_entering.restore(layer, source_rows, encoder_state);
          const CrossAttentionMemory changed = encode(input, layer, &encoder_ablating);
          decode(input, changed, -1, nullptr);
          ablated_sum(result.encoder, ablated) += nll_sum(input);
        }
      }
    }
    if (progress) progress(2, long(i + 1));
  }
  const long ablations = 2 * long(encoder_heads.layers.size() * encoder_heads.heads.size() +
                                  2 * decoder_heads.layers.size() * decoder_heads.heads.size());
  result.blocks_whole_passes = (long(encoder_spec.n_layer) * result.encoder.n_positions +
                                long(decoder_spec.n_layer) * result.decoder.n_positions) *
                               (2 + ablations);
  return result;
}

}  // namespace attn
