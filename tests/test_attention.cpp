// Issue 4, attention weights: the library capture and the `attn attention` output against the
// Hugging Face goldens, --attention-out during cached generation against a full run, the
// filters, the rounding, the bertviz and HTML formats (the page rendered by headless
// chromium), and bad input. And the attention of a long prompt in tiles of queries against the
// whole, captured, attention.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>

#include "src/base/error.h"
#include "src/tasks/attention_capture.h"
#include "tests/chromium_util.h"
#include "tests/cli_util.h"
#include "tests/decoder_checks.h"
#include "tests/golden.h"
#include "tests/hostile_util.h"
#include "tests/model_util.h"
#include "tests/tolerances.h"

namespace attn::test {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

// The bound for a golden's weights: tolerance::kAttentionWeight, or the golden's own distance from
// float64 where that is larger (Gemma-2, Gemma-3; see tests/tolerances.h).
double weight_tolerance(const GoldenSet& golden) {
  return std::max(tolerance::kAttentionWeight,
                  golden.float64_distance("attention", "max_abs_dprob"));
}

// Runs `attn attention ARGS -o FILE` and expects success; returns the file's path.
fs::path attention_file(std::vector<std::string> args, const TempDir& scratch,
                        const std::string& name) {
  args.insert(args.begin(), "attention");
  args.insert(args.end(), {"-o", (scratch / name).string()});
  const CommandResult result = run_attn(args);
  EXPECT_EQ(result.exit_status, 0) << describe(result);
  EXPECT_EQ(result.out, "");
  return scratch / name;
}

json attention_json(const std::vector<std::string>& args, const TempDir& scratch,
                    const std::string& name = "out.json") {
  return read_json(attention_file(args, scratch, name));
}

bool python_json_loads(const fs::path& file) {
  const CommandResult result = run_program(
      "/usr/bin/env",
      {"python3", "-c", "import json,sys; json.load(open(sys.argv[1]))", file.string()});
  EXPECT_EQ(result.exit_status, 0) << describe(result);
  return result.exit_status == 0;
}

// The largest |a - b| over two [T][T] matrices, one of them JSON.
double worst_difference(const float* got, const json& want, int n) {
  double worst = 0;
  for (int q = 0; q < n; ++q) {
    for (int k = 0; k < n; ++k) {
      worst = std::max(worst, std::abs(double(got[q * n + k]) - want[q][k].get<double>()));
    }
  }
  return worst;
}

double worst_difference(const json& got, const json& want) {
  double worst = 0;
  EXPECT_EQ(got.size(), want.size());
  for (std::size_t q = 0; q < std::min(got.size(), want.size()); ++q) {
    EXPECT_EQ(got[q].size(), want[q].size());
    for (std::size_t k = 0; k < std::min(got[q].size(), want[q].size()); ++k) {
      worst = std::max(worst, std::abs(got[q][k].get<double>() - want[q][k].get<double>()));
    }
  }
  return worst;
}

// Library capture over every golden input: tokens, every weight of every layer and head, rows
// summing to 1 and (decoders) exact zeros above the diagonal.
void expect_capture_matches_golden(const fs::path& model_dir, const GoldenSet& golden) {
  const double bound = weight_tolerance(golden);
  auto model = load_model(model_dir);
  const ArchSpec& spec = model->spec();
  const AttentionSelection all = select_attention(spec, {});
  double worst = 0, worst_row_sum = 0;
  for (const json& line : golden.jsonl("attention.jsonl")) {
    const Encoding encoding = model->tokenizer->encode(line["text"].get<std::string>());
    ASSERT_EQ(encoding.ids, line["ids"].get<std::vector<int>>()) << line["text"];
    EXPECT_EQ(token_strings(*model->tokenizer, encoding.ids),
              line["tokens"].get<std::vector<std::string>>());
    int heads_seen = 0;
    capture_attention(*model, encoding, all,
                      [&](int layer, int head, const float* probabilities, int n) {
                        ASSERT_EQ(n, int(encoding.ids.size()));
                        const double head_worst =
                            worst_difference(probabilities, line["attentions"][layer][head], n);
                        EXPECT_LE(head_worst, bound)
                            << "layer " << layer << " head " << head << ": " << line["text"];
                        worst = std::max(worst, head_worst);
                        for (int q = 0; q < n; ++q) {
                          double sum = 0;
                          for (int k = 0; k < n; ++k) {
                            sum += probabilities[q * n + k];
                            if (spec.causal && k > q) {
                              ASSERT_EQ(probabilities[q * n + k], 0.0f);
                            }
                          }
                          worst_row_sum = std::max(worst_row_sum, std::abs(sum - 1));
                        }
                        ++heads_seen;
                      });
    EXPECT_EQ(heads_seen, spec.n_layer * spec.n_head);
  }
  EXPECT_LE(worst_row_sum, tolerance::kAttentionRowSum);
  std::cout << model->name() << ": worst |weight - golden| " << worst << ", worst |row sum - 1| "
            << worst_row_sum << "\n";
}

// `attn attention --precision 9` over every golden input: the output parses (nlohmann and
// Python), says what it should and matches the golden.
void expect_cli_matches_golden(const fs::path& model_dir, const GoldenSet& golden) {
  TempDir scratch;
  const double bound = weight_tolerance(golden);
  double worst = 0;
  for (const json& line : golden.jsonl("attention.jsonl")) {
    const json doc = attention_json(
        {"-m", model_dir.string(), line["text"].get<std::string>(), "--precision", "9"}, scratch);
    EXPECT_TRUE(python_json_loads(scratch / "out.json"));
    EXPECT_EQ(doc["model"], model_dir.filename().string());
    EXPECT_EQ(doc["tokens"], line["tokens"]);
    EXPECT_EQ(doc["token_ids"], line["ids"]);
    const auto shape = line["shape"].get<std::vector<int>>();
    EXPECT_EQ(doc["n_layers"], shape[0]);
    EXPECT_EQ(doc["n_heads"], shape[1]);
    ASSERT_EQ(doc["attention"].size(), std::size_t(shape[0]));
    for (int layer = 0; layer < shape[0]; ++layer) {
      const json& entry = doc["attention"][layer];
      EXPECT_EQ(entry["layer"], layer);
      ASSERT_EQ(entry["heads"].size(), std::size_t(shape[1]));
      for (int head = 0; head < shape[1]; ++head) {
        EXPECT_EQ(entry["heads"][head]["head"], head);
        const double head_worst =
            worst_difference(entry["heads"][head]["weights"], line["attentions"][layer][head]);
        EXPECT_LE(head_worst, bound) << "layer " << layer << " head " << head;
        worst = std::max(worst, head_worst);
      }
    }
  }
  std::cout << model_dir.filename().string() << " (CLI, --precision 9): worst |weight - golden| "
            << worst << "\n";
}

// The final hidden states (rows, d_model) of `ids` through `stack`, with every head's attention
// captured (one tile of all queries over all keys) or not (tiles of kQueryTile queries, a causal
// tile stopping at its last query's key).
// With key_block, a tile of queries over more keys than that takes them in blocks of key_block,
// with the softmax online.
std::vector<float> final_hidden(const Transformer& stack, std::span<const int> ids, bool capture,
                                int key_block = kKeyBlock) {
  const ArchSpec& spec = stack.spec();
  const int n = int(ids.size());
  KVCache cache(spec, n, spec.n_layer);
  RunState state(spec, n, n, key_block);
  Batch batch;
  batch.add_sequence(ids);
  std::vector<float> hidden;
  ForwardObserver observer;
  observer.on_hidden = [&](int, const float* rows_hidden, int rows) {
    hidden.assign(rows_hidden, rows_hidden + long(rows) * spec.d_model);  // the last call stays
  };
  if (capture) {
    observer.wants_attention = [](int, int) { return true; };
    observer.on_attention = [](int, int, int, const float*, int, int) {};
  }
  stack.forward(batch, cache, state, &observer);
  return hidden;
}

// Calls check(name, stack, ids) for a prompt of several tiles (kTilesPrompt ids) through the stacks
// of the attention tests: causal and bidirectional, windows of a decoder (Mistral, Gemma-2) and an
// encoder (ModernBERT), ALiBi (BLOOM), T5's relative position bias (its encoder).
constexpr int kTilesPrompt = 2 * kQueryTile + 22;
void for_each_attention_family(
    const std::function<void(const char*, const Transformer&, const std::vector<int>&)>& check) {
  for (const char* name :
       {"tiny-llama-brown", "tiny-mistral-swa-random", "tiny-gemma2-random", "tiny-bloom-random",
        "tiny-bert-brown", "tiny-modernbert-random", "tiny-t5-random"}) {
    const auto model = load_model(shared_dir() / "models" / name);
    const Transformer& stack = model->encoder ? *model->encoder : *model->transformer;
    std::vector<int> ids(kTilesPrompt);
    for (int i = 0; i < kTilesPrompt; ++i) ids[i] = 5 + (i * 37) % (stack.spec().vocab_size - 5);
    check(name, stack, ids);
  }
}

// A prompt of several tiles gives the same hidden states, bit for bit, in tiles as whole.
TEST(AttentionTiles, EqualTheWholeAttention) {
  ATTN_REQUIRE_SHARED();
  for_each_attention_family(
      [](const char* name, const Transformer& stack, const std::vector<int>& ids) {
        const int n = int(ids.size());
        const std::vector<float> tiled = final_hidden(stack, ids, false);
        const std::vector<float> whole = final_hidden(stack, ids, true);
        ASSERT_EQ(tiled.size(), std::size_t(n) * stack.spec().d_model) << name;
        for (std::size_t i = 0; i < tiled.size(); ++i) {
          ASSERT_EQ(tiled[i], whole[i]) << name << ": element " << i;
        }
      });
}

// Keys in blocks, with the softmax online, give the hidden states of the one-tile softmax to
// float rounding, in the same families (blocks of 16 keys over 150: ten blocks, some of them
// skipped by windows, masked in part by the causal mask).
TEST(AttentionKeyBlocks, EqualTheWholeAttentionToFloatRounding) {
  ATTN_REQUIRE_SHARED();
  for_each_attention_family([](const char* name, const Transformer& stack,
                               const std::vector<int>& ids) {
    const int key_block = 16;
    const std::vector<float> blocked = final_hidden(stack, ids, false, key_block);
    const std::vector<float> whole = final_hidden(stack, ids, true);
    ASSERT_EQ(blocked.size(), whole.size()) << name;
    double worst = 0, largest = 0;
    for (std::size_t i = 0; i < blocked.size(); ++i) {
      worst = std::max(worst, std::abs(double(blocked[i]) - whole[i]));
      largest = std::max(largest, std::abs(double(whole[i])));
    }
    std::cout << name << ": worst |blocked - whole| " << worst << " of largest " << largest << "\n";
    EXPECT_LE(worst, tolerance::kKeyBlocksOfLargest * largest) << name;
    EXPECT_GT(worst, 0) << name << ": the blocks never ran (their sums differ somewhere)";
  });
}

TEST(AttentionGolden, TinyGpt2Capture) {
  ATTN_REQUIRE_SHARED();
  expect_capture_matches_golden(shipped_model("tiny-gpt2-brown"), GoldenSet("tiny-gpt2-brown"));
}

TEST(AttentionGolden, TinyBertCapture) {
  ATTN_REQUIRE_SHARED();
  expect_capture_matches_golden(shipped_model("tiny-bert-brown"), GoldenSet("tiny-bert-brown"));
}

TEST(AttentionGolden, TinyGpt2Cli) {
  ATTN_REQUIRE_SHARED();
  expect_cli_matches_golden(shipped_model("tiny-gpt2-brown"), GoldenSet("tiny-gpt2-brown"));
}

TEST(AttentionGolden, TinyBertCli) {
  ATTN_REQUIRE_SHARED();
  expect_cli_matches_golden(shipped_model("tiny-bert-brown"), GoldenSet("tiny-bert-brown"));
}

// Issue 8's decoder families: capture and CLI against their goldens (RoPE, ALiBi, grouped-query
// attention, parallel blocks).
class FamilyAttentionGolden : public testing::TestWithParam<const char*> {
 protected:
  void SetUp() override { ATTN_REQUIRE_SHARED(); }
  fs::path model_dir() const { return shared_dir() / "models" / GetParam(); }
  GoldenSet golden() const { return GoldenSet(GetParam()); }
};

TEST_P(FamilyAttentionGolden, Capture) { expect_capture_matches_golden(model_dir(), golden()); }

TEST_P(FamilyAttentionGolden, Cli) { expect_cli_matches_golden(model_dir(), golden()); }

INSTANTIATE_TEST_SUITE_P(Shared, FamilyAttentionGolden, decoder_family_models(), model_test_name);

// Issue 9's encoder families: capture and CLI against their goldens (RoBERTa's position offset,
// ALBERT's projected embeddings and shared layers).
class EncoderAttentionGolden : public testing::TestWithParam<const char*> {
 protected:
  void SetUp() override { ATTN_REQUIRE_SHARED(); }
  fs::path model_dir() const { return shared_dir() / "models" / GetParam(); }
  GoldenSet golden() const { return GoldenSet(GetParam()); }
};

TEST_P(EncoderAttentionGolden, Capture) { expect_capture_matches_golden(model_dir(), golden()); }

TEST_P(EncoderAttentionGolden, Cli) { expect_cli_matches_golden(model_dir(), golden()); }

INSTANTIATE_TEST_SUITE_P(Shared, EncoderAttentionGolden,
                         testing::Values("tiny-roberta-random", "tiny-distilbert-random",
                                         "tiny-albert-random", "tiny-xlmr-random",
                                         "tiny-mpnet-random", "tiny-modernbert-random"),
                         model_test_name);

TEST(AttentionGolden, RandomGpt2FullSize) {
  ATTN_REQUIRE_SHARED();
  const auto dir = random_model("gpt2");
  if (dir.empty())
    ATTN_SKIP_UNLESS_CI("full-size random GPT-2 not generated (python3-numpy missing?)");
  const GoldenSet golden("gpt2-124M-random");
  expect_capture_matches_golden(dir, golden);
  expect_cli_matches_golden(dir, golden);
}

TEST(AttentionGolden, RandomBertFullSize) {
  ATTN_REQUIRE_SHARED();
  const auto dir = random_model("bert");
  if (dir.empty())
    ATTN_SKIP_UNLESS_CI("full-size random BERT not generated (python3-numpy missing?)");
  const GoldenSet golden("bert-base-random");
  expect_capture_matches_golden(dir, golden);
  expect_cli_matches_golden(dir, golden);
}

TEST(AttentionSelection, ParsesListsAndRanges) {
  EXPECT_EQ(parse_index_list("0,5-7", 12, "--layers", "layer"), (std::vector<int>{0, 5, 6, 7}));
  EXPECT_EQ(parse_index_list("", 3, "--layers", "layer"), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(parse_index_list("3, 1,1-2,2-2", 4, "--heads", "head"), (std::vector<int>{1, 2, 3}));
  for (const char* bad : {"3-1", "x", "1,", ",", "-1", "1-", "1.5", "1-2-3", "12", "0-12", "+1"}) {
    try {
      parse_index_list(bad, 12, "--layers", "layer");
      ADD_FAILURE() << "'" << bad << "' was accepted";
    } catch (const UsageError& e) {
      EXPECT_TRUE(std::string(e.what()).starts_with("--layers: ")) << e.what();
    }
  }
}

TEST(AttentionSelection, CaptureReportsExactlyTheSelectedHeadsInOrder) {
  auto model = load_model(shipped_model("tiny-bert-brown"));
  const Encoding encoding = model->tokenizer->encode("The cat sat.");
  const AttentionSelection selection =
      select_attention(model->spec(), {.layers = "3,1", .heads = "2,0"});
  std::vector<std::pair<int, int>> seen;
  capture_attention(*model, encoding, selection, [&](int layer, int head, const float*, int) {
    seen.emplace_back(layer, head);
  });
  EXPECT_EQ(seen, (std::vector<std::pair<int, int>>{{1, 0}, {1, 2}, {3, 0}, {3, 2}}));
}

TEST(AttentionFormat, FormatsWeights) {
  auto format = [](float weight, int precision) {
    char text[16];
    return std::string(text, format_weight(text, weight, precision));
  };
  EXPECT_EQ(format(0.25f, 4), "0.25");
  EXPECT_EQ(format(1.0f, 4), "1");
  EXPECT_EQ(format(0.0f, 4), "0");
  EXPECT_EQ(format(0.00004f, 4), "0");
  EXPECT_EQ(format(0.99996f, 4), "1");
  EXPECT_EQ(format(std::nextafter(1.0f, 2.0f), 9), "1");
  EXPECT_EQ(format(0.123456789f, 9), "0.123456791");  // the float is 0.1234567910432...
  EXPECT_EQ(format(0.5f, 1), "0.5");
  EXPECT_THROW(format(NAN, 4), Error);
  // Every rounding is within half a unit of the last digit.
  std::mt19937 random(1);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  for (int i = 0; i < 100000; ++i) {
    const float weight = uniform(random);
    const int precision = 1 + i % 9;
    EXPECT_LE(std::abs(std::stod(format(weight, precision)) - weight),
              0.5 * std::pow(10.0, -precision) * (1 + 1e-9))
        << weight << " at " << precision;
  }
}

// The default precision of the CLI: rows sum to 1 within T 10^-precision after rounding,
// decoders write exact zeros above the diagonal, and Python reads the file.
TEST(AttentionCli, RoundedRowsAndCausalZeros) {
  TempDir scratch;
  const std::string text =
      "In the market place Jews have in fact under various circumstances been accepted.";
  for (const char* model : {"tiny-gpt2-brown", "tiny-bert-brown"}) {
    for (int precision : {2, 4}) {
      const json doc = attention_json(
          {"-m", shipped_model(model).string(), text, "--precision", std::to_string(precision)},
          scratch);
      EXPECT_TRUE(python_json_loads(scratch / "out.json"));
      const bool causal = doc["model_type"] == "gpt2";
      const double n = double(doc["tokens"].size());
      for (const json& layer : doc["attention"]) {
        for (const json& head : layer["heads"]) {
          const json& weights = head["weights"];
          ASSERT_EQ(weights.size(), doc["tokens"].size());
          for (std::size_t q = 0; q < weights.size(); ++q) {
            double sum = 0;
            for (std::size_t k = 0; k < weights[q].size(); ++k) {
              sum += weights[q][k].get<double>();
              if (causal && k > q) {
                ASSERT_EQ(weights[q][k].get<double>(), 0.0);
              }
            }
            EXPECT_LE(std::abs(sum - 1), n * std::pow(10.0, -precision))
                << model << " layer " << layer["layer"] << " head " << head["head"] << " row " << q;
          }
        }
      }
    }
  }
}

// Windowed layers (issue 24): the document names each layer's window, and every key outside a
// query's window has weight exactly 0 (the picture greys it); a model without windows has no
// "windows".
TEST(AttentionCli, WindowedLayersAreNamedAndTheirHiddenKeysAreZero) {
  ATTN_REQUIRE_SHARED();
  TempDir scratch;
  const std::string text =
      "In the market place Jews have in fact under various circumstances been accepted.";
  const std::pair<const char*, json> models[] = {{"tiny-mistral-swa-random", json{8, 8, 8}},
                                                 {"tiny-gemma2-random", json{8, 0, 8, 0}},
                                                 {"tiny-modernbert-random", json{0, 8, 8, 0}}};
  for (const auto& [model, windows] : models) {
    const json doc = attention_json(
        {"-m", (shared_dir() / "models" / model).string(), text, "--precision", "9"}, scratch);
    ASSERT_EQ(doc["windows"], windows) << model;
    const bool causal = doc["causal"];
    EXPECT_EQ(causal, std::string(model) != "tiny-modernbert-random");
    int hidden = 0;
    for (const json& layer : doc["attention"]) {
      const int window = windows[layer["layer"].get<int>()];
      for (const json& head : layer["heads"]) {
        const json& weights = head["weights"];
        for (int q = 0; q < int(weights.size()); ++q) {
          for (int k = 0; k < int(weights[q].size()); ++k) {
            const bool outside =
                window > 0 && (causal ? k <= q - window : std::abs(k - q) > window / 2);
            if (!outside) continue;
            ++hidden;
            ASSERT_EQ(weights[q][k].get<double>(), 0.0) << model << " query " << q << " key " << k;
          }
        }
      }
    }
    EXPECT_GT(hidden, 0) << model;
  }
  const json plain =
      attention_json({"-m", shipped_model("tiny-gpt2-brown").string(), text}, scratch);
  EXPECT_FALSE(plain.contains("windows"));
}

TEST(AttentionCli, FiltersSelectExactlyWhatTheySay) {
  TempDir scratch;
  const std::string model = shipped_model("tiny-gpt2-brown").string();
  const std::string text = "The cat sat on the mat.";
  const json full = attention_json({"-m", model, text}, scratch, "full.json");
  const json part =
      attention_json({"-m", model, text, "--layers", "3,1", "--heads", "0,2-3"}, scratch);
  EXPECT_EQ(part["tokens"], full["tokens"]);
  EXPECT_EQ(part["n_layers"], 4);
  ASSERT_EQ(part["attention"].size(), 2u);
  for (std::size_t l = 0; l < 2; ++l) {
    const int layer = l == 0 ? 1 : 3;
    EXPECT_EQ(part["attention"][l]["layer"], layer);
    const json& heads = part["attention"][l]["heads"];
    ASSERT_EQ(heads.size(), 3u);
    for (std::size_t h = 0; h < 3; ++h) {
      const int head = std::vector<int>{0, 2, 3}[h];
      EXPECT_EQ(heads[h]["head"], head);
      EXPECT_EQ(heads[h]["weights"], full["attention"][layer]["heads"][head]["weights"]);
    }
  }
}

TEST(AttentionCli, WritesToStandardOutputWithoutOutputFile) {
  const CommandResult result = run_attn({"attention", "-m", shipped_model("tiny-bert-brown"),
                                         "Hello there.", "--layers", "0", "--heads", "0"});
  ASSERT_EQ(result.exit_status, 0) << describe(result);
  const json doc = json::parse(result.out);
  EXPECT_EQ(doc["tokens"], (json{"[CLS]", "hello", "there", ".", "[SEP]"}));
  EXPECT_EQ(doc["attention"][0]["heads"][0]["weights"].size(), 5u);
}

TEST(AttentionCli, DefaultModelIsTinyGpt2) {
  const CommandResult result = run_attn({"attention", "Hello", "--layers", "0", "--heads", "0"});
  ASSERT_EQ(result.exit_status, 0) << describe(result);
  EXPECT_EQ(json::parse(result.out)["model"], "tiny-gpt2-brown");
}

TEST(AttentionCli, BertSentencePair) {
  TempDir scratch;
  auto model = load_model(shipped_model("tiny-bert-brown"));
  const json doc = attention_json({"-m", shipped_model("tiny-bert-brown").string(), "The cat sat.",
                                   "--pair", "It was happy.", "--precision", "9"},
                                  scratch);
  EXPECT_EQ(doc["pair"], "It was happy.");
  EXPECT_EQ(doc["tokens"],
            (json{"[CLS]", "the", "cat", "sat", ".", "[SEP]", "it", "was", "happy", ".", "[SEP]"}));
  EXPECT_EQ(doc["type_ids"], (json{0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1}));
  // The segments reach the model: the same ids as one segment attend differently.
  Encoding encoding = model->tokenizer->encode("The cat sat.", "It was happy.");
  const AttentionSelection last = select_attention(model->spec(), {.layers = "3", .heads = "0"});
  double pair_difference = 0, single_difference = 0;
  const json& cli_weights = doc["attention"][3]["heads"][0]["weights"];
  capture_attention(*model, encoding, last, [&](int, int, const float* probabilities, int n) {
    pair_difference = worst_difference(probabilities, cli_weights, n);
  });
  std::fill(encoding.type_ids.begin(), encoding.type_ids.end(), 0);
  capture_attention(*model, encoding, last, [&](int, int, const float* probabilities, int n) {
    single_difference = worst_difference(probabilities, cli_weights, n);
  });
  EXPECT_LE(pair_difference, 1e-6);
  EXPECT_GT(single_difference, 1e-4);
}

TEST(AttentionCli, BertvizLayout) {
  TempDir scratch;
  const std::string model = shipped_model("tiny-bert-brown").string();
  const std::string text = "The cat sat on the mat.";
  const json ours = attention_json({"-m", model, text, "--layers", "1-2", "--heads", "3"}, scratch);
  const json bertviz =
      attention_json({"-m", model, text, "--layers", "1-2", "--heads", "3", "--format", "bertviz"},
                     scratch, "bertviz.json");
  ASSERT_EQ(bertviz["attention"].size(), 1u);
  const json& view = bertviz["attention"][0];
  EXPECT_EQ(view["name"], "All");
  EXPECT_EQ(view["left_text"], ours["tokens"]);
  EXPECT_EQ(view["right_text"], ours["tokens"]);
  ASSERT_EQ(view["attn"].size(), 2u);
  for (int l = 0; l < 2; ++l) {
    ASSERT_EQ(view["attn"][l].size(), 1u);
    EXPECT_EQ(view["attn"][l][0], ours["attention"][l]["heads"][0]["weights"]);
  }
}

// The JSON document inside the page, which its script reads.
json embedded_document(const std::string& html) {
  const std::string open = R"(<script type="application/json" id="attention-data">)";
  const std::size_t begin = html.find(open);
  const std::size_t end = html.find("</script>", begin);
  EXPECT_NE(begin, std::string::npos);
  return json::parse(html.substr(begin + open.size(), end - begin - open.size()));
}

TEST(AttentionHtml, EmbedsTheJsonDocumentSafely) {
  TempDir scratch;
  const std::string model = shipped_model("tiny-gpt2-brown").string();
  const std::string text = "a</script><b>x & y";
  const json ours = attention_json({"-m", model, text, "--heads", "1"}, scratch);
  const std::string html = read_file(attention_file(
      {"-m", model, text, "--heads", "1", "--format", "html"}, scratch, "page.html"));
  EXPECT_EQ(embedded_document(html), ours);
  EXPECT_EQ(html.find("http://"), std::string::npos) << "the page must not load anything";
  EXPECT_EQ(html.find("https://"), std::string::npos) << "the page must not load anything";
}

TEST(AttentionHtml, RendersTokensAndHeatmapInChromium) {
  const std::string chromium = find_chromium();
  if (chromium.empty()) ATTN_SKIP_UNLESS_CI("chromium not installed (apt-get install chromium)");
  TempDir scratch;
  for (const char* model : {"tiny-bert-brown", "tiny-gpt2-brown"}) {
    const std::string text = "The cat sat on the mat, a</script> & <b>bold</b>.";
    const fs::path page = attention_file(
        {"-m", shipped_model(model).string(), text, "--layers", "1-2", "--format", "html"}, scratch,
        "page.html");
    const json tokens = embedded_document(read_file(page))["tokens"];
    const CommandResult result = run_chromium(
        chromium, "file://" + page.string() + "#layer=2&head=3&query=4", {"--dump-dom"});
    ASSERT_EQ(result.exit_status, 0) << describe(result);
    const std::string& dom = result.out;
    // The script built one element per token, in order, showing it as text (its piece in the
    // tooltip), and marked the query.
    std::size_t from = 0;
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      const std::regex span("<span class=\"token( active)?\" data-index=\"" + std::to_string(i) +
                            "\" title=\"([^\"]*)\"[^>]*>([^<]*)</span>");
      std::smatch match;
      const std::string rest = dom.substr(from);
      ASSERT_TRUE(std::regex_search(rest, match, span)) << model << ": no element for token " << i;
      const std::string piece = tokens[i].get<std::string>();
      EXPECT_EQ(match[3].str(), html_escape(shown_token(piece))) << model;
      if (piece.find_first_of("<>&") == std::string::npos) {
        EXPECT_NE(match[2].str().find("piece &quot;" + piece + "&quot;"), std::string::npos)
            << model << ": " << match[2];
      }
      EXPECT_EQ(match[1].matched, i == 4) << model << ": token " << i;
      from += match.position(0) + match.length(0);
    }
    EXPECT_NE(dom.find("layer 2 · head 3 · query 4"), std::string::npos) << model;
    EXPECT_NE(dom.find("<option value=\"0\">layer 1</option>"), std::string::npos) << model;
    EXPECT_EQ(dom.find("<option value=\"2\">layer"), std::string::npos) << "only layers 1-2";
    // Row and column labels around the map, one per token.
    const std::regex label("class=\"(query|key)-label");
    EXPECT_EQ(
        std::distance(std::sregex_iterator(dom.begin(), dom.end(), label), std::sregex_iterator()),
        2 * long(tokens.size()))
        << model;
  }
}

// tiny-gpt2-brown's whole context, 512 tokens: prose with spaces, newlines, a tab, accents, an
// emoji and curly quotes split across tokens.
std::string text_of_512_tokens() {
  const std::string first_half =
      "The jury said it did find that many of Georgia's registration and election laws are "
      "outmoded or inadequate and often ambiguous.\n\tIt recommended that Fulton legislators act "
      "to have these laws studied and revised to the end of modernizing and improving them.  The "
      "grand jury commented on a number of other topics, among them the Atlanta ";
  std::string text = "Café naïve 😂 “quoted”   three spaces.\n";
  for (int i = 0; i < 5; ++i) {
    text += first_half +
            "and Fulton County purchasing departments which it said are well operated and follow "
            "generally accepted practices.\n\n";
  }
  return text + first_half + "purchasing departments.";
}

// Run after the page's script: for every layer and head, first under the colour scale the page
// opened with ("default"), then under "max" and "p99", the legend's darkest weight and the red
// channel of the heat map's row of the address's query, in <pre id="probe">.
constexpr int kProbedRow = 500;
constexpr const char* kRowProbe = R"({
  const row = Number(new URLSearchParams(location.hash.slice(1)).get("query"));
  const canvas = document.getElementById("heatmap");
  const choose = (id, value) => {
    const select = document.getElementById(id);
    select.value = value;
    select.dispatchEvent(new Event("change"));
  };
  const found = [];
  for (const scales of [["default"], ["max", "p99"]]) {
    for (let layer = 0; layer < document.getElementById("layer-select").length; layer++) {
      choose("layer-select", layer);
      for (let head = 0; head < document.getElementById("head-select").length; head++) {
        choose("head-select", head);
        for (const scale of scales) {
          if (scale !== "default") choose("scale-select", scale);
          const data = canvas.getContext("2d").getImageData(0, row, canvas.width, 1).data;
          found.push({layer, head, scale,
                      legend: document.getElementById("legend-max").textContent,
                      red: Array.from({length: canvas.width}, (_, k) => data[4 * k])});
        }
      }
    }
  }
  const probe = document.createElement("pre");
  probe.id = "probe";
  probe.textContent = JSON.stringify(found);
  document.body.appendChild(probe);
})";

