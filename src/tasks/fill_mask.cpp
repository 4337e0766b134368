#include "src/tasks/fill_mask.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <string_view>

#include "src/base/error.h"
#include "src/base/unicode.h"
#include "src/tasks/encoder_batches.h"

namespace attn {

void check_fill_mask_model(const Model& model) {
  model.require_single_stack("fill-mask");
  if (model.spec().causal) {
    throw UsageError(model.dir.string() + ": fill-mask needs an encoder with a masked-LM head; '" +
                     model.model_type + "' is a decoder (try generate)");
  }
  if (model.transformer->classifier()) {
    throw UsageError(model.dir.string() + ": fill-mask needs a masked-LM head; this one is " +
                     model.description());
  }
  if (!model.transformer->has_head()) {
    throw Error(model.dir.string() + ": " +
                (model.missing_head.empty() ? "model has no masked-LM head" : model.missing_head));
  }
  if (!model.tokenizer->mask_id()) {
    throw Error(model.dir.string() + ": the tokenizer has no mask token");
  }
}

void check_top_k(const Model& model, int top_k) {
  const int vocab = model.spec().vocab_size;
  if (top_k < 1 || top_k > vocab) {
    throw UsageError("--top-k: " + std::to_string(top_k) + " is not between 1 and the vocabulary " +
                     "size " + std::to_string(vocab));
  }
}

MaskedInput encode_masked_input(const Model& model, std::string_view text,
                                std::optional<std::string_view> pair, bool truncate) {
  check_fill_mask_model(model);
  const Tokenizer& tokenizer = *model.tokenizer;
  const int mask_id = *tokenizer.mask_id();
  const std::string mask_token = tokenizer.token_string(mask_id);
  // Every literal "[MASK]" becomes the model's own mask token (RoBERTa's "<mask>"), so that one
  // spelling works for every model.
  const std::string first = python_replace(text, "[MASK]", mask_token);
  std::optional<std::string> second;
  if (pair) second = python_replace(*pair, "[MASK]", mask_token);
  Encoding encoding =
      tokenizer.encode(first, second ? std::optional<std::string_view>(*second) : std::nullopt);
  MaskedInput input;
  input.ids = std::move(encoding.ids);
  input.type_ids = std::move(encoding.type_ids);
  input.type_ids.resize(input.ids.size());  // all 0 when the tokenizer gives none

  const std::size_t max_length = model.spec().max_positions;
  if (input.ids.size() > max_length) {
    if (!truncate) {
      throw Error("has " + std::to_string(input.ids.size()) +
                  " tokens, more than the model's max_position_embeddings (" +
                  std::to_string(max_length) + "); --truncate keeps the first " +
                  std::to_string(max_length - 1) + " and the final " +
                  tokenizer.token_string(input.ids.back()));
    }
    // Keep the first (max - 1) tokens and the closing token ([SEP], </s>), so the model still
    // sees a well-formed input.
    input.dropped_tokens = int(input.ids.size() - max_length);
    truncate_keeping_last(input.ids, max_length);
    truncate_keeping_last(input.type_ids, max_length);
  }
  for (std::size_t i = 0; i < input.ids.size(); ++i) {
    if (input.ids[i] == mask_id) input.mask_positions.push_back(int(i));
  }
  if (input.mask_positions.empty()) {
    throw Error("no " + mask_token + (mask_token == "[MASK]" ? "" : " (or [MASK])") +
                " token in the input" + (input.dropped_tokens > 0 ? " after truncation" : ""));
  }
  return input;
}

namespace {

// The k most likely tokens of one mask: `logits` (vocab) -> candidates, best first. Scores are
// softmax probabilities over the full vocabulary, normalized in double precision.
std::vector<FillMaskCandidate> top_candidates(const Tokenizer& tokenizer,
                                              std::span<const float> logits, int k,
                                              const MaskedInput& input, int mask_position) {
  std::vector<int> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  // Highest logit first; the lowest id on exact ties.
  std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int a, int b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });
  const double max_logit = logits[order[0]];
  double sum = 0;
  for (float logit : logits) sum += std::exp(double(logit) - max_logit);

