// Issue 12: the encoder-decoders (Marian, T5) against Hugging Face's goldens: every encoder,
// decoder and cross-attention weight, greedy translations with the top-5 logits of every step,
// and cached decoding against one pass over the whole target. Tokenizers:
// test_seq2seq_tokenizers.cpp; the command line: test_translate.cpp.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "src/tasks/translate.h"
#include "tests/decoder_checks.h"
#include "tests/tolerances.h"

namespace attn::test {
namespace {

class Seq2Seq : public testing::TestWithParam<const char*> {
 protected:
  void SetUp() override { ATTN_REQUIRE_SHARED(); }
  std::filesystem::path model_dir() const { return shared_dir() / "models" / GetParam(); }
  GoldenSet golden_set() const { return GoldenSet(GetParam()); }
};

// The decoder over `decoder_ids` (all at once, or one token per pass through the KV cache) with
// the source's memory: logits (vocab) of every position. The observer sees every pass.
std::vector<std::vector<float>> decoder_logits(const Model& model,
                                               const CrossAttentionMemory& memory,
                                               std::span<const int> decoder_ids, bool one_by_one,
                                               const ForwardObserver* observer = nullptr) {
  const ArchSpec& spec = model.spec();
  const int n = int(decoder_ids.size());
  KVCache cache(spec, n, spec.n_layer);
  RunState state(spec, n, std::max(n, memory.length));
  std::vector<std::vector<float>> logits;
  for (int first = 0; first < n;) {
    const int length = one_by_one ? 1 : n;
    Batch batch;
    batch.add_sequence(decoder_ids.subspan(first, length), {}, first);
    batch.cache_offset = first;
    batch.memory = &memory;
    model.transformer->forward(batch, cache, state, observer);
    for (int row = 0; row < length; ++row) {
      model.transformer->compute_logits(state, std::span(&row, 1),
                                        logits.emplace_back(spec.vocab_size).data());
    }
    first += length;
  }
  return logits;
}

// Compares the reported heads of one section ([layer][head][query][key] in the golden).
struct SectionCheck {
  const nlohmann::json* golden;
  int heads_seen = 0;
  double worst = 0;