// The 99th percentile (nearest rank) of a causal head's weights on or below the diagonal (those
// its queries see), as the page's legend writes it.
std::string percentile_99(const json& weights) {
  std::vector<double> seen;
  for (std::size_t q = 0; q < weights.size(); ++q) {
    for (std::size_t k = 0; k <= q; ++k) seen.push_back(weights[q][k].get<double>());
  }
  std::sort(seen.begin(), seen.end());
  const std::size_t rank = std::size_t(std::ceil(99.0 / 100.0 * double(seen.size())));
  char text[32];
  std::snprintf(text, sizeof text, "%.4f", seen[std::max<std::size_t>(rank, 1) - 1]);
  return text;
}

// The labels of one kind ("query" or "key") placed on the grid (not the query's own, added when
// it has none): index, text, and offset along the map (top or left) and line height in pixels.
struct PlacedLabel {
  int index;
  std::string text;
  double offset;
  double line;
};
std::vector<PlacedLabel> placed_labels(const std::string& dom, const std::string& kind) {
  const std::regex label("<div class=\"" + kind + "-label( active)?\"([^>]*)>([^<]*)</div>");
  const std::regex index(" data-index=\"(\\d+)\"");
  const std::regex place("line-height: ([\\d.]+)px; (?:top|left): ([\\d.]+)px;");
  std::vector<PlacedLabel> labels;
  for (auto it = std::sregex_iterator(dom.begin(), dom.end(), label); it != std::sregex_iterator();
       ++it) {
    const std::string attributes = (*it)[2];
    std::smatch i, p;
    if (!std::regex_search(attributes, i, index) || !std::regex_search(attributes, p, place)) {
      ADD_FAILURE() << "a " << kind << " label without a place: " << attributes;
      continue;
    }
    labels.push_back({std::stoi(i[1]), (*it)[3], std::stod(p[2]), std::stod(p[1])});
  }
  return labels;
}

