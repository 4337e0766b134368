// attn serve's model thread (src/serve/scheduler.h): generations that share decode passes give
// what each gives alone, whoever joins or leaves; a slot keeps its cache for the next prompt that
// begins as its last did; a cancelled generation frees its slot; encoder requests that wait
// together run as one batch and give what each gives alone. On the shipped models.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "src/base/error.h"
#include "src/serve/scheduler.h"
#include "src/tasks/embed.h"
#include "tests/test_paths.h"
#include "tests/tolerances.h"

namespace attn::serve {
namespace {

GenerateOptions greedy_tokens(int max_new_tokens) {
  GenerateOptions options;
  options.max_new_tokens = max_new_tokens;
  options.sampling.temperature = 0;
  options.ignore_eos = true;
  return options;
}

std::vector<int> prompt_of(const Model& model, const std::string& text) {
  return model.tokenizer->encode(text).ids;
}

class SchedulerTest : public testing::Test {
 protected:
  static void SetUpTestSuite() { gpt2_ = load_model(test::shipped_model("tiny-gpt2-brown")); }
  static void TearDownTestSuite() { gpt2_.reset(); }
  static std::unique_ptr<Model> gpt2_;
};
std::unique_ptr<Model> SchedulerTest::gpt2_;

// Five requests over three slots, of different lengths, so that they join and leave at different
// steps; one samples (its own seed). Each gives exactly what generate() gives it alone, and the
// decode steps had more than one row.
TEST_F(SchedulerTest, SharedStepsGiveWhatEachGivesAlone) {
  const Model& model = *gpt2_;
  struct Case {
    std::string prompt;
    GenerateOptions options;
  };
  std::vector<Case> cases = {{"The jury said", greedy_tokens(40)},
                             {"It was a dark and stormy night; the rain fell", greedy_tokens(12)},
                             {"A", greedy_tokens(60)},
                             {"The Fulton County Grand Jury said Friday", greedy_tokens(25)},
                             {"In the morning", greedy_tokens(33)}};
  cases[3].options.sampling.temperature = 0.9f;
  cases[3].options.sampling.seed = 7;
  cases[4].options.stop = {" the"};
  cases[4].options.ignore_eos = false;

  // Every step's logits, bit for bit: the tokens alone would hide a difference in the last bits.
  using StepLogits = std::vector<std::vector<float>>;
  const auto keep_logits = [](StepLogits& steps) {
    GenerateCallbacks callbacks;
    callbacks.on_logits = [&steps](std::span<const float> logits) {
      steps.emplace_back(logits.begin(), logits.end());
    };
    return callbacks;
  };
  Metrics metrics;
  std::vector<GenerateResult> together;
  std::vector<StepLogits> together_logits(cases.size());
  {
    Scheduler scheduler(model, {.parallel = 3, .batch_tokens = 1024}, metrics);
    std::vector<std::shared_ptr<GenerationRequest>> requests;
    for (std::size_t i = 0; i < cases.size(); ++i) {
      requests.push_back(scheduler.generate(prompt_of(model, cases[i].prompt), cases[i].options,
                                            keep_logits(together_logits[i])));
    }
    for (const auto& request : requests) together.push_back(request->result());
  }
  for (std::size_t i = 0; i < cases.size(); ++i) {
    StepLogits alone_logits;
    const GenerateResult alone = generate(model, prompt_of(model, cases[i].prompt),
                                          cases[i].options, keep_logits(alone_logits));
    EXPECT_EQ(together[i].generated_ids, alone.generated_ids) << cases[i].prompt;
    EXPECT_EQ(together[i].text, alone.text) << cases[i].prompt;
    EXPECT_EQ(together[i].stop_reason, alone.stop_reason) << cases[i].prompt;
    ASSERT_EQ(together_logits[i].size(), alone_logits.size()) << cases[i].prompt;
    for (std::size_t step = 0; step < alone_logits.size(); ++step) {
      ASSERT_TRUE(together_logits[i][step] == alone_logits[step])
          << cases[i].prompt << ": the logits of step " << step << " differ";
    }
  }
  EXPECT_GT(metrics.decode_rows(), metrics.decode_passes()) << "no decode step had two rows";
}

// Streamed text, taken piece by piece, is the result's text.
TEST_F(SchedulerTest, StreamedTextIsTheWholeText) {
  Metrics metrics;
  Scheduler scheduler(*gpt2_, {}, metrics);
  auto request = scheduler.generate(prompt_of(*gpt2_, "The jury said"), greedy_tokens(30));
  std::string streamed;
  int pieces = 0;
  for (std::string piece; request->next_text(piece); piece.clear()) {
    streamed += piece;
    ++pieces;
  }
  EXPECT_EQ(streamed, request->result().text);
  EXPECT_GT(pieces, 0);
}

// A slot keeps its cache: a prompt that extends the last one there computes only what is new.
TEST_F(SchedulerTest, ASlotReusesTheStartItHolds) {
  const Model& model = *gpt2_;
  Metrics metrics;
  Scheduler scheduler(model, {.parallel = 1, .batch_tokens = 1024}, metrics);
  const std::vector<int> first = prompt_of(model, "The jury said that the city");
  const GenerateResult one = scheduler.generate(first, greedy_tokens(10))->result();
  EXPECT_EQ(one.reused_tokens, 0);
  std::vector<int> second = first;
  second.insert(second.end(), one.generated_ids.begin(), one.generated_ids.end());
  const std::vector<int> more = prompt_of(model, " and the county");
  second.insert(second.end(), more.begin(), more.end());
  const GenerateResult two = scheduler.generate(second, greedy_tokens(10))->result();
  // The first prompt and all but the last generated token (chosen, never run).
  EXPECT_EQ(two.reused_tokens, int(first.size() + one.generated_ids.size()) - 1);
  // Without reuse (cache_prompt: false) the whole prompt runs again, and gives the same tokens,
  // as a GenerationSession's turns do (tolerance::kOtherShapes on the logits is
  // test_generation_session's check of the reused rows).
  const GenerateResult three = scheduler.generate(second, greedy_tokens(10), {}, false)->result();
  EXPECT_EQ(three.reused_tokens, 0);
  EXPECT_EQ(three.generated_ids, two.generated_ids);
}

// A request that shares nothing with the free slots takes the one unused the longest (here,
// never), and leaves the other's cache for the conversation's next turn.
TEST_F(SchedulerTest, AnUnrelatedRequestLeavesAConversationsSlot) {
  const Model& model = *gpt2_;
  Metrics metrics;
  Scheduler scheduler(model, {.parallel = 2, .batch_tokens = 1024}, metrics);
  const std::vector<int> first = prompt_of(model, "The jury said that the city");
  const GenerateResult one = scheduler.generate(first, greedy_tokens(10))->result();
  scheduler.generate(prompt_of(model, "Nothing alike"), greedy_tokens(10))->result();
  std::vector<int> second = first;
  second.insert(second.end(), one.generated_ids.begin(), one.generated_ids.end());
  EXPECT_EQ(scheduler.generate(second, greedy_tokens(10))->result().reused_tokens,
            int(second.size()) - 1);
}

// A cancelled generation ends at its next step and frees its slot for the one waiting.
TEST_F(SchedulerTest, CancelFreesTheSlot) {
  const Model& model = *gpt2_;
  Metrics metrics;
  Scheduler scheduler(model, {.parallel = 1, .batch_tokens = 1024}, metrics);
  auto long_one = scheduler.generate(prompt_of(model, "The jury"), greedy_tokens(1000));
  auto waiting = scheduler.generate(prompt_of(model, "A"), greedy_tokens(5));
  std::string text;
  ASSERT_TRUE(long_one->next_text(text));
  long_one->cancel();
  const GenerateResult cancelled = long_one->result();
  EXPECT_EQ(cancelled.stop_reason, "interrupted");
  EXPECT_LT(cancelled.generated_ids.size(), 1000u);
  EXPECT_EQ(waiting->result().generated_ids.size(), 5u);
}

// interrupt_all() (a shutdown's grace is over) ends running and waiting generations.
TEST_F(SchedulerTest, InterruptAllEndsEveryGeneration) {
  const Model& model = *gpt2_;
  Metrics metrics;
  Scheduler scheduler(model, {.parallel = 1, .batch_tokens = 1024}, metrics);
  auto running = scheduler.generate(prompt_of(model, "The jury"), greedy_tokens(1000));
  auto waiting = scheduler.generate(prompt_of(model, "A"), greedy_tokens(1000));
  std::string text;
  ASSERT_TRUE(running->next_text(text));
  scheduler.interrupt_all();
  EXPECT_EQ(running->result().stop_reason, "interrupted");
  EXPECT_EQ(waiting->result().stop_reason, "interrupted");
  EXPECT_LT(running->result().generated_ids.size(), 1000u);
}

// A generation's error reaches its waiter; the model thread goes on with the others.
TEST_F(SchedulerTest, AnErrorReachesItsRequestOnly) {
  const Model& model = *gpt2_;
  Metrics metrics;
  Scheduler scheduler(model, {}, metrics);
  auto bad = scheduler.generate({model.spec().vocab_size + 5}, greedy_tokens(3));
  auto good = scheduler.generate(prompt_of(model, "A"), greedy_tokens(3));
  EXPECT_THROW(bad->result(), Error);
  EXPECT_EQ(good->result().generated_ids.size(), 3u);
  EXPECT_THROW(scheduler.run([] { throw Error("from the job"); }), Error);
  bool ran = false;
  scheduler.run([&] { ran = true; });
  EXPECT_TRUE(ran);
}

// Embedding requests from eight threads at once: batched together, each text's vector is what
// embed() gives it alone, to float32 rounding through other GEMM shapes.
TEST(SchedulerEncoderTest, BatchedRequestsGiveWhatEachGivesAlone) {
  const auto model = load_model(test::shipped_model("tiny-bert-brown"));
  EmbeddingOptions options = embedding_options(*model, std::nullopt);
  const std::vector<std::string> texts = {
      "The jury said it did find that many of the registration practices were irregular.",
      "Merger proposed.",
      "The city",
      "It urged that the next legislature act.",
      "Only a relative handful of such reports was received, the jury said.",
      "Regarding Atlanta's new multi-million-dollar airport",
      "a",
      "The grand jury commented."};
  int calls = 0;
  const EncoderTask task =
      [&](std::span<const Encoding> inputs, int batch_tokens,
          const std::function<void(std::size_t, std::span<const float>)>& on_row) {
        ++calls;  // on the model thread only
        std::vector<EmbeddingInput> embedding_inputs;
        for (const Encoding& input : inputs) embedding_inputs.push_back({input.ids, 0});
        EmbeddingOptions batched = options;
        batched.max_batch_tokens = batch_tokens;
        embed(*model, embedding_inputs, batched, on_row);
      };
  // Each text alone, first: only one thread may run the model at a time (the scheduler's, once
  // it is made).
  std::vector<std::vector<float>> alone;
  for (const std::string& text : texts)
    alone.push_back(embed(*model, std::span(&text, 1), options)[0]);
  Metrics metrics;
  Scheduler scheduler(*model, {}, metrics);
  // A one-off job holds the model thread while the eight requests arrive, so that they wait
  // together.
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::thread holder([&] { scheduler.run([&] { released.wait(); }); });
  std::atomic<int> submitting = 0;
  std::vector<std::future<std::vector<std::vector<float>>>> results;
  for (const std::string& text : texts) {
    results.push_back(std::async(std::launch::async, [&, text] {
      std::vector<Encoding> input = {{encode_for_embedding(*model, text, options).ids, {}}};
      ++submitting;
      return scheduler.run_batched(task, std::move(input));
    }));
  }
  for (int wait = 0; wait < 1000 && submitting < int(texts.size()); ++wait) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // from submitting to queued
  release.set_value();
  holder.join();
  for (std::size_t i = 0; i < texts.size(); ++i) {
    const std::vector<std::vector<float>> got = results[i].get();
    ASSERT_EQ(got.size(), 1u);
    ASSERT_EQ(got[0].size(), alone[i].size());
    for (std::size_t d = 0; d < alone[i].size(); ++d) {
      EXPECT_NEAR(got[0][d], alone[i][d], test::tolerance::kOtherShapes)
          << texts[i] << " [" << d << "]";
    }
  }
  EXPECT_LT(calls, int(texts.size())) << "the waiting requests did not run together";
}

}  // namespace
}  // namespace attn::serve
