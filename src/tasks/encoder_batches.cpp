#include "src/tasks/encoder_batches.h"

#include <algorithm>

namespace attn {
namespace {

// Consecutive inputs [begin, end) that run as one packed batch of `rows` tokens.
struct BatchPlan {
  std::size_t begin = 0;
  std::size_t end = 0;
  int rows = 0;
};

std::vector<BatchPlan> plan_batches(std::span<const int> lengths, int max_batch_tokens) {
  std::vector<BatchPlan> plans;
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    if (plans.empty() || plans.back().rows + lengths[i] > max_batch_tokens) {
      plans.push_back({.begin = i, .end = i, .rows = 0});
    }
    plans.back().end = i + 1;
    plans.back().rows += lengths[i];
  }
  return plans;
}

}  // namespace

void truncate_keeping_last(std::vector<int>& values, std::size_t max_length) {
  if (values.size() <= max_length) return;
  values.erase(values.begin() + long(max_length) - 1, values.end() - 1);
}

void run_encoder_batches(
    const Model& model, std::span<const int> lengths, int max_batch_tokens,
    const std::function<void(Batch& batch, std::size_t input)>& add_input,
    const std::function<void(const Batch& batch, RunState& state, std::size_t begin)>& on_batch,
    const ForwardObserver* observer) {
  const std::vector<BatchPlan> plans = plan_batches(lengths, max_batch_tokens);
  if (plans.empty()) return;
  int max_rows = 0;
  for (const BatchPlan& plan : plans) max_rows = std::max(max_rows, plan.rows);
  const int max_length = *std::max_element(lengths.begin(), lengths.end());
  // An encoder batch writes its keys and values at cache rows [0, rows).
  const ArchSpec& spec = model.spec();
  KVCache cache(spec, max_rows, spec.n_layer);
  RunState state(spec, max_rows, max_length);
  for (const BatchPlan& plan : plans) {
    Batch batch;
    for (std::size_t i = plan.begin; i < plan.end; ++i) add_input(batch, i);
    model.transformer->forward(batch, cache, state, observer);
    on_batch(batch, state, plan.begin);
  }
}

}  // namespace attn