// Issue 25: the page at 512 tokens loads without script errors, shows the tokens as readable
// text (no byte stand-ins, spaces as a mark), keeps its labels apart, and gives a late row of a
// long causal text contrast: under the default colour scale every head's row 500 has its
// strongest key in the darkest colour and more keys than one visibly coloured, where against the
// head's largest weight (the first query's 1, the page's former scale) the row is near white.
TEST(AttentionHtml, ReadableAt512Tokens) {
  const std::string chromium = find_chromium();
  if (chromium.empty()) ATTN_SKIP_UNLESS_CI("chromium not installed (apt-get install chromium)");
  TempDir scratch;
  const fs::path page = attention_file(
      {"-m", shipped_model("tiny-gpt2-brown").string(), text_of_512_tokens(), "--format", "html"},
      scratch, "page.html");
  std::string html = read_file(page);
  const json document = embedded_document(html);
  const json& tokens = document["tokens"];
  ASSERT_EQ(tokens.size(), 512u);
  html = with_error_probe(html);
  html.insert(html.rfind("</body>"), std::string("<script>") + kRowProbe + "</script>\n");
  write_file(page, html);
  const CommandResult result = run_chromium(
      chromium, "file://" + page.string() + "#layer=2&head=1&query=" + std::to_string(kProbedRow),
      {"--dump-dom"});
  ASSERT_EQ(result.exit_status, 0) << describe(result);
  // The DOM without the document (18 MB), which the searches below need not read.
  std::string dom = result.out;
  const std::size_t data = dom.find("<script type=\"application/json\"");
  ASSERT_NE(data, std::string::npos);
  dom.erase(data, dom.find("</script>", data) - data);
  EXPECT_EQ(dom.find("data-errors"), std::string::npos) << dom.substr(0, dom.find("<body"));

  // Readable tokens: the strip, the summary and the labels.
  const std::regex span("<span class=\"token[^\"]*\" data-index=\"\\d+\"[^>]*>([^<]*)</span>");
  std::vector<std::string> shown;
  for (auto it = std::sregex_iterator(dom.begin(), dom.end(), span); it != std::sregex_iterator();
       ++it) {
    shown.push_back((*it)[1]);
  }
  ASSERT_EQ(shown.size(), 512u);
  const std::vector<PlacedLabel> rows = placed_labels(dom, "query");
  const std::vector<PlacedLabel> columns = placed_labels(dom, "key");
  std::vector<std::string> labels = shown;
  for (const auto* placed : {&rows, &columns}) {
    for (const PlacedLabel& label : *placed) labels.push_back(label.text);
  }
  long spaces = 0;
  for (const std::string& label : labels) {
    for (const char* stand_in : {"Ġ", "Ċ", "ĉ", "Ã"}) {
      EXPECT_EQ(label.find(stand_in), std::string::npos) << label;
    }
    spaces += label.find("␣") != std::string::npos;
  }
  EXPECT_GT(spaces, long(labels.size()) / 2);
  for (const char* token : {"␣naïve", "é", "⏎", "⇥", "␣"}) {
    EXPECT_NE(std::find(shown.begin(), shown.end(), token), shown.end()) << token;
  }
  const std::string query = shown_token(tokens[kProbedRow].get<std::string>());
  EXPECT_NE(dom.find(" · query " + std::to_string(kProbedRow) + " \"" + query + "\"</p>"),
            std::string::npos);
  // At 1-pixel cells (the fit at 512 tokens): labels a line apart at least (every 12th token),
  // in order, within the map's 512 pixels from near one end to near the other, and the query's
  // own.
  for (const auto* placed : {&rows, &columns}) {
    ASSERT_GE(placed->size(), 512u / 13) << "too few labels to find one's way";
    ASSERT_LT(placed->size(), 512u) << "labels at 1-pixel cells must be thinned out";
    EXPECT_LT(placed->front().index, 13);
    EXPECT_GT(placed->back().index, 512 - 26);
    for (std::size_t i = 0; i < placed->size(); ++i) {
      const PlacedLabel& label = (*placed)[i];
      EXPECT_GE(label.offset, 0) << label.index;
      EXPECT_LE(label.offset + label.line, 512) << label.index;
      if (i == 0) continue;
      const PlacedLabel& before = (*placed)[i - 1];
      EXPECT_GT(label.index, before.index);
      EXPECT_GE(label.offset - before.offset, label.line)
          << "labels " << before.index << " and " << label.index << " overlap";
    }
  }
  EXPECT_NE(dom.find("<div class=\"query-label extra active\" data-index=\"" +
                     std::to_string(kProbedRow) + "\""),
            std::string::npos);

  // The colours of the query's row, head by head.
  const std::size_t open = dom.find("<pre id=\"probe\">");
  ASSERT_NE(open, std::string::npos);
  const json found = json::parse(dom.substr(open + 16, dom.find("</pre>", open) - open - 16));
  ASSERT_EQ(found.size(), 4u * 4u * 3u);
  for (const json& head : found) {
    const std::string where = "layer " + head["layer"].dump() + ", head " + head["head"].dump() +
                              ", scale " + head["scale"].get<std::string>();
    const json& red = head["red"];
    ASSERT_EQ(red.size(), 512u) << where;
    // Darkness: 0 for white, 1 for the darkest blue (red 8).
    double darkest = 0;
    long coloured = 0;
    for (int k = 0; k < 512; ++k) {
      const double darkness = (255.0 - red[k].get<double>()) / (255 - 8);
      if (k > kProbedRow) {
        EXPECT_EQ(darkness, 0) << where << ": key " << k << " is after the query";
        continue;
      }
      darkest = std::max(darkest, darkness);
      coloured += darkness >= 0.25;
    }
    if (head["scale"] == "default") {
      EXPECT_GE(darkest, 0.95) << where << ": the row's strongest key is not strongly coloured";
      EXPECT_GE(coloured, 10) << where << ": the row is near white";
    } else if (head["scale"] == "max") {
      // What the checks above reject: the row against the head's largest weight.
      EXPECT_LT(darkest, 0.1) << where;
    } else {
      const json& weights = document["attention"][head["layer"].get<int>()]["heads"]
                                    [head["head"].get<int>()]["weights"];
      EXPECT_EQ(head["legend"], percentile_99(weights)) << where;
    }
  }
}