  void check(int layer, int head, const float* p, int n_queries, int n_keys) {
    const auto& want = (*golden)[layer][head];
    ASSERT_EQ(int(want.size()), n_queries);
    for (int q = 0; q < n_queries; ++q) {
      ASSERT_EQ(int(want[q].size()), n_keys);
      for (int k = 0; k < n_keys; ++k) {
        const double diff = std::abs(double(p[long(q) * n_keys + k]) - want[q][k].get<double>());
        worst = std::max(worst, diff);
        EXPECT_LE(diff, tolerance::kAttentionWeight)
            << "layer " << layer << " head " << head << " query " << q << " key " << k;
      }
    }
    ++heads_seen;
  }
};

TEST_P(Seq2Seq, AttentionMatchesGolden) {
  auto model = load_model(model_dir());
  double worst = 0;
  for (const auto& line : golden_set().jsonl("attention.jsonl")) {
    const auto ids = line["ids"].get<std::vector<int>>();
    const auto decoder_ids = line["decoder_ids"].get<std::vector<int>>();
    SectionCheck encoder{&line["encoder_attentions"]}, decoder{&line["decoder_attentions"]},
        cross{&line["cross_attentions"]};
    ForwardObserver encoder_observer;
    encoder_observer.wants_attention = [](int, int) { return true; };
    encoder_observer.on_attention = [&](int layer, int head, int, const float* p, int nq, int nk) {
      encoder.check(layer, head, p, nq, nk);
    };
    const CrossAttentionMemory memory = encode_source(*model, ids, &encoder_observer);
    ForwardObserver decoder_observer;
    decoder_observer.wants_attention = [](int, int) { return true; };
    decoder_observer.on_attention = [&](int layer, int head, int, const float* p, int nq, int nk) {
      decoder.check(layer, head, p, nq, nk);
    };
    decoder_observer.on_cross_attention = [&](int layer, int head, int, const float* p, int nq,
                                              int nk) { cross.check(layer, head, p, nq, nk); };
    decoder_logits(*model, memory, decoder_ids, false, &decoder_observer);
    const auto& shape = line["encoder_shape"];
    const int encoder_heads = shape[0].get<int>() * shape[1].get<int>();
    const int decoder_heads =
        line["decoder_shape"][0].get<int>() * line["decoder_shape"][1].get<int>();
    EXPECT_EQ(encoder.heads_seen, encoder_heads);
    EXPECT_EQ(decoder.heads_seen, decoder_heads);
    EXPECT_EQ(cross.heads_seen, decoder_heads);
    worst = std::max({worst, encoder.worst, decoder.worst, cross.worst});
  }
  std::cout << GetParam() << ": worst |attention - golden| (encoder, decoder, cross): " << worst
            << "\n";
}

// Greedy translation gives the golden ids (up to a recorded near tie, past which the golden ids
// are forced) and every step's top-5 logits.
TEST_P(Seq2Seq, GreedyAndTop5MatchGolden) {
  auto model = load_model(model_dir());
  double worst = 0;
  int forced_lines = 0;
  for (const auto& line : golden_set().jsonl("generate.jsonl")) {
    const auto source_ids = line["source_ids"].get<std::vector<int>>();
    const auto golden_ids = line["generated_ids"].get<std::vector<int>>();
    const std::string label = line["source"].get<std::string>().substr(0, 40);
    ASSERT_EQ(decoder_prompt(*model), std::vector<int>{line["decoder_start_token_id"].get<int>()});
    std::size_t first_near_tie = golden_ids.size();
    for (const auto& step : line["near_tie_steps"]) {
      first_near_tie = std::min(first_near_tie, step.get<std::size_t>());
    }
    GenerateOptions options;
    options.max_new_tokens = line["max_new_tokens"].get<int>();
    options.sampling.temperature = 0;
    std::vector<std::vector<float>> step_logits;
    GenerateCallbacks callbacks;
    callbacks.on_logits = [&](std::span<const float> logits) {
      step_logits.emplace_back(logits.begin(), logits.end());
    };
    const TranslateResult result = translate(*model, source_ids, options, callbacks);
    std::vector<int> ids = result.generation.generated_ids;
    if (result.generation.stop_reason == "eos") ids.push_back(model->generation.eos_token_ids[0]);
    EXPECT_EQ(result.generation.stop_reason == "eos", line["stopped_at_eos"].get<bool>()) << label;
    ASSERT_GE(ids.size(), first_near_tie) << label;
    EXPECT_TRUE(std::equal(golden_ids.begin(), golden_ids.begin() + first_near_tie, ids.begin()))
        << label;
    if (first_near_tie == golden_ids.size()) {
      EXPECT_EQ(result.generation.text, line["generated_text"]) << label;
    } else {
      // Teacher-forced: [start] + golden ids, one token per pass; the logits before each id.
      std::vector<int> forced = decoder_prompt(*model);
      forced.insert(forced.end(), golden_ids.begin(), golden_ids.end() - 1);
      step_logits = decoder_logits(*model, encode_source(*model, source_ids), forced, true);
      ++forced_lines;
    }
    worst = std::max(worst, expect_top5_match(step_logits, line["top5_per_step"], label));
  }
  std::cout << GetParam() << ": worst |top-5 logit - golden| along the translations: " << worst
            << " (" << forced_lines << " teacher-forced past a near tie)\n";
}

// Decoding through the KV cache, one token per pass, gives the logits of one pass over the
// whole target.
TEST_P(Seq2Seq, CachedDecodingEqualsOnePass) {
  auto model = load_model(model_dir());
  const auto line = golden_set().jsonl("generate.jsonl").at(2);
  const auto source_ids = line["source_ids"].get<std::vector<int>>();
  std::vector<int> target = decoder_prompt(*model);
  for (int id : line["generated_ids"]) target.push_back(id);
  const CrossAttentionMemory memory = encode_source(*model, source_ids);
  const auto cached = decoder_logits(*model, memory, target, true);
  const auto whole = decoder_logits(*model, memory, target, false);
  ASSERT_EQ(cached.size(), whole.size());
  for (std::size_t s = 0; s < cached.size(); ++s) {
    const Comparison c =
        compare(cached[s], whole[s], tolerance::kLogitAbsolute, tolerance::kLogitRelative);
    EXPECT_LE(c.worst_ratio, 1.0) << "position " << s << ": worst |Δ| " << c.worst_abs;
  }
}

INSTANTIATE_TEST_SUITE_P(Models, Seq2Seq, testing::Values("tiny-marian-random", "tiny-t5-random"),
                         model_test_name);

}  // namespace
}  // namespace attn::test
