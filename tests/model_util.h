#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "src/model/model.h"
#include "tests/golden.h"
#include "tests/test_paths.h"
#include "tests/tolerances.h"

namespace attn::test {

// A gtest-safe test name for a model folder name ("tiny-llama-brown" -> "tinyllamabrown").
inline std::string model_test_name(const testing::TestParamInfo<const char*>& info) {
  std::string name = info.param;
  std::erase(name, '-');
  return name;
}

// Full-size random-weight models made by ../shared/tools/make_random_model.py at test setup
// (tests/make_random_models.sh); empty when they could not be made (no numpy or no ../shared).
inline std::filesystem::path random_model(const char* name) {
  auto dir = std::filesystem::path(ATTN_RANDOM_MODELS_DIR) / name;
  return std::filesystem::exists(dir / "model.safetensors") ? dir : std::filesystem::path();
}

// The shipped tiny-bert-brown, loaded once per process: every test on it uses it read-only.
inline const Model& tiny_bert() {
  static const std::unique_ptr<Model> model = load_model(shipped_model("tiny-bert-brown"));
  return *model;
}

// Runs one sequence through the model and returns the logits (vocab) of its last position.
inline std::vector<float> last_logits(const Model& model, std::span<const int> ids,
                                      const ForwardObserver* observer = nullptr) {
  const ArchSpec& spec = model.spec();
  const int n = static_cast<int>(ids.size());
  KVCache cache(spec, n, spec.n_layer);
  RunState state(spec, n, n);
  Batch batch;
  batch.add_sequence(ids);
  model.transformer->forward(batch, cache, state, observer);
  std::vector<float> logits(spec.vocab_size);
  const int last = n - 1;
  model.transformer->compute_logits(state, std::span(&last, 1), logits.data());
  return logits;
}

// Worst violation of |got - want| <= atol + rtol |want|, as the excess ratio (<= 1 passes),
// together with the worst absolute difference, for the failure message.
struct Comparison {
  double worst_abs = 0;
  double worst_ratio = 0;
  std::size_t worst_index = 0;
};

inline Comparison compare(std::span<const float> got, std::span<const float> want, double atol,
                          double rtol) {
  Comparison result;
  EXPECT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    const double diff = std::abs(double(got[i]) - want[i]);
    double ratio = diff / (atol + rtol * std::abs(want[i]));
    if (std::isnan(ratio)) ratio = INFINITY;
    if (ratio > result.worst_ratio) {
      result.worst_ratio = ratio;
      result.worst_index = i;
    }
    result.worst_abs = std::max(result.worst_abs, diff);
  }
  return result;
}

// A hidden-state array: every value within tolerance::kHiddenOfLargest times the golden array's
// largest |value|; prints the worst difference.
inline void expect_hidden_close(const std::string& name, std::span<const float> got,
                                const NpyArray& golden) {
  double largest = 0;
  for (float v : golden.values) largest = std::max(largest, double(std::abs(v)));
  const Comparison c = compare(got, golden.values, tolerance::kHiddenOfLargest * largest, 0);
  std::cout << name << ": worst |Δ| " << c.worst_abs << " (largest " << largest << ")\n";
  EXPECT_LE(c.worst_ratio, 1.0) << name << ": worst |Δ| " << c.worst_abs << ", largest " << largest;
}

}  // namespace attn::test