// The CLI's failures: one line on stderr, exit status 2 for a bad command line, 1 otherwise,
// and no output file (not even a partial or temporary one) left behind.
class AttentionBadInput : public ::testing::Test {
 protected:
  CommandResult run(std::vector<std::string> args) {
    args.insert(args.begin(), "attention");
    const FolderSnapshot before = snapshot(scratch_.path());
    CommandResult result = run_attn(args);
    EXPECT_EQ(changed_files(before, snapshot(scratch_.path())), std::vector<std::string>());
    return result;
  }
  std::string output() const { return (scratch_ / "out.json").string(); }

  TempDir scratch_;
  const std::string gpt2_ = shipped_model("tiny-gpt2-brown").string();
};

TEST_F(AttentionBadInput, LayerOutOfRange) {
  expect_clean_failure(run({"-m", gpt2_, "Hi", "--layers", "4", "-o", output()}), kUsageError,
                       {"--layers", "layer 4 is out of range", "4 layers"});
}

TEST_F(AttentionBadInput, HeadOutOfRange) {
  expect_clean_failure(run({"-m", gpt2_, "Hi", "--heads", "0,7", "-o", output()}), kUsageError,
                       {"--heads", "head 7 is out of range", "4 heads"});
}

TEST_F(AttentionBadInput, ReversedRange) {
  expect_clean_failure(run({"-m", gpt2_, "Hi", "--layers", "3-1", "-o", output()}), kUsageError,
                       {"--layers", "'3-1'", "reversed"});
}

