#pragma once

// Checks of a decoder against the goldens of Hugging Face transformers (../shared/golden/NAME):
// last-prompt logits, greedy continuations with their per-step top-5, the hidden state after
// every layer, and cached against uncached generation. Shared by GPT-2 and the other families.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "src/tasks/generate.h"
#include "tests/golden.h"
#include "tests/model_util.h"
#include "tests/tolerances.h"

namespace attn::test {

// The decoder families of issue 8, as folders of ../shared/models with goldens of the same name.
inline auto decoder_family_models() {
  return testing::Values("tiny-llama-brown", "tiny-qwen2-random", "tiny-llama3-random",
                         "tiny-neox-random", "tiny-phi-random", "tiny-bloom-random",
                         "tiny-qwen3-random", "tiny-mistral-swa-random", "tiny-gemma2-random",
                         "tiny-gemma3-random", "tiny-phi3-random", "tiny-phi3-longrope-random",
                         "tiny-phi3-random-bf16");
}

// The ids of the k largest logits, largest first (of equal logits, the lower id first), in one
// pass over the row: k is a handful, the row a vocabulary.
inline std::vector<int> top_ids(std::span<const float> logits, int k) {
  const auto before = [&](int a, int b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  };
  std::vector<int> ids;
  ids.reserve(k + 1);
  for (int id = 0; id < int(logits.size()); ++id) {
    if (int(ids.size()) == k && !before(id, ids.back())) continue;
    ids.insert(std::upper_bound(ids.begin(), ids.end(), id, before), id);
    if (int(ids.size()) > k) ids.pop_back();
  }
  return ids;
}

// Every step's golden top-5 ([[id, logit] x 5] per step): each golden candidate has its golden
// logit within the logit tolerance (tolerance::kLogitAbsolute, kLogitRelative) and sits at the
// same rank, unless a neighbour's golden logit is within twice that bound of it (then float32
// rounding may legitimately swap them).
// Returns the worst |logit - golden|; `label` names the input in failures.
inline double expect_top5_match(const std::vector<std::vector<float>>& step_logits,
                                const nlohmann::json& top5, const std::string& label) {
  double worst = 0;
  EXPECT_EQ(step_logits.size(), top5.size()) << label;
  for (std::size_t s = 0; s < std::min(top5.size(), step_logits.size()); ++s) {
    const std::vector<int> got = top_ids(step_logits[s], 5);
    for (std::size_t rank = 0; rank < top5[s].size(); ++rank) {
      const int want_id = top5[s][rank][0].get<int>();
      const double want_logit = top5[s][rank][1].get<double>();
      const double bound =
          tolerance::kLogitAbsolute + tolerance::kLogitRelative * std::abs(want_logit);
      const double diff = std::abs(double(step_logits[s][want_id]) - want_logit);
      worst = std::max(worst, diff);
      EXPECT_LE(diff, bound) << label << " step " << s;
      if (got[rank] == want_id) continue;
      auto close_to = [&](std::size_t other) {
        return other < top5[s].size() &&
               std::abs(top5[s][other][1].get<double>() - want_logit) <= 2 * bound;
      };
      EXPECT_TRUE(close_to(rank - 1) || close_to(rank + 1))
          << label << " step " << s << " rank " << rank << ": got id " << got[rank] << ", golden "
          << want_id;
    }
  }
  return worst;
}

// Logits (vocab) at every step of a continuation forced to `forced` (teacher forcing), through
// the KV cache: step s sees prompt + forced[0, s).
inline std::vector<std::vector<float>> forced_step_logits(const Model& model,
                                                          std::span<const int> prompt,
                                                          std::span<const int> forced) {
  const ArchSpec& spec = model.spec();
  const int total = int(prompt.size() + forced.size());
  KVCache cache(spec, total, spec.n_layer);
  RunState state(spec, int(prompt.size()), total);
  std::vector<std::vector<float>> steps;
  int n_past = 0;
  std::vector<int> next(prompt.begin(), prompt.end());
  for (std::size_t s = 0; s < forced.size(); ++s) {
    Batch batch;
    batch.add_sequence(next, {}, n_past);
    batch.cache_offset = n_past;
    model.transformer->forward(batch, cache, state);
    const int last = batch.rows() - 1;
    std::vector<float>& logits = steps.emplace_back(spec.vocab_size);
    model.transformer->compute_logits(state, std::span(&last, 1), logits.data());
    n_past += batch.rows();
    next = {forced[s]};
  }
  return steps;
}

inline void expect_logits_match(const std::filesystem::path& model_dir, const GoldenSet& golden) {
  auto model = load_model(model_dir);
  const auto prompts = golden.jsonl("generate.jsonl");
  double worst = 0;
  for (int i = 0; i < 5; ++i) {
    const auto ids = prompts.at(i)["prompt_ids"].get<std::vector<int>>();
    const NpyArray want = golden.npy("logits/prompt" + std::to_string(i) + "_last.npy");
    const std::vector<float> logits = last_logits(*model, ids);
    const Comparison c =
        compare(logits, want.values, tolerance::kLogitAbsolute, tolerance::kLogitRelative);
    worst = std::max(worst, c.worst_abs);
    EXPECT_LE(c.worst_ratio, 1.0) << "prompt " << i << ": logit " << c.worst_index << " is "
                                  << logits[c.worst_index] << ", golden "
                                  << want.values[c.worst_index];
  }
  std::cout << model_dir.filename().string() << ": worst |logit - golden| over 5 prompts: " << worst
            << "\n";
}

// Greedy generation gives the golden ids up to the first near tie (a step whose top-1 and top-2
// logits are within tolerance::kNearTieLogit, where a correct float32 implementation may pick
// either: the golden lists these steps as near_tie_steps); beyond it
// the golden ids are forced and the top-5 of every step still checked.
inline void expect_greedy_matches(const std::filesystem::path& model_dir, const GoldenSet& golden) {
  auto model = load_model(model_dir);
  // The golden decodes with clean_up_tokenization_spaces=False (../shared/golden/README.md);
  // attn decodes as the folder's tokenizer_config.json says, as transformers' decode() does.
  bool cleans_up = false;
  if (std::filesystem::exists(model_dir / "tokenizer_config.json")) {
    const nlohmann::json config = read_json(model_dir / "tokenizer_config.json");
    cleans_up = config.value("clean_up_tokenization_spaces", false);
  }
  double worst_top5 = 0;
  int forced_lines = 0;
  for (const auto& line : golden.jsonl("generate.jsonl")) {
    const auto prompt_ids = line["prompt_ids"].get<std::vector<int>>();
    const auto golden_ids = line["generated_ids"].get<std::vector<int>>();
    std::size_t first_near_tie = golden_ids.size();
    for (const auto& step : line.value("near_tie_steps", nlohmann::json::array())) {
      first_near_tie = std::min(first_near_tie, step.get<std::size_t>());
    }
    GenerateOptions options;
    options.max_new_tokens = line["max_new_tokens"].get<int>();
    options.sampling.temperature = 0;
    options.ignore_eos = true;
    std::vector<std::vector<float>> step_logits;
    GenerateCallbacks callbacks;
    callbacks.on_logits = [&](std::span<const float> logits) {
      step_logits.emplace_back(logits.begin(), logits.end());
    };
    const GenerateResult result = generate(*model, prompt_ids, options, callbacks);
    ASSERT_EQ(result.generated_ids.size(), golden_ids.size());
    // Ids up to and including the near-tie step's predecessor must be the golden ones.
    EXPECT_TRUE(std::equal(golden_ids.begin(), golden_ids.begin() + first_near_tie,
                           result.generated_ids.begin()))
        << "prompt: " << line["prompt"];
    if (first_near_tie == golden_ids.size()) {
      // The streamed text continues the decoded prompt exactly as a decode of the whole
      // sequence does (the prompt's own text may not come back: SentencePiece models turn a
      // newline into a space).
      const std::string full_text = line["full_text"];
      EXPECT_EQ(model->tokenizer->decode(prompt_ids, true) + result.text,
                cleans_up ? clean_up_tokenization(full_text) : full_text)
          << "prompt: " << line["prompt"];
    } else {
      step_logits = forced_step_logits(*model, prompt_ids, golden_ids);
      ++forced_lines;
    }
    worst_top5 = std::max(worst_top5, expect_top5_match(step_logits, line["top5_per_step"],
                                                        line["prompt"].get<std::string>()));
  }
  std::cout << model_dir.filename().string()
            << ": worst |top-5 logit - golden| along the trajectories: " << worst_top5 << " ("
            << forced_lines << " lines teacher-forced past a near tie)\n";
}

// The residual stream after the embeddings, after every layer and after the final norm (the
// set's hidden/ folder).
inline void expect_hidden_states_match(const std::filesystem::path& model_dir,
                                       const GoldenSet& golden) {
  auto model = load_model(model_dir);
  const auto info = golden.json("hidden/info.json");
  const auto ids = info["ids"].get<std::vector<int>>();
  int checked = 0;
  ForwardObserver observer;
  observer.on_hidden = [&](int layer, const float* hidden, int rows) {
    char name[32];
    if (layer < 0) {
      std::snprintf(name, sizeof name, "embeddings.npy");
    } else if (layer == model->spec().n_layer) {
      std::snprintf(name, sizeof name, "final_norm.npy");
    } else {
      std::snprintf(name, sizeof name, "layer_%02d.npy", layer);
    }
    expect_hidden_close(name, std::span(hidden, std::size_t(rows) * model->spec().d_model),
                        golden.npy(std::string("hidden/") + name));
    ++checked;
  };
  const std::vector<float> logits = last_logits(*model, ids, &observer);
  EXPECT_EQ(checked, model->spec().n_layer + 2);
  expect_hidden_close("logits.npy", logits, golden.npy("hidden/logits.npy"));
}

// Generation through the KV cache and by recomputing the whole sequence each step give the same
// ids and logits within the logit tolerance.
// The longest sequence whose cached and uncached passes compute the same in Hugging Face: the
// whole context, except with longrope (Phi-3), where keys cached before the sequence passed
// original_max_position_embeddings keep the short factors (see ../shared/golden/README.md).
inline int cache_consistent_length(const Model& model) {
  int length = model.spec().max_positions;
  for (const RotaryEmbedding& rotary : model.transformer->positions().rotary) {
    if (rotary.scaling == RotaryEmbedding::Scaling::kLongRope) {
      length = std::min(length, rotary.original_max_positions);
    }
  }
  return length;
}

inline void expect_cached_equals_uncached(const std::filesystem::path& model_dir,
                                          std::initializer_list<const char*> prompts) {
  auto model = load_model(model_dir);
  for (const char* prompt : prompts) {
    const auto ids = model->tokenizer->encode(prompt).ids;
    GenerateOptions options;
    options.max_new_tokens = std::min(40, cache_consistent_length(*model) - int(ids.size()));
    options.sampling.temperature = 0;
    options.ignore_eos = true;
    std::vector<std::vector<float>> cached_logits, uncached_logits;
    GenerateCallbacks cached_callbacks, uncached_callbacks;
    cached_callbacks.on_logits = [&](std::span<const float> l) {
      cached_logits.emplace_back(l.begin(), l.end());
    };
    uncached_callbacks.on_logits = [&](std::span<const float> l) {
      uncached_logits.emplace_back(l.begin(), l.end());
    };
    const auto cached = generate(*model, ids, options, cached_callbacks);
    options.use_cache = false;
    const auto uncached = generate(*model, ids, options, uncached_callbacks);
    EXPECT_EQ(cached.generated_ids, uncached.generated_ids) << prompt;
    ASSERT_EQ(cached_logits.size(), uncached_logits.size());
    for (std::size_t s = 0; s < cached_logits.size(); ++s) {
      const Comparison c = compare(cached_logits[s], uncached_logits[s], tolerance::kLogitAbsolute,
                                   tolerance::kLogitRelative);
      EXPECT_LE(c.worst_ratio, 1.0) << prompt << " step " << s << ": worst |Δ| " << c.worst_abs;
    }
  }
}

}  // namespace attn::test