  // Like HF, a sequence with one mask is decoded without special tokens; with several, the
  // special tokens stay so that the other masks remain visible.
  const bool skip_special_tokens = input.mask_positions.size() == 1;
  std::vector<int> filled = input.ids;
  std::vector<FillMaskCandidate> candidates;
  for (int rank = 0; rank < k; ++rank) {
    const int id = order[rank];
    filled[mask_position] = id;
    candidates.push_back({.token_id = id,
                          .token = tokenizer.decode(std::span(&id, 1), false),
                          .score = float(std::exp(double(logits[id]) - max_logit) / sum),
                          .sequence = tokenizer.decode(filled, skip_special_tokens)});
  }
  return candidates;
}

void check_input(const Model& model, const MaskedInput& input, std::size_t index) {
  const auto fail = [&](const std::string& problem) {
    throw Error("fill-mask input " + std::to_string(index) + ": " + problem);
  };
  if (input.ids.empty() || input.ids.size() > std::size_t(model.spec().max_positions)) {
    fail("has " + std::to_string(input.ids.size()) + " tokens, expected 1 to " +
         std::to_string(model.spec().max_positions));
  }
  if (input.type_ids.size() != input.ids.size()) fail("type_ids and ids differ in length");
  if (input.mask_positions.empty()) fail("has no mask position");
  for (int position : input.mask_positions) {
    if (position < 0 || std::size_t(position) >= input.ids.size()) {
      fail("mask position " + std::to_string(position) + " is outside the input");
    }
  }
}

}  // namespace

void fill_mask(const Model& model, std::span<const MaskedInput> inputs,
               const FillMaskOptions& options,
               const std::function<void(std::size_t, std::vector<MaskPrediction>)>& on_result) {
  check_fill_mask_model(model);
  check_top_k(model, options.top_k);
  for (std::size_t i = 0; i < inputs.size(); ++i) check_input(model, inputs[i], i);
  std::vector<int> lengths;
  for (const MaskedInput& input : inputs) lengths.push_back(int(input.ids.size()));
  const int vocab = model.spec().vocab_size;
  std::vector<float> logits;
  run_encoder_batches(
      model, lengths, options.max_batch_tokens,
      [&](Batch& batch, std::size_t i) { batch.add_sequence(inputs[i].ids, inputs[i].type_ids); },
      [&](const Batch& batch, RunState& state, std::size_t begin) {
        // Rows of the batch whose logits are needed, input by input: the head runs only there.
        std::vector<int> mask_rows;
        for (std::size_t s = 0; s < batch.sequences.size(); ++s) {
          for (int position : inputs[begin + s].mask_positions) {
            mask_rows.push_back(batch.sequences[s].row + position);
          }
        }
        logits.resize(mask_rows.size() * std::size_t(vocab));  // (mask_rows, vocab)
        model.transformer->compute_logits(state, mask_rows, logits.data());
        std::size_t mask_index = 0;
        for (std::size_t s = 0; s < batch.sequences.size(); ++s) {
          const MaskedInput& input = inputs[begin + s];
          std::vector<MaskPrediction> predictions;
          for (int position : input.mask_positions) {
            const std::span<const float> mask_logits(
                logits.data() + mask_index++ * std::size_t(vocab), vocab);
            predictions.push_back({.position = position,
                                   .candidates = top_candidates(*model.tokenizer, mask_logits,
                                                                options.top_k, input, position)});
          }
          on_result(begin + s, std::move(predictions));
        }
      });
}

std::vector<std::vector<MaskPrediction>> fill_mask(const Model& model,
                                                   std::span<const MaskedInput> inputs,
                                                   const FillMaskOptions& options) {
  std::vector<std::vector<MaskPrediction>> results(inputs.size());
  fill_mask(model, inputs, options, [&](std::size_t i, std::vector<MaskPrediction> masks) {
    results[i] = std::move(masks);
  });
  return results;
}

std::vector<std::vector<MaskPrediction>> fill_mask(const Model& model,
                                                   std::span<const std::string> texts,
                                                   const FillMaskOptions& options) {
  check_fill_mask_model(model);
  std::vector<MaskedInput> inputs;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    try {
      inputs.push_back(encode_masked_input(model, texts[i]));
    } catch (const Error& e) {
      throw Error((texts.size() > 1 ? "text " + std::to_string(i) : std::string("text")) + ": " +
                  e.what());
    }
  }
  return fill_mask(model, inputs, options);
}

}  // namespace attn