TEST_F(AttentionBadInput, NotAnIndex) {
  expect_clean_failure(run({"-m", gpt2_, "Hi", "--heads", "x", "-o", output()}), kUsageError,
                       {"--heads", "'x'", "not a head index"});
}

TEST_F(AttentionBadInput, PrecisionOutOfRange) {
  for (const char* precision : {"0", "10"}) {
    expect_clean_failure(run({"-m", gpt2_, "Hi", "--precision", precision, "-o", output()}),
                         kUsageError, {"--precision"});
  }
}

TEST_F(AttentionBadInput, UnknownFormat) {
  expect_clean_failure(run({"-m", gpt2_, "Hi", "--format", "xml", "-o", output()}), kUsageError,
                       {"--format", "xml"});
}

TEST_F(AttentionBadInput, PairOnDecoder) {
  expect_clean_failure(run({"-m", gpt2_, "Hi", "--pair", "There", "-o", output()}), kUsageError,
                       {"--pair", "decoder"});
}

TEST_F(AttentionBadInput, TextLongerThanContext) {
  std::string text;
  for (int i = 0; i < 600; ++i) text += " the";
  expect_clean_failure(run({"-m", gpt2_, text, "-o", output()}), kBadInput,
                       {"argument: 600 tokens, more than the model's context of 512\n"});
}

