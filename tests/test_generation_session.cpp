// GenerationSession (src/tasks/generate.h): a prompt that begins with the tokens already in the
// session's cache computes only the rest, and generates exactly what a fresh generate() does
// over the whole prompt. Covered on a plain decoder (the shipped GPT-2) and on sliding-window
// decoders, whose caches drop rows that have left the window (Mistral: every layer; Gemma-3:
// some layers).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "src/tasks/generate.h"
#include "tests/test_paths.h"
#include "tests/tokenizer_test_util.h"
#include "tests/tolerances.h"

namespace attn::test {
namespace {

std::filesystem::path model_dir(const std::string& name) {
  return name == "tiny-gpt2-brown" ? shipped_model("tiny-gpt2-brown") : shared_model_dir(name);
}

// Greedy options that ignore end-of-sequence, so every run generates max_new_tokens.
GenerateOptions greedy(int max_new_tokens) {
  GenerateOptions options;
  options.max_new_tokens = max_new_tokens;
  options.sampling.temperature = 0;
  options.ignore_eos = true;
  return options;
}

// A prompt of `n` ids, made from `seed`, inside the vocabulary.
std::vector<int> some_ids(int n, int seed, int vocab) {
  std::vector<int> ids(n);
  for (int i = 0; i < n; ++i) ids[i] = (seed * 7919 + i * 104729) % vocab;
  return ids;
}

// The result of a run and the logits of its first step.
struct SessionRun {
  GenerateResult result;
  std::vector<float> first_logits;
};

SessionRun run_turn(GenerationSession& session, const std::vector<int>& prompt) {
  SessionRun run;
  GenerateCallbacks callbacks;
  callbacks.on_logits = [&](std::span<const float> logits) {
    if (run.first_logits.empty()) run.first_logits.assign(logits.begin(), logits.end());
  };
  run.result = session.generate(prompt, callbacks);
  return run;
}

// What generate() gives for `prompt` with a cache of its own.
SessionRun fresh(const Model& model, const GenerateOptions& options,
                 const std::vector<int>& prompt) {
  GenerationSession session(model, options);
  return run_turn(session, prompt);
}

void expect_same_run(const SessionRun& got, const SessionRun& want, const std::string& what) {
  EXPECT_EQ(got.result.generated_ids, want.result.generated_ids) << what;
  ASSERT_EQ(got.first_logits.size(), want.first_logits.size()) << what;
  float worst = 0;
  for (std::size_t i = 0; i < want.first_logits.size(); ++i) {
    worst = std::max(worst, std::abs(got.first_logits[i] - want.first_logits[i]));
  }
  // The reused keys were computed in other passes (a batch, or single decode steps), which
  // sum in another order: float32 rounding only (tolerance::kOtherShapes).
  EXPECT_LE(worst, float(tolerance::kOtherShapes))
      << what << ": first-step logits differ from a fresh run";
}

class GenerationSessionTest : public testing::TestWithParam<const char*> {};

TEST_P(GenerationSessionTest, ATurnThatExtendsTheLastComputesOnlyTheNewTokens) {
  const std::string name = GetParam();
  if (name != "tiny-gpt2-brown") ATTN_REQUIRE_SHARED();
  const auto model = load_model(model_dir(name));
  const int vocab = model->spec().vocab_size;
  const GenerateOptions options = greedy(30);
  GenerationSession session(*model, options);

  // Turn 1, then turn 2 = turn 1's prompt and reply and a new message longer than turn 1's
  // prompt (the cache must grow for the longer pass, keeping its rows).
  const std::vector<int> first = some_ids(5, 1, vocab);
  const SessionRun turn1 = run_turn(session, first);
  EXPECT_EQ(turn1.result.reused_tokens, 0);
  expect_same_run(turn1, fresh(*model, options, first), name + " turn 1");

  std::vector<int> second = first;
  second.insert(second.end(), turn1.result.generated_ids.begin(), turn1.result.generated_ids.end());
  const std::vector<int> message = some_ids(12, 2, vocab);
  second.insert(second.end(), message.begin(), message.end());
  const SessionRun turn2 = run_turn(session, second);
  // Everything but the last generated token, which was chosen and never run.
  EXPECT_EQ(turn2.result.reused_tokens, int(first.size()) + 30 - 1);
  expect_same_run(turn2, fresh(*model, options, second), name + " turn 2");

  // Turn 3 rewrites the conversation from its 4th token on: only 3 tokens can be kept, and a
  // windowed layer has dropped rows those would need, so there nothing is kept.
  std::vector<int> third(second.begin(), second.begin() + 3);
  const std::vector<int> rewritten = some_ids(9, 3, vocab);
  third.insert(third.end(), rewritten.begin(), rewritten.end());
  const SessionRun turn3 = run_turn(session, third);
  const auto& layers = model->spec().layers;
  const bool windowed =
      std::any_of(layers.begin(), layers.end(), [](const auto& layer) { return layer.window > 0; });
  EXPECT_EQ(turn3.result.reused_tokens, windowed ? 0 : 3);
  expect_same_run(turn3, fresh(*model, options, third), name + " turn 3");

  // After reset() nothing is reused.
  session.reset();
  const SessionRun again = run_turn(session, third);
  EXPECT_EQ(again.result.reused_tokens, 0);
  expect_same_run(again, turn3, name + " after reset");
}

INSTANTIATE_TEST_SUITE_P(Models, GenerationSessionTest,
                         testing::Values("tiny-gpt2-brown", "tiny-mistral-swa-random",
                                         "tiny-gemma3-random", "tiny-qwen3-random"),
                         [](const testing::TestParamInfo<const char*>& info) {
                           std::string name = info.param;
                           std::erase(name, '-');
                           return name;
                         });

}  // namespace
}  // namespace attn::test
