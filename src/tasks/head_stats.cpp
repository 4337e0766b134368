#include "src/tasks/head_stats.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>

#include "src/base/error.h"
#include "src/base/unicode.h"
#include "src/tasks/encoder_batches.h"
#include "src/tasks/translate.h"

namespace attn {

bool is_punctuation_token(const Tokenizer& tokenizer, int id) {
  if (tokenizer.is_special(id)) return false;
  const std::string text = replace_invalid_utf8(tokenizer.decode(std::span(&id, 1), false));
  const std::vector<char32_t> characters = decode_utf8(text, "token");
  const std::u32string_view stripped =
      python_strip(std::u32string_view(characters.data(), characters.size()));
  return !stripped.empty() && std::all_of(stripped.begin(), stripped.end(), is_bert_punctuation);
}

HeadStatsInput describe_input(const Tokenizer& tokenizer, std::vector<int> ids) {
  HeadStatsInput input;
  const std::optional<int> eos = tokenizer.eos_id();
  for (int id : ids) {
    const bool special = tokenizer.is_special(id);
    const std::string token = special ? tokenizer.token_string(id) : std::string();
    input.separator.push_back(special && (id == eos || token == "[SEP]" || token == "</s>"));
    input.punctuation.push_back(is_punctuation_token(tokenizer, id));
  }
  input.ids = std::move(ids);
  return input;
}

const char* role_name(HeadRole role) {
  switch (role) {
    case HeadRole::kPrevious:
      return "previous";
    case HeadRole::kNext:
      return "next";
    case HeadRole::kSelf:
      return "self";
    case HeadRole::kFirst:
      return "first";
    case HeadRole::kSeparator:
      return "separator";
    case HeadRole::kPunctuation:
      return "punctuation";
    case HeadRole::kInduction:
      return "induction";
    case HeadRole::kMixed:
      return "mixed";
  }
  return "";
}

HeadStatsAccumulator::HeadStatsAccumulator(int n_layers, int n_heads, HeadAttention attention)
    : n_heads_(n_heads), attention_(attention), sums_(std::size_t(n_layers) * n_heads) {}

void HeadStatsAccumulator::add_row_mass(Sums& sums, const float* row, int row_length,
                                        const HeadStatsInput& keys) {
  double separator = 0, punctuation = 0, entropy = 0;
  for (int k = 0; k < row_length; ++k) {
    const double weight = row[k];
    if (keys.separator[k]) separator += weight;
    if (keys.punctuation[k]) punctuation += weight;
    if (weight > 0) entropy -= weight * std::log(weight);
  }
  sums.first += row[0];
  sums.separator += separator;
  sums.punctuation += punctuation;
  if (row_length > 1) sums.entropy += entropy / std::log(double(row_length));
  ++sums.rows;
}

void HeadStatsAccumulator::add(int layer, int head, const float* probabilities,
                               const HeadStatsInput& input) {
  if (attention_ == HeadAttention::kCross) {
    throw std::logic_error("HeadStatsAccumulator::add: cross-attention goes to add_cross");
  }
  Sums& sums = sums_[std::size_t(layer) * n_heads_ + head];
  const bool causal = attention_ == HeadAttention::kCausal;
  const int n = int(input.ids.size());
  const auto p = [&](int q, int k) { return double(probabilities[long(q) * n + k]); };
  if (input.period > 0) {
    for (int q = input.repeat_start + input.period; q < input.repeat_start + 2 * input.period;
         ++q) {
      sums.induction += p(q, q - input.period + 1);
      ++sums.induction_rows;
    }
    return;
  }
  for (int q = 0; q < n; ++q) {
    const int row_length = causal ? q + 1 : n;
    add_row_mass(sums, probabilities + long(q) * n, row_length, input);
    double distance = 0;
    for (int k = 0; k < row_length; ++k) distance += p(q, k) * std::abs(q - k);
    sums.distance += distance;
    sums.self += p(q, q);
    if (q >= 1) {
      sums.previous += p(q, q - 1);
      ++sums.previous_rows;
    }
    if (!causal && q + 1 < n) {
      sums.next += p(q, q + 1);
      ++sums.next_rows;
    }
  }
}

void HeadStatsAccumulator::add_cross(int layer, int head, const float* probabilities, int n_queries,
                                     const HeadStatsInput& source) {
  if (attention_ != HeadAttention::kCross) {
    throw std::logic_error("HeadStatsAccumulator::add_cross: not a cross-attention accumulator");
  }
  Sums& sums = sums_[std::size_t(layer) * n_heads_ + head];
  const int n_keys = int(source.ids.size());
  for (int q = 0; q < n_queries; ++q) {
    add_row_mass(sums, probabilities + long(q) * n_keys, n_keys, source);
  }
}

std::vector<HeadScores> HeadStatsAccumulator::scores() const {
  const auto mean = [](double sum, long rows) { return rows > 0 ? sum / double(rows) : 0.0; };
  std::vector<HeadScores> all;
  for (std::size_t i = 0; i < sums_.size(); ++i) {
    const Sums& sums = sums_[i];
    HeadScores scores{.layer = int(i) / n_heads_,
                      .head = int(i) % n_heads_,
                      .previous = mean(sums.previous, sums.previous_rows),
                      .next = mean(sums.next, sums.next_rows),
                      .self = mean(sums.self, sums.rows),
                      .first = mean(sums.first, sums.rows),
                      .separator = mean(sums.separator, sums.rows),
                      .punctuation = mean(sums.punctuation, sums.rows),
                      .distance = mean(sums.distance, sums.rows),
                      .entropy = mean(sums.entropy, sums.rows)};
    if (sums.induction_rows > 0) scores.induction = mean(sums.induction, sums.induction_rows);
    // The candidates in the order that breaks ties; cross-attention has no positional ones.
    std::vector<std::pair<HeadRole, double>> candidates = {
        {HeadRole::kPrevious, scores.previous},
        {HeadRole::kNext, scores.next},
        {HeadRole::kSelf, scores.self},
        {HeadRole::kFirst, scores.first},
        {HeadRole::kSeparator, scores.separator},
        {HeadRole::kPunctuation, scores.punctuation},
        {HeadRole::kInduction, scores.induction.value_or(0)}};
    if (attention_ == HeadAttention::kCross) {
      candidates = {{HeadRole::kFirst, scores.first},
                    {HeadRole::kSeparator, scores.separator},
                    {HeadRole::kPunctuation, scores.punctuation}};
    }
    const auto best =
        std::max_element(candidates.begin(), candidates.end(),
                         [](const auto& a, const auto& b) { return a.second < b.second; });
    scores.role = best->second >= kRoleThreshold ? best->first : HeadRole::kMixed;
    scores.role_score = best->second;
    scores.strongest = best->first;
    all.push_back(scores);
  }
  return all;
}

namespace {

// Runs the inputs packed into batches, adding every head's attention to `stats`; on_batch as
// run_encoder_batches's.
void run_with_stats(
    const Model& model, std::span<const HeadStatsInput> inputs, int max_batch_tokens,
    HeadStatsAccumulator& stats,
    const std::function<void(const Batch& batch, RunState& state, std::size_t begin)>& on_batch) {
  std::vector<int> lengths;
  for (const HeadStatsInput& input : inputs) lengths.push_back(int(input.ids.size()));
  std::size_t batch_begin = 0;  // the input of the batch's sequence 0
  ForwardObserver observer;
  observer.wants_attention = [](int, int) { return true; };
  observer.on_attention = [&](int layer, int head, int sequence, const float* probabilities, int,
                              int) {
    stats.add(layer, head, probabilities, inputs[batch_begin + sequence]);
  };
  run_encoder_batches(
      model, lengths, max_batch_tokens,
      [&](Batch& batch, std::size_t i) {
        if (batch.sequences.empty()) batch_begin = i;
        batch.add_sequence(inputs[i].ids);
      },
      on_batch, &observer);
}

// -log softmax(logits)[target] in double precision.
double negative_log_likelihood(std::span<const float> logits, int target) {
  const double max_logit = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float logit : logits) sum += std::exp(double(logit) - max_logit);
  return std::log(sum) - (double(logits[target]) - max_logit);
}

}  // namespace