TEST_F(AttentionBadInput, UnwritableOutputPath) {
  const std::string missing_folder = (scratch_ / "no-such-folder/out.json").string();
  expect_clean_failure(run({"-m", gpt2_, "Hi", "-o", missing_folder}), 1,
                       {"-o", missing_folder, "cannot create a file", "No such file"});
  expect_clean_failure(run({"-m", gpt2_, "Hi", "-o", scratch_.path().string()}), 1,
                       {"-o", scratch_.path().string(), "is a folder"});
}

TEST_F(AttentionBadInput, FailedRunKeepsTheOldFile) {
  write_file(output(), "old contents");
  expect_clean_failure(run({"-m", gpt2_, "Hi", "--layers", "9", "-o", output()}), kUsageError,
                       {"--layers"});
  EXPECT_EQ(read_file(output()), "old contents");
}

TEST_F(AttentionBadInput, GenerateFiltersNeedAttentionOut) {
  const CommandResult result =
      run_attn({"generate", "-m", gpt2_, "-p", "Hi", "-n", "2", "--layers", "1"});
  expect_clean_failure(result, kUsageError, {"--layers", "--attention-out"});
}

TEST_F(AttentionBadInput, GenerateUnwritableAttentionOut) {
  const std::string missing_folder = (scratch_ / "no-such-folder/steps.jsonl").string();
  const CommandResult result =
      run_attn({"generate", "-m", gpt2_, "-p", "Hi", "-n", "2", "--attention-out", missing_folder});
  expect_clean_failure(result, 1, {"--attention-out", missing_folder});
}

