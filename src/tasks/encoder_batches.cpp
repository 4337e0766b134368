#include "src/tasks/encoder_batches.h"

namespace attn {

void truncate_keeping_last(std::vector<int>& values, std::size_t max_length) {
  if (values.size() <= max_length) return;
  values.erase(values.begin() + long(max_length) - 1, values.end() - 1);
}

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

}  // namespace attn