void accumulate_head_stats(const Model& model, std::span<const HeadStatsInput> inputs,
                           int max_batch_tokens, HeadStatsAccumulator& stats) {
  run_with_stats(model, inputs, max_batch_tokens, stats,
                 [](const Batch&, RunState&, std::size_t) {});
}

std::vector<HeadStatsInput> induction_probe_inputs(const Model& model,
                                                   const InductionProbeOptions& options) {
  const Tokenizer& tokenizer = *model.tokenizer;
  const std::vector<int> prefix = tokenizer.encode("").ids;
  const int context = model.spec().max_positions;
  if (2 * long(options.length) + long(prefix.size()) > context) {
    throw UsageError("--probe-length: " + std::to_string(options.length) +
                     " tokens repeated twice" + (prefix.empty() ? "" : " after the start token") +
                     " do not fit the model's context of " + std::to_string(context) +
                     " (at most " + std::to_string((context - int(prefix.size())) / 2) + ")");
  }
  std::vector<int> ordinary;  // the tokens a probe draws from
  const int vocab = std::min(tokenizer.vocab_size(), model.spec().vocab_size);
  for (int id = 0; id < vocab; ++id) {
    if (!tokenizer.is_special(id)) ordinary.push_back(id);
  }
  if (int(ordinary.size()) < options.length) {
    throw UsageError("--probe-length: " + std::to_string(options.length) +
                     " distinct tokens, but the vocabulary has only " +
                     std::to_string(ordinary.size()) + " ordinary ones");
  }
  std::mt19937_64 random(options.seed);
  std::vector<HeadStatsInput> probes;
  for (int s = 0; s < options.sequences; ++s) {
    // The first `length` entries of a partial Fisher-Yates shuffle: distinct tokens.
    for (int i = 0; i < options.length; ++i) {
      const std::size_t j = i + random() % (ordinary.size() - i);
      std::swap(ordinary[i], ordinary[j]);
    }
    std::vector<int> ids = prefix;
    for (int copy = 0; copy < 2; ++copy) {
      ids.insert(ids.end(), ordinary.begin(), ordinary.begin() + options.length);
    }
    HeadStatsInput probe = describe_input(tokenizer, std::move(ids));
    probe.repeat_start = int(prefix.size());
    probe.period = options.length;
    probes.push_back(std::move(probe));
  }
  return probes;
}

