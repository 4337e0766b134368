// The classifier heads of the families with no classifier golden (MPNet, XLM-R): each test
// copies a shared masked-LM folder, gives it a …ForSequenceClassification or
// …ForTokenClassification head of seeded random values under the names transformers 4.45
// gives them, and checks attn's logits against the head computed in double precision here from
// the encoder's last hidden states (the encoder itself is checked against its goldens
// elsewhere). What this shows is that each family reads its head's tensors and runs them as
// transformers does.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "src/tasks/classify.h"
#include "tests/model_util.h"
#include "tests/safetensors_util.h"
#include "tests/tokenizer_test_util.h"
#include "tests/tolerances.h"

namespace attn::test {
namespace {

using nlohmann::json;

// A head tensor of seeded values in [-0.5, 0.5), stored as float32.
struct HeadTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> values;
};

HeadTensor random_tensor(const std::string& name, std::vector<int64_t> shape, uint32_t seed) {
  HeadTensor tensor{name, shape, {}};
  int64_t size = 1;
  for (int64_t dim : shape) size *= dim;
  uint32_t state = seed;
  for (int64_t i = 0; i < size; ++i) {
    state = state * 1664525u + 1013904223u;  // Numerical Recipes' LCG
    tensor.values.push_back(float(state >> 8) / float(1 << 24) - 0.5f);
  }
  return tensor;
}

// y = W x + b in double: W (out, in), x (in).
std::vector<double> affine(const HeadTensor& weight, const HeadTensor& bias,
                           const std::vector<double>& x) {
  const int64_t out = weight.shape[0], in = weight.shape[1];
  std::vector<double> y(out);
  for (int64_t o = 0; o < out; ++o) {
    double sum = bias.values[o];
    for (int64_t i = 0; i < in; ++i) sum += double(weight.values[o * in + i]) * x[i];
    y[o] = sum;
  }
  return y;
}

struct FamilyCase {
  const char* folder;        // a shared masked-LM model of the family
  const char* architecture;  // what the copy becomes
  const char* dense;         // a sequence classifier's tanh layer, or "" for a token classifier
  const char* classifier;    // the output layer
};

class ClassifierFamily : public testing::TestWithParam<FamilyCase> {};

TEST_P(ClassifierFamily, HeadMatchesADoubleComputation) {
  ATTN_REQUIRE_SHARED();
  const FamilyCase& family = GetParam();
  const std::filesystem::path source = shared_model_dir(family.folder);
  const auto encoder = load_model(source);
  const int d = encoder->spec().d_model;
  const std::vector<std::string> labels = {"A", "B", "C"};
  const bool per_token = std::string(family.dense).empty();

  std::vector<HeadTensor> head;
  if (!per_token) {
    head.push_back(random_tensor(std::string(family.dense) + ".weight", {d, d}, 1));
    head.push_back(random_tensor(std::string(family.dense) + ".bias", {d}, 2));
  }
  head.push_back(random_tensor(std::string(family.classifier) + ".weight", {3, d}, 3));
  head.push_back(random_tensor(std::string(family.classifier) + ".bias", {3}, 4));

  TempDir dir;
  for (const auto& entry : std::filesystem::directory_iterator(source)) {
    std::filesystem::copy(entry.path(), dir.path() / entry.path().filename());
  }
  json config = json::parse(read_file(source / "config.json"));
  config["architectures"] = {family.architecture};
  config["id2label"] = {{"0", "A"}, {"1", "B"}, {"2", "C"}};
  write_file(dir.path() / "config.json", config.dump());
  std::vector<RawTensor> tensors = read_safetensors(source / "model.safetensors");
  for (const HeadTensor& tensor : head) {
    std::string bytes(tensor.values.size() * sizeof(float), '\0');
    std::memcpy(bytes.data(), tensor.values.data(), bytes.size());
    tensors.push_back({tensor.name, "F32", tensor.shape, bytes});
  }
  write_safetensors(dir.path() / "model.safetensors", tensors);

  const auto classifier = load_model(dir.path());
  ASSERT_EQ(classifier->labels, labels);
  const Encoding input = encoder->tokenizer->encode("The cat sat on the mat.");
  const int n = int(input.ids.size());

  // The encoder's last hidden states (n, d), from the unchanged folder.
  KVCache cache(encoder->spec(), n, encoder->spec().n_layer);
  RunState state(encoder->spec(), n, n);
  Batch batch;
  batch.add_sequence(input.ids, input.type_ids);
  encoder->transformer->forward(batch, cache, state);

  std::vector<double> want;
  for (int t = 0; t < (per_token ? n : 1); ++t) {
    std::vector<double> x(state.hidden.data() + long(t) * d, state.hidden.data() + long(t + 1) * d);
    if (!per_token) {
      x = affine(head[0], head[1], x);
      for (double& value : x) value = std::tanh(value);
    }
    const std::vector<double> logits = affine(head[head.size() - 2], head.back(), x);
    want.insert(want.end(), logits.begin(), logits.end());
  }
  std::vector<float> got;
  const std::vector<Encoding> inputs = {input};
  classifier_logits(*classifier, inputs, 1024, [&](std::size_t, std::span<const float> logits) {
    got.assign(logits.begin(), logits.end());
  });
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_LE(std::abs(got[i] - want[i]),
              tolerance::kClassLogitAbsolute + tolerance::kClassLogitRelative * std::abs(want[i]))
        << family.folder << " " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(
    SharedModels, ClassifierFamily,
    testing::Values(
        FamilyCase{"tiny-mpnet-random", "MPNetForSequenceClassification", "classifier.dense",
                   "classifier.out_proj"},
        FamilyCase{"tiny-mpnet-random", "MPNetForTokenClassification", "", "classifier"},
        FamilyCase{"tiny-xlmr-random", "XLMRobertaForSequenceClassification", "classifier.dense",
                   "classifier.out_proj"},
        FamilyCase{"tiny-xlmr-random", "XLMRobertaForTokenClassification", "", "classifier"}),
    [](const testing::TestParamInfo<FamilyCase>& info) {
      std::string name = info.param.architecture;
      return name;
    });

}  // namespace
}  // namespace attn::test