// --attention-out during cached generation: line k is the row of position n_prompt - 1 + k,
// equal to that row of a full capture over the prompt and generated ids (ids, not text: random
// models generate text that need not tokenize back to the same ids).
void expect_generation_rows_equal_full_run(const fs::path& model_dir) {
  TempDir scratch;
  const std::string prompt = "It was a dark and stormy night, and";
  auto model = load_model(model_dir);
  const int n_new = std::min(
      24, cache_consistent_length(*model) - int(model->tokenizer->encode(prompt).ids.size()));
  const CommandResult generated =
      run_attn({"generate", "-m", model_dir.string(), "-p", prompt, "-n", std::to_string(n_new),
                "--temp", "0", "--ignore-eos", "--json", "--precision", "9", "--attention-out",
                (scratch / "steps.jsonl").string()});
  ASSERT_EQ(generated.exit_status, 0) << describe(generated);
  const json result = json::parse(generated.out);
  const auto prompt_ids = result["prompt_ids"].get<std::vector<int>>();
  const auto generated_ids = result["generated_ids"].get<std::vector<int>>();
  Encoding all;
  all.ids = prompt_ids;
  all.ids.insert(all.ids.end(), generated_ids.begin(), generated_ids.end());
  all.type_ids.assign(all.ids.size(), 0);

  const ArchSpec& spec = model->spec();
  const int n = int(all.ids.size());
  std::vector<std::vector<float>> full(spec.n_layer * spec.n_head);  // (n, n) per layer and head
  capture_attention(*model, all, select_attention(spec, {}),
                    [&](int layer, int head, const float* probabilities, int n_keys) {
                      ASSERT_EQ(n_keys, n);
                      full[layer * spec.n_head + head].assign(probabilities, probabilities + n * n);
                    });

  const std::vector<json> lines = read_jsonl(scratch / "steps.jsonl");
  ASSERT_EQ(lines.size(), std::size_t(n_new));
  double worst = 0;
  for (std::size_t step = 0; step < lines.size(); ++step) {
    const json& line = lines[step];
    const std::size_t position = prompt_ids.size() - 1 + step;
    EXPECT_EQ(line["step"], step);
    EXPECT_EQ(line["token_id"], generated_ids[step]);
    EXPECT_EQ(line["token"], model->tokenizer->token_string(generated_ids[step]));
    EXPECT_EQ(line["position"], position);
    ASSERT_EQ(line["attention"].size(), std::size_t(spec.n_layer));
    for (int layer = 0; layer < spec.n_layer; ++layer) {
      EXPECT_EQ(line["attention"][layer]["layer"], layer);
      for (int head = 0; head < spec.n_head; ++head) {
        const json& row = line["attention"][layer]["heads"][head]["weights"];
        const float* full_row = full[layer * spec.n_head + head].data() + position * n;
        ASSERT_EQ(row.size(), position + 1);
        for (int k = 0; k < n; ++k) {
          if (k > int(position)) {
            EXPECT_EQ(full_row[k], 0.0f);
            continue;
          }
          worst = std::max(worst, std::abs(row[k].get<double>() - full_row[k]));
        }
      }
    }
  }
  EXPECT_LE(worst, tolerance::kAttentionWeight);
  std::cout << model_dir.filename().string() << ": worst |cached generation row - full run row| "
            << worst << "\n";
}