ProbeLoss run_induction_probe(const Model& model, std::span<const HeadStatsInput> probes,
                              int max_batch_tokens, HeadStatsAccumulator& stats) {
  const int vocab = model.spec().vocab_size;
  double first_sum = 0, second_sum = 0;
  long count = 0;
  std::vector<int> rows;
  std::vector<float> logits;
  run_with_stats(model, probes, max_batch_tokens, stats,
                 [&](const Batch& batch, RunState& state, std::size_t begin) {
                   for (std::size_t s = 0; s < batch.sequences.size(); ++s) {
                     const HeadStatsInput& probe = probes[begin + s];
                     const int start = batch.sequences[s].row + probe.repeat_start;
                     // Rows predicting tokens 1 .. period-1 of each copy: (2, period - 1).
                     rows.clear();
                     for (int copy = 0; copy < 2; ++copy) {
                       for (int i = 1; i < probe.period; ++i) {
                         rows.push_back(start + copy * probe.period + i - 1);
                       }
                     }
                     logits.resize(rows.size() * std::size_t(vocab));  // (rows, vocab)
                     model.transformer->compute_logits(state, rows, logits.data());
                     for (std::size_t r = 0; r < rows.size(); ++r) {
                       const int target = probe.ids[rows[r] - batch.sequences[s].row + 1];
                       const double nll = negative_log_likelihood(
                           std::span(logits.data() + r * vocab, vocab), target);
                       (r < rows.size() / 2 ? first_sum : second_sum) += nll;
                     }
                     count += long(rows.size() / 2);
                   }
                 });
  if (count == 0) return {};
  return {.first_copy = first_sum / double(count), .second_copy = second_sum / double(count)};
}

std::vector<HeadStatsInput> accumulate_encoder_decoder_head_stats(
    const Model& model, std::span<const HeadStatsInput> sources,
    const DecoderInputOf& decoder_input_of, HeadStatsAccumulator& encoder,
    HeadStatsAccumulator& decoder, HeadStatsAccumulator& cross) {
  const ArchSpec& spec = model.spec();
  std::vector<HeadStatsInput> targets;
  std::size_t i = 0;  // the source being run
  ForwardObserver encoder_observer;
  encoder_observer.wants_attention = [](int, int) { return true; };
  encoder_observer.on_attention = [&](int layer, int head, int, const float* probabilities, int,
                                      int) { encoder.add(layer, head, probabilities, sources[i]); };
  ForwardObserver decoder_observer;
  decoder_observer.wants_attention = [](int, int) { return true; };
  decoder_observer.on_attention = [&](int layer, int head, int, const float* probabilities, int,
                                      int) { decoder.add(layer, head, probabilities, targets[i]); };
  decoder_observer.on_cross_attention = [&](int layer, int head, int, const float* probabilities,
                                            int n_queries, int) {
    cross.add_cross(layer, head, probabilities, n_queries, sources[i]);
  };
  for (; i < sources.size(); ++i) {
    const CrossAttentionMemory memory = encode_source(model, sources[i].ids, &encoder_observer);
    targets.push_back(describe_input(*model.tokenizer, decoder_input_of(i, memory)));
    const int n = int(targets[i].ids.size());
    KVCache cache(spec, n, spec.n_layer);
    RunState state(spec, n, std::max(n, memory.length));
    Batch batch;
    batch.add_sequence(targets[i].ids);
    batch.memory = &memory;
    model.transformer->forward(batch, cache, state, &decoder_observer);
  }
  return targets;
}

}  // namespace attn