TEST(AttentionGenerate, CachedRowsEqualFullRun) {
  expect_generation_rows_equal_full_run(shipped_model("tiny-gpt2-brown"));
}

TEST_P(FamilyAttentionGolden, GenerationRowsEqualFullRun) {
  expect_generation_rows_equal_full_run(model_dir());
}

// The bertviz and HTML writers take any decoder's attention.
TEST_P(FamilyAttentionGolden, BertvizAndHtmlFormats) {
  TempDir scratch;
  const std::string model = model_dir().string();
  const std::string text = "The cat sat on the mat.";
  const json ours = attention_json({"-m", model, text}, scratch);
  const json bertviz =
      attention_json({"-m", model, text, "--format", "bertviz"}, scratch, "bertviz.json");
  ASSERT_EQ(bertviz["attention"].size(), 1u);
  const json& view = bertviz["attention"][0];
  EXPECT_EQ(view["left_text"], ours["tokens"]);
  const int n_layers = ours["n_layers"], n_heads = ours["n_heads"];
  ASSERT_EQ(view["attn"].size(), std::size_t(n_layers));
  for (int l = 0; l < n_layers; ++l) {
    ASSERT_EQ(view["attn"][l].size(), std::size_t(n_heads));
    for (int h = 0; h < n_heads; ++h) {
      EXPECT_EQ(view["attn"][l][h], ours["attention"][l]["heads"][h]["weights"]);
    }
  }
  const std::string html =
      read_file(attention_file({"-m", model, text, "--format", "html"}, scratch, "view.html"));
  EXPECT_EQ(embedded_document(html)["tokens"], ours["tokens"]);
}

TEST(AttentionGenerate, Filters) {
  TempDir scratch;
  const CommandResult generated =
      run_attn({"generate", "-m", shipped_model("tiny-gpt2-brown").string(), "-p", "The", "-n", "5",
                "--temp", "0", "--json", "--layers", "2", "--heads", "1,3", "--attention-out",
                (scratch / "steps.jsonl").string()});
  ASSERT_EQ(generated.exit_status, 0) << describe(generated);
  const json result = json::parse(generated.out);
  const std::vector<json> lines = read_jsonl(scratch / "steps.jsonl");
  ASSERT_EQ(lines.size(), result["generated_ids"].size());
  for (const json& line : lines) {
    ASSERT_EQ(line["attention"].size(), 1u);
    EXPECT_EQ(line["attention"][0]["layer"], 2);
    ASSERT_EQ(line["attention"][0]["heads"].size(), 2u);
    EXPECT_EQ(line["attention"][0]["heads"][0]["head"], 1);
    EXPECT_EQ(line["attention"][0]["heads"][1]["head"], 3);
  }
}

}  // namespace
}  // namespace attn::test

namespace attn::test {
namespace {

// A pass that chose end-of-text leaves a record but no generated token, so no line.
TEST(AttentionGenerate, RecorderWritesOneLinePerGeneratedToken) {
  auto model = load_model(shipped_model("tiny-gpt2-brown"));
  GenerationAttentionRecorder recorder({.layers = {0}, .heads = {1}});
  const ForwardObserver& observer = *recorder.observer();
  const std::vector<float> prompt_pass = {1, 0, 0, 0.5f, 0.5f, 0, 0.25f, 0.25f, 0.5f};  // (3, 3)
  const std::vector<float> second_pass = {0.1f, 0.2f, 0.3f, 0.4f};                      // (1, 4)
  const std::vector<float> end_of_text_pass = {0.2f, 0.2f, 0.2f, 0.2f, 0.2f};           // (1, 5)
  observer.on_attention(0, 1, 0, prompt_pass.data(), 3, 3);
  observer.on_attention(0, 1, 0, second_pass.data(), 1, 4);
  observer.on_attention(0, 1, 0, end_of_text_pass.data(), 1, 5);
  TempDir scratch;
  {
    OutputFile out(scratch / "steps.jsonl", "--attention-out");
    const std::vector<int> generated = {262, 3797};
    recorder.write_jsonl(out, *model->tokenizer, generated, 4);
    out.commit();
  }
  EXPECT_EQ(read_file(scratch / "steps.jsonl"),
            R"({"step":0,"token_id":262,"token":"Ġthe","position":2,"attention":[{"layer":0,)"
            R"("heads":[{"head":1,"weights":[0.25,0.25,0.5]}]}]})"
            "\n"
            R"({"step":1,"token_id":3797,"token":"Ġcat","position":3,"attention":[{"layer":0,)"
            R"("heads":[{"head":1,"weights":[0.1,0.2,0.3,0.4]}]}]})"
            "\n");
}

}  // namespace
}  // namespace attn::test
